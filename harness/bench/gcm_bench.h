// gcm_bench.h: the AES-GCM seal benchmarks of aesgen_bench (gcm_bench.cc).
//
// Benchmarks named IMPL/gcm_seal/KEYBITS/SIZE (and IMPL/gcm_seal_fresh/KEYBITS/SIZE, the
// set's kernels under fresh random nonces), KEYBITS 128 or 256.  IMPL is a GCM
// entry of the set's aesgen_aeads[] this CPU runs (only where aesgen.h defines
// AESGEN_HAVE_AEAD), `openssl-gcm`, `ipsec-mb-sse-gcm`, `ipsec-mb-avx2-gcm`,
// `ipsec-mb-avx512-gcm`, `libgcrypt-gcm` or `boringssl-gcm`; what this process cannot
// run is named on stderr ("skip IMPL: why").  Each iteration seals one TLS-style record:
// a new 12-byte nonce (a static IV XOR the record's sequence number in its low 8 bytes),
// 13 bytes of AAD, SIZE bytes of plaintext, a 16-byte tag; key set-up is outside the
// timed loop.  Counter: ticks_per_byte (TSC ticks / iterations / SIZE).

#ifndef AESGEN_BENCH_GCM_H
#define AESGEN_BENCH_GCM_H

#include <cstddef>
#include <memory>
#include <set>
#include <string>
#include <vector>

namespace aesgen_bench {

// The default SIZEs; any size from 1 to kGcmMaxSize may be asked for.
const std::vector<size_t> kGcmSizes = {64, 256, 1420, 4096, 16384};
constexpr size_t kGcmMaxSize = 65536 - 16;  // ciphertext and tag fit in the shared buffer
constexpr int kGcmKeyBits[] = {128, 256};

class GcmImpl;  // one implementation at one key size (gcm_bench.cc)

struct GcmTarget {
  std::string name;  // "IMPL/KEYBITS", for messages
  int key_bits;
  std::shared_ptr<GcmImpl> impl;
};

// Registers, with `tls`, IMPL/gcm_seal/KEYBITS/SIZE for every available IMPL, and with
// `fresh`, IMPL/gcm_seal_fresh/KEYBITS/SIZE for the set's kernels alone: the same record
// under a fresh random nonce (aead_common.h's FreshNonces), FACE's worst case (a peer's
// cost does not depend on the nonce); every key size of kGcmKeyBits in `key_bits` (empty
// = all) and every size. Appends the names to `names` and returns the targets, for
// VerifyGcm.
std::vector<GcmTarget> RegisterGcm(const std::vector<size_t> &sizes,
                                   const std::set<int> &key_bits,
                                   std::vector<std::string> &names, bool tls, bool fresh);

// Checks the reference (OpenSSL) against GCM test vectors, then every target against
// the reference (ciphertext and tag, several lengths, one not a multiple of 16, a
// re-key, a run of nonces); a mismatch aborts the program naming the implementation.
void VerifyGcm(const std::vector<GcmTarget> &targets, const std::vector<size_t> &sizes);

// Checks OpenSSL, the reference of VerifyGcm and VerifyGhash, against the GCM
// specification's test vectors; aborts the program when it does not match them.
void CheckGcmReference();

// The indices in aesgen_aeads[] of the set's GCM kernels this process can time: mode
// "gcm", every CPU feature they need present, 12-byte nonces and 16-byte tags accepted;
// the others are named on stderr ("skip NAME: why"). Empty for a set without AEADs.
std::vector<size_t> RunnableGcmAeads();

}  // namespace aesgen_bench

#endif  // AESGEN_BENCH_GCM_H
