// ghash_bench.h: the GHASH-alone benchmarks of aesgen_bench (ghash_bench.cc).
//
// Benchmarks named IMPL/ghash/128/SIZE (the 128, the AES key size, gives the names the
// four parts of IMPL/gcm_seal/KEYBITS/SIZE).  Each iteration hashes SIZE bytes: an AES-GCM
// message of SIZE bytes of AAD and no plaintext, so what is timed is GHASH and little else.
// IMPL is a GCM entry of the set's aesgen_aeads[] this CPU runs, `openssl-ghash`,
// `ct-1bit-ghash` or `ct-holes-ghash` (two constant-time GHASHs without a carry-less
// multiplier, written here as the alternatives to the set's own); in the child run with
// OPENSSL_ia32cap masking AES-NI and PCLMULQDQ, `openssl-noaesni-ghash` alone.  Counter:
// ticks_per_byte (TSC ticks / iterations / SIZE).

#ifndef AESGEN_BENCH_GHASH_H
#define AESGEN_BENCH_GHASH_H

#include <cstddef>
#include <memory>
#include <set>
#include <string>
#include <vector>

namespace aesgen_bench {

class GhashImpl;  // one implementation, keyed with an AES-128 key (ghash_bench.cc)

struct GhashTarget {
  std::string name;  // IMPL, for messages
  std::shared_ptr<GhashImpl> impl;
};

// Registers IMPL/ghash/128/SIZE for every available IMPL and every size (sizes from 1 to
// kGcmMaxSize), unless `key_bits` is non-empty and lacks 128; appends the names to `names`
// and returns the targets, for VerifyGhash.
std::vector<GhashTarget> RegisterGhash(const std::vector<size_t> &sizes,
                                       const std::set<int> &key_bits,
                                       std::vector<std::string> &names);

// Checks every target against OpenSSL's AES-128-GCM tag of AAD-only messages (lengths 0,
// 16, 17, 100, 4096 and the benchmark sizes, after a re-key); a mismatch aborts the
// program naming the implementation.
void VerifyGhash(const std::vector<GhashTarget> &targets, const std::vector<size_t> &sizes);

}  // namespace aesgen_bench

#endif  // AESGEN_BENCH_GHASH_H
