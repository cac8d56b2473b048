/*
 * win64_driver.c: run every kernel of a generated win64 set (cross-built with mingw-w64,
 * run under wine) and print what the checks on the Linux side need.
 *
 * Every call goes through aesgen_win64_call (win64_call.S), which checks the Microsoft x64
 * convention's callee-saved registers. The driver checks what it can on its own (open
 * takes back what seal made, a wrong tag is refused and leaves out zeroed, the streaming
 * entry points give what seal gives) and prints each case's inputs and outputs in hex, one
 * line a case; tests/test_win64.py recomputes every output with independent references
 * (the `cryptography` package's OpenSSL, the OTR model) and reads the rest:
 *
 *   ctr   NAME KEY IV PT OUT IV2 PT2 OUT2        a stream, then set_iv and another
 *   aead  NAME MODE KEY NONCE AAD PT CT TAG      one message
 *   abi   NAME MASK                              callee-saved registers any call changed
 *   fault NAME ENTRY MASK CODE OFFSET            a write into a guard page, caught by SEH
 *   unwind NAME ENTRY STEPS BAD [FIRST...]       the entry single-stepped: instructions
 *                                                whose unwind went wrong (win64_step.c)
 *   fail  NAME WHAT                              a check of the driver's own
 *   skip  NAME FEATURES                          the CPU lacks the features named
 *   done  KERNELS
 *
 * Usage: win64_driver.exe [CASES]   (CASES: message lengths a key size, default all 14)
 */
#include <windows.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "aesgen.h"
#include "win64_call.h"

volatile struct aesgen_win64_fault aesgen_win64_fault;

/* the SEH filter of the trampoline's scope (called as __C_specific_handler's filter) */
LONG aesgen_win64_fault_filter(EXCEPTION_POINTERS *ep, void *frame) {
    (void)frame;
    aesgen_win64_fault.count++;
    aesgen_win64_fault.code = ep->ExceptionRecord->ExceptionCode;
    aesgen_win64_fault.address = ep->ExceptionRecord->NumberParameters >= 2
        ? (uintptr_t)ep->ExceptionRecord->ExceptionInformation[1] : 0;
    return EXCEPTION_EXECUTE_HANDLER;
}

static uint64_t rng_state = 0x243f6a8885a308d3u;
static uint64_t next64(void) {             /* splitmix64 */
    uint64_t z = (rng_state += 0x9e3779b97f4a7c15u);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
    return z ^ (z >> 31);
}
static void fill(uint8_t *p, size_t n) {
    for (size_t i = 0; i < n; i++) p[i] = (uint8_t)next64();
}
static size_t below(size_t n) { return n ? (size_t)(next64() % n) : 0; }

static void hex(const uint8_t *p, size_t n) {
    putchar(' ');
    if (n == 0) { putchar('-'); return; }
    for (size_t i = 0; i < n; i++) printf("%02x", p[i]);
}

static uint32_t abi_mask;                   /* OR of every call's mask, a kernel */
static uint64_t call(const void *fn, uint64_t a0, uint64_t a1, uint64_t a2, uint64_t a3,
                     uint64_t a4, uint64_t a5, uint64_t a6, uint64_t a7, uint64_t a8,
                     uint64_t a9) {
    uint64_t args[10] = {a0, a1, a2, a3, a4, a5, a6, a7, a8, a9};
    uint64_t ret = 0;
    unsigned faults = aesgen_win64_fault.count;
    abi_mask |= aesgen_win64_call(fn, args, &ret);
    if (aesgen_win64_fault.count != faults) {
        printf("fail unexpected-fault code=%08lx\n", (unsigned long)aesgen_win64_fault.code);
    }
    return ret;
}
#define U(x) ((uint64_t)(uintptr_t)(x))

/* fn(a0..a9) single-stepped, its unwind data checked at every instruction */
static void stepped(const char *name, const char *entry, const void *fn, uint64_t a0,
                    uint64_t a1, uint64_t a2, uint64_t a3, uint64_t a4, uint64_t a5,
                    uint64_t a6, uint64_t a7, uint64_t a8, uint64_t a9) {
    uint64_t args[10] = {a0, a1, a2, a3, a4, a5, a6, a7, a8, a9}, steps = 0;
    char first[256];
    uint64_t bad = aesgen_win64_stepped(fn, args, &steps, first, sizeof first);
    printf("unwind %s %s %llu %llu %s\n", name, entry, (unsigned long long)steps,
           (unsigned long long)bad, first);
}

static const size_t LENGTHS[] = {0, 1, 15, 16, 17, 63, 64, 65, 255, 256, 257, 1000, 4099, 700};
static const size_t AADS[] = {0, 1, 13, 16, 17, 100, 0};
enum { MAX_LEN = 4099 + 64 };

static void *aligned(size_t n) {
    return _aligned_malloc(n ? n : 64, 64);
}

/* a guard page: the address of the page after `room` writable bytes, which faults */
static uint8_t *guarded_end(size_t room) {
    SYSTEM_INFO si;
    GetSystemInfo(&si);
    size_t page = si.dwPageSize, span = (room + page - 1) / page * page;
    uint8_t *base = VirtualAlloc(NULL, span + page, MEM_COMMIT | MEM_RESERVE, PAGE_READWRITE);
    DWORD old;
    if (!base || !VirtualProtect(base + span, page, PAGE_NOACCESS, &old)) return NULL;
    return base + span;
}

static int key_sizes(unsigned supported, size_t out[3]) {
    int n = 0;
    for (int i = 0; i < 3; i++)
        if (supported & (1u << i)) out[n++] = 16 + 8 * (size_t)i;
    return n;
}

static void missing(const char *name, uint64_t need) {
    uint64_t lack = need & ~aesgen_cpu_features();
    printf("skip %s", name);
    for (int b = 0; b < 64; b++)
        if (lack & (UINT64_C(1) << b)) printf(" %s", aesgen_cpu_feature_name(UINT64_C(1) << b));
    printf("\n");
}

static void run_ctr(const aesgen_kernel *k, int cases) {
    uint8_t *ctx = aligned(k->ctx_size), *pt = aligned(MAX_LEN), *out = aligned(MAX_LEN);
    uint8_t key[32], iv[16], iv2[16], pt2[100], out2[100];
    size_t sizes[3];
    int nk = key_sizes(aesgen_key_bits_supported, sizes);
    for (int s = 0; s < nk; s++) {
        for (int c = 0; c < cases; c++) {
            size_t len = LENGTHS[c];
            fill(key, sizes[s]);
            fill(iv, 16);
            if (c % 4 == 1) memset(iv + 12, 0xff, 4);        /* a carry out of 32 bits */
            if (c == 9) memset(iv, 0xff, 16);                /* the wrap at 2^128 */
            fill(pt, len);
            if (call(k->init, U(ctx), U(key), sizes[s], U(iv), 0, 0, 0, 0, 0, 0) != 0) {
                printf("fail %s init-refused %zu\n", k->name, sizes[s]);
                continue;
            }
            for (size_t at = 0; at < len;) {                 /* in pieces of any size */
                size_t n = c % 3 == 0 ? len - at : 1 + below(len - at);
                call(k->xor_stream, U(ctx), U(out + at), U(pt + at), n, 0, 0, 0, 0, 0, 0);
                at += n;
            }
            fill(iv2, 16);
            fill(pt2, sizeof pt2);
            call(k->set_iv, U(ctx), U(iv2), 0, 0, 0, 0, 0, 0, 0, 0);
            call(k->xor_stream, U(ctx), U(out2), U(pt2), sizeof pt2, 0, 0, 0, 0, 0, 0);
            call(k->wipe, U(ctx), 0, 0, 0, 0, 0, 0, 0, 0, 0);
            printf("ctr %s", k->name);
            hex(key, sizes[s]); hex(iv, 16); hex(pt, len); hex(out, len);
            hex(iv2, 16); hex(pt2, sizeof pt2); hex(out2, sizeof pt2);
            printf("\n");
        }
    }
    /* every entry point single-stepped: past a batch of every width, then a short tail */
    stepped(k->name, "init", k->init, U(ctx), U(key), sizes[0], U(iv), 0, 0, 0, 0, 0, 0);
    stepped(k->name, "set_iv", k->set_iv, U(ctx), U(iv), 0, 0, 0, 0, 0, 0, 0, 0);
    stepped(k->name, "xor_stream", k->xor_stream, U(ctx), U(out), U(pt), 300, 0, 0, 0, 0, 0, 0);
    stepped(k->name, "xor_stream", k->xor_stream, U(ctx), U(out), U(pt), 37, 0, 0, 0, 0, 0, 0);
    stepped(k->name, "wipe", k->wipe, U(ctx), 0, 0, 0, 0, 0, 0, 0, 0, 0);
    /* a fault: xor_stream into a guard page 100 bytes on */
    uint8_t *end = guarded_end(4096);
    if (end) {
        fill(key, sizes[0]);
        call(k->init, U(ctx), U(key), sizes[0], U(iv), 0, 0, 0, 0, 0, 0);
        unsigned before = aesgen_win64_fault.count;
        uint64_t args[10] = {U(ctx), U(end - 100), U(pt), 1000, 0, 0, 0, 0, 0, 0};
        uint32_t mask = aesgen_win64_call(k->xor_stream, args, NULL);
        printf("fault %s xor_stream %x %08lx %lld\n", k->name, mask,
               aesgen_win64_fault.count != before ? (unsigned long)aesgen_win64_fault.code : 0ul,
               (long long)((intptr_t)aesgen_win64_fault.address - (intptr_t)end));
    } else {
        printf("fail %s no-guard-page\n", k->name);
    }
    _aligned_free(ctx); _aligned_free(pt); _aligned_free(out);
}

static void run_aead(const aesgen_aead *k, int cases) {
    uint8_t *ctx = aligned(k->ctx_size), *pt = aligned(MAX_LEN), *ct = aligned(MAX_LEN),
            *back = aligned(MAX_LEN), *ct2 = aligned(MAX_LEN);
    uint8_t key[32], nonce[64], aad[128], tag[16], tag2[16];
    size_t sizes[3];
    int nk = key_sizes(aesgen_key_bits_supported, sizes);
    for (int s = 0; s < nk; s++) {
        if (call(k->init, U(ctx), U(key), sizes[s], 0, 0, 0, 0, 0, 0, 0) != 0) continue;
        for (int c = 0; c < cases; c++) {
            size_t len = LENGTHS[c], aad_len = AADS[c % 7];
            size_t nonce_len = 12, tag_len = k->tag_max;
            if (c % 5 == 2 && k->nonce_min != k->nonce_max) nonce_len = k->nonce_min;
            if (c % 5 == 3 && k->nonce_max > 12) nonce_len = k->nonce_max < 60 ? k->nonce_max : 60;
            if (c % 4 == 3 && k->tag_min < k->tag_max) tag_len = k->tag_min > 12 ? k->tag_min : 12;
            fill(key, sizes[s]); fill(nonce, nonce_len); fill(aad, aad_len); fill(pt, len);
            call(k->init, U(ctx), U(key), sizes[s], 0, 0, 0, 0, 0, 0, 0);
            int r = (int)call(k->seal, U(ctx), U(nonce), nonce_len, U(aad), aad_len, U(pt),
                              len, U(ct), U(tag), tag_len);
            if (r != 0) printf("fail %s seal-returned %d\n", k->name, r);
            r = (int)call(k->open, U(ctx), U(nonce), nonce_len, U(aad), aad_len, U(ct), len,
                          U(back), U(tag), tag_len);
            if (r != 0 || memcmp(back, pt, len) != 0)
                printf("fail %s open-of-seal %d\n", k->name, r);
            tag[0] ^= 1;
            memset(back, 0x77, len);
            r = (int)call(k->open, U(ctx), U(nonce), nonce_len, U(aad), aad_len, U(ct), len,
                          U(back), U(tag), tag_len);
            tag[0] ^= 1;
            int zeroed = 1;
            for (size_t i = 0; i < len; i++) zeroed &= back[i] == 0;
            if (r != -1 || !zeroed) printf("fail %s forged-open %d zeroed=%d\n", k->name, r, zeroed);
            if (k->start) {                 /* the same message in pieces */
                call(k->start, U(ctx), U(nonce), nonce_len, 0, 0, 0, 0, 0, 0, 0);
                size_t half = below(aad_len + 1);
                call(k->aad, U(ctx), U(aad), half, 0, 0, 0, 0, 0, 0, 0);
                call(k->aad, U(ctx), U(aad + half), aad_len - half, 0, 0, 0, 0, 0, 0, 0);
                for (size_t at = 0; at < len;) {
                    size_t n = 1 + below(len - at);
                    call(k->encrypt, U(ctx), U(pt + at), n, U(ct2 + at), 0, 0, 0, 0, 0, 0);
                    at += n;
                }
                call(k->finish_seal, U(ctx), U(tag2), tag_len, 0, 0, 0, 0, 0, 0, 0);
                if (memcmp(ct2, ct, len) != 0 || memcmp(tag2, tag, tag_len) != 0)
                    printf("fail %s streaming-differs len=%zu\n", k->name, len);
                call(k->start, U(ctx), U(nonce), nonce_len, 0, 0, 0, 0, 0, 0, 0);
                call(k->aad, U(ctx), U(aad), aad_len, 0, 0, 0, 0, 0, 0, 0);
                call(k->decrypt, U(ctx), U(ct), len, U(back), 0, 0, 0, 0, 0, 0);
                r = (int)call(k->finish_open, U(ctx), U(tag), tag_len, 0, 0, 0, 0, 0, 0, 0);
                if (r != 0 || memcmp(back, pt, len) != 0)
                    printf("fail %s streaming-open %d\n", k->name, r);
            }
            call(k->wipe, U(ctx), 0, 0, 0, 0, 0, 0, 0, 0, 0);
            printf("aead %s %s", k->name, k->mode);
            hex(key, sizes[s]); hex(nonce, nonce_len); hex(aad, aad_len); hex(pt, len);
            hex(ct, len); hex(tag, tag_len);
            printf("\n");
        }
    }
    /* every entry point single-stepped */
    for (int s = 0; s < nk; s++) {
        fill(key, sizes[s]);
        if (call(k->init, U(ctx), U(key), sizes[s], 0, 0, 0, 0, 0, 0, 0) != 0) continue;
        size_t tl = k->tag_max;
        stepped(k->name, "init", k->init, U(ctx), U(key), sizes[s], 0, 0, 0, 0, 0, 0, 0);
        stepped(k->name, "seal", k->seal, U(ctx), U(nonce), 12, U(aad), 40, U(pt), 300, U(ct),
                U(tag), tl);
        stepped(k->name, "open", k->open, U(ctx), U(nonce), 12, U(aad), 40, U(ct), 300,
                U(back), U(tag), tl);
        if (k->start) {
            stepped(k->name, "start", k->start, U(ctx), U(nonce), 12, 0, 0, 0, 0, 0, 0, 0);
            stepped(k->name, "aad", k->aad, U(ctx), U(aad), 21, 0, 0, 0, 0, 0, 0, 0);
            stepped(k->name, "encrypt", k->encrypt, U(ctx), U(pt), 200, U(ct), 0, 0, 0, 0, 0, 0);
            stepped(k->name, "finish_seal", k->finish_seal, U(ctx), U(tag), tl, 0, 0, 0, 0, 0,
                    0, 0);
            call(k->start, U(ctx), U(nonce), 12, 0, 0, 0, 0, 0, 0, 0);
            stepped(k->name, "decrypt", k->decrypt, U(ctx), U(ct), 200, U(back), 0, 0, 0, 0, 0,
                    0);
            stepped(k->name, "finish_open", k->finish_open, U(ctx), U(tag), tl, 0, 0, 0, 0, 0,
                    0, 0);
        }
        stepped(k->name, "wipe", k->wipe, U(ctx), 0, 0, 0, 0, 0, 0, 0, 0, 0);
        break;
    }
    /* a fault: seal into a guard page 100 bytes on */
    uint8_t *end = guarded_end(4096);
    if (end) {
        for (int s = 0; s < nk; s++) {
            fill(key, sizes[s]);
            if (call(k->init, U(ctx), U(key), sizes[s], 0, 0, 0, 0, 0, 0, 0) == 0) break;
        }
        unsigned before = aesgen_win64_fault.count;
        uint64_t args[10] = {U(ctx), U(nonce), 12, U(aad), 13, U(pt), 1000, U(end - 100),
                             U(tag), k->tag_max};
        uint32_t mask = aesgen_win64_call(k->seal, args, NULL);
        printf("fault %s seal %x %08lx %lld\n", k->name, mask,
               aesgen_win64_fault.count != before ? (unsigned long)aesgen_win64_fault.code : 0ul,
               (long long)((intptr_t)aesgen_win64_fault.address - (intptr_t)end));
    } else {
        printf("fail %s no-guard-page\n", k->name);
    }
    _aligned_free(ctx); _aligned_free(pt); _aligned_free(ct); _aligned_free(back);
    _aligned_free(ct2);
}

int main(int argc, char **argv) {
    int cases = (int)(sizeof LENGTHS / sizeof LENGTHS[0]);
    if (argc > 1) {
        int n = atoi(argv[1]);
        if (n < 1 || n > cases) {
            fprintf(stderr, "usage: %s [CASES 1..%d]\n", argv[0], cases);
            return 2;
        }
        cases = n;
    }
    uint64_t have = aesgen_cpu_features();
    size_t ran = 0;
    for (size_t i = 0; i < aesgen_kernel_count; i++) {
        const aesgen_kernel *k = &aesgen_kernels[i];
        if ((k->features & have) != k->features) { missing(k->name, k->features); continue; }
        abi_mask = 0;
        run_ctr(k, cases);
        printf("abi %s %x\n", k->name, abi_mask);
        ran++;
    }
#ifdef AESGEN_HAVE_AEAD
    for (size_t i = 0; i < aesgen_aead_count; i++) {
        const aesgen_aead *k = &aesgen_aeads[i];
        if ((k->features & have) != k->features) { missing(k->name, k->features); continue; }
        abi_mask = 0;
        run_aead(k, cases);
        printf("abi %s %x\n", k->name, abi_mask);
        ran++;
    }
#endif
    printf("done %zu\n", ran);
    return 0;
}
