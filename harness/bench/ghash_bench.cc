// ghash_bench.cc: GHASH-alone benchmarks (IMPL/ghash/128/SIZE) of aesgen_bench: the set's
// GCM hash beside OpenSSL's and beside the constant-time GHASHs that need no carry-less
// multiplier, the alternatives to the bytesliced engine of the no-aesni kernels.  See
// ghash_bench.h.
//
// How each IMPL hashes one message of SIZE bytes (key set-up is done before the timed
// loop; the key is AES-128):
//   aesgen kernel          aesgen_aead.start(ctx, nonce, 12), .aad(ctx, data, SIZE),
//                          .finish_seal(ctx, tag, 16): GHASH of SIZE bytes plus, once a
//                          message, the encryption of J0 and the length block, as a real
//                          message has them; it shows at small SIZEs where one AES block
//                          costs as much as a batch (bitsliced)
//   openssl-ghash          the same through EVP (EVP_aes_128_gcm, keyed once): per message
//                          EVP_EncryptInit_ex with the nonce only, EVP_EncryptUpdate(ctx,
//                          NULL, ...) of the data as AAD, EVP_EncryptFinal_ex,
//                          EVP_CTRL_AEAD_GET_TAG
//   openssl-noaesni-ghash  the same, alone, in the child run with OPENSSL_ia32cap masking
//                          AES-NI and PCLMULQDQ: OpenSSL's 4-bit-table GHASH (Shoup's
//                          method), whose loads are indexed by secret bits: not constant time
//   ct-1bit-ghash          below: Käsper and Schwabe's constant-time "1-bit table"
//                          (CHES 2009, section 5), 128 masked XORs of H * x^i a block
//   ct-holes-ghash         below: carry-less products from integer multiplies of operands
//                          with holes, Karatsuba, reduction; 96 multiplies a block
// The two ct-* hash the data and the length block and stop there (no AES: the tag would
// be that XOR E_K(J0), one block cipher call a message).  They are plain C++ on uint64_t
// words, compiled as the rest of the program is (-O2): what a portable constant-time
// GHASH costs when no carry-less multiply instruction can be used.

#include "ghash_bench.h"

#include <openssl/evp.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "aesgen.h"
#include "bench_common.h"
#include "gcm_bench.h"

namespace aesgen_bench {
namespace {

constexpr size_t kKeyLen = 16;  // AES-128
constexpr size_t kNonceLen = 12;
constexpr size_t kTagLen = 16;
constexpr size_t kVerifyLengths[] = {0, 16, 17, 100, 4096};

// Per-message nonces: a fixed 4-byte prefix, then a 64-bit big-endian counter.
class Nonces {
 public:
  explicit Nonces(uint64_t first) : next_(first) {}
  const uint8_t *Next() {
    const uint8_t prefix[4] = {0x5e, 0x11, 0xa7, 0x03};
    std::memcpy(nonce_, prefix, 4);
    for (int i = 0; i < 8; i++) nonce_[4 + i] = static_cast<uint8_t>(next_ >> (56 - 8 * i));
    next_++;
    return nonce_;
  }

 private:
  uint64_t next_;
  uint8_t nonce_[kNonceLen];
};

// One AES-128 block by OpenSSL (EVP_aes_128_ecb): H = E_K(0^128) and E_K(J0).
void EncryptBlock(const uint8_t key[kKeyLen], const uint8_t in[16], uint8_t out[16]) {
  EVP_CIPHER_CTX *ctx = EVP_CIPHER_CTX_new();
  int n = 0;
  if (ctx == nullptr ||
      EVP_EncryptInit_ex(ctx, EVP_aes_128_ecb(), nullptr, key, nullptr) != 1 ||
      EVP_CIPHER_CTX_set_padding(ctx, 0) != 1 || EVP_EncryptUpdate(ctx, out, &n, in, 16) != 1 ||
      n != 16)
    Die("OpenSSL AES-128-ECB failed to encrypt one block");
  EVP_CIPHER_CTX_free(ctx);
}

}  // namespace

// ---------------------------------------------------------------------------
// The implementations, behind one interface
//
// A GhashImpl hashes AAD-only AES-128-GCM messages under its current key.  Hash writes
// 16 bytes to `out`: the GCM tag of the message (`len` bytes of AAD, no plaintext, a
// 12-byte nonce), or, where OmitsEncryptedJ0(), GHASH_H(data, zero-padded || length
// block) alone, which is the tag XOR E_K(J0).

class GhashImpl {
 public:
  virtual ~GhashImpl() = default;
  virtual void SetKey(const uint8_t key[kKeyLen]) = 0;
  virtual void Hash(const uint8_t *nonce, const uint8_t *data, size_t len, uint8_t *out) = 0;
  virtual bool OmitsEncryptedJ0() const { return false; }
};

namespace {

#ifdef AESGEN_HAVE_AEAD
// A GCM entry of the generated set's aesgen_aeads[], through its streaming calls.
class AesgenGhash final : public GhashImpl {
 public:
  explicit AesgenGhash(const aesgen_aead &aead)
      : aead_(aead), ctx_(AlignedBuffer(aead.ctx_size)) {}
  ~AesgenGhash() override {
    aead_.wipe(ctx_);
    std::free(ctx_);
  }
  void SetKey(const uint8_t key[kKeyLen]) override {
    if (aead_.init(ctx_, key, kKeyLen) != 0)
      Die(std::string(aead_.name) + ": init refused a 128-bit key");
  }
  void Hash(const uint8_t *nonce, const uint8_t *data, size_t len, uint8_t *out) override {
    if (aead_.start(ctx_, nonce, kNonceLen) != 0 || aead_.aad(ctx_, data, len) != 0 ||
        aead_.finish_seal(ctx_, out, kTagLen) != 0)
      Die(std::string(aead_.name) + ": start, aad or finish_seal of a " +
          std::to_string(len) + "-byte AAD returned -1");
  }

 private:
  const aesgen_aead &aead_;
  uint8_t *ctx_;
};
#endif  // AESGEN_HAVE_AEAD

// OpenSSL EVP: cipher chosen and key set once; each message passes only its nonce, as
// openssl-gcm does, then the data as AAD.
class OpensslGhash final : public GhashImpl {
 public:
  explicit OpensslGhash(std::string name) : name_(std::move(name)), ctx_(EVP_CIPHER_CTX_new()) {
    if (ctx_ == nullptr ||
        EVP_EncryptInit_ex(ctx_, EVP_aes_128_gcm(), nullptr, nullptr, nullptr) != 1)
      Die(name_ + ": EVP_EncryptInit_ex failed to set up AES-128-GCM");
  }
  ~OpensslGhash() override { EVP_CIPHER_CTX_free(ctx_); }

  void SetKey(const uint8_t key[kKeyLen]) override {
    if (EVP_EncryptInit_ex(ctx_, nullptr, nullptr, key, nullptr) != 1)
      Die(name_ + ": EVP_EncryptInit_ex (key) failed");
  }
  void Hash(const uint8_t *nonce, const uint8_t *data, size_t len, uint8_t *out) override {
    int n = 0;
    uint8_t none[16];  // EVP_EncryptFinal_ex writes nothing for GCM; room all the same
    if (EVP_EncryptInit_ex(ctx_, nullptr, nullptr, nullptr, nonce) != 1 ||
        EVP_EncryptUpdate(ctx_, nullptr, &n, data, static_cast<int>(len)) != 1 ||
        EVP_EncryptFinal_ex(ctx_, none, &n) != 1 || n != 0 ||
        EVP_CIPHER_CTX_ctrl(ctx_, EVP_CTRL_AEAD_GET_TAG, kTagLen, out) != 1)
      Die(name_ + ": the tag of a " + std::to_string(len) + "-byte AAD failed");
  }

 private:
  std::string name_;
  EVP_CIPHER_CTX *ctx_;
};

// ---------------------------------------------------------------------------
// GHASH in C
//
// A block holds a polynomial over GF(2) in GCM's bit order (SP 800-38D, 6.3): the
// coefficient of x^0 is the most significant bit of byte 0, that of x^127 the least
// significant bit of byte 15.  Block128 is the block read as two big-endian words, so the
// coefficient of x^i is bit 63 - i of `hi` (i < 64) or bit 127 - i of `lo`, and
// multiplying by x is a right shift.

struct Block128 {
  uint64_t hi, lo;
};

uint64_t LoadBe64(const uint8_t *p) {
  uint64_t v;
  std::memcpy(&v, p, 8);
  return __builtin_bswap64(v);
}

void StoreBe64(uint8_t *p, uint64_t v) {
  v = __builtin_bswap64(v);
  std::memcpy(p, &v, 8);
}

// GHASH_H of an AAD-only message (SP 800-38D, 6.4, with the input of 7.1 step 5): Y = 0,
// then Y = (Y ^ X) * H for each block X of the data (the last one zero-padded) and for
// the length block [8 len]_64 || [0]_64.  mul(Y) returns Y * H.
template <typename MulByH>
void GhashAadOnly(const MulByH &mul, const uint8_t *data, size_t len, uint8_t out[16]) {
  Block128 y{0, 0};
  size_t done = 0;
  for (; done + 16 <= len; done += 16)
    y = mul(Block128{y.hi ^ LoadBe64(data + done), y.lo ^ LoadBe64(data + done + 8)});
  if (done < len) {
    uint8_t last[16] = {};
    std::memcpy(last, data + done, len - done);
    y = mul(Block128{y.hi ^ LoadBe64(last), y.lo ^ LoadBe64(last + 8)});
  }
  y = mul(Block128{y.hi ^ (uint64_t{len} * 8), y.lo});
  StoreBe64(out, y.hi);
  StoreBe64(out + 8, y.lo);
}

// H from the key, as GCM derives it: E_K(0^128).
Block128 HashKey(const uint8_t key[kKeyLen]) {
  const uint8_t zero[16] = {};
  uint8_t h[16];
  EncryptBlock(key, zero, h);
  return Block128{LoadBe64(h), LoadBe64(h + 8)};
}

// An all-ones word where `bit` (0 or 1) is 1, else zero: a select without a branch.
uint64_t MaskOf(uint64_t bit) { return uint64_t{0} - bit; }

// Käsper and Schwabe's constant-time GHASH (CHES 2009, section 5): at key set-up the 128
// multiples T[i] = H * x^i; then Y * H = XOR over i of (T[i] AND all-ones-if-coefficient-i-
// of-Y), so every block reads the whole table in the same order whatever Y is.  The table
// is 2 KiB; the cost, 128 masked selects of two words a block, does not depend on the data.
class OneBitTableGhash final : public GhashImpl {
 public:
  void SetKey(const uint8_t key[kKeyLen]) override {
    Block128 t = HashKey(key);
    for (Block128 &entry : table_) {
      entry = t;
      // t * x: shift towards x^127; a coefficient shifted out at x^128 comes back as
      // x^7 + x^2 + x + 1, 0xe1 in the top byte
      const uint64_t wraps = MaskOf(t.lo & 1);
      t.lo = (t.lo >> 1) | (t.hi << 63);
      t.hi = (t.hi >> 1) ^ (0xe100000000000000 & wraps);
    }
  }
  void Hash(const uint8_t *, const uint8_t *data, size_t len, uint8_t *out) override {
    GhashAadOnly([this](Block128 y) { return MulByH(y); }, data, len, out);
  }
  bool OmitsEncryptedJ0() const override { return true; }

 private:
  Block128 MulByH(Block128 y) const {
    Block128 z{0, 0};
    for (int i = 0; i < 64; i++) {
      const uint64_t m = MaskOf((y.hi >> (63 - i)) & 1);  // coefficient of x^i
      z.hi ^= table_[i].hi & m;
      z.lo ^= table_[i].lo & m;
    }
    for (int i = 0; i < 64; i++) {
      const uint64_t m = MaskOf((y.lo >> (63 - i)) & 1);  // coefficient of x^(64 + i)
      z.hi ^= table_[64 + i].hi & m;
      z.lo ^= table_[64 + i].lo & m;
    }
    return z;
  }

  Block128 table_[128];
};

// The 64 bits of a word in the opposite order.
uint64_t Reverse64(uint64_t v) {
  v = __builtin_bswap64(v);
  v = ((v >> 4) & 0x0f0f0f0f0f0f0f0f) | ((v & 0x0f0f0f0f0f0f0f0f) << 4);
  v = ((v >> 2) & 0x3333333333333333) | ((v & 0x3333333333333333) << 2);
  return ((v >> 1) & 0x5555555555555555) | ((v & 0x5555555555555555) << 1);
}

// A multiplier split into its bits at positions 0, 1, 2 and 3 mod 4 (hole masks).
constexpr uint64_t kHoles = 0x1111111111111111;

struct HoleSplit {
  uint64_t part[4];
};

HoleSplit SplitHoles(uint64_t v) {
  return HoleSplit{{v & kHoles, v & (kHoles << 1), v & (kHoles << 2), v & (kHoles << 3)}};
}

// The low 64 bits of the carry-less product of x and y (bit i the coefficient of x^i),
// from 16 integer products.  x_a * y_b, x_a and y_b the bits at positions a and b mod 4,
// has at each position p = a + b mod 4 the count of the products of bit pairs that meet
// there, at most 15 below bit 60 (at most 16 in bits 60..63, whose carry leaves the word):
// the counts sit in 4-bit fields that do not overlap, so bit p of the integer product is
// that count mod 2, the coefficient of x^p.  XORing the four products whose bits meet at
// the positions c mod 4 and keeping those positions gives them all.
uint64_t ClmulLow(uint64_t x, const HoleSplit &y) {
  const HoleSplit s = SplitHoles(x);
  const uint64_t x0 = s.part[0], x1 = s.part[1], x2 = s.part[2], x3 = s.part[3];
  const uint64_t y0 = y.part[0], y1 = y.part[1], y2 = y.part[2], y3 = y.part[3];
  const uint64_t z0 = (x0 * y0) ^ (x1 * y3) ^ (x2 * y2) ^ (x3 * y1);
  const uint64_t z1 = (x0 * y1) ^ (x1 * y0) ^ (x2 * y3) ^ (x3 * y2);
  const uint64_t z2 = (x0 * y2) ^ (x1 * y1) ^ (x2 * y0) ^ (x3 * y3);
  const uint64_t z3 = (x0 * y3) ^ (x1 * y2) ^ (x2 * y1) ^ (x3 * y0);
  return (z0 & kHoles) | (z1 & (kHoles << 1)) | (z2 & (kHoles << 2)) | (z3 & (kHoles << 3));
}

// One 64-bit factor in both bit orders: `natural` (coefficient of x^i at bit i) and
// `reflected` (GCM's, at bit 63 - i), each split for ClmulLow.
struct Factor {
  HoleSplit natural, reflected;
};

Factor MakeFactor(uint64_t reflected) {
  return Factor{SplitHoles(Reverse64(reflected)), SplitHoles(reflected)};
}

// The 127-bit carry-less product of a and b, both in GCM's (reflected) bit order, as two
// reflected words: `first` with the coefficients of x^0..x^63, `second` x^64..x^126.
// The low half is ClmulLow of the natural words, reversed.  The high half is the low half
// of the product of the reversed operands, reversed and shifted right by one (rev(lo(rev a
// * rev b)) >> 1); the operands reversed are the reflected words, and that half wanted
// reflected is rev(rev(m) >> 1) = m << 1: the reflected words make it a shift.
struct Product128 {
  uint64_t first, second;
};

Product128 Clmul64(uint64_t a_reflected, uint64_t a_natural, const Factor &b) {
  return Product128{Reverse64(ClmulLow(a_natural, b.natural)),
                    ClmulLow(a_reflected, b.reflected) << 1};
}

// GHASH from integer multiplies with holes: a 128x128-bit carry-less product by Karatsuba
// (three 64x64 products of 32 integer multiplies each), reduced modulo
// x^128 + x^7 + x^2 + x + 1, all in GCM's bit order.  No branch and no table: constant
// time where integer multiplication is (it is on every x86-64).  The factors from H are
// split once, at key set-up.
class HolesGhash final : public GhashImpl {
 public:
  void SetKey(const uint8_t key[kKeyLen]) override {
    const Block128 h = HashKey(key);
    h_low_ = MakeFactor(h.hi);  // the reflected word of x^0..x^63 is `hi`
    h_high_ = MakeFactor(h.lo);
    h_sum_ = MakeFactor(h.hi ^ h.lo);
  }
  void Hash(const uint8_t *, const uint8_t *data, size_t len, uint8_t *out) override {
    GhashAadOnly([this](Block128 y) { return MulByH(y); }, data, len, out);
  }
  bool OmitsEncryptedJ0() const override { return true; }

 private:
  Block128 MulByH(Block128 y) const {
    // y = y0 + y1 x^64 (y0 in y.hi, y1 in y.lo, reflected); Karatsuba: y0 h0, y1 h1 and
    // (y0 + y1)(h0 + h1) give the middle term y0 h1 + y1 h0 as their sum
    const uint64_t n0 = Reverse64(y.hi), n1 = Reverse64(y.lo);
    const Product128 p0 = Clmul64(y.hi, n0, h_low_);
    const Product128 p1 = Clmul64(y.lo, n1, h_high_);
    const Product128 pm = Clmul64(y.hi ^ y.lo, n0 ^ n1, h_sum_);
    const uint64_t mid_first = pm.first ^ p0.first ^ p1.first;
    const uint64_t mid_second = pm.second ^ p0.second ^ p1.second;
    // the 255-bit product, reflected: x^0..x^127 in (r0, r1), x^128..x^254 in (r2, r3)
    const uint64_t r0 = p0.first, r1 = p0.second ^ mid_first;
    const uint64_t r2 = p1.first ^ mid_second, r3 = p1.second;
    // x^128 = x^7 + x^2 + x + 1: add (r2, r3) times each of x^0, x^1, x^2, x^7 (right
    // shifts by 0, 1, 2, 7).  What the shifts push past x^127 (the low bits of r3, now
    // coefficients of x^128..x^134) is folded once more the same way; its product reaches
    // x^13 at most and stays in the first word.
    Block128 z;
    z.hi = r0 ^ r2 ^ (r2 >> 1) ^ (r2 >> 2) ^ (r2 >> 7);
    z.lo = r1 ^ r3 ^ ((r3 >> 1) | (r2 << 63)) ^ ((r3 >> 2) | (r2 << 62)) ^
           ((r3 >> 7) | (r2 << 57));
    const uint64_t over = (r3 << 63) ^ (r3 << 62) ^ (r3 << 57);
    z.hi ^= over ^ (over >> 1) ^ (over >> 2) ^ (over >> 7);
    return z;
  }

  Factor h_low_{}, h_high_{}, h_sum_{};
};

// ---------------------------------------------------------------------------
// Which implementations this process runs

struct GhashFactory {
  std::string name;
  std::function<std::shared_ptr<GhashImpl>()> make;
};

void AddAesgenGhash(std::vector<GhashFactory> &factories) {
#ifdef AESGEN_HAVE_AEAD
  if (!(aesgen_key_bits_supported & 1u)) {  // bit 0: 128-bit keys
    if (aesgen_aead_count != 0) Skip("aesgen GCM kernels", "this set has no AES-128");
    return;
  }
  for (size_t i : RunnableGcmAeads()) {
    const aesgen_aead &a = aesgen_aeads[i];
    factories.push_back({a.name, [&a]() -> std::shared_ptr<GhashImpl> {
                           return std::make_shared<AesgenGhash>(a);
                         }});
  }
#else
  (void)factories;  // this set's aesgen.h declares no AEAD kernels
#endif
}

// The child run's GHASH must be OpenSSL's table GHASH: PCLMULQDQ masked, not only AES-NI.
void CheckOpensslPclmulqdqMasked() {
  uint64_t word0 = 0;
  if (!OpensslIa32capWord0(&word0))
    Die("OPENSSL_ia32cap is set but OpenSSL does not report its capability vector");
  if (word0 & (uint64_t{1} << kIa32capPclmulqdqBit))
    Die(std::string("OPENSSL_ia32cap=") + std::getenv("OPENSSL_ia32cap") +
        " does not mask PCLMULQDQ (bit 33 of the first word is still set: " +
        OPENSSL_info(OPENSSL_INFO_CPU_SETTINGS) +
        "); openssl-noaesni-ghash would not be OpenSSL's table GHASH; use e.g. "
        "OPENSSL_ia32cap=~0x200000200000000");
}

std::vector<GhashFactory> AvailableGhash() {
  std::vector<GhashFactory> factories;
  if (NoAesniMode()) {
    CheckOpensslPclmulqdqMasked();
    factories.push_back({"openssl-noaesni-ghash", []() -> std::shared_ptr<GhashImpl> {
                           return std::make_shared<OpensslGhash>("openssl-noaesni-ghash");
                         }});
    return factories;
  }
  AddAesgenGhash(factories);
  factories.push_back({"openssl-ghash", []() -> std::shared_ptr<GhashImpl> {
                         return std::make_shared<OpensslGhash>("openssl-ghash");
                       }});
  factories.push_back({"ct-1bit-ghash", []() -> std::shared_ptr<GhashImpl> {
                         return std::make_shared<OneBitTableGhash>();
                       }});
  factories.push_back({"ct-holes-ghash", []() -> std::shared_ptr<GhashImpl> {
                         return std::make_shared<HolesGhash>();
                       }});
  return factories;
}

// ---------------------------------------------------------------------------
// The timed loop

void BenchGhash(benchmark::State &state, GhashImpl &impl, size_t size) {
  const Buffers &buf = SharedBuffers();
  const Key key = BaseKey();
  impl.SetKey(key.bytes);
  Nonces nonces(0);
  alignas(16) uint8_t out[kTagLen];
  impl.Hash(nonces.Next(), buf.in, size, out);  // warm-up
  const uint64_t t0 = Ticks();
  for (auto _ : state) {
    impl.Hash(nonces.Next(), buf.in, size, out);
    benchmark::DoNotOptimize(out);  // a ct-* Hash inlined would otherwise compute nothing
  }
  const uint64_t ticks = Ticks() - t0;
  ReportPerByte(state, ticks, size);
}

// ---------------------------------------------------------------------------
// Correctness check before timing

// Hashes one message with `impl` and compares the result with OpenSSL's GCM tag of the
// same AAD-only message (XORing E_K(J0) into GHASH for the ct-*), and that nothing was
// written past the 16 bytes.
void CheckMessage(const std::string &what, GhashImpl &impl, const uint8_t *key,
                  const uint8_t *nonce, const uint8_t *data, size_t len) {
  uint8_t got[kTagLen + 16];
  std::memset(got, 0xe5, sizeof got);
  impl.Hash(nonce, data, len, got);
  uint8_t want[kTagLen];
  OpensslGhash ref("OpenSSL AES-128-GCM (reference)");
  ref.SetKey(key);
  ref.Hash(nonce, data, len, want);
  if (impl.OmitsEncryptedJ0()) {
    uint8_t j0[16] = {}, encrypted_j0[16];
    std::memcpy(j0, nonce, kNonceLen);
    j0[15] = 1;  // J0 = nonce || 0^31 || 1 (SP 800-38D, 7.1 step 2)
    EncryptBlock(key, j0, encrypted_j0);
    for (size_t i = 0; i < kTagLen; i++) got[i] ^= encrypted_j0[i];
  }
  const std::string message = what + ", " + std::to_string(len) + "-byte AAD-only message";
  if (std::memcmp(got, want, kTagLen) != 0)
    Die(message + ": tag differs from OpenSSL's; refusing to benchmark it");
  for (size_t i = kTagLen; i < sizeof got; i++)
    if (got[i] != 0xe5) Die(message + ": wrote past the tag; refusing to benchmark it");
}

void VerifyTarget(const GhashTarget &t, const std::vector<size_t> &sizes) {
  GhashImpl &impl = *t.impl;
  const uint8_t *data = SharedBuffers().in;
  const Key key = BaseKey();
  Key other = key;
  for (uint8_t &b : other.bytes) b ^= 0x5c;
  // another key first: the base key below must replace it completely
  Nonces nonces(7);
  impl.SetKey(other.bytes);
  CheckMessage(t.name + " (other key)", impl, other.bytes, nonces.Next(), data, 100);
  impl.SetKey(key.bytes);
  std::vector<size_t> lengths(std::begin(kVerifyLengths), std::end(kVerifyLengths));
  lengths.insert(lengths.end(), sizes.begin(), sizes.end());
  for (size_t len : lengths)
    CheckMessage(t.name, impl, key.bytes, nonces.Next(), data, len);
  CheckMessage(t.name + " (data at an odd address)", impl, key.bytes, nonces.Next(), data + 1,
               100);
}

}  // namespace

// ---------------------------------------------------------------------------
// The interface (ghash_bench.h)

std::vector<GhashTarget> RegisterGhash(const std::vector<size_t> &sizes,
                                       const std::set<int> &key_bits,
                                       std::vector<std::string> &names) {
  std::vector<GhashTarget> targets;
  if (!key_bits.empty() && !key_bits.count(128)) return targets;
  for (const GhashFactory &factory : AvailableGhash()) {
    std::shared_ptr<GhashImpl> impl = factory.make();
    targets.push_back({factory.name, impl});
    for (size_t size : sizes) {
      const std::string name = factory.name + "/ghash/128/" + std::to_string(size);
      benchmark::RegisterBenchmark(name.c_str(), [impl, size](benchmark::State &st) {
        BenchGhash(st, *impl, size);
      });
      names.push_back(name);
    }
  }
  return targets;
}

void VerifyGhash(const std::vector<GhashTarget> &targets, const std::vector<size_t> &sizes) {
  if (targets.empty()) return;
  CheckGcmReference();
  for (const GhashTarget &t : targets) VerifyTarget(t, sizes);
}

}  // namespace aesgen_bench
