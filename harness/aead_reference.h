// aead_reference.h: the AEAD references the harness checks kernels against,
// each written from its specification here, with AES from OpenSSL: AES-GCM
// (OpenSSL EVP, and a bit-by-bit GF(2^128) for J0 of other nonce lengths),
// AES-GCM-SIV (RFC 8452, POLYVAL written here) and AES-OTR
// (../shared/specs/aes-otr.md, v3.1 and v2, AD parallel or serial).
//
// Included by harness/aead_tests.cc (which holds them against the standards'
// vectors in its AeadHarnessSelfTest suite) and by the fuzz target
// harness/fuzz/fuzz_aead.cc; no GoogleTest in here.  Everything is in an
// unnamed namespace: each of those is the only file of its binary that
// includes it.
#ifndef AESGEN_AEAD_REFERENCE_H
#define AESGEN_AEAD_REFERENCE_H

#include <openssl/evp.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

using Bytes = std::vector<uint8_t>;
using Block16 = std::array<uint8_t, 16>;

// ---------------------------------------------------------------------------
// GF(2^128) in GCM's bit order (SP 800-38D, 6.3), for J0 = GHASH(nonce, ...)
// of nonces that are not 12 bytes.  Slow and simple: bit by bit.

struct Gf {
  uint64_t hi = 0, lo = 0;  // bytes 0..7 and 8..15, big-endian
};

Gf GfLoad(const uint8_t *p) {
  Gf r;
  for (int i = 0; i < 8; i++) {
    r.hi = (r.hi << 8) | p[i];
    r.lo = (r.lo << 8) | p[8 + i];
  }
  return r;
}

Block16 GfStore(Gf x) {
  Block16 b;
  for (int i = 7; i >= 0; i--) {
    b[static_cast<size_t>(i)] = static_cast<uint8_t>(x.hi);
    b[static_cast<size_t>(8 + i)] = static_cast<uint8_t>(x.lo);
    x.hi >>= 8;
    x.lo >>= 8;
  }
  return b;
}

Gf GfXor(Gf a, Gf b) { return {a.hi ^ b.hi, a.lo ^ b.lo}; }
bool GfEq(Gf a, Gf b) { return a.hi == b.hi && a.lo == b.lo; }
Gf GfOne() { return {uint64_t{1} << 63, 0}; }  // the bit of x^0 is the first

// SP 800-38D, Algorithm 1.
Gf GfMul(Gf x, Gf y) {
  Gf z, v = y;
  for (int i = 0; i < 128; i++) {
    uint64_t bit = i < 64 ? (x.hi >> (63 - i)) & 1 : (x.lo >> (127 - i)) & 1;
    if (bit) z = GfXor(z, v);
    bool carry = (v.lo & 1) != 0;
    v.lo = (v.lo >> 1) | (v.hi << 63);
    v.hi >>= 1;
    if (carry) v.hi ^= 0xe100000000000000ull;
  }
  return z;
}

// a^(2^128 - 2) = a^-1 for a != 0.
Gf GfInverse(Gf a) {
  Gf r = GfOne();
  for (int i = 0; i < 127; i++) r = GfMul(GfMul(r, r), a);  // a^(2^(i+1) - 1)
  return GfMul(r, r);
}

// GHASH_H over data, zero-padded to whole blocks, continuing from y.
Gf GhashPadded(Gf h, Gf y, const uint8_t *data, size_t n) {
  for (size_t i = 0; i < n; i += 16) {
    uint8_t block[16] = {0};
    std::memcpy(block, data + i, std::min<size_t>(16, n - i));
    y = GfMul(GfXor(y, GfLoad(block)), h);
  }
  return y;
}

// The pre-counter block J0 of a nonce (SP 800-38D, 7.1, step 2).
Block16 GcmJ0(Gf h, const Bytes &nonce) {
  Block16 j{};
  if (nonce.size() == 12) {
    std::memcpy(j.data(), nonce.data(), 12);
    j[15] = 1;
    return j;
  }
  Gf y = GhashPadded(h, Gf{}, nonce.data(), nonce.size());
  y = GfMul(GfXor(y, Gf{0, uint64_t{8} * nonce.size()}), h);
  return GfStore(y);
}


// ---------------------------------------------------------------------------
// Oracle: OpenSSL EVP AES-GCM (and AES-ECB for H and single blocks)

[[noreturn]] void OracleDie(const char *what) {
  std::fprintf(stderr, "OpenSSL EVP: %s failed\n", what);
  std::abort();
}

const EVP_CIPHER *EvpGcm(size_t key_len) {
  switch (key_len) {
    case 16: return EVP_aes_128_gcm();
    case 24: return EVP_aes_192_gcm();
    case 32: return EVP_aes_256_gcm();
    default: OracleDie("a GCM key length");
  }
}

const EVP_CIPHER *EvpEcb(size_t key_len) {
  switch (key_len) {
    case 16: return EVP_aes_128_ecb();
    case 24: return EVP_aes_192_ecb();
    case 32: return EVP_aes_256_ecb();
    default: OracleDie("an ECB key length");
  }
}

Block16 AesBlock(const Bytes &key, const Block16 &in) {
  Block16 out{};
  EVP_CIPHER_CTX *c = EVP_CIPHER_CTX_new();
  int outl = 0;
  if (c == nullptr || EVP_EncryptInit_ex(c, EvpEcb(key.size()), nullptr, key.data(), nullptr) != 1 ||
      EVP_CIPHER_CTX_set_padding(c, 0) != 1 ||
      EVP_EncryptUpdate(c, out.data(), &outl, in.data(), 16) != 1 || outl != 16) {
    OracleDie("AES-ECB");
  }
  EVP_CIPHER_CTX_free(c);
  return out;
}

Gf HashKey(const Bytes &key) { return GfLoad(AesBlock(key, Block16{}).data()); }

// ct = AES-GCM(key, nonce) of pt with aad; tag = the full 16-byte tag.
void OracleSeal(const Bytes &key, const Bytes &nonce, const uint8_t *aad, size_t aad_len,
                const uint8_t *pt, size_t len, uint8_t *ct, uint8_t tag[16]) {
  EVP_CIPHER_CTX *c = EVP_CIPHER_CTX_new();
  if (c == nullptr) OracleDie("EVP_CIPHER_CTX_new");
  if (EVP_EncryptInit_ex(c, EvpGcm(key.size()), nullptr, nullptr, nullptr) != 1 ||
      EVP_CIPHER_CTX_ctrl(c, EVP_CTRL_GCM_SET_IVLEN, static_cast<int>(nonce.size()), nullptr) != 1 ||
      EVP_EncryptInit_ex(c, nullptr, nullptr, key.data(), nonce.data()) != 1) {
    OracleDie("GCM init (key, nonce length)");
  }
  int outl = 0;
  for (size_t done = 0; done < aad_len;) {
    int chunk = static_cast<int>(std::min<size_t>(aad_len - done, size_t{1} << 30));
    if (EVP_EncryptUpdate(c, nullptr, &outl, aad + done, chunk) != 1) OracleDie("GCM AAD");
    done += static_cast<size_t>(chunk);
  }
  for (size_t done = 0; done < len;) {
    int chunk = static_cast<int>(std::min<size_t>(len - done, size_t{1} << 30));
    if (EVP_EncryptUpdate(c, ct + done, &outl, pt + done, chunk) != 1 || outl != chunk) {
      OracleDie("GCM update");
    }
    done += static_cast<size_t>(chunk);
  }
  uint8_t rest[32];
  if (EVP_EncryptFinal_ex(c, rest, &outl) != 1 || outl != 0) OracleDie("GCM final");
  if (EVP_CIPHER_CTX_ctrl(c, EVP_CTRL_GCM_GET_TAG, 16, tag) != 1) OracleDie("GCM get tag");
  EVP_CIPHER_CTX_free(c);
}

// ---------------------------------------------------------------------------
// GCM-SIV reference (RFC 8452): AES from OpenSSL's EVP AES-ECB, POLYVAL written
// here.  POLYVAL's field: a block read as a little-endian 128-bit integer, bit i
// the coefficient of x^i, modulo P(x) = x^128 + x^127 + x^126 + x^121 + 1, with
// dot(a, b) = a * b * x^-128 (RFC 8452, section 3).

// RFC 8452, section 6: P_MAX = A_MAX = 2^36 bytes.
constexpr uint64_t kSivMaxLen = uint64_t{1} << 36;

// out = AES-ECB(key) of nblocks blocks of in (decrypt: the inverse cipher).
void AesEcb(const Bytes &key, const uint8_t *in, uint8_t *out, size_t nblocks,
            bool decrypt = false) {
  EVP_CIPHER_CTX *c = EVP_CIPHER_CTX_new();
  const int enc = decrypt ? 0 : 1;
  if (c == nullptr ||
      EVP_CipherInit_ex(c, EvpEcb(key.size()), nullptr, key.data(), nullptr, enc) != 1 ||
      EVP_CIPHER_CTX_set_padding(c, 0) != 1) {
    OracleDie("AES-ECB init");
  }
  for (size_t done = 0; done < nblocks;) {
    const size_t k = std::min<size_t>(nblocks - done, size_t{1} << 20);
    const int bytes = static_cast<int>(16 * k);
    int outl = 0;
    if (EVP_CipherUpdate(c, out + 16 * done, &outl, in + 16 * done, bytes) != 1 || outl != bytes) {
      OracleDie("AES-ECB");
    }
    done += k;
  }
  EVP_CIPHER_CTX_free(c);
}

struct Pv {
  uint64_t lo = 0, hi = 0;  // the coefficients of x^0..x^63 and x^64..x^127
};

Pv PvLoad(const uint8_t *p) {
  Pv r;
  for (int i = 7; i >= 0; i--) {
    r.lo = (r.lo << 8) | p[i];
    r.hi = (r.hi << 8) | p[8 + i];
  }
  return r;
}

Block16 PvStore(Pv x) {
  Block16 b;
  for (size_t i = 0; i < 8; i++) {
    b[i] = static_cast<uint8_t>(x.lo >> (8 * i));
    b[8 + i] = static_cast<uint8_t>(x.hi >> (8 * i));
  }
  return b;
}

Pv PvXor(Pv a, Pv b) { return {a.lo ^ b.lo, a.hi ^ b.hi}; }
bool PvEq(Pv a, Pv b) { return a.lo == b.lo && a.hi == b.hi; }
Pv PvOne() { return {1, 0}; }

// a * x mod P: x^128 = x^127 + x^126 + x^121 + 1.
Pv PvMulX(Pv a) {
  const bool carry = (a.hi >> 63) != 0;
  a.hi = (a.hi << 1) | (a.lo >> 63);
  a.lo <<= 1;
  if (carry) {
    a.lo ^= 1;
    a.hi ^= 0xc200000000000000ull;
  }
  return a;
}

// a * b mod P, bit by bit: Horner over the bits of a, the highest first.
Pv PvMul(Pv a, Pv b) {
  Pv r;
  for (int i = 127; i >= 0; i--) {
    r = PvMulX(r);
    const uint64_t bit = i >= 64 ? (a.hi >> (i - 64)) & 1 : (a.lo >> i) & 1;
    if (bit) r = PvXor(r, b);
  }
  return r;
}

// x^-128.  x^-1 = x^127 + x^126 + x^125 + x^120 (x times it is x^128 + x^127 +
// x^126 + x^121, which is 1 mod P); squared seven times.
Pv PvXInv128() {
  static const Pv v = [] {
    Pv r{0, 0xe100000000000000ull};
    for (int i = 0; i < 7; i++) r = PvMul(r, r);
    return r;
  }();
  return v;
}

// POLYVAL's dot(a, b) = a * b * x^-128, from the definition.
Pv PvDot(Pv a, Pv b) { return PvMul(PvMul(a, b), PvXInv128()); }

Pv PvPow(Pv a, uint64_t e) {
  Pv r = PvOne();
  for (; e; e >>= 1) {
    if (e & 1) r = PvMul(r, a);
    a = PvMul(a, a);
  }
  return r;
}

// a^(2^128 - 2) = a^-1 for a != 0.
Pv PvInverse(Pv a) {
  Pv r = PvOne();
  for (int i = 0; i < 127; i++) r = PvMul(PvMul(r, r), a);  // a^(2^(i+1) - 1)
  return PvMul(r, r);
}

// dot(y, H) for one H, faster than PvDot: dot(y, H) = y * h' with h' = H * x^-128,
// and y * h' is the XOR over the 32 nibbles of y (bits 4k..4k+3) of a table entry
// t_[k][nibble] = (nibble * x^(4k)) * h'.  Checked against PvDot by a self-test.
class PolyvalKey {
 public:
  explicit PolyvalKey(const uint8_t h[16]) {
    Pv basis = PvMul(PvLoad(h), PvXInv128());  // x^i * h', i = 0, 1, ...
    for (size_t k = 0; k < 32; k++) {
      t_[k][0] = Pv{};
      for (size_t j = 0; j < 4; j++) {
        const size_t bit = size_t{1} << j;
        for (size_t v = 0; v < bit; v++) t_[k][v | bit] = PvXor(t_[k][v], basis);
        basis = PvMulX(basis);
      }
    }
  }
  Pv Dot(Pv y) const {
    Pv r;
    for (size_t k = 0; k < 16; k++) {
      r = PvXor(r, t_[k][(y.lo >> (4 * k)) & 15]);
      r = PvXor(r, t_[16 + k][(y.hi >> (4 * k)) & 15]);
    }
    return r;
  }

 private:
  Pv t_[32][16];
};

// POLYVAL(H, X_1, ..., X_s) over pieces, each zero-padded to whole blocks.
class Polyval {
 public:
  explicit Polyval(const uint8_t h[16]) : key_(h) {}
  void AbsorbPadded(const uint8_t *p, size_t n) {
    for (size_t i = 0; i < n; i += 16) {
      uint8_t b[16] = {0};
      std::memcpy(b, p + i, std::min<size_t>(16, n - i));
      s_ = key_.Dot(PvXor(s_, PvLoad(b)));
    }
  }
  Block16 Result() const { return PvStore(s_); }

 private:
  PolyvalKey key_;
  Pv s_;
};

void PutLe32(uint8_t *p, uint32_t v) {
  for (size_t i = 0; i < 4; i++) p[i] = static_cast<uint8_t>(v >> (8 * i));
}
uint32_t GetLe32(const uint8_t *p) {
  return uint32_t{p[0]} | (uint32_t{p[1]} << 8) | (uint32_t{p[2]} << 16) | (uint32_t{p[3]} << 24);
}
void PutLe64(uint8_t *p, uint64_t v) {
  for (size_t i = 0; i < 8; i++) p[i] = static_cast<uint8_t>(v >> (8 * i));
}

// The per-nonce keys (RFC 8452, section 4): the first 8 bytes of
// AES(key, LE32(i) || nonce) for i = 0, 1 (authentication key) and 2, 3 (,4, 5)
// (encryption key, as long as the key).
struct SivKeys {
  Block16 auth{};
  Bytes enc;
};

SivKeys SivDeriveKeys(const Bytes &key, const uint8_t *nonce) {
  if (key.size() != 16 && key.size() != 32) OracleDie("a GCM-SIV key of 16 or 32 bytes");
  const size_t nblocks = 2 + key.size() / 8;
  uint8_t in[16 * 6] = {0}, out[16 * 6];
  for (size_t i = 0; i < nblocks; i++) {
    PutLe32(in + 16 * i, static_cast<uint32_t>(i));
    std::memcpy(in + 16 * i + 4, nonce, 12);
  }
  AesEcb(key, in, out, nblocks);
  SivKeys k;
  std::memcpy(k.auth.data(), out, 8);
  std::memcpy(k.auth.data() + 8, out + 16, 8);
  k.enc.resize(key.size());
  for (size_t i = 2; i < nblocks; i++) std::memcpy(k.enc.data() + 8 * (i - 2), out + 16 * i, 8);
  return k;
}

// S_s = POLYVAL(auth, padded AAD, padded plaintext, LE64(8 aad_len) || LE64(8 len)).
Block16 SivPolyval(const Block16 &auth, const uint8_t *aad, size_t aad_len, const uint8_t *pt,
                   size_t len) {
  Polyval pv(auth.data());
  pv.AbsorbPadded(aad, aad_len);
  pv.AbsorbPadded(pt, len);
  uint8_t lengths[16];
  PutLe64(lengths, uint64_t{8} * aad_len);
  PutLe64(lengths + 8, uint64_t{8} * len);
  pv.AbsorbPadded(lengths, 16);
  return pv.Result();
}

// The tag: S_s with the nonce XORed into bytes 0..11 and the top bit of byte 15
// cleared, encrypted under the message encryption key.
Block16 SivTagOf(const SivKeys &k, const uint8_t *nonce, const Block16 &s_s) {
  Block16 s = s_s, tag;
  for (size_t i = 0; i < 12; i++) s[i] ^= nonce[i];
  s[15] &= 0x7f;
  AesEcb(k.enc, s.data(), tag.data(), 1);
  return tag;
}

// The counter block of data block b: the tag with the top bit of byte 15 set,
// bytes 0..3 its little-endian 32-bit counter plus b, wrapping in 32 bits.
Block16 SivCounterBlock(const Block16 &tag, uint64_t b) {
  Block16 c = tag;
  c[15] |= 0x80;
  PutLe32(c.data(), static_cast<uint32_t>(GetLe32(tag.data()) + b));
  return c;
}

// out = in XOR the AES-CTR keystream of RFC 8452 from that tag.
void SivCtr(const Bytes &enc, const Block16 &tag, const uint8_t *in, size_t len, uint8_t *out) {
  constexpr size_t kChunk = 256;  // blocks per EVP call
  std::vector<uint8_t> ctrs(16 * kChunk), ks(16 * kChunk);
  for (size_t off = 0, b = 0; off < len; off += 16 * kChunk) {
    const size_t nb = std::min<size_t>(kChunk, (len - off + 15) / 16);
    for (size_t i = 0; i < nb; i++, b++) {
      Block16 c = SivCounterBlock(tag, b);
      std::memcpy(ctrs.data() + 16 * i, c.data(), 16);
    }
    AesEcb(enc, ctrs.data(), ks.data(), nb);
    const size_t n = std::min<size_t>(16 * nb, len - off);
    for (size_t i = 0; i < n; i++) out[off + i] = in[off + i] ^ ks[i];
  }
}

// ct = AES-GCM-SIV(key, nonce) of pt with aad; tag = its 16-byte tag.
void SivSeal(const Bytes &key, const Bytes &nonce, const uint8_t *aad, size_t aad_len,
             const uint8_t *pt, size_t len, uint8_t *ct, uint8_t tag[16]) {
  if (nonce.size() != 12) OracleDie("a GCM-SIV nonce of 12 bytes");
  SivKeys k = SivDeriveKeys(key, nonce.data());
  Block16 t = SivTagOf(k, nonce.data(), SivPolyval(k.auth, aad, aad_len, pt, len));
  SivCtr(k.enc, t, pt, len, ct);
  std::memcpy(tag, t.data(), 16);
}

// ---------------------------------------------------------------------------
// AES-OTR reference (specs/aes-otr.md; the section numbers below are its): AES
// from OpenSSL's EVP AES-ECB, everything else written here from the
// specification.  v3.1 and v2, AD modes p and s, nonces of 1..15 bytes, tags of
// 1..16, AES-128 and AES-256.  The pairs of a message go through AES in two
// batches (every first-round block, then every second-round block; decryption
// the other way round) rather than pair by pair, so that it does not share the
// shape of the mock kernel (tests/aead_mock/mock_otr.c) or of a kernel.

// Which OTR: the version and the AD mode.
struct OtrVariant {
  bool v2 = false;      // version 2 (section 10), else v3.1
  bool serial = false;  // AD mode s (serial), else p (parallel)
  std::string Name() const { return std::string(v2 ? "v2" : "v3.1") + (serial ? "-s" : "-p"); }
};

// The registry's OTR modes: "otr" is v3.1 with parallel AD, "otr-v2" v2 with
// parallel AD; "otr-s" and "otr-v2-s" their serial-AD forms.
struct OtrMode {
  const char *mode;
  bool v2, serial;
};
constexpr OtrMode kOtrModes[] = {
    {"otr", false, false}, {"otr-v2", true, false}, {"otr-s", false, true}, {"otr-v2-s", true, true},
};

// A mode of the OTR family: its name starts with "otr".
bool IsOtrModeName(const char *mode) {
  return mode != nullptr && std::strncmp(mode, "otr", 3) == 0;
}

// The variant of an OTR mode name; false for a name not in kOtrModes.
bool OtrVariantOfMode(const char *mode, OtrVariant *v) {
  for (const OtrMode &m : kOtrModes) {
    if (mode != nullptr && std::strcmp(mode, m.mode) == 0) {
      v->v2 = m.v2;
      v->serial = m.serial;
      return true;
    }
  }
  return false;
}

// Section 3: nonces of 1..15 bytes (Format holds 8|N| <= 120 bits), tags of 1..16.
constexpr size_t kOtrNonceMin = 1, kOtrNonceMax = 15, kOtrTagMin = 1, kOtrTagMax = 16;

bool OtrLengthsOk(size_t nonce_len, size_t tag_len) {
  return nonce_len >= kOtrNonceMin && nonce_len <= kOtrNonceMax && tag_len >= kOtrTagMin &&
         tag_len <= kOtrTagMax;
}

// AES-ECB under one key, one EVP context for every call.
class OtrAes {
 public:
  explicit OtrAes(const Bytes &key) : c_(EVP_CIPHER_CTX_new()) {
    if (key.size() != 16 && key.size() != 32) OracleDie("an AES-OTR key of 16 or 32 bytes");
    if (c_ == nullptr ||
        EVP_EncryptInit_ex(c_, EvpEcb(key.size()), nullptr, key.data(), nullptr) != 1 ||
        EVP_CIPHER_CTX_set_padding(c_, 0) != 1) {
      OracleDie("AES-ECB init (OTR)");
    }
  }
  ~OtrAes() { EVP_CIPHER_CTX_free(c_); }
  OtrAes(const OtrAes &) = delete;
  OtrAes &operator=(const OtrAes &) = delete;

  void Blocks(const uint8_t *in, uint8_t *out, size_t nblocks) {
    for (size_t done = 0; done < nblocks;) {
      const size_t k = std::min<size_t>(nblocks - done, size_t{1} << 20);
      const int bytes = static_cast<int>(16 * k);
      int outl = 0;
      if (EVP_EncryptUpdate(c_, out + 16 * done, &outl, in + 16 * done, bytes) != 1 ||
          outl != bytes) {
        OracleDie("AES-ECB (OTR)");
      }
      done += k;
    }
  }
  Block16 operator()(const Block16 &x) {
    Block16 y;
    Blocks(x.data(), y.data(), 1);
    return y;
  }

 private:
  EVP_CIPHER_CTX *c_;
};

Block16 OtrXor(const Block16 &a, const Block16 &b) {
  Block16 r;
  for (size_t i = 0; i < 16; i++) r[i] = a[i] ^ b[i];
  return r;
}

// Section 2: 2X, the block read as a big-endian 128-bit number, in the byte
// form: shift left one bit; 0x87 into the last byte when the top bit fell out.
Block16 OtrDouble(const Block16 &x) {
  Block16 r;
  for (size_t i = 0; i < 15; i++) r[i] = static_cast<uint8_t>((x[i] << 1) | (x[i + 1] >> 7));
  r[15] = static_cast<uint8_t>((x[15] << 1) ^ (x[0] & 0x80 ? 0x87 : 0));
  return r;
}

// c * X for a small constant c read as a polynomial (3 = x + 1, 5 = x^2 + 1,
// 7 = x^2 + x + 1; 3^2 is 5): the sum of 2^k X over the bits k of c.
Block16 OtrTimes(unsigned c, Block16 x) {
  Block16 r{};
  for (; c; c >>= 1, x = OtrDouble(x)) {
    if (c & 1) r = OtrXor(r, x);
  }
  return r;
}

// Section 1: pad(X) for |X| <= 16: X || 80 00 ... 00, or X when |X| = 16.
Block16 OtrPad(const uint8_t *p, size_t n) {
  Block16 r{};
  if (n) std::memcpy(r.data(), p, n);
  if (n < 16) r[n] = 0x80;
  return r;
}

// Section 4: Format(tau, N) = num7(8 tau mod 128) || 0^(120 - 8|N|) || 1 || N.
// With a 15-byte nonce the 1 and the tag length share byte 0: OR, never store.
Block16 OtrFormat(size_t tag_len, const uint8_t *nonce, size_t nonce_len) {
  if (!OtrLengthsOk(nonce_len, tag_len)) {
    OracleDie("OtrFormat: a nonce of 1..15 bytes, a tag of 1..16");
  }
  Block16 f{};
  std::memcpy(f.data() + 16 - nonce_len, nonce, nonce_len);
  f[15 - nonce_len] |= 0x01;
  f[0] |= static_cast<uint8_t>(((8 * tag_len) % 128) << 1);
  return f;
}

// The values Appendix A lists beside some vectors.  q: Q (v2: J); u: U (v2: Delta);
// final_offset: what Sigma takes before TE (c La; v2: 3 La, xor Delta when full).
struct OtrTrace {
  Block16 q{}, ta{}, f{}, u{}, l{}, final_offset{};
};

// Section 6 (v2: section 10): the AD digest TA; 0 for empty AD (no AES call).
Block16 OtrAdDigest(OtrAes &e, const OtrVariant &v, const Block16 &q, const uint8_t *aad,
                    size_t n) {
  if (n == 0) return Block16{};
  const size_t h = (n + 15) / 16, last_len = n - 16 * (h - 1);
  const bool full = last_len == 16;
  const Block16 last = OtrPad(aad + 16 * (h - 1), last_len);
  if (v.serial) {  // a CBC chain; the last block with 4Q (full) or 2Q (partial); v2 with J
    Block16 x{};
    for (size_t j = 0; j + 1 < h; j++) {
      for (size_t i = 0; i < 16; i++) x[i] ^= aad[16 * j + i];
      x = e(x);
    }
    return e(OtrXor(OtrXor(x, last), OtrTimes(full ? 4 : 2, q)));
  }
  // p: the full blocks with masks 2^(j-1) Q (v2: 2^(j-1) 4J), in one batch.
  Block16 mask = v.v2 ? OtrTimes(4, q) : q;
  std::vector<uint8_t> in(16 * (h - 1)), out(16 * (h - 1));
  for (size_t j = 0; j + 1 < h; j++, mask = OtrDouble(mask)) {
    for (size_t i = 0; i < 16; i++) {
      in[16 * j + i] = static_cast<uint8_t>(mask[i] ^ aad[16 * j + i]);
    }
  }
  e.Blocks(in.data(), out.data(), h - 1);
  Block16 s = last;
  for (size_t j = 0; j + 1 < h; j++) {
    for (size_t i = 0; i < 16; i++) s[i] ^= out[16 * j + i];
  }
  // mask is 2^(h-1) Q now (v2: 2^(h-1) 4J): times 5 or 3 (v2: xor 2J or J).
  s = OtrXor(s, v.v2 ? OtrXor(mask, OtrTimes(full ? 2 : 1, q)) : OtrTimes(full ? 5 : 3, mask));
  return e(s);
}

// One AES-OTR pass over len bytes: encryption (section 8) or decryption
// (section 9) of in into out (not overlapping), and the 16-byte block whose
// first tag_len bytes are the tag (section 8.4), the expected one when decrypting.
void OtrCrypt(const Bytes &key, const OtrVariant &v, const uint8_t *nonce, size_t nonce_len,
              size_t tag_len, const uint8_t *aad, size_t aad_len, const uint8_t *in, size_t len,
              uint8_t *out, bool decrypt, uint8_t tag[16], OtrTrace *trace = nullptr) {
  OtrAes e(key);
  OtrTrace t;
  t.q = e(Block16{});                                    // Q = E(0) (v2: J)
  t.ta = OtrAdDigest(e, v, t.q, aad, aad_len);
  t.f = OtrFormat(tag_len, nonce, nonce_len);
  t.u = e(t.f);                                          // U (v2: Delta before the s step)
  Block16 delta{};
  if (v.v2) {                                            // section 10
    delta = v.serial ? OtrXor(t.u, t.ta) : t.u;
    t.u = delta;
    t.l = OtrTimes(4, delta);
  } else {                                               // section 7
    t.l = v.serial ? OtrDouble(OtrXor(t.u, t.ta)) : t.u;
  }
  // The second-round mask of a first-round one: 3 L_i (v3.1), L_i xor Delta (v2).
  auto second = [&](const Block16 &li) { return v.v2 ? OtrXor(li, delta) : OtrTimes(3, li); };

  // 8.1: pairs of 32 bytes, then a tail of r bytes (1..32; 0 only when len is 0).
  const size_t r = len == 0 ? 0 : (len % 32 ? len % 32 : 32);
  const size_t pairs = (len - r) / 32;
  std::vector<Block16> masks(pairs + 1);                 // L_1 .. L_(pairs + 1)
  masks[0] = t.l;
  for (size_t i = 1; i <= pairs; i++) masks[i] = OtrDouble(masks[i - 1]);

  // 8.2 / 9: the pairs, one batch per round of the two-round Feistel.  Encrypting:
  // C_1 = E(L_i xor X) xor Y, then C_2 = E(L*_i xor C_1) xor X.  Decrypting:
  // X = E(L*_i xor C_1) xor C_2, then Y = E(L_i xor X) xor C_1.  Either way the
  // first batch reads the pair's first input block and XORs its second in, and
  // the second batch reads that result and XORs the first input block in.
  Block16 sigma{};
  std::vector<uint8_t> a(16 * pairs), b(16 * pairs);
  for (int round = 0; round < 2; round++) {
    const bool use_second_mask = (round == 0) == decrypt;
    for (size_t i = 0; i < pairs; i++) {
      const Block16 mask = use_second_mask ? second(masks[i]) : masks[i];
      const uint8_t *src = round == 0 ? in + 32 * i : out + 32 * i;
      for (size_t k = 0; k < 16; k++) a[16 * i + k] = static_cast<uint8_t>(mask[k] ^ src[k]);
    }
    e.Blocks(a.data(), b.data(), pairs);
    for (size_t i = 0; i < pairs; i++) {
      uint8_t *dst = out + 32 * i + (round == 0 ? 0 : 16);
      const uint8_t *other = in + 32 * i + (round == 0 ? 16 : 0);
      for (size_t k = 0; k < 16; k++) dst[k] = static_cast<uint8_t>(b[16 * i + k] ^ other[k]);
    }
  }
  for (size_t i = 0; i < pairs; i++) {  // Sigma: the checksum of the plaintext Y blocks
    const uint8_t *y = (decrypt ? out : in) + 32 * i + 16;
    for (size_t k = 0; k < 16; k++) sigma[k] ^= y[k];
  }

  // 8.3: the tail, with Lf = L_(pairs + 1).
  const Block16 lf = masks[pairs];
  const uint8_t *tin = in + 32 * pairs;
  uint8_t *tout = out + 32 * pairs;
  Block16 la;
  if (r <= 16) {  // case a: one block (or none)
    const Block16 z = e(lf);
    for (size_t k = 0; k < r; k++) tout[k] = static_cast<uint8_t>(tin[k] ^ z[k]);
    sigma = OtrXor(sigma, OtrPad(decrypt ? tout : tin, r));  // pad of the plaintext
    la = lf;
  } else {  // case b: a full block X and b = r - 16 bytes Y
    const size_t nb = r - 16;
    const Block16 lfs = second(lf);
    Block16 z, x;
    Block16 pcy;  // pad(C_Y)
    if (!decrypt) {
      std::copy(tin, tin + 16, x.begin());
      z = e(OtrXor(lf, x));
      for (size_t k = 0; k < nb; k++) tout[16 + k] = static_cast<uint8_t>(tin[16 + k] ^ z[k]);
      pcy = OtrPad(tout + 16, nb);
      const Block16 cx = OtrXor(e(OtrXor(lfs, pcy)), x);
      std::copy(cx.begin(), cx.end(), tout);
    } else {
      pcy = OtrPad(tin + 16, nb);
      Block16 cx;
      std::copy(tin, tin + 16, cx.begin());
      x = OtrXor(e(OtrXor(lfs, pcy)), cx);
      z = e(OtrXor(lf, x));
      std::copy(x.begin(), x.end(), tout);
      for (size_t k = 0; k < nb; k++) tout[16 + k] = static_cast<uint8_t>(tin[16 + k] ^ z[k]);
    }
    sigma = OtrXor(sigma, OtrXor(z, pcy));
    la = lfs;
  }

  // 8.4 (v2: section 10): the final offset, TE, and the tag block.
  const bool full = r == 16 || r == 32;
  if (v.v2) {
    t.final_offset = OtrTimes(3, la);
    if (full) t.final_offset = OtrXor(t.final_offset, delta);
  } else {
    t.final_offset = OtrTimes(full ? 7 : 5, la);
  }
  const Block16 te = e(OtrXor(sigma, t.final_offset));
  const Block16 tb = v.serial ? te : OtrXor(te, t.ta);
  std::memcpy(tag, tb.data(), 16);
  if (trace != nullptr) *trace = t;
}

}  // namespace

#endif  // AESGEN_AEAD_REFERENCE_H
