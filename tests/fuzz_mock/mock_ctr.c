/* mock_ctr.c: one AES-CTR kernel behind the aesgen_kernel contract, written in C over
 * OpenSSL's AES-ECB, for tests/test_fuzz.py: compiled against a generated set's aesgen.h
 * (for the struct and the registry's declarations) in place of that set's registry and
 * assembly, and linked into harness/fuzz/fuzz_ctr.cc.  The correct mock runs clean; each
 * compile-time switch breaks it one way, and the fuzzer must find each within a bounded
 * number of inputs:
 *   MOCK_CTR_CARRY64     the counter is a 64-bit increment of bytes 8..15 (no carry into
 *                        byte 7), wrong only when the low 64 bits wrap inside a stream
 *   MOCK_CTR_OVERREAD    reads in[len] when len is not a multiple of 16 (a guard page
 *                        after the input makes it fault)
 *   MOCK_CTR_WIPE_KEEPS  wipe leaves the first byte of the key in the context
 *   MOCK_CTR_TAKES_20    init takes 20-byte keys (as AES-128 of the first 16)
 */
#include "aesgen.h"

#include <openssl/evp.h>
#include <stdint.h>
#include <string.h>

#define MOCK_CTX_SIZE 128

struct mock {
    uint8_t key[32];
    uint8_t counter[16];   /* the next block's counter */
    uint8_t stream[16];    /* keystream of the block before it */
    uint32_t used;         /* bytes of stream already used (16: none left) */
    uint32_t key_len;
};

static void block(const struct mock *s, const uint8_t in[16], uint8_t out[16]) {
    EVP_CIPHER_CTX *c = EVP_CIPHER_CTX_new();
    const EVP_CIPHER *e = s->key_len == 16 ? EVP_aes_128_ecb()
                        : s->key_len == 24 ? EVP_aes_192_ecb() : EVP_aes_256_ecb();
    int n = 0;
    EVP_EncryptInit_ex(c, e, NULL, s->key, NULL);
    EVP_CIPHER_CTX_set_padding(c, 0);
    EVP_EncryptUpdate(c, out, &n, in, 16);
    EVP_CIPHER_CTX_free(c);
}

static void increment(uint8_t ctr[16]) {
#ifdef MOCK_CTR_CARRY64
    for (int i = 15; i >= 8 && ++ctr[i] == 0; i--) {}
#else
    for (int i = 15; i >= 0 && ++ctr[i] == 0; i--) {}
#endif
}

static int mock_set_iv(void *ctx, const uint8_t iv[16]) {
    struct mock *s = ctx;
    memcpy(s->counter, iv, 16);
    s->used = 16;
    return 0;
}

static int mock_init(void *ctx, const uint8_t *key, size_t key_len, const uint8_t iv[16]) {
    struct mock *s = ctx;
#ifdef MOCK_CTR_TAKES_20
    if (key_len == 20) key_len = 16;
#endif
    if (key_len != 16 && key_len != 24 && key_len != 32) return -1;
    memset(s, 0, MOCK_CTX_SIZE);
    memcpy(s->key, key, key_len);
    s->key_len = (uint32_t)key_len;
    return mock_set_iv(ctx, iv);
}

static void mock_xor_stream(void *ctx, uint8_t *out, const uint8_t *in, size_t len) {
    struct mock *s = ctx;
#ifdef MOCK_CTR_OVERREAD
    volatile uint8_t sink = 0;
    if (len % 16 != 0) sink = in[len];
    (void)sink;
#endif
    for (size_t i = 0; i < len; i++) {
        if (s->used == 16) {
            block(s, s->counter, s->stream);
            increment(s->counter);
            s->used = 0;
        }
        out[i] = in[i] ^ s->stream[s->used++];
    }
}

static void mock_wipe(void *ctx) {
#ifdef MOCK_CTR_WIPE_KEEPS
    memset((uint8_t *)ctx + 1, 0, MOCK_CTX_SIZE - 1);
#else
    memset(ctx, 0, MOCK_CTX_SIZE);
#endif
}

const aesgen_kernel aesgen_kernels[] = {
    {"mock-ctr", "mock", "none", 1, 0, MOCK_CTX_SIZE, mock_init, mock_set_iv, mock_xor_stream,
     mock_wipe},
};
const size_t aesgen_kernel_count = 1;
const unsigned aesgen_key_bits_supported = 7;

uint64_t aesgen_cpu_features(void) { return 0; }
const char *aesgen_cpu_feature_name(uint64_t bit) { (void)bit; return NULL; }
