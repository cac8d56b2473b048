// otr_bench.cc: AES-OTR seal and open benchmarks (IMPL/otr_seal/KEYBITS/SIZE,
// IMPL/otr_open/KEYBITS/SIZE) of aesgen_bench: the set's OTR kernels beside AES-OCB in
// libgcrypt and OpenSSL, and the set's CTR and GCM kernels of the same methods for
// comparison (IMPL/otr_ref/KEYBITS/SIZE).  See otr_bench.h.
//
// How each IMPL seals and opens one record (key set-up is done before the timed loop):
//   aesgen kernel      aesgen_aead.seal(ctx, nonce, 12, aad, 13, in, len, out, tag, 16) and
//                      aesgen_aead.open(ctx, nonce, 12, aad, 13, in, len, out, tag, 16)
//                      after aesgen_aead.init(ctx, key, key_len); mode "otr", "otr-v2",
//                      "otr-s" or "otr-v2-s"
//   libgcrypt-ocb      gcry_cipher_open(GCRY_CIPHER_AES{128,256}, GCRY_CIPHER_MODE_OCB) and
//                      gcry_cipher_setkey once (16-byte tags, the default); per record
//                      gcry_cipher_setiv (which starts a new OCB message under the same
//                      key), gcry_cipher_authenticate of the AAD, gcry_cipher_final (the
//                      next call holds the last data), then to seal gcry_cipher_encrypt and
//                      gcry_cipher_gettag, to open gcry_cipher_decrypt and
//                      gcry_cipher_checktag (GPG_ERR_CHECKSUM when wrong; the plaintext is
//                      written before the check, libgcrypt's API)
//   openssl-ocb        two EVP_CIPHER_CTX (EVP_aes_{128,256}_ocb, 12-byte IV), one keyed to
//                      encrypt and one to decrypt (OCB decrypts with the AES inverse
//                      cipher, so the key schedules differ); per record EVP_EncryptInit_ex
//                      or EVP_DecryptInit_ex with the nonce only, EVP_*Update of the AAD and
//                      of the data, and to seal EVP_EncryptFinal_ex then
//                      EVP_CTRL_AEAD_GET_TAG, to open EVP_CTRL_AEAD_SET_TAG then
//                      EVP_DecryptFinal_ex, which checks the tag
//   comparison (otr_ref, not OTR):
//   METHOD-face-none   the set's CTR kernel: init once; per record set_iv(nonce || 00 00 00
//                      02) and xor_stream of SIZE bytes (what OTR's bulk would cost with
//                      one AES call a block and nothing else)
//   METHOD-gcm-none    the set's GCM kernel: one record sealed as gcm_seal does
//
// An OTR or OCB open is of a record sealed before the timed loop under a nonce of its own
// (SealedRecords, aead_common.h), one after the other.
//
// Nothing outside this program computes AES-OTR, so VerifyOtr checks the kernels against an
// AES-OTR written here from specs/aes-otr.md over OpenSSL's AES block function
// (OtrReferenceSeal), which is itself checked first against the specification's Appendix A
// vectors.

#include "otr_bench.h"

#include <gcrypt.h>
#include <openssl/err.h>
#include <openssl/evp.h>

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "aead_common.h"
#include "aesgen.h"
#include "bench_common.h"

namespace aesgen_bench {
namespace {

constexpr size_t kGuardLen = 16;  // bytes after an output that nothing may write
constexpr uint8_t kGuardByte = 0xe5;
constexpr uint8_t kStaleByte = 0xaa;  // what an output holds before an open that must fail
// message lengths of the check: every tail case of OTR (one block, two blocks, full or not)
// after zero, one and several pairs
const std::vector<size_t> kVerifyLengths = {0,  1,  15, 16, 17,  31,  32,  33,   47,  48,
                                            63, 64, 65, 96, 255, 256, 257, 1420, 4100};
// AAD lengths, taken in turn: none (TA = 0), partial and full last blocks, several blocks
const std::vector<size_t> kVerifyAadLengths = {kAadLen, 0, 1, 15, 16, 17, 32, 33, 100};

std::string Bits(int key_bits) { return std::to_string(key_bits); }

// ---------------------------------------------------------------------------
// AES-OTR, written here from specs/aes-otr.md: the reference of the checks

using Block = std::array<uint8_t, 16>;

struct OtrVariant {
  bool v2;         // v2 (section 10) instead of v3.1
  bool serial_ad;  // AD mode s (CBC-like) instead of p (parallel)
  const char *name;
};
constexpr OtrVariant kOtrV31P = {false, false, "v3.1-p"};
constexpr OtrVariant kOtrV31S = {false, true, "v3.1-s"};
constexpr OtrVariant kOtrV2P = {true, false, "v2-p"};
constexpr OtrVariant kOtrV2S = {true, true, "v2-s"};

// The modes of aesgen_aeads[] this program times, and the variant each one is.
struct OtrMode {
  const char *mode;
  const OtrVariant *variant;
};
const OtrMode kOtrModes[] = {
    {"otr", &kOtrV31P}, {"otr-v2", &kOtrV2P}, {"otr-s", &kOtrV31S}, {"otr-v2-s", &kOtrV2S}};

const OtrVariant *VariantOfMode(const char *mode) {
  for (const OtrMode &m : kOtrModes)
    if (std::strcmp(m.mode, mode) == 0) return m.variant;
  return nullptr;
}

// The AES forward cipher under one key, a block at a time (OpenSSL's EVP ECB, no padding).
class AesBlock {
 public:
  AesBlock(const uint8_t *key, size_t key_len) : ctx_(EVP_CIPHER_CTX_new()) {
    const EVP_CIPHER *c = key_len == 16   ? EVP_aes_128_ecb()
                          : key_len == 24 ? EVP_aes_192_ecb()
                          : key_len == 32 ? EVP_aes_256_ecb()
                                          : nullptr;
    if (ctx_ == nullptr || c == nullptr ||
        EVP_EncryptInit_ex(ctx_, c, nullptr, key, nullptr) != 1 ||
        EVP_CIPHER_CTX_set_padding(ctx_, 0) != 1)
      Die("the AES-OTR reference: OpenSSL AES-ECB set-up failed");
  }
  ~AesBlock() { EVP_CIPHER_CTX_free(ctx_); }
  AesBlock(const AesBlock &) = delete;
  AesBlock &operator=(const AesBlock &) = delete;

  Block operator()(const Block &in) const {
    Block out;
    int n = 0;
    if (EVP_EncryptUpdate(ctx_, out.data(), &n, in.data(), 16) != 1 || n != 16)
      Die("the AES-OTR reference: OpenSSL AES-ECB failed");
    return out;
  }

 private:
  EVP_CIPHER_CTX *ctx_;
};

Block Xor(const Block &a, const Block &b) {
  Block out;
  for (size_t i = 0; i < 16; i++) out[i] = a[i] ^ b[i];
  return out;
}

// 2·X in GF(2^128), big-endian (section 2)
Block Dbl(const Block &x) {
  Block out;
  for (size_t i = 0; i < 15; i++) out[i] = static_cast<uint8_t>((x[i] << 1) | (x[i + 1] >> 7));
  out[15] = static_cast<uint8_t>((x[15] << 1) ^ (x[0] & 0x80 ? 0x87 : 0));
  return out;
}
Block Times3(const Block &x) { return Xor(Dbl(x), x); }
Block Times5(const Block &x) { return Xor(Dbl(Dbl(x)), x); }
Block Times7(const Block &x) { return Xor(Xor(Dbl(Dbl(x)), Dbl(x)), x); }

Block Load(const uint8_t *p) {
  Block b;
  std::memcpy(b.data(), p, 16);
  return b;
}

// pad(X) for 0 <= n <= 16 bytes
Block Pad(const uint8_t *p, size_t n) {
  Block b{};
  if (n > 0) std::memcpy(b.data(), p, n);
  if (n < 16) b[n] = 0x80;
  return b;
}

// Seals one message: the ciphertext (len bytes) to `out`, the tag (tau bytes, 1..16) to
// `tag`.  Sections 4 to 8 (v3.1) and 10 (v2).
void OtrReferenceSeal(const OtrVariant &v, const uint8_t *key, size_t key_len,
                      const uint8_t *nonce, size_t nonce_len, const uint8_t *aad, size_t aad_len,
                      const uint8_t *in, size_t len, uint8_t *out, uint8_t *tag, size_t tau) {
  if (nonce_len < 1 || nonce_len > 15 || tau < 1 || tau > 16)
    Die("the AES-OTR reference: nonce or tag length out of range");
  const AesBlock E(key, key_len);
  const Block Q = E(Block{});  // v2: J

  // TA, the AD digest (sections 6 and 10)
  Block ta{};
  if (aad_len > 0) {
    const size_t h = (aad_len + 15) / 16;
    const size_t last_len = aad_len - 16 * (h - 1);
    const bool full = last_len == 16;
    const Block last = Pad(aad + 16 * (h - 1), last_len);
    if (!v.serial_ad) {
      Block mask = v.v2 ? Dbl(Dbl(Q)) : Q;  // Q, 2Q, 4Q, ... (v2: 4J, 8J, ...)
      Block s{};
      for (size_t j = 0; j + 1 < h; j++) {
        s = Xor(s, E(Xor(mask, Load(aad + 16 * j))));
        mask = Dbl(mask);
      }
      const Block fin = v.v2 ? Xor(mask, full ? Dbl(Q) : Q) : (full ? Times5(mask) : Times3(mask));
      ta = E(Xor(Xor(s, last), fin));
    } else {
      Block x{};
      for (size_t j = 0; j + 1 < h; j++) x = E(Xor(x, Load(aad + 16 * j)));
      ta = E(Xor(Xor(x, last), full ? Dbl(Dbl(Q)) : Dbl(Q)));
    }
  }

  // Format, the nonce's mask (sections 4, 7 and 10)
  Block f{};
  std::memcpy(f.data() + 16 - nonce_len, nonce, nonce_len);
  f[15 - nonce_len] |= 0x01;
  f[0] |= static_cast<uint8_t>(((8 * tau) % 128) << 1);
  const Block u = E(f);
  Block delta{}, l;
  if (v.v2) {
    delta = v.serial_ad ? Xor(u, ta) : u;
    l = Dbl(Dbl(delta));
  } else {
    l = v.serial_ad ? Dbl(Xor(u, ta)) : u;
  }
  // the second-round mask of the pair whose first-round mask is li
  auto second = [&](const Block &li) { return v.v2 ? Xor(li, delta) : Times3(li); };

  // pairs, then the tail (section 8)
  size_t r = len % 32;
  if (r == 0 && len > 0) r = 32;
  const size_t pairs = (len - r) / 32;
  Block sigma{};
  for (size_t i = 0; i < pairs; i++) {
    const Block x = Load(in + 32 * i), y = Load(in + 32 * i + 16);
    const Block c1 = Xor(E(Xor(l, x)), y);
    const Block c2 = Xor(E(Xor(second(l), c1)), x);
    std::memcpy(out + 32 * i, c1.data(), 16);
    std::memcpy(out + 32 * i + 16, c2.data(), 16);
    sigma = Xor(sigma, y);
    l = Dbl(l);
  }
  const uint8_t *tail = in + 32 * pairs;
  uint8_t *tail_out = out + 32 * pairs;
  Block la;
  if (r <= 16) {
    const Block z = E(l);
    for (size_t k = 0; k < r; k++) tail_out[k] = tail[k] ^ z[k];
    sigma = Xor(sigma, Pad(tail, r));
    la = l;
  } else {
    const size_t b = r - 16;
    const Block x = Load(tail);
    const Block z = E(Xor(l, x));
    uint8_t cy[16];
    for (size_t k = 0; k < b; k++) cy[k] = tail[16 + k] ^ z[k];
    const Block cy_pad = Pad(cy, b);
    const Block cx = Xor(E(Xor(second(l), cy_pad)), x);
    std::memcpy(tail_out, cx.data(), 16);
    std::memcpy(tail_out + 16, cy, b);
    sigma = Xor(sigma, Xor(z, cy_pad));
    la = second(l);
  }
  const bool last_full = r == 16 || r == 32;
  if (v.v2) {
    sigma = Xor(sigma, Times3(la));
    if (last_full) sigma = Xor(sigma, delta);
  } else {
    sigma = Xor(sigma, last_full ? Times7(la) : Times5(la));
  }
  const Block te = E(sigma);
  const Block t = v.serial_ad ? te : Xor(te, ta);
  std::memcpy(tag, t.data(), tau);
}

// specs/aes-otr.md, Appendix A: A(h) is the bytes 00 01 02 ..., M(n) the bytes 40 41 42 ...
struct OtrVector {
  const char *id;
  const OtrVariant *variant;
  const char *key, *nonce;
  size_t tau, aad_len, msg_len;
  const char *ciphertext, *tag;
};
constexpr char kK128[] = "2b7e151628aed2a6abf7158809cf4f3c";
constexpr char kK256[] = "603deb1015ca71be2b73aef0857d77811f352c073b6108d72d9810a30914dff4";
constexpr char kN12[] = "101112131415161718191a1b";
const OtrVector kOtrVectors[] = {
    {"A.1", &kOtrV31P, kK128, kN12, 16, 0, 0, "", "9dec7a2df49446a1641cb4d3cf83c4cb"},
    {"A.2", &kOtrV31P, kK128, kN12, 16, 7, 1, "da", "4b40cf1eb7d619357e3069c1334380bf"},
    {"A.3", &kOtrV31S, kK128, kN12, 16, 0, 16, "85b3ffcc552960018592081e2bf062f0",
     "fbd66896315328121a6f11136a4a72ef"},
    {"A.4", &kOtrV31S, kK128, kN12, 16, 20, 17, "796670eaeddff59cf7402380a654ed7065",
     "a584c7f929d7d008c957447683ebca70"},
    {"A.5", &kOtrV31P, kK256, kN12, 16, 16, 32,
     "a963339bef668dbd5d1ad5fc5181b95ab5bdc4bf890bff9eee17d599b792bb60",
     "28b54e36e9a7c0ca966224d3c5dd12d6"},
    {"A.6", &kOtrV31S, kK256, kN12, 16, 33, 33,
     "6af223b5c57c347577313fc1e2642bbb966ad6f72bbb58e2df048c74d9aabd5f6f",
     "f4e8d7d3ebc9c66baa27c7f5dcb1e2c7"},
    {"A.7", &kOtrV31P, kK128, "a0a1a2a3a4a5a6a7a8a9aaabacadae", 12, 5, 64,
     "385333de004ab686b42ce1167528e2ab752d55661a65778e8a0bd0fcb371df2a"
     "15b9cd11b86305d471a883ecafb707bb988a2e07ec1e21c80dfa00c26f8bf531",
     "e85858a321522ed843e43ffa"},
    {"A.8", &kOtrV31S, kK256, "c0c1c2c3c4c5c6c7", 8, 0, 48,
     "54ae1736a12b82c308f5fb82475b4a110d6a1090fb8e2685f1745840883a39c1"
     "9a1823b248ea0918d2df1e159be7685b",
     "9db7aae5797693f3"},
    {"A.9", &kOtrV2P, kK128, kN12, 16, 31, 64,
     "a92081a680a3a515d22c6fb5bbd2e5472232da22c700e496ae91b5dcc27ad28c"
     "10082ee8611aad0466b8c80696714d0f0b37ed1e6ad67d9d50a11d393b6ff3f3",
     "81cbb27ed769fe1918a09e4466a7a86b"},
    {"A.10", &kOtrV2S, kK256, kN12, 16, 17, 33,
     "b0dc5856a12077447434264722628aa9c1371b0d9f54a72bf3704d85c6efaccd84",
     "42edce4f8bfbb29df6abc5abd2fc04af"},
};

std::vector<uint8_t> Counting(size_t n, uint8_t first) {
  std::vector<uint8_t> v(n);
  for (size_t i = 0; i < n; i++) v[i] = static_cast<uint8_t>(first + i);
  return v;
}

void CheckOtrReferenceAgainstSpec() {
  static const bool checked = [] {
    for (const OtrVector &t : kOtrVectors) {
      const std::vector<uint8_t> key = FromHex(t.key), nonce = FromHex(t.nonce),
                                 aad = Counting(t.aad_len, 0x00), msg = Counting(t.msg_len, 0x40);
      std::vector<uint8_t> c(t.msg_len + 1), tag(t.tau);
      OtrReferenceSeal(*t.variant, key.data(), key.size(), nonce.data(), nonce.size(),
                       aad.data(), aad.size(), msg.data(), msg.size(), c.data(), tag.data(),
                       t.tau);
      c.resize(t.msg_len);
      if (c != FromHex(t.ciphertext) || tag != FromHex(t.tag))
        Die(std::string("this program's AES-OTR ") + t.variant->name +
            " does not match specs/aes-otr.md vector " + t.id +
            "; no reference to check the OTR kernels against");
    }
    return true;
  }();
  (void)checked;
}

}  // namespace

// ---------------------------------------------------------------------------
// The implementations, behind one interface
//
// An OtrImpl is one AES-OTR or AES-OCB implementation at one key size, with 12-byte nonces
// and 16-byte tags.  SetKey keys it.  Seal encrypts one record under the current key: `len`
// bytes from `in` to `out`, then the tag at out + len (out has room for len + 16 bytes;
// in != out).  Open takes `len` bytes of ciphertext at `in` followed by the tag, writes the
// plaintext to `out`, and returns whether the tag was right.

class OtrImpl {
 public:
  virtual ~OtrImpl() = default;
  virtual void SetKey(const uint8_t *key) = 0;
  virtual void Seal(const uint8_t *nonce, const uint8_t *aad, size_t aad_len, const uint8_t *in,
                    size_t len, uint8_t *out) = 0;
  virtual bool Open(const uint8_t *nonce, const uint8_t *aad, size_t aad_len, const uint8_t *in,
                    size_t len, uint8_t *out) = 0;
};

// An OtrRef is one comparison kernel at one key size.  Record runs one message under a new
// 12-byte nonce: CTR, `len` bytes of keystream XOR from `in` to `out`; GCM, a record sealed
// into `out` (len + 16 bytes).  Verify checks it against OpenSSL and leaves it keyed with
// BaseKey().
class OtrRef {
 public:
  virtual ~OtrRef() = default;
  virtual void SetKey(const uint8_t *key) = 0;
  virtual void Record(const uint8_t *nonce, const uint8_t *in, size_t len, uint8_t *out) = 0;
  virtual void Verify(const std::string &label) = 0;
};

namespace {

#ifdef AESGEN_HAVE_AEAD
// An "otr" or "otr-v2" entry of the generated set's aesgen_aeads[].
class AesgenOtr final : public OtrImpl {
 public:
  AesgenOtr(const aesgen_aead &aead, const OtrVariant &variant, int key_bits)
      : aead_(aead), variant_(variant), key_len_(static_cast<size_t>(key_bits) / 8),
        ctx_(AlignedBuffer(aead.ctx_size)) {}
  ~AesgenOtr() override {
    aead_.wipe(ctx_);
    std::free(ctx_);
  }
  void SetKey(const uint8_t *key) override {
    if (aead_.init(ctx_, key, key_len_) != 0)
      Die(std::string(aead_.name) + ": init refused a " + Bits(static_cast<int>(key_len_ * 8)) +
          "-bit key");
  }
  void Seal(const uint8_t *nonce, const uint8_t *aad, size_t aad_len, const uint8_t *in,
            size_t len, uint8_t *out) override {
    if (aead_.seal(ctx_, nonce, kNonceLen, aad, aad_len, in, len, out, out + len, kTagLen) != 0)
      Die(std::string(aead_.name) + ": seal returned -1");
  }
  bool Open(const uint8_t *nonce, const uint8_t *aad, size_t aad_len, const uint8_t *in,
            size_t len, uint8_t *out) override {
    return aead_.open(ctx_, nonce, kNonceLen, aad, aad_len, in, len, out, in + len, kTagLen) == 0;
  }

  const aesgen_aead &aead() const { return aead_; }
  const OtrVariant &variant() const { return variant_; }
  size_t key_len() const { return key_len_; }
  void *ctx() { return ctx_; }

 private:
  const aesgen_aead &aead_;
  const OtrVariant &variant_;
  size_t key_len_;
  uint8_t *ctx_;
};

// The key sizes of kOtrKeyBits the kernel's init takes, found by asking it; each one it
// refuses is named on stderr.
std::vector<int> AskedKeyBits(const char *name, size_t ctx_size,
                              const std::function<int(void *ctx, const uint8_t *key, size_t)> &init,
                              const std::function<void(void *ctx)> &wipe) {
  std::vector<int> bits;
  uint8_t *ctx = AlignedBuffer(ctx_size);
  const Key key = BaseKey();
  for (int b : kOtrKeyBits) {
    if (init(ctx, key.bytes, static_cast<size_t>(b) / 8) == 0)
      bits.push_back(b);
    else
      Skip(std::string(name) + "/" + Bits(b), "init refuses " + Bits(b) + "-bit keys");
  }
  wipe(ctx);
  std::free(ctx);
  return bits;
}
#endif  // AESGEN_HAVE_AEAD

#if GCRYPT_VERSION_NUMBER >= 0x010700  // GCRY_CIPHER_MODE_OCB came with libgcrypt 1.7
// libgcrypt's OCB: one handle per key size, keyed once; gcry_cipher_setiv starts a record.
class LibgcryptOcb final : public OtrImpl {
 public:
  explicit LibgcryptOcb(int key_bits) : key_len_(static_cast<size_t>(key_bits) / 8) {
    Check(gcry_cipher_open(&h_, key_bits == 128 ? GCRY_CIPHER_AES128 : GCRY_CIPHER_AES256,
                           GCRY_CIPHER_MODE_OCB, 0),
          "gcry_cipher_open");
  }
  ~LibgcryptOcb() override { gcry_cipher_close(h_); }

  void SetKey(const uint8_t *key) override {
    Check(gcry_cipher_setkey(h_, key, key_len_), "gcry_cipher_setkey");
  }
  void Seal(const uint8_t *nonce, const uint8_t *aad, size_t aad_len, const uint8_t *in,
            size_t len, uint8_t *out) override {
    gcry_error_t e = Start(nonce, aad, aad_len);
    if (!e) e = gcry_cipher_encrypt(h_, out, len, in, len);
    if (!e) e = gcry_cipher_gettag(h_, out + len, kTagLen);
    Check(e, "sealing a record");
  }
  bool Open(const uint8_t *nonce, const uint8_t *aad, size_t aad_len, const uint8_t *in,
            size_t len, uint8_t *out) override {
    gcry_error_t e = Start(nonce, aad, aad_len);
    if (!e) e = gcry_cipher_decrypt(h_, out, len, in, len);
    if (!e) e = gcry_cipher_checktag(h_, in + len, kTagLen);
    if (gcry_err_code(e) == GPG_ERR_CHECKSUM) return false;
    Check(e, "opening a record");
    return true;
  }

 private:
  gcry_error_t Start(const uint8_t *nonce, const uint8_t *aad, size_t aad_len) {
    gcry_error_t e = gcry_cipher_setiv(h_, nonce, kNonceLen);
    if (!e) e = gcry_cipher_authenticate(h_, aad, aad_len);
    if (!e) e = gcry_cipher_final(h_);  // the whole message goes in the next call
    return e;
  }
  static void Check(gcry_error_t e, const char *what) {
    if (e) Die(std::string("libgcrypt-ocb: ") + what + ": " + gcry_strerror(e));
  }
  gcry_cipher_hd_t h_ = nullptr;
  size_t key_len_;
};
#endif

#ifndef OPENSSL_NO_OCB
const EVP_CIPHER *OpensslOcbCipher(int key_bits) {
  return key_bits == 128 ? EVP_aes_128_ocb() : key_bits == 256 ? EVP_aes_256_ocb() : nullptr;
}

// OpenSSL's OCB through EVP: the cipher and key set once in each direction; each record
// passes only the nonce to the Init call.
class OpensslOcb final : public OtrImpl {
 public:
  explicit OpensslOcb(int key_bits) : enc_(EVP_CIPHER_CTX_new()), dec_(EVP_CIPHER_CTX_new()) {
    const EVP_CIPHER *c = OpensslOcbCipher(key_bits);
    if (enc_ == nullptr || dec_ == nullptr || c == nullptr ||
        EVP_EncryptInit_ex(enc_, c, nullptr, nullptr, nullptr) != 1 ||
        EVP_CIPHER_CTX_ctrl(enc_, EVP_CTRL_AEAD_SET_IVLEN, kNonceLen, nullptr) != 1 ||
        EVP_CIPHER_CTX_ctrl(enc_, EVP_CTRL_AEAD_SET_TAG, kTagLen, nullptr) != 1 ||
        EVP_DecryptInit_ex(dec_, c, nullptr, nullptr, nullptr) != 1 ||
        EVP_CIPHER_CTX_ctrl(dec_, EVP_CTRL_AEAD_SET_IVLEN, kNonceLen, nullptr) != 1)
      Die("openssl-ocb: setting up AES-" + Bits(key_bits) + "-OCB failed");
  }
  ~OpensslOcb() override {
    EVP_CIPHER_CTX_free(enc_);
    EVP_CIPHER_CTX_free(dec_);
  }

  void SetKey(const uint8_t *key) override {
    if (EVP_EncryptInit_ex(enc_, nullptr, nullptr, key, nullptr) != 1 ||
        EVP_DecryptInit_ex(dec_, nullptr, nullptr, key, nullptr) != 1)
      Die("openssl-ocb: setting the key failed");
  }
  void Seal(const uint8_t *nonce, const uint8_t *aad, size_t aad_len, const uint8_t *in,
            size_t len, uint8_t *out) override {
    int n = 0, last = 0;
    // OCB holds back a partial block until Final: the ciphertext comes in two parts
    if (EVP_EncryptInit_ex(enc_, nullptr, nullptr, nullptr, nonce) != 1 ||
        EVP_EncryptUpdate(enc_, nullptr, &n, aad, static_cast<int>(aad_len)) != 1 ||
        EVP_EncryptUpdate(enc_, out, &n, in, static_cast<int>(len)) != 1 ||
        EVP_EncryptFinal_ex(enc_, out + n, &last) != 1 ||
        static_cast<size_t>(n) + static_cast<size_t>(last) != len ||
        EVP_CIPHER_CTX_ctrl(enc_, EVP_CTRL_AEAD_GET_TAG, kTagLen, out + len) != 1)
      Die("openssl-ocb: sealing a " + std::to_string(len) + "-byte record failed");
  }
  bool Open(const uint8_t *nonce, const uint8_t *aad, size_t aad_len, const uint8_t *in,
            size_t len, uint8_t *out) override {
    int n = 0, last = 0;
    if (EVP_DecryptInit_ex(dec_, nullptr, nullptr, nullptr, nonce) != 1 ||
        EVP_CIPHER_CTX_ctrl(dec_, EVP_CTRL_AEAD_SET_TAG, kTagLen,
                            const_cast<uint8_t *>(in + len)) != 1 ||
        EVP_DecryptUpdate(dec_, nullptr, &n, aad, static_cast<int>(aad_len)) != 1 ||
        EVP_DecryptUpdate(dec_, out, &n, in, static_cast<int>(len)) != 1)
      Die("openssl-ocb: opening a " + std::to_string(len) + "-byte record failed");
    return EVP_DecryptFinal_ex(dec_, out + n, &last) == 1 &&
           static_cast<size_t>(n) + static_cast<size_t>(last) == len;
  }

 private:
  EVP_CIPHER_CTX *enc_, *dec_;
};
#endif

// ---------------------------------------------------------------------------
// OpenSSL one-shots: what the comparison kernels are checked against

const EVP_CIPHER *OpensslCipher(const char *mode, int key_bits) {
  if (std::strcmp(mode, "ctr") == 0)
    return key_bits == 128 ? EVP_aes_128_ctr() : key_bits == 256 ? EVP_aes_256_ctr() : nullptr;
  return key_bits == 128 ? EVP_aes_128_gcm() : key_bits == 256 ? EVP_aes_256_gcm() : nullptr;
}

// AES-CTR (16-byte IV) or AES-GCM (12-byte nonce, AAD, the tag appended) of one message.
std::vector<uint8_t> OpensslOneShot(const char *mode, int key_bits, const uint8_t *key,
                                    const uint8_t *iv, const uint8_t *aad, size_t aad_len,
                                    const uint8_t *in, size_t len) {
  const bool gcm = std::strcmp(mode, "gcm") == 0;
  std::vector<uint8_t> out(len + (gcm ? kTagLen : 0) + 16);
  EVP_CIPHER_CTX *ctx = EVP_CIPHER_CTX_new();
  int n = 0, last = 0;
  const bool ok =
      ctx != nullptr &&
      EVP_EncryptInit_ex(ctx, OpensslCipher(mode, key_bits), nullptr, key, iv) == 1 &&
      (!gcm || EVP_EncryptUpdate(ctx, nullptr, &n, aad, static_cast<int>(aad_len)) == 1) &&
      EVP_EncryptUpdate(ctx, out.data(), &n, in, static_cast<int>(len)) == 1 &&
      EVP_EncryptFinal_ex(ctx, out.data() + n, &last) == 1 &&
      static_cast<size_t>(n + last) == len &&
      (!gcm || EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_AEAD_GET_TAG, kTagLen, out.data() + len) == 1);
  EVP_CIPHER_CTX_free(ctx);
  if (!ok) Die(std::string("OpenSSL AES-") + Bits(key_bits) + "-" + mode + " failed");
  out.resize(len + (gcm ? kTagLen : 0));
  return out;
}

// The CTR IV of the comparison's record under `nonce`: nonce || 00 00 00 02, the counter
// block of GCM's first data block.
std::array<uint8_t, 16> CtrIv(const uint8_t *nonce) {
  std::array<uint8_t, 16> iv{};
  std::memcpy(iv.data(), nonce, kNonceLen);
  iv[15] = 2;
  return iv;
}

// The set's CTR kernel METHOD-face-none.
class AesgenCtrRef final : public OtrRef {
 public:
  AesgenCtrRef(const aesgen_kernel &k, int key_bits)
      : k_(k), key_bits_(key_bits), ctx_(AlignedBuffer(k.ctx_size)) {}
  ~AesgenCtrRef() override {
    k_.wipe(ctx_);
    std::free(ctx_);
  }
  void SetKey(const uint8_t *key) override {
    const std::array<uint8_t, 16> iv{};
    if (k_.init(ctx_, key, static_cast<size_t>(key_bits_) / 8, iv.data()) != 0)
      Die(std::string(k_.name) + ": init refused a " + Bits(key_bits_) + "-bit key");
  }
  void Record(const uint8_t *nonce, const uint8_t *in, size_t len, uint8_t *out) override {
    const std::array<uint8_t, 16> iv = CtrIv(nonce);
    k_.set_iv(ctx_, iv.data());
    k_.xor_stream(ctx_, out, in, len);
  }
  void Verify(const std::string &label) override {
    const Key key = BaseKey();
    SetKey(key.bytes);
    TlsNonces nonces(3);
    const uint8_t *nonce = nonces.Next();
    const size_t len = 4100;
    std::vector<uint8_t> got(len);
    Record(nonce, SharedBuffers().in, len, got.data());
    if (got != OpensslOneShot("ctr", key_bits_, key.bytes, CtrIv(nonce).data(), nullptr, 0,
                              SharedBuffers().in, len))
      Die(label + ": its keystream differs from OpenSSL's AES-CTR; refusing to benchmark it");
  }

 private:
  const aesgen_kernel &k_;
  int key_bits_;
  uint8_t *ctx_;
};

#ifdef AESGEN_HAVE_AEAD
// The set's GCM kernel METHOD-gcm-none.
class AesgenGcmRef final : public OtrRef {
 public:
  AesgenGcmRef(const aesgen_aead &a, int key_bits)
      : a_(a), key_bits_(key_bits), ctx_(AlignedBuffer(a.ctx_size)) {}
  ~AesgenGcmRef() override {
    a_.wipe(ctx_);
    std::free(ctx_);
  }
  void SetKey(const uint8_t *key) override {
    if (a_.init(ctx_, key, static_cast<size_t>(key_bits_) / 8) != 0)
      Die(std::string(a_.name) + ": init refused a " + Bits(key_bits_) + "-bit key");
  }
  void Record(const uint8_t *nonce, const uint8_t *in, size_t len, uint8_t *out) override {
    if (a_.seal(ctx_, nonce, kNonceLen, RecordAad(), kAadLen, in, len, out, out + len,
                kTagLen) != 0)
      Die(std::string(a_.name) + ": seal returned -1");
  }
  void Verify(const std::string &label) override {
    const Key key = BaseKey();
    SetKey(key.bytes);
    TlsNonces nonces(3);
    const uint8_t *nonce = nonces.Next();
    const size_t len = 1420;
    std::vector<uint8_t> got(len + kTagLen);
    Record(nonce, SharedBuffers().in, len, got.data());
    if (got != OpensslOneShot("gcm", key_bits_, key.bytes, nonce, RecordAad(), kAadLen,
                              SharedBuffers().in, len))
      Die(label + ": its record differs from OpenSSL's AES-GCM; refusing to benchmark it");
  }

 private:
  const aesgen_aead &a_;
  int key_bits_;
  uint8_t *ctx_;
};
#endif  // AESGEN_HAVE_AEAD

// ---------------------------------------------------------------------------
// Which implementations this process runs

struct OtrFactory {
  std::string name;
  std::vector<int> key_bits;
  std::function<std::shared_ptr<OtrImpl>(int key_bits)> make;      // OTR or OCB
  std::function<std::shared_ptr<OtrRef>(int key_bits)> make_ref;   // or a comparison kernel
};

const std::vector<int> kPeerKeyBits(std::begin(kOtrKeyBits), std::end(kOtrKeyBits));

// The methods the comparison rows are given for beside those of the OTR kernels: the ones
// the OTR targets are stated for.
const char *const kRefMethods[] = {"aesni", "vaes512"};

// The set's OTR kernels this process can time; the others are named on stderr.  Their
// methods are added to `methods`.
void AddAesgenOtr(std::vector<OtrFactory> &factories, std::vector<std::string> &methods) {
#ifdef AESGEN_HAVE_AEAD
  const uint64_t have = aesgen_cpu_features();
  for (size_t i = 0; i < aesgen_aead_count; i++) {
    const aesgen_aead &a = aesgen_aeads[i];
    if (std::strncmp(a.mode, "otr", 3) != 0) continue;  // GCM, GCM-SIV: their own tables
    const OtrVariant *variant = VariantOfMode(a.mode);
    if (variant == nullptr) {
      std::string known;
      for (const OtrMode &m : kOtrModes)
        known += std::string(known.empty() ? "" : ", ") + m.mode + " (" + m.variant->name + ")";
      Skip(a.name, std::string("mode \"") + a.mode + "\" is not one this program checks (" +
                       known + ")");
      continue;
    }
    if (const uint64_t missing = a.features & ~have) {
      Skip(a.name, "needs" + AesgenFeatureNames(missing));
      continue;
    }
    if (kNonceLen < a.nonce_min || kNonceLen > a.nonce_max || kTagLen < a.tag_min ||
        kTagLen > a.tag_max || a.seal == nullptr || a.open == nullptr) {
      Skip(a.name, "does not seal and open with 12-byte nonces and 16-byte tags");
      continue;
    }
    std::vector<int> bits = AskedKeyBits(
        a.name, a.ctx_size,
        [&a](void *ctx, const uint8_t *key, size_t len) { return a.init(ctx, key, len); },
        [&a](void *ctx) { a.wipe(ctx); });
    if (bits.empty()) continue;
    if (std::find(methods.begin(), methods.end(), a.method) == methods.end())
      methods.push_back(a.method);
    factories.push_back({a.name, bits,
                         [&a, variant](int b) -> std::shared_ptr<OtrImpl> {
                           return std::make_shared<AesgenOtr>(a, *variant, b);
                         },
                         nullptr});
  }
#else
  (void)factories;  // this set's aesgen.h declares no AEAD kernels
  (void)methods;
#endif
}

// The comparison kernels of each method: METHOD-face-none (CTR) and METHOD-gcm-none (GCM),
// where the set has them; one the CPU cannot run is named on stderr.
void AddComparisons(std::vector<OtrFactory> &factories, const std::vector<std::string> &methods) {
  const uint64_t have = aesgen_cpu_features();
  std::vector<int> bits;
  for (int b : AesgenKeyBits())
    if (std::find(kPeerKeyBits.begin(), kPeerKeyBits.end(), b) != kPeerKeyBits.end())
      bits.push_back(b);
  if (bits.empty()) return;
  for (const std::string &method : methods) {
    for (size_t i = 0; i < aesgen_kernel_count; i++) {
      const aesgen_kernel &k = aesgen_kernels[i];
      if (method != k.method || std::strcmp(k.face, "none") != 0) continue;
      if (const uint64_t missing = k.features & ~have) {
        Skip(k.name, "needs" + AesgenFeatureNames(missing));
        continue;
      }
      factories.push_back({k.name, bits, nullptr, [&k](int b) -> std::shared_ptr<OtrRef> {
                             return std::make_shared<AesgenCtrRef>(k, b);
                           }});
    }
#ifdef AESGEN_HAVE_AEAD
    for (size_t i = 0; i < aesgen_aead_count; i++) {
      const aesgen_aead &a = aesgen_aeads[i];
      if (method != a.method || std::strcmp(a.mode, "gcm") != 0 ||
          std::strcmp(a.face, "none") != 0)
        continue;
      if (const uint64_t missing = a.features & ~have) {
        Skip(a.name, "needs" + AesgenFeatureNames(missing));
        continue;
      }
      if (kNonceLen < a.nonce_min || kNonceLen > a.nonce_max || kTagLen < a.tag_min ||
          kTagLen > a.tag_max) {
        Skip(a.name, "does not take 12-byte nonces and 16-byte tags");
        continue;
      }
      factories.push_back({a.name, bits, nullptr, [&a](int b) -> std::shared_ptr<OtrRef> {
                             return std::make_shared<AesgenGcmRef>(a, b);
                           }});
    }
#endif
  }
}

// Why libgcrypt's OCB cannot be run here, or "" when it can.
std::string LibgcryptOcbMissing() {
  if (const std::string &why = LibgcryptError(); !why.empty()) return why;
#if GCRYPT_VERSION_NUMBER >= 0x010700
  gcry_cipher_hd_t h = nullptr;
  if (const gcry_error_t e = gcry_cipher_open(&h, GCRY_CIPHER_AES128, GCRY_CIPHER_MODE_OCB, 0))
    return std::string("libgcrypt ") + gcry_check_version(nullptr) +
           " does not open AES-OCB: " + gcry_strerror(e);
  gcry_cipher_close(h);
  return "";
#else
  return std::string("built against libgcrypt ") + GCRYPT_VERSION +
         " headers; OCB came with 1.7";
#endif
}

// Why OpenSSL's OCB cannot be run here, or "" when it can.
std::string OpensslOcbMissing() {
#ifdef OPENSSL_NO_OCB
  return std::string("this OpenSSL (") + OpenSSL_version(OPENSSL_VERSION) +
         ") was built without OCB";
#else
  EVP_CIPHER_CTX *ctx = EVP_CIPHER_CTX_new();
  const bool ok = ctx != nullptr &&
                  EVP_EncryptInit_ex(ctx, EVP_aes_128_ocb(), nullptr, nullptr, nullptr) == 1;
  EVP_CIPHER_CTX_free(ctx);
  if (ok) return "";
  char why[256] = "no reason given";
  if (const unsigned long e = ERR_get_error()) ERR_error_string_n(e, why, sizeof why);
  ERR_clear_error();
  return std::string(OpenSSL_version(OPENSSL_VERSION)) + " does not set up AES-128-OCB: " + why;
#endif
}

std::shared_ptr<OtrImpl> MakeLibgcryptOcb(int key_bits) {
#if GCRYPT_VERSION_NUMBER >= 0x010700
  return std::make_shared<LibgcryptOcb>(key_bits);
#else
  Die("libgcrypt-ocb: " + LibgcryptOcbMissing() + " (" + Bits(key_bits) + "-bit key)");
#endif
}

std::shared_ptr<OtrImpl> MakeOpensslOcb(int key_bits) {
#ifndef OPENSSL_NO_OCB
  return std::make_shared<OpensslOcb>(key_bits);
#else
  Die("openssl-ocb: " + OpensslOcbMissing() + " (" + Bits(key_bits) + "-bit key)");
#endif
}

struct Peer {
  const char *name;
  std::string (*missing)();
  std::shared_ptr<OtrImpl> (*make)(int key_bits);
};
const Peer kPeers[] = {
    {"libgcrypt-ocb", LibgcryptOcbMissing, MakeLibgcryptOcb},
    {"openssl-ocb", OpensslOcbMissing, MakeOpensslOcb},
};

std::vector<OtrFactory> AvailableOtr() {
  std::vector<OtrFactory> factories;
  if (NoAesniMode()) return factories;  // the child run times OpenSSL's CTR, GCM, GHASH alone
  std::vector<std::string> methods(std::begin(kRefMethods), std::end(kRefMethods));
  AddAesgenOtr(factories, methods);
  for (const Peer &p : kPeers) {
    if (const std::string why = p.missing(); !why.empty()) {
      Skip(p.name, why);
      continue;
    }
    factories.push_back({p.name, kPeerKeyBits, p.make, nullptr});
  }
  AddComparisons(factories, methods);
  return factories;
}

// ---------------------------------------------------------------------------
// The timed loops

void BenchSeal(benchmark::State &state, OtrImpl &impl, size_t size) {
  const Buffers &buf = SharedBuffers();
  const Key key = BaseKey();
  impl.SetKey(key.bytes);
  TlsNonces nonces;
  impl.Seal(nonces.Next(), RecordAad(), kAadLen, buf.in, size, buf.out);  // warm-up
  const uint64_t t0 = Ticks();
  for (auto _ : state) impl.Seal(nonces.Next(), RecordAad(), kAadLen, buf.in, size, buf.out);
  const uint64_t ticks = Ticks() - t0;
  ReportPerByte(state, ticks, size);
  ReportTicksPerRecord(state, ticks);
}

void BenchOpen(benchmark::State &state, OtrImpl &impl, const std::string &label, size_t size) {
  const Buffers &buf = SharedBuffers();
  const Key key = BaseKey();
  impl.SetKey(key.bytes);
  SealedRecords records(size, [&impl, &buf, size](const uint8_t *nonce, uint8_t *record) {
    impl.Seal(nonce, RecordAad(), kAadLen, buf.in, size, record);
  });
  bool ok = impl.Open(records.Nonce(0), RecordAad(), kAadLen, records.Record(0), size,
                      buf.out);  // warm-up
  size_t i = 1 % records.count();
  const uint64_t t0 = Ticks();
  for (auto _ : state) {
    ok &= impl.Open(records.Nonce(i), RecordAad(), kAadLen, records.Record(i), size, buf.out);
    i = i + 1 == records.count() ? 0 : i + 1;
  }
  const uint64_t ticks = Ticks() - t0;
  if (!ok) Die(label + ": open of a record it sealed itself failed during the benchmark");
  ReportPerByte(state, ticks, size);
  ReportTicksPerRecord(state, ticks);
}

void BenchRef(benchmark::State &state, OtrRef &ref, size_t size) {
  const Buffers &buf = SharedBuffers();
  const Key key = BaseKey();
  ref.SetKey(key.bytes);
  TlsNonces nonces;
  ref.Record(nonces.Next(), buf.in, size, buf.out);  // warm-up
  const uint64_t t0 = Ticks();
  for (auto _ : state) ref.Record(nonces.Next(), buf.in, size, buf.out);
  const uint64_t ticks = Ticks() - t0;
  ReportPerByte(state, ticks, size);
  ReportTicksPerRecord(state, ticks);
}

// ---------------------------------------------------------------------------
// Correctness checks before timing

void CheckGuard(const std::string &what, const std::vector<uint8_t> &buf, size_t from) {
  for (size_t i = from; i < buf.size(); i++)
    if (buf[i] != kGuardByte) Die(what + ": wrote past its output; refusing to benchmark it");
}

#ifdef AESGEN_HAVE_AEAD
// One record through an OTR kernel (keyed with `key`) against the reference: seal gives the
// reference's ciphertext and tag and writes nothing past them; open of the reference's
// record gives the plaintext; open of it with a tag bit or a ciphertext bit changed returns
// -1 and zeroes the output.
void CheckOtrRecord(const std::string &what, AesgenOtr &k, const uint8_t *key,
                    const uint8_t *nonce, size_t nonce_len, size_t aad_len, size_t len,
                    size_t tau) {
  const aesgen_aead &a = k.aead();
  const uint8_t *in = SharedBuffers().in;
  const std::vector<uint8_t> aad = Counting(aad_len, 0x30);
  const std::string record = what + ", " + std::to_string(len) + "-byte record, " +
                             std::to_string(aad_len) + " bytes of AAD, " +
                             std::to_string(nonce_len) + "-byte nonce, " + std::to_string(tau) +
                             "-byte tag";
  std::vector<uint8_t> want(len + 1), want_tag(tau);
  OtrReferenceSeal(k.variant(), key, k.key_len(), nonce, nonce_len, aad.data(), aad_len, in, len,
                   want.data(), want_tag.data(), tau);
  want.resize(len);

  std::vector<uint8_t> got(len + kGuardLen, kGuardByte), tag(tau + kGuardLen, kGuardByte);
  if (a.seal(k.ctx(), nonce, nonce_len, aad.data(), aad_len, in, len, got.data(), tag.data(),
             tau) != 0)
    Die(record + ": seal returned -1; refusing to benchmark it");
  const size_t bad = std::mismatch(want.begin(), want.end(), got.begin()).first - want.begin();
  if (bad < len)
    Die(record + ": seal's ciphertext differs from the reference's (" + k.variant().name +
        ") from byte " + std::to_string(bad) + "; refusing to benchmark it");
  if (!std::equal(want_tag.begin(), want_tag.end(), tag.begin()))
    Die(record + ": seal's ciphertext is right but its tag differs from the reference's (" +
        k.variant().name + "); refusing to benchmark it");
  CheckGuard(record + " (seal's ciphertext)", got, len);
  CheckGuard(record + " (seal's tag)", tag, tau);

  std::vector<uint8_t> plain(len + kGuardLen, kGuardByte);
  if (a.open(k.ctx(), nonce, nonce_len, aad.data(), aad_len, want.data(), len, plain.data(),
             want_tag.data(), tau) != 0)
    Die(record + ": open refused the reference's record; refusing to benchmark it");
  if (!std::equal(in, in + len, plain.begin()))
    Die(record + ": open of the reference's record gave another plaintext; refusing to "
                 "benchmark it");
  CheckGuard(record + " (open)", plain, len);

  auto refused = [&](std::vector<uint8_t> c, std::vector<uint8_t> t, const char *change) {
    std::fill(plain.begin(), plain.begin() + static_cast<std::ptrdiff_t>(len), kStaleByte);
    if (a.open(k.ctx(), nonce, nonce_len, aad.data(), aad_len, c.data(), len, plain.data(),
               t.data(), tau) != -1)
      Die(record + ": open accepted " + change + "; refusing to benchmark it");
    if (std::any_of(plain.begin(), plain.begin() + static_cast<std::ptrdiff_t>(len),
                    [](uint8_t b) { return b != 0; }))
      Die(record + ": open refused " + change + " but left its output not all zero; "
                   "refusing to benchmark it");
    CheckGuard(record + " (failed open)", plain, len);
  };
  std::vector<uint8_t> forged_tag = want_tag;
  forged_tag[tau / 2] ^= 0x10;
  refused(want, forged_tag, "a changed tag");
  if (len > 0) {
    std::vector<uint8_t> forged = want;
    forged[len / 2] ^= 0x01;
    refused(forged, want_tag, "a changed ciphertext");
  }
}

void VerifyOtrKernel(const OtrTarget &t, AesgenOtr &k, const std::vector<size_t> &sizes) {
  const aesgen_aead &a = k.aead();
  const Key key = BaseKey();
  Key other = key;
  for (uint8_t &b : other.bytes) b ^= 0x5c;
  // another key first: the base key below must replace it completely
  TlsNonces nonces(7);
  k.SetKey(other.bytes);
  CheckOtrRecord(t.name + " (other key)", k, other.bytes, nonces.Next(), kNonceLen, kAadLen,
                 4100, kTagLen);
  k.SetKey(key.bytes);
  // a run of records under one key, each under the next nonce, as the benchmarks seal them
  std::vector<size_t> lengths = kVerifyLengths;
  lengths.insert(lengths.end(), sizes.begin(), sizes.end());
  TlsNonces run((uint64_t{1} << 32) - 3);
  for (size_t i = 0; i < lengths.size(); i++)
    CheckOtrRecord(t.name + " (record " + std::to_string(i + 1) + " after set-up)", k, key.bytes,
                   run.Next(), kNonceLen, kVerifyAadLengths[i % kVerifyAadLengths.size()],
                   lengths[i], kTagLen);
  // the ends of the nonce and tag ranges it declares (Format binds both)
  const uint8_t *nonce = run.Next();
  uint8_t long_nonce[15];
  for (size_t i = 0; i < sizeof long_nonce; i++) long_nonce[i] = static_cast<uint8_t>(0xa0 + i);
  for (size_t n : {size_t{1}, size_t{8}, size_t{15}})
    if (n >= a.nonce_min && n <= a.nonce_max && n != kNonceLen)
      CheckOtrRecord(t.name, k, key.bytes, long_nonce, n, 20, 100, kTagLen);
  for (size_t tau : {size_t{1}, size_t{4}, size_t{8}, size_t{12}, size_t{15}})
    if (tau >= a.tag_min && tau <= a.tag_max)
      CheckOtrRecord(t.name, k, key.bytes, nonce, kNonceLen, 20, 100, tau);
}
#endif  // AESGEN_HAVE_AEAD

// RFC 7253 Appendix A: the first four AES-128 samples (key 000102...0f, 16-byte tags;
// A and P are the bytes 00 01 02 ...), ciphertext || tag.
struct OcbVector {
  const char *nonce;
  size_t aad_len, msg_len;
  const char *result;
};
const OcbVector kOcbVectors[] = {
    {"bbaa99887766554433221100", 0, 0, "785407bfffc8ad9edcc5520ac9111ee6"},
    {"bbaa99887766554433221101", 8, 8, "6820b3657b6f615a5725bda0d3b4eb3a257c9af1f8f03009"},
    {"bbaa99887766554433221102", 8, 0, "81017f8203f081277152fade694a0a00"},
    {"bbaa99887766554433221103", 0, 8, "45dd69f8f5aae72414054cd1f35d82760b2cd00d2f99bfa9"},
};

// RFC 7253 Appendix A's iterated test, 128-bit tag: the tag of an empty message whose AAD
// is the 384 records sealed before it (nonces 1..384 as 96-bit numbers, lengths 0..127 of
// zero bytes as message and AAD, as message alone, as AAD alone).
std::vector<uint8_t> OcbIteratedTag(OtrImpl &impl, int key_bits) {
  std::vector<uint8_t> key(static_cast<size_t>(key_bits) / 8, 0);
  key.back() = 128;  // the tag length in bits
  impl.SetKey(key.data());
  const std::vector<uint8_t> zeros(128, 0);
  std::vector<uint8_t> c, out(128 + kTagLen);
  auto nonce = [](uint64_t n) {
    std::array<uint8_t, kNonceLen> b{};
    for (size_t i = 0; i < 8; i++) b[kNonceLen - 1 - i] = static_cast<uint8_t>(n >> (8 * i));
    return b;
  };
  for (size_t i = 0; i < 128; i++) {
    const struct { size_t aad, msg; } parts[] = {{i, i}, {0, i}, {i, 0}};
    for (size_t j = 0; j < 3; j++) {
      impl.Seal(nonce(3 * i + j + 1).data(), zeros.data(), parts[j].aad, zeros.data(),
                parts[j].msg, out.data());
      const size_t n = parts[j].msg + kTagLen;  // ciphertext and tag
      c.insert(c.end(), out.begin(), out.begin() + static_cast<std::ptrdiff_t>(n));
    }
  }
  impl.Seal(nonce(385).data(), c.data(), c.size(), zeros.data(), 0, out.data());
  return std::vector<uint8_t>(out.begin(), out.begin() + kTagLen);
}

void VerifyOcbPeer(const OtrTarget &t) {
  OtrImpl &impl = *t.impl;
  if (t.key_bits == 128) {
    const std::vector<uint8_t> key = FromHex("000102030405060708090a0b0c0d0e0f");
    impl.SetKey(key.data());
    for (const OcbVector &v : kOcbVectors) {
      const std::vector<uint8_t> nonce = FromHex(v.nonce), a = Counting(v.aad_len, 0),
                                 p = Counting(v.msg_len, 0), want = FromHex(v.result);
      std::vector<uint8_t> got(want.size());
      impl.Seal(nonce.data(), a.data(), a.size(), p.data(), p.size(), got.data());
      if (got != want)
        Die(t.name + ": does not match RFC 7253's sample with nonce " + v.nonce +
            "; refusing to benchmark it");
    }
  }
  const char *const want_iterated = t.key_bits == 128 ? "67e944d23256c5e0b6c61fa22fdf1ea2"
                                                      : "d90eb8e9c977c88b79dd793d7ffa161c";
  if (OcbIteratedTag(impl, t.key_bits) != FromHex(want_iterated))
    Die(t.name + ": does not match RFC 7253's iterated test (AES-" + Bits(t.key_bits) +
        ", 128-bit tag); refusing to benchmark it");
  // then what it seals under the benchmark key it opens, and a changed tag it refuses
  const Key key = BaseKey();
  impl.SetKey(key.bytes);
  TlsNonces nonces(11);
  std::vector<size_t> lengths = kVerifyLengths;
  for (size_t len : lengths) {
    const uint8_t *nonce = nonces.Next();
    std::vector<uint8_t> sealed(len + kTagLen + kGuardLen, kGuardByte), plain(len + 1);
    impl.Seal(nonce, RecordAad(), kAadLen, SharedBuffers().in, len, sealed.data());
    CheckGuard(t.name + ", " + std::to_string(len) + "-byte record (seal)", sealed, len + kTagLen);
    if (!impl.Open(nonce, RecordAad(), kAadLen, sealed.data(), len, plain.data()) ||
        !std::equal(SharedBuffers().in, SharedBuffers().in + len, plain.begin()))
      Die(t.name + ": does not open the " + std::to_string(len) +
          "-byte record it sealed; refusing to benchmark it");
    sealed[len + 3] ^= 0x04;
    if (impl.Open(nonce, RecordAad(), kAadLen, sealed.data(), len, plain.data()))
      Die(t.name + ": opened a " + std::to_string(len) +
          "-byte record with a changed tag; refusing to benchmark it");
  }
}

}  // namespace

// ---------------------------------------------------------------------------
// The interface (otr_bench.h)

std::vector<OtrTarget> RegisterOtr(const std::vector<size_t> &sizes,
                                   const std::set<int> &key_bits,
                                   std::vector<std::string> &names) {
  std::vector<OtrTarget> targets;
  auto add = [&names](const std::string &name, std::function<void(benchmark::State &)> fn) {
    benchmark::RegisterBenchmark(name.c_str(), std::move(fn));
    names.push_back(name);
  };
  for (const OtrFactory &factory : AvailableOtr()) {
    for (int bits : factory.key_bits) {
      if (!key_bits.empty() && !key_bits.count(bits)) continue;
      const std::string label = factory.name + "/" + Bits(bits);
      if (factory.make_ref) {
        std::shared_ptr<OtrRef> ref = factory.make_ref(bits);
        targets.push_back({label, bits, nullptr, ref});
        for (size_t size : sizes)
          add(factory.name + "/otr_ref/" + Bits(bits) + "/" + std::to_string(size),
              [ref, size](benchmark::State &st) { BenchRef(st, *ref, size); });
        continue;
      }
      std::shared_ptr<OtrImpl> impl = factory.make(bits);
      targets.push_back({label, bits, impl, nullptr});
      for (size_t size : sizes) {
        const std::string tail = "/" + Bits(bits) + "/" + std::to_string(size);
        add(factory.name + "/otr_seal" + tail,
            [impl, size](benchmark::State &st) { BenchSeal(st, *impl, size); });
        add(factory.name + "/otr_open" + tail,
            [impl, label, size](benchmark::State &st) { BenchOpen(st, *impl, label, size); });
      }
    }
  }
  return targets;
}

void VerifyOtr(const std::vector<OtrTarget> &targets, const std::vector<size_t> &sizes) {
  if (targets.empty()) return;
  CheckOtrReferenceAgainstSpec();  // whether or not the set has OTR kernels yet: it is cheap
  for (const OtrTarget &t : targets) {
    if (t.ref) {
      t.ref->Verify(t.name);
      continue;
    }
#ifdef AESGEN_HAVE_AEAD
    if (auto *k = dynamic_cast<AesgenOtr *>(t.impl.get())) {
      VerifyOtrKernel(t, *k, sizes);
      continue;
    }
#endif
    VerifyOcbPeer(t);
  }
  (void)sizes;
}

}  // namespace aesgen_bench
