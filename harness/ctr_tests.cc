// ctr_tests.cc: GoogleTest suites for the kernels of one generated aesgen set.
//
// Built once per generated folder (generated/<preset>/), against that folder's
// aesgen.h and registry.  Every kernel in aesgen_kernels[] is one value of the
// parameterized suites below, named after the kernel ('-' and other
// non-alphanumerics become '_'), so `--gtest_filter='*aesni_face_r2*'` picks
// one kernel.  A kernel that needs a CPU feature this machine lacks is
// reported as skipped, with the missing features named.
//
// The oracle is OpenSSL's EVP_aes_{128,192,256}_ctr (AES-CTR with a 128-bit
// big-endian counter, +1 per block, wrapping mod 2^128), which shares nothing
// with the generator.  A self-test checks it against the typed-in SP 800-38A
// vectors and against AES-ECB of counters this file increments itself.
//
// Every call into a kernel (init, set_iv, xor_stream, wipe) goes through the
// assembly trampoline of abi_check.h, which checks the callee-saved registers
// and the stack pointer around the call, and on x86-64 also the direction
// flag, MXCSR and the x87 state, on AArch64 FPCR.  The context is 64-byte
// aligned and framed by canary bytes that must stay untouched.  Buffers that
// must not be over-read or over-written end (or start) at a PROT_NONE page.
//
// The same file builds for x86-64 and for AArch64 (cross-compiled, run under
// qemu-aarch64 -cpu max by `aesgen test`); the few parts that differ (the
// trampoline's self-test, the check of aesgen_cpu_features() against the
// CPU) are chosen by __x86_64__ / __aarch64__.
//
// Environment:
//   AESGEN_TEST_SEED   base seed of the random suites (default: fixed)
//   AESGEN_TEST_SCALE  number > 0 multiplying the random case counts
//                      (default 1): more for longer soak runs, a fraction
//                      for slow (emulated) runs; every test still runs
//   AESGEN_TEST_TIMEOUT seconds one test may run before the binary exits
//                      naming it (default 300; 0 = no limit)
//   AESGEN_TEST_EXPECT_ALL_KERNELS  when 1, a kernel this CPU cannot run is
//                      a failure, not a skip (the runner sets it under
//                      qemu-aarch64 -cpu max, which has every feature)
//
// A kernel call that faults (SIGSEGV/SIGBUS: a read or write past a guard
// page; SIGILL: an instruction this CPU lacks) fails the test it is in,
// naming the buffer and how far past its end (or before its start) the
// access was, and the binary goes on with the next test.

#include <gtest/gtest.h>
#include <openssl/evp.h>
#include <setjmp.h>
#include <signal.h>
#include <sys/mman.h>
#include <unistd.h>
#if defined(__aarch64__)
#include <asm/hwcap.h>
#include <sys/auxv.h>
#endif

#include <algorithm>
#include <array>
#include <cctype>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iterator>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "abi_check.h"
#include "aesgen.h"
#include "harness_util.h"
#include "ctr_reference.h"

namespace {

using namespace aesgen_harness;  // NOLINT: the shared helpers, as if defined here

constexpr size_t kBlock = 16;
constexpr size_t kWindowBlocks = 256;
constexpr size_t kWindowBytes = kWindowBlocks * kBlock;  // 4096

using Block = std::array<uint8_t, 16>;

// ---------------------------------------------------------------------------
// Counter arithmetic (the shared helpers are in harness_util.h)

// counter + n (mod 2^128), big-endian.
Block CounterAdd(const uint8_t *ctr, uint64_t n) {
  Block r;
  std::memcpy(r.data(), ctr, 16);
  unsigned carry = 0;
  for (int i = 15; i >= 0; i--) {
    unsigned add = static_cast<unsigned>(n & 0xff) + carry;
    n >>= 8;
    unsigned sum = r[static_cast<size_t>(i)] + add;
    r[static_cast<size_t>(i)] = static_cast<uint8_t>(sum);
    carry = sum >> 8;
  }
  return r;
}

// counter - n (mod 2^128), big-endian.
Block CounterSub(const uint8_t *ctr, uint64_t n) {
  Block r;
  std::memcpy(r.data(), ctr, 16);
  int borrow = 0;
  for (int i = 15; i >= 0; i--) {
    int sub = static_cast<int>(n & 0xff) + borrow;
    n >>= 8;
    int d = r[static_cast<size_t>(i)] - sub;
    borrow = d < 0;
    r[static_cast<size_t>(i)] = static_cast<uint8_t>(d + (borrow ? 256 : 0));
  }
  return r;
}

// Where in buf (n bytes) the key or any of its round keys appears, byte for
// byte or with each 32-bit word byte-reversed (as a table implementation
// keeps them).  Empty when none does.
std::string FindKeyMaterial(const uint8_t *buf, size_t n, const uint8_t *key, size_t key_len) {
  std::vector<std::pair<std::string, std::vector<uint8_t>>> needles;
  needles.emplace_back("the key", std::vector<uint8_t>(key, key + key_len));
  auto rks = ExpandKey(key, key_len);
  for (size_t r = 0; r < rks.size(); r++) {
    needles.emplace_back("round key " + std::to_string(r),
                         std::vector<uint8_t>(rks[r].begin(), rks[r].end()));
    std::vector<uint8_t> swapped(16);
    for (size_t i = 0; i < 16; i++) swapped[i] = rks[r][(i & ~size_t{3}) + 3 - (i & 3)];
    needles.emplace_back("round key " + std::to_string(r) + " (word byte-swapped)", swapped);
    // the GFNI engine stores round keys in the byte layouts of its rounds, which skip
    // ShiftRows (kernels/engines.py GfniEngine): the key permuted by ShiftRows^m
    size_t lay[16];
    for (size_t i = 0; i < 16; i++) lay[i] = i;
    for (int m = 1; m < 4; m++) {
      size_t next[16];
      for (size_t i = 0; i < 16; i++) next[i] = lay[4 * (((i >> 2) + (i & 3)) & 3) + (i & 3)];
      std::vector<uint8_t> moved(16);
      for (size_t i = 0; i < 16; i++) {
        lay[i] = next[i];
      }
      for (size_t i = 0; i < 16; i++) moved[lay[i]] = rks[r][i];
      needles.emplace_back("round key " + std::to_string(r) + " (ShiftRows layout " +
                               std::to_string(m) + ")", moved);
    }
  }
  std::string found;
  for (const auto &nd : needles) {
    const uint8_t *hit = std::search(buf, buf + n, nd.second.begin(), nd.second.end());
    if (hit != buf + n) {
      if (!found.empty()) found += "; ";
      found += nd.first + " at offset " + std::to_string(hit - buf);
    }
  }
  return found;
}

// ---------------------------------------------------------------------------
// Oracle: OpenSSL EVP (OracleCtr is in ctr_reference.h, shared with the fuzz
// target harness/fuzz/fuzz_ctr.cc)

const EVP_CIPHER *EvpEcb(size_t key_len) {
  switch (key_len) {
    case 16: return EVP_aes_128_ecb();
    case 24: return EVP_aes_192_ecb();
    case 32: return EVP_aes_256_ecb();
    default: return nullptr;
  }
}

// One AES block with EVP ECB (for the oracle self-test).
Block EcbBlock(const uint8_t *key, size_t key_len, const uint8_t *in) {
  Block out{};
  EVP_CIPHER_CTX *c = EVP_CIPHER_CTX_new();
  int outl = 0;
  if (c == nullptr || EVP_EncryptInit_ex(c, EvpEcb(key_len), nullptr, key, nullptr) != 1 ||
      EVP_CIPHER_CTX_set_padding(c, 0) != 1 ||
      EVP_EncryptUpdate(c, out.data(), &outl, in, 16) != 1 || outl != 16) {
    std::fprintf(stderr, "OpenSSL EVP ECB failed\n");
    std::abort();
  }
  EVP_CIPHER_CTX_free(c);
  return out;
}

// The keystream of one (key, iv), computed on demand and kept, so a test can
// ask for any [offset, offset + n) of it.  It grows by continuing one EVP
// stream (never recomputing what it has), and a Reset to the same key and IV
// keeps what it has: under an emulator the oracle's AES costs as much as the
// kernel's, so it must not be paid twice.  Checked against OracleCtr by
// HarnessSelfTest.KeyStreamGrowsLikeOneShotOracle.
class KeyStream {
 public:
  KeyStream() = default;
  KeyStream(const KeyStream &) = delete;
  KeyStream &operator=(const KeyStream &) = delete;
  ~KeyStream() { EVP_CIPHER_CTX_free(ctx_); }

  void Reset(const uint8_t *key, size_t key_len, const uint8_t *iv) {
    if (ctx_ != nullptr && key_len == key_.size() && std::equal(key, key + key_len, key_.begin()) &&
        std::memcmp(iv, iv_.data(), 16) == 0) {
      return;  // the same stream
    }
    key_.assign(key, key + key_len);
    std::memcpy(iv_.data(), iv, 16);
    ks_.clear();
    if (ctx_ == nullptr) ctx_ = EVP_CIPHER_CTX_new();
    if (ctx_ == nullptr || EVP_EncryptInit_ex(ctx_, EvpCtr(key_len), nullptr, key, iv) != 1) {
      std::fprintf(stderr, "OpenSSL EVP CTR init failed\n");
      std::abort();
    }
  }
  const uint8_t *At(size_t offset, size_t n) {
    if (offset + n > ks_.size()) {
      size_t have = ks_.size();
      size_t want = (std::max(offset + n, have + 256) + 63) & ~size_t{63};
      ks_.resize(want, 0);  // zeros, encrypted in place: the keystream
      for (size_t done = have; done < want;) {
        int chunk = static_cast<int>(std::min<size_t>(want - done, size_t{1} << 30));
        int outl = 0;
        if (EVP_EncryptUpdate(ctx_, ks_.data() + done, &outl, ks_.data() + done, chunk) != 1 ||
            outl != chunk) {
          std::fprintf(stderr, "OpenSSL EVP CTR update failed\n");
          std::abort();
        }
        done += static_cast<size_t>(chunk);
      }
    }
    return ks_.data() + offset;
  }
  const Block &iv() const { return iv_; }

 private:
  EVP_CIPHER_CTX *ctx_ = nullptr;
  std::vector<uint8_t> key_;
  Block iv_{};
  std::vector<uint8_t> ks_;
};

// ---------------------------------------------------------------------------
// A kernel context: 64-byte aligned, with canaries on both sides, every call
// made through the ABI-checking trampoline.

class KernelCtx : public GuardedContext {
 public:
  explicit KernelCtx(const aesgen_kernel &k, int fill = 0xa5)
      : GuardedContext(k.name, k.ctx_size, fill), k_(k) {}

  int Init(const uint8_t *key, size_t key_len, const uint8_t *iv) {
    RememberKey(key, key_len);
    uint64_t r = Call("init", reinterpret_cast<const void *>(k_.init), U(ctx()), U(key), key_len,
                      U(iv));
    return static_cast<int>(static_cast<uint32_t>(r));
  }
  int SetIv(const uint8_t *iv) {
    uint64_t r = Call("set_iv", reinterpret_cast<const void *>(k_.set_iv), U(ctx()), U(iv), 0, 0);
    return static_cast<int>(static_cast<uint32_t>(r));
  }
  void Xor(uint8_t *out, const uint8_t *in, size_t len) {
    Call("xor_stream", reinterpret_cast<const void *>(k_.xor_stream), U(ctx()), U(out), U(in),
         len);
  }
  void Wipe() { Call("wipe", reinterpret_cast<const void *>(k_.wipe), U(ctx()), 0, 0, 0); }

 private:
  template <typename T>
  static uint64_t U(T *p) {
    return reinterpret_cast<uintptr_t>(p);
  }

  uint64_t Call(const char *what, const void *fn, uint64_t a0, uint64_t a1, uint64_t a2,
                uint64_t a3) {
    uint64_t ret = 0, mask = 0;
    if (!CallCatchingFaults(fn, a0, a1, a2, a3, &mask, &ret)) {
      if (++problems_ <= kMaxReports) {
        ADD_FAILURE() << k_.name << ": " << what << " faulted: " << DescribeFault();
      }
      CheckCanaries(what);
      return 0;
    }
    if (mask != 0 && ++problems_ <= kMaxReports) {
      ADD_FAILURE() << k_.name << ": " << what
                    << " broke the " AESGEN_ABI_CONVENTION " calling convention; clobbered/changed: "
                    << aesgen_abi_describe(mask) << " (mask 0x" << std::hex << mask << ")";
    }
    CheckCanaries(what);
    CheckScrubbed(what);
    return ret;
  }

  const aesgen_kernel &k_;
};

// ---------------------------------------------------------------------------
// StreamChecker: drives one context and compares every byte it produces with
// the oracle.  It keeps a short log of the calls made, printed on failure.

enum class Where {
  kHeap,        // heap buffer at in_off/out_off bytes from 64-byte alignment,
                // with sentinel bytes on both sides
  kGuardEnd,    // ends exactly at a PROT_NONE page
  kGuardStart,  // starts exactly after a PROT_NONE page
};

struct Placement {
  Where in = Where::kHeap;
  Where out = Where::kHeap;
  bool in_place = false;  // out == in (uses the `in` placement)
  size_t in_off = 0;      // for kHeap: offset from a 64-byte-aligned base
  size_t out_off = 0;
};

class StreamChecker {
 public:
  StreamChecker(const aesgen_kernel &k, KernelCtx &ctx, std::mt19937_64 &rng,
                GuardedBuffer *guard_in = nullptr, GuardedBuffer *guard_out = nullptr)
      : k_(k), ctx_(ctx), rng_(rng), gin_(guard_in), gout_(guard_out) {}

  ::testing::AssertionResult Init(const uint8_t *key, size_t key_len, const uint8_t *iv) {
    Log("init(key_len=" + std::to_string(key_len) + ", key=" + Hex(key, key_len) +
        ", iv=" + Hex(iv, 16) + ")");
    int r = ctx_.Init(key, key_len, iv);
    if (r != 0) return Fail() << "init returned " << r << " for a supported key length";
    ks_.Reset(key, key_len, iv);
    pos_ = 0;
    key_.assign(key, key + key_len);
    return Check();
  }

  ::testing::AssertionResult SetIv(const uint8_t *iv) {
    Log("set_iv(" + Hex(iv, 16) + ") at stream offset " + std::to_string(pos_));
    int r = ctx_.SetIv(iv);
    if (r != 0) return Fail() << "set_iv returned " << r;
    ks_.Reset(key_.data(), key_.size(), iv);
    pos_ = 0;
    return Check();
  }

  // One xor_stream call of n bytes, placed as p says.
  ::testing::AssertionResult Xor(size_t n, const Placement &p = Placement()) {
    const auto &pool = Pool();
    size_t src = Uniform(rng_, 0, pool.size() - n);  // requires n <= pool size
    const uint8_t *input = pool.data() + src;
    const uint8_t *ks = ks_.At(pos_, n);

    uint8_t *in = Place(p.in, n, p.in_off, &in_heap_, gin_);
    uint8_t *out = p.in_place ? in : Place(p.out, n, p.out_off, &out_heap_, gout_);
    if (n) std::memcpy(in, input, n);
    if (!p.in_place && n) std::memset(out, kSentinel, n);
    Log("xor_stream(len=" + std::to_string(n) + ") at stream offset " + std::to_string(pos_) +
        Describe(p));
    ctx_.Xor(out, in, n);
    if (ctx_.problems()) return Fail() << "ABI, canary or memory fault (reported above)";

    // Compare with the oracle.
    for (size_t i = 0; i < n; i++) {
      uint8_t want = static_cast<uint8_t>(input[i] ^ ks[i]);
      if (out[i] != want) {
        size_t bad = 0;
        for (size_t j = i; j < n; j++) bad += out[j] != static_cast<uint8_t>(input[j] ^ ks[j]);
        size_t off = pos_ + i, blk = off / kBlock;
        Block ctr = CounterAdd(ks_.iv().data(), blk);
        Block want_ks, got_ks;
        size_t b0 = blk * kBlock;  // stream offset of the block
        for (size_t j = 0; j < 16; j++) {
          want_ks[j] = ks_.At(b0, 16)[j];
          // What the kernel produced for this block, as far as this call covers it.
          size_t o = b0 + j;
          got_ks[j] = (o >= pos_ && o < pos_ + n)
                          ? static_cast<uint8_t>(out[o - pos_] ^ input[o - pos_])
                          : want_ks[j];
        }
        return Fail() << "wrong output at byte " << i << " of this call (stream offset " << off
                      << ", block " << blk << ", counter " << Hex(ctr.data(), 16) << "); " << bad
                      << " of the remaining " << n - i << " bytes differ\n"
                      << "  keystream want " << Hex(want_ks.data(), 16) << "\n"
                      << "  keystream got  " << Hex(got_ks.data(), 16)
                      << " (bytes outside this call shown as wanted)";
      }
    }
    // Nothing written outside [out, out + n), input left alone.
    if (!p.in_place && n && std::memcmp(in, input, n) != 0) {
      return Fail() << "xor_stream modified its input buffer (in != out)";
    }
    if (p.in_place ? p.in == Where::kHeap : p.out == Where::kHeap) {
      std::vector<uint8_t> &buf = p.in_place ? in_heap_ : out_heap_;
      size_t off = static_cast<size_t>(out - buf.data());
      for (size_t i = 0; i < off; i++) {
        if (buf[i] != kSentinel) return Fail() << "wrote " << off - i << " bytes before out";
      }
      for (size_t i = off + n; i < buf.size(); i++) {
        if (buf[i] != kSentinel) {
          return Fail() << "wrote past out + len, at out + len + " << i - off - n;
        }
      }
    }
    pos_ += n;
    return Check();
  }

  // A run of calls whose sizes are `chunks`.
  ::testing::AssertionResult XorChunks(const std::vector<size_t> &chunks,
                                       const Placement &p = Placement()) {
    for (size_t c : chunks) {
      auto r = Xor(c, p);
      if (!r) return r;
    }
    return ::testing::AssertionSuccess();
  }

  // A zero-length call whose pointers point at a guard page when there is one.
  ::testing::AssertionResult XorZero() {
    Log("xor_stream(len=0) at stream offset " + std::to_string(pos_));
    uint8_t *in = gin_ ? gin_->EndingAtGuard(0) : zero_buf_;
    uint8_t *out = gout_ ? gout_->EndingAtGuard(0) : zero_buf_;
    ctx_.Xor(out, in, 0);
    if (ctx_.problems()) return Fail() << "ABI, canary or memory fault (reported above)";
    return Check();
  }

  // The recent calls, for failure messages.
  std::string History() const {
    std::string s = "recent calls (oldest first):";
    for (const auto &l : log_) s += "\n    " + l;
    return s;
  }

 private:
  static constexpr uint8_t kSentinel = 0x5c;
  static constexpr size_t kPad = 64;

  uint8_t *Place(Where w, size_t n, size_t off, std::vector<uint8_t> *heap, GuardedBuffer *g) {
    switch (w) {
      case Where::kGuardEnd:
        return g->EndingAtGuard(n);
      case Where::kGuardStart:
        return g->StartingAtGuard();
      case Where::kHeap:
      default: {
        // Keep the base 64-byte aligned so that off really is the alignment.
        size_t need = kPad + off + n + kPad + 64;
        heap->assign(need, kSentinel);
        uintptr_t base = reinterpret_cast<uintptr_t>(heap->data());
        size_t align = (64 - (base & 63)) & 63;
        // The region in front of the buffer is [0, align + kPad + off).
        return heap->data() + align + kPad + off;
      }
    }
  }

  static std::string Describe(const Placement &p) {
    auto w = [](Where x) {
      return x == Where::kHeap ? "heap" : x == Where::kGuardEnd ? "ends at guard page"
                                                                 : "starts at guard page";
    };
    std::string s;
    if (p.in_place) {
      s = " in place (" + std::string(w(p.in)) + ")";
      if (p.in == Where::kHeap && p.in_off) s += " offset " + std::to_string(p.in_off);
    } else if (p.in != Where::kHeap || p.out != Where::kHeap || p.in_off || p.out_off) {
      s = " in: " + std::string(w(p.in)) + (p.in_off ? " +" + std::to_string(p.in_off) : "") +
          ", out: " + w(p.out) + (p.out_off ? " +" + std::to_string(p.out_off) : "");
    }
    return s;
  }

  void Log(std::string s) {
    log_.push_back(std::move(s));
    if (log_.size() > 16) log_.erase(log_.begin());
  }

  ::testing::AssertionResult Fail() {
    ::testing::AssertionResult r = ::testing::AssertionFailure();
    r << k_.name << ": ";
    return r;
  }

  ::testing::AssertionResult Check() {
    if (ctx_.problems()) return Fail() << "ABI, canary or memory fault (reported above)";
    return ::testing::AssertionSuccess();
  }

  const aesgen_kernel &k_;
  KernelCtx &ctx_;
  std::mt19937_64 &rng_;
  GuardedBuffer *gin_;
  GuardedBuffer *gout_;
  KeyStream ks_;
  std::vector<uint8_t> key_;
  size_t pos_ = 0;
  std::vector<uint8_t> in_heap_, out_heap_;
  std::vector<std::string> log_;
  uint8_t zero_buf_[16] = {0};
};

// Asserts that a StreamChecker step succeeded, printing the call history.
#define STEP(chk, expr)                                                  \
  do {                                                                   \
    ::testing::AssertionResult step_result_ = (expr);                    \
    ASSERT_TRUE(step_result_) << (chk).History();                        \
  } while (0)

// ---------------------------------------------------------------------------
// Random material

Block RandomBlock(std::mt19937_64 &rng) {
  Block b;
  uint64_t x = rng(), y = rng();
  std::memcpy(b.data(), &x, 8);
  std::memcpy(b.data() + 8, &y, 8);
  return b;
}

// An IV that is random, or (one time in three) a few blocks short of a carry
// out of the low 1..16 bytes, so random cases also cross the refresh points.
Block RandomIv(std::mt19937_64 &rng) {
  Block iv = RandomBlock(rng);
  if (Uniform(rng, 0, 2) == 0) {
    size_t ff = Uniform(rng, 1, 16);
    for (size_t i = 16 - ff; i < 16; i++) iv[i] = 0xff;
    iv = CounterSub(iv.data(), Uniform(rng, 0, 700));
  }
  return iv;
}

// A length from 0 to a bit over five windows, weighted towards short ones.
size_t RandomLength(std::mt19937_64 &rng) {
  switch (Uniform(rng, 0, 3)) {
    case 0: return Uniform(rng, 0, 48);
    case 1: return Uniform(rng, 49, 700);
    default: return Uniform(rng, 700, 5 * kWindowBytes + 300);
  }
}

// Cut len into 1..max_calls pieces at random bytes (some pieces may be empty;
// some cuts land near block and window boundaries).
std::vector<size_t> RandomSplit(std::mt19937_64 &rng, size_t len, size_t max_calls) {
  size_t calls = Uniform(rng, 1, max_calls);
  std::vector<size_t> cuts;
  for (size_t i = 1; i < calls; i++) {
    size_t c;
    switch (Uniform(rng, 0, 3)) {
      case 0: {  // near a block boundary
        size_t b = Uniform(rng, 0, len / kBlock) * kBlock;
        c = b + Uniform(rng, 0, 2) - 1;
        break;
      }
      case 1: {  // near a multiple of 4096 bytes
        size_t b = Uniform(rng, 0, len / kWindowBytes) * kWindowBytes;
        c = b + Uniform(rng, 0, 34) - 17;
        break;
      }
      default:
        c = Uniform(rng, 0, len);
    }
    cuts.push_back(std::min(c, len));  // c may have wrapped below 0: min fixes both ends
  }
  std::sort(cuts.begin(), cuts.end());
  std::vector<size_t> chunks;
  size_t prev = 0;
  for (size_t c : cuts) {
    chunks.push_back(c - prev);
    prev = c;
  }
  chunks.push_back(len - prev);
  return chunks;
}

// ---------------------------------------------------------------------------
// Fixtures

const aesgen_kernel &KernelAt(size_t i) { return aesgen_kernels[i]; }

std::string KernelParamName(const ::testing::TestParamInfo<size_t> &info) {
  const char *n = KernelAt(info.param).name;
  std::string s = (n && *n) ? n : "kernel_" + std::to_string(info.param);
  for (char &c : s) {
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  }
  return s;
}

// Descriptor checks: run for every kernel, supported by this CPU or not.
class KernelEntry : public ::testing::TestWithParam<size_t> {};

// Behaviour: every test is skipped, naming the missing features, on a CPU
// that cannot run the kernel.
class Kernel : public ::testing::TestWithParam<size_t> {
 protected:
  void SetUp() override {
    k_ = &KernelAt(GetParam());
    uint64_t missing = k_->features & ~CpuFeatures();
    // On a CPU that has every feature (the runner says so under qemu-aarch64
    // -cpu max), a skip would mean the registry's feature detection or the
    // kernel's feature list is wrong, and would hide the kernel: fail instead.
    if (missing != 0 && EnvU64("AESGEN_TEST_EXPECT_ALL_KERNELS", 0) != 0) {
      FAIL() << k_->name << " needs " << FeatureList(missing)
             << ", which aesgen_cpu_features() does not report on a CPU that has every feature "
                "(AESGEN_TEST_EXPECT_ALL_KERNELS=1)";
    }
    if (missing != 0) {
      GTEST_SKIP() << k_->name << " needs " << FeatureList(missing) << " which this CPU lacks";
    }
    key_lens_ = SupportedKeyLens();
    ASSERT_FALSE(key_lens_.empty()) << "aesgen_key_bits_supported is 0";
  }
  const aesgen_kernel &k() const { return *k_; }
  // Supported key lengths in turn.
  size_t KeyLen(size_t i) const { return key_lens_[i % key_lens_.size()]; }
  std::mt19937_64 Rng(uint64_t salt) const { return TestRng(salt); }

  const aesgen_kernel *k_ = nullptr;
  std::vector<size_t> key_lens_;
};

// ---------------------------------------------------------------------------
// Harness self-tests (no kernel involved)

struct Sp80038aVector {
  const char *name;
  const char *key;
  const char *ciphertext;
};

const char kSpCounter[] = "f0f1f2f3f4f5f6f7f8f9fafbfcfdfeff";
const char kSpPlaintext[] =
    "6bc1bee22e409f96e93d7e117393172a"
    "ae2d8a571e03ac9c9eb76fac45af8e51"
    "30c81c46a35ce411e5fbc1191a0a52ef"
    "f69f2445df4f9b17ad2b417be66c3710";
const Sp80038aVector kSpVectors[] = {
    {"F.5.1 CTR-AES128.Encrypt", "2b7e151628aed2a6abf7158809cf4f3c",
     "874d6191b620e3261bef6864990db6ce"
     "9806f66b7970fdff8617187bb9fffdff"
     "5ae4df3edbd5d35e5b4f09020db03eab"
     "1e031dda2fbe03d1792170a0f3009cee"},
    {"F.5.3 CTR-AES192.Encrypt", "8e73b0f7da0e6452c810f32b809079e562f8ead2522c6b7b",
     "1abc932417521ca24f2b0459fe7e6e0b"
     "090339ec0aa6faefd5ccc2c6f4ce8e94"
     "1e36b26bd1ebc670d1bd1d665620abf7"
     "4f78a7f6d29809585a97daec58c6b050"},
    {"F.5.5 CTR-AES256.Encrypt", "603deb1015ca71be2b73aef0857d77811f352c073b6108d72d9810a30914dff4",
     "601ec313775789a5b7a7f504bbf3d228"
     "f443e3ca4d62b59aca84e990cacaf5c5"
     "2b0930daa23de94ce87017ba2d84988d"
     "dfc9c58db67aada613c2dd08457941a6"},
};

TEST(HarnessSelfTest, OracleMatchesSp80038a) {
  for (const auto &v : kSpVectors) {
    auto key = FromHex(v.key), iv = FromHex(kSpCounter), pt = FromHex(kSpPlaintext),
         ct = FromHex(v.ciphertext);
    std::vector<uint8_t> out(pt.size());
    OracleCtr(key.data(), key.size(), iv.data(), pt.data(), out.data(), pt.size());
    EXPECT_EQ(Hex(out.data(), out.size()), Hex(ct.data(), ct.size())) << v.name;
  }
}

// EVP's CTR must be AES-ECB of iv, iv+1, ... with a full 128-bit carry: check
// it where the carry runs far (this file's CounterAdd is the reference).
TEST(HarnessSelfTest, OracleCarriesAcrossAll128Bits) {
  auto rng = TestRng(1);
  for (size_t key_len : {16, 24, 32}) {
    for (int ff = 0; ff <= 16; ff++) {
      auto key = RandomKey(rng, key_len);
      Block top = RandomBlock(rng);
      for (int i = 16 - ff; i < 16; i++) top[static_cast<size_t>(i)] = 0xff;
      Block iv = CounterSub(top.data(), 3);
      const size_t blocks = 8;
      std::vector<uint8_t> zero(blocks * 16, 0), ks(blocks * 16);
      OracleCtr(key.data(), key_len, iv.data(), zero.data(), ks.data(), ks.size());
      for (size_t b = 0; b < blocks; b++) {
        Block ctr = CounterAdd(iv.data(), b);
        Block want = EcbBlock(key.data(), key_len, ctr.data());
        ASSERT_EQ(Hex(ks.data() + 16 * b, 16), Hex(want.data(), 16))
            << "key_len " << key_len << " iv " << Hex(iv.data(), 16) << " block " << b;
      }
    }
  }
}

// KeyStream, grown in steps of every size and reset to the same stream in
// between, gives what one OracleCtr call over the whole length gives.
TEST(HarnessSelfTest, KeyStreamGrowsLikeOneShotOracle) {
  auto rng = TestRng(3);
  for (size_t key_len : {16, 24, 32}) {
    auto key = RandomKey(rng, key_len);
    Block iv = RandomIv(rng);
    const size_t total = 3 * kWindowBytes + 77;
    std::vector<uint8_t> zero(total, 0), want(total);
    OracleCtr(key.data(), key_len, iv.data(), zero.data(), want.data(), total);
    KeyStream ks;
    ks.Reset(key.data(), key_len, iv.data());
    size_t pos = 0;
    while (pos < total) {
      size_t n = std::min(total - pos, Uniform(rng, 0, 700));
      ASSERT_EQ(Hex(ks.At(pos, n), n), Hex(want.data() + pos, n)) << "at " << pos << " + " << n;
      if (Uniform(rng, 0, 9) == 0) ks.Reset(key.data(), key_len, iv.data());  // kept
      pos += n;
    }
    ASSERT_EQ(Hex(ks.At(0, total), total), Hex(want.data(), total));
    Block other = CounterAdd(iv.data(), 1);  // a new IV starts a new stream
    ks.Reset(key.data(), key_len, other.data());
    ASSERT_EQ(Hex(ks.At(0, 16), 16), Hex(want.data() + 16, 16));
  }
}

TEST(HarnessSelfTest, CounterArithmetic) {
  Block all_ff;
  all_ff.fill(0xff);
  Block zero{};
  EXPECT_EQ(CounterAdd(all_ff.data(), 1), zero);
  EXPECT_EQ(CounterSub(zero.data(), 1), all_ff);
  Block x;
  auto v = FromHex("000102030405060708090a0bfffffffe");
  std::memcpy(x.data(), v.data(), 16);
  EXPECT_EQ(Hex(CounterAdd(x.data(), 3).data(), 16), "000102030405060708090a0c00000001");
  EXPECT_EQ(Hex(CounterSub(CounterAdd(x.data(), 1000).data(), 1000).data(), 16),
            Hex(x.data(), 16));
}

TEST(HarnessSelfTest, KeyExpansionMatchesFips197AppendixA) {
  struct {
    const char *key, *last;
  } cases[] = {
      {"2b7e151628aed2a6abf7158809cf4f3c", "d014f9a8c9ee2589e13f0cc8b6630ca6"},
      {"8e73b0f7da0e6452c810f32b809079e562f8ead2522c6b7b", "e98ba06f448c773c8ecc720401002202"},
      {"603deb1015ca71be2b73aef0857d77811f352c073b6108d72d9810a30914dff4",
       "fe4890d1e6188d0b046df344706c631e"},
  };
  for (const auto &c : cases) {
    auto key = FromHex(c.key);
    auto rk = ExpandKey(key.data(), key.size());
    EXPECT_EQ(Hex(rk.back().data(), 16), c.last) << c.key;
    EXPECT_EQ(Hex(rk.front().data(), 16), Hex(key.data(), 16));
  }
}

TEST(HarnessSelfTest, GuardPagesFault) {
  GuardedBuffer g(100, "self-test");
  EXPECT_EXIT(
      {
        volatile uint8_t *p = g.EndingAtGuard(1);
        p[0] = 1;  // the last good byte
        p[1] = 1;  // the guard page
        std::exit(0);
      },
      ::testing::KilledBySignal(SIGSEGV), "");
  EXPECT_EXIT(
      {
        volatile uint8_t *p = g.StartingAtGuard();
        p[0] = 1;
        p[-1] = 1;
        std::exit(0);
      },
      ::testing::KilledBySignal(SIGSEGV), "");
}

// The trampoline passes arguments and the return value through, and does not
// complain about a function that clobbers only what it may.
TEST(AbiTrampoline, PassesArgumentsAndAcceptsLegalClobbers) {
  const uint64_t a0 = 0x0123456789abcdefull, a1 = 0x1122334455667788ull,
                 a2 = 0x99aabbccddeeff00ull, a3 = 0x0f1e2d3c4b5a6978ull;
  auto rol = [](uint64_t x, int r) { return (x << r) | (x >> (64 - r)); };
  uint64_t ret = 0;
  uint64_t mask = aesgen_abi_call4(reinterpret_cast<const void *>(&aesgen_abi_good_volatile), a0,
                                   a1, a2, a3, &ret);
  EXPECT_EQ(mask, 0u) << aesgen_abi_describe(mask);
  EXPECT_EQ(ret, a0 ^ rol(a1, 8) ^ rol(a2, 16) ^ rol(a3, 24));
  // ret may be NULL.
  EXPECT_EQ(aesgen_abi_call4(reinterpret_cast<const void *>(&aesgen_abi_good_volatile), 1, 2, 3,
                             4, nullptr),
            0u);
}

// The trampoline can fail: each deliberately broken function is caught, and
// the trampoline still returns safely.
TEST(AbiTrampoline, DetectsEachViolation) {
  const auto &bad = AbiViolations();
  for (const auto &b : bad) {
    uint64_t mask = aesgen_abi_call4(reinterpret_cast<const void *>(b.fn), 0, 0, 0, 0, nullptr);
    EXPECT_EQ(mask, b.bit) << "expected " << aesgen_abi_bit_name(static_cast<unsigned>(b.bit))
                           << ", got " << aesgen_abi_describe(mask);
  }
  // And the state the bad functions broke has been put back for us.
  uint64_t mask = aesgen_abi_call4(reinterpret_cast<const void *>(&aesgen_abi_good_volatile), 0,
                                   0, 0, 0, nullptr);
  EXPECT_EQ(mask, 0u) << aesgen_abi_describe(mask);
}

// The scrub check (GuardedContext::CheckScrubbed after every kernel call) finds a round
// key, or any context bytes that look like key material, left in a vector register or on
// the stack below the caller's frame, and nothing after a function that leaves neither.
TEST(AbiTrampoline, ScrubCheckFindsLeftRoundKeysAndContextBytes) {
  aesgen_abi_vector_bytes = HardwareVectorBytes();     // whatever AESGEN_TEST_SCRUB_CHECK says
  uint8_t key[16];
  for (int i = 0; i < 16; i++) key[i] = static_cast<uint8_t>(0x21 * i + 7);
  auto rks = ExpandKey(key, sizeof key);
  uint64_t mask = aesgen_abi_call4(reinterpret_cast<const void *>(&aesgen_abi_leave_xmm5),
                                   reinterpret_cast<uintptr_t>(rks[3].data()), 0, 0, 0, nullptr);
  EXPECT_EQ(mask, 0u);
  std::string found = FindLeftRoundKey(rks);
  EXPECT_NE(found.find("round key 3 left in"), std::string::npos) << found;
  EXPECT_NE(found.find("5"), std::string::npos) << found;
  mask = aesgen_abi_call4(reinterpret_cast<const void *>(&aesgen_abi_leave_stack),
                          reinterpret_cast<uintptr_t>(rks[7].data()), 0, 0, 0, nullptr);
  EXPECT_EQ(mask, 0u);
  found = FindLeftRoundKey(rks);
  EXPECT_NE(found.find("round key 7 left on the stack"), std::string::npos) << found;
  mask = aesgen_abi_call4(reinterpret_cast<const void *>(&aesgen_abi_good_volatile), 1, 2, 3, 4,
                          nullptr);
  EXPECT_EQ(FindLeftRoundKey(rks), "") << "after a function that leaves nothing";

  // Any context bytes that look like key material (an H power, a FACE entry): a context
  // of random bytes, 16 of them left in a register, then on the stack.
  std::vector<uint8_t> ctx(256);
  auto rng = TestRng(0x5c7b);
  for (auto &b : ctx) b = static_cast<uint8_t>(rng());
  EXPECT_EQ(FindLeftContextBytes(ctx.data(), ctx.size()), "") << "after a clean call";
  aesgen_abi_call4(reinterpret_cast<const void *>(&aesgen_abi_leave_xmm5),
                   reinterpret_cast<uintptr_t>(ctx.data() + 88), 0, 0, 0, nullptr);
  found = FindLeftContextBytes(ctx.data(), ctx.size());
  EXPECT_NE(found.find("context bytes 88..103 left in"), std::string::npos) << found;
  aesgen_abi_call4(reinterpret_cast<const void *>(&aesgen_abi_leave_stack),
                   reinterpret_cast<uintptr_t>(ctx.data() + 160), 0, 0, 0, nullptr);
  found = FindLeftContextBytes(ctx.data(), ctx.size());
  EXPECT_NE(found.find("context bytes 160..175 left on the stack"), std::string::npos) << found;
  // a counter-like block (a few distinct bytes) is not taken for key material
  uint8_t counter[16] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0x2a};
  EXPECT_FALSE(LooksSecret(counter));
  EXPECT_TRUE(LooksSecret(ctx.data() + 16)) << "random bytes look like key material";
}

TEST(AbiTrampoline, DescribesRegisters) {
  EXPECT_EQ(aesgen_abi_describe(0), "none");
#if defined(__aarch64__)
  EXPECT_EQ(aesgen_abi_describe(AESGEN_ABI_X19 | AESGEN_ABI_D15), "x19, d15");
#else
  EXPECT_EQ(aesgen_abi_describe(AESGEN_ABI_RBX | AESGEN_ABI_R15), "rbx, r15");
#endif
  for (unsigned bit = 1; bit <= AESGEN_ABI_ALL; bit <<= 1) {
    EXPECT_NE(aesgen_abi_bit_name(bit), nullptr) << "bit 0x" << std::hex << bit << " has no name";
  }
}

// ---------------------------------------------------------------------------
// Registry (whole set)

TEST(Registry, IsWellFormed) {
  ASSERT_GT(aesgen_kernel_count, 0u) << "the registry holds no kernel";
  EXPECT_NE(aesgen_key_bits_supported & 7u, 0u) << "no key size supported";
  EXPECT_EQ(aesgen_key_bits_supported & ~7u, 0u)
      << "aesgen_key_bits_supported has unknown bits: " << aesgen_key_bits_supported;
  std::vector<std::string> names;
  for (size_t i = 0; i < aesgen_kernel_count; i++) {
    ASSERT_NE(aesgen_kernels[i].name, nullptr) << "kernel " << i;
    names.push_back(KernelParamName(::testing::TestParamInfo<size_t>(i, i)));
  }
  std::sort(names.begin(), names.end());
  EXPECT_EQ(std::adjacent_find(names.begin(), names.end()), names.end())
      << "two kernels share a test name (after '-' -> '_')";
}

// aesgen_cpu_features() must agree with an independent reading of the CPU for
// every feature both know: on x86-64 the compiler's own detection (which also
// checks that the OS saves the AVX/AVX-512 state), on AArch64 the kernel's
// HWCAP bits (getauxval, constants from <asm/hwcap.h>).  Features the header
// does not define are not compared.
#if defined(__x86_64__)
TEST(Registry, CpuFeaturesAgreeWithCompiler) {
  __builtin_cpu_init();
  const uint64_t f = CpuFeatures();
  struct {
    const char *macro;
    uint64_t bit;
    bool has;
  } known[] = {
#define AESGEN_KNOWN(macro, gcc_name) {#macro, macro, __builtin_cpu_supports(gcc_name) != 0},
#ifdef AESGEN_CPU_SSE2
      AESGEN_KNOWN(AESGEN_CPU_SSE2, "sse2")
#endif
#ifdef AESGEN_CPU_SSSE3
      AESGEN_KNOWN(AESGEN_CPU_SSSE3, "ssse3")
#endif
#ifdef AESGEN_CPU_SSE41
      AESGEN_KNOWN(AESGEN_CPU_SSE41, "sse4.1")
#endif
#ifdef AESGEN_CPU_AESNI
      AESGEN_KNOWN(AESGEN_CPU_AESNI, "aes")
#endif
#ifdef AESGEN_CPU_PCLMULQDQ
      AESGEN_KNOWN(AESGEN_CPU_PCLMULQDQ, "pclmul")
#endif
#ifdef AESGEN_CPU_AVX
      AESGEN_KNOWN(AESGEN_CPU_AVX, "avx")
#endif
#ifdef AESGEN_CPU_AVX2
      AESGEN_KNOWN(AESGEN_CPU_AVX2, "avx2")
#endif
#ifdef AESGEN_CPU_BMI2
      AESGEN_KNOWN(AESGEN_CPU_BMI2, "bmi2")
#endif
#ifdef AESGEN_CPU_VAES
      AESGEN_KNOWN(AESGEN_CPU_VAES, "vaes")
#endif
#ifdef AESGEN_CPU_VPCLMULQDQ
      AESGEN_KNOWN(AESGEN_CPU_VPCLMULQDQ, "vpclmulqdq")
#endif
#ifdef AESGEN_CPU_GFNI
      AESGEN_KNOWN(AESGEN_CPU_GFNI, "gfni")
#endif
#ifdef AESGEN_CPU_AVX512F
      AESGEN_KNOWN(AESGEN_CPU_AVX512F, "avx512f")
#endif
#ifdef AESGEN_CPU_AVX512BW
      AESGEN_KNOWN(AESGEN_CPU_AVX512BW, "avx512bw")
#endif
#ifdef AESGEN_CPU_AVX512VL
      AESGEN_KNOWN(AESGEN_CPU_AVX512VL, "avx512vl")
#endif
#undef AESGEN_KNOWN
      {"(end)", 0, false},
  };
  for (const auto &kf : known) {
    if (kf.bit == 0) continue;
    EXPECT_EQ((f & kf.bit) != 0, kf.has)
        << kf.macro << ": aesgen_cpu_features() says " << ((f & kf.bit) ? "yes" : "no")
        << ", the compiler's detection says " << (kf.has ? "yes" : "no");
    const char *name = aesgen_cpu_feature_name(kf.bit);
    EXPECT_TRUE(name != nullptr && *name != '\0') << kf.macro << " has no name";
  }
}
#elif defined(__aarch64__)
TEST(Registry, CpuFeaturesAgreeWithHwcap) {
  const uint64_t f = CpuFeatures();
  const unsigned long hw = getauxval(AT_HWCAP), hw2 = getauxval(AT_HWCAP2);
  struct {
    const char *macro;
    uint64_t bit;
    bool has;
  } known[] = {
#define AESGEN_KNOWN(macro, word, mask) {#macro, macro, ((word) & (mask)) != 0},
#ifdef AESGEN_CPU_FP
      AESGEN_KNOWN(AESGEN_CPU_FP, hw, HWCAP_FP)
#endif
#ifdef AESGEN_CPU_ASIMD
      AESGEN_KNOWN(AESGEN_CPU_ASIMD, hw, HWCAP_ASIMD)
#endif
#ifdef AESGEN_CPU_NEON
      AESGEN_KNOWN(AESGEN_CPU_NEON, hw, HWCAP_ASIMD)
#endif
#ifdef AESGEN_CPU_AES
      AESGEN_KNOWN(AESGEN_CPU_AES, hw, HWCAP_AES)
#endif
#ifdef AESGEN_CPU_PMULL
      AESGEN_KNOWN(AESGEN_CPU_PMULL, hw, HWCAP_PMULL)
#endif
#ifdef AESGEN_CPU_SHA1
      AESGEN_KNOWN(AESGEN_CPU_SHA1, hw, HWCAP_SHA1)
#endif
#ifdef AESGEN_CPU_SHA2
      AESGEN_KNOWN(AESGEN_CPU_SHA2, hw, HWCAP_SHA2)
#endif
#ifdef AESGEN_CPU_SHA3
      AESGEN_KNOWN(AESGEN_CPU_SHA3, hw, HWCAP_SHA3)
#endif
#ifdef AESGEN_CPU_SHA512
      AESGEN_KNOWN(AESGEN_CPU_SHA512, hw, HWCAP_SHA512)
#endif
#ifdef AESGEN_CPU_SVE
      AESGEN_KNOWN(AESGEN_CPU_SVE, hw, HWCAP_SVE)
#endif
#ifdef AESGEN_CPU_SVE2
      AESGEN_KNOWN(AESGEN_CPU_SVE2, hw2, HWCAP2_SVE2)
#endif
#ifdef AESGEN_CPU_SVEAES
      AESGEN_KNOWN(AESGEN_CPU_SVEAES, hw2, HWCAP2_SVEAES)
#endif
#ifdef AESGEN_CPU_SVEPMULL
      AESGEN_KNOWN(AESGEN_CPU_SVEPMULL, hw2, HWCAP2_SVEPMULL)
#endif
#ifdef AESGEN_CPU_BTI
      AESGEN_KNOWN(AESGEN_CPU_BTI, hw2, HWCAP2_BTI)
#endif
#undef AESGEN_KNOWN
      {"(end)", 0, false},
  };
  for (const auto &kf : known) {
    if (kf.bit == 0) continue;
    EXPECT_EQ((f & kf.bit) != 0, kf.has)
        << kf.macro << ": aesgen_cpu_features() says " << ((f & kf.bit) ? "yes" : "no")
        << ", getauxval(AT_HWCAP/AT_HWCAP2) says " << (kf.has ? "yes" : "no");
    const char *name = aesgen_cpu_feature_name(kf.bit);
    EXPECT_TRUE(name != nullptr && *name != '\0') << kf.macro << " has no name";
  }
  (void)hw;
  (void)hw2;
}
#endif

// ---------------------------------------------------------------------------
// Per-kernel descriptor (runs even where the CPU cannot run the kernel)

TEST_P(KernelEntry, Descriptor) {
  const aesgen_kernel &k = KernelAt(GetParam());
  ASSERT_NE(k.name, nullptr);
  EXPECT_NE(*k.name, '\0');
  EXPECT_NE(k.method, nullptr) << k.name;
  EXPECT_NE(k.face, nullptr) << k.name;
  EXPECT_GT(k.ctx_size, 0u) << k.name;
  EXPECT_NE(k.init, nullptr) << k.name;
  EXPECT_NE(k.set_iv, nullptr) << k.name;
  EXPECT_NE(k.xor_stream, nullptr) << k.name;
  EXPECT_NE(k.wipe, nullptr) << k.name;
  for (unsigned i = 0; i < 64; i++) {
    uint64_t bit = uint64_t{1} << i;
    if (k.features & bit) {
      EXPECT_NE(aesgen_cpu_feature_name(bit), nullptr)
          << k.name << " needs feature bit " << i << ", which has no name";
    }
  }
}

// ---------------------------------------------------------------------------
// Key lengths

TEST_P(Kernel, KeyLengths) {
  const std::vector<size_t> lens = {0, 1, 8, 15, 16, 17, 20, 23, 24, 25, 31, 32, 33, 48, 64, 128};
  std::vector<uint8_t> key(128);
  for (size_t i = 0; i < key.size(); i++) key[i] = static_cast<uint8_t>(i * 7 + 1);
  uint8_t iv[16] = {0};
  KernelCtx ctx(k());
  for (size_t len : lens) {
    int r = ctx.Init(key.data(), len, iv);
    if (KeyLenSupported(len)) {
      EXPECT_EQ(r, 0) << k().name << ": init with a supported key of " << len << " bytes";
    } else {
      EXPECT_EQ(r, -1) << k().name << ": init with a key of " << len
                       << " bytes (not in aesgen_key_bits_supported = " << aesgen_key_bits_supported
                       << ") must return -1";
    }
  }
}

// A failed init leaves a context that a later good init brings back to use.
TEST_P(Kernel, BadKeyLengthThenGoodInit) {
  auto rng = Rng(2);
  KernelCtx ctx(k());
  StreamChecker chk(k(), ctx, rng);
  for (size_t i = 0; i < key_lens_.size(); i++) {
    auto key = RandomKey(rng, 64);
    Block iv = RandomIv(rng);
    EXPECT_EQ(ctx.Init(key.data(), 17, iv.data()), -1);
    STEP(chk, chk.Init(key.data(), KeyLen(i), iv.data()));
    STEP(chk, chk.Xor(kWindowBytes + 33));
    EXPECT_EQ(ctx.Init(key.data(), 0, iv.data()), -1);
  }
}

// ---------------------------------------------------------------------------
// SP 800-38A F.5 vectors, typed in (encrypt; and decrypt, the same operation)

void RunSpVector(const aesgen_kernel &k, const Sp80038aVector &v) {
  auto key = FromHex(v.key), iv = FromHex(kSpCounter), pt = FromHex(kSpPlaintext),
       ct = FromHex(v.ciphertext);
  KernelCtx ctx(k);
  if (!KeyLenSupported(key.size())) {
    EXPECT_EQ(ctx.Init(key.data(), key.size(), iv.data()), -1);
    GTEST_SKIP() << "AES-" << key.size() * 8 << " is not in aesgen_key_bits_supported ("
                 << aesgen_key_bits_supported << "); init correctly refused it";
  }
  // Whole message in one call, then block by block, then byte by byte.
  for (size_t step : {size_t{64}, size_t{16}, size_t{1}, size_t{7}}) {
    ASSERT_EQ(ctx.Init(key.data(), key.size(), iv.data()), 0);
    std::vector<uint8_t> out(pt.size());
    for (size_t i = 0; i < pt.size(); i += step) {
      ctx.Xor(out.data() + i, pt.data() + i, std::min(step, pt.size() - i));
    }
    EXPECT_EQ(Hex(out.data(), out.size()), Hex(ct.data(), ct.size()))
        << k.name << " " << v.name << ", calls of " << step << " bytes";
    // Decrypt (F.5.2/4/6) in place after set_iv.
    ASSERT_EQ(ctx.SetIv(iv.data()), 0);
    ctx.Xor(out.data(), out.data(), out.size());
    EXPECT_EQ(Hex(out.data(), out.size()), Hex(pt.data(), pt.size()))
        << k.name << " " << v.name << " decrypt";
  }
}

// The runtime choice: aesgen_best_kernel() names a constant-time kernel of the registry
// that this CPU runs (or none, only when no such kernel runs here), and it encrypts
// correctly. Table kernels (constant_time 0) are never chosen.
TEST(Registry, BestKernelRunsHere) {
  const uint64_t have = aesgen_cpu_features();
  size_t runnable = 0;
  for (size_t i = 0; i < aesgen_kernel_count; i++)
    if ((aesgen_kernels[i].features & ~have) == 0 && aesgen_kernels[i].constant_time)
      runnable++;
  const aesgen_kernel *best = aesgen_best_kernel();
  if (runnable == 0) {
    EXPECT_EQ(best, nullptr) << "no kernel runs here, yet best_kernel returned one";
    return;
  }
  ASSERT_NE(best, nullptr) << runnable << " kernels run here but best_kernel returned none";
  ASSERT_GE(best, &aesgen_kernels[0]);
  ASSERT_LT(best, &aesgen_kernels[0] + aesgen_kernel_count) << "not a registry entry";
  EXPECT_EQ(best->features & ~have, 0u) << best->name << " needs features this CPU lacks";
  EXPECT_TRUE(best->constant_time) << best->name << " is not constant time";
  for (const Sp80038aVector &v : kSpVectors)
    if (KeyLenSupported(FromHex(v.key).size())) RunSpVector(*best, v);
}

TEST_P(Kernel, Sp80038a_F5_1_Aes128) { RunSpVector(k(), kSpVectors[0]); }
TEST_P(Kernel, Sp80038a_F5_3_Aes192) { RunSpVector(k(), kSpVectors[1]); }
TEST_P(Kernel, Sp80038a_F5_5_Aes256) { RunSpVector(k(), kSpVectors[2]); }

// ---------------------------------------------------------------------------
// Random keys, IVs, lengths and splits

TEST_P(Kernel, RandomStreamsSplitAnywhere) {
  auto rng = Rng(10);
  const size_t cases = Cases(4000);
  for (size_t c = 0; c < cases; c++) {
    KernelCtx ctx(k());
    StreamChecker chk(k(), ctx, rng);
    size_t key_len = KeyLen(c);
    auto key = RandomKey(rng, key_len);
    Block iv = RandomIv(rng);
    size_t len = RandomLength(rng);
    STEP(chk, chk.Init(key.data(), key_len, iv.data()));
    STEP(chk, chk.XorChunks(RandomSplit(rng, len, 8)));
  }
}

// Many messages through one context: init once per key, then set_iv and
// random streams, as a long-lived user would.
TEST_P(Kernel, RandomMessagesOneContext) {
  auto rng = Rng(11);
  KernelCtx ctx(k());
  StreamChecker chk(k(), ctx, rng);
  for (size_t c = 0; c < Cases(1000); c++) {
    if (c % 40 == 0) {
      size_t key_len = KeyLen(c / 40);
      auto key = RandomKey(rng, key_len);
      Block iv = RandomIv(rng);
      STEP(chk, chk.Init(key.data(), key_len, iv.data()));
    } else {
      Block iv = RandomIv(rng);
      STEP(chk, chk.SetIv(iv.data()));
    }
    STEP(chk, chk.XorChunks(RandomSplit(rng, RandomLength(rng), 5)));
  }
}

TEST_P(Kernel, RandomInPlace) {
  auto rng = Rng(12);
  for (size_t c = 0; c < Cases(600); c++) {
    KernelCtx ctx(k());
    StreamChecker chk(k(), ctx, rng);
    size_t key_len = KeyLen(c);
    auto key = RandomKey(rng, key_len);
    Block iv = RandomIv(rng);
    Placement p;
    p.in_place = true;
    p.in_off = Uniform(rng, 0, 15);
    STEP(chk, chk.Init(key.data(), key_len, iv.data()));
    STEP(chk, chk.XorChunks(RandomSplit(rng, RandomLength(rng), 6), p));
  }
}

// A stream split into two calls at every byte of a span that crosses two
// window boundaries (in15 starts at 0xf0: boundaries at bytes 256 and 4352).
TEST_P(Kernel, TwoCallsSplitAtEveryByte) {
  auto rng = Rng(13);
  const size_t len = kWindowBytes + 300;
  size_t key_len = KeyLen(0);
  auto key = RandomKey(rng, key_len);
  Block iv = RandomBlock(rng);
  iv[15] = 0xf0;
  KernelCtx ctx(k());
  StreamChecker chk(k(), ctx, rng);
  for (size_t s = 0; s <= len; s++) {
    STEP(chk, chk.Init(key.data(), key_len, iv.data()));
    STEP(chk, chk.Xor(s));
    STEP(chk, chk.Xor(len - s));
  }
}

// ---------------------------------------------------------------------------
// Counter edges

// Every starting in15, with calls that cross the window boundary in the
// middle, exactly at it, and a few bytes before it.
TEST_P(Kernel, EveryIn15Start) {
  auto rng = Rng(20);
  for (size_t v = 0; v < 256; v++) {
    size_t key_len = KeyLen(v);
    auto key = RandomKey(rng, key_len);
    Block iv = RandomBlock(rng);
    iv[15] = static_cast<uint8_t>(v);
    const size_t to_boundary = (256 - v) * kBlock;
    KernelCtx ctx(k());
    StreamChecker chk(k(), ctx, rng);
    // One call across the boundary, ending mid-block.
    STEP(chk, chk.Init(key.data(), key_len, iv.data()));
    STEP(chk, chk.Xor(to_boundary + 3 * kBlock + v % 16));
    // A call ending exactly at the boundary, then one across the next window.
    STEP(chk, chk.Init(key.data(), key_len, iv.data()));
    STEP(chk, chk.Xor(to_boundary));
    STEP(chk, chk.Xor(kWindowBytes + 5));
    // A call ending mid-block before the boundary, then a short one across it.
    size_t first = to_boundary > 7 ? to_boundary - 7 : 0;
    STEP(chk, chk.Init(key.data(), key_len, iv.data()));
    STEP(chk, chk.Xor(first));
    STEP(chk, chk.Xor(14));
    STEP(chk, chk.Xor(kBlock * (v % 5) + 1));
  }
}

// Streams that start d blocks before the counter's low (16 - carry_byte - 1)
// bytes are all 0xff, so the carry goes into byte carry_byte (-1: the 2^128
// wrap), and run on past it for at least one full window.
void RunCarryCase(const aesgen_kernel &k, std::mt19937_64 &rng, size_t key_len, int carry_byte,
                  size_t d, bool carried_byte_ff, bool split_at_carry) {
  auto key = RandomKey(rng, key_len);
  Block top = RandomBlock(rng);  // the last counter before the carry
  if (carry_byte >= 0) {
    uint8_t &b = top[static_cast<size_t>(carry_byte)];
    if (carried_byte_ff) {
      b = 0xff;
    } else if (b == 0xff) {
      b = 0x7e;
    }
  }
  for (int i = carry_byte + 1; i < 16; i++) top[static_cast<size_t>(i)] = 0xff;
  Block iv = CounterSub(top.data(), d);
  const size_t to_carry = (d + 1) * kBlock;  // bytes up to the carry
  const size_t after = kWindowBytes + 5 * kBlock + 9;
  KernelCtx ctx(k);
  StreamChecker chk(k, ctx, rng);
  STEP(chk, chk.Init(key.data(), key_len, iv.data()));
  if (split_at_carry) {
    STEP(chk, chk.Xor(to_carry));
    STEP(chk, chk.Xor(after));
  } else {
    STEP(chk, chk.Xor(to_carry + after));
  }
  // And a second message under the same key that starts right at the carry.
  Block at = CounterAdd(top.data(), 1);
  STEP(chk, chk.SetIv(at.data()));
  STEP(chk, chk.Xor(kWindowBytes + 1));
}

// d = 0..255: every in15 at which the stream can start before the carry.
void RunCarryAllStarts(const aesgen_kernel &k, std::mt19937_64 &rng,
                       const std::vector<size_t> &key_lens, int carry_byte) {
  for (size_t d = 0; d < 256; d++) {
    RunCarryCase(k, rng, key_lens[d % key_lens.size()], carry_byte, d, false, d % 3 == 0);
    if (::testing::Test::HasFatalFailure()) return;
  }
  // A few starts further back (the carry lands in a later window).
  for (size_t d : {256, 257, 300, 511, 600}) {
    RunCarryCase(k, rng, key_lens[d % key_lens.size()], carry_byte, d, false, false);
    if (::testing::Test::HasFatalFailure()) return;
  }
}

// Bytes 12..15 all wrap: the 2^32 boundary (FACE rd0 refresh).
TEST_P(Kernel, Carry2To32) {
  auto rng = Rng(21);
  RunCarryAllStarts(k(), rng, key_lens_, 11);
}
// Bytes 11..15 wrap, carry into byte 10: the 2^40 boundary (rd1+/rd2+ tables).
TEST_P(Kernel, Carry2To40) {
  auto rng = Rng(22);
  RunCarryAllStarts(k(), rng, key_lens_, 10);
}
// The low 8 bytes wrap: the 2^64 boundary.
TEST_P(Kernel, Carry2To64) {
  auto rng = Rng(23);
  RunCarryAllStarts(k(), rng, key_lens_, 7);
}
// All 16 bytes wrap: 2^128 back to zero.
TEST_P(Kernel, Wrap2To128) {
  auto rng = Rng(24);
  RunCarryAllStarts(k(), rng, key_lens_, -1);
}

// The carry into every byte position 0..14 (in5 and in0 among them), with
// the carried-into byte random or itself 0xff (a carry that ripples on).
TEST_P(Kernel, CarryIntoEveryByte) {
  auto rng = Rng(25);
  size_t n = 0;
  for (int b = 14; b >= 0; b--) {
    for (size_t d : {0, 1, 15, 16, 128, 255, 256, 300}) {
      for (bool ff : {false, true}) {
        RunCarryCase(k(), rng, KeyLen(n++), b, d, ff, d % 2 == 1);
        if (HasFatalFailure()) return;
      }
    }
  }
}

// Calls laid so that window boundaries fall inside them, at their first
// byte, at their last byte, and just after them.
TEST_P(Kernel, WindowBoundaryInsideCalls) {
  auto rng = Rng(26);
  const long deltas[] = {-17, -16, -15, -1, 0, 1, 15, 16, 17, 100};
  for (size_t c = 0; c < Cases(600); c++) {
    size_t key_len = KeyLen(c);
    auto key = RandomKey(rng, key_len);
    Block iv = RandomIv(rng);
    size_t first_boundary = (256 - iv[15]) * kBlock;
    std::vector<size_t> cuts;
    for (size_t w = 0; w < 3; w++) {
      long cut = static_cast<long>(first_boundary + w * kWindowBytes) +
                 deltas[Uniform(rng, 0, std::size(deltas) - 1)];
      cuts.push_back(static_cast<size_t>(std::max(0L, cut)));
    }
    size_t len = first_boundary + 3 * kWindowBytes + Uniform(rng, 0, 40);
    std::sort(cuts.begin(), cuts.end());
    std::vector<size_t> chunks;
    size_t prev = 0;
    for (size_t cut : cuts) {
      chunks.push_back(cut - prev);
      prev = cut;
    }
    chunks.push_back(len - prev);
    KernelCtx ctx(k());
    StreamChecker chk(k(), ctx, rng);
    STEP(chk, chk.Init(key.data(), key_len, iv.data()));
    STEP(chk, chk.XorChunks(chunks));
  }
}

// A single call that covers hundreds of windows, and the same in 64 KiB calls.
TEST_P(Kernel, LargeCalls) {
  auto rng = Rng(27);
  for (size_t i = 0; i < key_lens_.size(); i++) {
    size_t key_len = KeyLen(i);
    auto key = RandomKey(rng, key_len);
    Block iv = RandomIv(rng);
    KernelCtx ctx(k());
    StreamChecker chk(k(), ctx, rng);
    STEP(chk, chk.Init(key.data(), key_len, iv.data()));
    STEP(chk, chk.Xor((size_t{1} << 20) + 13));
    STEP(chk, chk.Init(key.data(), key_len, iv.data()));
    for (int j = 0; j < 16; j++) STEP(chk, chk.Xor(size_t{1} << 16));
    Placement in_place;
    in_place.in_place = true;
    STEP(chk, chk.Xor((size_t{1} << 19) + 1, in_place));
  }
}

// ---------------------------------------------------------------------------
// Call patterns

TEST_P(Kernel, ZeroLengthCallsInterleaved) {
  auto rng = Rng(30);
  GuardedBuffer gin(64, "in"), gout(64, "out");
  for (size_t c = 0; c < Cases(400); c++) {
    size_t key_len = KeyLen(c);
    auto key = RandomKey(rng, key_len);
    Block iv = RandomIv(rng);
    KernelCtx ctx(k());
    StreamChecker chk(k(), ctx, rng, &gin, &gout);
    STEP(chk, chk.Init(key.data(), key_len, iv.data()));
    STEP(chk, chk.XorZero());  // before any data
    for (size_t chunk : RandomSplit(rng, RandomLength(rng), 6)) {
      STEP(chk, chk.Xor(chunk));
      for (size_t z = Uniform(rng, 0, 2); z > 0; z--) STEP(chk, chk.XorZero());
    }
    Block iv2 = RandomIv(rng);
    STEP(chk, chk.SetIv(iv2.data()));
    STEP(chk, chk.XorZero());  // right after set_iv
    STEP(chk, chk.Xor(Uniform(rng, 1, 40)));
  }
}

// A partial block of p bytes, then q, then the rest across a window.
TEST_P(Kernel, PartialBlockThenContinue) {
  auto rng = Rng(31);
  size_t n = 0;
  for (size_t p = 1; p < 16; p++) {
    for (size_t q : {1, 2, 3, 5, 8, 13, 14, 15, 16, 17, 31, 32, 33, 4095, 4096, 4097}) {
      size_t key_len = KeyLen(n++);
      auto key = RandomKey(rng, key_len);
      Block iv = RandomBlock(rng);
      iv[15] = static_cast<uint8_t>(Uniform(rng, 200, 255));  // near a boundary
      KernelCtx ctx(k());
      StreamChecker chk(k(), ctx, rng);
      STEP(chk, chk.Init(key.data(), key_len, iv.data()));
      STEP(chk, chk.Xor(p));
      STEP(chk, chk.Xor(q));
      STEP(chk, chk.Xor(kWindowBytes + 100 - p));
    }
  }
}

// Byte-at-a-time and other small steps, across a window boundary.
TEST_P(Kernel, SmallStepsAcrossWindow) {
  auto rng = Rng(32);
  size_t n = 0;
  for (size_t step : {1, 2, 3, 7, 15, 16, 17, 48, 255}) {
    size_t key_len = KeyLen(n++);
    auto key = RandomKey(rng, key_len);
    Block iv = RandomBlock(rng);
    iv[15] = 0xf8;
    KernelCtx ctx(k());
    StreamChecker chk(k(), ctx, rng);
    STEP(chk, chk.Init(key.data(), key_len, iv.data()));
    for (size_t done = 0; done < kWindowBytes + 256; done += step) STEP(chk, chk.Xor(step));
  }
}

// in and out at every pair of offsets 0..15 from 64-byte alignment.
TEST_P(Kernel, UnalignedInOut) {
  auto rng = Rng(33);
  size_t n = 0;
  for (size_t in_off = 0; in_off < 16; in_off++) {
    for (size_t out_off = 0; out_off < 16; out_off++) {
      size_t key_len = KeyLen(n++);
      auto key = RandomKey(rng, key_len);
      Block iv = RandomIv(rng);
      Placement p;
      p.in_off = in_off;
      p.out_off = out_off;
      KernelCtx ctx(k());
      StreamChecker chk(k(), ctx, rng);
      STEP(chk, chk.Init(key.data(), key_len, iv.data()));
      size_t len = (n % 4 == 0) ? Uniform(rng, 4096, 9000) : Uniform(rng, 1, 700);
      STEP(chk, chk.XorChunks(RandomSplit(rng, len, 3), p));
    }
  }
}

// The key and IV given to init/set_iv at odd addresses.
TEST_P(Kernel, UnalignedKeyAndIv) {
  auto rng = Rng(34);
  std::vector<uint8_t> buf(64 + 32 + 16 + 64);
  for (size_t off = 0; off < 16; off++) {
    size_t key_len = KeyLen(off);
    auto key = RandomKey(rng, key_len);
    Block iv = RandomIv(rng);
    uint8_t *base = buf.data() + ((64 - (reinterpret_cast<uintptr_t>(buf.data()) & 63)) & 63);
    uint8_t *k_at = base + off, *iv_at = base + 48 + (15 - off);
    std::memcpy(k_at, key.data(), key_len);
    std::memcpy(iv_at, iv.data(), 16);
    KernelCtx ctx(k());
    StreamChecker chk(k(), ctx, rng);
    STEP(chk, chk.Init(k_at, key_len, iv_at));
    STEP(chk, chk.Xor(300));
    STEP(chk, chk.SetIv(iv_at));
    STEP(chk, chk.Xor(kWindowBytes + 1));
  }
}

// ---------------------------------------------------------------------------
// Guard pages: a read or write one byte out of range faults

std::vector<size_t> GuardLengths() {
  std::vector<size_t> v;
  for (size_t n = 0; n <= 300; n++) v.push_back(n);
  for (size_t n : {511, 512, 513, 1023, 1024, 1025, 4095, 4096, 4097, 8191, 8192, 8193,
                   5 * 4096 + 7, 65536 + 5}) {
    v.push_back(n);
  }
  return v;
}

void RunGuardLengths(const aesgen_kernel &k, std::mt19937_64 &rng, const std::vector<size_t> &kl,
                     Placement p) {
  GuardedBuffer gin(65536 + 4096, "in"), gout(65536 + 4096, "out");
  size_t n = 0;
  for (size_t len : GuardLengths()) {
    size_t key_len = kl[n++ % kl.size()];
    auto key = RandomKey(rng, key_len);
    Block iv = RandomIv(rng);
    KernelCtx ctx(k);
    StreamChecker chk(k, ctx, rng, &gin, &gout);
    STEP(chk, chk.Init(key.data(), key_len, iv.data()));
    STEP(chk, chk.Xor(len, p));
    // And as the second call of a stream (mid-block state on entry).
    size_t first = Uniform(rng, 1, 40);
    STEP(chk, chk.Init(key.data(), key_len, iv.data()));
    STEP(chk, chk.Xor(first));
    STEP(chk, chk.Xor(len, p));
  }
}

TEST_P(Kernel, GuardPageAfterOutput) {
  auto rng = Rng(40);
  Placement p;
  p.out = Where::kGuardEnd;
  RunGuardLengths(k(), rng, key_lens_, p);
}

TEST_P(Kernel, GuardPageAfterInput) {
  auto rng = Rng(41);
  Placement p;
  p.in = Where::kGuardEnd;
  RunGuardLengths(k(), rng, key_lens_, p);
}

TEST_P(Kernel, GuardPageAfterBoth) {
  auto rng = Rng(42);
  Placement p;
  p.in = Where::kGuardEnd;
  p.out = Where::kGuardEnd;
  RunGuardLengths(k(), rng, key_lens_, p);
}

TEST_P(Kernel, GuardPageAfterInPlace) {
  auto rng = Rng(43);
  Placement p;
  p.in = Where::kGuardEnd;
  p.in_place = true;
  RunGuardLengths(k(), rng, key_lens_, p);
}

TEST_P(Kernel, GuardPageBeforeBoth) {
  auto rng = Rng(44);
  Placement p;
  p.in = Where::kGuardStart;
  p.out = Where::kGuardStart;
  RunGuardLengths(k(), rng, key_lens_, p);
}

// Every call of a split stream, not just the last, has its input and output
// ending at a guard page.
TEST_P(Kernel, GuardPageEveryCall) {
  auto rng = Rng(45);
  GuardedBuffer gin(6 * kWindowBytes, "in"), gout(6 * kWindowBytes, "out");
  Placement p;
  p.in = Where::kGuardEnd;
  p.out = Where::kGuardEnd;
  for (size_t c = 0; c < Cases(600); c++) {
    size_t key_len = KeyLen(c);
    auto key = RandomKey(rng, key_len);
    Block iv = RandomIv(rng);
    KernelCtx ctx(k());
    StreamChecker chk(k(), ctx, rng, &gin, &gout);
    STEP(chk, chk.Init(key.data(), key_len, iv.data()));
    STEP(chk, chk.XorChunks(RandomSplit(rng, RandomLength(rng), 8), p));
  }
}

// init and set_iv read key_len key bytes and 16 IV bytes, no more; init also
// for the key lengths it refuses.
TEST_P(Kernel, GuardPageAfterKeyAndIv) {
  auto rng = Rng(46);
  GuardedBuffer gkey(4096, "key"), giv(4096, "iv");
  for (size_t key_len : {0, 1, 15, 16, 17, 24, 31, 32, 33, 64}) {
    auto key = RandomKey(rng, key_len);
    Block iv = RandomIv(rng);
    uint8_t *k_at = gkey.EndingAtGuard(key_len);
    uint8_t *iv_at = giv.EndingAtGuard(16);
    if (key_len) std::memcpy(k_at, key.data(), key_len);
    std::memcpy(iv_at, iv.data(), 16);
    KernelCtx ctx(k());
    if (!KeyLenSupported(key_len)) {
      EXPECT_EQ(ctx.Init(k_at, key_len, iv_at), -1) << k().name << " key_len " << key_len;
      continue;
    }
    StreamChecker chk(k(), ctx, rng);
    STEP(chk, chk.Init(k_at, key_len, iv_at));
    STEP(chk, chk.Xor(100));
    STEP(chk, chk.SetIv(iv_at));
    STEP(chk, chk.Xor(kWindowBytes + 100));
  }
}

// ---------------------------------------------------------------------------
// Contexts, keys, IVs

// Two contexts with different keys, used in turn; a hidden shared state
// (a static cache, say) would mix them up.
TEST_P(Kernel, TwoContextsAlternate) {
  auto rng = Rng(50);
  for (size_t c = 0; c < Cases(150); c++) {
    size_t la = KeyLen(c), lb = KeyLen(c + 1);
    auto ka = RandomKey(rng, la), kb = RandomKey(rng, lb);
    Block iva = RandomIv(rng);
    Block ivb = (c % 3 == 0) ? iva : RandomIv(rng);  // sometimes the same IV
    KernelCtx ca(k()), cb(k());
    StreamChecker a(k(), ca, rng), b(k(), cb, rng);
    STEP(a, a.Init(ka.data(), la, iva.data()));
    STEP(b, b.Init(kb.data(), lb, ivb.data()));
    auto sa = RandomSplit(rng, Uniform(rng, 0, 3 * kWindowBytes), 10);
    auto sb = RandomSplit(rng, Uniform(rng, 0, 3 * kWindowBytes), 10);
    for (size_t i = 0; i < std::max(sa.size(), sb.size()); i++) {
      if (i < sa.size()) STEP(a, a.Xor(sa[i]));
      if (i < sb.size()) STEP(b, b.Xor(sb[i]));
    }
  }
}

// Re-keying a used context (FACE tables built, mid-block) gives exactly what
// a fresh context gives: new key size, same IV, same bytes 0/5/10.
TEST_P(Kernel, RekeyForgetsOldState) {
  auto rng = Rng(51);
  for (size_t c = 0; c < 40; c++) {
    size_t la = KeyLen(c), lb = KeyLen(c + 1 + c / key_lens_.size());
    auto ka = RandomKey(rng, la), kb = RandomKey(rng, lb);
    Block iva = RandomIv(rng);
    Block ivb = (c % 2 == 0) ? iva : RandomIv(rng);  // same IV: tables keyed by IV are stale
    KernelCtx ctx(k());
    StreamChecker chk(k(), ctx, rng);
    STEP(chk, chk.Init(ka.data(), la, iva.data()));
    STEP(chk, chk.Xor(Uniform(rng, 0, 3 * kWindowBytes)));
    STEP(chk, chk.Init(kb.data(), lb, ivb.data()));
    STEP(chk, chk.XorChunks(RandomSplit(rng, Uniform(rng, 1, 3 * kWindowBytes), 4)));
    // And back to the first key with a set_iv in between.
    STEP(chk, chk.Init(ka.data(), la, ivb.data()));
    STEP(chk, chk.SetIv(iva.data()));
    STEP(chk, chk.Xor(kWindowBytes + 17));
  }
}

// After re-keying, no copy of the old key or of its round keys is left in
// the context (a key-size change must not leave the longer schedule's tail).
TEST_P(Kernel, RekeyLeavesNoOldRoundKeys) {
  auto rng = Rng(52);
  for (size_t la : key_lens_) {
    for (size_t lb : key_lens_) {
      auto ka = RandomKey(rng, la), kb = RandomKey(rng, lb);
      Block iv = RandomIv(rng);
      KernelCtx ctx(k());
      StreamChecker chk(k(), ctx, rng);
      STEP(chk, chk.Init(ka.data(), la, iv.data()));
      STEP(chk, chk.Xor(2 * kWindowBytes + 5));
      STEP(chk, chk.Init(kb.data(), lb, iv.data()));
      STEP(chk, chk.Xor(2 * kWindowBytes + 5));
      std::string found = FindKeyMaterial(ctx.ctx(), ctx.size(), ka.data(), la);
      EXPECT_TRUE(found.empty()) << k().name << ": after re-keying AES-" << la * 8 << " -> AES-"
                                 << lb * 8 << ", the context still holds old " << found;
    }
  }
}

// set_iv with an IV that keeps bytes 0, 5 and 10 (FACE tables stay valid)
// and with IVs that change exactly one of them, or other bytes.
TEST_P(Kernel, SetIvKeepingAndChangingFaceBytes) {
  auto rng = Rng(53);
  const std::vector<std::vector<size_t>> changes = {
      {}, {0}, {5}, {10}, {0, 5, 10}, {15}, {14}, {11, 12, 13}, {1, 2, 3, 4, 6, 7, 8, 9}};
  for (size_t c = 0; c < Cases(100); c++) {
    size_t key_len = KeyLen(c);
    auto key = RandomKey(rng, key_len);
    Block iv = RandomIv(rng);
    KernelCtx ctx(k());
    StreamChecker chk(k(), ctx, rng);
    STEP(chk, chk.Init(key.data(), key_len, iv.data()));
    STEP(chk, chk.Xor(Uniform(rng, 1, 2 * kWindowBytes)));
    for (size_t i = 0; i < changes.size(); i++) {
      const auto &which = changes[(i + c) % changes.size()];
      Block next = iv;
      if (which.empty()) {  // keep 0/5/10, everything else new
        Block r = RandomBlock(rng);
        for (size_t j = 0; j < 16; j++) {
          if (j != 0 && j != 5 && j != 10) next[j] = r[j];
        }
      } else {
        for (size_t j : which) next[j] = static_cast<uint8_t>(next[j] ^ Uniform(rng, 1, 255));
      }
      iv = next;
      STEP(chk, chk.SetIv(iv.data()));
      STEP(chk, chk.XorChunks(RandomSplit(rng, Uniform(rng, 0, 2 * kWindowBytes + 40), 3)));
    }
  }
}

// set_iv when the stream stands in the middle of a block (and of a window).
TEST_P(Kernel, SetIvMidBlock) {
  auto rng = Rng(54);
  for (size_t c = 0; c < Cases(300); c++) {
    size_t key_len = KeyLen(c);
    auto key = RandomKey(rng, key_len);
    Block iv = RandomIv(rng);
    KernelCtx ctx(k());
    StreamChecker chk(k(), ctx, rng);
    STEP(chk, chk.Init(key.data(), key_len, iv.data()));
    size_t first = Uniform(rng, 0, 2 * kWindowBytes) | 1;  // odd, so mid-block
    STEP(chk, chk.Xor(first));
    Block iv2 = (c % 2) ? iv : RandomIv(rng);  // also: the same IV again
    STEP(chk, chk.SetIv(iv2.data()));
    STEP(chk, chk.Xor(Uniform(rng, 1, 33)));
    STEP(chk, chk.SetIv(iv2.data()));
    STEP(chk, chk.Xor(kWindowBytes + 21));
  }
}

// The stream crosses 2^40 (byte 10 changes, tables refreshed in-stream);
// then set_iv goes back to the first IV (old byte 10) and forward again.
TEST_P(Kernel, SetIvAfterInStreamRefresh) {
  auto rng = Rng(55);
  for (size_t c = 0; c < 30; c++) {
    size_t key_len = KeyLen(c);
    auto key = RandomKey(rng, key_len);
    for (int carry_byte : {10, 5, 0, 11}) {
      Block top = RandomBlock(rng);
      if (top[static_cast<size_t>(carry_byte)] == 0xff) top[static_cast<size_t>(carry_byte)] = 1;
      for (int i = carry_byte + 1; i < 16; i++) top[static_cast<size_t>(i)] = 0xff;
      Block iv = CounterSub(top.data(), Uniform(rng, 0, 300));
      Block after = CounterAdd(top.data(), 1 + Uniform(rng, 0, 300));
      KernelCtx ctx(k());
      StreamChecker chk(k(), ctx, rng);
      STEP(chk, chk.Init(key.data(), key_len, iv.data()));
      STEP(chk, chk.Xor(700 * kBlock));
      STEP(chk, chk.SetIv(iv.data()));
      STEP(chk, chk.Xor(Uniform(rng, 1, 2 * kWindowBytes)));
      STEP(chk, chk.SetIv(after.data()));
      STEP(chk, chk.Xor(Uniform(rng, 1, 2 * kWindowBytes)));
      STEP(chk, chk.SetIv(iv.data()));
      STEP(chk, chk.Xor(kWindowBytes + 3));
    }
  }
}

TEST_P(Kernel, SetIvReturnsZero) {
  auto rng = Rng(56);
  size_t key_len = KeyLen(0);
  auto key = RandomKey(rng, key_len);
  Block iv = RandomIv(rng);
  KernelCtx ctx(k());
  ASSERT_EQ(ctx.Init(key.data(), key_len, iv.data()), 0);
  for (int i = 0; i < 20; i++) {
    Block v = RandomIv(rng);
    EXPECT_EQ(ctx.SetIv(v.data()), 0) << k().name;
  }
}

// ---------------------------------------------------------------------------
// Wipe, context memory

// After wipe every byte of the context is zero: right after init, after
// streams that built FACE tables, after set_iv, after an in-stream refresh.
TEST_P(Kernel, WipeZeroesContext) {
  auto rng = Rng(60);
  for (size_t scenario = 0; scenario < 5; scenario++) {
    for (size_t i = 0; i < key_lens_.size(); i++) {
      size_t key_len = KeyLen(i);
      auto key = RandomKey(rng, key_len);
      Block iv = RandomIv(rng);
      if (scenario == 4) {  // cross 2^40
        for (int j = 11; j < 16; j++) iv[static_cast<size_t>(j)] = 0xff;
        iv[15] = 0x80;
      }
      KernelCtx ctx(k());
      StreamChecker chk(k(), ctx, rng);
      STEP(chk, chk.Init(key.data(), key_len, iv.data()));
      const char *what = "init";
      switch (scenario) {
        case 1:
          STEP(chk, chk.Xor(37));
          what = "init + 37 bytes";
          break;
        case 2:
          STEP(chk, chk.Xor(3 * kWindowBytes + 7));
          what = "init + 3 windows";
          break;
        case 3: {
          STEP(chk, chk.Xor(2 * kWindowBytes + 7));
          Block iv2 = RandomIv(rng);
          STEP(chk, chk.SetIv(iv2.data()));
          STEP(chk, chk.Xor(9));
          what = "streams + set_iv + 9 bytes";
          break;
        }
        case 4:
          STEP(chk, chk.Xor(300 * kBlock));
          what = "a stream across 2^40";
          break;
        default:
          break;
      }
      ctx.Wipe();
      size_t nonzero = 0, first = 0;
      for (size_t j = 0; j < ctx.size(); j++) {
        if (ctx.ctx()[j] != 0 && nonzero++ == 0) first = j;
      }
      std::string found = FindKeyMaterial(ctx.ctx(), ctx.size(), key.data(), key_len);
      EXPECT_EQ(nonzero, 0u) << k().name << ": after " << what << " and wipe (AES-" << key_len * 8
                             << "), " << nonzero << " of " << ctx.size()
                             << " context bytes are not zero, the first at offset " << first
                             << (found.empty() ? "" : "; the context still holds " + found);
    }
  }
}

// A wiped context can be initialised and used again.
TEST_P(Kernel, UsableAfterWipe) {
  auto rng = Rng(61);
  KernelCtx ctx(k());
  StreamChecker chk(k(), ctx, rng);
  for (size_t i = 0; i < 2 * key_lens_.size(); i++) {
    size_t key_len = KeyLen(i);
    auto key = RandomKey(rng, key_len);
    Block iv = RandomIv(rng);
    STEP(chk, chk.Init(key.data(), key_len, iv.data()));
    STEP(chk, chk.Xor(2 * kWindowBytes + 11));
    ctx.Wipe();
  }
}

// init must not depend on what the context held before: zero, 0xff and
// random garbage give the same stream, and the canaries around the 64-byte
// aligned context stay intact throughout (KernelCtx checks them after every
// call).
TEST_P(Kernel, InitOnDirtyContext) {
  auto rng = Rng(62);
  for (int fill : {0x00, 0xff, 0xa5, -1}) {
    for (size_t i = 0; i < key_lens_.size(); i++) {
      size_t key_len = KeyLen(i);
      auto key = RandomKey(rng, key_len);
      Block iv = RandomIv(rng);
      KernelCtx ctx(k(), fill < 0 ? 0 : fill);
      if (fill < 0) {
        for (size_t j = 0; j < ctx.size(); j++) ctx.ctx()[j] = static_cast<uint8_t>(rng());
      }
      ASSERT_EQ(reinterpret_cast<uintptr_t>(ctx.ctx()) % 64, 0u);
      StreamChecker chk(k(), ctx, rng);
      STEP(chk, chk.Init(key.data(), key_len, iv.data()));
      STEP(chk, chk.XorChunks(RandomSplit(rng, 3 * kWindowBytes + 100, 5)));
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Kernels, KernelEntry, ::testing::Range<size_t>(0, aesgen_kernel_count),
                         KernelParamName);
INSTANTIATE_TEST_SUITE_P(Kernels, Kernel, ::testing::Range<size_t>(0, aesgen_kernel_count),
                         KernelParamName);
// An empty registry is reported by Registry.IsWellFormed, not as an
// uninstantiated suite.
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(KernelEntry);
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(Kernel);

}  // namespace
