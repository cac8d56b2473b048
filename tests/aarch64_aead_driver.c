/* Test driver for the AArch64 AEAD kernels (tests/test_gcm_siv_aarch64.py): runs a binary
 * script from stdin on one AEAD of a generated set and writes what each step returns to
 * stdout; Python compares it with its oracle. Cross-built static, run under qemu-aarch64.
 *
 * Script steps (integers little-endian):
 *   1 SELECT u32 n, name[n]                  -> u32 ctx_size, u64 nonce_min, nonce_max,
 *                                               tag_min, tag_max (ctx_size 0: no such AEAD)
 *   2 INIT   u32 key_len, key[key_len]       -> i32 rc
 *   3 SEAL   u32 nonce_len, nonce, u32 aad_len, aad, u32 len, in[len], u32 tag_len,
 *            u8 inplace                      -> i32 rc, out[len], tag[tag_len], u8 guards_ok
 *   4 OPEN   u32 nonce_len, nonce, u32 aad_len, aad, u32 len, in[len], u32 tag_len,
 *            tag[tag_len], u8 inplace        -> i32 rc, out[len], u8 guards_ok
 *   5 WIPE                                   -> u8 all_zero
 *   0 END
 * Every buffer the kernel reads (nonce, AAD, input, tag) ends where an inaccessible page
 * begins, so a read past its end faults; out and tag are written into buffers that end
 * there too, with guard bytes before them that must stay; the context has 64 guard bytes
 * after ctx_size. Before a seal or open, out and tag hold 0x5a: a refused seal must leave
 * them so. guards_ok is 1 when every guard byte is as it was. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "aesgen.h"

#define CAT2(a, b) a##b
#define CAT(a, b) CAT2(a, b)
#define P(name) CAT(PREFIX, name)

#define GUARD 64
#define MAX_BYTES (1u << 20)

static unsigned char *script;
static size_t script_len, pos;

static uint32_t get32(void)
{
    uint32_t v;
    if (pos + 4 > script_len)
        exit(4);
    memcpy(&v, script + pos, 4);
    pos += 4;
    return v;
}

static const unsigned char *bytes(size_t n)
{
    const unsigned char *p = script + pos;
    if (pos + n > script_len)
        exit(4);
    pos += n;
    return p;
}

static void put(const void *p, size_t n)
{
    if (n && fwrite(p, 1, n, stdout) != n)
        exit(3);
}

static void put32(uint32_t v) { put(&v, 4); }

/* A region whose usable part ends where a PROT_NONE page begins. */
struct fenced {
    unsigned char *base;
    size_t size, usable;
};

static struct fenced fence(size_t usable)
{
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    size_t body = (usable + GUARD + page - 1) / page * page;
    struct fenced f;
    f.base = mmap(NULL, body + page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
                  -1, 0);
    if (f.base == MAP_FAILED)
        exit(5);
    if (mprotect(f.base + body, page, PROT_NONE) != 0)
        exit(5);
    f.size = body + page;
    f.usable = body;
    return f;
}

/* n bytes ending at the inaccessible page, they and the GUARD bytes before them filled
   with `fill`; NULL when n is 0 (the contract allows it) */
static unsigned char *at_end(struct fenced *f, size_t n, unsigned char fill)
{
    memset(f->base + f->usable - n - GUARD, fill, n + GUARD);
    return n ? f->base + f->usable - n : NULL;
}

/* the GUARD bytes before the last n are still `fill` */
static int guards_ok(const struct fenced *f, size_t n, unsigned char fill)
{
    size_t i;
    for (i = f->usable - n - GUARD; i < f->usable - n; i++)
        if (f->base[i] != fill)
            return 0;
    return 1;
}

int main(void)
{
    size_t cap = 1 << 16;
    const P(aead) *k = NULL;
    unsigned char *ctx = NULL;
    size_t ctx_size = 0;
    struct fenced fn = fence(64), fa = fence(MAX_BYTES), fi = fence(MAX_BYTES),
                  fo = fence(MAX_BYTES), ft = fence(64), fg = fence(64);
    script = malloc(cap);
    for (;;) {
        size_t got = fread(script + script_len, 1, cap - script_len, stdin);
        script_len += got;
        if (script_len < cap)
            break;
        cap *= 2;
        script = realloc(script, cap);
    }
    for (;;) {
        unsigned char op;
        if (pos >= script_len)
            exit(4);
        op = script[pos++];
        if (op == 0)
            break;
        if (op == 1) {
            uint32_t n = get32();
            const unsigned char *name = bytes(n);
            size_t i;
            uint64_t lens[4] = {0, 0, 0, 0};
            k = NULL;
            for (i = 0; i < P(aead_count); i++)
                if (strlen(P(aeads)[i].name) == n && !memcmp(P(aeads)[i].name, name, n))
                    k = &P(aeads)[i];
            free(ctx);
            ctx = NULL;
            ctx_size = 0;
            if (k) {
                ctx_size = k->ctx_size;
                ctx = aligned_alloc(64, ctx_size + GUARD);
                memset(ctx, 0x5a, ctx_size + GUARD);
                lens[0] = k->nonce_min;
                lens[1] = k->nonce_max;
                lens[2] = k->tag_min;
                lens[3] = k->tag_max;
            }
            put32((uint32_t)ctx_size);
            put(lens, sizeof lens);
        } else if (op == 2) {
            uint32_t n = get32();
            const unsigned char *key = bytes(n);
            unsigned char *kb;
            int32_t rc;
            if (n > 64)
                exit(6);
            kb = at_end(&fg, n, 0x44);
            if (n)
                memcpy(kb, key, n);
            rc = k->init(ctx, kb, n);
            put(&rc, 4);
        } else if (op == 3 || op == 4) {
            uint32_t nonce_len = get32();
            const unsigned char *nonce = bytes(nonce_len);
            uint32_t aad_len = get32();
            const unsigned char *aad = bytes(aad_len);
            uint32_t len = get32();
            const unsigned char *in = bytes(len);
            uint32_t tag_len = get32();
            const unsigned char *tag = op == 4 ? bytes(tag_len) : NULL;
            unsigned char inplace = *bytes(1);
            unsigned char *np, *ap, *ip, *op_, *tp;
            unsigned char ok = 1;
            int32_t rc;
            size_t i;
            if (nonce_len > 64 || tag_len > 64 || aad_len > MAX_BYTES || len > MAX_BYTES)
                exit(6);
            np = at_end(&fn, nonce_len, 0x11);
            ap = at_end(&fa, aad_len, 0x22);
            ip = at_end(&fi, len, 0x33);
            op_ = at_end(&fo, len, 0x5a);
            tp = at_end(&ft, tag_len, 0x5a);
            if (nonce_len)
                memcpy(np, nonce, nonce_len);
            if (aad_len)
                memcpy(ap, aad, aad_len);
            if (inplace)
                ip = op_;
            if (len)
                memcpy(ip, in, len);
            if (op == 4 && tag_len)
                memcpy(tp, tag, tag_len);
            if (op == 3)
                rc = k->seal(ctx, np, nonce_len, ap, aad_len, ip, len, op_, tp, tag_len);
            else
                rc = k->open(ctx, np, nonce_len, ap, aad_len, ip, len, op_, tp, tag_len);
            put(&rc, 4);
            put(op_, len);
            if (op == 3)
                put(tp, tag_len);
            /* the bytes before each buffer are as filled; inputs are read only */
            if (!guards_ok(&fo, len, 0x5a) || !guards_ok(&ft, tag_len, 0x5a)
                || !guards_ok(&fn, nonce_len, 0x11) || !guards_ok(&fa, aad_len, 0x22))
                ok = 0;
            if (nonce_len && memcmp(np, nonce, nonce_len))
                ok = 0;
            if (aad_len && memcmp(ap, aad, aad_len))
                ok = 0;
            if (!inplace && len && memcmp(ip, in, len))
                ok = 0;
            if (!inplace && !guards_ok(&fi, len, 0x33))
                ok = 0;
            if (op == 4 && tag_len && memcmp(tp, tag, tag_len))
                ok = 0;
            for (i = 0; i < GUARD; i++)
                if (ctx[ctx_size + i] != 0x5a)
                    ok = 0;
            put(&ok, 1);
        } else if (op == 5) {
            unsigned char zero = 1;
            size_t i;
            k->wipe(ctx);
            for (i = 0; i < ctx_size; i++)
                if (ctx[i])
                    zero = 0;
            for (i = 0; i < GUARD; i++)
                if (ctx[ctx_size + i] != 0x5a)
                    zero = 0;
            put(&zero, 1);
        } else {
            fprintf(stderr, "bad script op %d at %zu\n", op, pos - 1);
            exit(2);
        }
    }
    free(ctx);
    return 0;
}
