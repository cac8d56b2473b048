// bench_common.h: what the translation units of aesgen_bench share (bench_main.cc, the
// CTR benchmarks; gcm_bench.cc, the AES-GCM ones; gcm_siv_bench.cc, AES-GCM-SIV;
// otr_bench.cc, AES-OTR; ghash_bench.cc, GHASH alone): the fatal and the skip messages, the
// TSC, the shared buffers, the key, the ticks-per-byte counter, OpenSSL's capability vector,
// the aesgen feature names and the ipsec-mb managers.  What only the AEAD benchmarks share
// (the record shape, the records an open benchmark opens, BoringSSL, libgcrypt) is in
// aead_common.h.
//
// Header-only (inline): the build compiles each .cc of harness/bench/ once per preset,
// against that preset's aesgen.h, and links them together.

#ifndef AESGEN_BENCH_COMMON_H
#define AESGEN_BENCH_COMMON_H

#include <benchmark/benchmark.h>
#include <intel-ipsec-mb.h>
#include <openssl/crypto.h>
#include <x86intrin.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "aesgen.h"

namespace aesgen_bench {

constexpr size_t kBlock = 16;
constexpr size_t kBufferLen = 65536;  // every benchmark's input and output fit in it
const std::vector<int> kAllKeyBits = {128, 192, 256};

[[noreturn]] inline void Die(const std::string &message) {
  std::fprintf(stderr, "aesgen_bench: FATAL: %s\n", message.c_str());
  std::fflush(stderr);
  std::abort();
}

// What this process cannot run is named on stderr, one line each: "skip IMPL: why"
// (`aesgen bench` collects these lines into its "not measured here" list).
inline void Skip(const std::string &impl, const std::string &why) {
  std::fprintf(stderr, "skip %s: %s\n", impl.c_str(), why.c_str());
}

// ---------------------------------------------------------------------------
// Time stamp counter and shared buffers

inline uint64_t Ticks() {
  _mm_lfence();
  const uint64_t t = __rdtsc();
  _mm_lfence();
  return t;
}

inline uint8_t *AlignedBuffer(size_t len) {
  void *p = std::aligned_alloc(64, (len + 63) & ~size_t{63});
  if (p == nullptr) Die("out of memory");
  return static_cast<uint8_t *>(p);
}

// One input and one output buffer for every benchmark, allocated on first use and
// kept for the life of the process.  The input holds a fixed pattern.
struct Buffers {
  uint8_t *in;
  uint8_t *out;
};

inline const Buffers &SharedBuffers() {
  static const Buffers buffers = [] {
    Buffers b{AlignedBuffer(kBufferLen), AlignedBuffer(kBufferLen)};
    for (size_t i = 0; i < kBufferLen; i++) b.in[i] = static_cast<uint8_t>(i * 31 + 7);
    std::memset(b.out, 0, kBufferLen);
    return b;
  }();
  return buffers;
}

// A fixed 32-byte key; the first 16, 24 or 32 bytes are used.
struct Key {
  uint8_t bytes[32];
};

inline Key BaseKey() {
  Key k;
  for (int i = 0; i < 32; i++) k.bytes[i] = static_cast<uint8_t>(0xa5 ^ (i * 13));
  return k;
}

inline std::vector<uint8_t> FromHex(const char *hex) {
  std::vector<uint8_t> bytes;
  for (size_t i = 0; hex[i] != '\0' && hex[i + 1] != '\0'; i += 2)
    bytes.push_back(static_cast<uint8_t>(std::stoul(std::string(hex + i, 2), nullptr, 16)));
  return bytes;
}

// The ticks_per_byte counter (and bytes processed, so bytes_per_second is reported).
inline void ReportPerByte(benchmark::State &state, uint64_t ticks, size_t size) {
  const double bytes = static_cast<double>(state.iterations()) * static_cast<double>(size);
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * static_cast<int64_t>(size));
  state.counters["ticks_per_byte"] =
      benchmark::Counter(bytes > 0 ? static_cast<double>(ticks) / bytes : 0.0);
}

// With OPENSSL_ia32cap in the environment the program benchmarks OpenSSL alone (its CTR,
// GCM and GHASH).
inline bool NoAesniMode() { return std::getenv("OPENSSL_ia32cap") != nullptr; }

// OpenSSL's capability vector as OPENSSL_info(OPENSSL_INFO_CPU_SETTINGS) reports it:
// "OPENSSL_ia32cap=0x<word0>:0x<word1> [env:...]".  (OpenSSL 3 exports no
// OPENSSL_ia32cap_loc(); this string is printed from the same OPENSSL_ia32cap_P.)
inline bool OpensslIa32capWord0(uint64_t *word0) {
  const char *info = OPENSSL_info(OPENSSL_INFO_CPU_SETTINGS);
  const char *p = info != nullptr ? std::strstr(info, "OPENSSL_ia32cap=") : nullptr;
  if (p == nullptr) return false;
  char *end = nullptr;
  *word0 = std::strtoull(p + std::strlen("OPENSSL_ia32cap="), &end, 0);
  return end != nullptr && end != p + std::strlen("OPENSSL_ia32cap=");
}

// Word 0 is CPUID.1:EDX in bits 0..31 and CPUID.1:ECX in bits 32..63.
constexpr int kIa32capPclmulqdqBit = 33;  // CPUID.1:ECX bit 1
constexpr int kIa32capAesniBit = 57;      // CPUID.1:ECX bit 25

// ---------------------------------------------------------------------------
// The generated set

// The key sizes the set was generated for.
inline std::vector<int> AesgenKeyBits() {
  std::vector<int> bits;
  for (size_t i = 0; i < kAllKeyBits.size(); i++)
    if (aesgen_key_bits_supported & (1u << i)) bits.push_back(kAllKeyBits[i]);
  return bits;
}

inline std::string AesgenFeatureNames(uint64_t features) {
  std::string names;
  for (int bit = 0; bit < 64; bit++) {
    const uint64_t mask = uint64_t{1} << bit;
    if (!(features & mask)) continue;
    const char *name = aesgen_cpu_feature_name(mask);
    names += " ";
    names += name != nullptr ? name : ("bit" + std::to_string(bit));
  }
  return names;
}

// ---------------------------------------------------------------------------
// ipsec-mb managers

struct MbManagerDeleter {
  void operator()(IMB_MGR *m) const { free_mb_mgr(m); }
};
using MbManager = std::shared_ptr<IMB_MGR>;

struct MbFlavour {
  const char *name;      // IMPL name of the CTR benchmarks ("ipsec-mb-sse", ...)
  const char *init_fn;   // for messages
  void (*init)(IMB_MGR *);
  uint64_t cpu_flags;    // what the manager needs (IMB_CPUFLAGS_*)
  uint32_t arch;         // IMB_ARCH_* it should report
};

inline const std::vector<MbFlavour> &MbFlavours() {
  static const std::vector<MbFlavour> flavours = {
      {"ipsec-mb-sse", "init_mb_mgr_sse", init_mb_mgr_sse, IMB_CPUFLAGS_SSE, IMB_ARCH_SSE},
      {"ipsec-mb-avx2", "init_mb_mgr_avx2", init_mb_mgr_avx2, IMB_CPUFLAGS_AVX2, IMB_ARCH_AVX2},
      {"ipsec-mb-avx512", "init_mb_mgr_avx512", init_mb_mgr_avx512, IMB_CPUFLAGS_AVX512,
       IMB_ARCH_AVX512},
  };
  return flavours;
}

inline std::string MbFeatureNames(uint64_t features) {
  static const struct { uint64_t bit; const char *name; } kNames[] = {
      {IMB_FEATURE_SHANI, "SHANI"},       {IMB_FEATURE_AESNI, "AESNI"},
      {IMB_FEATURE_PCLMULQDQ, "PCLMULQDQ"}, {IMB_FEATURE_CMOV, "CMOV"},
      {IMB_FEATURE_SSE4_2, "SSE4_2"},     {IMB_FEATURE_AVX, "AVX"},
      {IMB_FEATURE_AVX2, "AVX2"},         {IMB_FEATURE_AVX512F, "AVX512F"},
      {IMB_FEATURE_AVX512DQ, "AVX512DQ"}, {IMB_FEATURE_AVX512CD, "AVX512CD"},
      {IMB_FEATURE_AVX512BW, "AVX512BW"}, {IMB_FEATURE_AVX512VL, "AVX512VL"},
      {IMB_FEATURE_VAES, "VAES"},         {IMB_FEATURE_VPCLMULQDQ, "VPCLMULQDQ"},
      {IMB_FEATURE_GFNI, "GFNI"},         {IMB_FEATURE_BMI2, "BMI2"},
  };
  std::string names;
  for (const auto &n : kNames)
    if (features & n.bit) names += std::string(" ") + n.name;
  return names;
}

// Allocates and initialises a manager of one flavour for the benchmarks named `impl`;
// returns null (after one stderr line, "skip IMPL: why") when the init failed or the
// CPU lacks what the manager needs.
inline MbManager MakeMbManager(const MbFlavour &f, const std::string &impl) {
  MbManager mgr(alloc_mb_mgr(0), MbManagerDeleter());
  if (!mgr) Die(impl + ": alloc_mb_mgr failed");
  const uint64_t missing = f.cpu_flags & ~mgr->features;
  if (missing != 0) {  // checked before init: the init of a missing ISA may fault
    std::fprintf(stderr, "skip %s: needs%s\n", impl.c_str(), MbFeatureNames(missing).c_str());
    return nullptr;
  }
  f.init(mgr.get());
  if (const int err = imb_get_errno(mgr.get())) {
    std::fprintf(stderr, "skip %s: %s failed: %s\n", impl.c_str(), f.init_fn,
                 imb_get_strerror(err));
    return nullptr;
  }
  if (mgr->used_arch != f.arch) {
    std::fprintf(stderr, "skip %s: %s left the manager on arch %u, not %u\n", impl.c_str(),
                 f.init_fn, static_cast<unsigned>(mgr->used_arch),
                 static_cast<unsigned>(f.arch));
    return nullptr;
  }
  if ((mgr->features & IMB_FEATURE_SELF_TEST) && !(mgr->features & IMB_FEATURE_SELF_TEST_PASS)) {
    std::fprintf(stderr, "skip %s: the library's self-test failed\n", impl.c_str());
    return nullptr;
  }
  return mgr;
}

}  // namespace aesgen_bench

#endif  // AESGEN_BENCH_COMMON_H
