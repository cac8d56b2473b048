"""Calling conventions as data: which registers carry arguments, which a callee must keep."""
from __future__ import annotations

from dataclasses import dataclass

from ..dsl.operands import GP, VEC, Reg, gp


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
