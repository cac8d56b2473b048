/* mock_otr.c: AES-OTR "kernels" in plain C (AES from OpenSSL's EVP, one block at a time), for
 * tests/test_bench_smoke.py.  No generated set has OTR kernels yet; this file stands in for
 * them so the benchmark's OTR path (registration, the checks before timing, the skips) runs.
 *
 * It defines the set's aesgen_aeads[] and aesgen_aead_count in place of the generated
 * registry's (which the test compiles with those two names renamed), with four entries:
 *   mock-otr          mode "otr"    (AES-OTR v3.1, parallel AD), nonce 1..15, tag 1..16
 *   mock-otr-v2       mode "otr-v2" (AES-OTR v2, parallel AD), nonce 1..15, tag 1..16
 *   mock-otr-v1       mode "otr-v1", which the benchmark does not know: it must be skipped
 *   mock-otr-missing  needs a CPU feature bit no CPU has (bit 62): it must be skipped
 * Written from specs/aes-otr.md (sections 4 to 10), apart from the benchmark's own
 * reference (harness/bench/otr_bench.cc), so the two check each other.
 *
 * AESGEN_MOCK_OTR_FAULT=NAME makes every entry wrong in one way, for the test to see the
 * benchmark refuse it:
 *   tag        seal flips a bit of the tag
 *   v2-masks   the v2 kernel uses v3.1's second-round masks (3L_i instead of L_i ^ Delta)
 *   tau        Format ignores the tag length (as if it were always 16)
 *   aad        the AD is not hashed (TA = 0)
 *   past-end   seal writes one byte after the ciphertext
 *   any-tag    open accepts any tag
 *   no-zero    open with a wrong tag leaves the plaintext in the output
 *
 * The context (64 bytes) holds the key; each call makes its own OpenSSL context.  Slow, and
 * correct, which is all the test needs. */
#include <openssl/evp.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "aesgen.h"

typedef struct {
    uint8_t b[16];
} blk;

typedef struct {
    uint8_t key[32];
    size_t key_len;
} mock_ctx;

static int fault(const char *name) {
    const char *f = getenv("AESGEN_MOCK_OTR_FAULT");
    return f != NULL && strcmp(f, name) == 0;
}

static blk bxor(blk a, blk b) {
    for (int i = 0; i < 16; i++) a.b[i] ^= b.b[i];
    return a;
}

static blk twice(blk x) {
    blk r;
    for (int i = 0; i < 15; i++) r.b[i] = (uint8_t)((x.b[i] << 1) | (x.b[i + 1] >> 7));
    r.b[15] = (uint8_t)((x.b[15] << 1) ^ ((x.b[0] >> 7) * 0x87));
    return r;
}

static blk thrice(blk x) { return bxor(twice(x), x); }

static blk load(const uint8_t *p, size_t n) { /* n <= 16 bytes, zero-filled */
    blk r;
    memset(r.b, 0, 16);
    if (n) memcpy(r.b, p, n);
    return r;
}

static blk padded(const uint8_t *p, size_t n) {
    blk r = load(p, n);
    if (n < 16) r.b[n] = 0x80;
    return r;
}

static blk enc(EVP_CIPHER_CTX *c, blk x) {
    blk r;
    int n = 0;
    if (EVP_EncryptUpdate(c, r.b, &n, x.b, 16) != 1 || n != 16) abort();
    return r;
}

/* One message, either way: `in` to `out` (len bytes), the full 16-byte tag to `tag16`.
 * v2: AES-OTR v2 instead of v3.1; both with parallel AD. */
static void otr(const mock_ctx *k, int v2, int decrypt, const uint8_t *nonce, size_t nonce_len,
                const uint8_t *aad, size_t aad_len, const uint8_t *in, size_t len, uint8_t *out,
                size_t tau, uint8_t tag16[16]) {
    EVP_CIPHER_CTX *c = EVP_CIPHER_CTX_new();
    const EVP_CIPHER *aes = k->key_len == 16 ? EVP_aes_128_ecb() : EVP_aes_256_ecb();
    if (c == NULL || EVP_EncryptInit_ex(c, aes, NULL, k->key, NULL) != 1) abort();
    EVP_CIPHER_CTX_set_padding(c, 0);
    const blk zero = load(NULL, 0);
    const blk q = enc(c, zero); /* Q in v3.1, J in v2 */

    blk ta = zero;
    if (aad_len > 0 && !fault("aad")) {
        size_t h = (aad_len + 15) / 16, last = aad_len - 16 * (h - 1);
        blk m = v2 ? twice(twice(q)) : q, s = zero;
        for (size_t j = 0; j + 1 < h; j++) {
            s = bxor(s, enc(c, bxor(m, load(aad + 16 * j, 16))));
            m = twice(m);
        }
        blk fin;
        if (v2)
            fin = bxor(m, last == 16 ? twice(q) : q);
        else
            fin = last == 16 ? bxor(twice(twice(m)), m) : thrice(m);
        ta = enc(c, bxor(bxor(s, padded(aad + 16 * (h - 1), last)), fin));
    }

    blk f = zero;
    memcpy(f.b + 16 - nonce_len, nonce, nonce_len);
    f.b[15 - nonce_len] |= 1;
    f.b[0] |= (uint8_t)(((8 * (fault("tau") ? 16 : tau)) % 128) << 1);
    const blk u = enc(c, f);
    const blk delta = u;
    blk l = v2 ? twice(twice(u)) : u;
#define SECOND(li) ((v2 && !fault("v2-masks")) ? bxor((li), delta) : thrice(li))

    size_t r = len % 32;
    if (r == 0 && len > 0) r = 32;
    const size_t pairs = (len - r) / 32;
    blk sum = zero;
    for (size_t i = 0; i < pairs; i++) {
        const uint8_t *p = in + 32 * i;
        uint8_t *o = out + 32 * i;
        blk x, y;
        if (!decrypt) {
            x = load(p, 16);
            y = load(p + 16, 16);
            blk c1 = bxor(enc(c, bxor(l, x)), y);
            blk c2 = bxor(enc(c, bxor(SECOND(l), c1)), x);
            memcpy(o, c1.b, 16);
            memcpy(o + 16, c2.b, 16);
        } else {
            blk c1 = load(p, 16), c2 = load(p + 16, 16);
            x = bxor(enc(c, bxor(SECOND(l), c1)), c2);
            y = bxor(enc(c, bxor(l, x)), c1);
            memcpy(o, x.b, 16);
            memcpy(o + 16, y.b, 16);
        }
        sum = bxor(sum, y);
        l = twice(l);
    }
    const uint8_t *p = in + 32 * pairs;
    uint8_t *o = out + 32 * pairs;
    blk la;
    if (r <= 16) {
        blk z = enc(c, l);
        for (size_t i = 0; i < r; i++) o[i] = p[i] ^ z.b[i];
        sum = bxor(sum, padded(decrypt ? o : p, r));
        la = l;
    } else {
        size_t b = r - 16;
        blk x, z, cy;
        if (!decrypt) {
            x = load(p, 16);
            z = enc(c, bxor(l, x));
            cy = load(p + 16, b);
            for (size_t i = 0; i < b; i++) cy.b[i] ^= z.b[i];
            blk cx = bxor(enc(c, bxor(SECOND(l), padded(cy.b, b))), x);
            memcpy(o, cx.b, 16);
            memcpy(o + 16, cy.b, b);
        } else {
            cy = load(p + 16, b);
            x = bxor(enc(c, bxor(SECOND(l), padded(cy.b, b))), load(p, 16));
            z = enc(c, bxor(l, x));
            memcpy(o, x.b, 16);
            for (size_t i = 0; i < b; i++) o[16 + i] = cy.b[i] ^ z.b[i];
        }
        sum = bxor(sum, bxor(z, padded(cy.b, b)));
        la = SECOND(l);
    }
    const int full = r == 16 || r == 32;
    if (v2) {
        sum = bxor(sum, thrice(la));
        if (full) sum = bxor(sum, delta);
    } else {
        blk four = twice(twice(la));
        sum = bxor(sum, full ? bxor(bxor(four, twice(la)), la) : bxor(four, la));
    }
#undef SECOND
    const blk t = bxor(enc(c, sum), ta);
    memcpy(tag16, t.b, 16);
    EVP_CIPHER_CTX_free(c);
}

static int init(void *ctx, const uint8_t *key, size_t key_len) {
    if (key_len != 16 && key_len != 32) return -1;
    mock_ctx *k = ctx;
    memset(k, 0, sizeof *k);
    memcpy(k->key, key, key_len);
    k->key_len = key_len;
    return 0;
}

static int lengths_ok(size_t nonce_len, size_t tag_len) {
    return nonce_len >= 1 && nonce_len <= 15 && tag_len >= 1 && tag_len <= 16;
}

static int seal(int v2, void *ctx, const uint8_t *nonce, size_t nonce_len, const uint8_t *aad,
                size_t aad_len, const uint8_t *in, size_t len, uint8_t *out, uint8_t *tag,
                size_t tag_len) {
    if (!lengths_ok(nonce_len, tag_len)) return -1;
    uint8_t t[16];
    otr(ctx, v2, 0, nonce, nonce_len, aad, aad_len, in, len, out, tag_len, t);
    if (fault("tag")) t[0] ^= 1;
    if (fault("past-end")) out[len] ^= 0x5a;
    memcpy(tag, t, tag_len);
    return 0;
}

static int open_(int v2, void *ctx, const uint8_t *nonce, size_t nonce_len, const uint8_t *aad,
                 size_t aad_len, const uint8_t *in, size_t len, uint8_t *out, const uint8_t *tag,
                 size_t tag_len) {
    if (!lengths_ok(nonce_len, tag_len)) {
        if (len) memset(out, 0, len);
        return -1;
    }
    uint8_t t[16], diff = 0;
    otr(ctx, v2, 1, nonce, nonce_len, aad, aad_len, in, len, out, tag_len, t);
    for (size_t i = 0; i < tag_len; i++) diff |= t[i] ^ tag[i];
    if (diff == 0 || fault("any-tag")) return 0;
    if (len && !fault("no-zero")) memset(out, 0, len);
    return -1;
}

static int seal_v31(void *ctx, const uint8_t *nonce, size_t nonce_len, const uint8_t *aad,
                    size_t aad_len, const uint8_t *in, size_t len, uint8_t *out, uint8_t *tag,
                    size_t tag_len) {
    return seal(0, ctx, nonce, nonce_len, aad, aad_len, in, len, out, tag, tag_len);
}
static int seal_v2(void *ctx, const uint8_t *nonce, size_t nonce_len, const uint8_t *aad,
                   size_t aad_len, const uint8_t *in, size_t len, uint8_t *out, uint8_t *tag,
                   size_t tag_len) {
    return seal(1, ctx, nonce, nonce_len, aad, aad_len, in, len, out, tag, tag_len);
}
static int open_v31(void *ctx, const uint8_t *nonce, size_t nonce_len, const uint8_t *aad,
                    size_t aad_len, const uint8_t *in, size_t len, uint8_t *out,
                    const uint8_t *tag, size_t tag_len) {
    return open_(0, ctx, nonce, nonce_len, aad, aad_len, in, len, out, tag, tag_len);
}
static int open_v2(void *ctx, const uint8_t *nonce, size_t nonce_len, const uint8_t *aad,
                   size_t aad_len, const uint8_t *in, size_t len, uint8_t *out,
                   const uint8_t *tag, size_t tag_len) {
    return open_(1, ctx, nonce, nonce_len, aad, aad_len, in, len, out, tag, tag_len);
}
static void wipe(void *ctx) { memset(ctx, 0, 64); }

#define MOCK(name, mode, features, seal_fn, open_fn)                                          \
    {name, mode, "mock", "none", 1, features, 64, 1, 15, 1, 16, init, seal_fn, open_fn,      \
     NULL, NULL, NULL, NULL, NULL, NULL, wipe}

const aesgen_aead aesgen_aeads[] = {
    MOCK("mock-otr", "otr", 0, seal_v31, open_v31),
    MOCK("mock-otr-v2", "otr-v2", 0, seal_v2, open_v2),
    MOCK("mock-otr-v1", "otr-v1", 0, seal_v31, open_v31),
    MOCK("mock-otr-missing", "otr", UINT64_C(1) << 62, seal_v31, open_v31),
};
const size_t aesgen_aead_count = sizeof aesgen_aeads / sizeof aesgen_aeads[0];
