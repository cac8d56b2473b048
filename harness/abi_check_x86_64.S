/*
 * abi_check_x86_64.S: System V AMD64 calling-convention checker for the
 * aesgen test harness.  See abi_check.h for what is checked and why.
 *
 *   uint64_t aesgen_abi_call(const void *fn, const uint64_t *args,
 *                            size_t nargs, uint64_t *ret);
 *                 rdi = fn, rsi = args, rdx = nargs, rcx = ret
 *   uint64_t aesgen_abi_call4(const void *fn, uint64_t a0, uint64_t a1,
 *                             uint64_t a2, uint64_t a3, uint64_t *ret);
 *                 rdi = fn, rsi = a0, rdx = a1, rcx = a2, r8 = a3, r9 = ret
 *
 * aesgen_abi_call4 stores its four arguments in a small frame of its own and
 * calls aesgen_abi_call with nargs = 4: one checker, one set of rules.
 *
 * aesgen_abi_call's frame after the six pushes and `sub $FRAME, %rsp` (rsp,
 * the frame's base, is 16-byte aligned here):
 *
 *     0(%rsp) .. 31(%rsp)   arguments 6..9, the ones SysV passes on the stack
 *                           (junk in the slots nargs does not fill)
 *    32(%rsp) .. 63(%rsp)   four canary words
 *    64(%rsp)               ret pointer
 *    72(%rsp)               MXCSR before the call (4 bytes)
 *    76(%rsp)               x87 control word before the call (2 bytes)
 *    80(%rsp)               MXCSR after the call
 *    84(%rsp)               x87 control word after the call
 *    88(%rsp) .. 115(%rsp)  fnstenv image after the call (28 bytes)
 *   120(%rsp) .. 199(%rsp)  the ten argument words (args[0..nargs), junk after)
 *
 * With nargs > 6 the callee is called with rsp at the base: its stack
 * arguments sit just above its return address and the canaries just above
 * them.  With nargs <= 6 it is called with rsp at base + 32, so the canaries
 * sit just above its return address, where aesgen_abi_call4 always had them.
 * Either way a callee may read (and, as the ABI gives them to it, write) its
 * stack arguments, and a write into the first words of its caller's frame
 * above them hits a canary.  rsp is put back to the base right after the
 * call, so every check finds the frame at the same place.
 *
 * The base is also kept in the thread-local word aesgen_abi_saved_rsp: if
 * rsp comes back wrong, the frame cannot be found through it, so it is
 * reloaded from there.
 */
#include "abi_check.h"

#if defined(__x86_64__) && defined(__ELF__)

#define FRAME       200
#define OFF_CANARY  32
#define OFF_RET     64
#define OFF_MXCSR   72
#define OFF_X87CW   76
#define OFF_MXCSR2  80
#define OFF_X87CW2  84
#define OFF_ENV     88
#define OFF_ARGV    120
#define REG_ARGS    6           /* rdi, rsi, rdx, rcx, r8, r9 */
#define STACK_ARGS  32          /* bytes for arguments 6..9 */
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
#define JUNK_ARG    0xfeedfacedeadbe00  /* + the slot number */
#define MXCSR_CONTROL 0xffc0      /* all MXCSR bits but the six status flags */
#define EFLAGS_DF   0x400

    .section .tbss,"awT",@nobits
    .p2align 3
    .type aesgen_abi_saved_rsp, @object
    .size aesgen_abi_saved_rsp, 8
aesgen_abi_saved_rsp:
    .zero 8
    /* What the callee left: its vector registers and the stack below our frame. */
    .globl aesgen_abi_vectors
    .p2align 6
    .type aesgen_abi_vectors, @object
    .size aesgen_abi_vectors, AESGEN_ABI_VECTOR_DUMP
aesgen_abi_vectors:
    .zero AESGEN_ABI_VECTOR_DUMP
    .globl aesgen_abi_stack
    .type aesgen_abi_stack, @object
    .size aesgen_abi_stack, AESGEN_ABI_STACK_DUMP
aesgen_abi_stack:
    .zero AESGEN_ABI_STACK_DUMP

    .data
    .globl aesgen_abi_vector_bytes
    .p2align 2
    .type aesgen_abi_vector_bytes, @object
    .size aesgen_abi_vector_bytes, 4
aesgen_abi_vector_bytes:        /* 0: no dump; 16, 32, 64: xmm, ymm, zmm (set from C) */
    .long 0

    .text

/* Set bit \bit in %r10d unless \reg still holds \val.  Clobbers %r11. */
.macro abi_expect reg, val, bit
    movabsq $\val, %r11
    cmpq %r11, \reg
    je 1f
    orl $\bit, %r10d
1:
.endm

    .globl aesgen_abi_call
    .type aesgen_abi_call, @function
    .p2align 4
aesgen_abi_call:
    .cfi_startproc
    endbr64
.Labi_call:                     /* aesgen_abi_call4 comes in here */
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

    /* nargs = min(nargs, 10). */
    cmpq $AESGEN_ABI_MAX_ARGS, %rdx
    jbe 1f
    movl $AESGEN_ABI_MAX_ARGS, %edx
1:
    /* The ten argument words: args[0..nargs), then a junk word a slot. */
    movabsq $JUNK_ARG, %rax
    xorl %r10d, %r10d
2:
    movq %rax, %r11
    cmpq %rdx, %r10
    jae 3f
    movq (%rsi,%r10,8), %r11
3:
    movq %r11, OFF_ARGV(%rsp,%r10,8)
    incq %rax
    incl %r10d
    cmpl $AESGEN_ABI_MAX_ARGS, %r10d
    jb 2b
    /* Arguments 6..9 where the callee finds them when nargs > 6. */
    movq OFF_ARGV+48(%rsp), %rax
    movq %rax, 0(%rsp)
    movq OFF_ARGV+56(%rsp), %rax
    movq %rax, 8(%rsp)
    movq OFF_ARGV+64(%rsp), %rax
    movq %rax, 16(%rsp)
    movq OFF_ARGV+72(%rsp), %rax
    movq %rax, 24(%rsp)

    /* Canaries, the ret pointer and the state to compare against. */
    movabsq $CANARY0, %rax
    movq %rax, OFF_CANARY+0(%rsp)
    movabsq $CANARY1, %rax
    movq %rax, OFF_CANARY+8(%rsp)
    movabsq $CANARY2, %rax
    movq %rax, OFF_CANARY+16(%rsp)
    movabsq $CANARY3, %rax
    movq %rax, OFF_CANARY+24(%rsp)
    movq %rcx, OFF_RET(%rsp)
    stmxcsr OFF_MXCSR(%rsp)
    fnstcw OFF_X87CW(%rsp)
    movq aesgen_abi_saved_rsp@gottpoff(%rip), %rax
    movq %rsp, %fs:(%rax)

    /* For the scrub check: the stack below our frame (where the callee's frame goes) and
     * the vector registers zeroed, so what is found there after the call is the
     * callee's. */
    movl aesgen_abi_vector_bytes(%rip), %eax
    testl %eax, %eax
    jz 76f
    leaq -AESGEN_ABI_STACK_DUMP(%rsp), %r11
70:
    movq $0, (%r11)
    addq $8, %r11
    cmpq %rsp, %r11
    jb 70b
    cmpl $16, %eax
    je 75f
    vzeroall
    cmpl $64, %eax
    jne 76f
    vpxord %zmm16, %zmm16, %zmm16
    vpxord %zmm17, %zmm17, %zmm17
    vpxord %zmm18, %zmm18, %zmm18
    vpxord %zmm19, %zmm19, %zmm19
    vpxord %zmm20, %zmm20, %zmm20
    vpxord %zmm21, %zmm21, %zmm21
    vpxord %zmm22, %zmm22, %zmm22
    vpxord %zmm23, %zmm23, %zmm23
    vpxord %zmm24, %zmm24, %zmm24
    vpxord %zmm25, %zmm25, %zmm25
    vpxord %zmm26, %zmm26, %zmm26
    vpxord %zmm27, %zmm27, %zmm27
    vpxord %zmm28, %zmm28, %zmm28
    vpxord %zmm29, %zmm29, %zmm29
    vpxord %zmm30, %zmm30, %zmm30
    vpxord %zmm31, %zmm31, %zmm31
    jmp 76f
75:
    pxor %xmm0, %xmm0
    pxor %xmm1, %xmm1
    pxor %xmm2, %xmm2
    pxor %xmm3, %xmm3
    pxor %xmm4, %xmm4
    pxor %xmm5, %xmm5
    pxor %xmm6, %xmm6
    pxor %xmm7, %xmm7
    pxor %xmm8, %xmm8
    pxor %xmm9, %xmm9
    pxor %xmm10, %xmm10
    pxor %xmm11, %xmm11
    pxor %xmm12, %xmm12
    pxor %xmm13, %xmm13
    pxor %xmm14, %xmm14
    pxor %xmm15, %xmm15
76:

    /* fn to r11; the register arguments.  From the cmpq to the ja below
     * only moves, which leave the flags alone. */
    movq %rdi, %r11
    cmpq $REG_ARGS, %rdx
    movq OFF_ARGV+0(%rsp), %rdi
    movq OFF_ARGV+8(%rsp), %rsi
    movq OFF_ARGV+16(%rsp), %rdx
    movq OFF_ARGV+24(%rsp), %rcx
    movq OFF_ARGV+32(%rsp), %r8
    movq OFF_ARGV+40(%rsp), %r9

    /* Distinctive values in the callee-saved registers, junk elsewhere. */
    movabsq $VAL_RBX, %rbx
    movabsq $VAL_RBP, %rbp
    movabsq $VAL_R12, %r12
    movabsq $VAL_R13, %r13
    movabsq $VAL_R14, %r14
    movabsq $VAL_R15, %r15
    movabsq $0x8badf00d00c0ffee, %rax
    movabsq $0x5a5a5a5a5a5a5a5a, %r10

    ja 8f
    /* No stack argument: the return address goes just below the canaries. */
    addq $STACK_ARGS, %rsp
    .cfi_adjust_cfa_offset -STACK_ARGS
    callq *%r11
    subq $STACK_ARGS, %rsp
    .cfi_adjust_cfa_offset STACK_ARGS
    jmp 9f
8:
    callq *%r11
9:
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
    /* For the scrub check: the callee's vector registers and the stack below our frame
     * into this thread's dumps (before anything here touches a vector register). */
    movl aesgen_abi_vector_bytes(%rip), %eax
    testl %eax, %eax
    jz 79f
    movq %fs:0, %r11
    addq aesgen_abi_vectors@gottpoff(%rip), %r11
    cmpl $64, %eax
    jne 72f
    vmovdqu64 %zmm0, 0(%r11)
    vmovdqu64 %zmm1, 64(%r11)
    vmovdqu64 %zmm2, 128(%r11)
    vmovdqu64 %zmm3, 192(%r11)
    vmovdqu64 %zmm4, 256(%r11)
    vmovdqu64 %zmm5, 320(%r11)
    vmovdqu64 %zmm6, 384(%r11)
    vmovdqu64 %zmm7, 448(%r11)
    vmovdqu64 %zmm8, 512(%r11)
    vmovdqu64 %zmm9, 576(%r11)
    vmovdqu64 %zmm10, 640(%r11)
    vmovdqu64 %zmm11, 704(%r11)
    vmovdqu64 %zmm12, 768(%r11)
    vmovdqu64 %zmm13, 832(%r11)
    vmovdqu64 %zmm14, 896(%r11)
    vmovdqu64 %zmm15, 960(%r11)
    vmovdqu64 %zmm16, 1024(%r11)
    vmovdqu64 %zmm17, 1088(%r11)
    vmovdqu64 %zmm18, 1152(%r11)
    vmovdqu64 %zmm19, 1216(%r11)
    vmovdqu64 %zmm20, 1280(%r11)
    vmovdqu64 %zmm21, 1344(%r11)
    vmovdqu64 %zmm22, 1408(%r11)
    vmovdqu64 %zmm23, 1472(%r11)
    vmovdqu64 %zmm24, 1536(%r11)
    vmovdqu64 %zmm25, 1600(%r11)
    vmovdqu64 %zmm26, 1664(%r11)
    vmovdqu64 %zmm27, 1728(%r11)
    vmovdqu64 %zmm28, 1792(%r11)
    vmovdqu64 %zmm29, 1856(%r11)
    vmovdqu64 %zmm30, 1920(%r11)
    vmovdqu64 %zmm31, 1984(%r11)
    jmp 74f
72:
    cmpl $32, %eax
    jne 73f
    vmovdqu %ymm0, 0(%r11)
    vmovdqu %ymm1, 32(%r11)
    vmovdqu %ymm2, 64(%r11)
    vmovdqu %ymm3, 96(%r11)
    vmovdqu %ymm4, 128(%r11)
    vmovdqu %ymm5, 160(%r11)
    vmovdqu %ymm6, 192(%r11)
    vmovdqu %ymm7, 224(%r11)
    vmovdqu %ymm8, 256(%r11)
    vmovdqu %ymm9, 288(%r11)
    vmovdqu %ymm10, 320(%r11)
    vmovdqu %ymm11, 352(%r11)
    vmovdqu %ymm12, 384(%r11)
    vmovdqu %ymm13, 416(%r11)
    vmovdqu %ymm14, 448(%r11)
    vmovdqu %ymm15, 480(%r11)
    jmp 74f
73:
    movdqu %xmm0, 0(%r11)
    movdqu %xmm1, 16(%r11)
    movdqu %xmm2, 32(%r11)
    movdqu %xmm3, 48(%r11)
    movdqu %xmm4, 64(%r11)
    movdqu %xmm5, 80(%r11)
    movdqu %xmm6, 96(%r11)
    movdqu %xmm7, 112(%r11)
    movdqu %xmm8, 128(%r11)
    movdqu %xmm9, 144(%r11)
    movdqu %xmm10, 160(%r11)
    movdqu %xmm11, 176(%r11)
    movdqu %xmm12, 192(%r11)
    movdqu %xmm13, 208(%r11)
    movdqu %xmm14, 224(%r11)
    movdqu %xmm15, 240(%r11)
74:
    movq %fs:0, %rdi
    addq aesgen_abi_stack@gottpoff(%rip), %rdi
    leaq -AESGEN_ABI_STACK_DUMP(%rsp), %rsi
    movl $AESGEN_ABI_STACK_DUMP / 8, %ecx
    rep movsq
79:
    /* MXCSR control bits. */
    stmxcsr OFF_MXCSR2(%rsp)
    movl OFF_MXCSR2(%rsp), %r11d
    xorl OFF_MXCSR(%rsp), %r11d
    testl $MXCSR_CONTROL, %r11d
    jz 4f
    orl $AESGEN_ABI_MXCSR, %r10d
    ldmxcsr OFF_MXCSR(%rsp)
4:
    /* x87 control word. */
    fnstcw OFF_X87CW2(%rsp)
    movzwl OFF_X87CW2(%rsp), %r11d
    movzwl OFF_X87CW(%rsp), %eax
    cmpl %eax, %r11d
    je 5f
    orl $AESGEN_ABI_X87CW, %r10d
    fldcw OFF_X87CW(%rsp)
5:
    /* x87 tag word: 0xffff means every register is empty. fnstenv masks
     * all x87 exceptions as a side effect, so fldenv puts the image back. */
    fnstenv OFF_ENV(%rsp)
    movzwl OFF_ENV+8(%rsp), %r11d   /* tag word at offset 8 of the image */
    fldenv OFF_ENV(%rsp)
    cmpl $0xffff, %r11d
    je 6f
    orl $AESGEN_ABI_X87TAG, %r10d
    emms                        /* empty the stack for our caller */
6:
    /* Canaries in our frame. */
    abi_expect OFF_CANARY+0(%rsp), CANARY0, AESGEN_ABI_FRAME
    abi_expect OFF_CANARY+8(%rsp), CANARY1, AESGEN_ABI_FRAME
    abi_expect OFF_CANARY+16(%rsp), CANARY2, AESGEN_ABI_FRAME
    abi_expect OFF_CANARY+24(%rsp), CANARY3, AESGEN_ABI_FRAME

    /* Store the return value if asked to. */
    movq OFF_RET(%rsp), %r11
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
    .size aesgen_abi_call, .-aesgen_abi_call

/* aesgen_abi_call4: the four arguments into a frame of ours, then the
 * checker above with nargs = 4 (ret stays the last argument). */
    .globl aesgen_abi_call4
    .type aesgen_abi_call4, @function
    .p2align 4
aesgen_abi_call4:
    .cfi_startproc
    endbr64
    subq $40, %rsp              /* 16-byte aligned again, as at a call */
    .cfi_adjust_cfa_offset 40
    movq %rsi, 0(%rsp)
    movq %rdx, 8(%rsp)
    movq %rcx, 16(%rsp)
    movq %r8, 24(%rsp)
    movq %rsp, %rsi             /* args */
    movl $4, %edx               /* nargs */
    movq %r9, %rcx              /* ret */
    callq .Labi_call            /* rdi = fn already */
    addq $40, %rsp
    .cfi_adjust_cfa_offset -40
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

/* Clobber every caller-saved register the ABI lets a callee clobber but
 * rax (rcx, rdx, rsi, rdi, r8-r11, xmm0-15, the red zone, the MXCSR status
 * flags, the arithmetic flags). */
.macro abi_clobber_volatile
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
    cmpq %rax, %rdi             /* and the arithmetic flags */
.endm

/* Legal: clobbers only what the ABI lets a callee clobber. */
abi_bad_function aesgen_abi_good_volatile
    movq %rdi, %rax
    rolq $8, %rsi
    xorq %rsi, %rax
    rolq $16, %rdx
    xorq %rdx, %rax
    rolq $24, %rcx
    xorq %rcx, %rax
    abi_clobber_volatile
    ret
    .size aesgen_abi_good_volatile, .-aesgen_abi_good_volatile

/* For the scrub check's own test: leave the 16 bytes at rdi in xmm5; leave them on the
 * stack below the return address (in the red zone, the callee's to use) and in no
 * register. Both legal for the convention, both leaks of what rdi points at. */
abi_bad_function aesgen_abi_leave_xmm5
    movdqu (%rdi), %xmm5
    ret
    .size aesgen_abi_leave_xmm5, .-aesgen_abi_leave_xmm5
abi_bad_function aesgen_abi_leave_stack
    movdqu (%rdi), %xmm0
    movdqu %xmm0, -72(%rsp)
    pxor %xmm0, %xmm0
    ret
    .size aesgen_abi_leave_stack, .-aesgen_abi_leave_stack

/* Legal: reads all ten arguments (a6..a9 from the stack, just above the
 * return address) and returns the XOR of rol(a_i, 6 i). */
abi_bad_function aesgen_abi_good_args10
    movq %rdi, %rax
    rolq $6, %rsi
    xorq %rsi, %rax
    rolq $12, %rdx
    xorq %rdx, %rax
    rolq $18, %rcx
    xorq %rcx, %rax
    rolq $24, %r8
    xorq %r8, %rax
    rolq $30, %r9
    xorq %r9, %rax
    movq 8(%rsp), %r10
    rolq $36, %r10
    xorq %r10, %rax
    movq 16(%rsp), %r10
    rolq $42, %r10
    xorq %r10, %rax
    movq 24(%rsp), %r10
    rolq $48, %r10
    xorq %r10, %rax
    movq 32(%rsp), %r10
    rolq $54, %r10
    xorq %r10, %rax
    abi_clobber_volatile
    ret
    .size aesgen_abi_good_args10, .-aesgen_abi_good_args10

/* Legal: overwrites its four stack arguments (the ABI gives the argument
 * area to the callee). */
abi_bad_function aesgen_abi_good_args10_write
    notq 8(%rsp)
    notq 16(%rsp)
    notq 24(%rsp)
    notq 32(%rsp)
    xorl %eax, %eax
    ret
    .size aesgen_abi_good_args10_write, .-aesgen_abi_good_args10_write

/* Called with ten arguments, writes the word just above its four stack
 * arguments: its caller's frame. */
abi_bad_function aesgen_abi_args10_bad_frame
    notq 40(%rsp)
    ret
    .size aesgen_abi_args10_bad_frame, .-aesgen_abi_args10_bad_frame

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
