"""Zeroing a context on AArch64 (init's clearing and wipe), 64 bytes an iteration."""
from __future__ import annotations

from ...dsl.builder import KernelBuilder
from ...dsl.operands import Imm, Mem, Reg


def zero_context(b: KernelBuilder, ctx: Reg, size: int) -> None:
    """Store zeros over the context's ``size`` bytes (a multiple of 64): two STP of a zero
    q register an iteration."""
    a = b.asm
    z, p, n = b.vec(128), b.gp(), b.gp()
    a.movi(z.d2, Imm(0))
    a.mov(p, ctx)
    a.mov(n, Imm(size // 64))
    loop = b.label("zero")
    b.bind(loop)
    a.stp(z.q, z.q, Mem(256, base=p, disp=32, writeback="post"))
    a.stp(z.q, z.q, Mem(256, base=p, disp=32, writeback="post"))
    a.subs(n, n, Imm(1))
    a.b_ne(loop)
