/* A consumer of a vendored aesgen folder (tests/test_vendor.py builds it with CMake, Meson and
 * Make from that folder alone). It checks every kernel this CPU runs against standard
 * vectors and prints "ok <kernels>" or what failed; exit 0 only when all agree.
 *   CTR: NIST SP 800-38A, F.5.1 (CTR-AES128.Encrypt), first block.
 *   GCM: McGrew and Viega, "The Galois/Counter Mode of Operation", Test Case 2 (AES-128,
 *        zero key, zero 96-bit IV, one zero block). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "aesgen.h"

static const uint8_t ctr_key[16] = {0x2b, 0x7e, 0x15, 0x16, 0x28, 0xae, 0xd2, 0xa6,
                                    0xab, 0xf7, 0x15, 0x88, 0x09, 0xcf, 0x4f, 0x3c};
static const uint8_t ctr_iv[16] = {0xf0, 0xf1, 0xf2, 0xf3, 0xf4, 0xf5, 0xf6, 0xf7,
                                   0xf8, 0xf9, 0xfa, 0xfb, 0xfc, 0xfd, 0xfe, 0xff};
static const uint8_t ctr_pt[16] = {0x6b, 0xc1, 0xbe, 0xe2, 0x2e, 0x40, 0x9f, 0x96,
                                   0xe9, 0x3d, 0x7e, 0x11, 0x73, 0x93, 0x17, 0x2a};
static const uint8_t ctr_ct[16] = {0x87, 0x4d, 0x61, 0x91, 0xb6, 0x20, 0xe3, 0x26,
                                   0x1b, 0xef, 0x68, 0x64, 0x99, 0x0d, 0xb6, 0xce};
static const uint8_t gcm_ct[16] = {0x03, 0x88, 0xda, 0xce, 0x60, 0xb6, 0xa3, 0x92,
                                   0xf3, 0x28, 0xc2, 0xb9, 0x71, 0xb2, 0xfe, 0x78};
static const uint8_t gcm_tag[16] = {0xab, 0x6e, 0x47, 0xd4, 0x2c, 0xec, 0x13, 0xbd,
                                    0xf5, 0x3a, 0x67, 0xb2, 0x12, 0x57, 0xbd, 0xdf};

static void *ctx_of(size_t size) {
    void *p = NULL;
#if defined(_WIN32)
    p = _aligned_malloc(size, 64);
#else
    if (posix_memalign(&p, 64, size) != 0) p = NULL;
#endif
    return p;
}
static void ctx_free(void *p) {
#if defined(_WIN32)
    _aligned_free(p);
#else
    free(p);
#endif
}

int main(void) {
    uint64_t have = aesgen_cpu_features();
    int ran = 0, bad = 0;
    for (size_t i = 0; i < aesgen_kernel_count; i++) {
        const aesgen_kernel *k = &aesgen_kernels[i];
        if ((k->features & have) != k->features) continue;
        uint8_t out[16];
        void *ctx = ctx_of(k->ctx_size);
        k->init(ctx, ctr_key, 16, ctr_iv);
        k->xor_stream(ctx, out, ctr_pt, 16);
        k->wipe(ctx);
        ctx_free(ctx);
        if (memcmp(out, ctr_ct, 16) != 0) { printf("FAIL %s\n", k->name); bad++; }
        ran++;
    }
#ifdef AESGEN_HAVE_AEAD
    for (size_t i = 0; i < aesgen_aead_count; i++) {
        const aesgen_aead *a = &aesgen_aeads[i];
        if ((a->features & have) != a->features || strcmp(a->mode, "gcm") != 0) continue;
        uint8_t key[16] = {0}, iv[12] = {0}, pt[16] = {0}, ct[16], tag[16];
        void *ctx = ctx_of(a->ctx_size);
        a->init(ctx, key, 16);
        int r = a->seal(ctx, iv, 12, NULL, 0, pt, 16, ct, tag, 16);
        a->wipe(ctx);
        ctx_free(ctx);
        if (r != 0 || memcmp(ct, gcm_ct, 16) != 0 || memcmp(tag, gcm_tag, 16) != 0) {
            printf("FAIL %s\n", a->name);
            bad++;
        }
        ran++;
    }
#endif
    if (aesgen_best_kernel() == NULL) { printf("FAIL no best kernel\n"); bad++; }
    if (bad == 0) printf("ok %d\n", ran);
    return bad != 0 || ran == 0;
}
