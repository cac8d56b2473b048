/*
 * quick_measure: rough figures for every registry kernel this CPU runs, in TSC ticks.
 *
 *   init         ticks for init (key expansion and FACE reset), median of many
 *   first 4 KiB  ticks/byte for the first 4096 bytes after init: FACE tables are still
 *                empty, so these blocks are computed in full and fill the tables
 *   4 KiB        ticks/byte for 4096-byte messages under a fresh IV that keeps IV bytes
 *                0, 5, 10 (set_iv + xor_stream; FACE tables already complete)
 *   stream       ticks/byte for a long stream in 4096-byte calls (one IV)
 *   fill cost    (first 4 KiB - 4 KiB) * 4096: what building the tables costs, once per
 *                key and per change of IV bytes 0, 5, 10 (seed 000 Table 4 measures the
 *                same thing as a set-up cost)
 *
 * TSC ticks, not core cycles: this is a rough check, not the benchmark (Google Benchmark
 * runs that, beside the peer libraries). Usage: quick_measure [reps]
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <x86intrin.h>

#include "aesgen.h"

static uint64_t ticks(void)
{
    _mm_lfence();
    uint64_t t = __rdtsc();
    _mm_lfence();
    return t;
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

static uint64_t median(uint64_t *v, int n)
{
    qsort(v, (size_t)n, sizeof v[0], cmp_u64);
    return v[n / 2];
}

int main(int argc, char **argv)
{
    int reps = argc > 1 ? atoi(argv[1]) : 301;
    if (reps < 3)
        reps = 3;
    enum { MSG = 4096, STREAM = 1 << 20 };
    uint8_t *in = aligned_alloc(64, STREAM), *out = aligned_alloc(64, STREAM);
    uint64_t *t = calloc((size_t)reps, sizeof *t);
    uint8_t key[32], iv[16];
    memset(in, 0x5a, STREAM);
    for (int i = 0; i < 32; i++)
        key[i] = (uint8_t)(i * 7 + 1);
    uint64_t have = aesgen_cpu_features();
    printf("%-18s %4s %8s %12s %9s %9s %11s\n", "kernel", "key", "init", "first 4KiB",
           "4 KiB", "stream", "fill cost");
    for (size_t k = 0; k < aesgen_kernel_count; k++) {
        const aesgen_kernel *kr = &aesgen_kernels[k];
        if (kr->features & ~have) {
            printf("%-18s skipped: this CPU lacks a feature it needs\n", kr->name);
            continue;
        }
        void *ctx = aligned_alloc(64, (kr->ctx_size + 63) & ~(size_t)63);
        for (int kb = 0; kb < 3; kb++) {
            size_t klen = 16 + 8 * (size_t)kb;
            if (!(aesgen_key_bits_supported & (1u << kb)))
                continue;
            for (int r = 0; r < reps; r++) {
                memset(iv, r, sizeof iv);
                uint64_t t0 = ticks();
                kr->init(ctx, key, klen, iv);
                t[r] = ticks() - t0;
            }
            uint64_t init = median(t, reps);
            for (int r = 0; r < reps; r++) {   /* empty tables: init, then 4 KiB */
                memset(iv, 0, sizeof iv);
                iv[0] = (uint8_t)r;            /* byte 0 changes: tables cannot be reused */
                kr->init(ctx, key, klen, iv);
                uint64_t t0 = ticks();
                kr->xor_stream(ctx, out, in, MSG);
                t[r] = ticks() - t0;
            }
            uint64_t first = median(t, reps);
            memset(iv, 0, sizeof iv);
            kr->init(ctx, key, klen, iv);
            kr->xor_stream(ctx, out, in, 3 * MSG);   /* complete the tables */
            for (int r = 0; r < reps; r++) {   /* fresh IV keeping bytes 0, 5, 10 */
                iv[3] = (uint8_t)r;
                uint64_t t0 = ticks();
                kr->set_iv(ctx, iv);
                kr->xor_stream(ctx, out, in, MSG);
                t[r] = ticks() - t0;
            }
            uint64_t warm = median(t, reps);
            int sreps = reps / 10 + 3;
            for (int r = 0; r < sreps; r++) {
                uint64_t t0 = ticks();
                for (size_t off = 0; off < STREAM; off += MSG)
                    kr->xor_stream(ctx, out + off, in + off, MSG);
                t[r] = ticks() - t0;
            }
            uint64_t stream = median(t, sreps);
            printf("%-18s %4zu %8llu %12.3f %9.3f %9.3f %11lld\n", kr->name, klen * 8,
                   (unsigned long long)init, (double)first / MSG, (double)warm / MSG,
                   (double)stream / STREAM, (long long)first - (long long)warm);
        }
        kr->wipe(ctx);
        free(ctx);
    }
    printf("(TSC ticks; medians of %d runs; 'first 4KiB' starts from empty FACE tables)\n",
           reps);
    free(in);
    free(out);
    free(t);
    return 0;
}
