/*
 * win64_call.h: the Win64 harness's call trampoline (win64_call.S).
 *
 * aesgen_win64_call(fn, args, &ret) calls fn(args[0], ..., args[9]) under the Microsoft x64
 * calling convention with distinctive values in every callee-saved register (rbx, rbp, rdi,
 * rsi, r12-r15, xmm6-xmm15) and returns the AESGEN_W64_* bits of those that changed, and
 * AESGEN_W64_RSP when the stack pointer did not come back. A fault inside fn is caught by
 * the trampoline's SEH scope (which Windows finds only through fn's unwind data): the
 * filter below records it in aesgen_win64_fault, and the same checks then tell whether
 * unwinding fn's frame gave back every register.
 */
#ifndef AESGEN_HARNESS_WIN64_CALL_H
#define AESGEN_HARNESS_WIN64_CALL_H

#include <stdint.h>

#define AESGEN_W64_RBX   0x00001
#define AESGEN_W64_RBP   0x00002
#define AESGEN_W64_RDI   0x00004
#define AESGEN_W64_RSI   0x00008
#define AESGEN_W64_R12   0x00010
#define AESGEN_W64_R13   0x00020
#define AESGEN_W64_R14   0x00040
#define AESGEN_W64_R15   0x00080
#define AESGEN_W64_XMM6  0x00100   /* xmm6 << 0 .. xmm15 << 9 */
#define AESGEN_W64_RSP   0x40000

struct aesgen_win64_fault {
    unsigned count;          /* faults the filter saw */
    uint32_t code;           /* the last one's exception code (0xC0000005: access) */
    uintptr_t address;       /* the address an access violation touched */
};
extern volatile struct aesgen_win64_fault aesgen_win64_fault;

uint32_t aesgen_win64_call(const void *fn, const uint64_t args[10], uint64_t *ret);

/* Single-stepping (the driver's unwind proof): set aesgen_win64_step to 1 and the call runs
 * with the trap flag; aesgen_win64_rsp is the stack pointer fn returns to, at
 * aesgen_win64_return; the trampoline's own code lies in [aesgen_win64_call,
 * aesgen_win64_call_end); aesgen_win64_pattern holds xmm6..xmm15's values (16 bytes each);
 * rbx, rbp, rdi, rsi, r12-r15 hold 0x1b1b1b1b00000001 .. 0x1b1b1b1b00000008 in that order. */
extern uint64_t aesgen_win64_rsp;
extern volatile uint8_t aesgen_win64_step;
extern char aesgen_win64_return[], aesgen_win64_call_end[];
extern const uint8_t aesgen_win64_pattern[160];

/* fn(args) single-stepped (win64_step.c): the instructions that unwind wrongly, with the
 * first of them explained in first; *steps the instructions stepped. */
uint64_t aesgen_win64_stepped(const void *fn, const uint64_t args[10], uint64_t *steps,
                              char *first, size_t first_size);

#endif
