/* mock_gcm_siv.h: the entry points of mock_gcm_siv.c (AES-GCM-SIV, RFC 8452),
 * which mock_gcm.c lists in aesgen_aeads[] beside its GCM kernels.  Not part of
 * the contract: a generated set has no such header. */
#ifndef AESGEN_MOCK_GCM_SIV_H
#define AESGEN_MOCK_GCM_SIV_H

#include <stddef.h>
#include <stdint.h>

#define MOCK_SIV_CTX_SIZE 128

int mock_siv_init(void *ctx, const uint8_t *key, size_t key_len);
int mock_siv_seal(void *ctx, const uint8_t *nonce, size_t nonce_len, const uint8_t *aad,
                  size_t aad_len, const uint8_t *in, size_t len, uint8_t *out, uint8_t *tag,
                  size_t tag_len);
int mock_siv_open(void *ctx, const uint8_t *nonce, size_t nonce_len, const uint8_t *aad,
                  size_t aad_len, const uint8_t *in, size_t len, uint8_t *out,
                  const uint8_t *tag, size_t tag_len);
void mock_siv_wipe(void *ctx);

#endif /* AESGEN_MOCK_GCM_SIV_H */
