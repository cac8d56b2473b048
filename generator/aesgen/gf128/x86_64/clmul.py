"""GHASH with PCLMULQDQ on xmm: multiply, accumulate, one reduction for many blocks.

Representation (the one Gueron and Kounavis use for GCM, and the bridge RFC 8452 appendix A
states between GHASH and POLYVAL): a block is byte-reversed (PSHUFB) as it is loaded, so
the register holds int.from_bytes(block, "big") = the POLYVAL element of ByteReverse(block).
The hash key is kept as H~ = mulX_POLYVAL(ByteReverse(H)), i.e. (bswap(H) << 1) reduced by
x^128 + x^127 + x^126 + x^121 + 1. Then

    GHASH multiply  X * H   ==  bswap( dot(bswap(X), H~) ),   dot(a, b) = a * b * x^-128

and dot is a 256-bit carry-less product followed by a Montgomery reduction by x^128 in two
64-bit folds, each a carry-less multiply by 0xC200000000000000 (the polynomial's terms
x^127 + x^126 + x^121 seen from bit 64). Powers stay in the same form:
dot(H~^i, H~) = H~^(i+1). Because the reduction is linear, n products are summed first and
reduced once (aggregated reduction). tests/test_gf128_clmul.py checks this algebra against
the bit-by-bit model (model/gf128.py) before any instruction is trusted with it.
"""
from __future__ import annotations

from dataclasses import dataclass

from ...dsl.builder import KernelBuilder
from ...dsl.operands import Imm, Mem, Reg
from ...kernels.vector_ops import XOR3, VectorOps

BSWAP128 = bytes(range(15, -1, -1))
# qword 0 = 1, qword 1 = 0xC200000000000000: the reduction constant (qword 1) and, as a
# whole, the low 128 bits of x^128 + x^127 + x^126 + x^121 + 1 for the hash-key doubling.
POLY = (1).to_bytes(8, "little") + (0xC2 << 56).to_bytes(8, "little")


def dot(a: int, b: int) -> int:
    """The lowering's arithmetic in Python, step for step (for the tests)."""
    m64 = (1 << 64) - 1

    def clmul(x: int, y: int) -> int:
        r = 0
        for i in range(64):
            if y >> i & 1:
                r ^= x << i
        return r

    def swap(x: int) -> int:
        return ((x & m64) << 64) | (x >> 64)

    lo = clmul(a & m64, b & m64)
    hi = clmul(a >> 64, b >> 64)
    mi = clmul(a & m64, b >> 64) ^ clmul(a >> 64, b & m64)
    lo ^= (mi << 64) & ((1 << 128) - 1)
    hi ^= mi >> 64
    for _ in range(2):
        lo = swap(lo) ^ clmul(lo & m64, 0xC2 << 56)
    return lo ^ hi


def hash_key(h_block: bytes) -> int:
    """H~ for the block H (Python, for the tests)."""
    x = int.from_bytes(h_block, "big") << 1
    if x >> 128:
        x ^= (1 << 128) | int.from_bytes(POLY, "little")
    return x


@dataclass
class Products:
    """Unreduced sum of products: low, high and middle 128-bit parts. With Karatsuba the
    middle part is the sum of (a.lo ^ a.hi)(b.lo ^ b.hi), which still lacks lo ^ hi."""
    lo: Reg
    hi: Reg
    mi: Reg
    karatsuba: bool = False


class ClmulHash:
    """The PCLMULQDQ hash engine on xmm (SSE or VEX encoding), and VPCLMULQDQ on ymm (VEX)
    and zmm (EVEX): a wide register holds two or four blocks, each multiplied by its own
    power of H in its lane; the lanes are added (folded) before the one reduction."""

    name = "clmul"
    features = ("PCLMULQDQ",)

    def __init__(self, b: KernelBuilder, v: VectorOps, polyval: bool = False) -> None:
        """``polyval``: POLYVAL's bit order (RFC 8452), where a block as loaded is already
        the integer dot multiplies and the key is H itself (no byte reversal, no H~)."""
        self.b, self.v, self.polyval = b, v, polyval

    def bswap_mask(self, width: int = 128) -> Mem:
        return self.b.const(f"bswap{width}", BSWAP128 * (width // 128), align=width // 8)

    def _poly(self, width: int = 128) -> Mem:
        if width == 128:
            return self.b.const("ghash_poly", POLY)
        return self.b.const(f"ghash_poly{width}", POLY * (width // 128), align=width // 8)

    def load_block(self, dst: Reg, src: Mem, *, aligned: bool = False) -> None:
        """dst = each 16 bytes at src in hash order, one a lane: byte-reversed for GHASH, as
        they are for POLYVAL."""
        self.v.load(dst, src.at(dst.width), aligned=aligned)
        if not self.polyval:
            self.v.shuffle_bytes(dst, dst, self.bswap_mask(dst.width))

    def hash_key(self, h: Reg) -> Reg:
        """H~ from H = E_K(0^128) in block order (see the module text); POLYVAL's key as it
        is."""
        b, v = self.b, self.v
        if self.polyval:
            return h
        x, t, m = b.xmm(), b.xmm(), b.xmm()
        v.shuffle_bytes(x, h, self.bswap_mask())
        v.shift_qwords(t, x, 63)                 # each qword's top bit, at bit 0
        v.shift_bytes_left(t, t, 8)              # the low qword's carry into the high one
        v.shuffle_dwords(m, x, 0xFF)
        v.shift_dwords_arith(m, m, 31)           # all ones when bit 127 of x is set
        v.shift_qwords(x, x, -1)
        v.or_(x, x, t)
        v.and_(m, m, self._poly())
        v.xor(x, x, m)
        return x

    def _forms(self, x: Reg, h: Reg | Mem, hk: Reg | Mem | None) -> tuple:
        """The carry-less multiplies of x * h as (part, source, key, imm), part 0/1/2 =
        low/high/middle: schoolbook's four, or with hk (h.lo ^ h.hi, precomputed with the
        powers) Karatsuba's three, the middle one on x.lo ^ x.hi (computed here)."""
        if hk is None:
            return ((0, x, h, 0x00), (1, x, h, 0x11), (2, x, h, 0x01), (2, x, h, 0x10))
        xs = self.karatsuba_key(x)
        return ((0, x, h, 0x00), (1, x, h, 0x11), (2, xs, hk, 0x00))

    def _accumulate(self, x: Reg, h: Reg | Mem, hk: Reg | Mem | None,
                    acc: Products | None) -> Products:
        """acc += x * h, each product into the sum as soon as it exists (one temporary
        live); a new sum takes the first product of each part directly."""
        b, v, w = self.b, self.v, x.width
        forms = self._forms(x, h, hk)
        fresh = acc is None
        if fresh:
            acc = Products(b.vec(w), b.vec(w), b.vec(w), karatsuba=hk is not None)
        parts, started = (acc.lo, acc.hi, acc.mi), set()
        for k, src, key, imm in forms:
            if fresh and k not in started:
                v.clmul(parts[k], src, key, imm)
                started.add(k)
                continue
            t = b.vec(w)
            v.clmul(t, src, key, imm)
            v.xor(parts[k], parts[k], t)
        return acc

    def multiply(self, x: Reg, h: Reg | Mem, acc: Products | None) -> Products:
        """acc += x * h, unreduced (schoolbook: four carry-less multiplies). x is kept."""
        return self._accumulate(x, h, None, acc)

    def multiply_karatsuba(self, x: Reg, h: Reg | Mem, hk: Reg | Mem,
                           acc: Products | None) -> Products:
        """acc += x * h with three carry-less multiplies: hk holds h.lo ^ h.hi in its low
        qword (precomputed with the powers); the middle term is fixed once, in reduce."""
        return self._accumulate(x, h, hk, acc)

    def multiply_two(self, xs: tuple[Reg, Reg], hs: tuple, hks: tuple | None,
                     acc: Products | None) -> Products:
        """acc += xs[0] * hs[0] + xs[1] * hs[1], unreduced, for EVEX: the two registers'
        products are summed three at a time (VPTERNLOGD), 3 or 4 sums for the pair where
        one XOR a product takes 6 or 8. Schoolbook when hks is None, else Karatsuba with
        hks[i] the middle key of hs[i]. A power in memory is loaded once for its low and
        high multiplies (with 32 registers there is room; on Zen 4 loads slow VPCLMULQDQ)."""
        b, v, w = self.b, self.v, xs[0].width
        if not v.evex:
            raise ValueError("multiply_two sums with VPTERNLOGD: EVEX only")
        hs = tuple(self._in_register(h, w) for h in hs)
        parts: list[list[Reg]] = [[], [], []]            # lo, hi, middle products
        for i, (x, h) in enumerate(zip(xs, hs)):
            for k, src, key, imm in self._forms(x, h, None if hks is None else hks[i]):
                t = b.vec(w)
                v.clmul(t, src, key, imm)
                parts[k].append(t)
        if acc is None:
            acc = Products(b.vec(w), b.vec(w), b.vec(w), karatsuba=hks is not None)
            for dst, terms in zip((acc.lo, acc.hi, acc.mi), parts):
                if len(terms) == 2:
                    v.xor(dst, terms[0], terms[1])
                else:
                    v.xor3(dst, terms[0], terms[1], terms[2])
                    v.xor(dst, dst, terms[3])
            return acc
        for dst, terms in zip((acc.lo, acc.hi, acc.mi), parts):
            for j in range(0, len(terms), 2):
                v.ternary(dst, terms[j], terms[j + 1], XOR3)
        return acc

    def _in_register(self, h: Reg | Mem, width: int) -> Reg:
        if isinstance(h, Reg):
            return h
        r = self.b.vec(width)
        self.v.load(r, h, aligned=False)
        return r

    def karatsuba_key(self, h: Reg) -> Reg:
        """h.lo ^ h.hi in both qwords: the operand of Karatsuba's middle multiply (of a
        power of H, precomputed, or of a block)."""
        k = self.b.vec(h.width)
        self.v.shuffle_dwords(k, h, 0x4E)
        self.v.xor(k, k, h)
        return k

    def fold_lanes(self, part: Reg) -> Reg:
        """The sum over the lanes of a wide register, in xmm (zmm: halves, then lanes)."""
        if part.width == 128:
            return part
        b, v = self.b, self.v
        if part.width == 512:                          # lanes 2, 3 onto lanes 0, 1
            t = b.vec(256)
            b.emit("vextracti64x4", t, part, Imm(1))
            half = part.view(256)
            v.xor(half, half, t)
            part = half
        t = b.xmm()
        b.emit("vextracti32x4" if v.evex else "vextracti128", t, part, Imm(1))
        low = part.view(128)
        v.xor(low, low, t)
        return low

    def reduce(self, p: Products, *, lanes_apart: bool = False) -> Reg:
        """dot-reduce a sum of products to 128 bits (two folds by the polynomial). The
        middle part joins the low and high parts in every lane first (all of it is
        linear), so a wide sum folds two parts into xmm, not three. ``lanes_apart``: each
        lane reduced on its own, the result as wide as the products (no lane sum)."""
        b, v = self.b, self.v
        if p.karatsuba:                            # the middle term lacks lo ^ hi
            if v.evex:
                v.ternary(p.mi, p.lo, p.hi, XOR3)
            else:
                v.xor(p.mi, p.mi, p.lo)
                v.xor(p.mi, p.mi, p.hi)
        t = b.vec(p.mi.width)
        v.shift_bytes_left(t, p.mi, 8)
        v.xor(p.lo, p.lo, t)
        v.shift_bytes_right(t, p.mi, 8)
        v.xor(p.hi, p.hi, t)
        if lanes_apart:
            lo, hi = p.lo, p.hi
        else:
            lo, hi = self.fold_lanes(p.lo), self.fold_lanes(p.hi)
        for _ in range(2):
            f = b.vec(lo.width)
            v.clmul(f, lo, self._poly(lo.width), 0x10)     # lo's qword 0 times 0xC2<<56
            v.shuffle_dwords(lo, lo, 0x4E)         # swap the qwords
            v.xor(lo, lo, f)
        v.xor(lo, lo, hi)
        return lo

    def dot(self, x: Reg, h: Reg | Mem) -> Reg:
        """x * h reduced: one block's multiply."""
        return self.reduce(self.multiply(x, h, None))

    def dot_lanes(self, x: Reg, h: Reg) -> Reg:
        """x * h lane by lane, each lane reduced (a wide register of products: powers of
        H, several a multiply)."""
        return self.reduce(self.multiply(x, h, None), lanes_apart=True)
