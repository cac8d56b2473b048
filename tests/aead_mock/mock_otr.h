/* mock_otr.h: the entry points of mock_otr.c (AES-OTR, specs/aes-otr.md), which
 * mock_gcm.c lists in aesgen_aeads[] beside its GCM and GCM-SIV kernels: one
 * seal and one open per variant (v3.1 or v2, AD parallel or serial), init and
 * wipe shared.  Not part of the contract: a generated set has no such header. */
#ifndef AESGEN_MOCK_OTR_H
#define AESGEN_MOCK_OTR_H

#include <stddef.h>
#include <stdint.h>

#define MOCK_OTR_CTX_SIZE 128

int mock_otr_init(void *ctx, const uint8_t *key, size_t key_len);
void mock_otr_wipe(void *ctx);

#define MOCK_OTR_DECLARE(variant)                                                             \
    int mock_otr_seal_##variant(void *ctx, const uint8_t *nonce, size_t nonce_len,            \
                                const uint8_t *aad, size_t aad_len, const uint8_t *in,        \
                                size_t len, uint8_t *out, uint8_t *tag, size_t tag_len);      \
    int mock_otr_open_##variant(void *ctx, const uint8_t *nonce, size_t nonce_len,            \
                                const uint8_t *aad, size_t aad_len, const uint8_t *in,        \
                                size_t len, uint8_t *out, const uint8_t *tag, size_t tag_len);

MOCK_OTR_DECLARE(v3p) /* "otr":      v3.1, parallel AD */
MOCK_OTR_DECLARE(v2p) /* "otr-v2":   v2, parallel AD */
MOCK_OTR_DECLARE(v3s) /* "otr-s":    v3.1, serial AD */
MOCK_OTR_DECLARE(v2s) /* "otr-v2-s": v2, serial AD */

#undef MOCK_OTR_DECLARE

#endif /* AESGEN_MOCK_OTR_H */
