// thread_tests.cc: every kernel of the set run in several threads at once, one context each
// (the contract: "one ctx per stream and thread"), to show that the kernels keep no state
// outside their context and that the registry's queries may be called from any thread.
//
// Each job (kernel, key, IV or nonce, AAD, message, split point) is first run alone on the
// main thread; its output is what every thread must then get, with all threads running all
// kernels, each thread starting at a different kernel so that different kernels overlap.
// Correctness against the oracles is the other suites' work (ctr_tests.cc, aead_tests.cc):
// here a difference can only come from state shared between calls. The threads call the
// kernels directly (no ABI trampoline, no fault handler: both keep process-wide state), and
// report what they find to the main thread, which fails the test.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "aesgen.h"

namespace {

using Bytes = std::vector<uint8_t>;

constexpr size_t kThreads = 4;
constexpr size_t kRounds = 3;        // each thread runs every job this many times
constexpr size_t kMaxLen = 2100;     // past a zmm batch of 32 blocks and a partial block

uint64_t Seed() {
  const char *s = std::getenv("AESGEN_TEST_SEED");
  return (s != nullptr && *s != '\0') ? std::strtoull(s, nullptr, 0) : 0x7468726561647321ull;
}

Bytes RandomBytes(std::mt19937_64 &rng, size_t n) {
  Bytes b(n);
  for (auto &x : b) x = static_cast<uint8_t>(rng());
  return b;
}

size_t Pick(std::mt19937_64 &rng, size_t lo, size_t hi) {
  return std::uniform_int_distribution<size_t>(lo, hi)(rng);
}

// A 64-byte aligned context, freed on scope exit.
struct Ctx {
  explicit Ctx(size_t size) : p(std::aligned_alloc(64, (std::max<size_t>(size, 1) + 63) & ~size_t{63})) {}
  ~Ctx() { std::free(p); }
  Ctx(const Ctx &) = delete;
  Ctx &operator=(const Ctx &) = delete;
  void *p;
};

// One message for one kernel, and what running it alone gave.
struct Job {
  const aesgen_kernel *ctr = nullptr;
#ifdef AESGEN_HAVE_AEAD
  const aesgen_aead *aead = nullptr;
#endif
  Bytes key, iv, aad, in;
  size_t split = 0;     // CTR: xor_stream in two pieces, split bytes then the rest
  size_t tag_len = 16;
  Bytes out, tag;       // the lone run's ciphertext (keystream XOR in) and tag

  const char *Name() const {
#ifdef AESGEN_HAVE_AEAD
    if (aead != nullptr) return aead->name;
#endif
    return ctr->name;
  }

  size_t CtxSize() const {
#ifdef AESGEN_HAVE_AEAD
    if (aead != nullptr) return aead->ctx_size;
#endif
    return ctr->ctx_size;
  }

  // Runs the job on ctx; returns "" or what went wrong. With `record`, keeps the output as
  // the job's (the lone run); else compares with it.
  std::string Run(void *ctx, bool record) {
    Bytes out_now(in.size()), tag_now(tag_len);
    std::ostringstream why;
    if (ctr != nullptr) {
      if (ctr->init(ctx, key.data(), key.size(), iv.data()) != 0) return "init refused its key";
      ctr->xor_stream(ctx, out_now.data(), in.data(), split);
      ctr->xor_stream(ctx, out_now.data() + split, in.data() + split, in.size() - split);
      ctr->wipe(ctx);
    }
#ifdef AESGEN_HAVE_AEAD
    if (aead != nullptr) {
      if (aead->init(ctx, key.data(), key.size()) != 0) return "init refused its key";
      if (aead->seal(ctx, iv.data(), iv.size(), aad.data(), aad.size(), in.data(), in.size(),
                     out_now.data(), tag_now.data(), tag_len) != 0) {
        return "seal returned -1";
      }
      Bytes back(in.size());
      int r = aead->open(ctx, iv.data(), iv.size(), aad.data(), aad.size(), out_now.data(),
                         out_now.size(), back.data(), tag_now.data(), tag_len);
      if (r != 0 || back != in) {
        why << "open of its own seal: returned " << r
            << (back != in ? ", plaintext differs" : "");
        return why.str();
      }
      aead->wipe(ctx);
    }
#endif
    if (record) {
      out = out_now;
      tag = tag_now;
      return "";
    }
    if (out_now != out) {
      size_t i = 0;
      while (out_now[i] == out[i]) i++;
      why << "output differs from the lone run at byte " << i << " of " << in.size();
      return why.str();
    }
    if (tag_now != tag) return "tag differs from the lone run's";
    return "";
  }
};

std::vector<Job> MakeJobs(std::vector<std::string> *skipped) {
  std::mt19937_64 rng(Seed());
  const uint64_t have = aesgen_cpu_features();
  std::vector<Job> jobs;
  std::vector<size_t> key_lens;
  for (size_t bits : {128, 192, 256})
    if (aesgen_key_bits_supported & (1u << (bits / 64 - 2))) key_lens.push_back(bits / 8);
  auto message = [&](Job &j) {
    j.key = RandomBytes(rng, key_lens[Pick(rng, 0, key_lens.size() - 1)]);
    j.in = RandomBytes(rng, Pick(rng, 0, 3) ? Pick(rng, 0, kMaxLen) : Pick(rng, 0, 64));
    j.split = Pick(rng, 0, j.in.size());
  };
  for (size_t i = 0; i < aesgen_kernel_count; i++) {
    const aesgen_kernel &k = aesgen_kernels[i];
    if ((k.features & ~have) != 0) {
      skipped->push_back(k.name);
      continue;
    }
    for (int m = 0; m < 2; m++) {
      Job j;
      j.ctr = &k;
      message(j);
      j.iv = RandomBytes(rng, 16);
      jobs.push_back(j);
    }
  }
#ifdef AESGEN_HAVE_AEAD
  for (size_t i = 0; i < aesgen_aead_count; i++) {
    const aesgen_aead &a = aesgen_aeads[i];
    if ((a.features & ~have) != 0) {
      skipped->push_back(a.name);
      continue;
    }
    for (int m = 0; m < 2; m++) {
      Job j;
      j.aead = &a;
      message(j);
      Ctx probe(a.ctx_size);   // GCM-SIV and OTR take 16- and 32-byte keys only
      if (a.init(probe.p, j.key.data(), j.key.size()) != 0) j.key.resize(16);
      a.wipe(probe.p);
      j.iv = RandomBytes(rng, Pick(rng, a.nonce_min, std::min<size_t>(a.nonce_max, 40)));
      j.tag_len = Pick(rng, a.tag_min, a.tag_max);
      j.aad = RandomBytes(rng, Pick(rng, 0, 40));
      jobs.push_back(j);
    }
  }
#endif
  return jobs;
}

// Runs every job alone, then all of them in kThreads threads at once; returns what the
// threads found (empty: every output as the lone run's, the registry's answers the same).
std::vector<std::string> RunAtOnce(std::vector<Job> &jobs) {
  std::vector<std::string> problems;
  size_t biggest = 1;
  for (auto &j : jobs) {
    biggest = std::max(biggest, j.CtxSize());
    Ctx ctx(j.CtxSize());
    std::string why = j.Run(ctx.p, true);
    if (!why.empty()) problems.push_back(std::string(j.Name()) + " alone: " + why);
  }
  if (!problems.empty()) return problems;

  // What the registry answers on the main thread; each thread asks again as it goes.
  const uint64_t features = aesgen_cpu_features();
  const aesgen_kernel *best = aesgen_best_kernel();
#ifdef AESGEN_HAVE_AEAD
  const aesgen_aead *best_gcm = aesgen_best_aead("gcm");
#endif

  std::vector<std::vector<std::string>> found(kThreads);
  std::atomic<size_t> ready{0};
  std::vector<std::thread> threads;
  for (size_t t = 0; t < kThreads; t++) {
    threads.emplace_back([&, t] {
      Ctx ctx(biggest);
      ready++;
      while (ready.load() < kThreads) std::this_thread::yield();   // start together
      for (size_t r = 0; r < kRounds; r++) {
        for (size_t n = 0; n < jobs.size(); n++) {
          Job &j = jobs[(n + t * jobs.size() / kThreads) % jobs.size()];
          std::string why = j.Run(ctx.p, false);
          if (!why.empty()) found[t].push_back(std::string(j.Name()) + ": " + why);
          if (aesgen_cpu_features() != features) found[t].push_back("aesgen_cpu_features differs");
          if (aesgen_best_kernel() != best) found[t].push_back("aesgen_best_kernel differs");
#ifdef AESGEN_HAVE_AEAD
          if (aesgen_best_aead("gcm") != best_gcm) found[t].push_back("aesgen_best_aead differs");
#endif
        }
      }
    });
  }
  for (auto &th : threads) th.join();
  for (size_t t = 0; t < kThreads; t++)
    for (const auto &f : found[t]) problems.push_back("thread " + std::to_string(t) + ": " + f);
  return problems;
}

TEST(Threads, EveryKernelInSeveralThreadsAtOnce) {
  std::vector<std::string> skipped;
  std::vector<Job> jobs = MakeJobs(&skipped);
  for (const auto &name : skipped)
    std::printf("[ SKIPPED  ] %s in Threads: this CPU lacks a feature it needs\n", name.c_str());
  ASSERT_FALSE(jobs.empty()) << "no kernel of this set runs on this CPU";
  std::vector<std::string> problems = RunAtOnce(jobs);
  for (size_t i = 0; i < problems.size() && i < 20; i++) ADD_FAILURE() << problems[i];
  EXPECT_EQ(problems.size(), 0u) << problems.size() << " differences in " << kThreads
                                 << " threads x " << kRounds << " rounds x " << jobs.size()
                                 << " jobs";
  std::printf("Threads: %zu jobs (%zu kernels skipped) x %zu rounds in %zu threads at once\n",
              jobs.size(), skipped.size(), kRounds, kThreads);
}

// The check's own failure: a CTR "kernel" that keeps its key and position in a global, not
// in its context (the fault the test is for), run the same way, must be caught.
uint8_t g_mock_key[32];
size_t g_mock_pos;

int MockInit(void *, const uint8_t *key, size_t key_len, const uint8_t iv[16]) {
  std::memcpy(g_mock_key, key, std::min<size_t>(key_len, sizeof g_mock_key));
  g_mock_key[0] ^= iv[0];
  g_mock_pos = 0;
  return 0;
}
int MockSetIv(void *, const uint8_t iv[16]) {
  g_mock_key[0] ^= iv[0];
  return 0;
}
void MockXorStream(void *, uint8_t *out, const uint8_t *in, size_t len) {
  for (size_t i = 0; i < len; i++) {
    std::this_thread::yield();      // let the other threads in, as a long kernel would
    out[i] = static_cast<uint8_t>(in[i] ^ g_mock_key[g_mock_pos % 16] ^ g_mock_pos);
    g_mock_pos++;
  }
}
void MockWipe(void *) {}

TEST(Threads, CatchesAKernelWithStateOutsideItsContext) {
  static const aesgen_kernel mock = {"mock-global-state", "mock", "none", 1, 0, 64,
                                     MockInit, MockSetIv, MockXorStream, MockWipe};
  std::mt19937_64 rng(Seed());
  std::vector<Job> jobs;
  for (int m = 0; m < 8; m++) {
    Job j;
    j.ctr = &mock;
    j.key = RandomBytes(rng, 16);
    j.iv = RandomBytes(rng, 16);
    j.in = RandomBytes(rng, 300);
    j.split = 100;
    jobs.push_back(j);
  }
  EXPECT_FALSE(RunAtOnce(jobs).empty()) << "threads sharing a global went unnoticed";
}

}  // namespace
