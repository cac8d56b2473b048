"""Short moves (fewer than 32 bytes, the count known only at run time, no byte loop) on
x86-64: the operations arch/short_pieces.py is written over. A piece branches on a bit of
the count (TEST, JE); units move through a general-purpose register (MOV, MOVZX), XOR takes
its memory operand directly.
"""
from __future__ import annotations

from ...dsl.builder import KernelBuilder
from ...dsl.operands import Imm, Mem, Reg
from .. import short_pieces


class _Ops:
    @staticmethod
    def skip_unless_bit(b: KernelBuilder, n: Reg, piece: int, label) -> None:
        b.asm.test(n, Imm(piece))
        b.asm.je(label)

    @staticmethod
    def load(b: KernelBuilder, t: Reg, unit: int, m: Mem) -> None:
        if unit == 8:
            b.asm.mov(t, m)
        elif unit == 4:
            b.asm.mov(t.w32, m)
        else:
            b.asm.movzx(t.w32, m)

    @staticmethod
    def xor(b: KernelBuilder, t: Reg, unit: int, m: Mem) -> None:
        b.asm.xor({8: t, 4: t.w32, 1: t.w8}[unit], m)

    @staticmethod
    def store(b: KernelBuilder, m: Mem, unit: int, t: Reg | None) -> None:
        b.asm.mov(m, Imm(0) if t is None else {8: t, 4: t.w32, 1: t.w8}[unit])

    @staticmethod
    def or_(b: KernelBuilder, diff: Reg, t: Reg) -> None:
        b.emit("or", diff, t)

    @staticmethod
    def advance(b: KernelBuilder, p: Reg, piece: int) -> None:
        b.asm.add(p, Imm(piece))


OPS = _Ops()
# short_move(b, n, src=, dst=, ...), short_zero(b, n, dst=), short_differ(b, n, a=, ...)
short_move, short_zero, short_differ = short_pieces.bound(OPS)
