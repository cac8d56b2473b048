"""The table method as a round engine on xmm blocks, for a mode skeleton that keeps its
blocks in vector registers (GCM): each block goes to four 32-bit column words in
general-purpose registers, through kernels/table_kernel.py's T-table rounds, and back.
NOT CONSTANT TIME (table_kernel.NOT_CONSTANT_TIME): the rounds index the tables by state
bytes.

A block's round 0 is two 64-bit XORs before it is split into words; FIPS-197 byte order
in and out (a column word is little endian: byte r of word c is state byte 4c + r), so a
FACE cache or table entry in xmm is the state as every other engine keeps it. One block
at a time: a round needs up to 9 of the 15 general-purpose registers beside the table
base and the context, and the mode's pointers and length stay live.
"""
from __future__ import annotations

from ..dsl.builder import KernelBuilder
from ..dsl.operands import Imm, Mem, Reg
from . import ctx_layout as L
from .engines import Keys
from .table_kernel import ScalarKeySchedule, round_tables, rounds


class TableEngine(ScalarKeySchedule):
    """T-table rounds (scalar) under the round-engine protocol of kernels/engines.py."""

    # its rounds take the general-purpose registers: a mode runs other work beside them in
    # sequence, not interleaved (modes/gcm/x86_64.Body.beside)
    stitched = False

    def prepare(self, k, b: KernelBuilder, ctx: Reg, bits: int) -> Keys:
        return Keys(ctx, None, 128)

    def rounds(self, k, b: KernelBuilder, keys: Keys, blocks: list[Reg],
               first: int, last: int, nr: int) -> None:
        a = b.asm
        tb = b.gp()
        a.lea(tb, b.const("tables", round_tables(), align=64))
        for x in blocks:
            lo, hi = b.gp(), b.gp()
            b.emit("movq", lo, x)
            b.emit("pextrq", hi, x, Imm(1))
            start = first
            if first == 0:                       # round 0: two 64-bit XORs
                a.xor(lo, Mem(64, base=keys.ctx, disp=L.ROUND_KEYS))
                a.xor(hi, Mem(64, base=keys.ctx, disp=L.ROUND_KEYS + 8))
                start = 1
            if start <= last:
                words = []
                for half in (lo, hi):
                    w = b.gp()
                    a.mov(w.w32, half.w32)
                    a.shr(half, Imm(32))
                    words += [w, half]
                w0, w1, w2, w3 = rounds(b, tb, keys.ctx, words, start, last, nr)
                lo, hi = w0, w2
                for low, high in ((w0, w1), (w2, w3)):
                    a.shl(high, Imm(32))
                    b.emit("or", low, high)
            t = b.xmm()
            b.emit("movq", x, lo)
            b.emit("movq", t, hi)
            b.emit("punpcklqdq", x, t)
