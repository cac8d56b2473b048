"""What the AArch64 GHASH engines share: clmul's representation (gf128/x86_64/clmul.py: a
block byte-reversed as it is loaded, the key kept as H~, dot(a, b) = a b x^-128), the key
H~ from H, and the end of a multiply: Karatsuba's parts made whole and reduced by two
Montgomery folds. An engine supplies the products (``absorb``, ``times_h``, ``setup`` over
the powers it keeps in the context) and a fold's multiply by 0xC200000000000000
(``fold``): PMULL.1q in pmull.py, shifts in pmull8.py (no Crypto Extension).

What a GCM data path asks of an engine (modes/gcm/aarch64.py):
  setup(h)               H~ and what the engine keeps of its powers, into the context
  absorb(x, ptr, n, d)   X = (X ^ B1) H^n ^ B2 H^(n-1) ^ .. ^ Bn H, n blocks at ptr + d
  times_h(y) -> Reg      y H, reduced (hash order)
  load_block, byte_reverse
``f(name, extra, width)`` addresses a context field; ``powers`` is how many powers of H
the context holds (the longest absorb).
"""
from __future__ import annotations

from collections.abc import Callable

from ...dsl.builder import KernelBuilder
from ...dsl.operands import Imm, Mem, Reg
from ..x86_64.clmul import POLY, Products


class A64Ghash:
    """The shared part of an AArch64 hash engine (module text)."""

    name = ""
    # vector registers a batch's hash holds at its peak beside what the caller keeps
    registers = 0

    def __init__(self, b: KernelBuilder, f: Callable[..., Mem], powers: int,
                 karatsuba: bool) -> None:
        self.b, self.a, self.f = b, b.asm, f
        self.powers, self.karatsuba = powers, karatsuba

    # --- hash order ----------------------------------------------------------------------
    def byte_reverse(self, dst: Reg, src: Reg) -> None:
        """dst = the 16 bytes of src in reverse order (block order <-> hash order)."""
        self.a.rev64(dst.b16, src.b16)
        self.a.ext(dst.b16, dst.b16, dst.b16, Imm(8))

    def load_block(self, dst: Reg, src: Mem) -> None:
        """dst = the 16 bytes at src, byte-reversed (hash order)."""
        self.a.ldr(dst.q, src)
        self.byte_reverse(dst, dst)

    def constant(self, name: str, data: bytes) -> Reg:
        """A 16-byte constant in a register, loaded where it is used (a register kept from
        an earlier use could lie on another path)."""
        p = self.constant_address(name, data)
        x = self.b.vec(128)
        self.a.ldr(x.q, Mem(128, base=p))
        return x

    def constant_address(self, name: str, data: bytes) -> Reg:
        b = self.b
        p = b.gp()
        sym = b.const_symbol(name, data)
        b.asm.adrp(p, sym)
        b.asm.add(p, p, sym)
        return p

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
        b.emit("and", m.b16, m.b16, self.constant("hash_key_poly", POLY).b16)
        a.eor(x.b16, x.b16, m.b16)
        return x

    # --- the end of a multiply -----------------------------------------------------------
    def fold_constants(self):
        """What ``fold`` needs of 0xC200000000000000 in registers, loaded once a reduction."""
        raise NotImplementedError

    def fold(self, lo: Reg, constants) -> Reg:
        """lo with its halves swapped, plus lo's low half times 0xC200000000000000 (one
        Montgomery fold); lo may be overwritten."""
        raise NotImplementedError

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
        c = self.fold_constants()
        lo = self.fold(self.fold(p.lo, c), c)
        out = lo if dst is None else dst
        a.eor(out.b16, lo.b16, p.hi.b16)
        return out

    # --- what the data path asks -----------------------------------------------------------
    def setup(self, h: Reg) -> None:
        raise NotImplementedError

    def absorb(self, x: Reg, ptr: Reg, n: int, disp: int = 0) -> None:
        raise NotImplementedError

    def times_h(self, y: Reg) -> Reg:
        raise NotImplementedError
