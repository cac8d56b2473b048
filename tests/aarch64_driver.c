/* Test driver for the AArch64 kernels (tests/test_aarch64_backend.py): runs a binary script
 * from stdin on every kernel of one generated set and writes what each step returns to
 * stdout; Python compares it with aesgen.model. Cross-built static, run under qemu-aarch64.
 *
 * stdout: u64 aesgen_cpu_features(), u32 index of best_kernel() (0xffffffff: none), then per
 * kernel: u32 name length, the name, then one record per script step:
 *   1 INIT   u32 key_len, key[32], iv[16]           -> i32 rc
 *   2 SETIV  iv[16]                                  -> i32 rc
 *   3 XOR    u32 len, u32 seed, u8 inplace, u8 skew  -> out[len], u8 guards_ok
 *   4 WIPE                                           -> u8 all_zero
 *   5 DUMP                                           -> u32 ctx_size, ctx bytes
 *   0 END
 * Input byte i of an XOR step is (seed + 131 i + (i >> 8)) mod 256. Buffers sit `skew` bytes
 * past a 16-byte boundary with 64 guard bytes either side, which must stay untouched. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "aesgen.h"

#define CAT2(a, b) a##b
#define CAT(a, b) CAT2(a, b)
#define P(name) CAT(PREFIX, name)

static unsigned char *script;
static size_t script_len, pos;

static uint32_t get32(void)
{
    uint32_t v;
    memcpy(&v, script + pos, 4);
    pos += 4;
    return v;
}

static void put(const void *p, size_t n)
{
    if (fwrite(p, 1, n, stdout) != n)
        exit(3);
}

static void put32(uint32_t v) { put(&v, 4); }

static void run(const P(kernel) *k)
{
    unsigned char *ctx = aligned_alloc(64, (k->ctx_size + 63) & ~(size_t)63);
    memset(ctx, 0x5a, k->ctx_size);
    uint32_t n = (uint32_t)strlen(k->name);
    put32(n);
    put(k->name, n);
    pos = 0;
    for (;;) {
        unsigned char op = script[pos++];
        if (op == 0)
            break;
        if (op == 1) {
            uint32_t klen = get32();
            int32_t rc = k->init(ctx, script + pos, klen, script + pos + 32);
            pos += 48;
            put(&rc, 4);
        } else if (op == 2) {
            int32_t rc = k->set_iv(ctx, script + pos);
            pos += 16;
            put(&rc, 4);
        } else if (op == 3) {
            uint32_t len = get32(), seed = get32();
            unsigned char inplace = script[pos++], skew = script[pos++];
            size_t room = len + 160;
            unsigned char *in = aligned_alloc(16, (room + 15) & ~(size_t)15);
            unsigned char *out = aligned_alloc(16, (room + 15) & ~(size_t)15);
            unsigned char ok = 1;
            size_t i;
            memset(in, 0xc3, room);
            memset(out, 0xa5, room);
            for (i = 0; i < len; i++)
                in[64 + skew + i] = (unsigned char)(seed + 131 * i + (i >> 8));
            if (inplace) {
                k->xor_stream(ctx, in + 64 + skew, in + 64 + skew, len);
                put(in + 64 + skew, len);
                for (i = 0; i < room; i++)
                    if ((i < 64 + skew || i >= 64 + skew + len) && in[i] != 0xc3)
                        ok = 0;
            } else {
                k->xor_stream(ctx, out + 64 + skew, in + 64 + skew, len);
                put(out + 64 + skew, len);
                for (i = 0; i < room; i++)
                    if ((i < 64 + skew || i >= 64 + skew + len) && out[i] != 0xa5)
                        ok = 0;
                for (i = 0; i < len; i++)   /* the input is read only */
                    if (in[64 + skew + i] != (unsigned char)(seed + 131 * i + (i >> 8)))
                        ok = 0;
            }
            put(&ok, 1);
            free(in);
            free(out);
        } else if (op == 4) {
            unsigned char zero = 1;
            size_t i;
            k->wipe(ctx);
            for (i = 0; i < k->ctx_size; i++)
                if (ctx[i])
                    zero = 0;
            put(&zero, 1);
        } else if (op == 5) {
            put32((uint32_t)k->ctx_size);
            put(ctx, k->ctx_size);
        } else {
            fprintf(stderr, "bad script op %d at %zu\n", op, pos - 1);
            exit(2);
        }
    }
    free(ctx);
}

int main(void)
{
    size_t cap = 1 << 16, i;
    script = malloc(cap);
    for (;;) {
        size_t got = fread(script + script_len, 1, cap - script_len, stdin);
        script_len += got;
        if (script_len < cap)
            break;
        cap *= 2;
        script = realloc(script, cap);
    }
    uint64_t features = P(cpu_features)();
    put(&features, 8);
    const P(kernel) *best = P(best_kernel)();
    put32(best ? (uint32_t)(best - P(kernels)) : 0xffffffffu);
    for (i = 0; i < P(kernel_count); i++)
        run(&P(kernels)[i]);
    return 0;
}
