/*
 * abi_check_aarch64.S: AAPCS64 (Linux, ELF) calling-convention checker for
 * the aesgen test harness.  See abi_check.h for what is checked and why.
 *
 *   uint64_t aesgen_abi_call4(const void *fn, uint64_t a0, uint64_t a1,
 *                             uint64_t a2, uint64_t a3, uint64_t *ret);
 *                 x0 = fn, x1 = a0, x2 = a1, x3 = a2, x4 = a3, x5 = ret
 *
 * Frame (FRAME bytes, 16-byte aligned, so the callee sees an aligned sp):
 *
 *      0(sp) .. 31(sp)  four canary words: the callee's incoming sp points
 *                       at the first, so any write into its caller's frame
 *                       lands here first
 *     32(sp)            ret pointer (x5)
 *     40(sp)            FPCR before the call
 *     48(sp) .. 127     x19 .. x28 of our caller
 *    128(sp) .. 191     d8 .. d15 of our caller
 *    192(sp), 200(sp)   x29, x30 of our caller
 *
 * The stack pointer the callee must hand back is also kept in the
 * thread-local word aesgen_abi_saved_sp (initial-exec TLS): if sp comes back
 * wrong, the frame cannot be found through it, so it is reloaded from there.
 *
 * Every global function starts with `bti c` (all are reached by BLR: the
 * trampoline from C through a pointer or a PLT, the self-test functions from
 * the trampoline), and the object carries the GNU property note that says
 * so, so a link whose every object is BTI-ready gets a BTI-enforced binary.
 */
#include "abi_check.h"

#if defined(__aarch64__) && defined(__ELF__)

#define FRAME       208
#define OFF_RET     32
#define OFF_FPCR    40

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

    .globl aesgen_abi_call4
    .type aesgen_abi_call4, %function
    .p2align 4
aesgen_abi_call4:
    .cfi_startproc
    bti c
    sub sp, sp, #FRAME
    .cfi_def_cfa_offset FRAME
    stp x29, x30, [sp, #192]
    .cfi_offset x29, -16
    .cfi_offset x30, -8
    stp x19, x20, [sp, #48]
    .cfi_offset x19, -160
    .cfi_offset x20, -152
    stp x21, x22, [sp, #64]
    .cfi_offset x21, -144
    .cfi_offset x22, -136
    stp x23, x24, [sp, #80]
    .cfi_offset x23, -128
    .cfi_offset x24, -120
    stp x25, x26, [sp, #96]
    .cfi_offset x25, -112
    .cfi_offset x26, -104
    stp x27, x28, [sp, #112]
    .cfi_offset x27, -96
    .cfi_offset x28, -88
    stp d8, d9, [sp, #128]
    .cfi_offset d8, -80
    .cfi_offset d9, -72
    stp d10, d11, [sp, #144]
    .cfi_offset d10, -64
    .cfi_offset d11, -56
    stp d12, d13, [sp, #160]
    .cfi_offset d12, -48
    .cfi_offset d13, -40
    stp d14, d15, [sp, #176]
    .cfi_offset d14, -32
    .cfi_offset d15, -24

    /* Canaries, the ret pointer and FPCR to compare against later. */
    adrp x9, abi_values
    add x9, x9, :lo12:abi_values
    ldp x10, x11, [x9, #V_CANARY]
    stp x10, x11, [sp, #0]
    ldp x10, x11, [x9, #V_CANARY + 16]
    stp x10, x11, [sp, #16]
    str x5, [sp, #OFF_RET]
    mrs x10, fpcr
    str x10, [sp, #OFF_FPCR]
    abi_saved_sp_addr x11, x12
    mov x12, sp
    str x12, [x11]

    /* Shift the arguments into place; fn goes to x16. */
    mov x16, x0
    mov x0, x1
    mov x1, x2
    mov x2, x3
    mov x3, x4

    /* Distinctive values in the callee-saved registers, junk elsewhere. */
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
    ldr x4, [x9, #V_JUNK]
    mov x5, x4
    mov x6, x4
    mov x7, x4
    mov x8, x4
    mov x10, x4
    mov x11, x4
    mov x12, x4
    mov x13, x4
    mov x14, x4
    mov x15, x4
    mov x17, x4
    mov x9, x4

    blr x16

    mov x9, x0                  /* the callee's return value */
    mov x10, #0                 /* the mask */

    /* sp first: everything else is found through it. */
    abi_saved_sp_addr x11, x12
    ldr x11, [x11]
    mov x12, sp
    cmp x12, x11
    b.eq 2f
    orr x10, x10, #AESGEN_ABI_SP
    mov sp, x11
2:
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
    abi_expect_frame 0, V_CANARY + 0
    abi_expect_frame 8, V_CANARY + 8
    abi_expect_frame 16, V_CANARY + 16
    abi_expect_frame 24, V_CANARY + 24

    /* Store the return value if asked to. */
    ldr x14, [sp, #OFF_RET]
    cbz x14, 4f
    str x9, [x14]
4:
    mov x0, x10
    ldp d14, d15, [sp, #176]
    ldp d12, d13, [sp, #160]
    ldp d10, d11, [sp, #144]
    ldp d8, d9, [sp, #128]
    ldp x27, x28, [sp, #112]
    ldp x25, x26, [sp, #96]
    ldp x23, x24, [sp, #80]
    ldp x21, x22, [sp, #64]
    ldp x19, x20, [sp, #48]
    ldp x29, x30, [sp, #192]
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

/* Legal: clobbers only what AAPCS64 lets a callee clobber (x1-x17, v0-v7,
 * v16-v31, the upper halves of v8-v15, the FPSR flags, NZCV) and returns
 * a0 ^ rol(a1, 8) ^ rol(a2, 16) ^ rol(a3, 24).  x18 is left alone: Linux
 * lets a callee use it, other platforms reserve it. */
abi_function aesgen_abi_good_volatile
    ror x1, x1, #56
    eor x0, x0, x1
    ror x2, x2, #48
    eor x0, x0, x2
    ror x3, x3, #40
    eor x0, x0, x3
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
    ret
    .size aesgen_abi_good_volatile, .-aesgen_abi_good_volatile

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
