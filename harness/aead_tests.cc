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
// of a mode other than GCM, GCM-SIV and OTR is skipped, naming the mode, until
// its suite exists.  The shared tests (fixture Aead) run every kernel of those
// modes, each against its reference, leaving out what a mode has not
// (streaming for GCM-SIV and OTR); the tests of one mode alone are fixtures of
// their own instantiated over that mode's kernels only: AeadGcm (GCM's vectors,
// tag lengths, streaming, lengths, inc32), AeadGcmSiv (GcmSiv*: 12-byte nonces,
// 16-byte tags, RFC 8452's vectors, its counter) and AeadOtr (Otr*: every
// kernel whose mode starts with "otr": "otr" = v3.1 with parallel AD, "otr-v2",
// and the serial-AD "otr-s" and "otr-v2-s"; another "otr..." mode fails).
//
// The AEAD suites are compiled only where the set's header says it has the
// AEAD contract (`#define AESGEN_HAVE_AEAD 1`, with `aesgen_aead`,
// `aesgen_aeads[]`, `aesgen_aead_count` and `aesgen_best_aead()`); against an
// older header this file contributes only the trampoline self-test.
//
// The references below are in aead_reference.h (shared with the fuzz target
// harness/fuzz/fuzz_aead.cc); their self-tests are here.
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
// GCM-SIV reference (RFC 8452): AES from OpenSSL's EVP AES-ECB, POLYVAL written
// here (bit by bit from its definition, and with per-key nibble tables for
// speed); the per-nonce key derivation from LE32(i) || nonce; POLYVAL over the
// padded AAD, the padded plaintext and the LE64 bit lengths; the nonce XORed
// in, the top bit of byte 15 cleared, encrypted under the derived key; CTR from
// the tag with byte 15 |= 0x80 and a little-endian 32-bit counter in bytes 0..3
// that wraps in them.  Self-tests hold it against RFC 8452 Appendix C vectors
// typed in here (C.1, C.2 and both C.3 counter-wrap ones, with the derived keys
// and POLYVAL results), Appendix A's POLYVAL example and its identity with
// GHASH, and three longer messages from another implementation.  For the
// counter wrap, POLYVAL being linear in the plaintext blocks lets one block be
// solved for so that the tag, and with it the first counter, is chosen: a tag
// starting with LE32(2^32 - k) wraps the counter at data block k.
//
// AES-OTR reference (specs/aes-otr.md, v3.1 and v2, AD parallel or serial,
// nonces of 1..15 bytes, tags of 1..16): AES from OpenSSL's EVP AES-ECB, the
// rest written here from the specification (Format, doubling and the small
// multiples, the AD digest, the masks, pairs in two batches, the two tail
// cases, the final offsets).  Self-tests hold it against every Appendix A
// vector with the intermediates given, the designers' b = 16 example, longer
// messages and other nonce and tag lengths from the Python model
// (generator/aesgen/model/otr.py; tests/test_model_otr.py recomputes that
// table), the arithmetic (a 128-bit shift, the carry-less batch shortcut) and
// properties (open inverts seal for every length class, the b = 16 tail is a
// swapped pair, p and s with empty AD).  The tag length is bound into Format,
// so an OTR tag is not a prefix of a longer one; a tampered input whose tag of
// a byte or two happens to be right for it is not counted as accepted.
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
#include <utility>
#include <vector>

#include "abi_check.h"
#include "aesgen.h"
#include "harness_util.h"
#include "aead_reference.h"

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


// One message: inputs, and the reference's ciphertext and full tag: OpenSSL's
// AES-GCM, (siv) the GCM-SIV reference or (otr) the OTR reference above.  An
// OTR tag depends on tag_len (it is in Format): tag is the block whose first
// tag_len bytes are the tag, and changing tag_len needs another Seal().
struct Msg {
  Bytes key, nonce, aad, pt;
  size_t tag_len = 16;
  bool siv = false;  // AES-GCM-SIV (RFC 8452), not AES-GCM
  bool otr = false;  // AES-OTR (specs/aes-otr.md) of otr_variant, not AES-GCM
  OtrVariant otr_variant;
  Bytes ct;
  Block16 tag{};

  void Seal() {
    ct.assign(pt.size(), 0);
    if (siv) {
      SivSeal(key, nonce, aad.data(), aad.size(), pt.data(), pt.size(), ct.data(), tag.data());
    } else if (otr) {
      OtrCrypt(key, otr_variant, nonce.data(), nonce.size(), tag_len, aad.data(), aad.size(),
               pt.data(), pt.size(), ct.data(), false, tag.data());
    } else {
      OracleSeal(key, nonce, aad.data(), aad.size(), pt.data(), pt.size(), ct.data(), tag.data());
    }
  }
  // Whose ciphertext and tag these are, for failure messages.
  const char *Reference() const {
    return siv ? "the GCM-SIV reference's" : otr ? "the OTR reference's" : "OpenSSL's";
  }
  std::string Describe() const {
    std::ostringstream os;
    os << (siv ? "AES-GCM-SIV, " : "") << (otr ? "AES-OTR " + otr_variant.Name() + ", " : "")
       << "AES-" << key.size() * 8 << " key "
       << Hex(key.data(), key.size()) << ", nonce ("
       << nonce.size() << " bytes) " << HexShort(nonce) << ", aad " << aad.size()
       << " bytes, message " << pt.size() << " bytes, tag_len " << tag_len;
    return os.str();
  }
};

// The tag block the OTR reference expects for these inputs under m's key and
// variant (what a correct open compares with), or false when the nonce or tag
// length is one OTR refuses.
bool OtrExpectedTag(const Msg &m, const Bytes &nonce, const Bytes &aad, const Bytes &ct,
                    size_t tag_len, Block16 *tag) {
  if (!m.otr || !OtrLengthsOk(nonce.size(), tag_len)) return false;
  Bytes pt(ct.size());
  OtrCrypt(m.key, m.otr_variant, nonce.data(), nonce.size(), tag_len, aad.data(), aad.size(),
           ct.data(), ct.size(), pt.data(), true, tag->data());
  return true;
}

// A tampered OTR input that opens all the same: its tag (1 or 2 bytes make it
// likely) is the one the reference expects for what it became.
bool OtrForgeryByChance(const Msg &m, const Bytes &nonce, const Bytes &aad, const Bytes &ct,
                        const uint8_t *tag, size_t tag_len) {
  Block16 want;
  return OtrExpectedTag(m, nonce, aad, ct, tag_len, &want) &&
         std::memcmp(want.data(), tag, tag_len) == 0;
}

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
// RFC 8452 Appendix C vectors, typed in: from C.1 (AES-128-GCM-SIV), C.2
// (AES-256-GCM-SIV) and both of C.3 (their tags start ffffffff: the counter wraps
// to 0 at the second data block).  result is the ciphertext followed by the tag;
// auth_key, enc_key and polyval (S_s) are the RFC's intermediate values.

struct SivVector {
  const char *name, *key, *nonce, *aad, *pt, *result, *auth_key, *enc_key, *polyval;
};

const SivVector kSivVectors[] = {
    {"C.1 #1 (AES-128, AAD 0, message 0)", "01000000000000000000000000000000",
     "030000000000000000000000", "", "", "dc20e2d83f25705bb49e439eca56de25",
     "d9b360279694941ac5dbc6987ada7377", "4004a0dcd862f2a57360219d2d44ef6c",
     "00000000000000000000000000000000"},
    {"C.1 #2 (AES-128, AAD 0, message 8)", "01000000000000000000000000000000",
     "030000000000000000000000", "", "0100000000000000",
     "b5d839330ac7b786578782fff6013b815b287c22493a364c", "d9b360279694941ac5dbc6987ada7377",
     "4004a0dcd862f2a57360219d2d44ef6c", "eb93b7740962c5e49d2a90a7dc5cec74"},
    {"C.1 #3 (AES-128, AAD 0, message 12)", "01000000000000000000000000000000",
     "030000000000000000000000", "", "010000000000000000000000",
     "7323ea61d05932260047d942a4978db357391a0bc4fdec8b0d106639", "d9b360279694941ac5dbc6987ada7377",
     "4004a0dcd862f2a57360219d2d44ef6c", "48eb6c6c5a2dbe4a1dde508fee06361b"},
    {"C.1 #6 (AES-128, AAD 0, message 48)", "01000000000000000000000000000000",
     "030000000000000000000000", "",
     "0100000000000000000000000000000002000000000000000000000000000000"
     "03000000000000000000000000000000",
     "3fd24ce1f5a67b75bf2351f181a475c7b800a5b4d3dcf70106b1eea82fa1d64d"
     "f42bf7226122fa92e17a40eeaac1201b5e6e311dbf395d35b0fe39c2714388f8",
     "d9b360279694941ac5dbc6987ada7377", "4004a0dcd862f2a57360219d2d44ef6c",
     "81388746bc22d26b2abc3dcb15754222"},
    {"C.1 #7 (AES-128, AAD 0, message 64)", "01000000000000000000000000000000",
     "030000000000000000000000", "",
     "0100000000000000000000000000000002000000000000000000000000000000"
     "0300000000000000000000000000000004000000000000000000000000000000",
     "2433668f1058190f6d43e360f4f35cd8e475127cfca7028ea8ab5c20f7ab2af0"
     "2516a2bdcbc08d521be37ff28c152bba36697f25b4cd169c6590d1dd39566d3f"
     "8a263dd317aa88d56bdf3936dba75bb8", "d9b360279694941ac5dbc6987ada7377",
     "4004a0dcd862f2a57360219d2d44ef6c", "1e39b6d3344d348f6044f89935d1cf78"},
    {"C.1 #13 (AES-128, AAD 1, message 64)", "01000000000000000000000000000000",
     "030000000000000000000000", "01",
     "0200000000000000000000000000000003000000000000000000000000000000"
     "0400000000000000000000000000000005000000000000000000000000000000",
     "2f5c64059db55ee0fb847ed513003746aca4e61c711b5de2e7a77ffd02da42fe"
     "ec601910d3467bb8b36ebbaebce5fba30d36c95f48a3e7980f0e7ac299332a80"
     "cdc46ae475563de037001ef84ae21744", "d9b360279694941ac5dbc6987ada7377",
     "4004a0dcd862f2a57360219d2d44ef6c", "ffcd05d5770f34ad9267f0a59994b15a"},
    {"C.1 #14 (AES-128, AAD 12, message 4)", "01000000000000000000000000000000",
     "030000000000000000000000", "010000000000000000000000", "02000000",
     "a8fe3e8707eb1f84fb28f8cb73de8e99e2f48a14", "d9b360279694941ac5dbc6987ada7377",
     "4004a0dcd862f2a57360219d2d44ef6c", "f6ce9d3dcd68a2fd603c7ecc18fb9918"},
    {"C.1 #15 (AES-128, AAD 18, message 20)", "01000000000000000000000000000000",
     "030000000000000000000000", "010000000000000000000000000000000200",
     "0300000000000000000000000000000004000000",
     "6bb0fecf5ded9b77f902c7d5da236a4391dd029724afc9805e976f451e6d87f6"
     "fe106514", "d9b360279694941ac5dbc6987ada7377", "4004a0dcd862f2a57360219d2d44ef6c",
     "4781d492cb8f926c504caa36f61008fe"},
    {"C.1 #16 (AES-128, AAD 20, message 18)", "01000000000000000000000000000000",
     "030000000000000000000000", "0100000000000000000000000000000002000000",
     "030000000000000000000000000000000400",
     "44d0aaf6fb2f1f34add5e8064e83e12a2adabff9b2ef00fb47920cc72a0c0f13"
     "b9fd", "d9b360279694941ac5dbc6987ada7377", "4004a0dcd862f2a57360219d2d44ef6c",
     "75cbc23a1a10e348aeb8e384b5cc79fd"},
    {"C.1 #17 (AES-128, AAD 0, message 0)", "e66021d5eb8e4f4066d4adb9c33560e4",
     "f46e44bb3da0015c94f70887", "", "", "a4194b79071b01a87d65f706e3949578",
     "036ee1fe2d7926af68898095e54e7b3c", "5e46482396008223b5c1d25173d87539",
     "00000000000000000000000000000000"},
    {"C.1 #20 (AES-128, AAD 15, message 9)", "d5cc1fd161320b6920ce07787f86743b",
     "275d1ab32f6d1f0434d8848c", "046787f3ea22c127aaf195d1894728", "1177441f195495860f",
     "4f37281f7ad12949d01d02fd0cd174c84fc5dae2f60f52fd2b", "8a51df64d93eaf667c2c09bd454ce5c5",
     "43ab276c2b4a473918ca73f2dd85109c", "63a3451c0b23345ad02bba59956517cf"},
    {"C.1 #24 (AES-128, AAD 35, message 21)", "f901cfe8a69615a93fdf7a98cad48179",
     "6245709fb18853f68d833640",
     "7576f7028ec6eb5ea7e298342a94d4b202b370ef9768ec6561c4fe6b7e7296fa"
     "859c21", "e42a3c02c25b64869e146d7b233987bddfc240871d",
     "391cc328d484a4f46406181bcd62efd9b3ee197d052d15506c84a9edd65e13e9"
     "d24a2a6e70", "3724f55f1d22ac0ab830da0b6a995d74", "75ac87b70c05db287de779006105a344",
     "4cbba090f03f7d1188ea55749fa6c7bd"},
    {"C.2 #1 (AES-256, AAD 0, message 0)",
     "0100000000000000000000000000000000000000000000000000000000000000", "030000000000000000000000",
     "", "", "07f5f4169bbf55a8400cd47ea6fd400f", "b5d3c529dfafac43136d2d11be284d7f",
     "b914f4742be9e1d7a2f84addbf96dec3456e3c6c05ecc157cdbf0700fedad222",
     "00000000000000000000000000000000"},
    {"C.2 #5 (AES-256, AAD 0, message 32)",
     "0100000000000000000000000000000000000000000000000000000000000000", "030000000000000000000000",
     "", "0100000000000000000000000000000002000000000000000000000000000000",
     "4a6a9db4c8c6549201b9edb53006cba821ec9cf850948a7c86c68ac7539d027f"
     "e819e63abcd020b006a976397632eb5d", "b5d3c529dfafac43136d2d11be284d7f",
     "b914f4742be9e1d7a2f84addbf96dec3456e3c6c05ecc157cdbf0700fedad222",
     "899b6381b3d46f0def7aa0517ba188f5"},
    {"C.2 #7 (AES-256, AAD 0, message 64)",
     "0100000000000000000000000000000000000000000000000000000000000000", "030000000000000000000000",
     "",
     "0100000000000000000000000000000002000000000000000000000000000000"
     "0300000000000000000000000000000004000000000000000000000000000000",
     "c2d5160a1f8683834910acdafc41fbb1632d4a353e8b905ec9a5499ac34f96c7"
     "e1049eb080883891a4db8caaa1f99dd004d80487540735234e3744512c6f90ce"
     "112864c269fc0d9d88c61fa47e39aa08", "b5d3c529dfafac43136d2d11be284d7f",
     "b914f4742be9e1d7a2f84addbf96dec3456e3c6c05ecc157cdbf0700fedad222",
     "6ef38b06046c7c0e225efaef8e2ec4c4"},
    {"C.2 #13 (AES-256, AAD 1, message 64)",
     "0100000000000000000000000000000000000000000000000000000000000000", "030000000000000000000000",
     "01",
     "0200000000000000000000000000000003000000000000000000000000000000"
     "0400000000000000000000000000000005000000000000000000000000000000",
     "67fd45e126bfb9a79930c43aad2d36967d3f0e4d217c1e551f59727870beefc9"
     "8cb933a8fce9de887b1e40799988db1fc3f91880ed405b2dd298318858467c89"
     "5bde0285037c5de81e5b570a049b62a0", "b5d3c529dfafac43136d2d11be284d7f",
     "b914f4742be9e1d7a2f84addbf96dec3456e3c6c05ecc157cdbf0700fedad222",
     "da58d2f61b0a9d343b2f37fb0c519733"},
    {"C.2 #15 (AES-256, AAD 18, message 20)",
     "0100000000000000000000000000000000000000000000000000000000000000", "030000000000000000000000",
     "010000000000000000000000000000000200", "0300000000000000000000000000000004000000",
     "43dd0163cdb48f9fe3212bf61b201976067f342bb879ad976d8242acc188ab59"
     "cabfe307", "b5d3c529dfafac43136d2d11be284d7f",
     "b914f4742be9e1d7a2f84addbf96dec3456e3c6c05ecc157cdbf0700fedad222",
     "973ef4fd04bd31d193816ab26f8655ca"},
    {"C.2 #16 (AES-256, AAD 20, message 18)",
     "0100000000000000000000000000000000000000000000000000000000000000", "030000000000000000000000",
     "0100000000000000000000000000000002000000", "030000000000000000000000000000000400",
     "462401724b5ce6588d5a54aae5375513a075cfcdf5042112aa29685c912fc205"
     "6543", "b5d3c529dfafac43136d2d11be284d7f",
     "b914f4742be9e1d7a2f84addbf96dec3456e3c6c05ecc157cdbf0700fedad222",
     "2cbb6b7ab2dbffefb797f825f826870c"},
    {"C.2 #17 (AES-256, AAD 0, message 0)",
     "e66021d5eb8e4f4066d4adb9c33560e4f46e44bb3da0015c94f7088736864200", "e0eaf5284d884a0e77d31646",
     "", "", "169fbb2fbf389a995f6390af22228a62", "e40d26f82774aa27f47b047b608b9585",
     "7c7c3d9a542cef53dde0e6de9b5800400f82e73ec5f7ee41b7ba8dcb9ba078c3",
     "00000000000000000000000000000000"},
    {"C.2 #21 (AES-256, AAD 20, message 12)",
     "a44102952ef94b02b805249bac80e6f61455bfac8308a2d40d8c845117808235", "5c9e940fea2f582950a70d5a",
     "0da55210cc1c1b0abde3b2f204d1e9f8b06bc47f", "1db2316fd568378da107b52b",
     "8dbeb9f7255bf5769dd56692404099c2587f64979f21826706d497d5", "64779ab10ee8a280272f14cc8851b727",
     "25f40fc63f49d3b9016a8eeeb75846e0d72ca36ddbd312b6f5ef38ad14bd2651",
     "cc86ee22c861e1fd474c84676b42739c"},
    {"C.2 #24 (AES-256, AAD 35, message 21)",
     "3c535de192eaed3822a2fbbe2ca9dfc88255e14a661b8aa82cc54236093bbc23", "688089e55540db1872504e1c",
     "734320ccc9d9bbbb19cb81b2af4ecbc3e72834321f7aa0f70b7282b4f33df23f"
     "167541", "ced532ce4159b035277d4dfbb7db62968b13cd4eec",
     "626660c26ea6612fb17ad91e8e767639edd6c9faee9d6c7029675b89eaf4ba1d"
     "ed1a286594", "cb8c3aa3f8dbaeb4b28a3e86ff6625f8",
     "02426ce1aa3ab31313b0848469a1b5fc6c9af9602600b195b04ad407026bc06d",
     "ffd503c7dd712eb3791b7114b17bb0cf"},
    {"C.3 #1 (AES-256, AAD 0, message 32)",
     "0000000000000000000000000000000000000000000000000000000000000000", "000000000000000000000000",
     "", "000000000000000000000000000000004db923dc793ee6497c76dcc03a98e108",
     "f3f80f2cf0cb2dd9c5984fcda908456cc537703b5ba70324a6793a7bf218d3ea"
     "ffffffff000000000000000000000000", "dc95c078a24089895275f3d86b4fb868",
     "779b38d15bffb63d39d6e9ae76a9b2f375d11b0e3a68c422845c7d4690fa594f",
     "7367cdb411b730128dd56e8edc0eff56"},
    {"C.3 #2 (AES-256, AAD 0, message 24)",
     "0000000000000000000000000000000000000000000000000000000000000000", "000000000000000000000000",
     "", "eb3640277c7ffd1303c7a542d02d3e4c0000000000000000",
     "18ce4f0b8cb4d0cac65fea8f79257b20888e53e72299e56dffffffff00000000"
     "0000000000000000", "dc95c078a24089895275f3d86b4fb868",
     "779b38d15bffb63d39d6e9ae76a9b2f375d11b0e3a68c422845c7d4690fa594f",
     "7367cdb411b730128dd56e8edc0eff56"},
};

Msg SivVectorMsg(const SivVector &v) {
  Msg m;
  m.siv = true;
  m.key = FromHex(v.key);
  m.nonce = FromHex(v.nonce);
  m.aad = FromHex(v.aad);
  m.pt = FromHex(v.pt);
  Bytes r = FromHex(v.result);
  m.ct.assign(r.begin(), r.end() - 16);
  std::copy(r.end() - 16, r.end(), m.tag.begin());
  m.tag_len = 16;
  return m;
}

bool IsWrapVector(const SivVector &v) { return std::strncmp(v.name, "C.3", 3) == 0; }

// Longer messages than Appendix C has, from another implementation (the
// `cryptography` Python package's AESGCMSIV, over OpenSSL 3): AAD and plaintext
// are PatternBytes(len, salt); fold is the XOR of all ciphertext blocks (the last
// one zero-padded).
struct SivLongVector {
  const char *key, *nonce;
  size_t aad_len, aad_salt, len, pt_salt;
  const char *tag, *fold;
};

const SivLongVector kSivLongVectors[] = {
    {"5b1d7c9e0a3f4e2d8c6b1a0f9e8d7c6b", "a1b2c3d4e5f60718293a4b5c", 300, 1, 70001, 2,
     "490de837a720c03379c5891038b6bb55", "477627402b255fcc32b50efb9ff991ea"},
    {"0f1e2d3c4b5a69788796a5b4c3d2e1f00112233445566778899aabbccddeeff0", "c0ffee00deadbeef01234567",
     4097, 3, 4111, 4, "7d35b44185db307f4435bf2d4204dfad", "137fd1b65f5845fc036329c97e064331"},
    {"8a7b6c5d4e3f2a1b0c9d8e7f6a5b4c3d2e1f0a9b8c7d6e5f4a3b2c1d0e9f8a7b", "000102030405060708090a0b",
     0, 0, 65536 + 48, 5, "daec54d4a6f1882a1b11b95db2067651", "7f878a08b9d88d546a69f5eaaf0613ef"},
};

Bytes PatternBytes(size_t n, size_t salt) {
  Bytes b(n);
  for (size_t i = 0; i < n; i++) b[i] = static_cast<uint8_t>(i * 167 + (i >> 8) * 13 + salt);
  return b;
}

Block16 FoldBlocks(const uint8_t *p, size_t n) {
  Block16 f{};
  for (size_t i = 0; i < n; i++) f[i % 16] ^= p[i];
  return f;
}

// Makes the GCM-SIV tag of m equal `target` by changing its plaintext block
// `block` (a whole one), and seals m.  POLYVAL is linear in its blocks: with s
// blocks hashed, block p enters S_s as X_p * h'^(s - p + 1) (h' = H * x^-128), so
// adding (wanted ^ S_s) * h'^-(s - p + 1) to X_p turns S_s into the wanted value:
// the AES preimage of the target under the message encryption key, with the nonce
// XORed back in.  False (m unchanged) when no message has that tag: the preimage
// has the top bit of byte 15 set, which the tag computation always clears.
bool SivChooseTag(Msg &m, const Block16 &target, size_t block) {
  if (!m.siv || m.nonce.size() != 12 || 16 * (block + 1) > m.pt.size()) {
    OracleDie("SivChooseTag: a GCM-SIV message with that whole block");
  }
  SivKeys k = SivDeriveKeys(m.key, m.nonce.data());
  Block16 want;
  AesEcb(k.enc, target.data(), want.data(), 1, true);
  if (want[15] & 0x80) return false;
  for (size_t i = 0; i < 12; i++) want[i] ^= m.nonce[i];
  Block16 s = SivPolyval(k.auth, m.aad.data(), m.aad.size(), m.pt.data(), m.pt.size());
  const uint64_t exponent = (m.pt.size() + 15) / 16 - block + 1;
  Pv hp = PvMul(PvLoad(k.auth.data()), PvXInv128());
  Pv delta = PvXor(PvLoad(want.data()), PvLoad(s.data()));
  Block16 d = PvStore(PvMul(delta, PvInverse(PvPow(hp, exponent))));
  for (size_t i = 0; i < 16; i++) m.pt[16 * block + i] ^= d[i];
  m.Seal();
  return true;
}

// A GCM-SIV message of len bytes (len >= 16) whose counter wraps from ffffffff to
// 0 at data block `before` (>= 1): the tag's bytes 0..3 are LE32(2^32 - before),
// its bytes 4..15 random (with ff_above, bytes 4..11 are ff, so that a carry out
// of bytes 0..3 would run on).  The tag is chosen, a random whole plaintext block
// adjusted to give it.
Msg SivWrapMsg(std::mt19937_64 &rng, size_t key_len, uint32_t before, size_t len, size_t aad_len,
               bool ff_above) {
  Msg m;
  m.siv = true;
  m.key = RandomBytes(rng, key_len);
  m.nonce = RandomBytes(rng, 12);
  m.aad = RandomBytes(rng, aad_len);
  m.pt = RandomBytes(rng, len);
  m.tag_len = 16;
  for (;;) {
    Block16 target;
    Bytes r = RandomBytes(rng, 16);
    std::copy(r.begin(), r.end(), target.begin());
    PutLe32(target.data(), 0u - before);
    if (ff_above) std::fill(target.begin() + 4, target.begin() + 12, 0xff);
    if (SivChooseTag(m, target, Uniform(rng, 0, len / 16 - 1))) {
      if (m.tag != target) OracleDie("SivChooseTag: the tag is not the chosen one");
      return m;
    }
  }
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

// The GCM-SIV reference against RFC 8452 Appendix C: the per-nonce keys, S_s,
// the ciphertext and the tag.
TEST(AeadHarnessSelfTest, GcmSivReferenceMatchesRfc8452Vectors) {
  size_t per_section[3] = {0, 0, 0};
  for (const SivVector &v : kSivVectors) {
    Msg m = SivVectorMsg(v);
    SivKeys k = SivDeriveKeys(m.key, m.nonce.data());
    EXPECT_EQ(Hex(k.auth.data(), 16), v.auth_key) << v.name;
    EXPECT_EQ(Hex(k.enc.data(), k.enc.size()), v.enc_key) << v.name;
    Block16 s = SivPolyval(k.auth, m.aad.data(), m.aad.size(), m.pt.data(), m.pt.size());
    EXPECT_EQ(Hex(s.data(), 16), v.polyval) << v.name;
    Bytes ct(m.pt.size());
    uint8_t tag[16];
    SivSeal(m.key, m.nonce, m.aad.data(), m.aad.size(), m.pt.data(), m.pt.size(), ct.data(), tag);
    EXPECT_EQ(Hex(ct.data(), ct.size()) + Hex(tag, 16), v.result) << v.name;
    Bytes back(ct.size());
    SivCtr(k.enc, m.tag, m.ct.data(), m.ct.size(), back.data());
    EXPECT_EQ(Hex(back.data(), back.size()), Hex(m.pt.data(), m.pt.size()))
        << v.name << ": decrypt";
    per_section[v.name[2] - '1']++;
    if (IsWrapVector(v)) {
      // The second data block's counter is 00000000 with bytes 4..15 unchanged.
      EXPECT_EQ(GetLe32(m.tag.data()), 0xffffffffu) << v.name;
      Block16 want = m.tag;
      want[0] = want[1] = want[2] = want[3] = 0;
      want[15] |= 0x80;
      EXPECT_EQ(Hex(SivCounterBlock(m.tag, 1).data(), 16), Hex(want.data(), 16)) << v.name;
    }
  }
  EXPECT_GE(per_section[0], 6u);
  EXPECT_GE(per_section[1], 6u);
  EXPECT_EQ(per_section[2], 2u) << "both C.3 vectors";
}

// POLYVAL against RFC 8452 Appendix A's example, against its definition
// (PvDot, bit by bit, for the tables of PolyvalKey), and against GHASH (this
// file's GfMul, which J0MatchesOpenSsl ties to OpenSSL) through Appendix A's
// identity POLYVAL(H, X_1..X_n) =
// ByteReverse(GHASH(mulX_GHASH(ByteReverse(H)), ByteReverse(X_1), ..., ByteReverse(X_n))).
TEST(AeadHarnessSelfTest, PolyvalMatchesRfc8452AndGhash) {
  {
    Bytes h = FromHex("25629347589242761d31f826ba4b757b");
    Bytes x = FromHex("4f4f95668c83dfb6401762bb2d01a262d1a24ddd2721d006bbe45f20d3c9f362");
    Polyval pv(h.data());
    pv.AbsorbPadded(x.data(), x.size());
    EXPECT_EQ(Hex(pv.Result().data(), 16), "f7a3b47b846119fae5b7866cf5e5b77e");
    Pv s = PvDot(PvLoad(x.data()), PvLoad(h.data()));
    s = PvDot(PvXor(s, PvLoad(x.data() + 16)), PvLoad(h.data()));
    EXPECT_EQ(Hex(PvStore(s).data(), 16), "f7a3b47b846119fae5b7866cf5e5b77e");
  }
  EXPECT_TRUE(PvEq(PvMul(PvXInv128(), Pv{1, 0xc200000000000000ull}), PvOne())) << "x^-128 * x^128";
  auto rng = TestRng(0x4010);
  auto reversed = [](const uint8_t *p) {
    Block16 r;
    for (size_t i = 0; i < 16; i++) r[i] = p[15 - i];
    return r;
  };
  for (int c = 0; c < 8; c++) {
    Bytes h = RandomBytes(rng, 16), a = RandomBytes(rng, 16);
    PolyvalKey key(h.data());
    EXPECT_EQ(Hex(PvStore(key.Dot(PvLoad(a.data()))).data(), 16),
              Hex(PvStore(PvDot(PvLoad(a.data()), PvLoad(h.data()))).data(), 16));
    EXPECT_TRUE(PvEq(PvMul(PvLoad(a.data()), PvInverse(PvLoad(a.data()))), PvOne()));
    EXPECT_TRUE(PvEq(PvPow(PvLoad(a.data()), 5),
                     PvMul(PvLoad(a.data()), PvMul(PvMul(PvLoad(a.data()), PvLoad(a.data())),
                                                   PvMul(PvLoad(a.data()), PvLoad(a.data()))))));
    // Appendix A: the same sum through GHASH.
    Bytes x = RandomBytes(rng, 16 * Uniform(rng, 1, 9));
    Polyval pv(h.data());
    pv.AbsorbPadded(x.data(), x.size());
    Gf g = GfLoad(reversed(h.data()).data());
    const bool carry = (g.lo & 1) != 0;  // mulX_GHASH: times x in GHASH's bit order
    g.lo = (g.lo >> 1) | (g.hi << 63);
    g.hi >>= 1;
    if (carry) g.hi ^= 0xe100000000000000ull;
    Gf y;
    for (size_t i = 0; i < x.size(); i += 16) {
      y = GfMul(GfXor(y, GfLoad(reversed(x.data() + i).data())), g);
    }
    EXPECT_EQ(Hex(pv.Result().data(), 16), Hex(reversed(GfStore(y).data()).data(), 16))
        << x.size() / 16 << " blocks";
  }
}

// The reference on messages longer than the RFC's, against another implementation.
TEST(AeadHarnessSelfTest, GcmSivReferenceOnLongMessages) {
  for (const SivLongVector &v : kSivLongVectors) {
    Bytes key = FromHex(v.key), nonce = FromHex(v.nonce);
    Bytes aad = PatternBytes(v.aad_len, v.aad_salt), pt = PatternBytes(v.len, v.pt_salt), ct(v.len);
    uint8_t tag[16];
    SivSeal(key, nonce, aad.data(), aad.size(), pt.data(), pt.size(), ct.data(), tag);
    EXPECT_EQ(Hex(tag, 16), v.tag) << "AES-" << 8 * key.size() << ", AAD " << v.aad_len
                                   << ", message " << v.len;
    EXPECT_EQ(Hex(FoldBlocks(ct.data(), ct.size()).data(), 16), v.fold)
        << "AES-" << 8 * key.size() << ", AAD " << v.aad_len << ", message " << v.len;
  }
}

// SivWrapMsg gets the tag it chose, and the reference's keystream runs through
// the wrap: data block b uses counter LE32(2^32 - before + b mod 2^32) with bytes
// 4..15 those of the tag (byte 15 with its top bit set), computed here apart from
// SivCounterBlock.
TEST(AeadHarnessSelfTest, GcmSivChosenTagsAndTheCounterWrap) {
  auto rng = TestRng(0x4011);
  for (size_t key_len : {16, 32}) {
    for (uint32_t before : {1u, 2u, 3u, 8u, 17u, 64u, 300u}) {
      const size_t len = 16 * (before + 3) + Uniform(rng, 0, 15);
      Msg m = SivWrapMsg(rng, key_len, before, len, Uniform(rng, 0, 40), before % 2 != 0);
      EXPECT_EQ(GetLe32(m.tag.data()), 0u - before);
      SivKeys k = SivDeriveKeys(m.key, m.nonce.data());
      for (uint64_t b = before - 1; b < (len + 15) / 16 && b <= before + 1; b++) {
        Block16 c = m.tag;
        c[15] |= 0x80;
        const uint64_t n = (uint64_t{GetLe32(m.tag.data())} + b) & 0xffffffffu;
        for (size_t i = 0; i < 4; i++) c[i] = static_cast<uint8_t>(n >> (8 * i));
        if (b == before) {
          EXPECT_EQ(Hex(c.data(), 4), "00000000");
        }
        Block16 ks;
        AesEcb(k.enc, c.data(), ks.data(), 1);
        for (size_t i = 0; i < 16 && 16 * b + i < len; i++) {
          ASSERT_EQ(m.ct[16 * b + i] ^ m.pt[16 * b + i], ks[i])
              << "AES-" << 8 * key_len << ", block " << b << " of a wrap at block " << before;
        }
      }
    }
  }
}

// ---------------------------------------------------------------------------
// AES-OTR vectors: specs/aes-otr.md Appendix A, typed in.  A(h) is the bytes
// 00 01 02 ..., M(n) the bytes 40 41 42 ...; q, ta, f, u, l and final_offset are
// the intermediates the appendix gives ("" where it gives none; final_offset is
// its c*La).

constexpr const char *kOtrK128 = "2b7e151628aed2a6abf7158809cf4f3c";
constexpr const char *kOtrK256 = "603deb1015ca71be2b73aef0857d77811f352c073b6108d72d9810a30914dff4";
constexpr const char *kOtrN12 = "101112131415161718191a1b";

struct OtrSpecVector {
  const char *name;
  bool v2, serial;
  const char *key, *nonce;
  size_t tag_len, aad_len, len;
  const char *ct, *tag;
  const char *q, *ta, *f, *u, *l, *final_offset;
};

const OtrSpecVector kOtrVectors[] = {
    {"A.1 (v3.1-p, AES-128, A(0), M(0))", false, false, kOtrK128, kOtrN12, 16, 0, 0, "",
     "9dec7a2df49446a1641cb4d3cf83c4cb", "", "", "", "", "", ""},
    {"A.2 (v3.1-p, AES-128, A(7), M(1))", false, false, kOtrK128, kOtrN12, 16, 7, 1, "da",
     "4b40cf1eb7d619357e3069c1334380bf", "", "", "", "", "", ""},
    {"A.3 (v3.1-s, AES-128, A(0), M(16))", false, true, kOtrK128, kOtrN12, 16, 0, 16,
     "85b3ffcc552960018592081e2bf062f0", "fbd66896315328121a6f11136a4a72ef", "", "", "", "", "", ""},
    {"A.4 (v3.1-s, AES-128, A(20), M(17))", false, true, kOtrK128, kOtrN12, 16, 20, 17,
     "796670eaeddff59cf7402380a654ed7065", "a584c7f929d7d008c957447683ebca70",
     "7df76b0c1ab899b33e42f047b91b546f", "8d0a32a3093dc65cc9630ffebf0e3951",
     "00000001101112131415161718191a1b", "515291923cc79b27a31fef6c15b731c4",
     "b8b146626bf4baf6d4f9c125557211ad", "ee9ce03c4c6af37689234ed001cefa39"},
    {"A.5 (v3.1-p, AES-256, A(16), M(32))", false, false, kOtrK256, kOtrN12, 16, 16, 32,
     "a963339bef668dbd5d1ad5fc5181b95ab5bdc4bf890bff9eee17d599b792bb60",
     "28b54e36e9a7c0ca966224d3c5dd12d6", "e568f68194cf76d6174d4cc04310a854",
     "6efd9a87b441123480715ba9d7141abb", "00000001101112131415161718191a1b",
     "75c6573c4646b780f600d4fcbdf49d5a", "75c6573c4646b780f600d4fcbdf49d5a",
     "dbf4eede74730b874606731952507603"},
    {"A.6 (v3.1-s, AES-256, A(33), M(33))", false, true, kOtrK256, kOtrN12, 16, 33, 33,
     "6af223b5c57c347577313fc1e2642bbb966ad6f72bbb58e2df048c74d9aabd5f6f",
     "f4e8d7d3ebc9c66baa27c7f5dcb1e2c7", "", "", "", "", "", ""},
    {"A.7 (v3.1-p, AES-128, tau 12, 15-byte nonce, A(5), M(64))", false, false, kOtrK128,
     "a0a1a2a3a4a5a6a7a8a9aaabacadae", 12, 5, 64,
     "385333de004ab686b42ce1167528e2ab752d55661a65778e8a0bd0fcb371df2a"
     "15b9cd11b86305d471a883ecafb707bb988a2e07ec1e21c80dfa00c26f8bf531",
     "e85858a321522ed843e43ffa", "", "", "c1a0a1a2a3a4a5a6a7a8a9aaabacadae", "", "", ""},
    {"A.8 (v3.1-s, AES-256, tau 8, 8-byte nonce, A(0), M(48))", false, true, kOtrK256,
     "c0c1c2c3c4c5c6c7", 8, 0, 48,
     "54ae1736a12b82c308f5fb82475b4a110d6a1090fb8e2685f1745840883a39c1"
     "9a1823b248ea0918d2df1e159be7685b",
     "9db7aae5797693f3", "", "", "8000000000000001c0c1c2c3c4c5c6c7", "", "", ""},
    {"A.9 (v2-p, AES-128, A(31), M(64))", true, false, kOtrK128, kOtrN12, 16, 31, 64,
     "a92081a680a3a515d22c6fb5bbd2e5472232da22c700e496ae91b5dcc27ad28c"
     "10082ee8611aad0466b8c80696714d0f0b37ed1e6ad67d9d50a11d393b6ff3f3",
     "81cbb27ed769fe1918a09e4466a7a86b", "", "", "", "", "", ""},
    {"A.10 (v2-s, AES-256, A(17), M(33))", true, true, kOtrK256, kOtrN12, 16, 17, 33,
     "b0dc5856a12077447434264722628aa9c1371b0d9f54a72bf3704d85c6efaccd84",
     "42edce4f8bfbb29df6abc5abd2fc04af", "", "", "", "", "", ""},
};

Bytes OtrSpecBytes(size_t n, uint8_t first) {
  Bytes b(n);
  for (size_t i = 0; i < n; i++) b[i] = static_cast<uint8_t>(first + i);
  return b;
}

bool OtrVectorIs(const OtrSpecVector &t, const OtrVariant &v) {
  return t.v2 == v.v2 && t.serial == v.serial;
}

Msg OtrVectorMsg(const OtrSpecVector &t) {
  Msg m;
  m.otr = true;
  m.otr_variant.v2 = t.v2;
  m.otr_variant.serial = t.serial;
  m.key = FromHex(t.key);
  m.nonce = FromHex(t.nonce);
  m.aad = OtrSpecBytes(t.aad_len, 0x00);
  m.pt = OtrSpecBytes(t.len, 0x40);
  m.ct = FromHex(t.ct);
  m.tag_len = t.tag_len;
  Bytes tag = FromHex(t.tag);
  std::copy(tag.begin(), tag.end(), m.tag.begin());
  return m;
}

// Longer messages, other nonce and tag lengths and every variant, from another
// implementation (aesgen's Python model, generator/aesgen/model/otr.py, which
// tests/test_model_otr.py holds against Appendix A and tests/test_model_otr.py's
// test_harness_long_vectors_are_the_models recomputes from this table): AAD and
// message are PatternBytes(len, salt); fold is FoldBlocks of the ciphertext.
struct OtrLongVector {
  bool v2, serial;
  const char *key, *nonce;
  size_t tag_len, aad_len, aad_salt, len, pt_salt;
  const char *tag, *fold;
};

const OtrLongVector kOtrLongVectors[] = {
    {false, false, "000102030405060708090a0b0c0d0e0f",
     "5a", 16, 300, 1, 4128, 2,
     "b8e6f9e48a9239d156cd9fce3026602f", "08c93a916cac4b5aad40ef85ad2ec5e6"},
    {false, true, "1f1e1d1c1b1a191817161514131211100f0e0d0c0b0a09080706050403020100",
     "f0e1d2c3b4a5968778695a4b3c2d1e", 5, 33, 3, 1000, 4,
     "20c864439b", "e10c3a784239d0a87007e5c5c4e13f56"},
    {true, false, "8a7b6c5d4e3f2a1b0c9d8e7f6a5b4c3d2e1f0a9b8c7d6e5f4a3b2c1d0e9f8a7b",
     "0123456789abcd", 16, 256, 5, 70001, 6,
     "ce34c400054ed81d03e6bfa0a4bacdb9", "e6354a04df6ea3e4fbf4a45c58a3da9a"},
    {true, true, "5b1d7c9e0a3f4e2d8c6b1a0f9e8d7c6b",
     "c0ffee00deadbeef0123456789", 1, 1000, 7, 4111, 8,
     "95", "896e5d13351299987fa676e047f2b9c0"},
    {false, false, "0f1e2d3c4b5a69788796a5b4c3d2e1f00112233445566778899aabbccddeeff0",
     "a1b2c3d4e5f60718293a4b5c", 12, 0, 0, 65584, 9,
     "e7924295587cd11a928f7a6c", "076481536cbb06badf7cfec37b179fb0"},
    {true, false, "e66021d5eb8e4f4066d4adb9c33560e4",
     "f46e44bb3da0015c94f708873686ab", 16, 17, 10, 63, 11,
     "f7376f5de91d1a9e05fffc12914aa3f8", "f1f847502208585f4ce113eec4230ca1"},
    {false, true, "e66021d5eb8e4f4066d4adb9c33560e4",
     "42", 16, 16, 12, 32, 13,
     "93e16df518f5527d392b76055d4f9021", "c5edc4b85653ad8cb03cbbe7e71d618b"},
};

// The designers' b = 16 example (section 8.3: v3-p, AES-128, key 00..0f, nonce
// 00..0b, no AD, messages 00 01 02 ...): only the ends of the blocks are given.
void ExpectDesignersB16Example(const uint8_t *c32, const uint8_t *c33, const std::string &who) {
  const std::string h32 = Hex(c32, 32), h33 = Hex(c33, 33);
  EXPECT_EQ(h32.substr(0, 4) + ".." + h32.substr(28, 4), "35af..687c") << who;
  EXPECT_EQ(h32.substr(32, 4) + ".." + h32.substr(60, 4), "8407..d708") << who;
  EXPECT_EQ(h33, h32.substr(32) + h32.substr(0, 32) + "87") << who;
}

// The OTR reference against Appendix A: ciphertext, tag and the intermediates
// given (Q, TA, Format, U, L, c La); decrypting gives the message back and the
// same tag; and the reference of each other variant gives another tag.
TEST(AeadHarnessSelfTest, OtrReferenceMatchesSpecVectors) {
  size_t per_variant[4] = {0, 0, 0, 0};
  for (const OtrSpecVector &t : kOtrVectors) {
    OtrVariant v;
    v.v2 = t.v2;
    v.serial = t.serial;
    const Bytes key = FromHex(t.key), nonce = FromHex(t.nonce);
    const Bytes aad = OtrSpecBytes(t.aad_len, 0x00), pt = OtrSpecBytes(t.len, 0x40);
    Bytes ct(t.len), back(t.len);
    uint8_t tag[16], tag2[16];
    OtrTrace tr;
    OtrCrypt(key, v, nonce.data(), nonce.size(), t.tag_len, aad.data(), aad.size(), pt.data(),
             pt.size(), ct.data(), false, tag, &tr);
    EXPECT_EQ(Hex(ct.data(), ct.size()), t.ct) << t.name;
    EXPECT_EQ(Hex(tag, t.tag_len), t.tag) << t.name;
    const struct {
      const char *name, *want;
      const Block16 &got;
    } given[] = {{"Q", t.q, tr.q}, {"TA", t.ta, tr.ta},   {"F", t.f, tr.f},
                 {"U", t.u, tr.u}, {"L", t.l, tr.l}, {"c La", t.final_offset, tr.final_offset}};
    for (const auto &g : given) {
      if (*g.want) {
        EXPECT_EQ(Hex(g.got.data(), 16), g.want) << t.name << ": " << g.name;
      }
    }
    OtrCrypt(key, v, nonce.data(), nonce.size(), t.tag_len, aad.data(), aad.size(), ct.data(),
             ct.size(), back.data(), true, tag2);
    EXPECT_EQ(Hex(back.data(), back.size()), Hex(pt.data(), pt.size())) << t.name << ": decrypt";
    EXPECT_EQ(Hex(tag2, 16), Hex(tag, 16)) << t.name << ": the tag decryption expects";
    for (const OtrMode &other : kOtrModes) {
      if (other.v2 == v.v2 && other.serial == v.serial) continue;
      OtrVariant o;
      o.v2 = other.v2;
      o.serial = other.serial;
      OtrCrypt(key, o, nonce.data(), nonce.size(), t.tag_len, aad.data(), aad.size(), pt.data(),
               pt.size(), back.data(), false, tag2);
      EXPECT_NE(Hex(tag2, t.tag_len), t.tag) << t.name << " under " << o.Name();
    }
    per_variant[2 * t.v2 + t.serial]++;
  }
  EXPECT_EQ(per_variant[0], 4u) << "v3.1-p: A.1, A.2, A.5, A.7";
  EXPECT_EQ(per_variant[1], 4u) << "v3.1-s: A.3, A.4, A.6, A.8";
  EXPECT_EQ(per_variant[2], 1u) << "v2-p: A.9";
  EXPECT_EQ(per_variant[3], 1u) << "v2-s: A.10";
}

// The reference on longer messages and other lengths, against the Python model;
// and the designers' b = 16 example.
TEST(AeadHarnessSelfTest, OtrReferenceOnLongMessages) {
  for (const OtrLongVector &t : kOtrLongVectors) {
    OtrVariant v;
    v.v2 = t.v2;
    v.serial = t.serial;
    const Bytes key = FromHex(t.key), nonce = FromHex(t.nonce);
    const Bytes aad = PatternBytes(t.aad_len, t.aad_salt), pt = PatternBytes(t.len, t.pt_salt);
    Bytes ct(t.len), back(t.len);
    uint8_t tag[16], tag2[16];
    OtrCrypt(key, v, nonce.data(), nonce.size(), t.tag_len, aad.data(), aad.size(), pt.data(),
             pt.size(), ct.data(), false, tag);
    std::ostringstream what;
    what << v.Name() << ", AES-" << 8 * key.size() << ", nonce " << nonce.size() << " bytes, tag "
         << t.tag_len << ", AAD " << t.aad_len << ", message " << t.len;
    EXPECT_EQ(Hex(tag, t.tag_len), t.tag) << what.str();
    EXPECT_EQ(Hex(FoldBlocks(ct.data(), ct.size()).data(), 16), t.fold) << what.str();
    OtrCrypt(key, v, nonce.data(), nonce.size(), t.tag_len, aad.data(), aad.size(), ct.data(),
             ct.size(), back.data(), true, tag2);
    EXPECT_TRUE(back == pt) << what.str() << ": decrypt";
    EXPECT_EQ(Hex(tag2, 16), Hex(tag, 16)) << what.str() << ": decrypt";
  }
  const Bytes key = OtrSpecBytes(16, 0), nonce = OtrSpecBytes(12, 0), m33 = OtrSpecBytes(33, 0);
  uint8_t c32[32], c33[33], tag[16];
  OtrCrypt(key, OtrVariant(), nonce.data(), 12, 16, nullptr, 0, m33.data(), 32, c32, false, tag);
  OtrCrypt(key, OtrVariant(), nonce.data(), 12, 16, nullptr, 0, m33.data(), 33, c33, false, tag);
  ExpectDesignersB16Example(c32, c33, "the OTR reference");
}

// Section 2's arithmetic (doubling as a 128-bit shift, 3^2 = 5, the batch
// shortcut with a carry-less multiply), section 4's Format bytes, and
// properties of every variant over every length class of the last pair: open
// inverts seal, the b = 16 tail is the pair it would be swapped, p and s.
TEST(AeadHarnessSelfTest, OtrReferenceArithmeticAndProperties) {
  auto rng = TestRng(0x4020);
  auto clmul_low = [](uint64_t a, uint64_t b) {  // the product, at most 128 bits: (hi, lo)
    uint64_t hi = 0, lo = 0;
    for (int i = 0; i < 64; i++) {
      if ((b >> i) & 1) {
        lo ^= a << i;
        if (i) hi ^= a >> (64 - i);
      }
    }
    return std::make_pair(hi, lo);
  };
  for (int c = 0; c < 64; c++) {
    Bytes xb = RandomBytes(rng, 16);
    if (c == 0) xb.assign(16, 0xff);
    Block16 x;
    std::copy(xb.begin(), xb.end(), x.begin());
    uint64_t hi = 0, lo = 0;
    for (size_t i = 0; i < 8; i++) {
      hi = (hi << 8) | x[i];
      lo = (lo << 8) | x[8 + i];
    }
    // 2X: (v << 1) mod 2^128, 0x87 added when bit 127 was set.
    const uint64_t dhi = (hi << 1) | (lo >> 63), dlo = (lo << 1) ^ ((hi >> 63) ? 0x87 : 0);
    Block16 d = OtrDouble(x);
    uint64_t ghi = 0, glo = 0;
    for (size_t i = 0; i < 8; i++) {
      ghi = (ghi << 8) | d[i];
      glo = (glo << 8) | d[8 + i];
    }
    EXPECT_EQ(ghi, dhi);
    EXPECT_EQ(glo, dlo);
    EXPECT_EQ(OtrTimes(3, OtrTimes(3, x)), OtrTimes(5, x)) << "3^2 X is 5X";
    EXPECT_EQ(OtrTimes(7, x), OtrXor(OtrXor(OtrTimes(4, x), OtrTimes(2, x)), x));
    // 2^k X = ((v << k) mod 2^128) xor clmul(v >> (128 - k), 0x87), 1 <= k <= 64.
    for (unsigned k : {1u, 2u, 5u, 8u, 31u, 57u, 63u, 64u}) {
      Block16 y = x;
      for (unsigned i = 0; i < k; i++) y = OtrDouble(y);
      const uint64_t top = k == 64 ? hi : hi >> (64 - k);
      const uint64_t shi = k == 64 ? lo : (hi << k) | (lo >> (64 - k)), slo = k == 64 ? 0 : lo << k;
      const auto p = clmul_low(top, 0x87);
      uint64_t yhi = 0, ylo = 0;
      for (size_t i = 0; i < 8; i++) {
        yhi = (yhi << 8) | y[i];
        ylo = (ylo << 8) | y[8 + i];
      }
      EXPECT_EQ(yhi, shi ^ p.first) << "k " << k;
      EXPECT_EQ(ylo, slo ^ p.second) << "k " << k;
    }
  }
  // Section 4.
  const Bytes n12 = FromHex(kOtrN12), n15 = FromHex("a0a1a2a3a4a5a6a7a8a9aaabacadae");
  const std::pair<size_t, const char *> formats12[] = {
      {16, "00"}, {8, "80"}, {12, "c0"}, {4, "40"}, {1, "10"}, {15, "f0"}};
  for (const auto &f : formats12) {
    EXPECT_EQ(Hex(OtrFormat(f.first, n12.data(), 12).data(), 16),
              std::string(f.second) + "000001101112131415161718191a1b")
        << "tau " << f.first;
  }
  EXPECT_EQ(Hex(OtrFormat(12, n15.data(), 15).data(), 16), "c1a0a1a2a3a4a5a6a7a8a9aaabacadae");
  EXPECT_EQ(Hex(OtrFormat(16, n15.data(), 15).data(), 16), "01a0a1a2a3a4a5a6a7a8a9aaabacadae");
  EXPECT_EQ(Hex(OtrFormat(16, n15.data(), 1).data(), 16), "000000000000000000000000000001a0");

  for (const OtrMode &mode : kOtrModes) {
    OtrVariant v;
    v.v2 = mode.v2;
    v.serial = mode.serial;
    for (size_t len = 0; len <= 100; len++) {
      const Bytes key = RandomBytes(rng, len % 2 ? 16 : 32), nonce = RandomBytes(rng, 1 + len % 15);
      const Bytes aad = RandomBytes(rng, (7 * len) % 50), pt = RandomBytes(rng, len);
      const size_t tag_len = 1 + len % 16;
      Bytes ct(len), back(len);
      uint8_t tag[16], tag2[16];
      OtrCrypt(key, v, nonce.data(), nonce.size(), tag_len, aad.data(), aad.size(), pt.data(), len,
               ct.data(), false, tag);
      OtrCrypt(key, v, nonce.data(), nonce.size(), tag_len, aad.data(), aad.size(), ct.data(), len,
               back.data(), true, tag2);
      ASSERT_TRUE(back == pt) << v.Name() << ", " << len << " bytes";
      ASSERT_EQ(Hex(tag, 16), Hex(tag2, 16)) << v.Name() << ", " << len << " bytes";
      if (len % 32 == 0 && len > 0) {  // b = 16: a pair, swapped (section 8.3)
        Bytes longer = pt, ct2(len + 5);
        for (int i = 0; i < 5; i++) longer.push_back(static_cast<uint8_t>(rng()));
        OtrCrypt(key, v, nonce.data(), nonce.size(), tag_len, aad.data(), aad.size(), longer.data(),
                 len + 5, ct2.data(), false, tag2);
        EXPECT_EQ(Hex(ct2.data(), len - 32), Hex(ct.data(), len - 32)) << v.Name() << ", " << len;
        EXPECT_EQ(Hex(ct2.data() + len - 32, 16), Hex(ct.data() + len - 16, 16))
            << v.Name() << ", " << len;
        EXPECT_EQ(Hex(ct2.data() + len - 16, 16), Hex(ct.data() + len - 32, 16))
            << v.Name() << ", " << len;
      }
    }
  }
  // Empty AD: v3.1's s doubles U (section 7), so p and s differ; v2's s adds TA = 0
  // to Delta (section 10), so they agree.
  for (bool v2 : {false, true}) {
    const Bytes key = RandomBytes(rng, 16), nonce = RandomBytes(rng, 12), pt = RandomBytes(rng, 40);
    Bytes ct_p(40), ct_s(40);
    uint8_t tag_p[16], tag_s[16];
    OtrVariant p, s;
    p.v2 = s.v2 = v2;
    s.serial = true;
    OtrCrypt(key, p, nonce.data(), 12, 16, nullptr, 0, pt.data(), 40, ct_p.data(), false, tag_p);
    OtrCrypt(key, s, nonce.data(), 12, 16, nullptr, 0, pt.data(), 40, ct_s.data(), false, tag_s);
    EXPECT_EQ(ct_p == ct_s && std::memcmp(tag_p, tag_s, 16) == 0, v2) << (v2 ? "v2" : "v3.1");
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
    RememberKey(key, key_len);
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
    CheckScrubbed(what);
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
// with the reference (m's ciphertext and tag) and returns an AssertionResult
// that names the case.

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

  // One-shot seal of m; ciphertext and tag must be the reference's (m's).
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
      return Fail(m, pl, what) << "ciphertext differs from " << m.Reference() << " at byte " << bad << " (block "
                               << bad / 16 << "); " << CountDiff(out + bad, m.ct.data() + bad, n - bad)
                               << " of the last " << n - bad << " bytes differ\n  want "
                               << BlockAt(m.ct.data(), n, bad) << "\n  got  " << BlockAt(out, n, bad);
    }
    if (std::memcmp(tag, m.tag.data(), m.tag_len) != 0) {
      return Fail(m, pl, what) << "tag " << Hex(tag, m.tag_len) << ", " << m.Reference() << " "
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
  // nothing written around it.  An OTR input whose short tag happens to be
  // the right one for what the input became (1 time in 256 with a 1-byte tag)
  // is not tried: nothing is wrong with it.
  ::testing::AssertionResult OpenMustFail(const Msg &m, const Bytes &nonce, const Bytes &aad,
                                          const Bytes &ct, const uint8_t *tag, size_t tag_len,
                                          const Place &pl, const std::string &what) {
    if (OtrForgeryByChance(m, nonce, aad, ct, tag, tag_len)) return ::testing::AssertionSuccess();
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
      return Fail(m, pl, what) << "tag " << Hex(tag, m.tag_len) << ", " << m.Reference() << " "
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
      if (r != 0) {
        return Fail(m, pl, what) << "returned " << r << " for " << m.Reference() << " tag";
      }
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

// GCM-SIV takes keys of 16 and 32 bytes (RFC 8452), of the sizes the set takes;
// so does OTR (DESIGN.md: AES-128 and AES-256, the sizes of its vectors).
bool SivTakesKeyLen(size_t key_len) {
  return (key_len == 16 || key_len == 32) && KeyLenSupported(key_len);
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
// the kernel, and for modes this file has no suite for yet (not "gcm",
// "gcm-siv" or of the OTR family, "otr..."; an "otr..." mode that is not one of
// kOtrModes fails).  Tests of one mode alone are AeadGcm's, AeadGcmSiv's and
// AeadOtr's.
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
    if (!IsMode(*a_, "gcm") && !IsMode(*a_, "gcm-siv") && !IsOtrModeName(a_->mode)) {
      GTEST_SKIP() << a_->name << ": mode " << (a_->mode ? a_->mode : "(null)")
                   << " has no suite in aead_tests.cc yet";
    }
    if (Otr()) {
      ASSERT_TRUE(OtrVariantOfMode(a_->mode, &otr_variant_))
          << a_->name << ": mode " << a_->mode
          << " is of the OTR family but none this harness knows (otr, otr-v2, otr-s, otr-v2-s)";
    }
    key_lens_ = SupportedKeyLens();
    ASSERT_FALSE(key_lens_.empty()) << "aesgen_key_bits_supported is 0";
    if (Siv() || Otr()) {
      key_lens_.erase(std::remove_if(key_lens_.begin(), key_lens_.end(),
                                     [](size_t k) { return !SivTakesKeyLen(k); }),
                      key_lens_.end());
      ASSERT_FALSE(key_lens_.empty())
          << a_->mode << " takes 16- and 32-byte keys, and aesgen_key_bits_supported = "
          << aesgen_key_bits_supported << " has neither";
    }
  }
  const aesgen_aead &a() const { return *a_; }
  bool Siv() const { return IsMode(*a_, "gcm-siv"); }
  bool Otr() const { return IsOtrModeName(a_->mode); }
  // Whether the kernel has the streaming entries (GCM; GCM-SIV and OTR do not).
  bool Streams() const { return IsMode(*a_, "gcm"); }
  // The key lengths init must take: the set's (GCM), of them 16 and 32 (GCM-SIV, OTR).
  bool TakesKeyLen(size_t key_len) const {
    return Siv() || Otr() ? SivTakesKeyLen(key_len) : KeyLenSupported(key_len);
  }
  size_t KeyLen(size_t i) const { return key_lens_[i % key_lens_.size()]; }
  // GCM-SIV: always 16, its one tag length.  OTR: 16 half the time (its usual
  // length), else any of 1..16.
  size_t RandomTagLen(std::mt19937_64 &rng) const {
    if (Siv()) return 16;
    if (Otr() && Uniform(rng, 0, 1)) return 16;
    return Uniform(rng, a_->tag_min, a_->tag_max);
  }
  // A nonce length the kernel takes: GCM-SIV 12; OTR 1..15, 12 (CAESAR's) half
  // the time; GCM anything from 1 to kMaxNonce, mostly 12.
  size_t RandomNonceLenOfMode(std::mt19937_64 &rng) const {
    if (Siv()) return 12;
    if (Otr()) return Uniform(rng, 0, 1) ? 12 : Uniform(rng, kOtrNonceMin, kOtrNonceMax);
    return RandomNonceLen(rng);
  }
  // A message of the kernel's mode, not sealed yet.
  Msg NewMsg() const {
    Msg m;
    m.siv = Siv();
    m.otr = Otr();
    m.otr_variant = otr_variant_;
    return m;
  }
  // A random message (sealed by the reference) under a new key of key_len
  // bytes.  GCM-SIV: the nonce is always 12 bytes, whatever nonce_len says (it
  // takes no other length; GcmSivLengthsOutOfRange tries the others).  OTR: a
  // nonce_len over 15 is taken as 15 (OtrLengthsOutOfRange tries the others).
  // tag_len 0: a random one the kernel takes.
  Msg RandomMsg(std::mt19937_64 &rng, size_t key_len, size_t len = SIZE_MAX,
                size_t nonce_len = 0, size_t aad_len = SIZE_MAX, size_t tag_len = 0) const {
    Msg m = NewMsg();
    m.key = RandomBytes(rng, key_len);
    if (Otr() && nonce_len > kOtrNonceMax) nonce_len = kOtrNonceMax;
    m.nonce = RandomBytes(rng, Siv() ? 12 : nonce_len ? nonce_len : RandomNonceLenOfMode(rng));
    m.aad = PoolBytes(rng, aad_len != SIZE_MAX ? aad_len : RandomAadLen(rng));
    m.pt = PoolBytes(rng, len != SIZE_MAX ? len : RandomMsgLen(rng));
    m.tag_len = tag_len ? tag_len : RandomTagLen(rng);
    m.Seal();
    return m;
  }

  const aesgen_aead *a_ = nullptr;
  std::vector<size_t> key_lens_;
  OtrVariant otr_variant_;  // of an OTR kernel
};

// The tests of one mode alone: instantiated over that mode's kernels only (a
// kernel of another mode is not a case of them, rather than a skipped one).
// AeadOtr's are instantiated over every kernel of the OTR family ("otr...").
class AeadGcm : public Aead {};
class AeadGcmSiv : public Aead {};
class AeadOtr : public Aead {};

// The indices in aesgen_aeads[] of the kernels of ``mode``.
std::vector<size_t> AeadIndicesOfMode(const char *mode) {
  std::vector<size_t> found;
  for (size_t i = 0; i < aesgen_aead_count; i++)
    if (IsMode(AeadAt(i), mode)) found.push_back(i);
  return found;
}

// The indices of the kernels of the OTR family (modes "otr", "otr-v2", "otr-s",
// "otr-v2-s", and any other "otr..." one, which AeadOtr then fails).
std::vector<size_t> AeadIndicesOfOtr() {
  std::vector<size_t> found;
  for (size_t i = 0; i < aesgen_aead_count; i++)
    if (IsOtrModeName(AeadAt(i).mode)) found.push_back(i);
  return found;
}

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
// NULL for a mode nobody has.  The GCM choice also passes the spec vectors, the
// GCM-SIV one RFC 8452's, an OTR one the Appendix A vectors of its variant.
TEST(AeadRegistry, BestAeadRunsHere) {
  const uint64_t have = CpuFeatures();
  std::vector<std::string> modes = {"gcm", "gcm-siv", "otr", "otr-v2"};
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
    if (mode == "gcm-siv") {
      size_t ran = 0;
      for (const SivVector &v : kSivVectors) {
        Msg m = SivVectorMsg(v);
        if (!SivTakesKeyLen(m.key.size())) continue;
        AeadCtx ctx(*best);
        Buffers buf(128, 64);
        Driver d(*best, ctx, buf);
        EXPECT_TRUE(d.SealOpen(m, Place::AllAtEnd(), Place::AllAtStart())) << v.name;
        ran++;
      }
      EXPECT_GT(ran, 0u);
    }
    OtrVariant ov;
    if (OtrVariantOfMode(mode.c_str(), &ov)) {
      size_t ran = 0;
      for (const OtrSpecVector &t : kOtrVectors) {
        if (!OtrVectorIs(t, ov)) continue;
        Msg m = OtrVectorMsg(t);
        if (!SivTakesKeyLen(m.key.size())) continue;
        AeadCtx ctx(*best);
        Buffers buf(128, 64);
        Driver d(*best, ctx, buf);
        EXPECT_TRUE(d.SealOpen(m, Place::AllAtEnd(), Place::AllAtStart())) << t.name;
        ran++;
      }
      EXPECT_GT(ran, 0u) << "no " << ov.Name() << " vector has a key size the set takes";
    } else if (IsOtrModeName(mode.c_str())) {
      ADD_FAILURE() << "mode " << mode << " is of the OTR family but none this harness knows";
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
  if (IsMode(a, "gcm-siv")) {
    // RFC 8452 as DESIGN.md fixes it: 12-byte nonces, 16-byte tags, no FACE; and
    // no streaming (the tag, computed over the whole plaintext, comes first).
    EXPECT_EQ(a.nonce_min, 12u) << a.name;
    EXPECT_EQ(a.nonce_max, 12u) << a.name;
    EXPECT_EQ(a.tag_min, 16u) << a.name;
    EXPECT_EQ(a.tag_max, 16u) << a.name;
    EXPECT_STREQ(a.face, "none") << a.name;
    EXPECT_EQ(a.start, nullptr) << a.name << ": GCM-SIV cannot stream";
    EXPECT_EQ(a.aad, nullptr) << a.name << ": GCM-SIV cannot stream";
    EXPECT_EQ(a.encrypt, nullptr) << a.name << ": GCM-SIV cannot stream";
    EXPECT_EQ(a.decrypt, nullptr) << a.name << ": GCM-SIV cannot stream";
    EXPECT_EQ(a.finish_seal, nullptr) << a.name << ": GCM-SIV cannot stream";
    EXPECT_EQ(a.finish_open, nullptr) << a.name << ": GCM-SIV cannot stream";
  }
  if (IsOtrModeName(a.mode)) {
    // specs/aes-otr.md as DESIGN.md fixes it: nonces of 1..15 bytes, tags of
    // 1..16, no FACE; one-shot only.
    OtrVariant v;
    EXPECT_TRUE(OtrVariantOfMode(a.mode, &v)) << a.name << ": mode " << a.mode;
    EXPECT_EQ(a.nonce_min, kOtrNonceMin) << a.name;
    EXPECT_EQ(a.nonce_max, kOtrNonceMax) << a.name;
    EXPECT_EQ(a.tag_min, kOtrTagMin) << a.name;
    EXPECT_EQ(a.tag_max, kOtrTagMax) << a.name;
    EXPECT_STREQ(a.face, "none") << a.name;
    EXPECT_EQ(a.start, nullptr) << a.name << ": OTR kernels are one-shot";
    EXPECT_EQ(a.aad, nullptr) << a.name << ": OTR kernels are one-shot";
    EXPECT_EQ(a.encrypt, nullptr) << a.name << ": OTR kernels are one-shot";
    EXPECT_EQ(a.decrypt, nullptr) << a.name << ": OTR kernels are one-shot";
    EXPECT_EQ(a.finish_seal, nullptr) << a.name << ": OTR kernels are one-shot";
    EXPECT_EQ(a.finish_open, nullptr) << a.name << ": OTR kernels are one-shot";
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
    const Bytes before(ctx.ctx(), ctx.ctx() + ctx.size());
    int r = ctx.Init(buf.Key(Bytes(key.begin(), key.begin() + static_cast<std::ptrdiff_t>(len)), true),
                     len);
    if (TakesKeyLen(len)) {
      EXPECT_EQ(r, 0) << a().name << ": init with a supported key of " << len << " bytes";
    } else if (Siv()) {
      EXPECT_EQ(r, -1) << a().name << ": init with a key of " << len
                       << " bytes must return -1 (GCM-SIV takes 16 or 32 bytes, of "
                          "aesgen_key_bits_supported = "
                       << aesgen_key_bits_supported << ")";
      // ... and leave the context as it was.
      size_t at = FirstDiff(before.data(), ctx.ctx(), ctx.size());
      EXPECT_EQ(at, ctx.size()) << a().name << ": init refusing a " << len
                                << "-byte key changed the context, first at offset " << at;
    } else if (Otr()) {
      EXPECT_EQ(r, -1) << a().name << ": init with a key of " << len
                       << " bytes must return -1 (OTR takes 16 or 32 bytes, of "
                          "aesgen_key_bits_supported = "
                       << aesgen_key_bits_supported << ")";
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
    if (Siv()) {
      // GCM-SIV: a refused init (a 24-byte key) leaves the key it had in use.
      EXPECT_EQ(ctx.Init(buf.Key(Bytes(key.begin(), key.begin() + 24), true), 24), -1);
      ASSERT_TRUE(d.Seal(m, Place::Random(rng))) << "after init refused a 24-byte key";
      ASSERT_TRUE(d.Open(m, Place::Random(rng))) << "after init refused a 24-byte key";
    }
  }
}

// ---------------------------------------------------------------------------
// Known answers

// Not for GCM-SIV: GCM's specification vectors (GcmSivRfc8452Vectors has RFC 8452's)
TEST_P(AeadGcm, GcmSpecVectors) {
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
    if (Streams()) {  // GCM-SIV and OTR cannot stream
      ASSERT_TRUE(d.StreamSeal(m, rng)) << "case " << c;
      ASSERT_TRUE(d.StreamOpen(m, rng)) << "case " << c;
    }
  }
}

// Every tag length from tag_min to tag_max: the tag is the prefix of the full
// one; open accepts it and refuses it with one bit flipped.
// Not for GCM-SIV: GCM-SIV has one tag length, 16, which every other test uses
// (GcmSivLengthsOutOfRange tries the others)
TEST_P(AeadGcm, EveryTagLength) {
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

// Not for GCM-SIV: GCM-SIV cannot stream (start, aad, encrypt, decrypt, finish_seal and
// finish_open are NULL: AeadEntry.Descriptor checks)
TEST_P(AeadGcm, StreamingRandomPieces) {
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
// Not for GCM-SIV: GCM-SIV cannot stream (start, aad, encrypt, decrypt, finish_seal and
// finish_open are NULL: AeadEntry.Descriptor checks)
TEST_P(AeadGcm, StreamingWithoutAadOrData) {
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
// Not for GCM-SIV: GCM-SIV cannot stream (start, aad, encrypt, decrypt, finish_seal and
// finish_open are NULL: AeadEntry.Descriptor checks)
TEST_P(AeadGcm, StreamingAadAfterDataIsRefused) {
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
// Not for GCM-SIV: GCM-SIV cannot stream (start, aad, encrypt, decrypt, finish_seal and
// finish_open are NULL: AeadEntry.Descriptor checks)
TEST_P(AeadGcm, TwoContextsInterleaved) {
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
// Tampering: open refuses, zeroes out[0..len), finish_open refuses.  For
// GCM-SIV (and OTR at 1 and 15 bytes) a nonce one byte short or long is a nonce
// length it refuses, with out[0..len) zeroed all the same.  For OTR the right
// tag cut short is refused too (GCM takes it: truncation); a tampered input
// whose OTR tag of a byte or two happens to be right is left out (OpenMustFail).

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
    if (m.tag_len > a().tag_min && !Otr()) {
      // A shorter prefix of the right tag is a right tag (GCM truncation).
      Msg s = m;
      s.tag_len = Uniform(rng, a().tag_min, m.tag_len - 1);
      ASSERT_TRUE(d.Open(s, Place::Random(rng))) << "a right tag cut to " << s.tag_len << " bytes";
    }
    if (m.tag_len > a().tag_min && Otr()) {
      // OTR binds the tag length into Format: the right tag cut short is not the
      // tag of that length (which the same message sealed with it has).
      v = base, v.tag_len = Uniform(rng, a().tag_min, m.tag_len - 1);
      v.what = "the right tag cut to " + std::to_string(v.tag_len) + " bytes (sealed with " +
               std::to_string(m.tag_len) + "; the tag length is in Format)";
      vs.push_back(v);
      Msg s = m;
      s.tag_len = v.tag_len;
      s.Seal();
      ASSERT_TRUE(d.Open(s, Place::Random(rng))) << "the message sealed with a " << s.tag_len
                                                 << "-byte tag";
    }
    for (const Variant &t : vs) {
      ASSERT_TRUE(d.OpenMustFail(m, t.nonce, t.aad, t.ct, t.tag.data(), t.tag_len,
                                 Place::Random(rng, Uniform(rng, 0, 3) == 0), t.what));
      if (Streams()) {  // GCM-SIV and OTR cannot stream
        ASSERT_TRUE(d.StreamOpen(m, t.nonce, t.aad, t.ct, t.tag.data(), t.tag_len, rng, false, t.what));
      }
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

// Not for GCM-SIV: GCM's lengths and limits, and streaming (GcmSivLengthsOutOfRange has
// GCM-SIV's)
TEST_P(AeadGcm, LengthsOutOfRange) {
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
    // Over the mode's limit open writes nothing (DESIGN.md: "except for a length over the
    // mode's limit, where it writes nothing").
    EXPECT_TRUE(AllBytes(out, n, kPattern)) << "open over the mode's AAD limit must write nothing";
  }
  ASSERT_EQ(ctx.problems(), 0u);
  // The context still works.
  ASSERT_TRUE(d.Seal(m, Place::Random(rng)));
  ASSERT_TRUE(d.Open(m, Place::Random(rng)));
}

// ---------------------------------------------------------------------------
// The inc32 counter wraps inside a message

// Not for GCM-SIV: GCM's inc32 from J0 (GcmSivCounterWrap has GCM-SIV's counter)
TEST_P(AeadGcm, Inc32WrapInsideMessage) {
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
      Msg m = NewMsg();
      m.key = key;
      if (c % 8 == 7 && !Siv()) {  // GCM-SIV: 12-byte nonces only
        m.nonce = RandomBytes(rng, RandomNonceLenOfMode(rng));
      } else {
        m.nonce = iv;
        for (size_t b = 0; b < 8; b++) m.nonce[4 + b] ^= static_cast<uint8_t>(seq >> (56 - 8 * b));
      }
      m.aad = PoolBytes(rng, Uniform(rng, 0, 1) ? 5 : RandomAadLen(rng));
      m.pt = PoolBytes(rng, RandomMsgLen(rng));
      m.tag_len = c % 3 ? 16 : RandomTagLen(rng);
      m.Seal();
      SCOPED_TRACE("message " + std::to_string(c) + " on one context");
      switch (!Streams() && c % 5 == 3 ? 0 : c % 5) {  // GCM-SIV and OTR cannot stream
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
          if (!Streams()) {
            ASSERT_TRUE(d.Open(m, Place::Random(rng)));
          } else {
            ASSERT_TRUE(d.StreamOpen(m, rng));
          }
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
// after long messages (FACE tables filled) and an abandoned stream (GCM).
TEST_P(Aead, RekeyWithoutWipe) {
  auto rng = TestRng(0x5051);
  Buffers buf(3 * 4096 + 512);
  AeadCtx ctx(a());
  Driver d(a(), ctx, buf);
  for (size_t c = 0; c < Cases(5); c++) {
    Bytes nonce = RandomBytes(rng, c % 3 == 2 && !Siv() ? std::min<size_t>(16, a().nonce_max) : 12);
    Bytes aad = PoolBytes(rng, 20);
    Bytes long_pt = PoolBytes(rng, 2 * 4096 + Uniform(rng, 0, 4096));
    Bytes short_pt = PoolBytes(rng, Uniform(rng, 1, 100));
    for (size_t round = 0; round < 3; round++) {
      Bytes key = RandomBytes(rng, KeyLen(c + round));
      ASSERT_TRUE(d.Init(key));
      SCOPED_TRACE("key " + std::to_string(round) + " of 3 on one context, no wipe between");
      for (const Bytes *pt : {&long_pt, &short_pt}) {
        Msg m = NewMsg();
        m.key = key, m.nonce = nonce, m.aad = aad, m.pt = *pt, m.tag_len = RandomTagLen(rng);
        m.Seal();
        ASSERT_TRUE(d.Seal(m, Place::Random(rng)));
        ASSERT_TRUE(d.Open(m, Place::Random(rng)));
      }
      if (!Streams()) continue;  // GCM-SIV and OTR cannot stream
      // A stream left half done before the next init.
      Msg m = NewMsg();
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
      if (!Streams() && (s == 2 || s == 3)) continue;  // GCM-SIV and OTR cannot stream
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
      if (Streams()) {  // GCM-SIV and OTR cannot stream
        ASSERT_TRUE(d.StreamSeal(m, rng)) << "fill " << fill;
      }
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
    if (Streams()) {  // GCM-SIV and OTR cannot stream
      ASSERT_TRUE(d.StreamSeal(m, rng));
      ASSERT_TRUE(d.StreamOpen(m, rng));
    }
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
      bad[std::min<size_t>(1, m.tag_len - 1)] ^= 0x04;  // inside the tag (OTR's may be 1 byte)
      out = m.pt.empty() ? nullptr : buf.Out(m.pt.size(), true, &ao);
      EXPECT_EQ(ctx.Open(nonce, 12, aad, m.aad.size(), ct, m.pt.size(), out,
                         buf.TagIn(bad.data(), m.tag_len, true), m.tag_len),
                -1);
      if (out) {
        EXPECT_TRUE(AllBytes(out, m.pt.size(), 0));
      }
      if (!Streams()) {  // GCM-SIV and OTR cannot stream
        ASSERT_EQ(ctx.problems(), 0u);
        continue;
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

// ---------------------------------------------------------------------------
// GCM-SIV (RFC 8452).  The tests above that apply to GCM-SIV run its kernels too
// (against the GCM-SIV reference, with 12-byte nonces and 16-byte tags); these
// are GCM-SIV's own.

// RFC 8452 Appendix C through the kernel: one-shot, at both ends of the guard
// pages, in place; each refused with a bit of the tag or of the ciphertext flipped.
TEST_P(AeadGcmSiv, GcmSivRfc8452Vectors) {
  auto rng = TestRng(0x5070);
  size_t ran = 0;
  for (const SivVector &v : kSivVectors) {
    Msg m = SivVectorMsg(v);
    AeadCtx ctx(a());
    Buffers buf(256, 256);
    Driver d(a(), ctx, buf);
    if (!TakesKeyLen(m.key.size())) {
      EXPECT_EQ(ctx.Init(buf.Key(m.key, true), m.key.size()), -1) << v.name;
      continue;
    }
    ran++;
    ASSERT_TRUE(d.SealOpen(m, Place::AllAtEnd(), Place::AllAtEnd())) << v.name;
    ASSERT_TRUE(d.SealOpen(m, Place::AllAtStart(), Place::Random(rng, true))) << v.name;
    ASSERT_TRUE(d.Seal(m, Place::Random(rng, true))) << v.name;
    Block16 bad = m.tag;
    bad[Uniform(rng, 0, 15)] ^= static_cast<uint8_t>(1u << Uniform(rng, 0, 7));
    ASSERT_TRUE(d.OpenMustFail(m, m.nonce, m.aad, m.ct, bad.data(), 16, Place::Random(rng),
                               "a tag with one bit flipped"))
        << v.name;
    if (!m.ct.empty()) {
      Bytes ct = m.ct;
      ct[Uniform(rng, 0, ct.size() - 1)] ^= static_cast<uint8_t>(1u << Uniform(rng, 0, 7));
      ASSERT_TRUE(d.OpenMustFail(m, m.nonce, m.aad, ct, m.tag.data(), 16, Place::Random(rng, true),
                                 "a ciphertext bit flipped"))
          << v.name;
    }
  }
  EXPECT_GT(ran, 0u) << "no vector has a key size this kernel takes";
}

// The 32-bit counter wraps inside a message: the C.3 vectors (at the second
// block), then messages whose tag is chosen (SivWrapMsg) so that it wraps at data
// block `before`: the first blocks, both sides of batches of 4, 8, 16, ... blocks,
// and deep inside messages up to 64 KiB.  A carry out of bytes 0..3 (a 64- or
// 128-bit counter) gets every block from the wrap on wrong.
TEST_P(AeadGcmSiv, GcmSivCounterWrap) {
  auto rng = TestRng(0x5071);
  Buffers buf(16 * 4200, 64);
  AeadCtx ctx(a());
  Driver d(a(), ctx, buf);
  size_t vectors = 0;
  for (const SivVector &v : kSivVectors) {
    Msg m = SivVectorMsg(v);
    if (!IsWrapVector(v) || !TakesKeyLen(m.key.size())) continue;
    vectors++;
    ASSERT_TRUE(d.SealOpen(m, Place::AllAtEnd(), Place::AllAtStart())) << v.name;
    ASSERT_TRUE(d.SealOpen(m, Place::Random(rng, true), Place::Random(rng, true))) << v.name;
  }
  if (TakesKeyLen(32)) {
    EXPECT_EQ(vectors, 2u) << "both C.3 vectors";
  }
  std::vector<uint32_t> befores = {1,  2,  3,  4,  5,   7,   8,   9,   15,  16,  17, 31,
                                   32, 33, 63, 64, 65, 127, 128, 129, 255, 256, 257};
  for (size_t c = 0; c < Cases(8); c++) {
    befores.push_back(static_cast<uint32_t>(Uniform(rng, 258, 4096)));
  }
  for (size_t i = 0; i < befores.size(); i++) {
    const uint32_t before = befores[i];
    const size_t len = 16 * (before + Uniform(rng, 1, 40)) + Uniform(rng, 0, 15);
    Msg m = SivWrapMsg(rng, KeyLen(i), before, len, Uniform(rng, 0, 40), i % 2 == 1);
    SCOPED_TRACE("tag " + Hex(m.tag.data(), 16) + ": the counter wraps at data block " +
                 std::to_string(before) + " of " + std::to_string((len + 15) / 16));
    ASSERT_TRUE(d.SealOpen(m, Place::Random(rng, i % 3 == 0), Place::Random(rng, i % 3 == 1)));
  }
}

// Lengths GCM-SIV refuses.  A nonce other than 12 bytes (0 also with NULL), a tag
// other than 16 bytes: seal returns -1 and writes nothing, open returns -1 with
// out[0..len) zero (in place too).  A message or AAD over 2^36 bytes (RFC 8452,
// section 6; also lengths that overflow when rounded up to whole blocks): seal
// and open return -1 and write nothing, and nothing is read past the one page
// each pointer has.  (2^36 itself is allowed but not tried: 64 GiB.)
TEST_P(AeadGcmSiv, GcmSivLengthsOutOfRange) {
  auto rng = TestRng(0x5072);
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
  std::vector<Lens> cases = {{"nonce_len 0, nonce NULL", 0, 16, true},
                             {"nonce_len 0", 0, 16, false},
                             {"nonce_len 1", 1, 16, false},
                             {"nonce_len 11", 11, 16, false},
                             {"nonce_len 13", 13, 16, false},
                             {"nonce_len 16", 16, 16, false},
                             {"nonce_len 24", 24, 16, false},
                             {"nonce_len SIZE_MAX", SIZE_MAX, 16, false},
                             {"nonce_len 11 and tag_len 15", 11, 15, false}};
  for (size_t t : {size_t{0}, size_t{1}, size_t{4}, size_t{8}, size_t{12}, size_t{15}, size_t{17},
                   size_t{32}, SIZE_MAX}) {
    cases.push_back({"tag_len " + std::to_string(t), 12, t, false});
  }
  // The first 12 nonce bytes are the message's: a kernel that ignored nonce_len
  // would seal and open it.
  Bytes nonce_bytes = RandomBytes(rng, 64);
  std::copy(m.nonce.begin(), m.nonce.end(), nonce_bytes.begin());
  for (const Lens &l : cases) {
    for (bool in_place : {false, true}) {
      SCOPED_TRACE(std::string(a().name) + ": " + l.what + (in_place ? ", in place" : "") + ", " +
                   m.Describe());
      const uint8_t *nonce = l.null_nonce ? nullptr : buf.Nonce(nonce_bytes, false);
      const uint8_t *aad = buf.Aad(m.aad.data(), m.aad.size(), true);
      Around ao, at;
      uint8_t *in = buf.In(m.pt.data(), n, true), *out;
      if (in_place) {
        out = in;
        buf.AroundIn(in, n, &ao);
      } else {
        out = buf.Out(n, true, &ao);
      }
      // seal: -1, nothing written.
      uint8_t *tag = buf.TagOut(64, false, &at);
      EXPECT_EQ(ctx.Seal(nonce, l.nonce_len, aad, m.aad.size(), in, n, out, tag, l.tag_len), -1);
      if (in_place) {
        EXPECT_EQ(FirstDiff(out, m.pt.data(), n), n) << "seal wrote to out (in place)";
      } else {
        EXPECT_TRUE(AllBytes(out, n, kPattern)) << "seal wrote to out";
      }
      EXPECT_TRUE(AllBytes(tag, 64, kPattern) && Buffers::Stray(at, "tag").empty())
          << "seal wrote the tag";
      EXPECT_EQ(Buffers::Stray(ao, "out"), "");
      // open (of the right ciphertext and 16-byte tag): -1, out[0..len) zero.
      in = buf.In(m.ct.data(), n, true);
      if (in_place) {
        out = in;
        buf.AroundIn(in, n, &ao);
      } else {
        out = buf.Out(n, true, &ao);
      }
      const uint8_t *tag_in = buf.TagIn(m.tag.data(), 16, false);
      EXPECT_EQ(ctx.Open(nonce, l.nonce_len, aad, m.aad.size(), in, n, out, tag_in, l.tag_len), -1);
      EXPECT_TRUE(AllBytes(out, n, 0)) << "open returned -1 without zeroing out[0..len)";
      EXPECT_EQ(Buffers::Stray(ao, "out"), "");
      ASSERT_EQ(ctx.problems(), 0u);
    }
  }

  const size_t over[] = {static_cast<size_t>(kSivMaxLen) + 1, static_cast<size_t>(kSivMaxLen) + 16,
                         size_t{1} << 40, SIZE_MAX - 14, SIZE_MAX};
  for (size_t big : over) {
    for (bool big_aad : {false, true}) {
      const size_t aad_len = big_aad ? big : m.aad.size(), len = big_aad ? n : big;
      SCOPED_TRACE(std::string(a().name) + ": " + (big_aad ? "AAD" : "message") + " of " +
                   std::to_string(big) + " bytes (2^36 + " + std::to_string(big - kSivMaxLen) +
                   ")");
      Around ao, at;
      const uint8_t *nonce = buf.Nonce(m.nonce, true);
      const uint8_t *aad = buf.Aad(m.aad.data(), m.aad.size(), !big_aad);
      const uint8_t *in = buf.In(m.pt.data(), n, big_aad);
      uint8_t *out = buf.Out(4096, false, &ao);
      uint8_t *tag = buf.TagOut(64, false, &at);
      EXPECT_EQ(ctx.Seal(nonce, 12, aad, aad_len, in, len, out, tag, 16), -1);
      EXPECT_TRUE(AllBytes(out, 4096, kPattern) && AllBytes(tag, 64, kPattern)) << "seal wrote";
      out = buf.Out(4096, false, &ao);
      const uint8_t *tag_in = buf.TagIn(m.tag.data(), 16, false);
      EXPECT_EQ(ctx.Open(nonce, 12, aad, aad_len, in, len, out, tag_in, 16), -1);
      EXPECT_TRUE(AllBytes(out, 4096, kPattern)) << "open over the limit must write nothing";
      ASSERT_EQ(ctx.problems(), 0u);
    }
  }
  // The context still works.
  ASSERT_TRUE(d.Seal(m, Place::Random(rng)));
  ASSERT_TRUE(d.Open(m, Place::Random(rng, true)));
}

// A context without a key (after wipe: every byte zero; also when an init on it
// was then refused) does not seal: -1, nothing written.  A good init then makes
// it work.
TEST_P(AeadGcmSiv, GcmSivSealWithoutKey) {
  auto rng = TestRng(0x5073);
  Buffers buf(4096);
  const char *scenarios[] = {"a new context, wiped", "init, seal, wipe",
                             "wipe, then init with a 24-byte key (refused)",
                             "wipe, then init with a 17-byte key (refused)"};
  for (size_t s = 0; s < 4; s++) {
    AeadCtx ctx(a());
    Driver d(a(), ctx, buf);
    Msg m = RandomMsg(rng, KeyLen(s), Uniform(rng, 0, 3000));
    SCOPED_TRACE(std::string(a().name) + ": seal on " + scenarios[s] + ", " + m.Describe());
    if (s == 1) {
      ASSERT_TRUE(d.Init(m.key));
      ASSERT_TRUE(d.Seal(m, Place::Random(rng)));
    }
    ctx.Wipe();
    if (s >= 2) {
      Bytes k = RandomBytes(rng, s == 2 ? 24 : 17);
      EXPECT_EQ(ctx.Init(buf.Key(k, true), k.size()), -1);
    }
    Around ao, at;
    const uint8_t *nonce = buf.Nonce(m.nonce, true), *aad = buf.Aad(m.aad.data(), m.aad.size(), true);
    const uint8_t *in = buf.In(m.pt.data(), m.pt.size(), true);
    uint8_t *out = buf.Out(m.pt.size(), true, &ao), *tag = buf.TagOut(16, true, &at);
    EXPECT_EQ(ctx.Seal(nonce, 12, aad, m.aad.size(), in, m.pt.size(), out, tag, 16), -1);
    EXPECT_TRUE(AllBytes(out, m.pt.size(), kPattern) && Buffers::Stray(ao, "out").empty())
        << "seal wrote to out";
    EXPECT_TRUE(AllBytes(tag, 16, kPattern) && Buffers::Stray(at, "tag").empty())
        << "seal wrote the tag";
    ASSERT_EQ(ctx.problems(), 0u);
    ASSERT_TRUE(d.SealOpen(m, Place::Random(rng), Place::Random(rng)));
  }
}

// ---------------------------------------------------------------------------
// AES-OTR (specs/aes-otr.md).  The tests above that apply run the OTR kernels
// too (against the OTR reference, with nonces of 1..15 bytes and tags of
// 1..16); these are OTR's own, instantiated over every kernel of the OTR family.

// Appendix A through the kernel: the vectors of its variant, one-shot, at both
// ends of the guard pages, in place; each refused with a bit of the tag or of
// the ciphertext flipped, or the AAD one byte longer.  For v3.1-p also the
// designers' b = 16 example (section 8.3).
TEST_P(AeadOtr, OtrSpecVectors) {
  auto rng = TestRng(0x5080);
  size_t ran = 0;
  for (const OtrSpecVector &t : kOtrVectors) {
    if (!OtrVectorIs(t, otr_variant_)) continue;
    Msg m = OtrVectorMsg(t);
    AeadCtx ctx(a());
    Buffers buf(256, 256);
    Driver d(a(), ctx, buf);
    if (!TakesKeyLen(m.key.size())) {
      EXPECT_EQ(ctx.Init(buf.Key(m.key, true), m.key.size()), -1) << t.name;
      continue;
    }
    ran++;
    ASSERT_TRUE(d.SealOpen(m, Place::AllAtEnd(), Place::AllAtEnd())) << t.name;
    ASSERT_TRUE(d.SealOpen(m, Place::AllAtStart(), Place::Random(rng, true))) << t.name;
    ASSERT_TRUE(d.Seal(m, Place::Random(rng, true))) << t.name;
    Block16 bad = m.tag;
    bad[Uniform(rng, 0, m.tag_len - 1)] ^= static_cast<uint8_t>(1u << Uniform(rng, 0, 7));
    ASSERT_TRUE(d.OpenMustFail(m, m.nonce, m.aad, m.ct, bad.data(), m.tag_len, Place::Random(rng),
                               "a tag with one bit flipped"))
        << t.name;
    if (!m.ct.empty()) {
      Bytes ct = m.ct;
      ct[Uniform(rng, 0, ct.size() - 1)] ^= static_cast<uint8_t>(1u << Uniform(rng, 0, 7));
      ASSERT_TRUE(d.OpenMustFail(m, m.nonce, m.aad, ct, m.tag.data(), m.tag_len,
                                 Place::Random(rng, true), "a ciphertext bit flipped"))
          << t.name;
    }
    Bytes aad = m.aad;
    aad.push_back(0x00);
    ASSERT_TRUE(d.OpenMustFail(m, m.nonce, aad, m.ct, m.tag.data(), m.tag_len, Place::Random(rng),
                               "the AAD one byte longer"))
        << t.name;
  }
  EXPECT_GT(ran, 0u) << "no " << otr_variant_.Name() << " vector has a key size this kernel takes";
  if (!otr_variant_.v2 && !otr_variant_.serial && TakesKeyLen(16)) {
    Msg m[2];
    for (size_t i = 0; i < 2; i++) {
      m[i] = NewMsg();
      m[i].key = OtrSpecBytes(16, 0);
      m[i].nonce = OtrSpecBytes(12, 0);
      m[i].pt = OtrSpecBytes(32 + i, 0);
      m[i].Seal();
    }
    ExpectDesignersB16Example(m[0].ct.data(), m[1].ct.data(), "the OTR reference");
    AeadCtx ctx(a());
    Buffers buf(64, 64);
    Driver d(a(), ctx, buf);
    ASSERT_TRUE(d.SealOpen(m[0], Place::AllAtEnd(), Place::AllAtStart()))
        << "the designers' 32-byte b = 16 example";
    ASSERT_TRUE(d.SealOpen(m[1], Place::AllAtStart(), Place::AllAtEnd()))
        << "the designers' 33-byte example";
  }
}

// Every nonce length (1..15) with every tag length (1..16): the message lengths
// and AAD lengths cycle through their classes.  Each is refused with a bit of
// the tag flipped, with the right tag cut one byte short (the tag length is in
// Format), and with the nonce one byte shorter or longer.
TEST_P(AeadOtr, OtrEveryNonceAndTagLength) {
  auto rng = TestRng(0x5081);
  const size_t lens[] = {0, 1, 15, 16, 17, 31, 32, 33, 47, 48, 63, 64, 65, 100, 128, 200, 257};
  const size_t aads[] = {0, 1, 15, 16, 17, 32, 33, 5, 0, 48};
  Buffers buf(300, 64);
  AeadCtx ctx(a());
  Driver d(a(), ctx, buf);
  size_t i = 0;
  for (size_t nonce_len = kOtrNonceMin; nonce_len <= kOtrNonceMax; nonce_len++) {
    for (size_t tag_len = kOtrTagMin; tag_len <= kOtrTagMax; tag_len++, i++) {
      Msg m = RandomMsg(rng, KeyLen(i), lens[i % 17], nonce_len, aads[i % 10], tag_len);
      SCOPED_TRACE("nonce_len " + std::to_string(nonce_len) + ", tag_len " +
                   std::to_string(tag_len));
      ASSERT_TRUE(d.SealOpen(m, Place::Random(rng, i % 4 == 0), Place::Random(rng, i % 4 == 1)));
      Block16 bad = m.tag;
      bad[Uniform(rng, 0, tag_len - 1)] ^= static_cast<uint8_t>(1u << Uniform(rng, 0, 7));
      ASSERT_TRUE(d.OpenMustFail(m, m.nonce, m.aad, m.ct, bad.data(), tag_len, Place::Random(rng),
                                 "a tag with one bit flipped"));
      if (tag_len > kOtrTagMin) {
        ASSERT_TRUE(d.OpenMustFail(m, m.nonce, m.aad, m.ct, m.tag.data(), tag_len - 1,
                                   Place::Random(rng), "the right tag cut one byte short"));
      }
      if (nonce_len > kOtrNonceMin) {
        Bytes nonce(m.nonce.begin(), m.nonce.end() - 1);
        ASSERT_TRUE(d.OpenMustFail(m, nonce, m.aad, m.ct, m.tag.data(), tag_len, Place::Random(rng),
                                   "the nonce one byte shorter"));
      }
      Bytes nonce = m.nonce;
      nonce.push_back(static_cast<uint8_t>(rng()));
      ASSERT_TRUE(d.OpenMustFail(m, nonce, m.aad, m.ct, m.tag.data(), tag_len, Place::Random(rng),
                                 nonce.size() > kOtrNonceMax ? "a 16-byte nonce"
                                                             : "the nonce one byte longer"));
    }
  }
}

// Every length class of the last pair (section 8.1: no tail, a partial or full
// single block, two blocks with b = 1..16) at every message length from 0 to 96
// bytes, both sides of 128, 160, 256 ... 4096, and long messages; AAD lengths
// around block boundaries; buffers at both ends of the guard pages and in
// place; refused with the last or the first ciphertext byte changed.
TEST_P(AeadOtr, OtrEveryLengthClass) {
  auto rng = TestRng(0x5082);
  std::vector<size_t> lens;
  for (size_t len = 0; len <= 96; len++) lens.push_back(len);
  for (size_t base : {128, 160, 256, 512, 1024, 2048, 4096}) {
    for (size_t delta : {17, 16, 15, 1}) lens.push_back(base - delta);
    for (size_t delta : {0, 1, 15, 16, 17}) lens.push_back(base + delta);
  }
  lens.push_back(65536);
  lens.push_back(65536 + 16);
  lens.push_back(65536 + 31);
  for (size_t c = 0; c < Cases(6); c++) lens.push_back(Uniform(rng, 4098, 70000));
  const size_t aads[] = {0, 1, 15, 16, 17, 31, 32, 33, 47, 48, 49, 64, 100, 0, 7};
  Buffers buf(70000 + 64, 128);
  AeadCtx ctx(a());
  Driver d(a(), ctx, buf);
  for (size_t i = 0; i < lens.size(); i++) {
    const size_t len = lens[i];
    Msg m = RandomMsg(rng, KeyLen(i), len, 0, aads[i % 15]);
    SCOPED_TRACE("message of " + std::to_string(len) + " bytes: " + std::to_string(len / 32) +
                 " pairs and " + std::to_string(len % 32) + " bytes");
    Place ip = Place::Random(rng, true);
    const Place places[3] = {Place::AllAtEnd(), Place::AllAtStart(), ip};
    ASSERT_TRUE(d.SealOpen(m, places[i % 3], places[(i + 1) % 3]));
    if (len != 0) {
      Bytes ct = m.ct;
      ct.back() ^= static_cast<uint8_t>(1u << Uniform(rng, 0, 7));
      ASSERT_TRUE(d.OpenMustFail(m, m.nonce, m.aad, ct, m.tag.data(), m.tag_len, places[i % 3],
                                 "the last ciphertext byte changed"));
      ct = m.ct;
      ct.front() ^= 0x01;
      ASSERT_TRUE(d.OpenMustFail(m, m.nonce, m.aad, ct, m.tag.data(), m.tag_len,
                                 Place::Random(rng, i % 2 == 0), "the first ciphertext byte changed"));
    }
  }
}

// Every AAD length from 0 to 80 bytes (the last AD block full or partial,
// section 6) and both sides of 128, 256, 1024 and 4096, with short messages;
// refused with an AAD bit flipped and with the AAD one byte short.
TEST_P(AeadOtr, OtrAadLengthClasses) {
  auto rng = TestRng(0x5083);
  std::vector<size_t> aads;
  for (size_t n = 0; n <= 80; n++) aads.push_back(n);
  for (size_t base : {128, 256, 1024, 4096}) {
    for (size_t n = base - 1; n <= base + 1; n++) aads.push_back(n);
  }
  Buffers buf(128, 4200);
  AeadCtx ctx(a());
  Driver d(a(), ctx, buf);
  for (size_t i = 0; i < aads.size(); i++) {
    Msg m = RandomMsg(rng, KeyLen(i), (5 * i) % 70, 0, aads[i]);
    SCOPED_TRACE("AAD of " + std::to_string(aads[i]) + " bytes");
    ASSERT_TRUE(d.SealOpen(m, Place::Random(rng, i % 3 == 0), Place::Random(rng, i % 3 == 1)));
    if (!m.aad.empty()) {
      Bytes aad = m.aad;
      aad[Uniform(rng, 0, aad.size() - 1)] ^= static_cast<uint8_t>(1u << Uniform(rng, 0, 7));
      ASSERT_TRUE(d.OpenMustFail(m, m.nonce, aad, m.ct, m.tag.data(), m.tag_len, Place::Random(rng),
                                 "an AAD bit flipped"));
      aad = m.aad;
      aad.pop_back();
      ASSERT_TRUE(d.OpenMustFail(m, m.nonce, aad, m.ct, m.tag.data(), m.tag_len, Place::Random(rng),
                                 "the AAD one byte short"));
    }
  }
}

// Section 8.3: a tail of two full blocks (b = 16) is the pair section 8.2 makes
// of them, with its two output blocks swapped.  After 0..34 pairs (every place
// in a batch of up to 32 pairs) and after random numbers of them: the message
// of 32(l + 1) bytes and the same followed by 1..32 more bytes, both through
// the kernel.
TEST_P(AeadOtr, OtrB16TailIsASwappedPair) {
  auto rng = TestRng(0x5084);
  std::vector<size_t> pairs;
  for (size_t p = 0; p <= 34; p++) pairs.push_back(p);
  for (size_t c = 0; c < Cases(4); c++) pairs.push_back(Uniform(rng, 35, 300));
  Buffers buf(32 * 302, 64);
  AeadCtx ctx(a());
  Driver d(a(), ctx, buf);
  for (size_t i = 0; i < pairs.size(); i++) {
    const size_t at = 32 * pairs[i];
    Msg m = RandomMsg(rng, KeyLen(i), at + 32, 0, Uniform(rng, 0, 40));
    Msg longer = m;
    for (size_t k = Uniform(rng, 1, 32); k > 0; k--) {
      longer.pt.push_back(static_cast<uint8_t>(rng()));
    }
    longer.Seal();
    SCOPED_TRACE(std::to_string(pairs[i]) + " pairs, then two full blocks; and then " +
                 std::to_string(longer.pt.size() - at - 32) + " bytes more");
    ASSERT_EQ(Hex(longer.ct.data() + at, 16), Hex(m.ct.data() + at + 16, 16)) << "the reference";
    ASSERT_EQ(Hex(longer.ct.data() + at + 16, 16), Hex(m.ct.data() + at, 16)) << "the reference";
    ASSERT_TRUE(d.SealOpen(m, Place::Random(rng, i % 2 == 0), Place::Random(rng, i % 3 == 0)));
    ASSERT_TRUE(d.SealOpen(longer, Place::Random(rng), Place::Random(rng)));
  }
}

// Lengths OTR refuses: a nonce of 0 bytes (also NULL) or of 16 or more, a tag of
// 0 bytes or of 17 or more.  seal returns -1 and writes nothing; open returns -1
// with out[0..len) zero (in place too).  The message's nonce is 15 bytes and
// the first 15 of the longer ones: a kernel that took the first 15 would open it.
TEST_P(AeadOtr, OtrLengthsOutOfRange) {
  auto rng = TestRng(0x5085);
  Buffers buf(4096);
  AeadCtx ctx(a());
  Driver d(a(), ctx, buf);
  Msg m = RandomMsg(rng, KeyLen(0), 100, kOtrNonceMax, 20, 16);
  ASSERT_TRUE(d.Init(m.key));
  const size_t n = m.pt.size();

  struct Lens {
    std::string what;
    size_t nonce_len, tag_len;
    bool null_nonce;
  };
  std::vector<Lens> cases = {{"nonce_len 0, nonce NULL", 0, 16, true},
                             {"nonce_len 0", 0, 16, false},
                             {"nonce_len 16", 16, 16, false},
                             {"nonce_len 17", 17, 16, false},
                             {"nonce_len 32", 32, 16, false},
                             {"nonce_len SIZE_MAX", SIZE_MAX, 16, false},
                             {"nonce_len 16 and tag_len 17", 16, 17, false}};
  for (size_t t : {size_t{0}, size_t{17}, size_t{32}, size_t{4096}, SIZE_MAX}) {
    cases.push_back({"tag_len " + std::to_string(t), kOtrNonceMax, t, false});
  }
  Bytes nonce_bytes = RandomBytes(rng, 64);
  std::copy(m.nonce.begin(), m.nonce.end(), nonce_bytes.begin());
  for (const Lens &l : cases) {
    for (bool in_place : {false, true}) {
      SCOPED_TRACE(std::string(a().name) + ": " + l.what + (in_place ? ", in place" : "") + ", " +
                   m.Describe());
      const uint8_t *nonce = l.null_nonce ? nullptr : buf.Nonce(nonce_bytes, false);
      const uint8_t *aad = buf.Aad(m.aad.data(), m.aad.size(), true);
      Around ao, at;
      uint8_t *in = buf.In(m.pt.data(), n, true), *out;
      if (in_place) {
        out = in;
        buf.AroundIn(in, n, &ao);
      } else {
        out = buf.Out(n, true, &ao);
      }
      uint8_t *tag = buf.TagOut(64, false, &at);
      EXPECT_EQ(ctx.Seal(nonce, l.nonce_len, aad, m.aad.size(), in, n, out, tag, l.tag_len), -1);
      if (in_place) {
        EXPECT_EQ(FirstDiff(out, m.pt.data(), n), n) << "seal wrote to out (in place)";
      } else {
        EXPECT_TRUE(AllBytes(out, n, kPattern)) << "seal wrote to out";
      }
      EXPECT_TRUE(AllBytes(tag, 64, kPattern) && Buffers::Stray(at, "tag").empty())
          << "seal wrote the tag";
      EXPECT_EQ(Buffers::Stray(ao, "out"), "");
      in = buf.In(m.ct.data(), n, true);
      if (in_place) {
        out = in;
        buf.AroundIn(in, n, &ao);
      } else {
        out = buf.Out(n, true, &ao);
      }
      // The right tag's bytes, as many as the buffer holds.
      Bytes tag_bytes(64, 0);
      std::copy(m.tag.begin(), m.tag.begin() + static_cast<std::ptrdiff_t>(m.tag_len),
                tag_bytes.begin());
      const uint8_t *tag_in = buf.TagIn(tag_bytes.data(), 64, false);
      EXPECT_EQ(ctx.Open(nonce, l.nonce_len, aad, m.aad.size(), in, n, out, tag_in, l.tag_len), -1);
      EXPECT_TRUE(AllBytes(out, n, 0)) << "open returned -1 without zeroing out[0..len)";
      EXPECT_EQ(Buffers::Stray(ao, "out"), "");
      ASSERT_EQ(ctx.problems(), 0u);
    }
  }
  // The context still works.
  ASSERT_TRUE(d.Seal(m, Place::Random(rng)));
  ASSERT_TRUE(d.Open(m, Place::Random(rng, true)));
}

// One context through many keys (init without wipe) beside a second context:
// each seals and opens under its own key whatever the other did, nonce and tag
// lengths change from message to message, and a message sealed under one key
// is refused by the context holding the other.
TEST_P(AeadOtr, OtrContextsAcrossKeys) {
  auto rng = TestRng(0x5086);
  Buffers buf(5000, 300);
  AeadCtx c1(a()), c2(a());
  Driver d1(a(), c1, buf), d2(a(), c2, buf);
  Bytes k1, k2;
  for (size_t c = 0; c < Cases(40); c++) {
    if (c % 4 == 0) {
      k1 = RandomBytes(rng, KeyLen(c));
      ASSERT_TRUE(d1.Init(k1));
    }
    if (c % 5 == 0) {
      k2 = RandomBytes(rng, KeyLen(c + 1));
      ASSERT_TRUE(d2.Init(k2));
    }
    Msg m1 = RandomMsg(rng, k1.size(), Uniform(rng, 0, 4900), 0, Uniform(rng, 0, 290));
    Msg m2 = RandomMsg(rng, k2.size(), Uniform(rng, 0, 4900), 0, Uniform(rng, 0, 290));
    m1.key = k1;
    m2.key = k2;
    m1.Seal();
    m2.Seal();
    SCOPED_TRACE("message " + std::to_string(c));
    ASSERT_TRUE(d1.Seal(m1, Place::Random(rng)));
    ASSERT_TRUE(d2.Seal(m2, Place::Random(rng)));
    ASSERT_TRUE(d2.Open(m2, Place::Random(rng, c % 2 == 0)));
    ASSERT_TRUE(d1.Open(m1, Place::Random(rng, c % 3 == 0)));
    if (k1 != k2) {
      Msg wrong = m1;  // opened under the other context's key
      wrong.key = k2;
      ASSERT_TRUE(d2.OpenMustFail(wrong, m1.nonce, m1.aad, m1.ct, m1.tag.data(), m1.tag_len,
                                  Place::Random(rng), "a message sealed under the other key"));
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Aeads, AeadEntry, ::testing::Range<size_t>(0, aesgen_aead_count),
                         AeadParamName);
INSTANTIATE_TEST_SUITE_P(Aeads, Aead, ::testing::Range<size_t>(0, aesgen_aead_count),
                         AeadParamName);
INSTANTIATE_TEST_SUITE_P(Aeads, AeadGcm, ::testing::ValuesIn(AeadIndicesOfMode("gcm")),
                         AeadParamName);
INSTANTIATE_TEST_SUITE_P(Aeads, AeadGcmSiv, ::testing::ValuesIn(AeadIndicesOfMode("gcm-siv")),
                         AeadParamName);
INSTANTIATE_TEST_SUITE_P(Aeads, AeadOtr, ::testing::ValuesIn(AeadIndicesOfOtr()), AeadParamName);
// A set without AEAD kernels (or without those of a mode) instantiates nothing
// (AeadRegistry still runs).
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(AeadEntry);
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(Aead);
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(AeadGcm);
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(AeadGcmSiv);
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(AeadOtr);

}  // namespace

#endif  // AESGEN_HAVE_AEAD
