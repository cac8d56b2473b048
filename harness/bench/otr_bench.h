// otr_bench.h: the AES-OTR seal and open benchmarks of aesgen_bench (otr_bench.cc), beside
// AES-OCB (RFC 7253), the nearest mode the peer libraries have.
//
// Benchmarks named IMPL/otr_seal/KEYBITS/SIZE and IMPL/otr_open/KEYBITS/SIZE, KEYBITS 128
// or 256.  IMPL is an entry of the set's aesgen_aeads[] with mode "otr" (AES-OTR v3.1,
// parallel AD), "otr-v2" (v2, parallel AD), "otr-s" or "otr-v2-s" (the same with serial
// AD) this CPU runs (only where aesgen.h defines AESGEN_HAVE_AEAD), `libgcrypt-ocb` or
// `openssl-ocb`.  Each iteration seals, or opens, one
// record: a 12-byte nonce of its own (TLS 1.3's, aead_common.h), 13 bytes of AAD, SIZE
// bytes, a 16-byte tag; key set-up is outside the timed loop, what OTR and OCB do per nonce
// is inside it.  An open is of a valid record sealed before the loop, a new one (and
// nonce) each iteration.
//
// Beside them, for comparison and not OTR: IMPL/otr_ref/KEYBITS/SIZE, where IMPL is the
// set's CTR kernel `METHOD-face-none` (set_iv with a new IV, then SIZE bytes of keystream
// XOR) or its GCM kernel `METHOD-gcm-none` (one record sealed as above), for each METHOD of
// the OTR kernels timed and for aesni and vaes512 (the methods the OTR targets are stated
// for), where the set has that kernel.
//
// Counters: ticks_per_byte (TSC ticks / iterations / SIZE) and ticks_per_message (TSC
// ticks / iterations).  What this process cannot run is named on stderr ("skip IMPL:
// why"): a kernel this CPU lacks a feature for, one whose nonce or tag range leaves out 12
// and 16 bytes, an OTR mode this program does not know, a peer library without OCB.

#ifndef AESGEN_BENCH_OTR_H
#define AESGEN_BENCH_OTR_H

#include <cstddef>
#include <memory>
#include <set>
#include <string>
#include <vector>

namespace aesgen_bench {

// The default SIZEs; --aesgen_aead_sizes replaces them (1 to kGcmMaxSize bytes), as it does
// the other AEAD tables'.
const std::vector<size_t> kOtrSizes = {16, 64, 256, 1420, 4096, 16384};
constexpr int kOtrKeyBits[] = {128, 256};

class OtrImpl;  // one OTR or OCB implementation at one key size (otr_bench.cc)
class OtrRef;   // one comparison kernel (CTR or GCM) at one key size (otr_bench.cc)

struct OtrTarget {
  std::string name;  // "IMPL/KEYBITS", for messages
  int key_bits;
  std::shared_ptr<OtrImpl> impl;  // null for a comparison kernel
  std::shared_ptr<OtrRef> ref;    // null for an OTR or OCB implementation
};

// Registers IMPL/otr_seal/KEYBITS/SIZE, IMPL/otr_open/KEYBITS/SIZE and the comparison
// IMPL/otr_ref/KEYBITS/SIZE for every available IMPL, every key size of kOtrKeyBits in
// `key_bits` (empty = all) and every size; appends the names to `names` and returns the
// targets, for VerifyOtr.  Nothing in the child run (OPENSSL_ia32cap set).
std::vector<OtrTarget> RegisterOtr(const std::vector<size_t> &sizes,
                                   const std::set<int> &key_bits,
                                   std::vector<std::string> &names);

// Checks the program's own AES-OTR (written from specs/aes-otr.md over OpenSSL's AES block
// function) against the specification's Appendix A vectors (v3.1 and v2, parallel and
// serial AD), then every OTR kernel against it: seal (ciphertext and tag, nothing written
// past them) over many message and AAD lengths, a re-key, a run of nonces, other nonce and
// tag lengths the kernel takes; open of the reference's record, and refusal (output zeroed)
// of a changed tag or ciphertext.  Each OCB peer against RFC 7253's vectors (Appendix A,
// and its iterated test for AES-128 and AES-256), then opening what it sealed and refusing
// a changed tag.  Each comparison kernel against OpenSSL (CTR, GCM) on one message.  A
// mismatch aborts the program naming the implementation.
void VerifyOtr(const std::vector<OtrTarget> &targets, const std::vector<size_t> &sizes);

}  // namespace aesgen_bench

#endif  // AESGEN_BENCH_OTR_H
