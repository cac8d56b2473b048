"""GHASH on AArch64 without the Crypto Extension, constant time: the 64x64 carry-less
products from PMULL.8b (base Advanced SIMD: eight 8x8-bit products a register, fixed
latency), the reduction by shifts. The method and its Python model, step for step, are
gf128/pmull8.py; the representation and the end of a multiply are base.py's (shared with
the PMULL engine), so the two engines keep the same H~ and compute the same dot.

A multiply of n blocks (Karatsuba on 64-bit halves, 3 products a block):

  for each byte rotation k = 0..7 of the key's halves (stored per power in the context)
    lo_k = sum over blocks of PMULL  (K_k(H^i), Y)    low halves
    hi_k = sum over blocks of PMULL2 (K_k(H^i), Y)    high halves
    mi_k = sum over blocks of PMULL  (M_k(H^i), Y.lo ^ Y.hi), two blocks a PMULL/PMULL2
           pair where their middle keys share a 16-byte slot
    each sum spread to its place in the 128-bit product: 4 EXT and 2 EOR (k > 0)
  then Karatsuba's parts made whole and two Montgomery folds (base.py), each fold's
  multiply by 0xC2 << 56 three USHL of the low half by (s, s - 64), s = 57, 62, 63.

Per block: 24 PMULL, about 21 EOR, 6 loads of rotated keys, 2 to byte-reverse the block and
1.5 for the middle operand; per batch the spreads (126) and the reduction (about 30). Every
address is the context's base plus a constant: no lookup, no branch, no index depends on H,
the data or the accumulator. The keys' rotations cost 1.5 KiB a context for 8 powers
(H_ROTATIONS 16 bytes, H_MIDDLES 8 bytes, per power and rotation) and are made in init by
TBL with constant indices.

The multiply is emitted as one straight stretch and ordered by the list scheduler
(kernels/a64/schedule.py) with the preset core's latencies under a register budget: an
in-order core (Cortex-A53: 6 cycles to every Advanced SIMD result) would otherwise wait on
each sum's chain.
"""
from __future__ import annotations

from collections.abc import Callable

from ...dsl.builder import KernelBuilder
from ...dsl.operands import Imm, Mem, Reg, VList
from ...kernels.fields import Field
from ...kernels.a64.schedule import Latencies, scheduled
from ..pmull8 import REDUCTION_SHIFTS, ROTATIONS
from ..x86_64.clmul import Products
from .base import A64Ghash

# TBL indices: each 64-bit half rotated by k bytes (byte j <- byte (j + k) mod 8), k = 0..7
ROTATE_INDEX = b"".join(bytes([(j + k) % 8 for j in range(8)] + [8 + (j + k) % 8 for j in range(8)])
                        for k in range(ROTATIONS))
# USHL shift counts a 64-bit lane (the low byte, signed): (s, s - 64) is t x^s on 128 bits
FOLD_SHIFTS = b"".join(s.to_bytes(8, "little") + (s - 64).to_bytes(8, "little", signed=True)
                       for s in REDUCTION_SHIFTS)
ROT_BYTES, MID_BYTES = 16, 8          # a rotated key, a rotated middle key


def fields(powers: int) -> list[Field]:
    """The hash section of a context this engine hashes in (powers even: middle keys pair)."""
    if powers % 2:
        raise ValueError("the PMULL.8b engine keeps an even number of powers")
    return [
        Field("hash", "H_ROTATIONS", ROT_BYTES * ROTATIONS * powers, 64,
              "K_k(H~^i): each 64-bit half of H~^i rotated by k bytes, at 16 (k powers + "
              "powers - i) (gf128/pmull8.py)"),
        Field("hash", "H_MIDDLES", MID_BYTES * ROTATIONS * powers, 64,
              "M_k(H~^i): H~^i's halves XORed, rotated by k bytes, at 8 (k powers + powers "
              "- i): two powers a 16-byte slot"),
    ]


class Pmull8Hash(A64Ghash):
    """The constant-time engine without the Crypto Extension (module text)."""

    name = "pmull8"

    def __init__(self, b: KernelBuilder, f: Callable[..., Mem], powers: int,
                 karatsuba: bool, latencies: Latencies, budget: int) -> None:
        super().__init__(b, f, powers, karatsuba)
        self.latencies, self.budget = latencies, budget
        self.registers = budget

    # --- the key's rotations ---------------------------------------------------------------
    def _slot(self, power: int) -> int:
        return self.powers - power

    def _bases(self) -> tuple[Reg, Reg]:
        """Address registers of H_ROTATIONS and H_MIDDLES (their offsets pass LDP's reach)."""
        out = []
        with self.b.phase("ghash_multiply"):
            for name in ("H_ROTATIONS", "H_MIDDLES"):
                out.append(self._address(name))
        return out[0], out[1]

    def _address(self, name: str) -> Reg:
        """ctx + the field's offset (mov, add where it passes ADD's 12-bit immediate)."""
        m = self.f(name, width=64)
        r = self.b.gp()
        if m.disp < 4096:
            self.a.add(r, m.base, Imm(m.disp))
        else:
            self.a.mov(r, Imm(m.disp))
            self.a.add(r, m.base, r)
        return r

    def _rotations(self, p: Reg, power: int, rot: Reg, mid: Reg) -> None:
        """Store K_k and M_k of p = H~^power, k = 0..7 (TBL by constant indices)."""
        a, b = self.a, self.b
        src = self.constant_address("ghash_rotate", ROTATE_INDEX)
        idx = [b.vec(128) for _ in range(ROTATIONS)]
        for q in range(0, ROTATIONS, 4):
            a.ld1(VList(tuple(r.b16 for r in idx[q:q + 4])),
                  Mem(512, base=src, disp=64, writeback="post"))
        s = b.vec(128)
        a.ext(s.b16, p.b16, p.b16, Imm(8))
        a.eor(s.b16, s.b16, p.b16)                   # p.lo ^ p.hi in both halves
        slot = self._slot(power)
        for k in range(ROTATIONS):
            kr, mr = (p, s) if k == 0 else (b.vec(128), b.vec(128))
            if k:
                a.tbl(kr.b16, VList((p.b16,)), idx[k].b16)
                a.tbl(mr.b16, VList((s.b16,)), idx[k].b16)
            a.str(kr.q, Mem(128, base=rot, disp=ROT_BYTES * (self.powers * k + slot)))
            a.str(mr.d, Mem(64, base=mid, disp=MID_BYTES * (self.powers * k + slot)))

    def setup(self, h: Reg) -> None:
        """H~ from H, then H~^2 .. H~^powers, each times H~ (whose rotations are stored
        first), and the rotations of each."""
        rot, mid = self._bases()
        p = self.hash_key(h)
        for i in range(1, self.powers + 1):
            if i > 1:
                q = self.b.vec(128)
                with self._scheduled(q):
                    self._dot([p], [self._slot(1)], rot, mid, dst=q)
                p = q
            self._rotations(p, i, rot, mid)

    # --- multiply ----------------------------------------------------------------------------
    def _middle_operands(self, ys: list[Reg], slots: list[int]) -> list[tuple]:
        """(operand register, blocks' slots, pair) for the middle products: two blocks whose
        middle keys share a 16-byte slot in one register (Y.lo ^ Y.hi of each, side by
        side: TRN1, TRN2, EOR), the others alone (both halves Y.lo ^ Y.hi: EXT, EOR)."""
        a, b = self.a, self.b
        out, j = [], 0
        while j < len(ys):
            if slots[j] % 2 == 0 and j + 1 < len(ys) and slots[j + 1] == slots[j] + 1:
                lo, hi, xs = b.vec(128), b.vec(128), b.vec(128)
                a.trn1(lo.d2, ys[j].d2, ys[j + 1].d2)
                a.trn2(hi.d2, ys[j].d2, ys[j + 1].d2)
                a.eor(xs.b16, lo.b16, hi.b16)
                out.append((xs, slots[j], True))
                j += 2
                continue
            xs = b.vec(128)
            a.ext(xs.b16, ys[j].b16, ys[j].b16, Imm(8))
            a.eor(xs.b16, xs.b16, ys[j].b16)
            out.append((xs, slots[j], False))
            j += 1
        return out

    def _sum(self, terms: list[Reg]) -> Reg:
        """The XOR of the terms, as a balanced tree (short chains for an in-order core)."""
        tree = _Tree(self)
        for t in terms:
            tree.add(t)
        return tree.total()

    def _spread(self, s: Reg, k: int, zero: Reg) -> tuple[Reg, Reg]:
        """The lanes of rotation k's sum at their places: those that did not wrap (up 2k
        bytes, the top dropped, down k) and those that did (down 16 - 2k, up 8 - k)."""
        a, b = self.a, self.b
        t1, kept, t2, wrapped = (b.vec(128) for _ in range(4))
        a.ext(t1.b16, zero.b16, s.b16, Imm(16 - 2 * k))
        a.ext(kept.b16, t1.b16, zero.b16, Imm(k))
        a.ext(t2.b16, s.b16, zero.b16, Imm(16 - 2 * k))
        a.ext(wrapped.b16, zero.b16, t2.b16, Imm(8 + k))
        return kept, wrapped

    def _products(self, ys: list[Reg], slots: list[int], rot: Reg, mid: Reg) -> Products:
        """Karatsuba's three sums over the blocks ys (hash order) times the powers in
        ``slots``, unreduced (the module text)."""
        a, b = self.a, self.b
        mids = self._middle_operands(ys, slots)
        zero = b.vec(128)
        a.movi(zero.d2, Imm(0))
        parts: list[Reg | None] = [None, None, None]
        for k in range(ROTATIONS):
            terms = [_Tree(self) for _ in range(3)]
            j = 0
            while j < len(ys):                      # K_k of consecutive slots: one LDP
                pair = j + 1 < len(ys) and slots[j + 1] == slots[j] + 1
                keys = [b.vec(128) for _ in range(2 if pair else 1)]
                disp = ROT_BYTES * (self.powers * k + slots[j])
                if pair:
                    a.ldp(keys[0].q, keys[1].q, Mem(256, base=rot, disp=disp))
                else:
                    a.ldr(keys[0].q, Mem(128, base=rot, disp=disp))
                for key, y in zip(keys, ys[j:j + len(keys)]):
                    lo, hi = b.vec(128), b.vec(128)
                    a.pmull(lo.h8, key.b8, y.b8)
                    a.pmull2(hi.h8, key.b16, y.b16)
                    terms[0].add(lo)
                    terms[1].add(hi)
                j += len(keys)
            for xs, slot, paired in mids:
                disp = MID_BYTES * (self.powers * k + slot)
                m, p = b.vec(128), b.vec(128)
                if paired:
                    a.ldr(m.q, Mem(128, base=mid, disp=disp))
                    p2 = b.vec(128)
                    a.pmull2(p2.h8, m.b16, xs.b16)
                    terms[2].add(p2)
                else:
                    a.ldr(m.d, Mem(64, base=mid, disp=disp))
                a.pmull(p.h8, m.b8, xs.b8)
                terms[2].add(p)
            for i, tree in enumerate(terms):           # each part: a chain over k
                s = tree.total()
                if k == 0:
                    parts[i] = s
                    continue
                kept, wrapped = self._spread(s, k, zero)
                t, acc = b.vec(128), b.vec(128)
                a.eor(t.b16, kept.b16, wrapped.b16)
                a.eor(acc.b16, parts[i].b16, t.b16)
                parts[i] = acc
        lo, hi, mi = parts
        return Products(lo, hi, mi, karatsuba=True)

    def fold_constants(self) -> list[Reg]:
        regs = [self.b.vec(128) for _ in REDUCTION_SHIFTS]
        self.a.ld1(VList(tuple(r.d2 for r in regs)),
                   Mem(384, base=self.constant_address("ghash_fold", FOLD_SHIFTS)))
        return regs

    def fold(self, lo: Reg, shifts: list[Reg]) -> Reg:
        """lo's low half t in both lanes, shifted by (s, s - 64) for each bit s of 0xC2 << 56
        (t x^s as 128 bits), summed, plus lo with its halves swapped."""
        a, b = self.a, self.b
        t = b.vec(128)
        a.dup(t.d2, lo.lane_view("d", 0))
        terms = []
        for c in shifts:
            u = b.vec(128)
            a.ushl(u.d2, t.d2, c.d2)
            terms.append(u)
        sw = b.vec(128)
        a.ext(sw.b16, lo.b16, lo.b16, Imm(8))
        return self._sum(terms + [sw])

    def _dot(self, ys: list[Reg], slots: list[int], rot: Reg, mid: Reg,
             dst: Reg | None = None) -> Reg:
        """The blocks times their powers, reduced (into dst when given)."""
        b = self.b
        with b.phase("ghash_multiply"):
            p = self._products(ys, slots, rot, mid)
        with b.phase("reduction"):
            return self.reduce(p, dst=dst)

    def _scheduled(self, keep: Reg):
        """The stretch emitted inside, ordered by the list scheduler (module text)."""
        return scheduled(self.b, self.budget, self.latencies, keep=(keep,))

    # --- what the data path asks -----------------------------------------------------------
    def times_h(self, y: Reg) -> Reg:
        rot, mid = self._bases()
        out = self.b.vec(128)
        with self._scheduled(out):
            self._dot([y], [self._slot(1)], rot, mid, dst=out)
        return out

    def absorb(self, x: Reg, ptr: Reg, n: int, disp: int = 0) -> None:
        b, a = self.b, self.a
        rot, mid = self._bases()
        with self._scheduled(x):
            ys = [b.vec(128) for _ in range(n)]
            with b.phase("load_store"):
                for j in range(0, n, 2):
                    if j + 1 < n:
                        a.ldp(ys[j].q, ys[j + 1].q, Mem(256, base=ptr, disp=disp + 16 * j))
                    else:
                        a.ldr(ys[j].q, Mem(128, base=ptr, disp=disp + 16 * j))
                for y in ys:
                    self.byte_reverse(y, y)
            with b.phase("ghash_multiply"):
                a.eor(ys[0].b16, ys[0].b16, x.b16)
            self._dot(ys, [self._slot(n - j) for j in range(n)], rot, mid, dst=x)


class _Tree:
    """A running XOR whose pending terms pair up as they come (a binary counter): at most
    log2(n) + 1 of them live, and every chain is short."""

    def __init__(self, g: Pmull8Hash) -> None:
        self.g, self.levels = g, []           # (level, register), lowest level last

    def add(self, t: Reg, level: int = 0) -> None:
        while self.levels and self.levels[-1][0] == level:
            _, other = self.levels.pop()
            s = self.g.b.vec(128)
            self.g.a.eor(s.b16, other.b16, t.b16)
            t, level = s, level + 1
        self.levels.append((level, t))

    def total(self) -> Reg:
        regs = [r for _, r in self.levels]
        while len(regs) > 1:
            s = self.g.b.vec(128)
            self.g.a.eor(s.b16, regs[-2].b16, regs[-1].b16)
            regs[-2:] = [s]
        self.levels = []
        return regs[0]
