/* mock_gcm_siv.c: AES-GCM-SIV (RFC 8452) behind the aesgen_aead contract, for
 * tests/test_aead_harness.py; mock_gcm.c lists it in aesgen_aeads[] (entry
 * points in mock_gcm_siv.h).  AES comes from OpenSSL (EVP AES-ECB).  POLYVAL is
 * computed through GHASH's field, by the identity of RFC 8452 Appendix A:
 *   POLYVAL(H, X_1, ..., X_n) = ByteReverse(GHASH(mulX_GHASH(ByteReverse(H)),
 *                                   ByteReverse(X_1), ..., ByteReverse(X_n)))
 * not the way harness/aead_tests.cc's reference computes it, so that the two
 * do not share a mistake.  One-shot only: the streaming entries are NULL.  The
 * context holds the key and its length (0: no key); the per-nonce keys are
 * derived on each call, on the stack.  Nothing in it is fast.
 *
 * The contract: keys of 16 or 32 bytes (init refuses any other length and
 * leaves the context as it was), nonces of 12 bytes, tags of 16; seal returns
 * -1 and writes nothing for a length out of range, a message or AAD over 2^36
 * bytes, or a context without a key; open returns -1 with out[0..len) zeroed
 * for a wrong tag or a nonce or tag length out of range, and -1 writing nothing
 * over 2^36 bytes.
 *
 * Compile-time switches break it on purpose, one way each, to show that
 * harness/aead_tests.cc notices:
 *   MOCK_BROKEN_SIV_LEAVES_PLAINTEXT     open leaves the decrypted plaintext in
 *                                        out when the tag is wrong
 *   MOCK_BROKEN_SIV_ACCEPTS_WRONG_TAG    open returns 0 for any tag
 *   MOCK_BROKEN_SIV_CTR64                the counter is the little-endian 64
 *                                        bits of bytes 0..7: it carries into
 *                                        byte 4 where it should wrap
 *   MOCK_BROKEN_SIV_CTR_BE               the counter is big-endian in bytes
 *                                        0..3 (byte 3 counts)
 *   MOCK_BROKEN_SIV_NO_NONCE_XOR         the nonce is not XORed into S_s
 *   MOCK_BROKEN_SIV_IGNORES_TAG_LEN      tags are always 16 bytes (written,
 *                                        compared), tag_len unchecked
 *   MOCK_BROKEN_SIV_TAKES_192            init takes 24-byte keys (AES-192)
 *   MOCK_BROKEN_SIV_REFUSED_INIT_CLEARS  init clears the context before it
 *                                        checks the key length
 *   MOCK_BROKEN_SIV_SEALS_WITHOUT_KEY    seal on a context without a key seals
 *                                        under the all-zero AES-128 key
 *   MOCK_BROKEN_SIV_NO_LENGTH_LIMIT      no 2^36 limit on the message or AAD
 */
#include "mock_gcm_siv.h"

#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SIV_MAX ((uint64_t)1 << 36) /* P_MAX and A_MAX, RFC 8452 section 6 */

struct siv {
    uint8_t key[32];
    uint32_t key_len; /* 0: no key */
};

typedef char siv_fits[sizeof(struct siv) <= MOCK_SIV_CTX_SIZE ? 1 : -1];

static void siv_die(const char *what) {
    fprintf(stderr, "mock_gcm_siv: %s failed\n", what);
    abort();
}

/* out = AES-ECB(key) of nblocks blocks of in, for a key of 16, 24 or 32 bytes
 * (anything else: the first 16). */
static void aes_ecb(const uint8_t *key, size_t key_len, const uint8_t *in, uint8_t *out,
                    size_t nblocks) {
    const EVP_CIPHER *cipher = key_len == 32   ? EVP_aes_256_ecb()
                               : key_len == 24 ? EVP_aes_192_ecb()
                                               : EVP_aes_128_ecb();
    EVP_CIPHER_CTX *c = EVP_CIPHER_CTX_new();
    int outl = 0;
    if (!c || EVP_EncryptInit_ex(c, cipher, NULL, key, NULL) != 1 ||
        EVP_CIPHER_CTX_set_padding(c, 0) != 1 ||
        EVP_EncryptUpdate(c, out, &outl, in, (int)(16 * nblocks)) != 1 ||
        outl != (int)(16 * nblocks))
        siv_die("AES-ECB");
    EVP_CIPHER_CTX_free(c);
}

/* ---- GHASH's field (SP 800-38D): bit 0 of a block is the top bit of byte 0 ---- */

typedef struct {
    uint64_t hi, lo; /* bytes 0..7 and 8..15, big-endian */
} gblock;

/* ByteReverse(b), read in GHASH's order. */
static gblock load_reversed(const uint8_t b[16]) {
    gblock g = {0, 0};
    for (int i = 0; i < 8; i++) {
        g.hi = (g.hi << 8) | b[15 - i];
        g.lo = (g.lo << 8) | b[7 - i];
    }
    return g;
}

/* ByteReverse of g's bytes. */
static void store_reversed(gblock g, uint8_t b[16]) {
    for (int i = 0; i < 8; i++) {
        b[i] = (uint8_t)(g.lo >> (8 * i));
        b[8 + i] = (uint8_t)(g.hi >> (8 * i));
    }
}

/* g * x in GHASH's field: a right shift, reduced by 0xe1 || 0^120. */
static gblock mulx_ghash(gblock g) {
    uint64_t carry = g.lo & 1;
    g.lo = (g.lo >> 1) | (g.hi << 63);
    g.hi >>= 1;
    g.hi ^= (0 - carry) & UINT64_C(0xe100000000000000);
    return g;
}

/* x * y (SP 800-38D, algorithm 1). */
static gblock ghash_mul(gblock x, gblock y) {
    gblock z = {0, 0}, v = y;
    for (int i = 0; i < 128; i++) {
        uint64_t bit = i < 64 ? (x.hi >> (63 - i)) & 1 : (x.lo >> (127 - i)) & 1;
        z.hi ^= v.hi & (0 - bit);
        z.lo ^= v.lo & (0 - bit);
        v = mulx_ghash(v);
    }
    return z;
}

struct polyval {
    gblock h; /* mulX_GHASH(ByteReverse(H)) */
    gblock y; /* the GHASH accumulator */
};

static void polyval_init(struct polyval *p, const uint8_t h[16]) {
    p->h = mulx_ghash(load_reversed(h));
    p->y.hi = p->y.lo = 0;
}

/* Absorbs n bytes, zero-padded to whole blocks. */
static void polyval_absorb(struct polyval *p, const uint8_t *data, size_t n) {
    while (n) {
        uint8_t b[16] = {0};
        size_t k = n < 16 ? n : 16;
        memcpy(b, data, k);
        gblock x = load_reversed(b);
        p->y.hi ^= x.hi;
        p->y.lo ^= x.lo;
        p->y = ghash_mul(p->y, p->h);
        data += k;
        n -= k;
    }
}

/* ---- RFC 8452 ---- */

static int key_len_ok(size_t key_len) {
#ifdef MOCK_BROKEN_SIV_TAKES_192
    if (key_len == 24) return 1;
#endif
    return key_len == 16 || key_len == 32;
}

static int tag_len_ok(size_t tag_len) {
#ifdef MOCK_BROKEN_SIV_IGNORES_TAG_LEN
    (void)tag_len;
    return 1;
#else
    return tag_len == 16;
#endif
}

static int over_limit(size_t aad_len, size_t len) {
#ifdef MOCK_BROKEN_SIV_NO_LENGTH_LIMIT
    (void)aad_len;
    (void)len;
    return 0;
#else
    return (uint64_t)aad_len > SIV_MAX || (uint64_t)len > SIV_MAX;
#endif
}

/* The message authentication key (16 bytes) and encryption key (key_len
 * bytes): the first halves of AES(key, LE32(i) || nonce), i = 0, 1, .... */
static void derive_keys(const struct siv *s, const uint8_t nonce[12], uint8_t auth[16],
                        uint8_t enc[32]) {
    size_t key_len = s->key_len ? s->key_len : 16;
    size_t nblocks = 2 + key_len / 8;
    uint8_t in[16 * 6], out[16 * 6];
    memset(in, 0, sizeof in);
    for (size_t i = 0; i < nblocks; i++) {
        in[16 * i] = (uint8_t)i; /* LE32(i), i < 6 */
        memcpy(in + 16 * i + 4, nonce, 12);
    }
    aes_ecb(s->key, key_len, in, out, nblocks);
    for (size_t i = 0; i < nblocks; i++)
        memcpy(i < 2 ? auth + 8 * i : enc + 8 * (i - 2), out + 16 * i, 8);
}

static void compute_tag(const uint8_t auth[16], const uint8_t *enc, size_t enc_len,
                        const uint8_t nonce[12], const uint8_t *aad, size_t aad_len,
                        const uint8_t *pt, size_t len, uint8_t tag[16]) {
    struct polyval p;
    uint8_t lengths[16], s[16];
    uint64_t bits[2] = {(uint64_t)aad_len * 8, (uint64_t)len * 8};
    for (int i = 0; i < 16; i++) lengths[i] = (uint8_t)(bits[i / 8] >> (8 * (i % 8)));
    polyval_init(&p, auth);
    polyval_absorb(&p, aad, aad_len);
    polyval_absorb(&p, pt, len);
    polyval_absorb(&p, lengths, 16);
    store_reversed(p.y, s);
#ifndef MOCK_BROKEN_SIV_NO_NONCE_XOR
    for (int i = 0; i < 12; i++) s[i] ^= nonce[i];
#else
    (void)nonce;
#endif
    s[15] &= 0x7f;
    aes_ecb(enc, enc_len, s, tag, 1);
}

static void next_counter(uint8_t c[16]) {
#if defined(MOCK_BROKEN_SIV_CTR64)
    for (int i = 0; i < 8; i++)
        if (++c[i]) break;
#elif defined(MOCK_BROKEN_SIV_CTR_BE)
    for (int i = 3; i >= 0; i--)
        if (++c[i]) break;
#else
    for (int i = 0; i < 4; i++) /* wraps in bytes 0..3 */
        if (++c[i]) break;
#endif
}

/* out = in XOR AES-CTR(enc) from the tag with the top bit of byte 15 set. */
static void ctr_xor(const uint8_t *enc, size_t enc_len, const uint8_t tag[16], const uint8_t *in,
                    uint8_t *out, size_t len) {
    uint8_t c[16], ctrs[16 * 64], ks[16 * 64];
    memcpy(c, tag, 16);
    c[15] |= 0x80;
    while (len) {
        size_t nb = len / 16 >= 64 ? 64 : (len + 15) / 16;
        size_t n = len < 16 * nb ? len : 16 * nb;
        for (size_t b = 0; b < nb; b++) {
            memcpy(ctrs + 16 * b, c, 16);
            next_counter(c);
        }
        aes_ecb(enc, enc_len, ctrs, ks, nb);
        for (size_t i = 0; i < n; i++) out[i] = in[i] ^ ks[i];
        in += n;
        out += n;
        len -= n;
    }
}

static int tags_differ(const uint8_t a[16], const uint8_t b[16]) {
    uint8_t d = 0;
    for (int i = 0; i < 16; i++) d |= a[i] ^ b[i];
#ifdef MOCK_BROKEN_SIV_ACCEPTS_WRONG_TAG
    (void)d;
    return 0;
#else
    return d != 0;
#endif
}

int mock_siv_init(void *ctx, const uint8_t *key, size_t key_len) {
    struct siv *s = ctx;
#ifdef MOCK_BROKEN_SIV_REFUSED_INIT_CLEARS
    memset(ctx, 0, MOCK_SIV_CTX_SIZE);
#endif
    if (!key_len_ok(key_len)) return -1;
    memset(ctx, 0, MOCK_SIV_CTX_SIZE);
    memcpy(s->key, key, key_len);
    s->key_len = (uint32_t)key_len;
    return 0;
}

int mock_siv_seal(void *ctx, const uint8_t *nonce, size_t nonce_len, const uint8_t *aad,
                  size_t aad_len, const uint8_t *in, size_t len, uint8_t *out, uint8_t *tag,
                  size_t tag_len) {
    const struct siv *s = ctx;
    uint8_t auth[16], enc[32], t[16];
    if (nonce_len != 12 || !tag_len_ok(tag_len) || over_limit(aad_len, len)) return -1;
#ifndef MOCK_BROKEN_SIV_SEALS_WITHOUT_KEY
    if (s->key_len == 0) return -1;
#endif
    derive_keys(s, nonce, auth, enc);
    size_t enc_len = s->key_len ? s->key_len : 16;
    /* The tag over the plaintext first: in == out works. */
    compute_tag(auth, enc, enc_len, nonce, aad, aad_len, in, len, t);
    ctr_xor(enc, enc_len, t, in, out, len);
    memcpy(tag, t, 16);
    return 0;
}

int mock_siv_open(void *ctx, const uint8_t *nonce, size_t nonce_len, const uint8_t *aad,
                  size_t aad_len, const uint8_t *in, size_t len, uint8_t *out,
                  const uint8_t *tag, size_t tag_len) {
    const struct siv *s = ctx;
    uint8_t auth[16], enc[32], want[16], t[16];
    if (over_limit(aad_len, len)) return -1; /* over the limit: write nothing */
    if (nonce_len != 12 || !tag_len_ok(tag_len) || s->key_len == 0) {
        if (len) memset(out, 0, len);
        return -1;
    }
    memcpy(want, tag, 16);
    derive_keys(s, nonce, auth, enc);
    /* Decrypt into out (in == out works), then the tag over that plaintext. */
    ctr_xor(enc, s->key_len, want, in, out, len);
    compute_tag(auth, enc, s->key_len, nonce, aad, aad_len, out, len, t);
    if (tags_differ(t, want)) {
#ifndef MOCK_BROKEN_SIV_LEAVES_PLAINTEXT
        if (len) memset(out, 0, len);
#endif
        return -1;
    }
    return 0;
}

void mock_siv_wipe(void *ctx) {
    volatile uint8_t *p = ctx;
    for (size_t i = 0; i < MOCK_SIV_CTX_SIZE; i++) p[i] = 0;
}
