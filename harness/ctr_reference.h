// ctr_reference.h: the CTR reference the harness checks kernels against:
// OpenSSL's EVP AES-CTR (a 128-bit big-endian counter, SP 800-38A).
//
// Included by harness/ctr_tests.cc (whose HarnessSelfTest suite holds it
// against SP 800-38A's vectors and a carry through all 128 bits) and by the
// fuzz target harness/fuzz/fuzz_ctr.cc; no GoogleTest in here.  In an unnamed
// namespace: each of those is the only file of its binary that includes it.
#ifndef AESGEN_CTR_REFERENCE_H
#define AESGEN_CTR_REFERENCE_H

#include <openssl/evp.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>

namespace {

const EVP_CIPHER *EvpCtr(size_t key_len) {
  switch (key_len) {
    case 16: return EVP_aes_128_ctr();
    case 24: return EVP_aes_192_ctr();
    case 32: return EVP_aes_256_ctr();
    default: return nullptr;
  }
}

// out = AES-CTR(key, iv) applied to in, from the start of the stream.
void OracleCtr(const uint8_t *key, size_t key_len, const uint8_t *iv, const uint8_t *in,
               uint8_t *out, size_t len) {
  EVP_CIPHER_CTX *c = EVP_CIPHER_CTX_new();
  if (c == nullptr || EVP_EncryptInit_ex(c, EvpCtr(key_len), nullptr, key, iv) != 1) {
    std::fprintf(stderr, "OpenSSL EVP CTR init failed\n");
    std::abort();
  }
  size_t done = 0;
  while (done < len) {
    int chunk = static_cast<int>(std::min<size_t>(len - done, size_t{1} << 30));
    int outl = 0;
    if (EVP_EncryptUpdate(c, out + done, &outl, in + done, chunk) != 1 || outl != chunk) {
      std::fprintf(stderr, "OpenSSL EVP CTR update failed\n");
      std::abort();
    }
    done += static_cast<size_t>(chunk);
  }
  EVP_CIPHER_CTX_free(c);
}

}  // namespace

#endif  // AESGEN_CTR_REFERENCE_H
