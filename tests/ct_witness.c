/*
 * ct_witness: valgrind's memcheck as a second witness of constant time (issue 17 item 4),
 * independent of the generator's own reasoning. Linked against one generated set; run as
 *
 *   valgrind --tool=memcheck -q ./ct_witness [NAME ...]
 *
 * For each kernel this CPU runs (or those named), the key and the plaintext are marked
 * undefined (memcheck's client requests: their bytes are "secret"), the IV, nonce, AAD and
 * lengths stay defined (public), and the kernel runs: CTR init, xor_stream in pieces,
 * set_iv, more xor_stream; AEAD init and seal under a 12-byte nonce and, where the mode
 * takes one, a 16-byte nonce (GCM's J0 then comes from GHASH under the secret key). memcheck
 * reports a conditional jump or a memory address that depends on undefined bytes: a
 * secret-dependent branch or table index. Each kernel's line says how many it reported,
 * or that the CPU (under valgrind: its virtual CPU, whose CPUID hides what it cannot run,
 * VAES, GFNI and AVX-512 among them) lacks features the kernel needs:
 *
 *   <name> <constant_time 0|1> <errors>
 *   <name> skipped <FEATURE,...>
 *
 * Open is not run: its tag compare ends in the verdict, a branch on secret-derived data by
 * design (the result is the return value).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <valgrind/memcheck.h>

#include "aesgen.h"

enum { MAX_LEN = 1500 };

static int wanted(const char *name, int argc, char **argv)
{
    if (argc < 2)
        return 1;
    for (int i = 1; i < argc; i++)
        if (strcmp(argv[i], name) == 0)
            return 1;
    return 0;
}

static void *context(size_t size)
{
    void *ctx = aligned_alloc(64, (size + 63) & ~(size_t)63);
    memset(ctx, 0, (size + 63) & ~(size_t)63);
    return ctx;
}

static void secret(void *p, size_t n)
{
    (void)VALGRIND_MAKE_MEM_UNDEFINED(p, n);
}

static void print_skipped(const char *name, uint64_t missing)
{
    printf("%s skipped ", name);
    const char *sep = "";
    for (int bit = 0; bit < 64; bit++) {
        if (missing >> bit & 1) {
            const char *f = aesgen_cpu_feature_name(UINT64_C(1) << bit);
            printf("%s%s", sep, f ? f : "?");
            sep = ",";
        }
    }
    printf("\n");
}

static unsigned long errors_so_far(void)
{
    return VALGRIND_COUNT_ERRORS;
}

static void run_ctr(const void *kernel, uint8_t *key, size_t key_len, uint8_t *in, uint8_t *out)
{
    const aesgen_kernel *k = kernel;
    uint8_t iv[16];
    for (int i = 0; i < 16; i++)
        iv[i] = (uint8_t)(0xf0 + i);
    void *ctx = context(k->ctx_size);
    if (k->init(ctx, key, key_len, iv) == 0) {
        static const size_t pieces[] = {1, 17, 300, 1182};   /* 1500 bytes in all */
        size_t at = 0;
        for (size_t i = 0; i < sizeof pieces / sizeof pieces[0]; i++) {
            k->xor_stream(ctx, out + at, in + at, pieces[i]);
            at += pieces[i];
        }
        iv[15] = 0xfe;                      /* a counter that carries into byte 14 */
        k->set_iv(ctx, iv);
        k->xor_stream(ctx, out, in, MAX_LEN);
    }
    k->wipe(ctx);
    free(ctx);
}

#ifdef AESGEN_HAVE_AEAD
static void run_aead(const void *kernel, uint8_t *key, size_t key_len, uint8_t *in,
                     uint8_t *out)
{
    const aesgen_aead *a = kernel;
    uint8_t nonce[16], aad[13], tag[16];
    for (int i = 0; i < 16; i++)
        nonce[i] = (uint8_t)(0x30 + i);
    memset(aad, 0xa5, sizeof aad);
    void *ctx = context(a->ctx_size);
    if (a->init(ctx, key, key_len) == 0) {
        static const size_t lengths[] = {16, 64, 1420, MAX_LEN};
        for (size_t i = 0; i < sizeof lengths / sizeof lengths[0]; i++) {
            size_t tag_len = a->tag_max < 16 ? a->tag_max : 16;
            a->seal(ctx, nonce, 12, aad, sizeof aad, in, lengths[i], out, tag, tag_len);
            if (a->nonce_max >= 16)
                a->seal(ctx, nonce, 16, aad, sizeof aad, in, lengths[i], out, tag, tag_len);
        }
    }
    a->wipe(ctx);
    free(ctx);
}
#endif

/* One kernel under the witness: skipped (features named) where this CPU, valgrind's
 * virtual one, lacks what it needs; else run with 16- and 32-byte keys, key and input
 * marked secret, and "name constant_time reports" printed. */
static void witness(const char *name, int constant_time, uint64_t features, const void *kernel,
                    void (*run)(const void *, uint8_t *, size_t, uint8_t *, uint8_t *))
{
    static uint8_t in[MAX_LEN], out[MAX_LEN], key[32];
    uint64_t missing = features & ~aesgen_cpu_features();
    if (missing != 0) {
        print_skipped(name, missing);
        return;
    }
    unsigned long before = errors_so_far();
    for (size_t key_len = 16; key_len <= 32; key_len += 16) {
        memset(key, 0x3c, sizeof key);
        memset(in, 0x5a, sizeof in);
        secret(key, sizeof key);
        secret(in, sizeof in);
        run(kernel, key, key_len, in, out);
    }
    printf("%s %d %lu\n", name, constant_time, errors_so_far() - before);
    fflush(stdout);
}

int main(int argc, char **argv)
{
    for (size_t i = 0; i < aesgen_kernel_count; i++) {
        const aesgen_kernel *k = &aesgen_kernels[i];
        if (wanted(k->name, argc, argv))
            witness(k->name, k->constant_time, k->features, k, run_ctr);
    }
#ifdef AESGEN_HAVE_AEAD
    for (size_t i = 0; i < aesgen_aead_count; i++) {
        const aesgen_aead *a = &aesgen_aeads[i];
        if (wanted(a->name, argc, argv))
            witness(a->name, a->constant_time, a->features, a, run_aead);
    }
#endif
    return 0;
}
