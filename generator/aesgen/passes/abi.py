"""Calling conventions as data: which registers carry arguments, which a callee must keep."""
from __future__ import annotations

from dataclasses import dataclass, replace

from ..dsl.operands import A64_GP, A64_SP, A64_VEC, GP, VEC, Mem, Reg, gp, xreg


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
    # where the first argument past ``arguments`` is at entry, from the stack pointer
    # (SysV x86-64: 8, above the return address; Win64: 40, past the 32-byte shadow space
    # the caller reserves; AAPCS64: 0); each later one 8 bytes on
    stack_arguments_at: int = 8

    def argument(self, index: int) -> Reg | Mem:
        """Argument ``index`` (0-based) as the callee finds it at entry: a register, or a
        64-bit stack slot relative to the stack pointer at entry."""
        if index < len(self.arguments):
            return self.arguments[index]
        sp = gp("rsp") if self.isa == "x86_64" else xreg(A64_SP)
        return Mem(64, base=sp, disp=self.stack_arguments_at + 8 * (index - len(self.arguments)))

    def with_vectors(self, count: int) -> "AbiSpec":
        """The convention with ``count`` vector registers allocatable (32 where AVX-512
        exists): the extra ones (zmm16-31) are scratch in every x86-64 convention and go
        before the callee-saved ones in the order."""
        if count == self.vector_registers:
            return self
        cls = VEC if self.isa == "x86_64" else A64_VEC
        kept = {r.key for r in self.callee_saved}
        old = self.allocation_order[cls]
        extra = tuple(Reg(cls, i, 128) for i in range(self.vector_registers, count))
        scratch = tuple(r for r in old if r.key not in kept)
        order = dict(self.allocation_order)
        order[cls] = scratch + extra + tuple(r for r in old if r.key in kept)
        return replace(self, allocation_order=order, vector_registers=count)

    def local(self, count: int) -> "AbiSpec":
        """The convention a function of the same file is called by with ``count``
        arguments (it is not exported: no outside caller sees it): all of them in
        registers, scratch registers past the convention's own carrying the rest."""
        if count <= len(self.arguments):
            return self
        taken = {r.key for r in self.callee_saved + self.arguments} | {
            self.return_register.key}
        scratch = [r for r in self.allocation_order[self.arguments[0].cls]
                   if r.key not in taken]
        if len(scratch) < count - len(self.arguments):
            raise ValueError(f"{self.name}: no room for {count} register arguments")
        return replace(self, name=f"{self.name}-local", arguments=self.arguments
                       + tuple(scratch[:count - len(self.arguments)]))

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
    return SYSV_X86_64.with_vectors(count)


# The Microsoft x64 calling convention ("x64 calling convention", Microsoft Learn: "Calling
# convention defaults", "Caller/callee saved registers"): rcx, rdx, r8, r9 carry the first
# four integer arguments, the rest are on the stack past a 32-byte shadow space (the fifth
# at 40(%rsp) at entry); rax the result; rbx, rbp, rdi, rsi, r12-r15 and xmm6-xmm15 (their
# low 128 bits) are callee-saved, xmm16-31 and every upper half scratch. There is no red
# zone: nothing may be kept below rsp.
WIN64_X86_64 = AbiSpec(
    name="win64-x86_64",
    isa="x86_64",
    arguments=tuple(gp(n) for n in ("rcx", "rdx", "r8", "r9")),
    return_register=gp("rax"),
    callee_saved=tuple(gp(n) for n in ("rbx", "rbp", "rdi", "rsi", "r12", "r13", "r14", "r15"))
    + tuple(Reg(VEC, i, 128) for i in range(6, 16)),
    allocation_order={
        GP: tuple(gp(n) for n in ("rax", "rcx", "rdx", "r8", "r9", "r10", "r11", "rsi", "rdi",
                                  "rbx", "rbp", "r12", "r13", "r14", "r15")),
        VEC: tuple(Reg(VEC, i, 128) for i in list(range(6)) + list(range(6, 16))),
    },
    vector_registers=16,
    stack_arguments_at=40,
)

# x86-64 conventions by the name a KernelSpec gives (its ``abi``; "" is the default)
X86_64_CONVENTIONS = {"sysv": SYSV_X86_64, "win64": WIN64_X86_64}


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
    stack_arguments_at=0,
)


def calling_convention(arch: str, name: str = "", vectors: int | None = None) -> AbiSpec:
    """The convention ``name`` of instruction set ``arch`` ("" its default: SysV on x86-64,
    AAPCS64 on AArch64), with ``vectors`` vector registers allocatable when given."""
    if arch == "aarch64":
        if name not in ("", "aapcs64"):
            raise ValueError(f"AArch64 kernels follow AAPCS64, not {name!r}")
        return AAPCS64
    try:
        abi = X86_64_CONVENTIONS[name or "sysv"]
    except KeyError:
        raise ValueError(f"unknown x86-64 calling convention {name!r}; known: "
                         f"{', '.join(X86_64_CONVENTIONS)}") from None
    return abi.with_vectors(vectors) if vectors else abi
