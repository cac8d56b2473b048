/*
 * win64_step.c: a function's Win64 unwind data checked at every instruction (issue 18).
 *
 * aesgen_win64_stepped() calls fn through the trampoline (win64_call.S) with the trap flag
 * raised; a vectored exception handler then sees EXCEPTION_SINGLE_STEP after every
 * instruction of fn and of the functions it calls. At each it unwinds from the interrupted
 * context with RtlLookupFunctionEntry and RtlVirtualUnwind (what Windows' exception
 * dispatch, debuggers and profilers do), frame by frame until the trampoline's return
 * address, and checks that the stack pointer and every callee-saved register (rbx, rbp,
 * rdi, rsi, r12-r15, xmm6-xmm15) come out as the trampoline set them. It keeps stepping by
 * continuing with the trap flag set, and stops when the CPU is back in the trampoline.
 */
#include <windows.h>

#include <stdio.h>
#include <string.h>

#include "win64_call.h"

static uint64_t step_count, step_bad;
static char step_first[256];
static const void *step_entry;

static const char *const kNames[8] = {"rbx", "rbp", "rdi", "rsi", "r12", "r13", "r14", "r15"};

static const char *check(const CONTEXT *u, char *why, size_t n) {
    const DWORD64 got[8] = {u->Rbx, u->Rbp, u->Rdi, u->Rsi, u->R12, u->R13, u->R14, u->R15};
    if (u->Rsp != aesgen_win64_rsp) {
        snprintf(why, n, "rsp unwinds to the caller's %+lld",
                 (long long)(u->Rsp - aesgen_win64_rsp));
        return why;
    }
    for (int i = 0; i < 8; i++) {
        if (got[i] != 0x1b1b1b1b00000001ull + (uint64_t)i) {
            snprintf(why, n, "%s unwinds to %llx", kNames[i], (unsigned long long)got[i]);
            return why;
        }
    }
    const M128A *x = &u->Xmm6;
    for (int i = 0; i < 10; i++) {
        if (memcmp(&x[i], aesgen_win64_pattern + 16 * i, 16) != 0) {
            snprintf(why, n, "xmm%d does not unwind to the caller's value", 6 + i);
            return why;
        }
    }
    return NULL;
}

static LONG WINAPI on_step(EXCEPTION_POINTERS *ep) {
    if (ep->ExceptionRecord->ExceptionCode != EXCEPTION_SINGLE_STEP || !aesgen_win64_step)
        return EXCEPTION_CONTINUE_SEARCH;
    CONTEXT *c = ep->ContextRecord;
    uintptr_t rip = (uintptr_t)c->Rip;
    if (rip >= (uintptr_t)aesgen_win64_call && rip < (uintptr_t)aesgen_win64_call_end) {
        c->EFlags &= ~0x100u;                  /* back in the trampoline: stop stepping */
        return EXCEPTION_CONTINUE_EXECUTION;
    }
    step_count++;
    CONTEXT u = *c;
    char why[160];
    const char *bad = NULL;
    for (int depth = 0; u.Rip != (DWORD64)(uintptr_t)aesgen_win64_return; depth++) {
        if (depth == 4) {
            bad = "the unwind does not reach the caller in 4 frames";
            break;
        }
        DWORD64 base = 0;
        PRUNTIME_FUNCTION f = RtlLookupFunctionEntry(u.Rip, &base, NULL);
        if (f == NULL) {                       /* no unwind data: a leaf, [rsp] returns */
            u.Rip = *(DWORD64 *)(uintptr_t)u.Rsp;
            u.Rsp += 8;
            continue;
        }
        PVOID handler_data = NULL;
        DWORD64 frame = 0;
        RtlVirtualUnwind(UNW_FLAG_NHANDLER, base, u.Rip, f, &u, &handler_data, &frame, NULL);
    }
    if (bad == NULL) bad = check(&u, why, sizeof why);
    if (bad != NULL && step_bad++ == 0) {
        snprintf(step_first, sizeof step_first, "at entry+0x%llx (step %llu): %s",
                 (unsigned long long)(rip - (uintptr_t)step_entry),
                 (unsigned long long)step_count, bad);
    }
    c->EFlags |= 0x100u;                       /* and on to the next instruction */
    return EXCEPTION_CONTINUE_EXECUTION;
}

uint64_t aesgen_win64_stepped(const void *fn, const uint64_t args[10], uint64_t *steps,
                              char *first, size_t first_size) {
    static PVOID installed;
    if (installed == NULL) installed = AddVectoredExceptionHandler(1, on_step);
    step_count = step_bad = 0;
    step_first[0] = 0;
    step_entry = fn;
    aesgen_win64_step = 1;
    aesgen_win64_call(fn, args, NULL);
    aesgen_win64_step = 0;
    *steps = step_count;
    if (first != NULL && first_size) {
        strncpy(first, step_first, first_size - 1);
        first[first_size - 1] = 0;
    }
    return step_bad;
}
