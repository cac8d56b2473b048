/*
 * abi_check_aarch64.S: AAPCS64 (Linux, ELF) calling-convention checker for
 * the aesgen test harness.  See abi_check.h for what is checked and why.
 *
 *   uint64_t aesgen_abi_call(const void *fn, const uint64_t *args,
 *                            size_t nargs, uint64_t *ret);
 *                 x0 = fn, x1 = args, x2 = nargs, x3 = ret
 *   uint64_t aesgen_abi_call4(const void *fn, uint64_t a0, uint64_t a1,
 *                             uint64_t a2, uint64_t a3, uint64_t *ret);
 *                 x0 = fn, x1 = a0, x2 = a1, x3 = a2, x4 = a3, x5 = ret
 *
 * aesgen_abi_call4 stores its four arguments in a small frame of its own and
 * calls aesgen_abi_call with nargs = 4: one checker, one set of rules.
 *
 * aesgen_abi_call's frame (FRAME bytes, 16-byte aligned; sp is its base):
 *
 *      0(sp) .. 15(sp)   arguments 8 and 9, the ones AAPCS64 passes on the
 *                        stack (junk in the slots nargs does not fill)
 *     16(sp) .. 47(sp)   four canary words
 *     48(sp)             ret pointer
 *     56(sp)             FPCR before the call
 *     64(sp) .. 143      x19 .. x28 of our caller
 *    144(sp) .. 207      d8 .. d15 of our caller
 *    208(sp), 216(sp)    x29, x30 of our caller
 *    224(sp) .. 303      the ten argument words (args[0..nargs), junk after)
 *
 * With nargs > 8 the callee is called with sp at the base: its stack
 * arguments are at its incoming sp and the canaries just above them.  With
 * nargs <= 8 it is called with sp at base + 16, so its incoming sp points at
 * the first canary, where aesgen_abi_call4 always had them.  Either way a
 * callee may read (and, as the ABI gives them to it, write) its stack
 * arguments, and a write into the first words of its caller's frame above
 * them hits a canary.  sp is put back to the base right after the call, so
 * every check finds the frame at the same place.
 *
 * The base is also kept in the thread-local word aesgen_abi_saved_sp
 * (initial-exec TLS): if sp comes back wrong, the frame cannot be found
 * through it, so it is reloaded from there.
 *
 * Every global function starts with `bti c` (all are reached by BLR: the
 * trampoline from C through a pointer or a PLT, the self-test functions from
 * the trampoline), and the object carries the GNU property note that says
 * so, so a link whose every object is BTI-ready gets a BTI-enforced binary.
 */
#include "abi_check.h"

#if defined(__aarch64__) && defined(__ELF__)

#define FRAME       304
#define OFF_CANARY  16
#define OFF_RET     48
#define OFF_FPCR    56
#define OFF_X19     64
#define OFF_D8      144
#define OFF_X29     208
#define OFF_ARGV    224
#define REG_ARGS    8           /* x0 .. x7 */
#define STACK_ARGS  16          /* bytes for arguments 8 and 9 */

/* Offsets into abi_values below. */
#define V_X19       0           /* x19 .. x28: 0 .. 72 */
#define V_X29       80
#define V_D8        88          /* d8 .. d15: 88 .. 144 */
#define V_CANARY    152         /* four words: 152 .. 176 */
#define V_JUNK      184

    .section .rodata
    .p2align 4
    .type abi_values, %object
abi_values:
    .quad 0x4d2f13a7e5c1b019, 0x7c3e91d05a2b6020   /* x19, x20 */
    .quad 0x1a5c7e9b3d2f4821, 0x6e8b2d4f1c7a3922   /* x21, x22 */
    .quad 0x29d4b6f8a13c5e23, 0x58f1a3c7e92b4d24   /* x23, x24 */
    .quad 0x3b7e05c9d1f2a825, 0x0f6a8c2e4d1b7926   /* x25, x26 */
    .quad 0x71c3e5a7b9d0f227, 0x2c4e6a8b0d1f3528   /* x27, x28 */
    .quad 0x5e7f9a1b3c5d7f29                       /* x29 */
    .quad 0x3ff1d2c3b4a59608, 0xc00e1d2c3b4a5909   /* d8, d9 (as bits) */
    .quad 0x4011223344556610, 0xbfe9876543210f11   /* d10, d11 */
    .quad 0x7ff8dead0000be12, 0x0000000000000d13   /* d12 (a NaN), d13 (subnormal) */
    .quad 0x8000000000000014, 0x4a5b6c7d8e9faf15   /* d14, d15 */
    .quad 0x0ca9a11e5eed0001, 0x0ca9a11e5eed0102   /* canaries */
    .quad 0x0ca9a11e5eed0203, 0x0ca9a11e5eed0304
    .quad 0x8badf00d00c0ffee                       /* junk for caller-saved registers */
    .size abi_values, .-abi_values

    .section .tbss,"awT",%nobits
    .p2align 3
    .type aesgen_abi_saved_sp, %object
    .size aesgen_abi_saved_sp, 8
aesgen_abi_saved_sp:
    .zero 8
    /* What the callee left: its vector registers and the stack below our frame. */
    .globl aesgen_abi_vectors
    .p2align 6
    .type aesgen_abi_vectors, %object
    .size aesgen_abi_vectors, AESGEN_ABI_VECTOR_DUMP
aesgen_abi_vectors:
    .zero AESGEN_ABI_VECTOR_DUMP
    .globl aesgen_abi_stack
    .type aesgen_abi_stack, %object
    .size aesgen_abi_stack, AESGEN_ABI_STACK_DUMP
aesgen_abi_stack:
    .zero AESGEN_ABI_STACK_DUMP

    .data
    .globl aesgen_abi_vector_bytes
    .p2align 2
    .type aesgen_abi_vector_bytes, %object
    .size aesgen_abi_vector_bytes, 4
aesgen_abi_vector_bytes:        /* 0: no dump; else the 32 q registers are dumped */
    .word 0

    .text

/* \dst = &aesgen_abi_saved_sp of this thread.  Clobbers \tmp. */
.macro abi_saved_sp_addr dst, tmp
    mrs \tmp, tpidr_el0
    adrp \dst, :gottprel:aesgen_abi_saved_sp
    ldr \dst, [\dst, #:gottprel_lo12:aesgen_abi_saved_sp]
    add \dst, \dst, \tmp
.endm

/* Set \bit in x10 unless general register \reg equals the word at
 * [x13, #\off].  Clobbers x14. */
.macro abi_expect_x reg, off, bit
    ldr x14, [x13, #\off]
    cmp \reg, x14
    b.eq 1f
    orr x10, x10, #\bit
1:
.endm

/* The same for the low 64 bits of a SIMD&FP register.  Clobbers x14, x15. */
.macro abi_expect_d reg, off, bit
    fmov x15, \reg
    abi_expect_x x15, \off, \bit
.endm

/* The same for a word of our frame. Clobbers x14, x15. */
.macro abi_expect_frame off, voff
    ldr x15, [sp, #\off]
    abi_expect_x x15, \voff, AESGEN_ABI_FRAME
.endm

    .globl aesgen_abi_call
    .type aesgen_abi_call, %function
    .p2align 4
aesgen_abi_call:
    .cfi_startproc
    bti c
.Labi_call:                     /* aesgen_abi_call4 comes in here */
    sub sp, sp, #FRAME
    .cfi_def_cfa_offset FRAME
    stp x29, x30, [sp, #OFF_X29]
    .cfi_offset x29, OFF_X29 - FRAME
    .cfi_offset x30, OFF_X29 + 8 - FRAME
    stp x19, x20, [sp, #OFF_X19]
    .cfi_offset x19, OFF_X19 - FRAME
    .cfi_offset x20, OFF_X19 + 8 - FRAME
    stp x21, x22, [sp, #OFF_X19 + 16]
    .cfi_offset x21, OFF_X19 + 16 - FRAME
    .cfi_offset x22, OFF_X19 + 24 - FRAME
    stp x23, x24, [sp, #OFF_X19 + 32]
    .cfi_offset x23, OFF_X19 + 32 - FRAME
    .cfi_offset x24, OFF_X19 + 40 - FRAME
    stp x25, x26, [sp, #OFF_X19 + 48]
    .cfi_offset x25, OFF_X19 + 48 - FRAME
    .cfi_offset x26, OFF_X19 + 56 - FRAME
    stp x27, x28, [sp, #OFF_X19 + 64]
    .cfi_offset x27, OFF_X19 + 64 - FRAME
    .cfi_offset x28, OFF_X19 + 72 - FRAME
    stp d8, d9, [sp, #OFF_D8]
    .cfi_offset d8, OFF_D8 - FRAME
    .cfi_offset d9, OFF_D8 + 8 - FRAME
    stp d10, d11, [sp, #OFF_D8 + 16]
    .cfi_offset d10, OFF_D8 + 16 - FRAME
    .cfi_offset d11, OFF_D8 + 24 - FRAME
    stp d12, d13, [sp, #OFF_D8 + 32]
    .cfi_offset d12, OFF_D8 + 32 - FRAME
    .cfi_offset d13, OFF_D8 + 40 - FRAME
    stp d14, d15, [sp, #OFF_D8 + 48]
    .cfi_offset d14, OFF_D8 + 48 - FRAME
    .cfi_offset d15, OFF_D8 + 56 - FRAME

    /* nargs = min(nargs, 10), kept in x15 until the call. */
    mov x15, #AESGEN_ABI_MAX_ARGS
    cmp x2, x15
    csel x15, x2, x15, ls
    adrp x9, abi_values
    add x9, x9, :lo12:abi_values

    /* The ten argument words: args[0..nargs), then a junk word a slot. */
    ldr x10, [x9, #V_JUNK]
    add x11, sp, #OFF_ARGV
    mov x12, #0
1:
    add x13, x10, x12
    cmp x12, x15
    b.hs 2f
    ldr x13, [x1, x12, lsl #3]
2:
    str x13, [x11, x12, lsl #3]
    add x12, x12, #1
    cmp x12, #AESGEN_ABI_MAX_ARGS
    b.lo 1b
    /* Arguments 8 and 9 where the callee finds them when nargs > 8. */
    ldp x13, x14, [x11, #64]
    stp x13, x14, [sp, #0]

    /* Canaries, the ret pointer and FPCR to compare against later. */
    ldp x10, x11, [x9, #V_CANARY]
    stp x10, x11, [sp, #OFF_CANARY]
    ldp x10, x11, [x9, #V_CANARY + 16]
    stp x10, x11, [sp, #OFF_CANARY + 16]
    str x3, [sp, #OFF_RET]
    mrs x10, fpcr
    str x10, [sp, #OFF_FPCR]
    abi_saved_sp_addr x11, x12
    mov x12, sp
    str x12, [x11]

    /* fn goes to x16. */
    mov x16, x0

    /* For the scrub check: the stack below our frame (where the callee's frame goes) and
     * the vector registers zeroed (d8-d15 get their values below), so what is found there
     * after the call is the callee's. */
    adrp x12, aesgen_abi_vector_bytes
    ldr w12, [x12, :lo12:aesgen_abi_vector_bytes]
    cbz w12, 76f
    sub x12, sp, #AESGEN_ABI_STACK_DUMP
    mov x13, sp
70:
    stp xzr, xzr, [x12], #16
    cmp x12, x13
    b.lo 70b
    movi v0.16b, #0
    movi v1.16b, #0
    movi v2.16b, #0
    movi v3.16b, #0
    movi v4.16b, #0
    movi v5.16b, #0
    movi v6.16b, #0
    movi v7.16b, #0
    movi v8.16b, #0
    movi v9.16b, #0
    movi v10.16b, #0
    movi v11.16b, #0
    movi v12.16b, #0
    movi v13.16b, #0
    movi v14.16b, #0
    movi v15.16b, #0
    movi v16.16b, #0
    movi v17.16b, #0
    movi v18.16b, #0
    movi v19.16b, #0
    movi v20.16b, #0
    movi v21.16b, #0
    movi v22.16b, #0
    movi v23.16b, #0
    movi v24.16b, #0
    movi v25.16b, #0
    movi v26.16b, #0
    movi v27.16b, #0
    movi v28.16b, #0
    movi v29.16b, #0
    movi v30.16b, #0
    movi v31.16b, #0
76:

    /* Distinctive values in the callee-saved registers. */
    ldp x19, x20, [x9, #V_X19]
    ldp x21, x22, [x9, #V_X19 + 16]
    ldp x23, x24, [x9, #V_X19 + 32]
    ldp x25, x26, [x9, #V_X19 + 48]
    ldp x27, x28, [x9, #V_X19 + 64]
    ldr x29, [x9, #V_X29]
    ldp d8, d9, [x9, #V_D8]
    ldp d10, d11, [x9, #V_D8 + 16]
    ldp d12, d13, [x9, #V_D8 + 32]
    ldp d14, d15, [x9, #V_D8 + 48]

    /* The register arguments, junk elsewhere.  From the cmp to the b.hi
     * below only loads and moves, which leave the flags alone. */
    add x17, sp, #OFF_ARGV
    cmp x15, #REG_ARGS
    ldp x0, x1, [x17]
    ldp x2, x3, [x17, #16]
    ldp x4, x5, [x17, #32]
    ldp x6, x7, [x17, #48]
    ldr x8, [x9, #V_JUNK]
    mov x10, x8
    mov x11, x8
    mov x12, x8
    mov x13, x8
    mov x14, x8
    mov x15, x8
    mov x17, x8
    mov x9, x8

    b.hi 8f
    /* No stack argument: the callee's incoming sp points at the canaries. */
    add sp, sp, #STACK_ARGS
    .cfi_def_cfa_offset FRAME - STACK_ARGS
    blr x16
    sub sp, sp, #STACK_ARGS
    .cfi_def_cfa_offset FRAME
    b 9f
8:
    blr x16
9:
    mov x9, x0                  /* the callee's return value */
    mov x10, #0                 /* the mask */

    /* For the scrub check: the callee's vector registers into this thread's dump. */
    adrp x11, aesgen_abi_vector_bytes
    ldr w11, [x11, :lo12:aesgen_abi_vector_bytes]
    cbz w11, 79f
    mrs x12, tpidr_el0
    adrp x11, :gottprel:aesgen_abi_vectors
    ldr x11, [x11, #:gottprel_lo12:aesgen_abi_vectors]
    add x11, x11, x12
    stp q0, q1, [x11, #0]
    stp q2, q3, [x11, #32]
    stp q4, q5, [x11, #64]
    stp q6, q7, [x11, #96]
    stp q8, q9, [x11, #128]
    stp q10, q11, [x11, #160]
    stp q12, q13, [x11, #192]
    stp q14, q15, [x11, #224]
    stp q16, q17, [x11, #256]
    stp q18, q19, [x11, #288]
    stp q20, q21, [x11, #320]
    stp q22, q23, [x11, #352]
    stp q24, q25, [x11, #384]
    stp q26, q27, [x11, #416]
    stp q28, q29, [x11, #448]
    stp q30, q31, [x11, #480]
79:

    /* sp first: everything else is found through it. */
    abi_saved_sp_addr x11, x12
    ldr x11, [x11]
    mov x12, sp
    cmp x12, x11
    b.eq 2f
    orr x10, x10, #AESGEN_ABI_SP
    mov sp, x11
2:
    /* ... and the stack below our frame. */
    adrp x11, aesgen_abi_vector_bytes
    ldr w11, [x11, :lo12:aesgen_abi_vector_bytes]
    cbz w11, 78f
    mrs x12, tpidr_el0
    adrp x11, :gottprel:aesgen_abi_stack
    ldr x11, [x11, #:gottprel_lo12:aesgen_abi_stack]
    add x11, x11, x12
    sub x12, sp, #AESGEN_ABI_STACK_DUMP
    mov x17, #(AESGEN_ABI_STACK_DUMP / 16)
77:
    ldp x14, x15, [x12], #16
    stp x14, x15, [x11], #16
    subs x17, x17, #1
    b.ne 77b
78:
    adrp x13, abi_values
    add x13, x13, :lo12:abi_values
    abi_expect_x x19, V_X19 + 0, AESGEN_ABI_X19
    abi_expect_x x20, V_X19 + 8, AESGEN_ABI_X20
    abi_expect_x x21, V_X19 + 16, AESGEN_ABI_X21
    abi_expect_x x22, V_X19 + 24, AESGEN_ABI_X22
    abi_expect_x x23, V_X19 + 32, AESGEN_ABI_X23
    abi_expect_x x24, V_X19 + 40, AESGEN_ABI_X24
    abi_expect_x x25, V_X19 + 48, AESGEN_ABI_X25
    abi_expect_x x26, V_X19 + 56, AESGEN_ABI_X26
    abi_expect_x x27, V_X19 + 64, AESGEN_ABI_X27
    abi_expect_x x28, V_X19 + 72, AESGEN_ABI_X28
    abi_expect_x x29, V_X29, AESGEN_ABI_X29
    abi_expect_d d8, V_D8 + 0, AESGEN_ABI_D8
    abi_expect_d d9, V_D8 + 8, AESGEN_ABI_D9
    abi_expect_d d10, V_D8 + 16, AESGEN_ABI_D10
    abi_expect_d d11, V_D8 + 24, AESGEN_ABI_D11
    abi_expect_d d12, V_D8 + 32, AESGEN_ABI_D12
    abi_expect_d d13, V_D8 + 40, AESGEN_ABI_D13
    abi_expect_d d14, V_D8 + 48, AESGEN_ABI_D14
    abi_expect_d d15, V_D8 + 56, AESGEN_ABI_D15

    /* FPCR (rounding mode, flush-to-zero, default NaN, ...): callee-saved.
     * FPSR (the cumulative exception flags) is not, and is not looked at. */
    mrs x14, fpcr
    ldr x15, [sp, #OFF_FPCR]
    cmp x14, x15
    b.eq 3f
    orr x10, x10, #AESGEN_ABI_FPCR
    msr fpcr, x15
3:
    /* Canaries in our frame. */
    abi_expect_frame OFF_CANARY + 0, V_CANARY + 0
    abi_expect_frame OFF_CANARY + 8, V_CANARY + 8
    abi_expect_frame OFF_CANARY + 16, V_CANARY + 16
    abi_expect_frame OFF_CANARY + 24, V_CANARY + 24

    /* Store the return value if asked to. */
    ldr x14, [sp, #OFF_RET]
    cbz x14, 4f
    str x9, [x14]
4:
    mov x0, x10
    ldp d14, d15, [sp, #OFF_D8 + 48]
    ldp d12, d13, [sp, #OFF_D8 + 32]
    ldp d10, d11, [sp, #OFF_D8 + 16]
    ldp d8, d9, [sp, #OFF_D8]
    ldp x27, x28, [sp, #OFF_X19 + 64]
    ldp x25, x26, [sp, #OFF_X19 + 48]
    ldp x23, x24, [sp, #OFF_X19 + 32]
    ldp x21, x22, [sp, #OFF_X19 + 16]
    ldp x19, x20, [sp, #OFF_X19]
    ldp x29, x30, [sp, #OFF_X29]
    add sp, sp, #FRAME
    .cfi_def_cfa_offset 0
    .cfi_restore x19
    .cfi_restore x20
    .cfi_restore x21
    .cfi_restore x22
    .cfi_restore x23
    .cfi_restore x24
    .cfi_restore x25
    .cfi_restore x26
    .cfi_restore x27
    .cfi_restore x28
    .cfi_restore x29
    .cfi_restore x30
    .cfi_restore d8
    .cfi_restore d9
    .cfi_restore d10
    .cfi_restore d11
    .cfi_restore d12
    .cfi_restore d13
    .cfi_restore d14
    .cfi_restore d15
    ret
    .cfi_endproc
    .size aesgen_abi_call, .-aesgen_abi_call

/* aesgen_abi_call4: the four arguments into a frame of ours, then the
 * checker above with nargs = 4 (ret stays the last argument). */
    .globl aesgen_abi_call4
    .type aesgen_abi_call4, %function
    .p2align 4
aesgen_abi_call4:
    .cfi_startproc
    bti c
    stp x29, x30, [sp, #-48]!
    .cfi_def_cfa_offset 48
    .cfi_offset x29, -48
    .cfi_offset x30, -40
    stp x1, x2, [sp, #16]
    stp x3, x4, [sp, #32]
    add x1, sp, #16             /* args */
    mov x2, #4                  /* nargs */
    mov x3, x5                  /* ret; x0 = fn already */
    bl .Labi_call
    ldp x29, x30, [sp], #48
    .cfi_def_cfa_offset 0
    .cfi_restore x29
    .cfi_restore x30
    ret
    .cfi_endproc
    .size aesgen_abi_call4, .-aesgen_abi_call4

/* ---- Self-test functions: each breaks one rule and returns. ---- */

.macro abi_function name
    .globl \name
    .type \name, %function
    .p2align 4
\name:
    bti c
.endm

.macro abi_bad_x name, reg
abi_function \name
    eor \reg, \reg, #1
    ret
    .size \name, .-\name
.endm

.macro abi_bad_d name, reg
abi_function \name
    fneg \reg, \reg             /* flips the sign bit, whatever the value */
    ret
    .size \name, .-\name
.endm

abi_bad_x aesgen_abi_bad_x19, x19
abi_bad_x aesgen_abi_bad_x20, x20
abi_bad_x aesgen_abi_bad_x21, x21
abi_bad_x aesgen_abi_bad_x22, x22
abi_bad_x aesgen_abi_bad_x23, x23
abi_bad_x aesgen_abi_bad_x24, x24
abi_bad_x aesgen_abi_bad_x25, x25
abi_bad_x aesgen_abi_bad_x26, x26
abi_bad_x aesgen_abi_bad_x27, x27
abi_bad_x aesgen_abi_bad_x28, x28
abi_bad_x aesgen_abi_bad_x29, x29
abi_bad_d aesgen_abi_bad_d8, d8
abi_bad_d aesgen_abi_bad_d9, d9
abi_bad_d aesgen_abi_bad_d10, d10
abi_bad_d aesgen_abi_bad_d11, d11
abi_bad_d aesgen_abi_bad_d12, d12
abi_bad_d aesgen_abi_bad_d13, d13
abi_bad_d aesgen_abi_bad_d14, d14
abi_bad_d aesgen_abi_bad_d15, d15

abi_function aesgen_abi_bad_sp
    sub sp, sp, #16             /* returns with sp 16 bytes low */
    ret
    .size aesgen_abi_bad_sp, .-aesgen_abi_bad_sp

abi_function aesgen_abi_bad_fpcr
    mrs x9, fpcr
    eor x9, x9, #(1 << 22)      /* flips the low bit of the rounding mode */
    msr fpcr, x9
    ret
    .size aesgen_abi_bad_fpcr, .-aesgen_abi_bad_fpcr

abi_function aesgen_abi_bad_frame
    ldr x9, [sp, #8]            /* a word of the caller's frame */
    mvn x9, x9
    str x9, [sp, #8]
    ret
    .size aesgen_abi_bad_frame, .-aesgen_abi_bad_frame

/* Clobber every register AAPCS64 lets a callee clobber but x0 (x1-x17,
 * v0-v7, v16-v31, the upper halves of v8-v15, the FPSR flags, NZCV).  x18 is
 * left alone: Linux lets a callee use it, other platforms reserve it. */
.macro abi_clobber_volatile
    mov x1, #-1
    mov x2, #-1
    mov x3, #-1
    mov x4, #-1
    mov x5, #-1
    mov x6, #-1
    mov x7, #-1
    mov x8, #-1
    mov x9, #-1
    mov x10, #-1
    mov x11, #-1
    mov x12, #-1
    mov x13, #-1
    mov x14, #-1
    mov x15, #-1
    mov x16, #-1
    mov x17, #-1
    movi v0.2d, #0xffffffffffffffff
    movi v1.2d, #0xffffffffffffffff
    movi v2.2d, #0xffffffffffffffff
    movi v3.2d, #0xffffffffffffffff
    movi v4.2d, #0xffffffffffffffff
    movi v5.2d, #0xffffffffffffffff
    movi v6.2d, #0xffffffffffffffff
    movi v7.2d, #0xffffffffffffffff
    movi v16.2d, #0xffffffffffffffff
    movi v17.2d, #0xffffffffffffffff
    movi v18.2d, #0xffffffffffffffff
    movi v19.2d, #0xffffffffffffffff
    movi v20.2d, #0xffffffffffffffff
    movi v21.2d, #0xffffffffffffffff
    movi v22.2d, #0xffffffffffffffff
    movi v23.2d, #0xffffffffffffffff
    movi v24.2d, #0xffffffffffffffff
    movi v25.2d, #0xffffffffffffffff
    movi v26.2d, #0xffffffffffffffff
    movi v27.2d, #0xffffffffffffffff
    movi v28.2d, #0xffffffffffffffff
    movi v29.2d, #0xffffffffffffffff
    movi v30.2d, #0xffffffffffffffff
    movi v31.2d, #0xffffffffffffffff
    mov v8.d[1], x1             /* upper halves of v8-v15 are caller-saved */
    mov v9.d[1], x1
    mov v10.d[1], x1
    mov v11.d[1], x1
    mov v12.d[1], x1
    mov v13.d[1], x1
    mov v14.d[1], x1
    mov v15.d[1], x1
    mrs x9, fpsr                /* set the sticky "inexact" flag: */
    orr x9, x9, #0x10           /* FPSR is not callee-saved */
    msr fpsr, x9
    cmp x9, x9                  /* and the flags */
.endm

/* Legal: clobbers only what AAPCS64 lets a callee clobber and returns
 * a0 ^ rol(a1, 8) ^ rol(a2, 16) ^ rol(a3, 24). */
abi_function aesgen_abi_good_volatile
    ror x1, x1, #56
    eor x0, x0, x1
    ror x2, x2, #48
    eor x0, x0, x2
    ror x3, x3, #40
    eor x0, x0, x3
    abi_clobber_volatile
    ret
    .size aesgen_abi_good_volatile, .-aesgen_abi_good_volatile

/* For the scrub check's own test: leave the 16 bytes at x0 in v5; leave them on the stack
 * below sp and in no register. Both legal for the convention, both leaks. */
abi_function aesgen_abi_leave_xmm5
    ldr q5, [x0]
    ret
    .size aesgen_abi_leave_xmm5, .-aesgen_abi_leave_xmm5
abi_function aesgen_abi_leave_stack
    ldr q0, [x0]
    stur q0, [sp, #-72]
    movi v0.16b, #0
    ret
    .size aesgen_abi_leave_stack, .-aesgen_abi_leave_stack

/* Legal: reads all ten arguments (a8, a9 from the stack, at the incoming sp)
 * and returns the XOR of rol(a_i, 6 i). */
abi_function aesgen_abi_good_args10
    ror x1, x1, #58
    eor x0, x0, x1
    ror x2, x2, #52
    eor x0, x0, x2
    ror x3, x3, #46
    eor x0, x0, x3
    ror x4, x4, #40
    eor x0, x0, x4
    ror x5, x5, #34
    eor x0, x0, x5
    ror x6, x6, #28
    eor x0, x0, x6
    ror x7, x7, #22
    eor x0, x0, x7
    ldp x8, x9, [sp]
    ror x8, x8, #16
    eor x0, x0, x8
    ror x9, x9, #10
    eor x0, x0, x9
    abi_clobber_volatile
    ret
    .size aesgen_abi_good_args10, .-aesgen_abi_good_args10

/* Legal: overwrites its two stack arguments (the ABI gives the argument
 * area to the callee). */
abi_function aesgen_abi_good_args10_write
    ldp x9, x10, [sp]
    mvn x9, x9
    mvn x10, x10
    stp x9, x10, [sp]
    mov x0, #0
    ret
    .size aesgen_abi_good_args10_write, .-aesgen_abi_good_args10_write

/* Called with ten arguments, writes the word just above its two stack
 * arguments: its caller's frame. */
abi_function aesgen_abi_args10_bad_frame
    ldr x9, [sp, #16]
    mvn x9, x9
    str x9, [sp, #16]
    ret
    .size aesgen_abi_args10_bad_frame, .-aesgen_abi_args10_bad_frame

/* Mark the object BTI compatible (GNU_PROPERTY_AARCH64_FEATURE_1_AND, bit 0
 * = BTI), as -mbranch-protection=bti does for C. */
    .section .note.gnu.property,"a"
    .p2align 3
    .long 4                     /* name size ("GNU\0") */
    .long 16                    /* descriptor size */
    .long 5                     /* NT_GNU_PROPERTY_TYPE_0 */
    .asciz "GNU"
    .long 0xc0000000            /* GNU_PROPERTY_AARCH64_FEATURE_1_AND */
    .long 4
    .long 1                     /* GNU_PROPERTY_AARCH64_FEATURE_1_BTI */
    .long 0                     /* pad to 8 bytes */

#endif /* __aarch64__ && __ELF__ */

    .section .note.GNU-stack,"",%progbits
