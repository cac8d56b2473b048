/* mock_otr.c: AES-OTR (specs/aes-otr.md: v3.1 and v2, AD parallel or serial)
 * behind the aesgen_aead contract, for tests/test_aead_harness.py; mock_gcm.c
 * lists its kernels in aesgen_aeads[] (entry points in mock_otr.h).  AES comes
 * from OpenSSL (EVP AES-ECB, one block per call); the masks are 128-bit
 * numbers in two 64-bit words, and the message goes pair by pair, reading each
 * pair before writing it (in == out works) -- not the way
 * harness/aead_tests.cc's reference does it (bytes, and every pair's first
 * round in one batch), so that the two do not share a mistake.  One-shot only:
 * the streaming entries are NULL.  The context holds the key, its length (0: no
 * key) and Q = E(0) (v2: J), computed by init.  Nothing in it is fast.
 *
 * The contract: keys of 16 or 32 bytes (init refuses any other length and
 * leaves the context as it was), nonces of 1..15 bytes, tags of 1..16; seal
 * returns -1 and writes nothing for a length out of range or a context without
 * a key; open returns -1 with out[0..len) zeroed for those and for a wrong tag.
 *
 * Compile-time switches break it on purpose, one way each, to show that
 * harness/aead_tests.cc notices:
 *   MOCK_BROKEN_OTR_LEAVES_PLAINTEXT   open leaves the decrypted plaintext in
 *                                      out when the tag is wrong
 *   MOCK_BROKEN_OTR_ACCEPTS_WRONG_TAG  open returns 0 for any tag
 *   MOCK_BROKEN_OTR_NO_NONCE_CHECK     nonces of 0 and of 16 or more bytes are
 *                                      taken (Format gets the first 15 at most)
 *   MOCK_BROKEN_OTR_NO_TAG_CHECK       tags of 0 and of 17 or more bytes are
 *                                      taken (16 written or compared at most)
 *   MOCK_BROKEN_OTR_FORMAT_OVERWRITES  Format stores the tag length into byte
 *                                      0 rather than ORing it: with a 15-byte
 *                                      nonce the 1 before it is lost
 *   MOCK_BROKEN_OTR_TAU_NOT_IN_FORMAT  Format leaves the tag length out (as if
 *                                      it were always 16)
 *   MOCK_BROKEN_OTR_B16_NO_SWAP        a tail of two full blocks (b = 16) comes
 *                                      out in the pair's order, not swapped
 *   MOCK_BROKEN_OTR_EMPTY_IS_FULL      the empty message takes the final offset
 *                                      of a full last block (7 La; v2: xor Delta)
 *   MOCK_BROKEN_OTR_EMPTY_AD_DIGEST    empty AD gives TA = E(pad(empty)), not 0
 *   MOCK_BROKEN_OTR_AD_MASKS_SWAPPED   the last AD block takes the multiple of
 *                                      the other case (full <-> partial)
 *   MOCK_BROKEN_OTR_WRITES_PAST_END    seal writes the byte after a partial
 *                                      one-block tail (out[len])
 *   MOCK_BROKEN_OTR_TAKES_192          init takes 24-byte keys (AES-192)
 *   MOCK_BROKEN_OTR_INIT_KEEPS_Q       init on a context that already had a
 *                                      key keeps that key's Q
 *   MOCK_BROKEN_OTR_S_NO_DOUBLING      v3.1-s: L = U xor TA, not doubled
 *                                      (the p kernels and v2 are not touched)
 *   MOCK_BROKEN_OTR_V2_THREE_L         v2: the second-round mask is 3 L_i (as
 *                                      in v3.1), not L_i xor Delta
 */
#include "mock_otr.h"

#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define OTR_MAGIC 0x6f74726bu /* "otrk": init ran on this context (INIT_KEEPS_Q) */

struct otr {
    uint8_t key[32];
    uint32_t key_len; /* 0: no key */
    uint32_t magic;
    uint8_t q[16]; /* E(0) */
};

typedef char otr_fits[sizeof(struct otr) <= MOCK_OTR_CTX_SIZE ? 1 : -1];

static void otr_die(const char *what) {
    fprintf(stderr, "mock_otr: %s failed\n", what);
    abort();
}

/* ---- AES: one EVP context per seal or open ---- */

static EVP_CIPHER_CTX *aes_new(const uint8_t *key, uint32_t key_len) {
    const EVP_CIPHER *cipher = key_len == 32   ? EVP_aes_256_ecb()
                               : key_len == 24 ? EVP_aes_192_ecb()
                                               : EVP_aes_128_ecb();
    EVP_CIPHER_CTX *c = EVP_CIPHER_CTX_new();
    if (!c || EVP_EncryptInit_ex(c, cipher, NULL, key, NULL) != 1 ||
        EVP_CIPHER_CTX_set_padding(c, 0) != 1)
        otr_die("AES-ECB init");
    return c;
}

/* ---- 128-bit values: the block read big-endian (section 2) ---- */

typedef struct {
    uint64_t hi, lo;
} u128;

static u128 ld(const uint8_t b[16]) {
    u128 r = {0, 0};
    for (int i = 0; i < 8; i++) {
        r.hi = (r.hi << 8) | b[i];
        r.lo = (r.lo << 8) | b[8 + i];
    }
    return r;
}

static void st(u128 x, uint8_t b[16]) {
    for (int i = 7; i >= 0; i--) {
        b[i] = (uint8_t)x.hi;
        b[8 + i] = (uint8_t)x.lo;
        x.hi >>= 8;
        x.lo >>= 8;
    }
}

static u128 xr(u128 a, u128 b) {
    u128 r = {a.hi ^ b.hi, a.lo ^ b.lo};
    return r;
}

static u128 dbl(u128 x) {
    uint64_t carry = x.hi >> 63;
    u128 r = {(x.hi << 1) | (x.lo >> 63), (x.lo << 1) ^ ((0 - carry) & 0x87)};
    return r;
}

static u128 mul3(u128 x) { return xr(dbl(x), x); }
static u128 mul4(u128 x) { return dbl(dbl(x)); }
static u128 mul5(u128 x) { return xr(mul4(x), x); }
static u128 mul7(u128 x) { return xr(mul4(x), mul3(x)); }

static u128 aes(EVP_CIPHER_CTX *c, u128 x) {
    uint8_t in[16], out[16];
    int outl = 0;
    st(x, in);
    if (EVP_EncryptUpdate(c, out, &outl, in, 16) != 1 || outl != 16) otr_die("AES-ECB");
    return ld(out);
}

/* pad(X), |X| = n <= 16. */
static u128 pad(const uint8_t *p, size_t n) {
    uint8_t b[16] = {0};
    memcpy(b, p, n);
    if (n < 16) b[n] = 0x80;
    return ld(b);
}

/* ---- AES-OTR ---- */

struct variant {
    int v2, serial;
};

static int nonce_len_ok(size_t n) {
#ifdef MOCK_BROKEN_OTR_NO_NONCE_CHECK
    (void)n;
    return 1;
#else
    return n >= 1 && n <= 15;
#endif
}

static int tag_len_ok(size_t n) {
#ifdef MOCK_BROKEN_OTR_NO_TAG_CHECK
    (void)n;
    return 1;
#else
    return n >= 1 && n <= 16;
#endif
}

static size_t tag_bytes(size_t n) { return n < 16 ? n : 16; }

/* Section 6 (v2: 10): TA. */
static u128 ad_digest(EVP_CIPHER_CTX *c, struct variant v, u128 q, const uint8_t *a, size_t n) {
    u128 zero = {0, 0};
    if (n == 0) {
#ifdef MOCK_BROKEN_OTR_EMPTY_AD_DIGEST
        return aes(c, pad(a, 0));
#else
        return zero;
#endif
    }
    size_t h = (n + 15) / 16, last = n - 16 * (h - 1);
    int full = last == 16;
#ifdef MOCK_BROKEN_OTR_AD_MASKS_SWAPPED
    full = !full;
#endif
    if (v.serial) {
        u128 x = zero;
        for (size_t j = 0; j + 1 < h; j++) x = aes(c, xr(x, ld(a + 16 * j)));
        x = xr(x, pad(a + 16 * (h - 1), last));
        x = xr(x, full ? mul4(q) : dbl(q));
        return aes(c, x);
    }
    u128 mask = v.v2 ? mul4(q) : q, s = zero;
    for (size_t j = 0; j + 1 < h; j++) {
        s = xr(s, aes(c, xr(mask, ld(a + 16 * j))));
        mask = dbl(mask);
    }
    s = xr(s, pad(a + 16 * (h - 1), last));
    if (v.v2)
        s = xr(s, xr(mask, full ? dbl(q) : q));
    else
        s = xr(s, full ? mul5(mask) : mul3(mask));
    return aes(c, s);
}

/* Section 4: Format(tau, N). */
static u128 format(size_t tag_len, const uint8_t *nonce, size_t nonce_len) {
    uint8_t f[16] = {0};
    if (nonce_len > 15) nonce_len = 15; /* only with MOCK_BROKEN_OTR_NO_NONCE_CHECK */
    if (nonce_len) memcpy(f + 16 - nonce_len, nonce, nonce_len);
    f[15 - nonce_len] |= 1;
    uint8_t t = (uint8_t)(((8 * tag_len) & 127) << 1);
#if defined(MOCK_BROKEN_OTR_TAU_NOT_IN_FORMAT)
    (void)t;
#elif defined(MOCK_BROKEN_OTR_FORMAT_OVERWRITES)
    f[0] = t;
#else
    f[0] |= t;
#endif
    return ld(f);
}

/* One pass: seal (decrypt 0) or open (1) of len bytes; tag = the 16-byte tag block. */
static void otr_pass(const struct otr *s, struct variant v, const uint8_t *nonce, size_t nonce_len,
                     size_t tag_len, const uint8_t *aad, size_t aad_len, const uint8_t *in,
                     size_t len, uint8_t *out, int decrypt, uint8_t tag[16]) {
    EVP_CIPHER_CTX *c = aes_new(s->key, s->key_len);
    u128 q = ld(s->q);
    u128 ta = ad_digest(c, v, q, aad, aad_len);
    u128 u = aes(c, format(tag_len, nonce, nonce_len));
    u128 delta = u, l;
    if (v.v2) {
        if (v.serial) delta = xr(u, ta);
        l = mul4(delta);
    } else if (v.serial) {
#ifdef MOCK_BROKEN_OTR_S_NO_DOUBLING
        l = xr(u, ta);
#else
        l = dbl(xr(u, ta));
#endif
    } else {
        l = u;
    }
#define SECOND(li) (v.v2 ? V2_SECOND(li) : mul3(li))
#ifdef MOCK_BROKEN_OTR_V2_THREE_L
#define V2_SECOND(li) mul3(li)
#else
#define V2_SECOND(li) xr((li), delta)
#endif
    size_t r = len == 0 ? 0 : (len % 32 ? len % 32 : 32);
    size_t pairs = (len - r) / 32;
    u128 sigma = {0, 0}, li = l;
    for (size_t i = 0; i < pairs; i++, in += 32, out += 32, li = dbl(li)) {
        u128 a = ld(in), b = ld(in + 16), ls = SECOND(li), x, y;
        if (!decrypt) {
            x = a, y = b;
            a = xr(aes(c, xr(li, x)), y); /* C_1 */
            b = xr(aes(c, xr(ls, a)), x); /* C_2 */
            st(a, out);
            st(b, out + 16);
        } else {
            x = xr(aes(c, xr(ls, a)), b);
            y = xr(aes(c, xr(li, x)), a);
            st(x, out);
            st(y, out + 16);
        }
        sigma = xr(sigma, y);
    }
    u128 la;
    int full = r == 16 || r == 32;
    if (r <= 16) {
        uint8_t z[16], t[16] = {0};
        st(aes(c, li), z);
        memcpy(t, in, r);
        for (size_t k = 0; k < r; k++) out[k] = t[k] ^ z[k];
#ifdef MOCK_BROKEN_OTR_WRITES_PAST_END
        if (!decrypt && r % 16) out[r] = z[r];
#endif
        sigma = xr(sigma, pad(decrypt ? out : t, r));
        la = li;
    } else {
        size_t b = r - 16;
        u128 lfs = SECOND(li), x, z;
        uint8_t cy[16] = {0}, zb[16];
#ifdef MOCK_BROKEN_OTR_B16_NO_SWAP
        if (b == 16) { /* the pair's way: C_1 = Z xor Y first, then C_2 */
            u128 a = ld(in), bb = ld(in + 16), y;
            if (!decrypt) {
                x = a, y = bb;
                z = aes(c, xr(li, x));
                a = xr(z, y);
                bb = xr(aes(c, xr(lfs, a)), x);
                st(a, out);
                st(bb, out + 16);
                st(a, cy);
            } else {
                x = xr(aes(c, xr(lfs, a)), bb);
                z = aes(c, xr(li, x));
                st(x, out);
                st(xr(z, a), out + 16);
                st(a, cy);
            }
            sigma = xr(sigma, xr(z, pad(cy, 16)));
            goto tail_done;
        }
#endif
        if (!decrypt) {
            x = ld(in);
            z = aes(c, xr(li, x));
            st(z, zb);
            for (size_t k = 0; k < b; k++) cy[k] = in[16 + k] ^ zb[k];
            st(xr(aes(c, xr(lfs, pad(cy, b))), x), out);
            memcpy(out + 16, cy, b);
        } else {
            memcpy(cy, in + 16, b);
            x = xr(aes(c, xr(lfs, pad(cy, b))), ld(in));
            z = aes(c, xr(li, x));
            st(z, zb);
            st(x, out);
            for (size_t k = 0; k < b; k++) out[16 + k] = cy[k] ^ zb[k];
        }
        sigma = xr(sigma, xr(z, pad(cy, b)));
#ifdef MOCK_BROKEN_OTR_B16_NO_SWAP
    tail_done:
#endif
        la = lfs;
    }
#undef SECOND
#undef V2_SECOND
#ifdef MOCK_BROKEN_OTR_EMPTY_IS_FULL
    if (len == 0) full = 1;
#endif
    u128 offset;
    if (v.v2)
        offset = full ? xr(mul3(la), delta) : mul3(la);
    else
        offset = full ? mul7(la) : mul5(la);
    u128 te = aes(c, xr(sigma, offset));
    st(v.serial ? te : xr(te, ta), tag);
    EVP_CIPHER_CTX_free(c);
}

int mock_otr_init(void *ctx, const uint8_t *key, size_t key_len) {
    struct otr *s = ctx;
    int ok = key_len == 16 || key_len == 32;
#ifdef MOCK_BROKEN_OTR_TAKES_192
    ok = ok || key_len == 24;
#endif
    if (!ok) return -1;
#ifdef MOCK_BROKEN_OTR_INIT_KEEPS_Q
    int keep = s->magic == OTR_MAGIC;
    uint8_t old_q[16];
    memcpy(old_q, s->q, 16);
#endif
    memset(ctx, 0, MOCK_OTR_CTX_SIZE);
    memcpy(s->key, key, key_len);
    s->key_len = (uint32_t)key_len;
    s->magic = OTR_MAGIC;
    EVP_CIPHER_CTX *c = aes_new(s->key, s->key_len);
    u128 zero = {0, 0};
    st(aes(c, zero), s->q);
    EVP_CIPHER_CTX_free(c);
#ifdef MOCK_BROKEN_OTR_INIT_KEEPS_Q
    if (keep) memcpy(s->q, old_q, 16);
#endif
    return 0;
}

void mock_otr_wipe(void *ctx) {
    volatile uint8_t *p = ctx;
    for (size_t i = 0; i < MOCK_OTR_CTX_SIZE; i++) p[i] = 0;
}

static int otr_seal(void *ctx, struct variant v, const uint8_t *nonce, size_t nonce_len,
                    const uint8_t *aad, size_t aad_len, const uint8_t *in, size_t len,
                    uint8_t *out, uint8_t *tag, size_t tag_len) {
    const struct otr *s = ctx;
    uint8_t t[16];
    if (!nonce_len_ok(nonce_len) || !tag_len_ok(tag_len) || s->key_len == 0) return -1;
    otr_pass(s, v, nonce, nonce_len, tag_len, aad, aad_len, in, len, out, 0, t);
    memcpy(tag, t, tag_bytes(tag_len));
    return 0;
}

static int otr_open(void *ctx, struct variant v, const uint8_t *nonce, size_t nonce_len,
                    const uint8_t *aad, size_t aad_len, const uint8_t *in, size_t len,
                    uint8_t *out, const uint8_t *tag, size_t tag_len) {
    const struct otr *s = ctx;
    uint8_t t[16], d = 0;
    if (!nonce_len_ok(nonce_len) || !tag_len_ok(tag_len) || s->key_len == 0) {
        if (len) memset(out, 0, len);
        return -1;
    }
    otr_pass(s, v, nonce, nonce_len, tag_len, aad, aad_len, in, len, out, 1, t);
    for (size_t i = 0; i < tag_bytes(tag_len); i++) d |= t[i] ^ tag[i];
#ifdef MOCK_BROKEN_OTR_ACCEPTS_WRONG_TAG
    d = 0;
#endif
    if (d) {
#ifndef MOCK_BROKEN_OTR_LEAVES_PLAINTEXT
        if (len) memset(out, 0, len);
#endif
        return -1;
    }
    return 0;
}

#define MOCK_OTR_DEFINE(name, v2, serial)                                                     \
    int mock_otr_seal_##name(void *ctx, const uint8_t *nonce, size_t nonce_len,               \
                             const uint8_t *aad, size_t aad_len, const uint8_t *in,           \
                             size_t len, uint8_t *out, uint8_t *tag, size_t tag_len) {        \
        struct variant v = {v2, serial};                                                      \
        return otr_seal(ctx, v, nonce, nonce_len, aad, aad_len, in, len, out, tag, tag_len);  \
    }                                                                                         \
    int mock_otr_open_##name(void *ctx, const uint8_t *nonce, size_t nonce_len,               \
                             const uint8_t *aad, size_t aad_len, const uint8_t *in,           \
                             size_t len, uint8_t *out, const uint8_t *tag, size_t tag_len) {  \
        struct variant v = {v2, serial};                                                      \
        return otr_open(ctx, v, nonce, nonce_len, aad, aad_len, in, len, out, tag, tag_len);  \
    }

MOCK_OTR_DEFINE(v3p, 0, 0)
MOCK_OTR_DEFINE(v2p, 1, 0)
MOCK_OTR_DEFINE(v3s, 0, 1)
MOCK_OTR_DEFINE(v2s, 1, 1)
