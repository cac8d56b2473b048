/*
 * win64_call.S: call a function under the Microsoft x64 calling convention and check what
 * it must keep; catch a fault inside it through SEH (harness code for the win64 flavour,
 * assembled by mingw-w64 gcc; see win64_call.h).
 *
 * uint32_t aesgen_win64_call(const void *fn, const uint64_t args[10], uint64_t *ret)
 *
 * Loads a distinctive value into rbx, rbp, rdi, rsi, r12-r15 and xmm6-xmm15, calls
 * fn(args[0..9]) (rcx, rdx, r8, r9, then six stack slots past the 32-byte shadow space,
 * rsp 16-byte aligned at the call), and returns a mask of the registers that do not hold
 * their value afterwards (bits in win64_call.h), with the callee's rax stored through ret.
 *
 * The call sits inside an SEH scope (the .seh_handler data below: __C_specific_handler with
 * one scope record whose filter is aesgen_win64_fault_filter and whose target is the
 * instruction after the call). When fn faults, Windows (here: wine) finds that scope only
 * by unwinding fn's frame with fn's own unwind data; the filter records the fault and
 * RtlUnwindEx lands after the call with every callee-saved register as the unwind data
 * says fn's frame left it. The same checks then run: a fault landed with all registers
 * intact proves fn's unwind data at the faulting instruction.
 *
 * With aesgen_win64_step set, the trap flag is raised just before the call: the CPU stops
 * after every instruction of fn (EXCEPTION_SINGLE_STEP), where the driver's handler unwinds
 * fn's frame with RtlVirtualUnwind and compares the result with aesgen_win64_return,
 * aesgen_win64_rsp (the stack pointer after the return) and the registers' values here.
 */
	.text
	.globl	aesgen_win64_call
	.globl	aesgen_win64_return
	.globl	aesgen_win64_call_end
	.globl	aesgen_win64_pattern
	.def	aesgen_win64_call;	.scl	2;	.type	32;	.endef
	.p2align	4
aesgen_win64_call:
	.seh_proc	aesgen_win64_call
	pushq	%rbx
	.seh_pushreg	%rbx
	pushq	%rbp
	.seh_pushreg	%rbp
	pushq	%rdi
	.seh_pushreg	%rdi
	pushq	%rsi
	.seh_pushreg	%rsi
	pushq	%r12
	.seh_pushreg	%r12
	pushq	%r13
	.seh_pushreg	%r13
	pushq	%r14
	.seh_pushreg	%r14
	pushq	%r15
	.seh_pushreg	%r15
	/* frame: 0..31 shadow space for fn, 32..79 its stack arguments 5-10, 80 fn, 88 ret,
	 * 96 the rsp to come back to, 112..271 xmm6-xmm15 of our caller; 8 pushes + 280 keep
	 * rsp 16-byte aligned */
	subq	$280, %rsp
	.seh_stackalloc	280
	movdqu	%xmm6, 112(%rsp)
	.seh_savexmm	%xmm6, 112
	movdqu	%xmm7, 128(%rsp)
	.seh_savexmm	%xmm7, 128
	movdqu	%xmm8, 144(%rsp)
	.seh_savexmm	%xmm8, 144
	movdqu	%xmm9, 160(%rsp)
	.seh_savexmm	%xmm9, 160
	movdqu	%xmm10, 176(%rsp)
	.seh_savexmm	%xmm10, 176
	movdqu	%xmm11, 192(%rsp)
	.seh_savexmm	%xmm11, 192
	movdqu	%xmm12, 208(%rsp)
	.seh_savexmm	%xmm12, 208
	movdqu	%xmm13, 224(%rsp)
	.seh_savexmm	%xmm13, 224
	movdqu	%xmm14, 240(%rsp)
	.seh_savexmm	%xmm14, 240
	movdqu	%xmm15, 256(%rsp)
	.seh_savexmm	%xmm15, 256
	.seh_endprologue

	movq	%rcx, 80(%rsp)
	movq	%r8, 88(%rsp)
	movq	%rsp, 96(%rsp)
	movq	%rdx, %rax
	movq	32(%rax), %r10
	movq	%r10, 32(%rsp)
	movq	40(%rax), %r10
	movq	%r10, 40(%rsp)
	movq	48(%rax), %r10
	movq	%r10, 48(%rsp)
	movq	56(%rax), %r10
	movq	%r10, 56(%rsp)
	movq	64(%rax), %r10
	movq	%r10, 64(%rsp)
	movq	72(%rax), %r10
	movq	%r10, 72(%rsp)

	movabsq	$0x1b1b1b1b00000001, %rbx
	movabsq	$0x1b1b1b1b00000002, %rbp
	movabsq	$0x1b1b1b1b00000003, %rdi
	movabsq	$0x1b1b1b1b00000004, %rsi
	movabsq	$0x1b1b1b1b00000005, %r12
	movabsq	$0x1b1b1b1b00000006, %r13
	movabsq	$0x1b1b1b1b00000007, %r14
	movabsq	$0x1b1b1b1b00000008, %r15
	movdqu	pattern+0(%rip), %xmm6
	movdqu	pattern+16(%rip), %xmm7
	movdqu	pattern+32(%rip), %xmm8
	movdqu	pattern+48(%rip), %xmm9
	movdqu	pattern+64(%rip), %xmm10
	movdqu	pattern+80(%rip), %xmm11
	movdqu	pattern+96(%rip), %xmm12
	movdqu	pattern+112(%rip), %xmm13
	movdqu	pattern+128(%rip), %xmm14
	movdqu	pattern+144(%rip), %xmm15
	/* caller-saved registers that carry no argument: junk */
	movabsq	$0x5a5a5a5a5a5a5a5a, %r10
	movq	%r10, %r11
	movq	0(%rax), %rcx
	movq	8(%rax), %rdx
	movq	16(%rax), %r8
	movq	24(%rax), %r9
	movq	80(%rsp), %rax
	movq	%rsp, aesgen_win64_rsp(%rip)
	cmpb	$0, aesgen_win64_step(%rip)
	je	5f
	pushfq
	orq	$0x100, (%rsp)
	popfq			/* the first stop: after the call, at fn's first instruction */
5:
	/* the SEH scope: from here to landed (the return address, at the nop, is inside) */
scope_begin:
	call	*%rax
aesgen_win64_return:
	nop
landed:
	/* after a normal return or a fault's unwind: rsp must be the frame's again */
	xorl	%r11d, %r11d
	cmpq	96(%rsp), %rsp
	je	1f
	orl	$0x40000, %r11d
	movq	96(%rsp), %rsp		/* (if rsp is wrong this read is junk: a crash) */
1:	movq	88(%rsp), %r10
	testq	%r10, %r10
	je	2f
	movq	%rax, (%r10)
2:	movabsq	$0x1b1b1b1b00000001, %r10
	cmpq	%r10, %rbx
	je	3f
	orl	$0x1, %r11d
3:	movabsq	$0x1b1b1b1b00000002, %r10
	cmpq	%r10, %rbp
	je	3f
	orl	$0x2, %r11d
3:	movabsq	$0x1b1b1b1b00000003, %r10
	cmpq	%r10, %rdi
	je	3f
	orl	$0x4, %r11d
3:	movabsq	$0x1b1b1b1b00000004, %r10
	cmpq	%r10, %rsi
	je	3f
	orl	$0x8, %r11d
3:	movabsq	$0x1b1b1b1b00000005, %r10
	cmpq	%r10, %r12
	je	3f
	orl	$0x10, %r11d
3:	movabsq	$0x1b1b1b1b00000006, %r10
	cmpq	%r10, %r13
	je	3f
	orl	$0x20, %r11d
3:	movabsq	$0x1b1b1b1b00000007, %r10
	cmpq	%r10, %r14
	je	3f
	orl	$0x40, %r11d
3:	movabsq	$0x1b1b1b1b00000008, %r10
	cmpq	%r10, %r15
	je	3f
	orl	$0x80, %r11d
3:
	/* xmm6-xmm15 against the pattern: bit 0x100 << (n - 6) for a changed xmm<n> */
	.irp	n, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15
	movdqu	pattern+16*(\n-6)(%rip), %xmm0
	pcmpeqb	%xmm\n, %xmm0
	pmovmskb	%xmm0, %eax
	cmpl	$0xffff, %eax
	je	4f
	orl	$(0x100 << (\n-6)), %r11d
4:
	.endr
	movl	%r11d, %eax
	movdqu	112(%rsp), %xmm6
	movdqu	128(%rsp), %xmm7
	movdqu	144(%rsp), %xmm8
	movdqu	160(%rsp), %xmm9
	movdqu	176(%rsp), %xmm10
	movdqu	192(%rsp), %xmm11
	movdqu	208(%rsp), %xmm12
	movdqu	224(%rsp), %xmm13
	movdqu	240(%rsp), %xmm14
	movdqu	256(%rsp), %xmm15
	addq	$280, %rsp
	popq	%r15
	popq	%r14
	popq	%r13
	popq	%r12
	popq	%rsi
	popq	%rdi
	popq	%rbp
	popq	%rbx
	ret
	.seh_handler	__C_specific_handler, @except
	.seh_handlerdata
	.long	1
	.rva	scope_begin, landed, aesgen_win64_fault_filter, landed
	.text
	.seh_endproc
aesgen_win64_call_end:

	.section	.rdata,"dr"
	.p2align	4
aesgen_win64_pattern:
pattern:
	.irp	n, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15
	.quad	0x6d6d6d6d00000000 + \n, 0x3c3c3c3c00000000 + \n
	.endr

	.bss
	.globl	aesgen_win64_rsp
	.globl	aesgen_win64_step
	.p2align	3
aesgen_win64_rsp:
	.quad	0
aesgen_win64_step:
	.byte	0
