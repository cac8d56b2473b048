/* aesgen.h of a mock set for tests/test_aead_harness.py: the AEAD contract of
 * DESIGN.md ("The C contracts every generated set honours"), with the prefix
 * aesgen_, implemented in mock_gcm.c (GCM) and mock_gcm_siv.c (GCM-SIV) over
 * OpenSSL (AES) and a GHASH of their own.
 * Not a generated file: it lets harness/aead_tests.cc be built and run, and
 * shown to fail, before the generator emits AEAD kernels. */
#ifndef AESGEN_MOCK_H
#define AESGEN_MOCK_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define AESGEN_HAVE_AEAD 1

/* The one CPU feature of the mock: no CPU has it (aesgen_cpu_features()
 * returns 0), so the kernel that needs it is skipped. */
#define AESGEN_CPU_MOCK (UINT64_C(1) << 0)

typedef struct aesgen_aead {
    const char *name;          /* e.g. "vaes512-gcm-r2": method, mode, FACE level */
    const char *mode;          /* "gcm", "gcm-siv", "otr" */
    const char *method;        /* "aesni", "vaes512", "bitsliced256", "armv8-ce", ... */
    const char *face;          /* "none", "r1", "r2" */
    int constant_time;         /* 0 only for table-based kernels */
    uint64_t features;         /* AESGEN_CPU_* bits it needs */
    size_t ctx_size;           /* bytes; ctx 64-byte aligned */
    size_t nonce_min, nonce_max, tag_min, tag_max;   /* accepted lengths in bytes */
    int  (*init)(void *ctx, const uint8_t *key, size_t key_len);   /* 0, or -1: bad key length */
    int  (*seal)(void *ctx, const uint8_t *nonce, size_t nonce_len,
                 const uint8_t *aad, size_t aad_len,
                 const uint8_t *in, size_t len, uint8_t *out,
                 uint8_t *tag, size_t tag_len);
        /* 0, or -1 for a length out of range (nothing written). in == out allowed. */
    int  (*open)(void *ctx, const uint8_t *nonce, size_t nonce_len,
                 const uint8_t *aad, size_t aad_len,
                 const uint8_t *in, size_t len, uint8_t *out,
                 const uint8_t *tag, size_t tag_len);
        /* 0, or -1 for a wrong tag or a length out of range; on -1, out[0..len) is all zero.
           The tag compare is constant time. in == out allowed. */
    /* Streaming, where the mode allows it (GCM yes; GCM-SIV seal cannot; NULL where absent).
       start, then aad any number of times, then encrypt or decrypt any number of times with
       any lengths, then finish. A streaming decrypt releases plaintext before the tag is
       checked: the caller must discard it when finish_open returns -1. */
    int  (*start)(void *ctx, const uint8_t *nonce, size_t nonce_len);
    int  (*aad)(void *ctx, const uint8_t *aad, size_t len);      /* -1 after data began */
    int  (*encrypt)(void *ctx, const uint8_t *in, size_t len, uint8_t *out);
    int  (*decrypt)(void *ctx, const uint8_t *in, size_t len, uint8_t *out);
    int  (*finish_seal)(void *ctx, uint8_t *tag, size_t tag_len);
    int  (*finish_open)(void *ctx, const uint8_t *tag, size_t tag_len);  /* 0, or -1 */
    void (*wipe)(void *ctx);
} aesgen_aead;
extern const aesgen_aead aesgen_aeads[]; extern const size_t aesgen_aead_count;
const aesgen_aead *aesgen_best_aead(const char *mode);   /* fastest constant-time one, or NULL */

/* Key sizes init accepts: bit 0 = 128, bit 1 = 192, bit 2 = 256. */
extern const unsigned aesgen_key_bits_supported;
/* The AESGEN_CPU_* features this CPU has. */
uint64_t aesgen_cpu_features(void);
/* The name of one feature bit, or NULL. */
const char *aesgen_cpu_feature_name(uint64_t bit);

#ifdef __cplusplus
}
#endif

#endif /* AESGEN_MOCK_H */
