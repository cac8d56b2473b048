// fuzz_common.h: what the two libFuzzer targets (fuzz_ctr.cc for the
// aesgen_kernel contract, fuzz_aead.cc for aesgen_aead) share: reporting a
// finding, buffers that end or start at a PROT_NONE page, canaries, the
// choice of kernels this CPU runs, and long inputs grown from a seed.
//
// ASan and UBSan instrument the targets' C++ but not the generated assembly:
// a kernel that reads or writes past a buffer is caught by the guard page
// beside it (a SIGSEGV, which libFuzzer reports as a crash with the input
// saved), and a stray write inside the mapped pages by the canaries.
#ifndef AESGEN_FUZZ_COMMON_H
#define AESGEN_FUZZ_COMMON_H

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "aesgen.h"

namespace {

// A finding: say what broke and in which situation, then abort; libFuzzer
// writes the input as crash-<sha1> for `aesgen fuzz --reproduce`.
[[noreturn]] void Finding(const std::string &what, const std::string &situation) {
  std::fprintf(stderr, "\n==aesgen fuzz== FINDING: %s\n==aesgen fuzz== while: %s\n", what.c_str(),
               situation.c_str());
  std::fflush(stderr);
  std::abort();
}

std::string HexOf(const uint8_t *p, size_t n, size_t max = 48) {
  static const char kDigits[] = "0123456789abcdef";
  std::string s;
  for (size_t i = 0; i < n && i < max; i++) {
    s += kDigits[p[i] >> 4];
    s += kDigits[p[i] & 15];
  }
  if (n > max) s += "...";
  return s;
}

// memcpy and memcmp for lengths that may be 0 with a NULL pointer (an empty
// vector's data()), which the C library's declarations forbid.
void Copy(void *dst, const void *src, size_t n) {
  if (n != 0) std::memcpy(dst, src, n);
}
bool Same(const void *a, const void *b, size_t n) { return n == 0 || std::memcmp(a, b, n) == 0; }

// The first index where a and b differ, or n.
size_t FirstDiff(const uint8_t *a, const uint8_t *b, size_t n) {
  size_t i = 0;
  while (i < n && a[i] == b[i]) i++;
  return i;
}

constexpr uint8_t kCanary = 0xc5;
constexpr size_t kCanaryBytes = 64;

// A region of `capacity` usable bytes between two PROT_NONE pages, mapped once
// and reused by every input (no system call per execution).  Place() puts a
// buffer of n bytes against the upper guard page (at_end) or the lower one,
// fills the bytes around it on the free side with canaries, and
// CanariesIntact() checks them.
class GuardedArena {
 public:
  GuardedArena(size_t capacity, const char *label) : label_(label) {
    page_ = static_cast<size_t>(sysconf(_SC_PAGESIZE));
    span_ = (capacity + kCanaryBytes + page_ - 1) / page_ * page_;
    void *m = mmap(nullptr, span_ + 2 * page_, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED) Finding("mmap failed", label);
    base_ = static_cast<uint8_t *>(m);
    if (mprotect(base_, page_, PROT_NONE) != 0 ||
        mprotect(base_ + page_ + span_, page_, PROT_NONE) != 0) {
      Finding("mprotect failed", label);
    }
    capacity_ = capacity;
    Place(0, false);
  }
  GuardedArena(const GuardedArena &) = delete;
  GuardedArena &operator=(const GuardedArena &) = delete;

  uint8_t *Place(size_t n, bool at_end) {
    if (n > capacity_) Finding("buffer over the arena's capacity", label_);
    uint8_t *lo = base_ + page_, *hi = lo + span_;
    at_end_ = at_end;
    n_ = n;
    p_ = at_end ? hi - n : lo;
    if (at_end) {
      std::memset(p_ - kCanaryBytes, kCanary, kCanaryBytes);
    } else {
      std::memset(p_ + n, kCanary, kCanaryBytes);
    }
    return p_;
  }

  // The canaries beside the buffer still read kCanary.
  bool CanariesIntact() const {
    const uint8_t *c = at_end_ ? p_ - kCanaryBytes : p_ + n_;
    for (size_t i = 0; i < kCanaryBytes; i++) {
      if (c[i] != kCanary) return false;
    }
    return true;
  }

  const char *label() const { return label_; }

 private:
  const char *label_;
  size_t page_ = 0, span_ = 0, capacity_ = 0, n_ = 0;
  uint8_t *base_ = nullptr, *p_ = nullptr;
  bool at_end_ = false;
};

// The features a kernel needs that this CPU lacks, named ("" when it runs).
std::string MissingFeatures(uint64_t needed) {
  const uint64_t missing = needed & ~aesgen_cpu_features();
  std::string s;
  for (unsigned i = 0; i < 64; i++) {
    if ((missing >> i & 1) == 0) continue;
    const char *name = aesgen_cpu_feature_name(uint64_t{1} << i);
    if (!s.empty()) s += ", ";
    s += name != nullptr ? name : "bit " + std::to_string(i);
  }
  return s;
}

// Whether to fuzz a kernel of this name: AESGEN_FUZZ_KERNELS, when set, is a
// comma-separated list of substrings, one of which the name must contain.
bool KernelWanted(const char *name) {
  const char *only = std::getenv("AESGEN_FUZZ_KERNELS");
  if (only == nullptr || *only == '\0') return true;
  std::string list(only);
  size_t from = 0;
  while (from <= list.size()) {
    size_t comma = list.find(',', from);
    if (comma == std::string::npos) comma = list.size();
    std::string part = list.substr(from, comma - from);
    if (!part.empty() && std::strstr(name, part.c_str()) != nullptr) return true;
    from = comma + 1;
  }
  return false;
}

// Says once, on stderr, which kernels a target drives and which it cannot run.
void ReportKernels(const char *target, const std::vector<std::string> &run,
                   const std::vector<std::string> &skipped) {
  std::fprintf(stderr, "==aesgen fuzz== %s: %zu kernels:", target, run.size());
  for (const std::string &n : run) std::fprintf(stderr, " %s", n.c_str());
  std::fprintf(stderr, "\n");
  for (const std::string &s : skipped) std::fprintf(stderr, "==aesgen fuzz== skipped %s\n", s.c_str());
}

// The kernels a target drives, from a registry table (aesgen_kernels,
// aesgen_aeads): each entry AESGEN_FUZZ_KERNELS wants that this CPU runs and
// `take` accepts (it returns what the target keeps of it, or nothing and why
// not), the others reported skipped with the reason; said once on stderr.
template <typename Taken, typename Entry, typename Take>
std::vector<Taken> SelectKernels(const char *target, const Entry *table, size_t count, Take take) {
  std::vector<Taken> v;
  std::vector<std::string> names, skipped;
  for (size_t i = 0; i < count; i++) {
    const Entry &e = table[i];
    if (!KernelWanted(e.name)) continue;
    std::string why;
    const std::optional<Taken> taken = take(e, &why);
    if (!taken) {
      skipped.push_back(std::string(e.name) + ": " + why);
      continue;
    }
    const std::string missing = MissingFeatures(e.features);
    if (!missing.empty()) {
      skipped.push_back(std::string(e.name) + ": this CPU lacks " + missing);
      continue;
    }
    v.push_back(*taken);
    names.push_back(e.name);
  }
  ReportKernels(target, names, skipped);
  return v;
}

// The largest context among the kernels (one buffer serves them all).
template <typename Taken, typename Size>
size_t MaxContext(const std::vector<Taken> &kernels, Size size_of) {
  size_t m = 0;
  for (const Taken &k : kernels) m = std::max(m, size_of(k));
  return m;
}

// n bytes: the input's own bytes first, then a xorshift stream from seed (a
// 64 KiB message from a few input bytes, so that long lengths stay cheap for
// the fuzzer to reach).
std::vector<uint8_t> GrowBytes(std::vector<uint8_t> own, size_t n, uint64_t seed) {
  own.resize(std::min(own.size(), n));
  uint64_t x = seed | 1;
  while (own.size() < n) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    own.push_back(static_cast<uint8_t>(x >> 24));
  }
  return own;
}

// A context buffer: 64-byte aligned, `size` bytes of garbage (init must not
// count on zeros) and canaries after it (nothing is written at or past
// ctx_size).
class ContextBuffer {
 public:
  explicit ContextBuffer(size_t max_size) : max_(max_size) {
    p_ = static_cast<uint8_t *>(std::aligned_alloc(64, (max_size + kCanaryBytes + 63) / 64 * 64));
    if (p_ == nullptr) Finding("aligned_alloc failed", "context");
  }
  ~ContextBuffer() { std::free(p_); }
  ContextBuffer(const ContextBuffer &) = delete;
  ContextBuffer &operator=(const ContextBuffer &) = delete;

  void *Fresh(size_t size, uint8_t garbage) {
    if (size > max_) Finding("context over its buffer", "context");
    size_ = size;
    std::memset(p_, garbage, size);
    std::memset(p_ + size, kCanary, kCanaryBytes);
    return p_;
  }
  bool TailIntact() const {
    for (size_t i = 0; i < kCanaryBytes; i++) {
      if (p_[size_ + i] != kCanary) return false;
    }
    return true;
  }
  bool AllZero() const {
    for (size_t i = 0; i < size_; i++) {
      if (p_[i] != 0) return false;
    }
    return true;
  }

 private:
  uint8_t *p_ = nullptr;
  size_t max_ = 0, size_ = 0;
};

}  // namespace

#endif  // AESGEN_FUZZ_COMMON_H
