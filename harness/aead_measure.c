/*
 * aead_measure: rough seal figures for every AEAD of a generated set this CPU runs, in TSC
 * ticks per byte: a new nonce a record (its first 8 bytes count up), 13 bytes of AAD,
 * AES-128, the best of `reps` timings of 64 records, one line a kernel and size:
 *
 *   <kernel> <size> <ticks per byte>
 *
 * Not the benchmark (Google Benchmark runs that, beside the peers): `aesgen doubling` runs
 * it in several processes to compare variants of one kernel that differ in one choice.
 * Usage: aead_measure SIZE[,SIZE...] [reps] [seal|open]
 * (open: one record sealed under one nonce, then opened over and over; the lines say "open")
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <x86intrin.h>

#include "aesgen.h"

enum { RECORDS = 64, MAX_SIZE = 1 << 16 };

static uint64_t ticks(void)
{
    _mm_lfence();
    uint64_t t = __rdtsc();
    _mm_lfence();
    return t;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: aead_measure SIZE[,SIZE...] [reps] [seal|open]\n");
        return 2;
    }
    int reps = argc > 2 ? atoi(argv[2]) : 50;
    int opening = argc > 3 && strcmp(argv[3], "open") == 0;
    if (argc > 3 && !opening && strcmp(argv[3], "seal") != 0) {
        fprintf(stderr, "aead_measure: %s: seal or open\n", argv[3]);
        return 2;
    }
    if (reps < 1)
        reps = 1;
    uint8_t *in = aligned_alloc(64, MAX_SIZE), *out = aligned_alloc(64, MAX_SIZE);
    uint8_t key[16], nonce[12] = {0}, aad[13], tag[16];
    memset(in, 0x5a, MAX_SIZE);
    memset(aad, 0xa5, sizeof aad);
    for (int i = 0; i < 16; i++)
        key[i] = (uint8_t)(i * 7 + 1);
    uint64_t have = aesgen_cpu_features();
    for (size_t k = 0; k < aesgen_aead_count; k++) {
        const aesgen_aead *a = &aesgen_aeads[k];
        if ((a->features & ~have) != 0) {
            printf("%s skipped: this CPU lacks features 0x%llx\n", a->name,
                   (unsigned long long)(a->features & ~have));
            continue;
        }
        void *ctx = aligned_alloc(64, (a->ctx_size + 63) & ~(size_t)63);
        if (a->init(ctx, key, sizeof key) != 0) {
            fprintf(stderr, "%s: init refused a 16-byte key\n", a->name);
            return 1;
        }
        char *sizes = strdup(argv[1]);
        for (char *s = strtok(sizes, ","); s; s = strtok(NULL, ",")) {
            size_t len = strtoul(s, NULL, 10);
            if (len == 0 || len > MAX_SIZE) {
                fprintf(stderr, "size %s: 1..%d bytes\n", s, MAX_SIZE);
                return 2;
            }
            uint64_t best = UINT64_MAX, counter = 0;
            if (opening)                    /* the record every open takes: in, tag */
                a->seal(ctx, nonce, sizeof nonce, aad, sizeof aad, in, len, in, tag, 16);
            for (int r = 0; r < reps; r++) {
                uint64_t t0 = ticks();
                for (int i = 0; i < RECORDS; i++) {
                    if (opening) {
                        if (a->open(ctx, nonce, sizeof nonce, aad, sizeof aad, in, len, out,
                                    tag, 16) != 0) {
                            fprintf(stderr, "%s: open refused its own record\n", a->name);
                            return 1;
                        }
                        continue;
                    }
                    counter++;
                    memcpy(nonce, &counter, sizeof counter);
                    a->seal(ctx, nonce, sizeof nonce, aad, sizeof aad, in, len, out, tag, 16);
                }
                uint64_t t = ticks() - t0;
                if (t < best)
                    best = t;
            }
            printf("%s%s %zu %.4f\n", a->name, opening ? "/open" : "", len,
                   (double)best / RECORDS / (double)len);
        }
        free(sizes);
        a->wipe(ctx);
        free(ctx);
    }
    return 0;
}
