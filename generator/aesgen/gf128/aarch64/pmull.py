"""GHASH with PMULL/PMULL2 (the Crypto Extension's 64x64 carry-less multiply) on AArch64:
multiply, accumulate, one reduction for many blocks.

The representation and arithmetic are gf128/x86_64/clmul.py's (Gueron and Kounavis; RFC
8452 appendix A): a block is byte-reversed as it is loaded (REV64, then EXT by 8), the hash
key is kept as H~ = mulX_POLYVAL(ByteReverse(H)), and dot(a, b) = a * b * x^-128 is a
256-bit carry-less product and a Montgomery reduction in two 64-bit folds, each a carry-less
multiply by 0xC200000000000000. clmul.dot is the Python model of both lowerings.

PCLMULQDQ picks the halves of its operands by an immediate; PMULL takes the low halves and
PMULL2 the high ones, so the cross products of schoolbook take one operand with its halves
swapped (EXT by 8), and Karatsuba's middle product the halves XORed (precomputed for the
powers of H). Operands are registers: the powers are loaded from the context.
"""
from __future__ import annotations

from ...dsl.builder import KernelBuilder
from ...dsl.operands import Imm, Mem, Reg
from ..x86_64.clmul import POLY, Products


class PmullHash:
    """The PMULL hash engine on 128-bit registers."""

    name = "pmull"

    def __init__(self, b: KernelBuilder) -> None:
        self.b, self.a = b, b.asm

    def byte_reverse(self, dst: Reg, src: Reg) -> None:
        """dst = the 16 bytes of src in reverse order (block order <-> hash order)."""
        self.a.rev64(dst.b16, src.b16)
        self.a.ext(dst.b16, dst.b16, dst.b16, Imm(8))

    def load_block(self, dst: Reg, src: Mem) -> None:
        """dst = the 16 bytes at src, byte-reversed (hash order)."""
        self.a.ldr(dst.q, src)
        self.byte_reverse(dst, dst)

    def _constant(self, name: str, data: bytes) -> Reg:
        b = self.b
        p, x = b.gp(), b.vec(128)
        sym = b.const_symbol(name, data)
        b.asm.adrp(p, sym)
        b.asm.add(p, p, sym)
        b.asm.ldr(x.q, Mem(128, base=p))
        return x

    def poly(self) -> Reg:
        """0xC200000000000000 in the low half (clmul.POLY's high qword: PMULL multiplies
        low halves), loaded where it is used (a register kept from an earlier use could
        lie on another path)."""
        return self._constant("ghash_poly", POLY[8:] + POLY[:8])

    def hash_key(self, h: Reg) -> Reg:
        """H~ from H = E_K(0^128) in block order: ByteReverse, then doubled in POLYVAL's
        order (the 128-bit value shifted left by one, the polynomial's low terms added
        under a mask made from the bit shifted out of the top: no branch on H)."""
        b, a = self.b, self.a
        x, carry, zero, t, m = (b.vec(128) for _ in range(5))
        self.byte_reverse(x, h)
        a.ushr(carry.d2, x.d2, Imm(63))           # each half's top bit, at its bit 0
        a.shl(x.d2, x.d2, Imm(1))
        a.movi(zero.d2, Imm(0))
        a.ext(t.b16, zero.b16, carry.b16, Imm(8))  # the low half's bit into the high half
        a.orr(x.b16, x.b16, t.b16)
        a.dup(t.d2, carry.lane_view("d", 1))      # bit 127 of H, in both halves
        a.sub(m.d2, zero.d2, t.d2)                # all ones when it was set
        b.emit("and", m.b16, m.b16, self._constant("hash_key_poly", POLY).b16)
        a.eor(x.b16, x.b16, m.b16)
        return x

    def karatsuba_key(self, h: Reg) -> Reg:
        """h.lo ^ h.hi in the low half: the operand of Karatsuba's middle multiply."""
        k = self.b.vec(128)
        self.a.ext(k.b16, h.b16, h.b16, Imm(8))
        self.a.eor(k.b16, k.b16, h.b16)
        return k

    def _forms(self, x: Reg, h: Reg, hk: Reg | None) -> list[tuple[int, object]]:
        """The carry-less products of x * h as (part, emit(dst)), part 0/1/2 = low/high/
        middle: schoolbook's four, or with hk Karatsuba's three (the operands they share,
        h with its halves swapped or x's halves XORed, are made here, once)."""
        a = self.a
        out = [(0, lambda d: a.pmull(d.q1, x.d1, h.d1)),
               (1, lambda d: a.pmull2(d.q1, x.d2, h.d2))]
        if hk is None:
            hs = self.b.vec(128)
            a.ext(hs.b16, h.b16, h.b16, Imm(8))
            out += [(2, lambda d: a.pmull(d.q1, x.d1, hs.d1)),      # x.lo * h.hi
                    (2, lambda d: a.pmull2(d.q1, x.d2, hs.d2))]     # x.hi * h.lo
        else:
            xs = self.karatsuba_key(x)
            out.append((2, lambda d: a.pmull(d.q1, xs.d1, hk.d1)))
        return out

    def multiply(self, x: Reg, h: Reg, acc: Products | None,
                 hk: Reg | None = None) -> Products:
        """acc += x * h, unreduced (schoolbook, or Karatsuba with hk). x and h are kept; a
        new sum takes the first product of each part directly."""
        b, a = self.b, self.a
        fresh = acc is None
        if fresh:
            acc = Products(b.vec(128), b.vec(128), b.vec(128), karatsuba=hk is not None)
        parts, started = (acc.lo, acc.hi, acc.mi), set()
        for k, emit in self._forms(x, h, hk):
            if fresh and k not in started:
                emit(parts[k])
                started.add(k)
                continue
            t = b.vec(128)
            emit(t)
            a.eor(parts[k].b16, parts[k].b16, t.b16)
        return acc

    def reduce(self, p: Products, dst: Reg | None = None) -> Reg:
        """dot-reduce a sum of products to 128 bits (two folds by the polynomial), into
        ``dst`` when given (no copy after)."""
        b, a = self.b, self.a
        if p.karatsuba:                            # the middle term lacks lo ^ hi
            a.eor(p.mi.b16, p.mi.b16, p.lo.b16)
            a.eor(p.mi.b16, p.mi.b16, p.hi.b16)
        zero, t = b.vec(128), b.vec(128)
        a.movi(zero.d2, Imm(0))
        a.ext(t.b16, zero.b16, p.mi.b16, Imm(8))   # mi << 64
        a.eor(p.lo.b16, p.lo.b16, t.b16)
        a.ext(t.b16, p.mi.b16, zero.b16, Imm(8))   # mi >> 64
        a.eor(p.hi.b16, p.hi.b16, t.b16)
        lo, poly = p.lo, self.poly()
        for _ in range(2):
            f = b.vec(128)
            a.pmull(f.q1, lo.d1, poly.d1)          # lo's low half times 0xC2 << 56
            a.ext(lo.b16, lo.b16, lo.b16, Imm(8))  # swap the halves
            a.eor(lo.b16, lo.b16, f.b16)
        out = lo if dst is None else dst
        a.eor(out.b16, lo.b16, p.hi.b16)
        return out

    def dot(self, x: Reg, h: Reg, hk: Reg | None = None) -> Reg:
        """x * h reduced: one block's multiply."""
        return self.reduce(self.multiply(x, h, None, hk))
