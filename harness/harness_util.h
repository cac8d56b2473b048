// harness_util.h: what the GoogleTest suites of one generated set share
// (ctr_tests.cc, aead_tests.cc, linked into one aesgen_tests binary).
//
// Environment knobs (AESGEN_TEST_SEED, AESGEN_TEST_SCALE, AESGEN_TEST_TIMEOUT,
// AESGEN_TEST_SCRUB_CHECK=0 (no scrub check: for kernels written in C);
// see ctr_tests.cc), random material, the CPU feature and key-size queries of
// the set's aesgen.h, the fault handler that turns a SIGSEGV/SIGBUS/SIGILL in
// a kernel call into a test failure, the per-test time limit, and buffers with
// PROT_NONE pages on both sides.
//
// Everything here is `inline` in the named namespace aesgen_harness, so that
// the state (the fault handler's jump buffer and guard list, the time-limit
// listener, the random pool) exists once in the binary however many suites
// include this file; each suite's file says `using namespace aesgen_harness;`.
#ifndef AESGEN_HARNESS_UTIL_H
#define AESGEN_HARNESS_UTIL_H

#include <gtest/gtest.h>
#include <setjmp.h>
#include <signal.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "abi_check.h"
#include "aesgen.h"

namespace aesgen_harness {

// ---------------------------------------------------------------------------
// Small utilities

inline uint64_t EnvU64(const char *name, uint64_t fallback) {
  const char *s = std::getenv(name);
  if (s == nullptr || *s == '\0') return fallback;
  return std::strtoull(s, nullptr, 0);
}

inline uint64_t BaseSeed() {
  static const uint64_t seed = EnvU64("AESGEN_TEST_SEED", 0x61657367656e2121ull);
  return seed;
}

// AESGEN_TEST_SCALE: a number > 0 (fractions too: the runner picks one for
// emulated runs) multiplying the random suites' case counts.
inline double Scale() {
  static const double scale = [] {
    const char *s = std::getenv("AESGEN_TEST_SCALE");
    double v = (s != nullptr && *s != '\0') ? std::strtod(s, nullptr) : 1.0;
    return v > 0 ? v : 1.0;
  }();
  return scale;
}

// How many random cases a suite whose base count is `base` runs (at least 1).
inline size_t Cases(size_t base) {
  return std::max<size_t>(1, static_cast<size_t>(static_cast<double>(base) * Scale() + 0.5));
}

// A generator for one test: the base seed mixed with a per-test salt, so each
// test draws its own reproducible sequence whatever ran before it.
inline std::mt19937_64 TestRng(uint64_t salt) {
  std::seed_seq seq{static_cast<uint32_t>(BaseSeed()), static_cast<uint32_t>(BaseSeed() >> 32),
                    static_cast<uint32_t>(salt), static_cast<uint32_t>(salt >> 32)};
  return std::mt19937_64(seq);
}

inline size_t Uniform(std::mt19937_64 &rng, size_t lo, size_t hi) {  // inclusive
  return std::uniform_int_distribution<size_t>(lo, hi)(rng);
}

inline std::string Hex(const uint8_t *p, size_t n) {
  static const char digits[] = "0123456789abcdef";
  std::string s;
  s.reserve(2 * n);
  for (size_t i = 0; i < n; i++) {
    s += digits[p[i] >> 4];
    s += digits[p[i] & 15];
  }
  return s;
}

inline std::vector<uint8_t> FromHex(const char *h) {
  std::vector<uint8_t> v;
  for (size_t i = 0; h[i] && h[i + 1]; i += 2) {
    v.push_back(static_cast<uint8_t>(std::strtoul(std::string(h + i, 2).c_str(), nullptr, 16)));
  }
  return v;
}
// A fixed pool of random input bytes; inputs are slices of it.
inline const std::vector<uint8_t> &Pool() {
  static const std::vector<uint8_t> pool = [] {
    std::vector<uint8_t> p((size_t{1} << 21) + 4096);
    std::mt19937_64 rng(0x706f6f6cull);
    for (size_t i = 0; i < p.size(); i += 8) {
      uint64_t x = rng();
      std::memcpy(p.data() + i, &x, 8);
    }
    return p;
  }();
  return pool;
}

// ---------------------------------------------------------------------------
// CPU features

inline uint64_t CpuFeatures() {
  static const uint64_t f = aesgen_cpu_features();
  return f;
}

inline std::string FeatureList(uint64_t bits) {
  std::string s;
  for (unsigned i = 0; i < 64; i++) {
    uint64_t bit = uint64_t{1} << i;
    if (!(bits & bit)) continue;
    if (!s.empty()) s += ", ";
    const char *name = aesgen_cpu_feature_name(bit);
    s += name ? std::string(name) : "feature bit " + std::to_string(i);
  }
  return s;
}

// ---------------------------------------------------------------------------
// Key sizes

inline std::vector<size_t> SupportedKeyLens() {
  std::vector<size_t> v;
  if (aesgen_key_bits_supported & 1) v.push_back(16);
  if (aesgen_key_bits_supported & 2) v.push_back(24);
  if (aesgen_key_bits_supported & 4) v.push_back(32);
  return v;
}

inline bool KeyLenSupported(size_t key_len) {
  switch (key_len) {
    case 16: return (aesgen_key_bits_supported & 1) != 0;
    case 24: return (aesgen_key_bits_supported & 2) != 0;
    case 32: return (aesgen_key_bits_supported & 4) != 0;
    default: return false;
  }
}

// ---------------------------------------------------------------------------
// Faults inside kernel calls
//
// Each kernel call runs under sigsetjmp; the handler for SIGSEGV, SIGBUS and
// SIGILL jumps back out of the kernel (on an alternate stack, so a kernel
// that broke rsp is still caught) and the call is reported as failed.  A
// fault anywhere else takes the default action.

struct GuardRegion {
  uintptr_t begin, end;  // the PROT_NONE page
  bool after;            // true: follows the buffer; false: precedes it
  const char *label;
};

struct FaultState {
  sigjmp_buf *jmp = nullptr;
  int signo = 0;
  uintptr_t addr = 0;
  std::vector<GuardRegion> guards;  // changed only outside kernel calls
};

inline FaultState &Faults() {
  static FaultState f;
  return f;
}

inline void FaultHandler(int sig, siginfo_t *info, void *) {
  FaultState &f = Faults();
  if (f.jmp != nullptr) {
    sigjmp_buf *j = f.jmp;
    f.jmp = nullptr;
    f.signo = sig;
    f.addr = reinterpret_cast<uintptr_t>(info->si_addr);
    siglongjmp(*j, 1);
  }
  // Not in a kernel call: die of it as usual.
  struct sigaction dfl;
  std::memset(&dfl, 0, sizeof dfl);
  dfl.sa_handler = SIG_DFL;
  sigemptyset(&dfl.sa_mask);
  sigaction(sig, &dfl, nullptr);
  raise(sig);
}

inline void InstallFaultHandlers() {
  static std::vector<uint8_t> alt(size_t{1} << 16);
  stack_t ss;
  std::memset(&ss, 0, sizeof ss);
  ss.ss_sp = alt.data();
  ss.ss_size = alt.size();
  sigaltstack(&ss, nullptr);
  struct sigaction sa;
  std::memset(&sa, 0, sizeof sa);
  sa.sa_sigaction = FaultHandler;
  sa.sa_flags = SA_SIGINFO | SA_ONSTACK;
  sigemptyset(&sa.sa_mask);
  for (int sig : {SIGSEGV, SIGBUS, SIGILL}) sigaction(sig, &sa, nullptr);
}

// Calls fn through the ABI trampoline; false if it faulted (Faults() says how).
inline __attribute__((noinline)) bool CallCatchingFaults(const void *fn, uint64_t a0,
                                                         uint64_t a1, uint64_t a2, uint64_t a3,
                                                         uint64_t *mask, uint64_t *ret) {
  sigjmp_buf jb;
  if (sigsetjmp(jb, 1) != 0) return false;
  Faults().jmp = &jb;
  *mask = aesgen_abi_call4(fn, a0, a1, a2, a3, ret);
  Faults().jmp = nullptr;
  return true;
}

// The same for fn(args[0], ..., args[nargs - 1]), nargs <= AESGEN_ABI_MAX_ARGS.
inline __attribute__((noinline)) bool CallCatchingFaultsN(const void *fn, const uint64_t *args,
                                                          size_t nargs, uint64_t *mask,
                                                          uint64_t *ret) {
  sigjmp_buf jb;
  if (sigsetjmp(jb, 1) != 0) return false;
  Faults().jmp = &jb;
  *mask = aesgen_abi_call(fn, args, nargs, ret);
  Faults().jmp = nullptr;
  return true;
}

inline std::string DescribeFault() {
  const FaultState &f = Faults();
  std::ostringstream os;
  os << (f.signo == SIGSEGV ? "SIGSEGV" : f.signo == SIGBUS ? "SIGBUS" : f.signo == SIGILL ? "SIGILL"
                                                                                          : "signal")
     << " at address 0x" << std::hex << f.addr << std::dec;
  if (f.signo == SIGILL) {
    os << " (an instruction this CPU lacks: does the kernel's `features` list all it uses?)";
    return os.str();
  }
  for (const auto &g : f.guards) {
    if (f.addr >= g.begin && f.addr < g.end) {
      if (g.after) {
        os << ": " << f.addr - g.begin + 1 << " byte(s) past the end of the " << g.label
           << " buffer, which ends at a PROT_NONE page";
      } else {
        os << ": " << g.end - f.addr << " byte(s) before the start of the " << g.label
           << " buffer, which starts after a PROT_NONE page";
      }
      return os.str();
    }
  }
  os << " (not in a guard page)";
  return os.str();
}

// Per-test time limit: a kernel that loops for ever names its test and ends
// the binary instead of hanging CI.
inline char g_current_test[512];

inline void AlarmHandler(int) {
  static const char head[] = "\n*** aesgen harness: time limit (AESGEN_TEST_TIMEOUT) hit in ";
  ssize_t r = write(2, head, sizeof head - 1);
  r = write(2, g_current_test, std::strlen(g_current_test));
  r = write(2, "\n", 1);
  (void)r;
  _exit(124);
}

class TestTimeLimit : public ::testing::EmptyTestEventListener {
 public:
  void OnTestStart(const ::testing::TestInfo &t) override {
    std::snprintf(g_current_test, sizeof g_current_test, "%s.%s", t.test_suite_name(), t.name());
    alarm(static_cast<unsigned>(EnvU64("AESGEN_TEST_TIMEOUT", 300)));
  }
  void OnTestEnd(const ::testing::TestInfo &) override { alarm(0); }
};

// Installed before main() runs the tests (gtest_main calls InitGoogleTest,
// which keeps listeners appended here).
inline const bool g_harness_setup = [] {
  InstallFaultHandlers();
  signal(SIGALRM, AlarmHandler);
  ::testing::UnitTest::GetInstance()->listeners().Append(new TestTimeLimit);
  return true;
}();

// ---------------------------------------------------------------------------
// Memory with PROT_NONE pages on both sides

class GuardedBuffer {
 public:
  GuardedBuffer(size_t capacity, const char *label) {
    page_ = static_cast<size_t>(sysconf(_SC_PAGESIZE));
    data_size_ = std::max(page_, (capacity + page_ - 1) / page_ * page_);
    map_size_ = data_size_ + 2 * page_;
    void *m = mmap(nullptr, map_size_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED) {
      std::perror("mmap");
      std::abort();
    }
    map_ = static_cast<uint8_t *>(m);
    if (mprotect(map_, page_, PROT_NONE) != 0 ||
        mprotect(map_ + page_ + data_size_, page_, PROT_NONE) != 0) {
      std::perror("mprotect");
      std::abort();
    }
    data_ = map_ + page_;
    auto &g = Faults().guards;
    uintptr_t m0 = reinterpret_cast<uintptr_t>(map_);
    g.push_back({m0, m0 + page_, false, label});
    g.push_back({m0 + page_ + data_size_, m0 + map_size_, true, label});
  }
  ~GuardedBuffer() {
    auto &g = Faults().guards;
    uintptr_t m0 = reinterpret_cast<uintptr_t>(map_);
    g.erase(std::remove_if(g.begin(), g.end(),
                           [&](const GuardRegion &r) { return r.begin >= m0 && r.end <= m0 + map_size_; }),
            g.end());
    munmap(map_, map_size_);
  }
  GuardedBuffer(const GuardedBuffer &) = delete;
  GuardedBuffer &operator=(const GuardedBuffer &) = delete;

  size_t capacity() const { return data_size_; }
  // n bytes whose last byte is the last readable one (n == 0: the first
  // byte of the guard page itself).
  uint8_t *EndingAtGuard(size_t n) { return data_ + data_size_ - n; }
  // A buffer whose first byte follows the leading guard page.
  uint8_t *StartingAtGuard() { return data_; }

 private:
  size_t page_ = 0, data_size_ = 0, map_size_ = 0;
  uint8_t *map_ = nullptr;
  uint8_t *data_ = nullptr;
};

// ---------------------------------------------------------------------------
// Random material

inline std::vector<uint8_t> RandomKey(std::mt19937_64 &rng, size_t key_len) {
  std::vector<uint8_t> k(key_len);
  for (auto &b : k) b = static_cast<uint8_t>(rng());
  return k;
}

// The deliberately broken functions of abi_check_*.S, each with the violation
// the trampoline must report for it (shared by the CTR and AEAD suites).
struct AbiViolation {
  void (*fn)(void);
  uint64_t bit;
};

inline const std::vector<AbiViolation> &AbiViolations() {
  static const std::vector<AbiViolation> all = {
#if defined(__aarch64__)
      {aesgen_abi_bad_x19, AESGEN_ABI_X19},   {aesgen_abi_bad_x20, AESGEN_ABI_X20},
      {aesgen_abi_bad_x21, AESGEN_ABI_X21},   {aesgen_abi_bad_x22, AESGEN_ABI_X22},
      {aesgen_abi_bad_x23, AESGEN_ABI_X23},   {aesgen_abi_bad_x24, AESGEN_ABI_X24},
      {aesgen_abi_bad_x25, AESGEN_ABI_X25},   {aesgen_abi_bad_x26, AESGEN_ABI_X26},
      {aesgen_abi_bad_x27, AESGEN_ABI_X27},   {aesgen_abi_bad_x28, AESGEN_ABI_X28},
      {aesgen_abi_bad_x29, AESGEN_ABI_X29},   {aesgen_abi_bad_sp, AESGEN_ABI_SP},
      {aesgen_abi_bad_d8, AESGEN_ABI_D8},     {aesgen_abi_bad_d9, AESGEN_ABI_D9},
      {aesgen_abi_bad_d10, AESGEN_ABI_D10},   {aesgen_abi_bad_d11, AESGEN_ABI_D11},
      {aesgen_abi_bad_d12, AESGEN_ABI_D12},   {aesgen_abi_bad_d13, AESGEN_ABI_D13},
      {aesgen_abi_bad_d14, AESGEN_ABI_D14},   {aesgen_abi_bad_d15, AESGEN_ABI_D15},
      {aesgen_abi_bad_fpcr, AESGEN_ABI_FPCR}, {aesgen_abi_bad_frame, AESGEN_ABI_FRAME},
#else
      {aesgen_abi_bad_rbx, AESGEN_ABI_RBX},       {aesgen_abi_bad_rbp, AESGEN_ABI_RBP},
      {aesgen_abi_bad_r12, AESGEN_ABI_R12},       {aesgen_abi_bad_r13, AESGEN_ABI_R13},
      {aesgen_abi_bad_r14, AESGEN_ABI_R14},       {aesgen_abi_bad_r15, AESGEN_ABI_R15},
      {aesgen_abi_bad_rsp, AESGEN_ABI_RSP},       {aesgen_abi_bad_df, AESGEN_ABI_DF},
      {aesgen_abi_bad_mxcsr, AESGEN_ABI_MXCSR},   {aesgen_abi_bad_x87cw, AESGEN_ABI_X87CW},
      {aesgen_abi_bad_x87tag, AESGEN_ABI_X87TAG}, {aesgen_abi_bad_frame, AESGEN_ABI_FRAME},
#endif
  };
  return all;
}

// ---------------------------------------------------------------------------
// AES key expansion (FIPS-197 section 5.2), used only to search a context, the
// vector registers and the stack for leftover round keys.  Checked against
// FIPS-197 appendix A (ctr_tests.cc).

inline const std::array<uint8_t, 256> &SBox() {
  static const std::array<uint8_t, 256> box = [] {
    auto mul = [](uint8_t a, uint8_t b) {
      uint8_t p = 0;
      while (b) {
        if (b & 1) p ^= a;
        a = static_cast<uint8_t>((a << 1) ^ ((a & 0x80) ? 0x1b : 0));
        b >>= 1;
      }
      return p;
    };
    std::array<uint8_t, 256> s{};
    for (unsigned x = 0; x < 256; x++) {
      uint8_t inv = 0;  // x^254, the inverse in GF(2^8) (0 for 0)
      uint8_t acc = 1;
      for (int i = 0; i < 254; i++) acc = mul(acc, static_cast<uint8_t>(x));
      inv = x ? acc : 0;
      uint8_t r = inv, out = inv;
      for (int i = 0; i < 4; i++) {
        r = static_cast<uint8_t>((r << 1) | (r >> 7));
        out ^= r;
      }
      s[x] = static_cast<uint8_t>(out ^ 0x63);
    }
    return s;
  }();
  return box;
}

inline std::vector<std::array<uint8_t, 16>> ExpandKey(const uint8_t *key, size_t key_len) {
  const size_t nk = key_len / 4, nr = nk + 6, words = 4 * (nr + 1);
  const auto &sbox = SBox();
  std::vector<uint8_t> w(4 * words);
  std::memcpy(w.data(), key, key_len);
  uint8_t rcon = 1;
  for (size_t i = nk; i < words; i++) {
    uint8_t t[4];
    std::memcpy(t, &w[4 * (i - 1)], 4);
    if (i % nk == 0) {
      uint8_t t0 = t[0];
      t[0] = static_cast<uint8_t>(sbox[t[1]] ^ rcon);
      t[1] = sbox[t[2]];
      t[2] = sbox[t[3]];
      t[3] = sbox[t0];
      rcon = static_cast<uint8_t>((rcon << 1) ^ ((rcon & 0x80) ? 0x1b : 0));
    } else if (nk > 6 && i % nk == 4) {
      for (auto &b : t) b = sbox[b];
    }
    for (size_t j = 0; j < 4; j++) w[4 * i + j] = w[4 * (i - nk) + j] ^ t[j];
  }
  std::vector<std::array<uint8_t, 16>> rk(nr + 1);
  for (size_t r = 0; r <= nr; r++) std::memcpy(rk[r].data(), &w[16 * r], 16);
  return rk;
}

// The scrub check: which round key of `round_keys`, if any, the trampoline's dumps
// (abi_check.h) hold: a 16-byte lane of a vector register, or 16 bytes at an 8-byte
// step of the stack below the caller's frame. "" when none.
inline int HardwareVectorBytes() {
#if defined(__x86_64__)
  const uint64_t have = aesgen_cpu_features();
#if defined(AESGEN_CPU_AVX512F)
  if (have & AESGEN_CPU_AVX512F) return 64;
#endif
#if defined(AESGEN_CPU_AVX)
  if (have & AESGEN_CPU_AVX) return 32;
#endif
  (void)have;
  return 16;
#else
  return 16;
#endif
}

// AESGEN_TEST_SCRUB_CHECK=0 turns the check off: for kernels written in C (the harness's
// own mock kernels), whose compiler leaves what it likes in the vector registers.
inline int VectorDumpBytes() {
  const char *s = std::getenv("AESGEN_TEST_SCRUB_CHECK");
  if (s != nullptr && std::strcmp(s, "0") == 0) return 0;
  return HardwareVectorBytes();
}

// The vector registers the trampoline dumps at `width` bytes each, and their name.
inline int DumpedRegisters(int width) {
#if defined(__x86_64__)
  return width == 64 ? 32 : 16;
#else
  (void)width;
  return 32;
#endif
}
inline const char *DumpedKind(int width) {
#if defined(__x86_64__)
  return width == 64 ? "zmm" : width == 32 ? "ymm" : "xmm";
#else
  (void)width;
  return "v";
#endif
}

inline std::string FindLeftRoundKey(const std::vector<std::array<uint8_t, 16>> &all_round_keys) {
  const int width = aesgen_abi_vector_bytes;
  // An all-zero round key (the key 0^128 of the GCM specification's first cases, the
  // second half of a 32-byte key 01 00 .. 00) says nothing: zeroed registers hold it.
  std::vector<std::array<uint8_t, 16>> round_keys;
  for (const auto &rk : all_round_keys)
    if (rk != std::array<uint8_t, 16>{}) round_keys.push_back(rk);
  if (width == 0 || round_keys.empty()) return "";
  const int regs = DumpedRegisters(width);
  const char *kind = DumpedKind(width);
  // Most of both dumps is zero (scrubbed registers, the stack zeroed before the call):
  // a chunk is compared with the round keys only when it is not.
  auto zero = [](const uint8_t *p) {
    uint64_t a, b;
    std::memcpy(&a, p, 8);
    std::memcpy(&b, p + 8, 8);
    return (a | b) == 0;
  };
  std::ostringstream os;
  for (int r = 0; r < regs; r++) {
    for (int lane = 0; lane < width / 16; lane++) {
      const uint8_t *p = aesgen_abi_vectors + r * width + 16 * lane;
      if (zero(p)) continue;
      for (size_t k = 0; k < round_keys.size(); k++) {
        if (std::memcmp(p, round_keys[k].data(), 16) == 0) {
          os << "round key " << k << " left in " << kind << r;
          if (width > 16) os << " (lane " << lane << ")";
          return os.str();
        }
      }
    }
  }
  for (size_t at = 0; at + 16 <= AESGEN_ABI_STACK_DUMP; at += 8) {
    if (zero(aesgen_abi_stack + at)) continue;
    for (size_t k = 0; k < round_keys.size(); k++) {
      if (std::memcmp(aesgen_abi_stack + at, round_keys[k].data(), 16) == 0) {
        os << "round key " << k << " left on the stack, " << AESGEN_ABI_STACK_DUMP - at
           << " bytes below the caller's frame";
        return os.str();
      }
    }
  }
  return "";
}

// Whether 16 bytes look like key material: at least 12 distinct byte values. A
// random 16 bytes has fewer with probability about 1e-4; what a scrubbed call may
// leave below the caller's frame (a return address, saved registers, pointers,
// lengths) has zero and repeated bytes.
inline bool LooksSecret(const uint8_t *p) {
  uint64_t word[2];
  std::memcpy(word, p, 16);
  if ((word[0] | word[1]) == 0) return false;    // a scrubbed register: the usual case
  uint64_t seen[4] = {0, 0, 0, 0};
  int distinct = 0;
  for (int i = 0; i < 16; i++) {
    const uint64_t bit = uint64_t{1} << (p[i] & 63);
    distinct += (seen[p[i] >> 6] & bit) == 0;
    seen[p[i] >> 6] |= bit;
  }
  return distinct >= 12;
}

// Any 16 bytes of the context (at any 8-byte offset) that look like key material
// (LooksSecret: round keys in every layout, H powers, FACE caches and table
// entries, keystream, derived keys) found in the vector registers or the stack a
// callee left (the trampoline's dumps), named; "" when none.
inline std::string FindLeftContextBytes(const uint8_t *ctx, size_t ctx_size) {
  const int width = aesgen_abi_vector_bytes;
  if (width == 0 || ctx_size < 16) return "";
  const int regs = DumpedRegisters(width);
  const char *kind = DumpedKind(width);
  auto in_context = [&](const uint8_t *p) -> long {
    if (!LooksSecret(p)) return -1;
    uint64_t first;
    std::memcpy(&first, p, 8);
    for (size_t off = 0; off + 16 <= ctx_size; off += 8) {
      uint64_t here;                       // the first 8 bytes sift, memcmp confirms
      std::memcpy(&here, ctx + off, 8);
      if (here == first && std::memcmp(ctx + off, p, 16) == 0) return static_cast<long>(off);
    }
    return -1;
  };
  std::ostringstream os;
  for (int r = 0; r < regs; r++) {
    for (int lane = 0; lane < width / 16; lane++) {
      long off = in_context(aesgen_abi_vectors + r * width + 16 * lane);
      if (off >= 0) {
        os << "context bytes " << off << ".." << off + 15 << " left in " << kind << r;
        if (width > 16) os << " (lane " << lane << ")";
        return os.str();
      }
    }
  }
  for (size_t at = 0; at + 16 <= AESGEN_ABI_STACK_DUMP; at += 8) {
    long off = in_context(aesgen_abi_stack + at);
    if (off >= 0) {
      os << "context bytes " << off << ".." << off + 15 << " left on the stack, "
         << AESGEN_ABI_STACK_DUMP - at << " bytes below the caller's frame";
      return os.str();
    }
  }
  return "";
}

// ---------------------------------------------------------------------------
// A context for one kernel: ctx_size bytes, 64-byte aligned, with canary bytes
// on both sides that every call is checked against. The CTR and AEAD suites
// derive their drivers from it (each adds the calls of its contract).

class GuardedContext {
 public:
  static constexpr size_t kFront = 64;  // canary before the context
  static constexpr size_t kBack = 256;  // canary after ctx_size

  GuardedContext(const char *name, size_t ctx_size, int fill) : name_(name), ctx_size_(ctx_size) {
    aesgen_abi_vector_bytes = VectorDumpBytes();   // the trampoline dumps what callees leave
    size_t total = kFront + ((ctx_size + kBack + 63) & ~size_t{63});
    mem_ = static_cast<uint8_t *>(std::aligned_alloc(64, total));
    if (mem_ == nullptr) {
      std::fprintf(stderr, "aligned_alloc(64, %zu) failed\n", total);
      std::abort();
    }
    for (size_t i = 0; i < kFront; i++) mem_[i] = CanaryByte(i);
    std::memset(mem_ + kFront, fill, ctx_size);
    for (size_t i = 0; i < kBack; i++) mem_[kFront + ctx_size + i] = CanaryByte(kFront + i);
  }
  ~GuardedContext() {
    if (problems_ > kMaxReports) {
      ADD_FAILURE() << name_ << ": " << problems_ - kMaxReports << " more ABI/canary failures";
    }
    std::free(mem_);
  }
  GuardedContext(const GuardedContext &) = delete;
  GuardedContext &operator=(const GuardedContext &) = delete;

  uint8_t *ctx() { return mem_ + kFront; }
  size_t size() const { return ctx_size_; }
  unsigned problems() const { return problems_; }

  // The key an init is given (16, 24 or 32 bytes): after every call its round keys are
  // looked for in the vector registers and the stack the callee left (CheckScrubbed).
  void RememberKey(const uint8_t *key, size_t key_len) {
    if (key_len == 16 || key_len == 24 || key_len == 32) round_keys_ = ExpandKey(key, key_len);
  }

 protected:
  void CheckScrubbed(const char *what) {
    std::string left = FindLeftRoundKey(round_keys_);
    if (left.empty()) left = FindLeftContextBytes(ctx(), ctx_size_);
    if (!left.empty() && ++problems_ <= kMaxReports) {
      ADD_FAILURE() << name_ << ": " << what << " did not scrub: " << left;
    }
  }

  static constexpr unsigned kMaxReports = 3;
  static uint8_t CanaryByte(size_t i) { return static_cast<uint8_t>(0xc3 ^ (i * 29)); }

  void CheckCanaries(const char *what) {
    for (size_t i = 0; i < kFront; i++) {
      if (mem_[i] != CanaryByte(i)) {
        if (++problems_ <= kMaxReports) {
          ADD_FAILURE() << name_ << ": " << what << " wrote before the context, at ctx - "
                        << kFront - i;
        }
        for (size_t j = 0; j < kFront; j++) mem_[j] = CanaryByte(j);
        break;
      }
    }
    uint8_t *back = mem_ + kFront + ctx_size_;
    for (size_t i = 0; i < kBack; i++) {
      if (back[i] != CanaryByte(kFront + i)) {
        if (++problems_ <= kMaxReports) {
          ADD_FAILURE() << name_ << ": " << what << " wrote past ctx_size (" << ctx_size_
                        << "), at ctx + ctx_size + " << i;
        }
        for (size_t j = 0; j < kBack; j++) back[j] = CanaryByte(kFront + j);
        break;
      }
    }
  }

  const char *name_;
  size_t ctx_size_;
  uint8_t *mem_ = nullptr;
  unsigned problems_ = 0;
  std::vector<std::array<uint8_t, 16>> round_keys_;
};

}  // namespace aesgen_harness

#endif  // AESGEN_HARNESS_UTIL_H
