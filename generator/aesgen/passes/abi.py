"""Calling conventions as data: which registers carry arguments, which a callee must keep."""
from __future__ import annotations

from dataclasses import dataclass

from ..dsl.operands import A64_GP, A64_VEC, GP, VEC, Reg, gp, xreg


@dataclass(frozen=True)
class AbiSpec:
    name: str
    isa: str
    arguments: tuple[Reg, ...]
    return_register: Reg
    callee_saved: tuple[Reg, ...]
    # allocation order per class: volatile registers first, so that saving is rare;
    # the order is a tuning knob and changes the emitted bytes, not the meaning
    allocation_order: dict[str, tuple[Reg, ...]]
    vector_registers: int

    def clobbered_by_call(self) -> frozenset:
        """Register keys a called function may change: every allocatable register it need
        not keep (AArch64 keeps only the low halves of v8-v15: all vectors count)."""
        kept = {r.key for r in self.callee_saved if r.cls not in (VEC, A64_VEC)}
        every = [r for order in self.allocation_order.values() for r in order]
        return frozenset(r.key for r in every if r.key not in kept) | {
            self.return_register.key}


SYSV_X86_64 = AbiSpec(
    name="sysv-x86_64",
    isa="x86_64",
    arguments=tuple(gp(n) for n in ("rdi", "rsi", "rdx", "rcx", "r8", "r9")),
    return_register=gp("rax"),
    callee_saved=tuple(gp(n) for n in ("rbx", "rbp", "r12", "r13", "r14", "r15")),
    allocation_order={
        GP: tuple(gp(n) for n in ("rax", "rcx", "rdx", "rsi", "rdi", "r8", "r9", "r10",
                                  "r11", "rbx", "rbp", "r12", "r13", "r14", "r15")),
        VEC: tuple(Reg(VEC, i, 128) for i in range(16)),
    },
    vector_registers=16,
)


def sysv_with_vectors(count: int) -> AbiSpec:
    """SysV with ``count`` vector registers allocatable (32 where AVX-512 exists)."""
    order = dict(SYSV_X86_64.allocation_order)
    order[VEC] = tuple(Reg(VEC, i, 128) for i in range(count))
    return AbiSpec(SYSV_X86_64.name, SYSV_X86_64.isa, SYSV_X86_64.arguments, SYSV_X86_64.return_register,
                   SYSV_X86_64.callee_saved, order, count)


def _a64_vec(n: int) -> Reg:
    return Reg(A64_VEC, n, 128, "16b")


# AAPCS64 (Procedure Call Standard for the Arm 64-bit Architecture, 6.1): x0-x7 carry
# arguments, x0/w0 the result; x19-x28 are callee-saved, x29 is the frame pointer and x30 the
# link register (never allocated: the kernels are leaves and keep lr where it is, so they need
# no return-address signing); x18 is the platform register (reserved on Apple and Windows,
# never used here); x16/x17 are ordinary scratch registers inside a function. Of v8-v15 only
# the low 64 bits (d8-d15) are callee-saved; v0-v7 and v16-v31 are scratch.
AAPCS64 = AbiSpec(
    name="aapcs64",
    isa="aarch64",
    arguments=tuple(xreg(n) for n in range(8)),
    return_register=xreg(0),
    callee_saved=tuple(xreg(n) for n in range(19, 29)) + tuple(_a64_vec(n) for n in range(8, 16)),
    allocation_order={
        A64_GP: tuple(xreg(n) for n in list(range(0, 18)) + list(range(19, 29))),
        # scratch vectors first, v8-v15 (whose low halves must be saved) last
        A64_VEC: tuple(_a64_vec(n) for n in list(range(0, 8)) + list(range(16, 32))
                       + list(range(8, 16))),
    },
    vector_registers=32,
)
