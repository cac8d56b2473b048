/*
 * abi_check_x86_64.S: System V AMD64 calling-convention checker for the
 * aesgen test harness.  See abi_check.h for what is checked and why.
 *
 *   uint64_t aesgen_abi_call4(const void *fn, uint64_t a0, uint64_t a1,
 *                             uint64_t a2, uint64_t a3, uint64_t *ret);
 *                 rdi = fn, rsi = a0, rdx = a1, rcx = a2, r8 = a3, r9 = ret
 *
 * Frame after the six pushes and `sub $FRAME, %rsp` (rsp is 16-byte aligned
 * here, so the callee sees the ABI's alignment):
 *
 *     0(%rsp) .. 31(%rsp)  four canary words; the callee's return address
 *                          sits just below them, so a write "above" it lands
 *                          here first
 *    32(%rsp)              ret pointer (r9)
 *    40(%rsp)              MXCSR before the call (4 bytes)
 *    44(%rsp)              x87 control word before the call (2 bytes)
 *    48(%rsp)              MXCSR after the call
 *    52(%rsp)              x87 control word after the call
 *    56(%rsp) .. 83(%rsp)  fnstenv image after the call (28 bytes)
 *
 * The stack pointer the callee must hand back is also kept in the
 * thread-local word aesgen_abi_saved_rsp: if rsp comes back wrong, the
 * frame above cannot be found through it, so it is reloaded from there.
 */
#include "abi_check.h"

#if defined(__x86_64__) && defined(__ELF__)

#define FRAME       120
#define CANARY0     0x0ca9a11e5eed0001
#define CANARY1     0x0ca9a11e5eed0102
#define CANARY2     0x0ca9a11e5eed0203
#define CANARY3     0x0ca9a11e5eed0304
#define VAL_RBX     0x4d2f13a7e5c1b08b
#define VAL_RBP     0x7c3e91d05a2b6f14
#define VAL_R12     0x1a5c7e9b3d2f4861
#define VAL_R13     0x6e8b2d4f1c7a3950
#define VAL_R14     0x29d4b6f8a13c5e70
#define VAL_R15     0x58f1a3c7e92b4d06
#define MXCSR_CONTROL 0xffc0      /* all MXCSR bits but the six status flags */
#define EFLAGS_DF   0x400

    .section .tbss,"awT",@nobits
    .p2align 3
    .type aesgen_abi_saved_rsp, @object
    .size aesgen_abi_saved_rsp, 8
aesgen_abi_saved_rsp:
    .zero 8

    .text

/* Set bit \bit in %r10d unless \reg still holds \val.  Clobbers %r11. */
.macro abi_expect reg, val, bit
    movabsq $\val, %r11
    cmpq %r11, \reg
    je 1f
    orl $\bit, %r10d
1:
.endm

    .globl aesgen_abi_call4
    .type aesgen_abi_call4, @function
    .p2align 4
aesgen_abi_call4:
    .cfi_startproc
    endbr64
    pushq %rbp
    .cfi_adjust_cfa_offset 8
    .cfi_offset %rbp, -16
    pushq %rbx
    .cfi_adjust_cfa_offset 8
    .cfi_offset %rbx, -24
    pushq %r12
    .cfi_adjust_cfa_offset 8
    .cfi_offset %r12, -32
    pushq %r13
    .cfi_adjust_cfa_offset 8
    .cfi_offset %r13, -40
    pushq %r14
    .cfi_adjust_cfa_offset 8
    .cfi_offset %r14, -48
    pushq %r15
    .cfi_adjust_cfa_offset 8
    .cfi_offset %r15, -56
    subq $FRAME, %rsp
    .cfi_adjust_cfa_offset FRAME

    /* Canaries, the ret pointer and the state to compare against. */
    movabsq $CANARY0, %rax
    movq %rax, 0(%rsp)
    movabsq $CANARY1, %rax
    movq %rax, 8(%rsp)
    movabsq $CANARY2, %rax
    movq %rax, 16(%rsp)
    movabsq $CANARY3, %rax
    movq %rax, 24(%rsp)
    movq %r9, 32(%rsp)
    stmxcsr 40(%rsp)
    fnstcw 44(%rsp)
    movq aesgen_abi_saved_rsp@gottpoff(%rip), %rax
    movq %rsp, %fs:(%rax)

    /* Shift the arguments into place; fn goes to r11. */
    movq %rdi, %r11
    movq %rsi, %rdi
    movq %rdx, %rsi
    movq %rcx, %rdx
    movq %r8, %rcx

    /* Distinctive values in the callee-saved registers, junk elsewhere. */
    movabsq $VAL_RBX, %rbx
    movabsq $VAL_RBP, %rbp
    movabsq $VAL_R12, %r12
    movabsq $VAL_R13, %r13
    movabsq $VAL_R14, %r14
    movabsq $VAL_R15, %r15
    movabsq $0x8badf00d00c0ffee, %rax
    movabsq $0xfeedfacedeadbeef, %r8
    movabsq $0xa5a5a5a5a5a5a5a5, %r9
    movabsq $0x5a5a5a5a5a5a5a5a, %r10

    callq *%r11

    movq %rax, %r9              /* the callee's return value */
    xorl %r10d, %r10d           /* the mask */

    /* rsp first: everything else is found through it. */
    movq aesgen_abi_saved_rsp@gottpoff(%rip), %r11
    movq %fs:(%r11), %r11
    cmpq %r11, %rsp
    je 2f
    orl $AESGEN_ABI_RSP, %r10d
    movq %r11, %rsp
2:
    abi_expect %rbx, VAL_RBX, AESGEN_ABI_RBX
    abi_expect %rbp, VAL_RBP, AESGEN_ABI_RBP
    abi_expect %r12, VAL_R12, AESGEN_ABI_R12
    abi_expect %r13, VAL_R13, AESGEN_ABI_R13
    abi_expect %r14, VAL_R14, AESGEN_ABI_R14
    abi_expect %r15, VAL_R15, AESGEN_ABI_R15

    /* Direction flag: must be clear on return. */
    pushfq
    popq %r11
    testl $EFLAGS_DF, %r11d
    jz 3f
    orl $AESGEN_ABI_DF, %r10d
    cld
3:
    /* MXCSR control bits. */
    stmxcsr 48(%rsp)
    movl 48(%rsp), %r11d
    xorl 40(%rsp), %r11d
    testl $MXCSR_CONTROL, %r11d
    jz 4f
    orl $AESGEN_ABI_MXCSR, %r10d
    ldmxcsr 40(%rsp)
4:
    /* x87 control word. */
    fnstcw 52(%rsp)
    movzwl 52(%rsp), %r11d
    movzwl 44(%rsp), %eax
    cmpl %eax, %r11d
    je 5f
    orl $AESGEN_ABI_X87CW, %r10d
    fldcw 44(%rsp)
5:
    /* x87 tag word: 0xffff means every register is empty. fnstenv masks
     * all x87 exceptions as a side effect, so fldenv puts the image back. */
    fnstenv 56(%rsp)
    movzwl 64(%rsp), %r11d      /* tag word at offset 8 of the image */
    fldenv 56(%rsp)
    cmpl $0xffff, %r11d
    je 6f
    orl $AESGEN_ABI_X87TAG, %r10d
    emms                        /* empty the stack for our caller */
6:
    /* Canaries in our frame. */
    abi_expect 0(%rsp), CANARY0, AESGEN_ABI_FRAME
    abi_expect 8(%rsp), CANARY1, AESGEN_ABI_FRAME
    abi_expect 16(%rsp), CANARY2, AESGEN_ABI_FRAME
    abi_expect 24(%rsp), CANARY3, AESGEN_ABI_FRAME

    /* Store the return value if asked to. */
    movq 32(%rsp), %r11
    testq %r11, %r11
    jz 7f
    movq %r9, (%r11)
7:
    movl %r10d, %eax
    addq $FRAME, %rsp
    .cfi_adjust_cfa_offset -FRAME
    popq %r15
    .cfi_adjust_cfa_offset -8
    .cfi_restore %r15
    popq %r14
    .cfi_adjust_cfa_offset -8
    .cfi_restore %r14
    popq %r13
    .cfi_adjust_cfa_offset -8
    .cfi_restore %r13
    popq %r12
    .cfi_adjust_cfa_offset -8
    .cfi_restore %r12
    popq %rbx
    .cfi_adjust_cfa_offset -8
    .cfi_restore %rbx
    popq %rbp
    .cfi_adjust_cfa_offset -8
    .cfi_restore %rbp
    ret
    .cfi_endproc
    .size aesgen_abi_call4, .-aesgen_abi_call4

/* ---- Self-test functions: each breaks one rule and returns. ---- */

.macro abi_bad_function name
    .globl \name
    .type \name, @function
    .p2align 4
\name:
    endbr64
.endm

abi_bad_function aesgen_abi_bad_rbx
    xorl %ebx, %ebx
    ret
    .size aesgen_abi_bad_rbx, .-aesgen_abi_bad_rbx

abi_bad_function aesgen_abi_bad_rbp
    incq %rbp
    ret
    .size aesgen_abi_bad_rbp, .-aesgen_abi_bad_rbp

abi_bad_function aesgen_abi_bad_r12
    notq %r12
    ret
    .size aesgen_abi_bad_r12, .-aesgen_abi_bad_r12

abi_bad_function aesgen_abi_bad_r13
    movl %r13d, %r13d           /* zeroes the upper half */
    ret
    .size aesgen_abi_bad_r13, .-aesgen_abi_bad_r13

abi_bad_function aesgen_abi_bad_r14
    movb $0, %r14b
    ret
    .size aesgen_abi_bad_r14, .-aesgen_abi_bad_r14

abi_bad_function aesgen_abi_bad_r15
    bswapq %r15
    ret
    .size aesgen_abi_bad_r15, .-aesgen_abi_bad_r15

abi_bad_function aesgen_abi_bad_rsp
    /* Return to the right place with rsp 16 bytes low, through a real ret
     * (so a CET shadow stack stays in step). */
    movq (%rsp), %r11           /* return address */
    subq $16, %rsp
    movq %r11, (%rsp)
    ret
    .size aesgen_abi_bad_rsp, .-aesgen_abi_bad_rsp

abi_bad_function aesgen_abi_bad_df
    std
    ret
    .size aesgen_abi_bad_df, .-aesgen_abi_bad_df

abi_bad_function aesgen_abi_bad_mxcsr
    stmxcsr -8(%rsp)
    xorl $0x6000, -8(%rsp)      /* flip both rounding-control bits */
    ldmxcsr -8(%rsp)
    ret
    .size aesgen_abi_bad_mxcsr, .-aesgen_abi_bad_mxcsr

abi_bad_function aesgen_abi_bad_x87cw
    fnstcw -8(%rsp)
    xorw $0x0300, -8(%rsp)      /* flip the precision-control field */
    fldcw -8(%rsp)
    ret
    .size aesgen_abi_bad_x87cw, .-aesgen_abi_bad_x87cw

abi_bad_function aesgen_abi_bad_x87tag
    fld1                        /* pushed, never popped */
    ret
    .size aesgen_abi_bad_x87tag, .-aesgen_abi_bad_x87tag

abi_bad_function aesgen_abi_bad_frame
    notq 8(%rsp)                /* the word just above our return address */
    ret
    .size aesgen_abi_bad_frame, .-aesgen_abi_bad_frame

/* Legal: clobbers only what the ABI lets a callee clobber. */
abi_bad_function aesgen_abi_good_volatile
    movq %rdi, %rax
    rolq $8, %rsi
    xorq %rsi, %rax
    rolq $16, %rdx
    xorq %rdx, %rax
    rolq $24, %rcx
    xorq %rcx, %rax
    movq $-1, %rdi
    movq $-1, %rsi
    movq $-1, %rdx
    movq $-1, %rcx
    movq $-1, %r8
    movq $-1, %r9
    movq $-1, %r10
    movq $-1, %r11
    pcmpeqd %xmm0, %xmm0
    pcmpeqd %xmm1, %xmm1
    pcmpeqd %xmm2, %xmm2
    pcmpeqd %xmm3, %xmm3
    pcmpeqd %xmm4, %xmm4
    pcmpeqd %xmm5, %xmm5
    pcmpeqd %xmm6, %xmm6
    pcmpeqd %xmm7, %xmm7
    pcmpeqd %xmm8, %xmm8
    pcmpeqd %xmm9, %xmm9
    pcmpeqd %xmm10, %xmm10
    pcmpeqd %xmm11, %xmm11
    pcmpeqd %xmm12, %xmm12
    pcmpeqd %xmm13, %xmm13
    pcmpeqd %xmm14, %xmm14
    pcmpeqd %xmm15, %xmm15
    movq $-1, -8(%rsp)          /* the red zone is the callee's to use */
    stmxcsr -16(%rsp)           /* set the sticky "inexact" status flag: */
    orl $0x20, -16(%rsp)        /* status flags are not callee-saved */
    ldmxcsr -16(%rsp)
    ret
    .size aesgen_abi_good_volatile, .-aesgen_abi_good_volatile

#endif /* __x86_64__ && __ELF__ */

#if defined(__CET__) && defined(__ELF__)
/* Mark the object IBT/SHSTK compatible, as -fcf-protection does for C. */
    .section .note.gnu.property,"a"
    .p2align 3
    .long 4                     /* name size ("GNU\0") */
    .long 16                    /* descriptor size */
    .long 5                     /* NT_GNU_PROPERTY_TYPE_0 */
    .asciz "GNU"
    .long 0xc0000002            /* GNU_PROPERTY_X86_FEATURE_1_AND */
    .long 4
    .long __CET__               /* 1 = IBT, 2 = SHSTK */
    .p2align 3
#endif

    .section .note.GNU-stack,"",@progbits
