"""Short moves (fewer than 32 bytes, the count known only at run time, no byte loop) on
AArch64: the operations arch/short_pieces.py is written over. A piece branches on a bit of
the count (TBZ); units move through a general-purpose register (LDR, LDRB), XOR loads its
operand first (EOR has no memory operand), zeros come from XZR.
"""
from __future__ import annotations

from ...dsl.builder import KernelBuilder
from ...dsl.operands import XZR, Imm, Mem, Reg
from .. import short_pieces


def _view(r: Reg, unit: int) -> Reg:
    return r if unit == 8 else r.w


class _Ops:
    @staticmethod
    def skip_unless_bit(b: KernelBuilder, n: Reg, piece: int, label) -> None:
        b.asm.tbz(n, Imm(piece.bit_length() - 1), label)

    @staticmethod
    def load(b: KernelBuilder, t: Reg, unit: int, m: Mem) -> None:
        (b.asm.ldrb if unit == 1 else b.asm.ldr)(_view(t, unit), m)

    @staticmethod
    def xor(b: KernelBuilder, t: Reg, unit: int, m: Mem) -> None:
        k = b.gp()
        _Ops.load(b, k, unit, m)
        b.emit("eor", t, t, k)

    @staticmethod
    def store(b: KernelBuilder, m: Mem, unit: int, t: Reg | None) -> None:
        (b.asm.strb if unit == 1 else b.asm.str)(_view(XZR if t is None else t, unit), m)

    @staticmethod
    def or_(b: KernelBuilder, diff: Reg, t: Reg) -> None:
        b.emit("orr", diff, diff, t)

    @staticmethod
    def advance(b: KernelBuilder, p: Reg, piece: int) -> None:
        b.asm.add(p, p, Imm(piece))


OPS = _Ops()
# short_move(b, n, src=, dst=, ...), short_zero(b, n, dst=), short_differ(b, n, a=, ...)
short_move, short_zero, short_differ = short_pieces.bound(OPS)
