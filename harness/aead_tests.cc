// aead_tests.cc: GoogleTest suites for the AEAD kernels of one generated aesgen
// set (aesgen_aeads[] in its aesgen.h), and the self-test of the ABI
// trampoline for calls of up to ten arguments (seal and open take ten).
//
// Linked into the same aesgen_tests binary as ctr_tests.cc; the shared helpers
// (environment, random material, fault catching, guard pages) are in
// harness_util.h.  Every AEAD in aesgen_aeads[] is one value of the
// parameterized suites below, named after the kernel ('-' and other
// non-alphanumerics become '_'): `--gtest_filter='Aeads/Aead.*aesni_gcm_r2*'`.
// A kernel that needs a CPU feature this machine lacks is skipped with the
// features named (a failure under AESGEN_TEST_EXPECT_ALL_KERNELS=1); a kernel
// of a mode other than GCM is skipped, naming the mode, until its suite exists.
//
// The AEAD suites are compiled only where the set's header says it has the
// AEAD contract (`#define AESGEN_HAVE_AEAD 1`, with `aesgen_aead`,
// `aesgen_aeads[]`, `aesgen_aead_count` and `aesgen_best_aead()`); against an
// older header this file contributes only the trampoline self-test.
//
// Oracle: OpenSSL EVP_aes_{128,192,256}_gcm, with EVP_CTRL_GCM_SET_IVLEN for
// nonces other than 12 bytes (OpenSSL 3 takes 1..128 bytes, so nonces here
// stay within that), checked first against typed-in vectors of the GCM
// specification (McGrew and Viega, test cases 2-18).  A short tag is the first
// tag_len bytes of the 16-byte one (SP 800-38D, 5.2.1.2).  For the inc32 wrap a
// small GF(2^128) implementation here computes J0 = GHASH(nonce, ...) and,
// solving the linear equation for the first nonce block, makes nonces whose
// J0 ends in chosen bytes 12..15 (0xffffffff, 0xfffffffe, ...); a self-test
// checks both against OpenSSL.
//
// Every kernel call (init, seal, open, start, aad, encrypt, decrypt,
// finish_seal, finish_open, wipe; and aesgen_best_aead) goes through the
// assembly trampoline of abi_check.h (aesgen_abi_call: ten arguments, six or
// eight in registers and the rest on the stack), which checks the
// callee-saved registers, the stack pointer, the flags, MXCSR, x87 state or
// FPCR, and canaries in its frame.  The context is 64-byte aligned and framed
// by canaries checked after every call.  Key, nonce, AAD, input, output and
// tag live in buffers with a PROT_NONE page on each side, placed so that they
// end at (or start at) a guard page; bytes around the output and the tag are
// checked for stray writes.  A fault inside a call fails the test, naming the
// buffer and the distance past its end.

#include <gtest/gtest.h>
#include <openssl/evp.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <climits>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <initializer_list>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "abi_check.h"
#include "aesgen.h"
#include "harness_util.h"

namespace {

using namespace aesgen_harness;  // NOLINT: the shared helpers, as if defined here

// ---------------------------------------------------------------------------
// The ten-argument trampoline (no kernel involved: runs against every header)

#if defined(__aarch64__)
constexpr size_t kRegisterArgs = 8;  // x0-x7
#else
constexpr size_t kRegisterArgs = 6;  // rdi, rsi, rdx, rcx, r8, r9
#endif

uint64_t g_recorded[AESGEN_ABI_MAX_ARGS];

// Compiled C++: the compiler's own reading of the convention says where each
// argument is.
uint64_t RecordTen(uint64_t a0, uint64_t a1, uint64_t a2, uint64_t a3, uint64_t a4, uint64_t a5,
                   uint64_t a6, uint64_t a7, uint64_t a8, uint64_t a9) {
  const uint64_t a[] = {a0, a1, a2, a3, a4, a5, a6, a7, a8, a9};
  std::memcpy(g_recorded, a, sizeof a);
  return a0 ^ a9 ^ 0x5eedull;
}

std::array<uint64_t, AESGEN_ABI_MAX_ARGS> DistinctArgs(uint64_t salt) {
  std::array<uint64_t, AESGEN_ABI_MAX_ARGS> a{};
  uint64_t x = 0x9e3779b97f4a7c15ull ^ salt;
  for (auto &v : a) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    v = x;
  }
  return a;
}

uint64_t Rol(uint64_t x, unsigned r) { return r % 64 ? (x << (r % 64)) | (x >> (64 - r % 64)) : x; }

TEST(AbiTrampoline10, PassesUpToTenArguments) {
  for (size_t nargs = 0; nargs <= AESGEN_ABI_MAX_ARGS; nargs++) {
    auto a = DistinctArgs(nargs);
    std::memset(g_recorded, 0, sizeof g_recorded);
    uint64_t ret = 0;
    uint64_t mask = aesgen_abi_call(reinterpret_cast<const void *>(&RecordTen), a.data(), nargs, &ret);
    EXPECT_EQ(mask, 0u) << "nargs " << nargs << ": " << aesgen_abi_describe(mask);
    for (size_t i = 0; i < nargs; i++) {
      EXPECT_EQ(g_recorded[i], a[i]) << "argument " << i << " of " << nargs << " ("
                                     << (i < kRegisterArgs ? "register" : "stack") << ")";
    }
    if (nargs == AESGEN_ABI_MAX_ARGS) {
      EXPECT_EQ(ret, a[0] ^ a[9] ^ 0x5eedull);
    }
  }
  // More than ten is taken as ten.
  uint64_t a11[AESGEN_ABI_MAX_ARGS + 1];
  auto a = DistinctArgs(99);
  std::copy(a.begin(), a.end(), a11);
  a11[AESGEN_ABI_MAX_ARGS] = 1;
  EXPECT_EQ(aesgen_abi_call(reinterpret_cast<const void *>(&RecordTen), a11, 11, nullptr), 0u);
  EXPECT_EQ(0, std::memcmp(g_recorded, a.data(), sizeof g_recorded));
  // aesgen_abi_call4 is the same trampoline with four arguments.
  uint64_t ret = 0;
  EXPECT_EQ(aesgen_abi_call4(reinterpret_cast<const void *>(&RecordTen), a[0], a[1], a[2], a[3],
                             &ret),
            0u);
  EXPECT_EQ(0, std::memcmp(g_recorded, a.data(), 4 * sizeof(uint64_t)));
}

// The assembly reader of all ten arguments, which also clobbers every
// caller-saved register it may: no complaint, the right sum.
TEST(AbiTrampoline10, AcceptsLegalClobbersAndStackArgumentWrites) {
  auto a = DistinctArgs(7);
  uint64_t want = 0;
  for (unsigned i = 0; i < AESGEN_ABI_MAX_ARGS; i++) want ^= Rol(a[i], 6 * i);
  uint64_t ret = 0;
  uint64_t mask =
      aesgen_abi_call(reinterpret_cast<const void *>(&aesgen_abi_good_args10), a.data(), 10, &ret);
  EXPECT_EQ(mask, 0u) << aesgen_abi_describe(mask);
  EXPECT_EQ(ret, want);
  // The stack arguments are the callee's to overwrite; the next call gets its
  // own again.
  mask = aesgen_abi_call(reinterpret_cast<const void *>(&aesgen_abi_good_args10_write), a.data(),
                         10, &ret);
  EXPECT_EQ(mask, 0u) << aesgen_abi_describe(mask);
  mask = aesgen_abi_call(reinterpret_cast<const void *>(&RecordTen), a.data(), 10, nullptr);
  EXPECT_EQ(mask, 0u);
  EXPECT_EQ(0, std::memcmp(g_recorded, a.data(), sizeof g_recorded));
}

// Each deliberately broken function is caught through aesgen_abi_call with
// any number of arguments, and the trampoline still returns safely.
TEST(AbiTrampoline10, DetectsEachViolation) {
  const auto &bad = AbiViolations();
  auto args = DistinctArgs(3);
  for (size_t nargs : {size_t{0}, size_t{4}, kRegisterArgs, kRegisterArgs + 1, size_t{10}}) {
    for (const auto &b : bad) {
      const void *fn = reinterpret_cast<const void *>(b.fn);
      // aesgen_abi_bad_frame writes the word just above its return address
      // (x86-64) or at its incoming sp + 8 (AArch64): with stack arguments
      // that word is one of them, and the callee may write those; the word
      // just above them is checked with aesgen_abi_args10_bad_frame below.
      if (b.bit == AESGEN_ABI_FRAME && nargs > kRegisterArgs) continue;
      uint64_t mask = aesgen_abi_call(fn, args.data(), nargs, nullptr);
      EXPECT_EQ(mask, b.bit) << "nargs " << nargs << ": expected "
                             << aesgen_abi_bit_name(static_cast<unsigned>(b.bit)) << ", got "
                             << aesgen_abi_describe(mask);
    }
  }
  uint64_t mask = aesgen_abi_call(reinterpret_cast<const void *>(&aesgen_abi_args10_bad_frame),
                                  args.data(), 10, nullptr);
  EXPECT_EQ(mask, static_cast<uint64_t>(AESGEN_ABI_FRAME))
      << "a write just above the stack arguments: got " << aesgen_abi_describe(mask);
  mask = aesgen_abi_call(reinterpret_cast<const void *>(&aesgen_abi_bad_frame), args.data(), 10,
                         nullptr);
  EXPECT_EQ(mask, 0u) << "a write to a stack argument is allowed: got "
                      << aesgen_abi_describe(mask);
  // And the state the bad functions broke has been put back for us.
  auto a = DistinctArgs(5);
  mask = aesgen_abi_call(reinterpret_cast<const void *>(&RecordTen), a.data(), 10, nullptr);
  EXPECT_EQ(mask, 0u) << aesgen_abi_describe(mask);
  EXPECT_EQ(0, std::memcmp(g_recorded, a.data(), sizeof g_recorded));
}

// Writes the byte at p[a9] (the tenth argument, from the stack).
uint64_t WriteByteAt(uint64_t p, uint64_t, uint64_t, uint64_t, uint64_t, uint64_t, uint64_t,
                     uint64_t, uint64_t, uint64_t a9) {
  *reinterpret_cast<volatile uint8_t *>(p + a9) = 1;
  return 0;
}

// A fault inside a ten-argument call is caught, like one inside call4.
TEST(AbiTrampoline10, FaultInsideCallIsCaught) {
  GuardedBuffer g(16, "trampoline self-test");
  uint64_t args[10] = {reinterpret_cast<uintptr_t>(g.EndingAtGuard(1))};
  args[9] = 1;  // one byte past the end
  uint64_t mask = 0, ret = 0;
  EXPECT_FALSE(
      CallCatchingFaultsN(reinterpret_cast<const void *>(&WriteByteAt), args, 10, &mask, &ret));
  EXPECT_NE(DescribeFault().find("1 byte(s) past the end of the trampoline self-test buffer"),
            std::string::npos)
      << DescribeFault();
  args[9] = 0;  // the last byte
  EXPECT_TRUE(
      CallCatchingFaultsN(reinterpret_cast<const void *>(&WriteByteAt), args, 10, &mask, &ret));
  EXPECT_EQ(mask, 0u);
}

}  // namespace

#ifdef AESGEN_HAVE_AEAD

namespace {

using Bytes = std::vector<uint8_t>;
using Block16 = std::array<uint8_t, 16>;

// GCM limits (SP 800-38D): message up to 2^36 - 32 bytes, AAD up to 2^61 - 1.
constexpr uint64_t kGcmMaxLen = (uint64_t{1} << 36) - 32;
constexpr uint64_t kGcmMaxAad = (uint64_t{1} << 61) - 1;
// OpenSSL 3 takes GCM nonces of 1..128 bytes.
constexpr size_t kMaxNonce = 128;

// ---------------------------------------------------------------------------
// Bytes

Bytes RandomBytes(std::mt19937_64 &rng, size_t n) {
  Bytes b(n);
  for (size_t i = 0; i < n; i += 8) {
    uint64_t x = rng();
    std::memcpy(b.data() + i, &x, std::min<size_t>(8, n - i));
  }
  return b;
}

// n bytes of the shared random pool (cheaper than RandomBytes for long inputs).
Bytes PoolBytes(std::mt19937_64 &rng, size_t n) {
  const auto &pool = Pool();
  if (n > pool.size()) return RandomBytes(rng, n);
  size_t off = Uniform(rng, 0, pool.size() - n);
  return Bytes(pool.begin() + static_cast<std::ptrdiff_t>(off),
               pool.begin() + static_cast<std::ptrdiff_t>(off + n));
}

std::string HexShort(const uint8_t *p, size_t n, size_t max = 40) {
  if (n <= max) return Hex(p, n);
  return Hex(p, max) + "...";
}
std::string HexShort(const Bytes &b, size_t max = 40) { return HexShort(b.data(), b.size(), max); }

size_t FirstDiff(const uint8_t *a, const uint8_t *b, size_t n) {
  for (size_t i = 0; i < n; i++)
    if (a[i] != b[i]) return i;
  return n;
}

size_t CountDiff(const uint8_t *a, const uint8_t *b, size_t n) {
  size_t c = 0;
  for (size_t i = 0; i < n; i++) c += a[i] != b[i];
  return c;
}

// The 16-byte block of a stream that holds byte `at`, as hex (for messages).
std::string BlockAt(const uint8_t *p, size_t n, size_t at) {
  size_t b0 = at / 16 * 16;
  return Hex(p + b0, std::min<size_t>(16, n - b0));
}

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

// A nonce of nonce_len >= 16 bytes whose J0 is `target`.  GHASH is linear in
// the nonce blocks: with m blocks hashed (the padded nonce and the length
// block), the first block B1 enters as B1 * H^m, so adding
// (J0 ^ target) * H^-m to B1 moves J0 to target.
Bytes NonceWithJ0(Gf h, const Block16 &target, size_t nonce_len, std::mt19937_64 &rng) {
  Bytes nonce = RandomBytes(rng, nonce_len);
  Block16 j = GcmJ0(h, nonce);
  size_t m = (nonce_len + 15) / 16 + 1;
  Gf hm = GfOne();
  for (size_t i = 0; i < m; i++) hm = GfMul(hm, h);
  Gf delta = GfMul(GfXor(GfLoad(j.data()), GfLoad(target.data())), GfInverse(hm));
  Block16 b1 = GfStore(GfXor(GfLoad(nonce.data()), delta));
  std::memcpy(nonce.data(), b1.data(), 16);
  return nonce;
}

// inc32 applied n times: the low 32 bits (bytes 12..15, big-endian) + n mod 2^32.
Block16 Inc32(Block16 b, uint32_t n) {
  uint32_t c = (uint32_t{b[12]} << 24) | (uint32_t{b[13]} << 16) | (uint32_t{b[14]} << 8) | b[15];
  c += n;
  b[12] = static_cast<uint8_t>(c >> 24);
  b[13] = static_cast<uint8_t>(c >> 16);
  b[14] = static_cast<uint8_t>(c >> 8);
  b[15] = static_cast<uint8_t>(c);
  return b;
}

uint32_t Low32(const Block16 &b) {
  return (uint32_t{b[12]} << 24) | (uint32_t{b[13]} << 16) | (uint32_t{b[14]} << 8) | b[15];
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

// One message: inputs, and OpenSSL's ciphertext and full tag.
struct Msg {
  Bytes key, nonce, aad, pt;
  size_t tag_len = 16;
  Bytes ct;
  Block16 tag{};

  void Seal() {
    ct.assign(pt.size(), 0);
    OracleSeal(key, nonce, aad.data(), aad.size(), pt.data(), pt.size(), ct.data(), tag.data());
  }
  std::string Describe() const {
    std::ostringstream os;
    os << "AES-" << key.size() * 8 << " key " << Hex(key.data(), key.size()) << ", nonce ("
       << nonce.size() << " bytes) " << HexShort(nonce) << ", aad " << aad.size()
       << " bytes, message " << pt.size() << " bytes, tag_len " << tag_len;
    return os.str();
  }
};

// ---------------------------------------------------------------------------
// GCM specification vectors (McGrew and Viega, "The Galois/Counter Mode of
// Operation", appendix B), typed in.

struct GcmVector {
  const char *name, *key, *nonce, *aad, *pt, *ct, *tag;
};

#define AESGEN_P64                                                                     \
  "d9313225f88406e5a55909c5aff5269a86a7a9531534f7da2e4c303d8a318a72"                \
  "1c3c0c95956809532fcf0e2449a6b525b16aedf5aa0de657ba637b391aafd255"
#define AESGEN_P60                                                                     \
  "d9313225f88406e5a55909c5aff5269a86a7a9531534f7da2e4c303d8a318a72"                \
  "1c3c0c95956809532fcf0e2449a6b525b16aedf5aa0de657ba637b39"
#define AESGEN_A20 "feedfacedeadbeeffeedfacedeadbeefabaddad2"
#define AESGEN_IV60                                                                    \
  "9313225df88406e555909c5aff5269aa6a7a9538534f7da1e4c303d2a318a728"                \
  "c3c0c95156809539fcf0e2429a6b525416aedbf5a0de6a57a637b39b"
#define AESGEN_K128 "feffe9928665731c6d6a8f9467308308"
#define AESGEN_K192 "feffe9928665731c6d6a8f9467308308feffe9928665731c"
#define AESGEN_K256 "feffe9928665731c6d6a8f9467308308feffe9928665731c6d6a8f9467308308"

const GcmVector kGcmVectors[] = {
    {"test case 1 (AES-128, empty)", "00000000000000000000000000000000",
     "000000000000000000000000", "", "", "", "58e2fccefa7e3061367f1d57a4e7455a"},
    {"test case 2 (AES-128, one block)", "00000000000000000000000000000000",
     "000000000000000000000000", "", "00000000000000000000000000000000",
     "0388dace60b6a392f328c2b971b2fe78", "ab6e47d42cec13bdf53a67b21257bddf"},
    {"test case 3 (AES-128, 64 bytes)", AESGEN_K128, "cafebabefacedbaddecaf888", "", AESGEN_P64,
     "42831ec2217774244b7221b784d0d49ce3aa212f2c02a4e035c17e2329aca12e"
     "21d514b25466931c7d8f6a5aac84aa051ba30b396a0aac973d58e091473f5985",
     "4d5c2af327cd64a62cf35abd2ba6fab4"},
    {"test case 4 (AES-128, AAD, 60 bytes)", AESGEN_K128, "cafebabefacedbaddecaf888", AESGEN_A20,
     AESGEN_P60,
     "42831ec2217774244b7221b784d0d49ce3aa212f2c02a4e035c17e2329aca12e"
     "21d514b25466931c7d8f6a5aac84aa051ba30b396a0aac973d58e091",
     "5bc94fbc3221a5db94fae95ae7121a47"},
    {"test case 5 (AES-128, 8-byte nonce)", AESGEN_K128, "cafebabefacedbad", AESGEN_A20, AESGEN_P60,
     "61353b4c2806934a777ff51fa22a4755699b2a714fcdc6f83766e5f97b6c7423"
     "73806900e49f24b22b097544d4896b424989b5e1ebac0f07c23f4598",
     "3612d2e79e3b0785561be14aaca2fccb"},
    {"test case 6 (AES-128, 60-byte nonce)", AESGEN_K128, AESGEN_IV60, AESGEN_A20, AESGEN_P60,
     "8ce24998625615b603a033aca13fb894be9112a5c3a211a8ba262a3cca7e2ca7"
     "01e4a9a4fba43c90ccdcb281d48c7c6fd62875d2aca417034c34aee5",
     "619cc5aefffe0bfa462af43c1699d050"},
    {"test case 7 (AES-192, empty)", "000000000000000000000000000000000000000000000000",
     "000000000000000000000000", "", "", "", "cd33b28ac773f74ba00ed1f312572435"},
    {"test case 10 (AES-192, AAD, 60 bytes)", AESGEN_K192, "cafebabefacedbaddecaf888", AESGEN_A20,
     AESGEN_P60,
     "3980ca0b3c00e841eb06fac4872a2757859e1ceaa6efd984628593b40ca1e19c"
     "7d773d00c144c525ac619d18c84a3f4718e2448b2fe324d9ccda2710",
     "2519498e80f1478f37ba55bd6d27618c"},
    {"test case 12 (AES-192, 60-byte nonce)", AESGEN_K192, AESGEN_IV60, AESGEN_A20, AESGEN_P60,
     "d27e88681ce3243c4830165a8fdcf9ff1de9a1d8e6b447ef6ef7b79828666e45"
     "81e79012af34ddd9e2f037589b292db3e67c036745fa22e7e9b7373b",
     "dcf566ff291c25bbb8568fc3d376a6d9"},
    {"test case 13 (AES-256, empty)",
     "0000000000000000000000000000000000000000000000000000000000000000",
     "000000000000000000000000", "", "", "", "530f8afbc74536b9a963b4f1c4cb738b"},
    {"test case 16 (AES-256, AAD, 60 bytes)", AESGEN_K256, "cafebabefacedbaddecaf888", AESGEN_A20,
     AESGEN_P60,
     "522dc1f099567d07f47f37a32a84427d643a8cdcbfe5c0c97598a2bd2555d1aa"
     "8cb08e48590dbb3da7b08b1056828838c5f61e6393ba7a0abcc9f662",
     "76fc6ece0f4e1768cddf8853bb2d551b"},
    {"test case 18 (AES-256, 60-byte nonce)", AESGEN_K256, AESGEN_IV60, AESGEN_A20, AESGEN_P60,
     "5a8def2f0c9e53f1f75d7853659e2a20eeb2b22aafde6419a058ab4f6f746bf4"
     "0fc0c3b780f244452da3ebf1c5d82cdea2418997200ef82e44ae7e3f",
     "a44a8266ee1c8eb0c8b5d4cf5ae9f19a"},
};

Msg VectorMsg(const GcmVector &v) {
  Msg m;
  m.key = FromHex(v.key);
  m.nonce = FromHex(v.nonce);
  m.aad = FromHex(v.aad);
  m.pt = FromHex(v.pt);
  m.ct = FromHex(v.ct);
  Bytes t = FromHex(v.tag);
  std::copy(t.begin(), t.end(), m.tag.begin());
  m.tag_len = 16;
  return m;
}

// ---------------------------------------------------------------------------
// Oracle self-tests (no kernel involved)

TEST(AeadHarnessSelfTest, OracleMatchesGcmSpecVectors) {
  for (const GcmVector &v : kGcmVectors) {
    Msg m = VectorMsg(v);
    Bytes ct(m.pt.size());
    uint8_t tag[16];
    OracleSeal(m.key, m.nonce, m.aad.data(), m.aad.size(), m.pt.data(), m.pt.size(), ct.data(), tag);
    EXPECT_EQ(Hex(ct.data(), ct.size()), Hex(m.ct.data(), m.ct.size())) << v.name;
    EXPECT_EQ(Hex(tag, 16), Hex(m.tag.data(), 16)) << v.name;
  }
}

TEST(AeadHarnessSelfTest, GfInverse) {
  auto rng = TestRng(0x4001);
  for (int i = 0; i < 8; i++) {
    Bytes b = RandomBytes(rng, 16);
    Gf a = GfLoad(b.data());
    EXPECT_TRUE(GfEq(GfMul(a, GfInverse(a)), GfOne())) << Hex(b.data(), 16);
  }
  EXPECT_TRUE(GfEq(GfMul(GfOne(), GfOne()), GfOne()));
}

// This file's J0 agrees with OpenSSL's for nonces of every kind: with no AAD
// and no message the tag is E(K, J0), and the keystream starts at E(K, inc32(J0)).
TEST(AeadHarnessSelfTest, J0MatchesOpenSsl) {
  auto rng = TestRng(0x4002);
  for (size_t key_len : {16, 24, 32}) {
    for (size_t nlen : {1, 8, 11, 12, 13, 16, 17, 31, 32, 60, 100, 128}) {
      Bytes key = RandomBytes(rng, key_len), nonce = RandomBytes(rng, nlen);
      Gf h = HashKey(key);
      Block16 j0 = GcmJ0(h, nonce);
      uint8_t tag[16];
      OracleSeal(key, nonce, nullptr, 0, nullptr, 0, nullptr, tag);
      EXPECT_EQ(Hex(tag, 16), Hex(AesBlock(key, j0).data(), 16)) << "nonce of " << nlen << " bytes";
      Bytes zero(32, 0), ks(32);
      OracleSeal(key, nonce, nullptr, 0, zero.data(), 32, ks.data(), tag);
      EXPECT_EQ(Hex(ks.data(), 16), Hex(AesBlock(key, Inc32(j0, 1)).data(), 16)) << nlen;
      EXPECT_EQ(Hex(ks.data() + 16, 16), Hex(AesBlock(key, Inc32(j0, 2)).data(), 16)) << nlen;
    }
  }
}

// NonceWithJ0 hits its target, and OpenSSL's counter wraps the low 32 bits
// without a carry into byte 11 (inc32): the reference for the wrap tests.
TEST(AeadHarnessSelfTest, NoncesWithChosenJ0AndTheInc32Wrap) {
  auto rng = TestRng(0x4003);
  for (size_t key_len : {16, 24, 32}) {
    for (size_t nlen : {16, 17, 32, 45, 64, 128}) {
      Bytes key = RandomBytes(rng, key_len);
      Gf h = HashKey(key);
      Bytes t = RandomBytes(rng, 16);
      Block16 target;
      std::copy(t.begin(), t.end(), target.begin());
      target[11] = 0xff;  // a carry out of the low 32 bits would show here
      target[12] = target[13] = target[14] = 0xff;
      target[15] = 0xfe;
      Bytes nonce = NonceWithJ0(h, target, nlen, rng);
      ASSERT_EQ(nonce.size(), nlen);
      Block16 j0 = GcmJ0(h, nonce);
      ASSERT_EQ(Hex(j0.data(), 16), Hex(target.data(), 16)) << "nonce of " << nlen << " bytes";
      Bytes zero(48, 0), ks(48);
      uint8_t tag[16];
      OracleSeal(key, nonce, nullptr, 0, nullptr, 0, nullptr, tag);  // empty: tag = E(K, J0)
      EXPECT_EQ(Hex(tag, 16), Hex(AesBlock(key, j0).data(), 16)) << "nonce of " << nlen << " bytes";
      OracleSeal(key, nonce, nullptr, 0, zero.data(), 48, ks.data(), tag);
      for (uint32_t b = 0; b < 3; b++) {
        Block16 ctr = Inc32(j0, b + 1);  // ...ffffffff, then ...00000000, ...00000001
        EXPECT_EQ(Hex(ks.data() + 16 * b, 16), Hex(AesBlock(key, ctr).data(), 16))
            << "block " << b << " counter " << Hex(ctr.data(), 16);
      }
      EXPECT_EQ(Low32(Inc32(j0, 2)), 0u);
      EXPECT_EQ(Inc32(j0, 2)[11], 0xff);
    }
  }
}

// ---------------------------------------------------------------------------
// An AEAD context: 64-byte aligned, canaries on both sides, every call made
// through the ABI-checking trampoline.

template <typename F>
const void *FnAddr(F f) {
  return reinterpret_cast<const void *>(f);
}

template <typename T>
uint64_t U(T *p) {
  return reinterpret_cast<uintptr_t>(p);
}

class AeadCtx : public GuardedContext {
 public:
  explicit AeadCtx(const aesgen_aead &a, int fill = 0xa5)
      : GuardedContext(a.name, a.ctx_size, fill), a_(a) {}

  int Init(const uint8_t *key, size_t key_len) {
    return Int(Call("init", FnAddr(a_.init), {U(ctx()), U(key), key_len}));
  }
  int Seal(const uint8_t *nonce, size_t nonce_len, const uint8_t *aad, size_t aad_len,
           const uint8_t *in, size_t len, uint8_t *out, uint8_t *tag, size_t tag_len) {
    return Int(Call("seal", FnAddr(a_.seal),
                    {U(ctx()), U(nonce), nonce_len, U(aad), aad_len, U(in), len, U(out), U(tag),
                     tag_len}));
  }
  int Open(const uint8_t *nonce, size_t nonce_len, const uint8_t *aad, size_t aad_len,
           const uint8_t *in, size_t len, uint8_t *out, const uint8_t *tag, size_t tag_len) {
    return Int(Call("open", FnAddr(a_.open),
                    {U(ctx()), U(nonce), nonce_len, U(aad), aad_len, U(in), len, U(out), U(tag),
                     tag_len}));
  }
  int Start(const uint8_t *nonce, size_t nonce_len) {
    return Int(Call("start", FnAddr(a_.start), {U(ctx()), U(nonce), nonce_len}));
  }
  int Aad(const uint8_t *aad, size_t len) {
    return Int(Call("aad", FnAddr(a_.aad), {U(ctx()), U(aad), len}));
  }
  int Encrypt(const uint8_t *in, size_t len, uint8_t *out) {
    return Int(Call("encrypt", FnAddr(a_.encrypt), {U(ctx()), U(in), len, U(out)}));
  }
  int Decrypt(const uint8_t *in, size_t len, uint8_t *out) {
    return Int(Call("decrypt", FnAddr(a_.decrypt), {U(ctx()), U(in), len, U(out)}));
  }
  int FinishSeal(uint8_t *tag, size_t tag_len) {
    return Int(Call("finish_seal", FnAddr(a_.finish_seal), {U(ctx()), U(tag), tag_len}));
  }
  int FinishOpen(const uint8_t *tag, size_t tag_len) {
    return Int(Call("finish_open", FnAddr(a_.finish_open), {U(ctx()), U(tag), tag_len}));
  }
  void Wipe() { Call("wipe", FnAddr(a_.wipe), {U(ctx())}); }

 private:
  static int Int(uint64_t r) { return static_cast<int>(static_cast<uint32_t>(r)); }

  uint64_t Call(const char *what, const void *fn, std::initializer_list<uint64_t> args) {
    if (fn == nullptr) {
      if (++problems_ <= kMaxReports) ADD_FAILURE() << a_.name << ": " << what << " is NULL";
      return static_cast<uint64_t>(-1);
    }
    uint64_t ret = 0, mask = 0;
    if (!CallCatchingFaultsN(fn, args.begin(), args.size(), &mask, &ret)) {
      if (++problems_ <= kMaxReports) {
        ADD_FAILURE() << a_.name << ": " << what << " faulted: " << DescribeFault();
      }
      CheckCanaries(what);
      return static_cast<uint64_t>(-2);  // neither 0 nor -1
    }
    if (mask != 0 && ++problems_ <= kMaxReports) {
      ADD_FAILURE() << a_.name << ": " << what
                    << " broke the " AESGEN_ABI_CONVENTION " calling convention; clobbered/changed: "
                    << aesgen_abi_describe(mask) << " (mask 0x" << std::hex << mask << ")";
    }
    CheckCanaries(what);
    return ret;
  }

  const aesgen_aead &a_;
};

// ---------------------------------------------------------------------------
// Guarded buffers for one test, and where a call's buffers sit in them

// Each buffer either ends at its trailing guard page (true) or starts right
// after its leading one (false); in_place: the output is the input buffer.
struct Place {
  bool key = true, nonce = true, aad = true, in = true, out = true, tag = true;
  bool in_place = false;

  static Place AllAtEnd() { return Place(); }
  static Place AllAtStart() {
    Place p;
    p.key = p.nonce = p.aad = p.in = p.out = p.tag = false;
    return p;
  }
  static Place Random(std::mt19937_64 &rng, bool in_place = false) {
    Place p;
    uint64_t r = rng();
    p.key = r & 1;
    p.nonce = r & 2;
    p.aad = r & 4;
    p.in = r & 8;
    p.out = r & 16;
    p.tag = r & 32;
    p.in_place = in_place;
    return p;
  }
  std::string Describe() const {
    auto w = [](bool end) { return end ? "end" : "start"; };
    std::string s = std::string("buffers at guard page (key ") + w(key) + ", nonce " + w(nonce) +
                    ", aad " + w(aad) + ", in " + w(in) + ", out " + w(out) + ", tag " + w(tag) +
                    ")";
    if (in_place) s += ", in place (out == in)";
    return s;
  }
};

constexpr uint8_t kPattern = 0x5c;  // fills output regions before a call
constexpr size_t kWindow = 64;      // bytes checked on each side of an output

// The bytes around an output region, filled with kPattern before a call.
struct Around {
  uint8_t *lo = nullptr, *p = nullptr, *hi = nullptr;  // [lo, p) and [p + n, hi)
  size_t n = 0;
};

class Buffers {
 public:
  explicit Buffers(size_t max_msg, size_t max_aad = 4096)
      : key_(64, "key"),
        nonce_(kMaxNonce + 64, "nonce"),
        aad_(max_aad, "aad"),
        in_(max_msg, "in"),
        out_(max_msg, "out"),
        tag_(64, "tag") {}

  // A copy of data at the end (or start) of the buffer.
  uint8_t *Key(const Bytes &b, bool end) { return Put(key_, b.data(), b.size(), end); }
  uint8_t *Nonce(const Bytes &b, bool end) { return Put(nonce_, b.data(), b.size(), end); }
  uint8_t *Nonce(const uint8_t *p, size_t n, bool end) { return Put(nonce_, p, n, end); }
  uint8_t *Aad(const uint8_t *p, size_t n, bool end) { return Put(aad_, p, n, end); }
  uint8_t *In(const uint8_t *p, size_t n, bool end) { return Put(in_, p, n, end); }
  uint8_t *TagIn(const uint8_t *p, size_t n, bool end) { return Put(tag_, p, n, end); }
  // An output region of n bytes, kPattern inside (when fill_inside) and around.
  uint8_t *Out(size_t n, bool end, Around *around, bool fill_inside = true) {
    return Region(out_, n, end, around, fill_inside);
  }
  uint8_t *TagOut(size_t n, bool end, Around *around) { return Region(tag_, n, end, around, true); }
  // kPattern around data already placed in the input buffer (in place).
  void AroundIn(uint8_t *p, size_t n, Around *around) { Surround(in_, p, n, around, false); }

  size_t max_msg() const { return std::min(in_.capacity(), out_.capacity()); }
  size_t max_aad() const { return aad_.capacity(); }

  // "" when nothing around the region changed, else what did.
  static std::string Stray(const Around &a, const char *label) {
    for (uint8_t *q = a.lo; q < a.p; q++) {
      if (*q != kPattern) {
        return std::string("wrote ") + std::to_string(a.p - q) + " byte(s) before " + label;
      }
    }
    for (uint8_t *q = a.p + a.n; q < a.hi; q++) {
      if (*q != kPattern) {
        return std::string("wrote past ") + label + " + len, at " + label + " + len + " +
               std::to_string(q - (a.p + a.n));
      }
    }
    return "";
  }

 private:
  static uint8_t *Put(GuardedBuffer &g, const uint8_t *data, size_t n, bool end) {
    if (n > g.capacity()) {
      std::fprintf(stderr, "aead_tests: %zu bytes do not fit a %zu-byte buffer\n", n, g.capacity());
      std::abort();
    }
    uint8_t *p = end ? g.EndingAtGuard(n) : g.StartingAtGuard();
    if (n) std::memcpy(p, data, n);
    return p;
  }
  static uint8_t *Region(GuardedBuffer &g, size_t n, bool end, Around *around, bool fill_inside) {
    if (n > g.capacity()) {
      std::fprintf(stderr, "aead_tests: %zu bytes do not fit a %zu-byte buffer\n", n, g.capacity());
      std::abort();
    }
    uint8_t *p = end ? g.EndingAtGuard(n) : g.StartingAtGuard();
    Surround(g, p, n, around, fill_inside);
    return p;
  }
  static void Surround(GuardedBuffer &g, uint8_t *p, size_t n, Around *a, bool fill_inside) {
    uint8_t *b = g.StartingAtGuard(), *e = b + g.capacity();
    a->p = p;
    a->n = n;
    a->lo = static_cast<size_t>(p - b) > kWindow ? p - kWindow : b;
    a->hi = static_cast<size_t>(e - (p + n)) > kWindow ? p + n + kWindow : e;
    std::memset(a->lo, kPattern, static_cast<size_t>(p - a->lo));
    std::memset(p + n, kPattern, static_cast<size_t>(a->hi - (p + n)));
    if (fill_inside && n) std::memset(p, kPattern, n);
  }

  GuardedBuffer key_, nonce_, aad_, in_, out_, tag_;
};

// ---------------------------------------------------------------------------
// Random material

size_t RandomNonceLen(std::mt19937_64 &rng) {
  switch (Uniform(rng, 0, 9)) {
    case 0: return Uniform(rng, 1, 11);
    case 1: return Uniform(rng, 13, 16);
    case 2: return Uniform(rng, 17, 64);
    case 3: return Uniform(rng, 65, kMaxNonce);
    default: return 12;
  }
}

size_t RandomAadLen(std::mt19937_64 &rng) {
  switch (Uniform(rng, 0, 9)) {
    case 0:
    case 1: return 0;
    case 2:
    case 3:
    case 4: return Uniform(rng, 1, 48);
    case 5:
    case 6:
    case 7: return Uniform(rng, 49, 300);
    default: return Uniform(rng, 301, 3000);
  }
}

size_t RandomMsgLen(std::mt19937_64 &rng) {
  switch (Uniform(rng, 0, 9)) {
    case 0: return Uniform(rng, 0, 16);
    case 1:
    case 2: return Uniform(rng, 17, 256);
    case 3:
    case 4:
    case 5: return Uniform(rng, 257, 4096);
    default: return Uniform(rng, 4097, 12 * 1024);
  }
}

// Pieces that add up to len: byte by byte, short ones with empty ones among
// them, lengths near multiples of 16, or anything; now and then an empty piece
// more (also when len is 0).
std::vector<size_t> RandomPieces(std::mt19937_64 &rng, size_t len) {
  std::vector<size_t> v;
  size_t style = Uniform(rng, 0, 4);
  if (style == 0 && len > 96) style = 1;
  if (style == 1 && len > 4096) style = 4;
  for (size_t left = len; left > 0;) {
    size_t k;
    switch (style) {
      case 0: k = 1; break;
      case 1: k = Uniform(rng, 0, 40); break;
      case 2: k = Uniform(rng, 1, 3) * 16 + Uniform(rng, 0, 2) - 1; break;
      case 3: k = Uniform(rng, 0, left); break;
      default: k = Uniform(rng, 0, 4) == 0 ? 0 : Uniform(rng, 1, 1500); break;
    }
    k = std::min(k, left);
    v.push_back(k);
    left -= k;
  }
  if (v.empty() || Uniform(rng, 0, 2) == 0) {
    v.insert(v.begin() + static_cast<std::ptrdiff_t>(Uniform(rng, 0, v.size())), 0);
  }
  return v;
}

// Pieces of k bytes and what is left.
std::vector<size_t> FixedPieces(size_t len, size_t k) {
  std::vector<size_t> v(len / k, k);
  if (len % k) v.push_back(len % k);
  return v;
}

std::string PiecesText(const std::vector<size_t> &v) {
  std::string s;
  for (size_t i = 0; i < v.size() && i < 24; i++) s += (i ? "," : "") + std::to_string(v[i]);
  if (v.size() > 24) s += ",... (" + std::to_string(v.size()) + " pieces)";
  return "[" + s + "]";
}

// ---------------------------------------------------------------------------
// Driver: one kernel, one context, one set of buffers; each step compares
// with OpenSSL and returns an AssertionResult that names the case.

class Driver {
 public:
  Driver(const aesgen_aead &a, AeadCtx &ctx, Buffers &buf) : a_(a), ctx_(ctx), buf_(buf) {}

  ::testing::AssertionResult Init(const Bytes &key, bool key_at_end = true) {
    int r = ctx_.Init(buf_.Key(key, key_at_end), key.size());
    if (ctx_.problems()) return Fail() << "init: ABI, canary or memory fault (reported above)";
    if (r != 0) return Fail() << "init returned " << r << " for a " << key.size() << "-byte key";
    return ::testing::AssertionSuccess();
  }

  // init with m.key, then Seal and Open of m.
  ::testing::AssertionResult SealOpen(const Msg &m, const Place &seal, const Place &open) {
    auto r = Init(m.key, seal.key);
    if (r) r = Seal(m, seal);
    if (r) r = Open(m, open);
    return r;
  }

  // One-shot seal of m; ciphertext and tag must be OpenSSL's.
  ::testing::AssertionResult Seal(const Msg &m, const Place &pl) {
    const size_t n = m.pt.size();
    uint8_t *nonce = buf_.Nonce(m.nonce, pl.nonce);
    uint8_t *aad = buf_.Aad(m.aad.data(), m.aad.size(), pl.aad);
    uint8_t *in = buf_.In(m.pt.data(), n, pl.in);
    Around ao, at;
    uint8_t *out;
    if (pl.in_place) {
      out = in;
      buf_.AroundIn(in, n, &ao);
    } else {
      out = buf_.Out(n, pl.out, &ao);
    }
    uint8_t *tag = buf_.TagOut(m.tag_len, pl.tag, &at);
    int r = ctx_.Seal(nonce, m.nonce.size(), aad, m.aad.size(), in, n, out, tag, m.tag_len);
    const char *what = "seal";
    if (ctx_.problems()) return Fail(m, pl, what) << "ABI, canary or memory fault (reported above)";
    if (r != 0) return Fail(m, pl, what) << "returned " << r;
    size_t bad = FirstDiff(out, m.ct.data(), n);
    if (bad < n) {
      return Fail(m, pl, what) << "ciphertext differs from OpenSSL's at byte " << bad << " (block "
                               << bad / 16 << "); " << CountDiff(out + bad, m.ct.data() + bad, n - bad)
                               << " of the last " << n - bad << " bytes differ\n  want "
                               << BlockAt(m.ct.data(), n, bad) << "\n  got  " << BlockAt(out, n, bad);
    }
    if (std::memcmp(tag, m.tag.data(), m.tag_len) != 0) {
      return Fail(m, pl, what) << "tag " << Hex(tag, m.tag_len) << ", OpenSSL's "
                               << Hex(m.tag.data(), m.tag_len);
    }
    std::string s = Buffers::Stray(ao, "out");
    if (s.empty()) s = Buffers::Stray(at, "tag");
    if (!s.empty()) return Fail(m, pl, what) << s;
    if (!pl.in_place && n && std::memcmp(in, m.pt.data(), n) != 0) {
      return Fail(m, pl, what) << "modified its input (in != out)";
    }
    if (std::memcmp(nonce, m.nonce.data(), m.nonce.size()) != 0 ||
        (m.aad.size() && std::memcmp(aad, m.aad.data(), m.aad.size()) != 0)) {
      return Fail(m, pl, what) << "modified the nonce or the AAD";
    }
    return ::testing::AssertionSuccess();
  }

  // One-shot open of m's ciphertext and tag: 0 and the plaintext.
  ::testing::AssertionResult Open(const Msg &m, const Place &pl) {
    return OpenRaw(m, m.nonce, m.aad, m.ct, m.tag.data(), m.tag_len, pl, true, "open");
  }

  // One-shot open of these inputs, which must fail: -1, out[0..len) zero,
  // nothing written around it.
  ::testing::AssertionResult OpenMustFail(const Msg &m, const Bytes &nonce, const Bytes &aad,
                                          const Bytes &ct, const uint8_t *tag, size_t tag_len,
                                          const Place &pl, const std::string &what) {
    return OpenRaw(m, nonce, aad, ct, tag, tag_len, pl, false, "open of " + what);
  }

  // Streaming seal of m: start, aad pieces, encrypt pieces, finish_seal.
  // Zero-length pieces pass NULL (or a pointer to a guard page).
  ::testing::AssertionResult StreamSeal(const Msg &m, std::mt19937_64 &rng,
                                        std::vector<size_t> aad_pieces,
                                        std::vector<size_t> data_pieces) {
    std::string what = "streaming seal, aad pieces " + PiecesText(aad_pieces) + ", data pieces " +
                       PiecesText(data_pieces);
    Place pl = Place::Random(rng);
    auto r = Start(m, m.nonce, pl, what);
    if (!r) return r;
    size_t off = 0;
    for (size_t k : aad_pieces) {
      r = AadPiece(m, m.aad.data() + off, k, rng, what);
      if (!r) return r;
      off += k;
    }
    off = 0;
    for (size_t k : data_pieces) {
      r = DataPiece(m, m.pt.data() + off, m.ct.data() + off, k, off, rng, true, what);
      if (!r) return r;
      off += k;
    }
    Around at;
    uint8_t *tag = buf_.TagOut(m.tag_len, pl.tag, &at);
    int rc = ctx_.FinishSeal(tag, m.tag_len);
    if (ctx_.problems()) return Fail(m, pl, what) << "finish_seal: ABI, canary or memory fault";
    if (rc != 0) return Fail(m, pl, what) << "finish_seal returned " << rc;
    if (std::memcmp(tag, m.tag.data(), m.tag_len) != 0) {
      return Fail(m, pl, what) << "tag " << Hex(tag, m.tag_len) << ", OpenSSL's "
                               << Hex(m.tag.data(), m.tag_len);
    }
    std::string s = Buffers::Stray(at, "tag");
    if (!s.empty()) return Fail(m, pl, what) << "finish_seal " << s;
    return ::testing::AssertionSuccess();
  }

  ::testing::AssertionResult StreamSeal(const Msg &m, std::mt19937_64 &rng) {
    return StreamSeal(m, rng, RandomPieces(rng, m.aad.size()), RandomPieces(rng, m.pt.size()));
  }

  // Streaming open: start, aad pieces, decrypt pieces, finish_open.  With
  // want_ok the plaintext must come out and finish_open return 0; without it
  // (tampered inputs) finish_open must return -1.
  ::testing::AssertionResult StreamOpen(const Msg &m, const Bytes &nonce, const Bytes &aad,
                                        const Bytes &ct, const uint8_t *tag, size_t tag_len,
                                        std::mt19937_64 &rng, bool want_ok,
                                        const std::string &label) {
    auto aad_pieces = RandomPieces(rng, aad.size()), data_pieces = RandomPieces(rng, ct.size());
    std::string what = "streaming open" + (label.empty() ? "" : " of " + label) + ", aad pieces " +
                       PiecesText(aad_pieces) + ", data pieces " + PiecesText(data_pieces);
    Place pl = Place::Random(rng);
    auto r = Start(m, nonce, pl, what);
    if (!r) return r;
    size_t off = 0;
    for (size_t k : aad_pieces) {
      r = AadPiece(m, aad.data() + off, k, rng, what);
      if (!r) return r;
      off += k;
    }
    off = 0;
    for (size_t k : data_pieces) {
      r = DataPiece(m, ct.data() + off, want_ok ? m.pt.data() + off : nullptr, k, off, rng, false,
                    what);
      if (!r) return r;
      off += k;
    }
    uint8_t *t = buf_.TagIn(tag, tag_len, pl.tag);
    int rc = ctx_.FinishOpen(t, tag_len);
    if (ctx_.problems()) return Fail(m, pl, what) << "finish_open: ABI, canary or memory fault";
    if (rc != (want_ok ? 0 : -1)) {
      return Fail(m, pl, what) << "finish_open returned " << rc << ", want " << (want_ok ? 0 : -1);
    }
    return ::testing::AssertionSuccess();
  }

  ::testing::AssertionResult StreamOpen(const Msg &m, std::mt19937_64 &rng) {
    return StreamOpen(m, m.nonce, m.aad, m.ct, m.tag.data(), m.tag_len, rng, true, "");
  }

  // Single streaming steps, for tests that drive the stream themselves.
  ::testing::AssertionResult Start(const Msg &m, const Bytes &nonce, const Place &pl,
                                   const std::string &what) {
    int rc = ctx_.Start(buf_.Nonce(nonce, pl.nonce), nonce.size());
    if (ctx_.problems()) return Fail(m, pl, what) << "start: ABI, canary or memory fault";
    if (rc != 0) return Fail(m, pl, what) << "start returned " << rc;
    return ::testing::AssertionSuccess();
  }

  ::testing::AssertionResult AadPiece(const Msg &m, const uint8_t *p, size_t k,
                                      std::mt19937_64 &rng, const std::string &what) {
    const uint8_t *q = k == 0 ? ZeroLengthPointer(rng) : buf_.Aad(p, k, Uniform(rng, 0, 1) != 0);
    int rc = ctx_.Aad(q, k);
    if (ctx_.problems()) return Fail(m, Place(), what) << "aad: ABI, canary or memory fault";
    if (rc != 0) return Fail(m, Place(), what) << "aad(" << k << " bytes) returned " << rc;
    return ::testing::AssertionSuccess();
  }

  // encrypt (or decrypt) k bytes at stream offset off; want (if not NULL) is
  // what must come out.
  ::testing::AssertionResult DataPiece(const Msg &m, const uint8_t *src, const uint8_t *want,
                                       size_t k, size_t off, std::mt19937_64 &rng, bool encrypt,
                                       const std::string &what) {
    const char *fn = encrypt ? "encrypt" : "decrypt";
    uint8_t *in, *out;
    Around ao;
    bool in_place = k && Uniform(rng, 0, 3) == 0;
    if (k == 0) {
      in = ZeroLengthPointer(rng);
      out = ZeroLengthPointer(rng);
    } else {
      in = buf_.In(src, k, Uniform(rng, 0, 1) != 0);
      if (in_place) {
        out = in;
        buf_.AroundIn(in, k, &ao);
      } else {
        out = buf_.Out(k, Uniform(rng, 0, 1) != 0, &ao);
      }
    }
    int rc = encrypt ? ctx_.Encrypt(in, k, out) : ctx_.Decrypt(in, k, out);
    if (ctx_.problems()) {
      return Fail(m, Place(), what) << fn << "(" << k << " bytes at offset " << off
                                    << "): ABI, canary or memory fault (reported above)";
    }
    if (rc != 0) return Fail(m, Place(), what) << fn << "(" << k << " bytes) returned " << rc;
    if (k == 0) return ::testing::AssertionSuccess();
    if (want != nullptr) {
      size_t bad = FirstDiff(out, want, k);
      if (bad < k) {
        return Fail(m, Place(), what)
               << fn << " of " << k << " bytes at stream offset " << off << (in_place ? " (in place)" : "")
               << ": output differs from OpenSSL's at stream byte " << off + bad << " (block "
               << (off + bad) / 16 << ")";
      }
    }
    std::string s = Buffers::Stray(ao, "out");
    if (!s.empty()) return Fail(m, Place(), what) << fn << " of " << k << " bytes: " << s;
    if (!in_place && std::memcmp(in, src, k) != 0) {
      return Fail(m, Place(), what) << fn << " modified its input (in != out)";
    }
    return ::testing::AssertionSuccess();
  }

  ::testing::AssertionResult Fail(const Msg &m, const Place &pl, const std::string &what) {
    ::testing::AssertionResult r = ::testing::AssertionFailure();
    r << a_.name << ": " << what << " of " << m.Describe() << "; " << pl.Describe() << ":\n  ";
    return r;
  }
  ::testing::AssertionResult Fail() {
    ::testing::AssertionResult r = ::testing::AssertionFailure();
    r << a_.name << ": ";
    return r;
  }

  AeadCtx &ctx() { return ctx_; }
  Buffers &buffers() { return buf_; }

 private:
  // NULL, or (half the time) a pointer into a guard page: with length 0
  // nothing may be read or written through it.
  uint8_t *ZeroLengthPointer(std::mt19937_64 &rng) {
    if (Uniform(rng, 0, 1)) return nullptr;
    Around unused;
    return buf_.TagOut(0, true, &unused);
  }

  ::testing::AssertionResult OpenRaw(const Msg &m, const Bytes &nonce_b, const Bytes &aad_b,
                                     const Bytes &ct, const uint8_t *tag_p, size_t tag_len,
                                     const Place &pl, bool want_ok, const std::string &what) {
    const size_t n = ct.size();
    uint8_t *nonce = buf_.Nonce(nonce_b, pl.nonce);
    uint8_t *aad = buf_.Aad(aad_b.data(), aad_b.size(), pl.aad);
    uint8_t *in = buf_.In(ct.data(), n, pl.in);
    uint8_t *tag = buf_.TagIn(tag_p, tag_len, pl.tag);
    Around ao;
    uint8_t *out;
    if (pl.in_place) {
      out = in;
      buf_.AroundIn(in, n, &ao);
    } else {
      out = buf_.Out(n, pl.out, &ao);
    }
    int r = ctx_.Open(nonce, nonce_b.size(), aad, aad_b.size(), in, n, out, tag, tag_len);
    if (ctx_.problems()) return Fail(m, pl, what) << "ABI, canary or memory fault (reported above)";
    if (want_ok) {
      if (r != 0) return Fail(m, pl, what) << "returned " << r << " for OpenSSL's tag";
      size_t bad = FirstDiff(out, m.pt.data(), n);
      if (bad < n) {
        return Fail(m, pl, what) << "plaintext wrong from byte " << bad << " (block " << bad / 16
                                 << ")\n  want " << BlockAt(m.pt.data(), n, bad) << "\n  got  "
                                 << BlockAt(out, n, bad);
      }
    } else {
      if (r != -1) return Fail(m, pl, what) << "returned " << r << ", want -1";
      for (size_t i = 0; i < n; i++) {
        if (out[i] != 0) {
          size_t nz = 0;
          for (size_t j = 0; j < n; j++) nz += out[j] != 0;
          return Fail(m, pl, what) << "returned -1 but out[0.." << n << ") is not all zero: byte "
                                   << i << " is 0x" << Hex(out + i, 1) << " (" << nz
                                   << " non-zero bytes"
                                   << (n && FirstDiff(out, m.pt.data(), std::min(n, m.pt.size())) ==
                                                    std::min(n, m.pt.size())
                                           ? "; out holds the plaintext"
                                           : "")
                                   << ")";
        }
      }
    }
    std::string s = Buffers::Stray(ao, "out");
    if (!s.empty()) return Fail(m, pl, what) << s;
    if (!pl.in_place && n && std::memcmp(in, ct.data(), n) != 0) {
      return Fail(m, pl, what) << "modified its input (in != out)";
    }
    if (std::memcmp(tag, tag_p, tag_len) != 0) return Fail(m, pl, what) << "modified the tag";
    return ::testing::AssertionSuccess();
  }

  const aesgen_aead &a_;
  AeadCtx &ctx_;
  Buffers &buf_;
};

// ---------------------------------------------------------------------------
// Fixtures

const aesgen_aead &AeadAt(size_t i) { return aesgen_aeads[i]; }

std::string AeadParamName(const ::testing::TestParamInfo<size_t> &info) {
  const char *n = AeadAt(info.param).name;
  std::string s = (n && *n) ? n : "aead_" + std::to_string(info.param);
  for (char &c : s) {
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  }
  return s;
}

bool IsMode(const aesgen_aead &a, const char *mode) {
  return a.mode != nullptr && std::strcmp(a.mode, mode) == 0;
}

bool IsTableMethod(const aesgen_aead &a) {
  return a.method != nullptr && std::strncmp(a.method, "table", 5) == 0;
}

// aesgen_best_aead(mode), called through the trampoline.
const aesgen_aead *BestAead(const char *mode) {
  uint64_t args[1] = {U(mode)}, mask = 0, ret = 0;
  if (!CallCatchingFaultsN(FnAddr(&aesgen_best_aead), args, 1, &mask, &ret)) {
    ADD_FAILURE() << "aesgen_best_aead(\"" << mode << "\") faulted: " << DescribeFault();
    return nullptr;
  }
  EXPECT_EQ(mask, 0u) << "aesgen_best_aead broke the " AESGEN_ABI_CONVENTION " convention: "
                      << aesgen_abi_describe(mask);
  return reinterpret_cast<const aesgen_aead *>(static_cast<uintptr_t>(ret));
}

// Descriptor checks: run for every AEAD, supported by this CPU or not.
class AeadEntry : public ::testing::TestWithParam<size_t> {};

// Behaviour: skipped (naming the missing features) on a CPU that cannot run
// the kernel, and for modes this file has no suite for yet.
class Aead : public ::testing::TestWithParam<size_t> {
 protected:
  void SetUp() override {
    a_ = &AeadAt(GetParam());
    uint64_t missing = a_->features & ~CpuFeatures();
    if (missing != 0 && EnvU64("AESGEN_TEST_EXPECT_ALL_KERNELS", 0) != 0) {
      FAIL() << a_->name << " needs " << FeatureList(missing)
             << ", which aesgen_cpu_features() does not report on a CPU that has every feature "
                "(AESGEN_TEST_EXPECT_ALL_KERNELS=1)";
    }
    if (missing != 0) {
      GTEST_SKIP() << a_->name << " needs " << FeatureList(missing) << " which this CPU lacks";
    }
    if (!IsMode(*a_, "gcm")) {
      GTEST_SKIP() << a_->name << ": mode " << (a_->mode ? a_->mode : "(null)")
                   << " has no suite in aead_tests.cc yet";
    }
    key_lens_ = SupportedKeyLens();
    ASSERT_FALSE(key_lens_.empty()) << "aesgen_key_bits_supported is 0";
  }
  const aesgen_aead &a() const { return *a_; }
  size_t KeyLen(size_t i) const { return key_lens_[i % key_lens_.size()]; }
  size_t RandomTagLen(std::mt19937_64 &rng) const {
    return Uniform(rng, a_->tag_min, a_->tag_max);
  }
  // A random message (OpenSSL-sealed) under a new key of key_len bytes.
  Msg RandomMsg(std::mt19937_64 &rng, size_t key_len, size_t len = SIZE_MAX,
                size_t nonce_len = 0, size_t aad_len = SIZE_MAX) const {
    Msg m;
    m.key = RandomBytes(rng, key_len);
    m.nonce = RandomBytes(rng, nonce_len ? nonce_len : RandomNonceLen(rng));
    m.aad = PoolBytes(rng, aad_len != SIZE_MAX ? aad_len : RandomAadLen(rng));
    m.pt = PoolBytes(rng, len != SIZE_MAX ? len : RandomMsgLen(rng));
    m.tag_len = RandomTagLen(rng);
    m.Seal();
    return m;
  }

  const aesgen_aead *a_ = nullptr;
  std::vector<size_t> key_lens_;
};

// ---------------------------------------------------------------------------
// Registry (whole set)

TEST(AeadRegistry, IsWellFormed) {
  std::vector<std::string> names;
  for (size_t i = 0; i < aesgen_aead_count; i++) {
    ASSERT_NE(aesgen_aeads[i].name, nullptr) << "AEAD " << i;
    names.push_back(AeadParamName(::testing::TestParamInfo<size_t>(i, i)));
  }
  std::sort(names.begin(), names.end());
  EXPECT_EQ(std::adjacent_find(names.begin(), names.end()), names.end())
      << "two AEADs share a test name (after '-' -> '_')";
}

// aesgen_best_aead(mode): the fastest constant-time kernel of that mode this
// CPU runs, NULL when it runs none; never a kernel with constant_time == 0;
// NULL for a mode nobody has.  The GCM choice also passes the spec vectors.
TEST(AeadRegistry, BestAeadRunsHere) {
  const uint64_t have = CpuFeatures();
  std::vector<std::string> modes = {"gcm", "gcm-siv", "otr"};
  for (size_t i = 0; i < aesgen_aead_count; i++) {
    if (aesgen_aeads[i].mode && std::find(modes.begin(), modes.end(), aesgen_aeads[i].mode) == modes.end())
      modes.push_back(aesgen_aeads[i].mode);
  }
  for (const std::string &mode : modes) {
    size_t runnable = 0;
    for (size_t i = 0; i < aesgen_aead_count; i++) {
      const aesgen_aead &a = aesgen_aeads[i];
      if (IsMode(a, mode.c_str()) && (a.features & ~have) == 0 && a.constant_time) runnable++;
    }
    const aesgen_aead *best = BestAead(mode.c_str());
    if (runnable == 0) {
      EXPECT_EQ(best, nullptr) << "no constant-time " << mode << " kernel runs here, yet "
                               << "aesgen_best_aead returned " << (best ? best->name : "");
      continue;
    }
    ASSERT_NE(best, nullptr) << runnable << " constant-time " << mode
                             << " kernels run here but aesgen_best_aead returned NULL";
    ASSERT_GE(best, &aesgen_aeads[0]);
    ASSERT_LT(best, &aesgen_aeads[0] + aesgen_aead_count) << "not a registry entry";
    EXPECT_TRUE(IsMode(*best, mode.c_str())) << best->name << " is of mode " << best->mode;
    EXPECT_EQ(best->features & ~have, 0u) << best->name << " needs features this CPU lacks";
    EXPECT_NE(best->constant_time, 0) << best->name << " is not constant time";
    if (mode == "gcm") {
      size_t ran = 0;
      for (const GcmVector &v : kGcmVectors) {
        Msg m = VectorMsg(v);
        if (!KeyLenSupported(m.key.size())) continue;
        AeadCtx ctx(*best);
        Buffers buf(64, 64);
        Driver d(*best, ctx, buf);
        EXPECT_TRUE(d.SealOpen(m, Place::AllAtEnd(), Place::AllAtStart())) << v.name;
        ran++;
      }
      EXPECT_GT(ran, 0u);
    }
  }
  EXPECT_EQ(BestAead("nope"), nullptr) << "aesgen_best_aead(\"nope\")";
  EXPECT_EQ(BestAead(""), nullptr) << "aesgen_best_aead(\"\")";
}

// ---------------------------------------------------------------------------
// Per-kernel descriptor (runs even where the CPU cannot run the kernel)

TEST_P(AeadEntry, Descriptor) {
  const aesgen_aead &a = AeadAt(GetParam());
  ASSERT_NE(a.name, nullptr);
  EXPECT_NE(*a.name, '\0');
  ASSERT_NE(a.mode, nullptr) << a.name;
  EXPECT_NE(a.method, nullptr) << a.name;
  ASSERT_NE(a.face, nullptr) << a.name;
  EXPECT_TRUE(!std::strcmp(a.face, "none") || !std::strcmp(a.face, "r1") || !std::strcmp(a.face, "r2"))
      << a.name << ": face " << a.face;
  EXPECT_GT(a.ctx_size, 0u) << a.name;
  EXPECT_GE(a.nonce_min, 1u) << a.name;
  EXPECT_LE(a.nonce_min, a.nonce_max) << a.name;
  EXPECT_GE(a.tag_min, 1u) << a.name;
  EXPECT_LE(a.tag_min, a.tag_max) << a.name;
  EXPECT_LE(a.tag_max, 16u) << a.name;
  EXPECT_NE(a.init, nullptr) << a.name;
  EXPECT_NE(a.seal, nullptr) << a.name;
  EXPECT_NE(a.open, nullptr) << a.name;
  EXPECT_NE(a.wipe, nullptr) << a.name;
  // constant_time is 0 for table-based kernels and only for them.
  EXPECT_EQ(a.constant_time == 0, IsTableMethod(a))
      << a.name << ": method " << (a.method ? a.method : "(null)") << ", constant_time "
      << a.constant_time;
  if (IsMode(a, "gcm")) {
    // SP 800-38D as DESIGN.md fixes it: any nonce from 1 byte, tags of 4..16.
    EXPECT_EQ(a.nonce_min, 1u) << a.name;
    EXPECT_EQ(a.nonce_max, SIZE_MAX) << a.name;
    EXPECT_EQ(a.tag_min, 4u) << a.name;
    EXPECT_EQ(a.tag_max, 16u) << a.name;
    EXPECT_NE(a.start, nullptr) << a.name << ": GCM streams";
    EXPECT_NE(a.aad, nullptr) << a.name;
    EXPECT_NE(a.encrypt, nullptr) << a.name;
    EXPECT_NE(a.decrypt, nullptr) << a.name;
    EXPECT_NE(a.finish_seal, nullptr) << a.name;
    EXPECT_NE(a.finish_open, nullptr) << a.name;
  }
  for (unsigned i = 0; i < 64; i++) {
    uint64_t bit = uint64_t{1} << i;
    if (a.features & bit) {
      EXPECT_NE(aesgen_cpu_feature_name(bit), nullptr)
          << a.name << " needs feature bit " << i << ", which has no name";
    }
  }
}

// ---------------------------------------------------------------------------
// Keys

TEST_P(Aead, KeyLengths) {
  const std::vector<size_t> lens = {0, 1, 8, 15, 16, 17, 20, 23, 24, 25, 31, 32, 33, 48, 64};
  auto rng = TestRng(0x5001);
  Bytes key = RandomBytes(rng, 64);
  AeadCtx ctx(a());
  Buffers buf(1024);
  Driver d(a(), ctx, buf);
  for (size_t len : lens) {
    int r = ctx.Init(buf.Key(Bytes(key.begin(), key.begin() + static_cast<std::ptrdiff_t>(len)), true),
                     len);
    if (KeyLenSupported(len)) {
      EXPECT_EQ(r, 0) << a().name << ": init with a supported key of " << len << " bytes";
    } else {
      EXPECT_EQ(r, -1) << a().name << ": init with a key of " << len
                       << " bytes (not in aesgen_key_bits_supported = " << aesgen_key_bits_supported
                       << ") must return -1";
    }
  }
  // A refused init leaves a context that a good init brings back to use.
  for (size_t i = 0; i < key_lens_.size(); i++) {
    EXPECT_EQ(ctx.Init(buf.Key(key, true), 17), -1);
    Msg m = RandomMsg(rng, KeyLen(i), 300);
    ASSERT_TRUE(d.SealOpen(m, Place::Random(rng), Place::Random(rng)));
  }
}

// ---------------------------------------------------------------------------
// Known answers

TEST_P(Aead, GcmSpecVectors) {
  auto rng = TestRng(0x5002);
  size_t ran = 0;
  for (const GcmVector &v : kGcmVectors) {
    Msg m = VectorMsg(v);
    AeadCtx ctx(a());
    Buffers buf(256, 256);
    Driver d(a(), ctx, buf);
    if (!KeyLenSupported(m.key.size())) {
      EXPECT_EQ(ctx.Init(buf.Key(m.key, true), m.key.size()), -1) << v.name;
      continue;
    }
    ran++;
    ASSERT_TRUE(d.SealOpen(m, Place::AllAtEnd(), Place::AllAtEnd())) << v.name;
    ASSERT_TRUE(d.SealOpen(m, Place::AllAtStart(), Place::Random(rng, true))) << v.name;
    // Byte by byte, and in pieces of 16 and of 7.
    std::vector<size_t> ones(m.pt.size(), 1), aad_ones(m.aad.size(), 1);
    ASSERT_TRUE(d.StreamSeal(m, rng, aad_ones, ones)) << v.name;
    ASSERT_TRUE(d.StreamSeal(m, rng, FixedPieces(m.aad.size(), 16), FixedPieces(m.pt.size(), 16)))
        << v.name;
    ASSERT_TRUE(d.StreamSeal(m, rng, FixedPieces(m.aad.size(), 7), FixedPieces(m.pt.size(), 7)))
        << v.name;
    ASSERT_TRUE(d.StreamOpen(m, rng)) << v.name;
    // Short tags are prefixes of the full one.
    for (size_t t : {a().tag_min, size_t{8}, size_t{12}, size_t{15}}) {
      if (t < a().tag_min || t > a().tag_max) continue;
      Msg s = m;
      s.tag_len = t;
      ASSERT_TRUE(d.Seal(s, Place::AllAtEnd())) << v.name;
      ASSERT_TRUE(d.Open(s, Place::AllAtStart())) << v.name;
    }
  }
  EXPECT_GT(ran, 0u) << "no vector has a key size this set supports";
}

// ---------------------------------------------------------------------------
// Random messages

TEST_P(Aead, RandomSealOpen) {
  auto rng = TestRng(0x5010);
  Buffers buf(12 * 1024 + 64);
  const size_t cases = Cases(1500);
  for (size_t c = 0; c < cases; c++) {
    Msg m = RandomMsg(rng, KeyLen(c));
    AeadCtx ctx(a());
    Driver d(a(), ctx, buf);
    ASSERT_TRUE(d.SealOpen(m, Place::Random(rng), Place::Random(rng))) << "case " << c;
  }
}

TEST_P(Aead, LargeMessages) {
  auto rng = TestRng(0x5011);
  const size_t max = 2 * 65536 + 256;
  Buffers buf(max);
  const size_t cases = Cases(3);
  for (size_t c = 0; c < cases; c++) {
    Msg m = RandomMsg(rng, KeyLen(c), Uniform(rng, 65537, max), Uniform(rng, 0, 1) ? 12 : 0);
    AeadCtx ctx(a());
    Driver d(a(), ctx, buf);
    ASSERT_TRUE(d.SealOpen(m, Place::Random(rng), Place::Random(rng))) << "case " << c;
    ASSERT_TRUE(d.StreamSeal(m, rng)) << "case " << c;
    ASSERT_TRUE(d.StreamOpen(m, rng)) << "case " << c;
  }
}

// Every tag length from tag_min to tag_max: the tag is the prefix of the full
// one; open accepts it and refuses it with one bit flipped.
TEST_P(Aead, EveryTagLength) {
  auto rng = TestRng(0x5012);
  Buffers buf(4200);
  AeadCtx ctx(a());
  Driver d(a(), ctx, buf);
  for (size_t t = a().tag_min; t <= a().tag_max; t++) {
    for (size_t c = 0; c < Cases(10); c++) {
      Msg m = RandomMsg(rng, KeyLen(t + c), Uniform(rng, 0, 4100));
      m.tag_len = t;
      ASSERT_TRUE(d.SealOpen(m, Place::Random(rng), Place::Random(rng))) << "tag_len " << t;
      Block16 bad = m.tag;
      bad[Uniform(rng, 0, t - 1)] ^= static_cast<uint8_t>(1u << Uniform(rng, 0, 7));
      ASSERT_TRUE(d.OpenMustFail(m, m.nonce, m.aad, m.ct, bad.data(), t, Place::Random(rng),
                                 "a tag with one bit flipped"));
      ASSERT_TRUE(d.StreamSeal(m, rng)) << "tag_len " << t;
    }
  }
}

TEST_P(Aead, InPlace) {
  auto rng = TestRng(0x5013);
  Buffers buf(12 * 1024 + 64);
  AeadCtx ctx(a());
  Driver d(a(), ctx, buf);
  const size_t cases = Cases(300);
  for (size_t c = 0; c < cases; c++) {
    Msg m = RandomMsg(rng, KeyLen(c));
    ASSERT_TRUE(d.SealOpen(m, Place::Random(rng, true), Place::Random(rng, true))) << "case " << c;
    Block16 bad = m.tag;
    bad[0] ^= 0x80;
    ASSERT_TRUE(d.OpenMustFail(m, m.nonce, m.aad, m.ct, bad.data(), m.tag_len,
                               Place::Random(rng, true), "a tag with one bit flipped, in place"));
  }
}

// Records of a TLS or QUIC size: a 12-byte nonce, 0..17 bytes of AAD, every message
// length 0..100 (the x86-64 kernels take a one-shot path up to 64 bytes with at most 16
// of AAD; both sides of each limit are here), sealed and opened against OpenSSL, in place
// or not, with a bit flipped in the last ciphertext byte or the tag.
TEST_P(Aead, ShortRecords) {
  auto rng = TestRng(0x5014);
  Buffers buf(256);
  AeadCtx ctx(a());
  Driver d(a(), ctx, buf);
  for (size_t len = 0; len <= 100; len++) {
    for (size_t aad = len % 3; aad <= 17; aad += 3) {
      Msg m = RandomMsg(rng, KeyLen(len + aad), len, 12, aad);
      ASSERT_TRUE(d.SealOpen(m, Place::Random(rng, len % 2 == 0), Place::Random(rng, aad % 2 == 0)))
          << "len " << len << ", aad " << aad;
      Block16 bad = m.tag;
      bad[Uniform(rng, 0, m.tag_len - 1)] ^= static_cast<uint8_t>(1u << Uniform(rng, 0, 7));
      ASSERT_TRUE(d.OpenMustFail(m, m.nonce, m.aad, m.ct, bad.data(), m.tag_len,
                                 Place::Random(rng), "a tag with one bit flipped"));
      if (len != 0) {
        Bytes ct = m.ct;
        ct.back() ^= 0x80;
        ASSERT_TRUE(d.OpenMustFail(m, m.nonce, m.aad, ct, m.tag.data(), m.tag_len,
                                   Place::Random(rng, true), "the last ciphertext byte flipped"));
      }
    }
  }
}

// Records past the short path under a 12-byte nonce and at most 16 bytes of AAD (the
// x86-64 kernels build J0 and hash the AAD block in registers there): every length
// around the 16-, 64- and 512-byte steps of the batches up to 2100 bytes, AAD 0..16,
// against OpenSSL, with a bit flipped in the AAD or the tag.
TEST_P(Aead, TlsRecordsPastTheShortPath) {
  auto rng = TestRng(0x5015);
  Buffers buf(2200);
  AeadCtx ctx(a());
  Driver d(a(), ctx, buf);
  std::vector<size_t> lens;
  for (size_t step : {64, 256, 512, 1024, 1536, 2048}) {
    for (size_t len = step - 17; len <= step + 17; len++) lens.push_back(len);
  }
  for (size_t c = 0; c < Cases(40); c++) lens.push_back(Uniform(rng, 65, 2100));
  for (size_t i = 0; i < lens.size(); i++) {
    size_t aad = i % 17;
    Msg m = RandomMsg(rng, KeyLen(i), lens[i], 12, aad);
    ASSERT_TRUE(d.SealOpen(m, Place::Random(rng, i % 2 == 0), Place::Random(rng, i % 3 == 0)))
        << "len " << lens[i] << ", aad " << aad;
    Block16 bad = m.tag;
    bad[Uniform(rng, 0, m.tag_len - 1)] ^= static_cast<uint8_t>(1u << Uniform(rng, 0, 7));
    ASSERT_TRUE(d.OpenMustFail(m, m.nonce, m.aad, m.ct, bad.data(), m.tag_len,
                               Place::Random(rng), "a tag with one bit flipped"));
    if (aad != 0) {
      Bytes flipped = m.aad;
      flipped[Uniform(rng, 0, aad - 1)] ^= 0x01;
      ASSERT_TRUE(d.OpenMustFail(m, m.nonce, flipped, m.ct, m.tag.data(), m.tag_len,
                                 Place::Random(rng), "an AAD byte flipped"));
    }
  }
}

// ---------------------------------------------------------------------------
// Streaming

TEST_P(Aead, StreamingRandomPieces) {
  auto rng = TestRng(0x5020);
  Buffers buf(12 * 1024 + 64);
  AeadCtx ctx(a());
  Driver d(a(), ctx, buf);
  const size_t cases = Cases(600);
  for (size_t c = 0; c < cases; c++) {
    Msg m = RandomMsg(rng, KeyLen(c));
    ASSERT_TRUE(d.Init(m.key));
    ASSERT_TRUE(d.StreamSeal(m, rng)) << "case " << c;
    ASSERT_TRUE(d.StreamOpen(m, rng)) << "case " << c;
    // A one-shot call between streams on the same context.
    if (c % 4 == 0) {
      ASSERT_TRUE(d.Seal(m, Place::Random(rng)));
    }
  }
}

// No aad call at all, no data call at all, only empty pieces.
TEST_P(Aead, StreamingWithoutAadOrData) {
  auto rng = TestRng(0x5021);
  Buffers buf(4096);
  AeadCtx ctx(a());
  Driver d(a(), ctx, buf);
  for (size_t i = 0; i < 3 * key_lens_.size(); i++) {
    size_t len = i % 3 == 0 ? 0 : Uniform(rng, 1, 100), aad = i % 3 == 1 ? 0 : Uniform(rng, 1, 100);
    Msg m = RandomMsg(rng, KeyLen(i), len, 0, aad);
    ASSERT_TRUE(d.Init(m.key));
    ASSERT_TRUE(d.StreamSeal(m, rng, m.aad.empty() ? std::vector<size_t>{} : std::vector<size_t>{aad},
                             m.pt.empty() ? std::vector<size_t>{} : std::vector<size_t>{len}));
    ASSERT_TRUE(d.StreamSeal(m, rng, {0, m.aad.size(), 0}, {0, 0, m.pt.size(), 0}));
    ASSERT_TRUE(d.StreamOpen(m, rng));
  }
}

// aad after data began returns -1 and changes nothing: the stream goes on as
// if the call had not been made.
TEST_P(Aead, StreamingAadAfterDataIsRefused) {
  auto rng = TestRng(0x5022);
  Buffers buf(4096);
  AeadCtx ctx(a());
  Driver d(a(), ctx, buf);
  for (size_t c = 0; c < Cases(10); c++) {
    Msg m = RandomMsg(rng, KeyLen(c), Uniform(rng, 1, 600));
    size_t first = Uniform(rng, 1, m.pt.size());
    Bytes extra = RandomBytes(rng, Uniform(rng, 1, 40));
    for (bool encrypt : {true, false}) {
      std::string what = encrypt ? "seal stream" : "open stream";
      ASSERT_TRUE(d.Init(m.key));
      ASSERT_TRUE(d.Start(m, m.nonce, Place::Random(rng), what));
      ASSERT_TRUE(d.AadPiece(m, m.aad.data(), m.aad.size(), rng, what));
      const uint8_t *src = encrypt ? m.pt.data() : m.ct.data();
      const uint8_t *want = encrypt ? m.ct.data() : m.pt.data();
      ASSERT_TRUE(d.DataPiece(m, src, want, first, 0, rng, encrypt, what));
      int r = ctx.Aad(buf.Aad(extra.data(), extra.size(), true), extra.size());
      ASSERT_EQ(r, -1) << a().name << ": aad of " << extra.size() << " bytes after " << first
                       << " bytes of data (" << what << ") of " << m.Describe();
      ASSERT_TRUE(d.DataPiece(m, src + first, want + first, m.pt.size() - first, first, rng, encrypt,
                              what));
      Around at;
      if (encrypt) {
        uint8_t *tag = buf.TagOut(m.tag_len, true, &at);
        ASSERT_EQ(ctx.FinishSeal(tag, m.tag_len), 0);
        EXPECT_EQ(Hex(tag, m.tag_len), Hex(m.tag.data(), m.tag_len))
            << a().name << ": the refused aad call changed the tag; " << m.Describe();
      } else {
        EXPECT_EQ(ctx.FinishOpen(buf.TagIn(m.tag.data(), m.tag_len, true), m.tag_len), 0)
            << a().name << ": the refused aad call changed the tag; " << m.Describe();
      }
    }
  }
}

// Two contexts streaming side by side, piece by piece: no state is shared.
TEST_P(Aead, TwoContextsInterleaved) {
  auto rng = TestRng(0x5023);
  Buffers buf(8192);
  AeadCtx c1(a()), c2(a());
  Driver d1(a(), c1, buf), d2(a(), c2, buf);
  for (size_t c = 0; c < Cases(6); c++) {
    Msg m1 = RandomMsg(rng, KeyLen(c), Uniform(rng, 0, 5000), 12);
    Msg m2 = RandomMsg(rng, KeyLen(c + 1), Uniform(rng, 0, 5000));
    ASSERT_TRUE(d1.Init(m1.key));
    ASSERT_TRUE(d2.Init(m2.key));
    ASSERT_TRUE(d1.Start(m1, m1.nonce, Place(), "stream 1"));
    ASSERT_TRUE(d2.Start(m2, m2.nonce, Place(), "stream 2"));
    ASSERT_TRUE(d1.AadPiece(m1, m1.aad.data(), m1.aad.size(), rng, "stream 1"));
    ASSERT_TRUE(d2.AadPiece(m2, m2.aad.data(), m2.aad.size(), rng, "stream 2"));
    size_t o1 = 0, o2 = 0;
    while (o1 < m1.pt.size() || o2 < m2.pt.size()) {
      size_t k1 = std::min(m1.pt.size() - o1, Uniform(rng, 0, 700));
      size_t k2 = std::min(m2.pt.size() - o2, Uniform(rng, 0, 700));
      ASSERT_TRUE(d1.DataPiece(m1, m1.pt.data() + o1, m1.ct.data() + o1, k1, o1, rng, true, "stream 1"));
      ASSERT_TRUE(d2.DataPiece(m2, m2.pt.data() + o2, m2.ct.data() + o2, k2, o2, rng, true, "stream 2"));
      o1 += k1;
      o2 += k2;
    }
    uint8_t t1[16], t2[16];
    ASSERT_EQ(c1.FinishSeal(t1, m1.tag_len), 0);
    ASSERT_EQ(c2.FinishSeal(t2, m2.tag_len), 0);
    EXPECT_EQ(Hex(t1, m1.tag_len), Hex(m1.tag.data(), m1.tag_len)) << m1.Describe();
    EXPECT_EQ(Hex(t2, m2.tag_len), Hex(m2.tag.data(), m2.tag_len)) << m2.Describe();
  }
}

// ---------------------------------------------------------------------------
// Tampering: open refuses, zeroes out[0..len), finish_open refuses

TEST_P(Aead, Tampering) {
  auto rng = TestRng(0x5030);
  Buffers buf(4096 + 64);
  AeadCtx ctx(a());
  Driver d(a(), ctx, buf);
  struct Variant {
    std::string what;
    Bytes nonce, aad, ct;
    Block16 tag;
    size_t tag_len;
  };
  for (size_t c = 0; c < Cases(150); c++) {
    Msg m = RandomMsg(rng, KeyLen(c), Uniform(rng, 0, 3) ? Uniform(rng, 1, 2000) : 0);
    ASSERT_TRUE(d.Init(m.key));
    ASSERT_TRUE(d.Open(m, Place::Random(rng)));  // untouched, it opens
    const Variant base{"", m.nonce, m.aad, m.ct, m.tag, m.tag_len};
    auto flip = [&](Bytes &b) { b[Uniform(rng, 0, b.size() - 1)] ^= static_cast<uint8_t>(1u << Uniform(rng, 0, 7)); };
    std::vector<Variant> vs;
    Variant v = base;
    if (!m.pt.empty()) {
      v = base, v.what = "the ciphertext with one bit flipped", flip(v.ct), vs.push_back(v);
      v = base, v.what = "the ciphertext one byte short", v.ct.pop_back(), vs.push_back(v);
    }
    v = base, v.what = "the ciphertext one byte longer", v.ct.push_back(static_cast<uint8_t>(rng())),
    vs.push_back(v);
    if (!m.aad.empty()) {
      v = base, v.what = "the AAD with one bit flipped", flip(v.aad), vs.push_back(v);
      v = base, v.what = "the AAD one byte short", v.aad.pop_back(), vs.push_back(v);
    }
    v = base, v.what = "the AAD one byte longer", v.aad.push_back(static_cast<uint8_t>(rng())),
    vs.push_back(v);
    v = base, v.what = "the nonce with one bit flipped", flip(v.nonce), vs.push_back(v);
    if (m.nonce.size() > 1) v = base, v.what = "the nonce one byte short", v.nonce.pop_back(), vs.push_back(v);
    if (m.nonce.size() < kMaxNonce) {
      v = base, v.what = "the nonce one byte longer", v.nonce.push_back(0), vs.push_back(v);
    }
    v = base, v.what = "the tag with one bit flipped";
    v.tag[Uniform(rng, 0, m.tag_len - 1)] ^= static_cast<uint8_t>(1u << Uniform(rng, 0, 7));
    vs.push_back(v);
    v = base, v.what = "an all-zero tag", v.tag.fill(0);
    if (std::memcmp(v.tag.data(), m.tag.data(), m.tag_len) != 0) vs.push_back(v);
    if (m.tag_len < a().tag_max) {
      // A longer tag whose first tag_len bytes are right and the rest wrong.
      v = base, v.tag_len = Uniform(rng, m.tag_len + 1, a().tag_max);
      v.what = "a " + std::to_string(v.tag_len) + "-byte tag (sealed with " +
               std::to_string(m.tag_len) + ") wrong after byte " + std::to_string(m.tag_len);
      v.tag[Uniform(rng, m.tag_len, v.tag_len - 1)] ^= 0x01;
      vs.push_back(v);
    }
    if (m.tag_len > a().tag_min) {
      // A shorter prefix of the right tag is a right tag (GCM truncation).
      Msg s = m;
      s.tag_len = Uniform(rng, a().tag_min, m.tag_len - 1);
      ASSERT_TRUE(d.Open(s, Place::Random(rng))) << "a right tag cut to " << s.tag_len << " bytes";
    }
    for (const Variant &t : vs) {
      ASSERT_TRUE(d.OpenMustFail(m, t.nonce, t.aad, t.ct, t.tag.data(), t.tag_len,
                                 Place::Random(rng, Uniform(rng, 0, 3) == 0), t.what));
      ASSERT_TRUE(d.StreamOpen(m, t.nonce, t.aad, t.ct, t.tag.data(), t.tag_len, rng, false, t.what));
    }
    ASSERT_TRUE(d.Open(m, Place::Random(rng)));  // and the context still opens the real one
  }
}

// ---------------------------------------------------------------------------
// Lengths out of range

bool AllBytes(const uint8_t *p, size_t n, uint8_t v) {
  for (size_t i = 0; i < n; i++)
    if (p[i] != v) return false;
  return true;
}

TEST_P(Aead, LengthsOutOfRange) {
  auto rng = TestRng(0x5031);
  Buffers buf(4096);
  AeadCtx ctx(a());
  Driver d(a(), ctx, buf);
  Msg m = RandomMsg(rng, KeyLen(0), 100, 12, 20);
  ASSERT_TRUE(d.Init(m.key));
  const size_t n = m.pt.size();

  struct Lens {
    std::string what;
    size_t nonce_len, tag_len;
    bool null_nonce;
  };
  std::vector<Lens> cases;
  for (size_t t : {size_t{0}, a().tag_min - 1, a().tag_max + 1, size_t{32}, size_t{4096}, SIZE_MAX}) {
    if (t >= a().tag_min && t <= a().tag_max) continue;
    if (std::any_of(cases.begin(), cases.end(), [&](const Lens &l) { return l.tag_len == t; })) continue;
    cases.push_back({"tag_len " + std::to_string(t), 12, t, false});
  }
  cases.push_back({"nonce_len 0", 0, 16, false});
  cases.push_back({"nonce_len 0, nonce NULL", 0, 16, true});
  if (a().nonce_min > 1) cases.push_back({"nonce_len below nonce_min", a().nonce_min - 1, 16, false});
  if (a().nonce_max < kMaxNonce) cases.push_back({"nonce_len above nonce_max", a().nonce_max + 1, 16, false});

  for (const Lens &l : cases) {
    SCOPED_TRACE(std::string(a().name) + ": " + l.what + ", " + m.Describe());
    Bytes nonce_bytes = RandomBytes(rng, std::max<size_t>(l.nonce_len, 1));
    nonce_bytes.resize(std::max<size_t>(l.nonce_len, 12));
    std::memcpy(nonce_bytes.data(), m.nonce.data(), 12);
    const uint8_t *nonce = l.null_nonce ? nullptr : buf.Nonce(nonce_bytes, false);
    const uint8_t *aad = buf.Aad(m.aad.data(), m.aad.size(), true);
    const uint8_t *in = buf.In(m.pt.data(), n, true);
    Around ao, at;
    // seal: -1, nothing written (out and the tag buffer keep their pattern).
    uint8_t *out = buf.Out(n, true, &ao);
    uint8_t *tag = buf.TagOut(64, false, &at);
    EXPECT_EQ(ctx.Seal(nonce, l.nonce_len, aad, m.aad.size(), in, n, out, tag, l.tag_len), -1);
    EXPECT_TRUE(AllBytes(out, n, kPattern)) << "seal wrote to out";
    EXPECT_TRUE(AllBytes(tag, 64, kPattern) && Buffers::Stray(at, "tag").empty()) << "seal wrote the tag";
    EXPECT_EQ(Buffers::Stray(ao, "out"), "");
    // open: -1, out[0..len) zero.
    out = buf.Out(n, true, &ao);
    const uint8_t *tag_in = buf.TagIn(m.tag.data(), 16, false);
    EXPECT_EQ(ctx.Open(nonce, l.nonce_len, aad, m.aad.size(), m.ct.data(), n, out, tag_in, l.tag_len), -1);
    EXPECT_TRUE(AllBytes(out, n, 0)) << "open returned -1 without zeroing out[0..len)";
    EXPECT_EQ(Buffers::Stray(ao, "out"), "");
    if (l.nonce_len != 12) {
      // start refuses the nonce length.
      EXPECT_EQ(ctx.Start(nonce, l.nonce_len), -1);
    } else {
      // finish_seal and finish_open refuse the tag length; finish_seal writes nothing.
      ASSERT_EQ(ctx.Start(buf.Nonce(m.nonce, true), 12), 0);
      ASSERT_EQ(ctx.Aad(aad, m.aad.size()), 0);
      out = buf.Out(n, true, &ao);
      ASSERT_EQ(ctx.Encrypt(in, n, out), 0);
      tag = buf.TagOut(64, false, &at);
      EXPECT_EQ(ctx.FinishSeal(tag, l.tag_len), -1);
      EXPECT_TRUE(AllBytes(tag, 64, kPattern) && Buffers::Stray(at, "tag").empty())
          << "finish_seal wrote the tag";
      ASSERT_EQ(ctx.Start(buf.Nonce(m.nonce, true), 12), 0);
      ASSERT_EQ(ctx.Aad(aad, m.aad.size()), 0);
      out = buf.Out(n, true, &ao);
      ASSERT_EQ(ctx.Decrypt(buf.In(m.ct.data(), n, true), n, out), 0);
      EXPECT_EQ(ctx.FinishOpen(buf.TagIn(m.tag.data(), 16, false), l.tag_len), -1);
    }
    ASSERT_EQ(ctx.problems(), 0u);
  }

  // GCM's limits: a message over 2^36 - 32 bytes or AAD over 2^61 - 1 bytes.
  // Nothing may be read past the one page each pointer has, and nothing written.
  {
    SCOPED_TRACE(std::string(a().name) + ": message of 2^36 - 31 bytes");
    Around ao, at;
    uint8_t *in = buf.In(m.pt.data(), n, false);
    uint8_t *out = buf.Out(4096, false, &ao);
    uint8_t *tag = buf.TagOut(64, false, &at);
    const uint8_t *nonce = buf.Nonce(m.nonce, true), *aad = buf.Aad(m.aad.data(), m.aad.size(), true);
    EXPECT_EQ(ctx.Seal(nonce, 12, aad, m.aad.size(), in, kGcmMaxLen + 1, out, tag, 16), -1);
    EXPECT_TRUE(AllBytes(out, 4096, kPattern) && AllBytes(tag, 64, kPattern)) << "seal wrote";
    const uint8_t *tag_in = buf.TagIn(m.tag.data(), 16, false);
    EXPECT_EQ(ctx.Open(nonce, 12, aad, m.aad.size(), in, kGcmMaxLen + 1, out, tag_in, 16), -1);
    EXPECT_TRUE(AllBytes(out, 4096, kPattern)) << "open over the mode's limit must write nothing";
  }
  {
    SCOPED_TRACE(std::string(a().name) + ": AAD of 2^61 bytes");
    Around ao, at;
    const uint8_t *nonce = buf.Nonce(m.nonce, true), *aad = buf.Aad(m.aad.data(), m.aad.size(), false);
    const uint8_t *in = buf.In(m.pt.data(), n, true);
    uint8_t *out = buf.Out(n, true, &ao);
    uint8_t *tag = buf.TagOut(64, false, &at);
    EXPECT_EQ(ctx.Seal(nonce, 12, aad, kGcmMaxAad + 1, in, n, out, tag, 16), -1);
    EXPECT_TRUE(AllBytes(out, n, kPattern) && AllBytes(tag, 64, kPattern)) << "seal wrote";
    out = buf.Out(n, true, &ao);
    EXPECT_EQ(ctx.Open(nonce, 12, aad, kGcmMaxAad + 1, m.ct.data(), n, out, buf.TagIn(m.tag.data(), 16, false), 16), -1);
    // Over the mode's limit open writes nothing, or zeroes out: either is safe.
    EXPECT_TRUE(AllBytes(out, n, kPattern) || AllBytes(out, n, 0)) << "open left something else in out";
  }
  ASSERT_EQ(ctx.problems(), 0u);
  // The context still works.
  ASSERT_TRUE(d.Seal(m, Place::Random(rng)));
  ASSERT_TRUE(d.Open(m, Place::Random(rng)));
}

// ---------------------------------------------------------------------------
// The inc32 counter wraps inside a message

TEST_P(Aead, Inc32WrapInsideMessage) {
  auto rng = TestRng(0x5040);
  // Low 32 bits of J0: the first data block uses J0 + 1, so 0xffffffff wraps at
  // the first block, 0xfffffffe at the second, ...; 0xffffff00 + x and
  // 0xfffffe80 wrap after a FACE window's worth of blocks.
  std::vector<uint32_t> lows = {0xffffffffu, 0xfffffffeu, 0xfffffffdu, 0xfffffff8u, 0xfffffff0u,
                                0xffffffe1u, static_cast<uint32_t>(0xffffff00u | (rng() & 0xff)),
                                0xfffffe80u};
  for (size_t i = 0; i < Cases(4); i++) lows.push_back(0xfffff000u + static_cast<uint32_t>(rng() & 0xfff));
  const size_t nonce_lens[] = {16, 17, 32, 60, 64, 100, 128, 20};
  Buffers buf(4200 * 16);
  AeadCtx ctx(a());
  Driver d(a(), ctx, buf);
  for (size_t i = 0; i < lows.size(); i++) {
    const uint32_t low = lows[i];
    Msg m;
    m.key = RandomBytes(rng, KeyLen(i));
    Gf h = HashKey(m.key);
    Bytes t = RandomBytes(rng, 16);
    Block16 target;
    std::copy(t.begin(), t.end(), target.begin());
    if (i % 2) target[11] = 0xff;  // a carry out of bytes 12..15 would show
    for (int b = 0; b < 4; b++) target[static_cast<size_t>(12 + b)] = static_cast<uint8_t>(low >> (24 - 8 * b));
    m.nonce = NonceWithJ0(h, target, nonce_lens[i % 8], rng);
    ASSERT_EQ(Hex(GcmJ0(h, m.nonce).data(), 16), Hex(target.data(), 16)) << "harness: NonceWithJ0";
    const size_t before = static_cast<uint32_t>(0u - (low + 1u));  // blocks before the wrap
    const size_t len = 16 * (before + Uniform(rng, 1, 40)) + Uniform(rng, 0, 15);
    m.aad = PoolBytes(rng, Uniform(rng, 0, 40));
    m.pt = PoolBytes(rng, len);
    m.tag_len = RandomTagLen(rng);
    m.Seal();
    SCOPED_TRACE("J0 " + Hex(target.data(), 16) + ": the counter wraps at data block " +
                 std::to_string(before) + " of " + std::to_string((len + 15) / 16));
    ASSERT_TRUE(d.SealOpen(m, Place::Random(rng), Place::Random(rng)));
    // Streaming, with a piece boundary near the wrap.
    size_t a1 = 16 * before >= 17 ? 16 * before - Uniform(rng, 0, 17) : Uniform(rng, 0, 16 * before);
    size_t a2 = std::min(len - a1, Uniform(rng, 1, 40));
    ASSERT_TRUE(d.StreamSeal(m, rng, {m.aad.size()}, {a1, a2, len - a1 - a2}));
    ASSERT_TRUE(d.StreamSeal(m, rng));
    ASSERT_TRUE(d.StreamOpen(m, rng));
  }
}

// ---------------------------------------------------------------------------
// One context, many messages; re-keying; wipe

// TLS 1.3-style nonces (a static IV XOR a sequence number in the low 8 bytes,
// crossing a change of byte 10), random lengths, now and then another nonce
// length, a stream or a refused open: one init for all of them.
TEST_P(Aead, ManyMessagesOneContext) {
  auto rng = TestRng(0x5050);
  Buffers buf(12 * 1024 + 64);
  for (size_t k = 0; k < key_lens_.size(); k++) {
    AeadCtx ctx(a());
    Driver d(a(), ctx, buf);
    Bytes key = RandomBytes(rng, key_lens_[k]);
    ASSERT_TRUE(d.Init(key));
    Bytes iv = RandomBytes(rng, 12);
    uint64_t seq = 256 * Uniform(rng, 1, 1000) - Uniform(rng, 1, 30);
    for (size_t c = 0; c < Cases(40); c++, seq++) {
      Msg m;
      m.key = key;
      if (c % 8 == 7) {
        m.nonce = RandomBytes(rng, RandomNonceLen(rng));
      } else {
        m.nonce = iv;
        for (size_t b = 0; b < 8; b++) m.nonce[4 + b] ^= static_cast<uint8_t>(seq >> (56 - 8 * b));
      }
      m.aad = PoolBytes(rng, Uniform(rng, 0, 1) ? 5 : RandomAadLen(rng));
      m.pt = PoolBytes(rng, RandomMsgLen(rng));
      m.tag_len = c % 3 ? 16 : RandomTagLen(rng);
      m.Seal();
      SCOPED_TRACE("message " + std::to_string(c) + " on one context");
      switch (c % 5) {
        case 3:
          ASSERT_TRUE(d.StreamSeal(m, rng));
          ASSERT_TRUE(d.Open(m, Place::Random(rng)));
          break;
        case 4: {
          ASSERT_TRUE(d.Seal(m, Place::Random(rng)));
          Block16 bad = m.tag;
          bad[m.tag_len - 1] ^= 0x40;
          ASSERT_TRUE(d.OpenMustFail(m, m.nonce, m.aad, m.ct, bad.data(), m.tag_len,
                                     Place::Random(rng), "a wrong tag"));
          ASSERT_TRUE(d.StreamOpen(m, rng));
          break;
        }
        default:
          ASSERT_TRUE(d.Seal(m, Place::Random(rng)));
          ASSERT_TRUE(d.Open(m, Place::Random(rng)));
      }
    }
  }
}

// init on a used context, without wipe, forgets the old key: the same nonce
// and messages under the new key give OpenSSL's results for the new key, also
// after long messages (FACE tables filled) and an abandoned stream.
TEST_P(Aead, RekeyWithoutWipe) {
  auto rng = TestRng(0x5051);
  Buffers buf(3 * 4096 + 512);
  AeadCtx ctx(a());
  Driver d(a(), ctx, buf);
  for (size_t c = 0; c < Cases(5); c++) {
    Bytes nonce = RandomBytes(rng, c % 3 == 2 ? 16 : 12);
    Bytes aad = PoolBytes(rng, 20);
    Bytes long_pt = PoolBytes(rng, 2 * 4096 + Uniform(rng, 0, 4096));
    Bytes short_pt = PoolBytes(rng, Uniform(rng, 1, 100));
    for (size_t round = 0; round < 3; round++) {
      Bytes key = RandomBytes(rng, KeyLen(c + round));
      ASSERT_TRUE(d.Init(key));
      SCOPED_TRACE("key " + std::to_string(round) + " of 3 on one context, no wipe between");
      for (const Bytes *pt : {&long_pt, &short_pt}) {
        Msg m;
        m.key = key, m.nonce = nonce, m.aad = aad, m.pt = *pt, m.tag_len = RandomTagLen(rng);
        m.Seal();
        ASSERT_TRUE(d.Seal(m, Place::Random(rng)));
        ASSERT_TRUE(d.Open(m, Place::Random(rng)));
      }
      // A stream left half done before the next init.
      Msg m;
      m.key = key, m.nonce = nonce, m.aad = aad, m.pt = long_pt, m.tag_len = 16;
      m.Seal();
      ASSERT_TRUE(d.Start(m, nonce, Place(), "an abandoned stream"));
      ASSERT_TRUE(d.AadPiece(m, aad.data(), aad.size(), rng, "an abandoned stream"));
      ASSERT_TRUE(d.DataPiece(m, m.pt.data(), m.ct.data(), Uniform(rng, 1, 4096 + 17), 0, rng, true,
                              "an abandoned stream"));
    }
  }
}

// After wipe every byte of the context is zero, whatever it was doing; a wiped
// context can be initialised and used again.
TEST_P(Aead, WipeZeroesContext) {
  auto rng = TestRng(0x5052);
  Buffers buf(3 * 4096 + 512);
  const char *scenarios[] = {"init", "seal of 3 windows", "half a streaming seal",
                             "half a streaming open", "a refused open", "a refused init"};
  for (size_t s = 0; s < 6; s++) {
    for (size_t i = 0; i < key_lens_.size(); i++) {
      AeadCtx ctx(a());
      Driver d(a(), ctx, buf);
      Msg m = RandomMsg(rng, KeyLen(i), 3 * 4096 + Uniform(rng, 0, 300), s == 5 ? 60 : 0);
      ASSERT_TRUE(d.Init(m.key));
      switch (s) {
        case 1: ASSERT_TRUE(d.Seal(m, Place::Random(rng))); break;
        case 2:
        case 3:
          ASSERT_TRUE(d.Start(m, m.nonce, Place(), scenarios[s]));
          ASSERT_TRUE(d.AadPiece(m, m.aad.data(), m.aad.size(), rng, scenarios[s]));
          ASSERT_TRUE(d.DataPiece(m, s == 2 ? m.pt.data() : m.ct.data(),
                                  s == 2 ? m.ct.data() : m.pt.data(), 5000, 0, rng, s == 2,
                                  scenarios[s]));
          break;
        case 4: {
          Block16 bad = m.tag;
          bad[0] ^= 1;
          ASSERT_TRUE(d.OpenMustFail(m, m.nonce, m.aad, m.ct, bad.data(), m.tag_len,
                                     Place::Random(rng), "a wrong tag"));
          break;
        }
        case 5:
          ASSERT_TRUE(d.Seal(m, Place::Random(rng)));
          ASSERT_EQ(ctx.Init(buf.Key(m.key, true), 17), -1);
          break;
        default: break;
      }
      ctx.Wipe();
      ASSERT_EQ(ctx.problems(), 0u);
      size_t nonzero = 0, first = 0;
      for (size_t j = 0; j < ctx.size(); j++) {
        if (ctx.ctx()[j] != 0 && nonzero++ == 0) first = j;
      }
      EXPECT_EQ(nonzero, 0u) << a().name << ": after " << scenarios[s] << " and wipe (AES-"
                             << KeyLen(i) * 8 << "), " << nonzero << " of " << ctx.size()
                             << " context bytes are not zero, the first at offset " << first;
      Msg m2 = RandomMsg(rng, KeyLen(i + 1), Uniform(rng, 0, 5000));
      ASSERT_TRUE(d.SealOpen(m2, Place::Random(rng), Place::Random(rng))) << "after wipe";
    }
  }
}

// init must not depend on what the context held before.
TEST_P(Aead, InitOnDirtyContext) {
  auto rng = TestRng(0x5053);
  Buffers buf(3 * 4096 + 512);
  for (int fill : {0x00, 0xff, 0xa5, -1}) {
    for (size_t i = 0; i < key_lens_.size(); i++) {
      AeadCtx ctx(a(), fill < 0 ? 0 : fill);
      if (fill < 0) {
        for (size_t j = 0; j < ctx.size(); j++) ctx.ctx()[j] = static_cast<uint8_t>(rng());
      }
      ASSERT_EQ(reinterpret_cast<uintptr_t>(ctx.ctx()) % 64, 0u);
      Driver d(a(), ctx, buf);
      Msg m = RandomMsg(rng, KeyLen(i), Uniform(rng, 0, 3 * 4096));
      ASSERT_TRUE(d.SealOpen(m, Place::Random(rng), Place::Random(rng))) << "fill " << fill;
      ASSERT_TRUE(d.StreamSeal(m, rng)) << "fill " << fill;
    }
  }
}

// ---------------------------------------------------------------------------
// Guard pages around every buffer; NULL where the length is 0

TEST_P(Aead, GuardPagesEveryBuffer) {
  auto rng = TestRng(0x5060);
  const size_t lens[] = {0,  1,  2,  15, 16,  17,  31,  32,  33,  47,   48,   49,  63,
                         64, 65, 95, 96, 97, 127, 128, 129, 255, 256, 257, 4095, 4096, 4097};
  const size_t nonce_lens[] = {1, 12, 13, 16, 17, 128, 12, 12, 11};
  const size_t n_lens = sizeof lens / sizeof lens[0];
  Buffers buf(4200, 4200);
  AeadCtx ctx(a());
  Driver d(a(), ctx, buf);
  for (size_t i = 0; i < n_lens; i++) {
    Msg m = RandomMsg(rng, KeyLen(i), lens[i], nonce_lens[i % 9], lens[(7 * i + 3) % n_lens]);
    ASSERT_TRUE(d.SealOpen(m, Place::AllAtEnd(), Place::AllAtEnd()));
    ASSERT_TRUE(d.SealOpen(m, Place::AllAtStart(), Place::AllAtStart()));
    Place ip = Place::AllAtEnd();
    ip.in_place = true;
    ASSERT_TRUE(d.SealOpen(m, ip, ip));
    Block16 bad = m.tag;
    bad[m.tag_len / 2] ^= 0x10;
    ASSERT_TRUE(d.OpenMustFail(m, m.nonce, m.aad, m.ct, bad.data(), m.tag_len, Place::AllAtEnd(),
                               "a wrong tag"));
    ASSERT_TRUE(d.OpenMustFail(m, m.nonce, m.aad, m.ct, bad.data(), m.tag_len, ip, "a wrong tag"));
    ASSERT_TRUE(d.StreamSeal(m, rng));
    ASSERT_TRUE(d.StreamOpen(m, rng));
  }
}

TEST_P(Aead, NullPointersWhereLengthIsZero) {
  auto rng = TestRng(0x5061);
  Buffers buf(4096);
  AeadCtx ctx(a());
  Driver d(a(), ctx, buf);
  for (size_t i = 0; i < key_lens_.size(); i++) {
    for (int shape = 0; shape < 3; shape++) {
      // 0: no AAD, no message; 1: AAD only; 2: message only.
      Msg m = RandomMsg(rng, KeyLen(i), shape == 2 ? 50 : 0, 12, shape == 1 ? 30 : 0);
      SCOPED_TRACE(std::string(a().name) + ": NULL for every empty buffer, " + m.Describe());
      ASSERT_TRUE(d.Init(m.key));
      const uint8_t *nonce = buf.Nonce(m.nonce, true);
      const uint8_t *aad = m.aad.empty() ? nullptr : buf.Aad(m.aad.data(), m.aad.size(), true);
      const uint8_t *in = m.pt.empty() ? nullptr : buf.In(m.pt.data(), m.pt.size(), true);
      Around ao, at;
      uint8_t *out = m.pt.empty() ? nullptr : buf.Out(m.pt.size(), true, &ao);
      uint8_t *tag = buf.TagOut(m.tag_len, true, &at);
      ASSERT_EQ(ctx.Seal(nonce, 12, aad, m.aad.size(), in, m.pt.size(), out, tag, m.tag_len), 0);
      EXPECT_EQ(Hex(tag, m.tag_len), Hex(m.tag.data(), m.tag_len));
      if (out) {
        EXPECT_EQ(Hex(out, m.pt.size()), Hex(m.ct.data(), m.ct.size()));
      }
      const uint8_t *ct = m.pt.empty() ? nullptr : buf.In(m.ct.data(), m.ct.size(), true);
      out = m.pt.empty() ? nullptr : buf.Out(m.pt.size(), true, &ao);
      const uint8_t *tag_in = buf.TagIn(m.tag.data(), m.tag_len, true);
      ASSERT_EQ(ctx.Open(nonce, 12, aad, m.aad.size(), ct, m.pt.size(), out, tag_in, m.tag_len), 0);
      if (out) {
        EXPECT_EQ(Hex(out, m.pt.size()), Hex(m.pt.data(), m.pt.size()));
      }
      Block16 bad = m.tag;
      bad[1] ^= 0x04;
      out = m.pt.empty() ? nullptr : buf.Out(m.pt.size(), true, &ao);
      EXPECT_EQ(ctx.Open(nonce, 12, aad, m.aad.size(), ct, m.pt.size(), out,
                         buf.TagIn(bad.data(), m.tag_len, true), m.tag_len),
                -1);
      if (out) {
        EXPECT_TRUE(AllBytes(out, m.pt.size(), 0));
      }
      // Streaming, with empty pieces passing NULL.
      ASSERT_EQ(ctx.Start(nonce, 12), 0);
      ASSERT_EQ(ctx.Aad(nullptr, 0), 0);
      if (aad) {
        ASSERT_EQ(ctx.Aad(aad, m.aad.size()), 0);
      }
      ASSERT_EQ(ctx.Aad(nullptr, 0), 0);
      ASSERT_EQ(ctx.Encrypt(nullptr, 0, nullptr), 0);
      if (in) {
        out = buf.Out(m.pt.size(), true, &ao);
        ASSERT_EQ(ctx.Encrypt(buf.In(m.pt.data(), m.pt.size(), true), m.pt.size(), out), 0);
        EXPECT_EQ(Hex(out, m.pt.size()), Hex(m.ct.data(), m.ct.size()));
      }
      ASSERT_EQ(ctx.Encrypt(nullptr, 0, nullptr), 0);
      tag = buf.TagOut(m.tag_len, true, &at);
      ASSERT_EQ(ctx.FinishSeal(tag, m.tag_len), 0);
      EXPECT_EQ(Hex(tag, m.tag_len), Hex(m.tag.data(), m.tag_len));
      ASSERT_EQ(ctx.Start(nonce, 12), 0);
      if (aad) {
        ASSERT_EQ(ctx.Aad(aad, m.aad.size()), 0);
      }
      ASSERT_EQ(ctx.Decrypt(nullptr, 0, nullptr), 0);
      if (in) {
        out = buf.Out(m.pt.size(), true, &ao);
        ASSERT_EQ(ctx.Decrypt(buf.In(m.ct.data(), m.ct.size(), true), m.pt.size(), out), 0);
        EXPECT_EQ(Hex(out, m.pt.size()), Hex(m.pt.data(), m.pt.size()));
      }
      ASSERT_EQ(ctx.Decrypt(nullptr, 0, nullptr), 0);
      EXPECT_EQ(ctx.FinishOpen(buf.TagIn(m.tag.data(), m.tag_len, true), m.tag_len), 0);
      ASSERT_EQ(ctx.problems(), 0u);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Aeads, AeadEntry, ::testing::Range<size_t>(0, aesgen_aead_count),
                         AeadParamName);
INSTANTIATE_TEST_SUITE_P(Aeads, Aead, ::testing::Range<size_t>(0, aesgen_aead_count),
                         AeadParamName);
// A set without AEAD kernels instantiates nothing (AeadRegistry still runs).
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(AeadEntry);
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(Aead);

}  // namespace

#endif  // AESGEN_HAVE_AEAD
