// gcm_siv_bench.h: the AES-GCM-SIV (RFC 8452) seal and open benchmarks of aesgen_bench
// (gcm_siv_bench.cc).
//
// Benchmarks named IMPL/gcm_siv_seal/KEYBITS/SIZE and IMPL/gcm_siv_open/KEYBITS/SIZE,
// KEYBITS 128 or 256 (GCM-SIV has no 192).  IMPL is a "gcm-siv" entry of the set's
// aesgen_aeads[] this CPU runs (only where aesgen.h defines AESGEN_HAVE_AEAD),
// `boringssl-gcm-siv` or `libgcrypt-gcm-siv`; what this process cannot run is named on
// stderr ("skip IMPL: why").  Each iteration seals, or opens, one record as gcm_seal does:
// a 12-byte nonce of its own, 13 bytes of AAD, SIZE bytes, a 16-byte tag; key set-up is
// outside the timed loop, and what GCM-SIV does per nonce (derive the message keys, expand
// the encryption key, the POLYVAL key's powers) is inside it.  An open is of a valid record
// sealed before the loop.  Counters: ticks_per_byte (TSC ticks / iterations / SIZE) and
// ticks_per_message (TSC ticks / iterations): at 16 bytes the latter is mostly that
// per-nonce set-up.

#ifndef AESGEN_BENCH_GCM_SIV_H
#define AESGEN_BENCH_GCM_SIV_H

#include <cstddef>
#include <memory>
#include <set>
#include <string>
#include <vector>

namespace aesgen_bench {

// The default SIZEs; --aesgen_aead_sizes replaces them (1 to kGcmMaxSize bytes), as it
// does gcm_seal's.
const std::vector<size_t> kGcmSivSizes = {16, 64, 256, 1420, 4096, 16384};
constexpr int kGcmSivKeyBits[] = {128, 256};

class GcmSivImpl;  // one implementation at one key size (gcm_siv_bench.cc)

struct GcmSivTarget {
  std::string name;  // "IMPL/KEYBITS", for messages
  int key_bits;
  std::shared_ptr<GcmSivImpl> impl;
};

// Registers IMPL/gcm_siv_seal/KEYBITS/SIZE and IMPL/gcm_siv_open/KEYBITS/SIZE for every
// available IMPL, every key size of kGcmSivKeyBits in `key_bits` (empty = all) and every
// size; appends the names to `names` and returns the targets, for VerifyGcmSiv.  Nothing
// in the child run (OPENSSL_ia32cap set): OpenSSL 3.0 has no GCM-SIV to run there.
std::vector<GcmSivTarget> RegisterGcmSiv(const std::vector<size_t> &sizes,
                                         const std::set<int> &key_bits,
                                         std::vector<std::string> &names);

// Checks the reference (libgcrypt's GCM-SIV, else BoringSSL's) against RFC 8452 Appendix C
// vectors, then every target against the reference: seal (ciphertext and tag, nothing
// written past them), open of the reference's record (returns success and the plaintext),
// open of a record with a changed tag or ciphertext byte (returns failure), over several
// lengths, a re-key and a run of nonces.  A mismatch aborts the program naming the
// implementation.
void VerifyGcmSiv(const std::vector<GcmSivTarget> &targets, const std::vector<size_t> &sizes);

}  // namespace aesgen_bench

#endif  // AESGEN_BENCH_GCM_SIV_H
