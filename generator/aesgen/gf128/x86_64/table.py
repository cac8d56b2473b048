"""GHASH by 8 KiB of lookup tables on x86-64 (the table method's hash): the lowering of
gf128/table.py. NOT CONSTANT TIME: the tables are indexed by nibbles of the accumulator,
which depends on H and the data.

A multiply takes the accumulator (xmm, hash order: the GHASH-order integer V, little
endian) to two general-purpose registers, splits each into its low nibbles shifted up by
4 and its high nibbles in place (byte j of either is a table entry's offset 16 n), and
XORs the 32 entries into four xmm accumulators, each a chain of 8 (memory operands of
PXOR, the table base the context). Per block: 2 moves out, 7 shifts and masks a half,
32 byte extractions, 32 loads folded into PXOR (or MOVDQA), 3 XORs: 103 instructions,
beside seed 004's 32 loads and 84 arithmetic instructions.

The tables are derived once a key (gf128/table.py): 128 doublings of H on a pair of
general-purpose registers (shift right, R under the mask of the bit shifted out), each
stored as the entry of one bit, then 11 XORs a table for the other entries.
"""
from __future__ import annotations

from collections.abc import Callable

from ...dsl.builder import KernelBuilder
from ...dsl.operands import Imm, Mem, Reg
from ...kernels.fields import Field
from ...kernels.vector_ops import VectorOps
from ..table import ENTRIES, POSITIONS, TABLE_BYTES, entry_offset
from .bytesliced import R_HIGH, times_x

HIGH_NIBBLES = 0xF0F0F0F0F0F0F0F0
FIELD = "H_TABLES"


def fields() -> list[Field]:
    """The hash section of a context this engine hashes in."""
    return [Field("hash", FIELD, TABLE_BYTES, 64,
                  "T_q[n] = (n << 4q) H at 16 (16 q + n), hash order (gf128/table.py); "
                  "NOT constant time to read")]


class TableHash:
    """The engine's operations on a context (``f(name, extra, width)`` addresses a field)."""

    name = "table"

    def __init__(self, b: KernelBuilder, v: VectorOps, f: Callable[..., Mem]) -> None:
        self.b, self.v, self.f, self.a = b, v, f, b.asm

    def _entry(self, q: int, index: Reg) -> Mem:
        """T_q[n] for the register holding 16 n."""
        base = self.f(FIELD, entry_offset(q, 0))
        return Mem(128, base=base.base, index=index, scale=1, disp=base.disp)

    def multiply(self, y: Reg) -> Reg:
        """y H (xmm, hash order) in a new register; y is left as it was."""
        a, b, v = self.a, self.b, self.v
        mask = b.gp()
        a.movabs(mask, Imm(HIGH_NIBBLES))
        sums = []
        for half in (0, 1):
            high = b.gp()
            if half:
                b.emit("pextrq", high, y, Imm(1))
            else:
                b.emit("movq", high, y)
            low = b.gp()
            a.mov(low, high)
            a.shl(low, Imm(4))                  # byte j: its low nibble, times 16
            b.emit("and", low, mask)
            b.emit("and", high, mask)           # byte j: its high nibble, times 16
            for nibbles, odd in ((low, 0), (high, 1)):
                acc = b.xmm()
                for j in range(8):
                    if j < 7:
                        i = b.gp()
                        a.movzx(i.w32, nibbles.w8)
                        a.shr(nibbles, Imm(8))
                    else:
                        i = nibbles                # the top byte, shifted down
                    entry = self._entry(2 * (8 * half + j) + odd, i)
                    if j:
                        v.xor(acc, acc, entry)
                    else:
                        v.load(acc, entry)
                sums.append(acc)
        v.xor(sums[0], sums[0], sums[1])
        v.xor(sums[2], sums[2], sums[3])
        v.xor(sums[0], sums[0], sums[2])
        return sums[0]

    def setup(self, h: Reg) -> None:
        """The tables from H = E_K(0^128) (xmm, block order): the entries of single bits by
        doubling, the others by XOR (gf128/table.tables)."""
        a, b, v = self.a, self.b, self.v
        hi, lo, r, ptr, left = b.gp(), b.gp(), b.gp(), b.gp(), b.gp()
        b.emit("movq", hi, h)
        b.emit("pextrq", lo, h, Imm(1))
        a.bswap(hi)                                  # V as a 128-bit big-endian integer
        a.bswap(lo)
        a.movabs(r, Imm(R_HIGH))
        last = self.f(FIELD, entry_offset(POSITIONS - 1, 0))
        a.lea(ptr, Mem(64, base=last.base, disp=last.disp))
        a.mov(left, Imm(POSITIONS))
        top = b.label("derive_tables")
        b.bind(top)
        with b.repeat(POSITIONS):
            for bit in (3, 2, 1, 0):                 # e_k H for k = 4q + 3 .. 4q
                a.mov(Mem(64, base=ptr, disp=16 << bit), lo)
                a.mov(Mem(64, base=ptr, disp=(16 << bit) + 8), hi)
                times_x(b, lo, hi, r)
            for n in range(3, ENTRIES):
                top_bit = 1 << (n.bit_length() - 1)
                if n != top_bit:
                    t = b.xmm()
                    v.load(t, Mem(128, base=ptr, disp=16 * top_bit))
                    v.xor(t, t, Mem(128, base=ptr, disp=16 * (n - top_bit)))
                    v.store(Mem(128, base=ptr, disp=16 * n), t)
            a.sub(ptr, Imm(16 * ENTRIES))
            a.sub(left, Imm(1))
            a.jne(top)
