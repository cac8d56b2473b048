"""GHASH with PMULL/PMULL2 (the Crypto Extension's 64x64 carry-less multiply) on AArch64:
multiply, accumulate, one reduction for many blocks.

The representation and arithmetic are gf128/x86_64/clmul.py's (Gueron and Kounavis; RFC
8452 appendix A), shared with the engine without the Crypto Extension (base.py): a block
is byte-reversed as it is loaded, the hash key is kept as H~, and dot(a, b) = a * b *
x^-128 is a 256-bit carry-less product and a Montgomery reduction in two 64-bit folds, each
a carry-less multiply by 0xC200000000000000. clmul.dot is the Python model of both
lowerings.

PCLMULQDQ picks the halves of its operands by an immediate; PMULL takes the low halves and
PMULL2 the high ones, so the cross products of schoolbook take one operand with its halves
swapped (EXT by 8), and Karatsuba's middle product the halves XORed (precomputed for the
powers of H). Operands are registers: the powers are loaded from the context (H_POWERS,
highest first, and with Karatsuba H_KARATSUBA).

POLYVAL (RFC 8452, AES-GCM-SIV) is the same engine in its other bit order (``polyval``), as
clmul.py's ``ClmulHash(polyval=True)``: a block loaded as it is (LDR Q puts bytes 0..7 in the
low half, little-endian) is already POLYVAL's integer, the key is H itself (no byte
reversal, no H~), and dot(a, b) = a b x^-128 mod x^128 + x^127 + x^126 + x^121 + 1 is
POLYVAL's own product (RFC 8452 Appendix A: GHASH is this dot on byte-reversed blocks with
the key H x). Multiplies, Karatsuba keys, the two folds by 0xC200000000000000 and the
powers' addressing are unchanged.
"""
from __future__ import annotations

from ...dsl.operands import Imm, Mem, Reg
from ..x86_64.clmul import POLY, Products
from .base import A64Ghash


class PmullHash(A64Ghash):
    """The PMULL hash engine on 128-bit registers."""

    name = "pmull"
    # X, the three sums, a block, a power of H and its Karatsuba key, two products, the
    # reduction constant
    registers = 10

    def __init__(self, b, f, powers: int, karatsuba: bool, polyval: bool = False) -> None:
        """``polyval``: POLYVAL's bit order (module text): blocks as they are, H itself."""
        super().__init__(b, f, powers, karatsuba)
        self.polyval = polyval

    def load_block(self, dst: Reg, src: Mem) -> None:
        """dst = the 16 bytes at src in hash order: byte-reversed for GHASH, as they are
        for POLYVAL."""
        if self.polyval:
            self.a.ldr(dst.q, src)
        else:
            super().load_block(dst, src)

    def hash_key(self, h: Reg) -> Reg:
        """GHASH's H~ from H in block order (base.py); POLYVAL's key is H as it is."""
        return h if self.polyval else super().hash_key(h)

    def poly(self) -> Reg:
        """0xC200000000000000 in the low half (clmul.POLY's high qword: PMULL multiplies
        low halves)."""
        return self.constant("ghash_poly", POLY[8:] + POLY[:8])

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

    def fold_constants(self) -> Reg:
        return self.poly()

    def fold(self, lo: Reg, poly: Reg) -> Reg:
        """lo's low half times 0xC2 << 56 by PMULL, added to lo with its halves swapped."""
        b, a = self.b, self.a
        f = b.vec(128)
        a.pmull(f.q1, lo.d1, poly.d1)
        a.ext(lo.b16, lo.b16, lo.b16, Imm(8))      # swap the halves
        a.eor(lo.b16, lo.b16, f.b16)
        return lo

    def dot(self, x: Reg, h: Reg, hk: Reg | None = None) -> Reg:
        """x * h reduced: one block's multiply."""
        return self.reduce(self.multiply(x, h, None, hk))

    # --- the powers of H in the context --------------------------------------------------
    def power(self, i: int, field: str = "H_POWERS") -> Mem:
        """H~^i (i >= 1) in the context (or its Karatsuba key)."""
        return self.f(field, 16 * (self.powers - i))

    def _power_regs(self, i: int) -> tuple[Reg, Reg | None]:
        h = self.b.vec(128)
        self.a.ldr(h.q, self.power(i))
        if not self.karatsuba:
            return h, None
        hk = self.b.vec(128)
        self.a.ldr(hk.q, self.power(i, "H_KARATSUBA"))
        return h, hk

    def setup(self, h: Reg) -> None:
        """H~ and its powers (and their Karatsuba keys) from H = E_K(0^128)."""
        a = self.a
        ht = self.hash_key(h)
        hk = self.karatsuba_key(ht) if self.karatsuba else None
        p = ht
        for i in range(1, self.powers + 1):
            if i > 1:
                p = self.dot(p, ht, hk)
            a.str(p.q, self.power(i))
            if self.karatsuba:
                a.str(self.karatsuba_key(p).q, self.power(i, "H_KARATSUBA"))

    def times_h(self, y: Reg) -> Reg:
        h, hk = self._power_regs(1)
        with self.b.phase("ghash_multiply"):
            return self.dot(y, h, hk)

    def load_powers(self, n: int) -> dict[int, tuple[Reg, Reg | None]]:
        """H^n .. H^1 (and their Karatsuba keys) in registers, for absorb's ``keys``: a loop
        that hashes and does nothing else has the room to keep them (2n registers with
        Karatsuba, n without)."""
        return {i: self._power_regs(i) for i in range(n, 0, -1)}

    def absorb(self, x: Reg, ptr: Reg, n: int, disp: int = 0, *,
               keys: dict[int, tuple[Reg, Reg | None]] | None = None,
               carried_last: bool = False) -> None:
        """X = (X ^ B1) H^n ^ B2 H^(n-1) ^ .. ^ Bn H for the n blocks at ptr + disp, one
        reduction. ``keys``: the powers in registers (load_powers), else each loaded where
        it is used. ``carried_last``: the block X joins is multiplied last, so the X the
        next call takes waits on one multiply and the reduction, not on the sum of every
        product before it (the chain that bounds a loop of hashes alone)."""
        b, a = self.b, self.a
        acc = None
        for j in list(range(1, n)) + [0] if carried_last else range(n):
            y = b.vec(128)
            with b.phase("load_store"):
                self.load_block(y, Mem(128, base=ptr, disp=disp + 16 * j))
            with b.phase("ghash_multiply"):
                if j == 0:
                    a.eor(y.b16, y.b16, x.b16)
                h, hk = keys[n - j] if keys is not None else self._power_regs(n - j)
                acc = self.multiply(y, h, acc, hk)
        with b.phase("reduction"):
            self.reduce(acc, dst=x)
