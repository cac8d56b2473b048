/* mock_gcm.c: AES-GCM behind the aesgen_aead contract (see aesgen.h beside
 * it), for tests/test_aead_harness.py.  AES comes from OpenSSL (EVP AES-ECB
 * on counter blocks); GHASH, the counter (inc32), the streaming state, the
 * length checks and the tag compare are written here, all in the
 * caller-owned context (MOCK_CTX_SIZE bytes).  Nothing in it is fast.
 * aesgen_aeads[] also lists the GCM-SIV kernels of mock_gcm_siv.c and the
 * AES-OTR kernels of mock_otr.c (with switches of their own, MOCK_BROKEN_SIV_*
 * and MOCK_BROKEN_OTR_*).
 *
 * Compile-time switches break it on purpose, one way each, to show that
 * harness/aead_tests.cc notices:
 *   MOCK_BROKEN_LEAVES_PLAINTEXT  open decrypts before checking the tag and
 *                                 leaves the plaintext in out on -1
 *   MOCK_BROKEN_ACCEPTS_WRONG_TAG open and finish_open return 0 for any tag
 *   MOCK_BROKEN_IGNORES_TAG_LEN   tags are always 16 bytes: seal writes 16,
 *                                 open compares 16, no range check
 *   MOCK_BROKEN_WRITES_PAST_CTX   init writes one byte at ctx + ctx_size
 *   MOCK_BROKEN_INC128            the counter carries out of bytes 12..15
 *                                 (a 128-bit increment, not inc32)
 *   MOCK_BROKEN_AAD_AFTER_DATA    aad after data began is taken, not refused
 *   MOCK_BROKEN_WIPE_KEEPS_KEY    wipe leaves the key in the context
 */
#include "aesgen.h"
#include "mock_gcm_siv.h"
#include "mock_otr.h"

#include <openssl/evp.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MOCK_CTX_SIZE 256
#define GCM_MAX_LEN ((UINT64_C(1) << 36) - 32)
#define GCM_MAX_AAD ((UINT64_C(1) << 61) - 1)

enum { PHASE_IDLE = 0, PHASE_AAD = 1, PHASE_DATA = 2 };

struct mock {
    uint8_t key[32];
    uint32_t key_len;
    uint32_t phase;
    uint8_t h[16];
    uint8_t j0[16];
    uint8_t ctr[16];     /* counter of the next keystream block */
    uint8_t ks[16];      /* the current keystream block */
    uint32_t ks_used;    /* bytes of ks already used (16: none left) */
    uint32_t part_len;   /* bytes waiting in part */
    uint8_t part[16];    /* a partial GHASH block (AAD or ciphertext) */
    uint8_t x[16];       /* the GHASH accumulator */
    uint64_t aad_len, msg_len;
};

typedef char mock_fits[sizeof(struct mock) <= MOCK_CTX_SIZE ? 1 : -1];

static void die(const char *what) {
    fprintf(stderr, "mock_gcm: %s failed\n", what);
    abort();
}

static const EVP_CIPHER *ecb(uint32_t key_len) {
    switch (key_len) {
    case 16: return EVP_aes_128_ecb();
    case 24: return EVP_aes_192_ecb();
    default: return EVP_aes_256_ecb();
    }
}

/* out = AES-ECB(key) of nblocks blocks of in. */
static void aes_blocks(const struct mock *s, const uint8_t *in, uint8_t *out, size_t nblocks) {
    EVP_CIPHER_CTX *c = EVP_CIPHER_CTX_new();
    int outl = 0;
    if (!c || EVP_EncryptInit_ex(c, ecb(s->key_len), NULL, s->key, NULL) != 1 ||
        EVP_CIPHER_CTX_set_padding(c, 0) != 1 ||
        EVP_EncryptUpdate(c, out, &outl, in, (int)(16 * nblocks)) != 1 ||
        outl != (int)(16 * nblocks))
        die("AES-ECB");
    EVP_CIPHER_CTX_free(c);
}

/* x = x * y in GF(2^128), GCM's bit order (SP 800-38D, algorithm 1). */
static void gf_mul(uint8_t x[16], const uint8_t y[16]) {
    uint8_t z[16] = {0}, v[16];
    memcpy(v, y, 16);
    for (int i = 0; i < 128; i++) {
        if ((x[i / 8] >> (7 - i % 8)) & 1)
            for (int j = 0; j < 16; j++) z[j] ^= v[j];
        int carry = v[15] & 1;
        for (int j = 15; j > 0; j--) v[j] = (uint8_t)((v[j] >> 1) | (v[j - 1] << 7));
        v[0] >>= 1;
        if (carry) v[0] ^= 0xe1;
    }
    memcpy(x, z, 16);
}

static void ghash_block(struct mock *s, const uint8_t b[16]) {
    for (int j = 0; j < 16; j++) s->x[j] ^= b[j];
    gf_mul(s->x, s->h);
}

static void ghash_absorb(struct mock *s, const uint8_t *p, size_t n) {
    while (n) {
        size_t k = 16 - s->part_len;
        if (k > n) k = n;
        memcpy(s->part + s->part_len, p, k);
        s->part_len += (uint32_t)k;
        p += k;
        n -= k;
        if (s->part_len == 16) {
            ghash_block(s, s->part);
            s->part_len = 0;
        }
    }
}

static void ghash_flush(struct mock *s) {
    if (s->part_len) {
        memset(s->part + s->part_len, 0, 16 - s->part_len);
        ghash_block(s, s->part);
        s->part_len = 0;
    }
}

static void inc32(uint8_t c[16]) {
#ifdef MOCK_BROKEN_INC128
    for (int i = 15; i >= 0; i--)
#else
    for (int i = 15; i >= 12; i--)
#endif
        if (++c[i]) break;
}

static void put_be64(uint8_t *p, uint64_t v) {
    for (int i = 7; i >= 0; i--, v >>= 8) p[i] = (uint8_t)v;
}

/* out = in XOR the keystream, continuing the stream. */
static void xor_stream(struct mock *s, const uint8_t *in, uint8_t *out, size_t n) {
    uint8_t ctrs[16 * 64], ks[16 * 64];
    while (n) {
        if (s->ks_used == 16 && n >= 16) {
            size_t nb = n / 16 > 64 ? 64 : n / 16;
            for (size_t b = 0; b < nb; b++) {
                memcpy(ctrs + 16 * b, s->ctr, 16);
                inc32(s->ctr);
            }
            aes_blocks(s, ctrs, ks, nb);
            for (size_t i = 0; i < 16 * nb; i++) out[i] = in[i] ^ ks[i];
            in += 16 * nb;
            out += 16 * nb;
            n -= 16 * nb;
            continue;
        }
        if (s->ks_used == 16) {
            aes_blocks(s, s->ctr, s->ks, 1);
            inc32(s->ctr);
            s->ks_used = 0;
        }
        *out++ = *in++ ^ s->ks[s->ks_used++];
        n--;
    }
}

static int mock_init(void *ctx, const uint8_t *key, size_t key_len) {
    struct mock *s = ctx;
#ifdef MOCK_BROKEN_WRITES_PAST_CTX
    ((volatile uint8_t *)ctx)[MOCK_CTX_SIZE] = 0;
#endif
    if (key_len != 16 && key_len != 24 && key_len != 32) return -1;
    memset(ctx, 0, MOCK_CTX_SIZE);
    memcpy(s->key, key, key_len);
    s->key_len = (uint32_t)key_len;
    uint8_t zero[16] = {0};
    aes_blocks(s, zero, s->h, 1);
    return 0;
}

static int tag_len_ok(size_t tag_len) {
#ifdef MOCK_BROKEN_IGNORES_TAG_LEN
    (void)tag_len;
    return 1;
#else
    return tag_len >= 4 && tag_len <= 16;
#endif
}

static size_t tag_bytes(size_t tag_len) {
#ifdef MOCK_BROKEN_IGNORES_TAG_LEN
    (void)tag_len;
    return 16;
#else
    return tag_len;
#endif
}

static int mock_start(void *ctx, const uint8_t *nonce, size_t nonce_len) {
    struct mock *s = ctx;
    if (nonce_len == 0 || s->key_len == 0) return -1;
    memset(s->x, 0, 16);
    s->part_len = 0;
    if (nonce_len == 12) {
        memcpy(s->j0, nonce, 12);
        s->j0[12] = s->j0[13] = s->j0[14] = 0;
        s->j0[15] = 1;
    } else {
        uint8_t len_block[16] = {0};
        ghash_absorb(s, nonce, nonce_len);
        ghash_flush(s);
        put_be64(len_block + 8, (uint64_t)nonce_len * 8);
        ghash_block(s, len_block);
        memcpy(s->j0, s->x, 16);
        memset(s->x, 0, 16);
    }
    memcpy(s->ctr, s->j0, 16);
    inc32(s->ctr);
    s->ks_used = 16;
    s->aad_len = s->msg_len = 0;
    s->phase = PHASE_AAD;
    return 0;
}

static int mock_aad(void *ctx, const uint8_t *aad, size_t len) {
    struct mock *s = ctx;
#ifdef MOCK_BROKEN_AAD_AFTER_DATA
    if (s->phase == PHASE_IDLE) return -1;
#else
    if (s->phase != PHASE_AAD) return -1;
#endif
    if (len > GCM_MAX_AAD - s->aad_len) return -1;
    s->aad_len += len;
    if (len) ghash_absorb(s, aad, len);
    return 0;
}

static int begin_data(struct mock *s, size_t len) {
    if (s->phase == PHASE_IDLE) return -1;
    if (s->phase == PHASE_AAD) {
        ghash_flush(s);
        s->phase = PHASE_DATA;
    }
    if (len > GCM_MAX_LEN - s->msg_len) return -1;
    s->msg_len += len;
    return 0;
}

static int mock_encrypt(void *ctx, const uint8_t *in, size_t len, uint8_t *out) {
    struct mock *s = ctx;
    if (begin_data(s, len) != 0) return -1;
    if (len) {
        xor_stream(s, in, out, len);
        ghash_absorb(s, out, len);
    }
    return 0;
}

static int mock_decrypt(void *ctx, const uint8_t *in, size_t len, uint8_t *out) {
    struct mock *s = ctx;
    if (begin_data(s, len) != 0) return -1;
    if (len) {
        ghash_absorb(s, in, len);
        xor_stream(s, in, out, len);
    }
    return 0;
}

/* The full tag of the stream so far; ends the stream. */
static void full_tag(struct mock *s, uint8_t tag[16]) {
    uint8_t len_block[16], ekj0[16];
    ghash_flush(s);
    put_be64(len_block, s->aad_len * 8);
    put_be64(len_block + 8, s->msg_len * 8);
    ghash_block(s, len_block);
    aes_blocks(s, s->j0, ekj0, 1);
    for (int i = 0; i < 16; i++) tag[i] = ekj0[i] ^ s->x[i];
    s->phase = PHASE_IDLE;
}

static int mock_finish_seal(void *ctx, uint8_t *tag, size_t tag_len) {
    struct mock *s = ctx;
    uint8_t t[16];
    if (!tag_len_ok(tag_len) || s->phase == PHASE_IDLE) return -1;
    full_tag(s, t);
    memcpy(tag, t, tag_bytes(tag_len));
    return 0;
}

static int tags_differ(const uint8_t *a, const uint8_t *b, size_t n) {
    uint8_t d = 0;
    for (size_t i = 0; i < n; i++) d |= a[i] ^ b[i];
#ifdef MOCK_BROKEN_ACCEPTS_WRONG_TAG
    (void)d;
    return 0;
#else
    return d != 0;
#endif
}

static int mock_finish_open(void *ctx, const uint8_t *tag, size_t tag_len) {
    struct mock *s = ctx;
    uint8_t t[16];
    if (!tag_len_ok(tag_len) || s->phase == PHASE_IDLE) return -1;
    full_tag(s, t);
    return tags_differ(t, tag, tag_bytes(tag_len)) ? -1 : 0;
}

static int mock_seal(void *ctx, const uint8_t *nonce, size_t nonce_len, const uint8_t *aad,
                     size_t aad_len, const uint8_t *in, size_t len, uint8_t *out, uint8_t *tag,
                     size_t tag_len) {
    if (nonce_len == 0 || !tag_len_ok(tag_len) || len > GCM_MAX_LEN || aad_len > GCM_MAX_AAD)
        return -1;
    if (mock_start(ctx, nonce, nonce_len) != 0 || mock_aad(ctx, aad, aad_len) != 0 ||
        mock_encrypt(ctx, in, len, out) != 0)
        return -1;
    return mock_finish_seal(ctx, tag, tag_len);
}

static int mock_open(void *ctx, const uint8_t *nonce, size_t nonce_len, const uint8_t *aad,
                     size_t aad_len, const uint8_t *in, size_t len, uint8_t *out,
                     const uint8_t *tag, size_t tag_len) {
    struct mock *s = ctx;
    uint8_t t[16];
    if (len > GCM_MAX_LEN || aad_len > GCM_MAX_AAD) return -1; /* over the limit: write nothing */
    if (nonce_len == 0 || !tag_len_ok(tag_len) || mock_start(ctx, nonce, nonce_len) != 0) {
        if (len) memset(out, 0, len);
        return -1;
    }
    mock_aad(ctx, aad, aad_len);
#ifdef MOCK_BROKEN_LEAVES_PLAINTEXT
    mock_decrypt(ctx, in, len, out);
    full_tag(s, t);
    return tags_differ(t, tag, tag_bytes(tag_len)) ? -1 : 0;
#else
    /* The tag first (the ciphertext is only hashed), then decrypt: in == out works. */
    begin_data(s, len);
    if (len) ghash_absorb(s, in, len);
    full_tag(s, t);
    if (tags_differ(t, tag, tag_bytes(tag_len))) {
        if (len) memset(out, 0, len);
        return -1;
    }
    if (len) xor_stream(s, in, out, len);
    return 0;
#endif
}

static void mock_wipe(void *ctx) {
    volatile uint8_t *p = ctx;
#ifdef MOCK_BROKEN_WIPE_KEEPS_KEY
    for (size_t i = offsetof(struct mock, key_len); i < MOCK_CTX_SIZE; i++) p[i] = 0;
#else
    for (size_t i = 0; i < MOCK_CTX_SIZE; i++) p[i] = 0;
#endif
}

#define MOCK_AEAD(name, method, face, ct, features)                                           \
    {name, "gcm", method, face, ct, features, MOCK_CTX_SIZE, 1, SIZE_MAX, 4, 16, mock_init,   \
     mock_seal, mock_open, mock_start, mock_aad, mock_encrypt, mock_decrypt, mock_finish_seal, \
     mock_finish_open, mock_wipe}

/* GCM-SIV (mock_gcm_siv.c): 12-byte nonces, 16-byte tags, no streaming. */
#define MOCK_SIV_AEAD(name, features)                                                          \
    {name, "gcm-siv", "mock", "none", 1, features, MOCK_SIV_CTX_SIZE, 12, 12, 16, 16,          \
     mock_siv_init, mock_siv_seal, mock_siv_open, NULL, NULL, NULL, NULL, NULL, NULL,           \
     mock_siv_wipe}

/* AES-OTR (mock_otr.c): nonces of 1..15 bytes, tags of 1..16, no streaming;
 * one seal and open per variant. */
#define MOCK_OTR_AEAD(name, mode, variant, features)                                           \
    {name, mode, "mock", "none", 1, features, MOCK_OTR_CTX_SIZE, 1, 15, 1, 16, mock_otr_init, \
     mock_otr_seal_##variant, mock_otr_open_##variant, NULL, NULL, NULL, NULL, NULL, NULL,    \
     mock_otr_wipe}

/* The table-method GCM one first: aesgen_best_aead("gcm") must pass over it;
 * the GCM-SIV and OTR ones this CPU cannot run before the ones it can, for
 * aesgen_best_aead("gcm-siv") and ("otr").  Every OTR variant has a kernel:
 * "otr" (v3.1, parallel AD), "otr-v2", and the serial-AD "otr-s", "otr-v2-s". */
const aesgen_aead aesgen_aeads[] = {
    MOCK_AEAD("mock-table-gcm", "table", "none", 0, 0),
    MOCK_AEAD("mock-gcm", "mock", "r2", 1, 0),
    MOCK_AEAD("mock-gcm-needs-mock-feature", "mock", "none", 1, AESGEN_CPU_MOCK),
    MOCK_SIV_AEAD("mock-gcm-siv-needs-mock-feature", AESGEN_CPU_MOCK),
    MOCK_SIV_AEAD("mock-gcm-siv", 0),
    MOCK_OTR_AEAD("mock-otr-needs-mock-feature", "otr", v3p, AESGEN_CPU_MOCK),
    MOCK_OTR_AEAD("mock-otr", "otr", v3p, 0),
    MOCK_OTR_AEAD("mock-otr-v2", "otr-v2", v2p, 0),
    MOCK_OTR_AEAD("mock-otr-s", "otr-s", v3s, 0),
    MOCK_OTR_AEAD("mock-otr-v2-s", "otr-v2-s", v2s, 0),
};
const size_t aesgen_aead_count = sizeof aesgen_aeads / sizeof aesgen_aeads[0];
const unsigned aesgen_key_bits_supported = 7;

uint64_t aesgen_cpu_features(void) { return 0; }

const char *aesgen_cpu_feature_name(uint64_t bit) {
    return bit == AESGEN_CPU_MOCK ? "MOCK" : NULL;
}

const aesgen_aead *aesgen_best_aead(const char *mode) {
    for (size_t i = 0; i < aesgen_aead_count; i++) {
        const aesgen_aead *a = &aesgen_aeads[i];
        if (strcmp(a->mode, mode) == 0 && a->constant_time &&
            (a->features & ~aesgen_cpu_features()) == 0)
            return a;
    }
    return NULL;
}
