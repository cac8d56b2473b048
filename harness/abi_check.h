/*
 * abi_check.h: call a function through an assembly trampoline that checks
 * the platform's calling convention around the call.  One interface, two
 * implementations, chosen by the target: abi_check_x86_64.S (System V AMD64)
 * and abi_check_aarch64.S (AAPCS64 on Linux).
 *
 * aesgen_abi_call(fn, args, nargs, &ret) calls fn(args[0], ..., args[nargs-1])
 * for nargs up to AESGEN_ABI_MAX_ARGS (10: the AEAD kernels' seal and open
 * take ten), all of them 64-bit integer or pointer arguments, where the
 * convention puts them: the first six in rdi, rsi, rdx, rcx, r8, r9 and the
 * rest on the stack just above the return address (SysV); the first eight
 * in x0-x7 and the rest at the incoming sp (AAPCS64).  The stack pointer is
 * 16-byte aligned at the call.  Argument registers and stack slots that
 * nargs leaves unused hold junk (a larger nargs is taken as 10).
 *
 * aesgen_abi_call4(fn, a0, a1, a2, a3, &ret) is aesgen_abi_call with the
 * four arguments a0..a3.
 *
 * Before the call the trampoline loads a distinctive value into each
 * callee-saved register and junk into the caller-saved ones that carry no
 * argument.  After the call it checks:
 *
 * x86-64:
 *   - rbx, rbp, r12, r13, r14, r15 still hold their distinctive values;
 *   - rsp is what it was before the call (the trampoline keeps its own
 *     copy in thread-local storage, so it recovers even if rsp moved);
 *   - the direction flag is clear;
 *   - the MXCSR control bits (rounding, masks, FZ, DAZ) are unchanged
 *     (the six sticky status flags are caller-saved and are ignored);
 *   - the x87 control word is unchanged and the x87 register stack is
 *     empty (all tags "empty": no MMX use without EMMS);
 *   - 32 bytes of canary words in the trampoline's own frame, just above
 *     the return address and the stack arguments, are intact (the callee
 *     wrote nothing into its caller's frame).
 *
 * AArch64:
 *   - x19-x28, x29 (the frame pointer) and the low 64 bits of v8-v15
 *     (d8-d15) still hold their distinctive values (the upper halves of
 *     v8-v15 are caller-saved and are not looked at);
 *   - sp is what it was before the call (kept in thread-local storage too);
 *   - FPCR is unchanged (FPSR's cumulative flags are caller-saved);
 *   - 32 bytes of canary words just above the stack arguments (at the
 *     incoming sp when there are none) are intact.
 *
 * The stack arguments themselves are the callee's: it may read them and,
 * as both conventions allow, write them; they are not checked.
 *
 * It returns a mask of AESGEN_ABI_* bits, 0 when everything held, and stores
 * the callee's return value (rax / x0) through ret (when ret is not NULL).
 * Whatever it finds, it restores its caller's state before returning, so one
 * bad kernel does not take the rest of the test binary down with it.
 *
 * ELF only.  Safe to use from several threads at once: the saved stack
 * pointer lives in thread-local storage.  Not reentrant within one thread
 * (fn must not itself call aesgen_abi_call or aesgen_abi_call4).
 */
#ifndef AESGEN_HARNESS_ABI_CHECK_H
#define AESGEN_HARNESS_ABI_CHECK_H

#define AESGEN_ABI_MAX_ARGS 10

/* The scrub check's dumps (when aesgen_abi_vector_bytes is not 0): before each call the
 * trampoline zeroes the vector registers and the AESGEN_ABI_STACK_DUMP bytes of stack below
 * its frame (where the callee's frame goes); after it, it copies the callee's vector
 * registers (aesgen_abi_vector_bytes each: 16 xmm, 32 ymm, 64 zmm; x86 16 registers, 32
 * with zmm; AArch64 the 32 q registers, 16 bytes each) and that stack into this thread's
 * aesgen_abi_vectors and aesgen_abi_stack (the stack's highest byte last, just below the
 * frame). The harness then looks there for key material the callee left behind. */
#define AESGEN_ABI_VECTOR_DUMP 2048
#define AESGEN_ABI_STACK_DUMP 2048
#ifndef __ASSEMBLER__
#ifdef __cplusplus
extern "C" {
#endif
extern int aesgen_abi_vector_bytes;
extern __thread unsigned char aesgen_abi_vectors[AESGEN_ABI_VECTOR_DUMP];
extern __thread unsigned char aesgen_abi_stack[AESGEN_ABI_STACK_DUMP];
/* Leaks for the scrub check's own test: the 16 bytes at p left in xmm5 / v5, or on the
 * stack below the return address and in no register. */
void aesgen_abi_leave_xmm5(const void *p);
void aesgen_abi_leave_stack(const void *p);
#ifdef __cplusplus
}
#endif
#endif

#if defined(__aarch64__)
#define AESGEN_ABI_CONVENTION "AAPCS64"
#define AESGEN_ABI_X19    0x000001
#define AESGEN_ABI_X20    0x000002
#define AESGEN_ABI_X21    0x000004
#define AESGEN_ABI_X22    0x000008
#define AESGEN_ABI_X23    0x000010
#define AESGEN_ABI_X24    0x000020
#define AESGEN_ABI_X25    0x000040
#define AESGEN_ABI_X26    0x000080
#define AESGEN_ABI_X27    0x000100
#define AESGEN_ABI_X28    0x000200
#define AESGEN_ABI_X29    0x000400
#define AESGEN_ABI_SP     0x000800
#define AESGEN_ABI_D8     0x001000
#define AESGEN_ABI_D9     0x002000
#define AESGEN_ABI_D10    0x004000
#define AESGEN_ABI_D11    0x008000
#define AESGEN_ABI_D12    0x010000
#define AESGEN_ABI_D13    0x020000
#define AESGEN_ABI_D14    0x040000
#define AESGEN_ABI_D15    0x080000
#define AESGEN_ABI_FPCR   0x100000
#define AESGEN_ABI_FRAME  0x200000
#define AESGEN_ABI_ALL    0x3fffff
#else
#define AESGEN_ABI_CONVENTION "SysV"
#define AESGEN_ABI_RBX    0x001
#define AESGEN_ABI_RBP    0x002
#define AESGEN_ABI_R12    0x004
#define AESGEN_ABI_R13    0x008
#define AESGEN_ABI_R14    0x010
#define AESGEN_ABI_R15    0x020
#define AESGEN_ABI_RSP    0x040
#define AESGEN_ABI_DF     0x080
#define AESGEN_ABI_MXCSR  0x100
#define AESGEN_ABI_X87CW  0x200
#define AESGEN_ABI_X87TAG 0x400
#define AESGEN_ABI_FRAME  0x800
#define AESGEN_ABI_ALL    0xfff
#endif

#ifndef __ASSEMBLER__
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

uint64_t aesgen_abi_call(const void *fn, const uint64_t *args, size_t nargs, uint64_t *ret);
uint64_t aesgen_abi_call4(const void *fn, uint64_t a0, uint64_t a1, uint64_t a2,
                          uint64_t a3, uint64_t *ret);

/* Self-test functions for ten arguments, in abi_check_<arch>.S:
 *   good_args10        reads all ten arguments and returns the XOR of
 *                      rol(a_i, 6 i), clobbering every caller-saved register
 *                      it may (as good_volatile below);
 *   good_args10_write  overwrites its stack arguments (allowed) and returns 0;
 *   args10_bad_frame   called with ten arguments, writes the word just above
 *                      its stack arguments (AESGEN_ABI_FRAME). */
uint64_t aesgen_abi_good_args10(uint64_t a0, uint64_t a1, uint64_t a2, uint64_t a3,
                                uint64_t a4, uint64_t a5, uint64_t a6, uint64_t a7,
                                uint64_t a8, uint64_t a9);
uint64_t aesgen_abi_good_args10_write(uint64_t a0, uint64_t a1, uint64_t a2, uint64_t a3,
                                      uint64_t a4, uint64_t a5, uint64_t a6, uint64_t a7,
                                      uint64_t a8, uint64_t a9);
void aesgen_abi_args10_bad_frame(void);

/* Self-test functions in abi_check_<arch>.S.  Each bad one breaks exactly
 * one rule (the one its name says) and then returns normally. */
#if defined(__aarch64__)
void aesgen_abi_bad_x19(void);
void aesgen_abi_bad_x20(void);
void aesgen_abi_bad_x21(void);
void aesgen_abi_bad_x22(void);
void aesgen_abi_bad_x23(void);
void aesgen_abi_bad_x24(void);
void aesgen_abi_bad_x25(void);
void aesgen_abi_bad_x26(void);
void aesgen_abi_bad_x27(void);
void aesgen_abi_bad_x28(void);
void aesgen_abi_bad_x29(void);
void aesgen_abi_bad_d8(void);
void aesgen_abi_bad_d9(void);
void aesgen_abi_bad_d10(void);
void aesgen_abi_bad_d11(void);
void aesgen_abi_bad_d12(void);
void aesgen_abi_bad_d13(void);
void aesgen_abi_bad_d14(void);
void aesgen_abi_bad_d15(void);
void aesgen_abi_bad_sp(void);    /* returns with sp 16 bytes too low */
void aesgen_abi_bad_fpcr(void);  /* changes the rounding mode */
void aesgen_abi_bad_frame(void); /* writes into its caller's frame */
/* A well-behaved function that clobbers every caller-saved register it may
 * (x1-x17, v0-v7, v16-v31, the upper halves of v8-v15, FPSR, NZCV) and
 * returns a0 ^ rol(a1, 8) ^ rol(a2, 16) ^ rol(a3, 24). */
uint64_t aesgen_abi_good_volatile(uint64_t a0, uint64_t a1, uint64_t a2, uint64_t a3);

/* Name of one AESGEN_ABI_* bit ("x19", "FPCR", ...), or NULL. */
static inline const char *aesgen_abi_bit_name(unsigned bit) {
    static const char *const names[] = {
        "x19", "x20", "x21", "x22", "x23", "x24", "x25", "x26", "x27", "x28",
        "x29 (frame pointer)", "sp",
        "d8", "d9", "d10", "d11", "d12", "d13", "d14", "d15",
        "FPCR (rounding mode, FZ, DN, ...)",
        "caller's stack frame (write at or above the incoming sp, past any stack arguments)",
    };
    unsigned i;
    for (i = 0; i < sizeof names / sizeof names[0]; i++)
        if (bit == (1u << i)) return names[i];
    return 0;
}
#else
void aesgen_abi_bad_rbx(void);
void aesgen_abi_bad_rbp(void);
void aesgen_abi_bad_r12(void);
void aesgen_abi_bad_r13(void);
void aesgen_abi_bad_r14(void);
void aesgen_abi_bad_r15(void);
void aesgen_abi_bad_rsp(void);   /* returns with rsp 16 bytes too low */
void aesgen_abi_bad_df(void);    /* returns with the direction flag set */
void aesgen_abi_bad_mxcsr(void); /* changes the rounding mode */
void aesgen_abi_bad_x87cw(void); /* changes the x87 precision control */
void aesgen_abi_bad_x87tag(void);/* leaves a value on the x87 stack */
void aesgen_abi_bad_frame(void); /* writes into its caller's frame */
/* A well-behaved function that clobbers every caller-saved register it may
 * (rax, rcx, rdx, rsi, rdi, r8-r11, xmm0-15, MXCSR status flags, flags) and
 * returns a0 ^ rol(a1, 8) ^ rol(a2, 16) ^ rol(a3, 24). */
uint64_t aesgen_abi_good_volatile(uint64_t a0, uint64_t a1, uint64_t a2, uint64_t a3);

/* Name of one AESGEN_ABI_* bit ("rbx", "direction flag", ...), or NULL. */
static inline const char *aesgen_abi_bit_name(unsigned bit) {
    switch (bit) {
    case AESGEN_ABI_RBX: return "rbx";
    case AESGEN_ABI_RBP: return "rbp";
    case AESGEN_ABI_R12: return "r12";
    case AESGEN_ABI_R13: return "r13";
    case AESGEN_ABI_R14: return "r14";
    case AESGEN_ABI_R15: return "r15";
    case AESGEN_ABI_RSP: return "rsp";
    case AESGEN_ABI_DF: return "direction flag (DF set on return)";
    case AESGEN_ABI_MXCSR: return "MXCSR control bits";
    case AESGEN_ABI_X87CW: return "x87 control word";
    case AESGEN_ABI_X87TAG: return "x87 tag word (x87/MMX stack not empty: missing EMMS?)";
    case AESGEN_ABI_FRAME:
        return "caller's stack frame (write above the return address and any stack arguments)";
    default: return 0;
    }
}
#endif

#ifdef __cplusplus
} /* extern "C" */

#include <string>

/* "rbx, r12" (or "x19, d8") for a mask; "none" for 0. */
inline std::string aesgen_abi_describe(uint64_t mask) {
    if (mask == 0) return "none";
    std::string s;
    for (unsigned bit = 1; bit <= AESGEN_ABI_ALL; bit <<= 1) {
        if (!(mask & bit)) continue;
        if (!s.empty()) s += ", ";
        s += aesgen_abi_bit_name(bit);
    }
    if (mask & ~static_cast<uint64_t>(AESGEN_ABI_ALL)) {
        if (!s.empty()) s += ", ";
        s += "unknown bits";
    }
    return s;
}
#endif /* __cplusplus */
#endif /* !__ASSEMBLER__ */
#endif /* AESGEN_HARNESS_ABI_CHECK_H */
