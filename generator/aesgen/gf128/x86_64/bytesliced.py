"""GHASH without a carry-less multiply on x86-64: eight byte-sliced Horner streams times
H^8 by GF2P8AFFINEQB on ymm (GFNI and AVX2 in VEX forms; EVEX forms beside a zmm cipher,
where the registers may be ymm16-31), constant time.

The algebra, the layout and the Python model are in gf128/bytesliced.py; this is its
lowering. The state lives in the context, not in registers: STREAMS (16 qwords, byte m of
qword p is byte p of stream m) and HASHED (blocks hashed so far: public, it picks the
slots). A multiply reads its input from the context a qword at a time (VPBROADCASTQ, a
load with no shuffle) and its matrices as memory operands of the affines, so it needs six
ymm registers and no lookup at all: every address below depends on the context's base,
a public count and constants, never on H, a block or the state.

Cost a multiply of the eight streams (8 blocks hashed): 16 broadcasts, 64 affines, 60
XORs; a block sliced into the layout costs 12 shuffles a batch of 8. The matrices of H,
H^2, H^4 and H^8 (8 KiB) are derived once a key: 127 doublings a power on general-purpose
registers (shift, and the field's R folded in under a mask made from the bit shifted
out), then per input byte an 8x16 byte transpose and a bit transpose by one affine.
"""
from __future__ import annotations

from collections.abc import Callable

from ...dsl.builder import KernelBuilder
from ...dsl.operands import Imm, Mem, Reg
from ...kernels.fields import Field
from ...kernels.vector_ops import VectorOps
from ..bytesliced import POWERS, STREAMS, TRANSPOSER

MATRIX_BYTES = 16 * 16 * 8              # 256 matrix qwords a power
R_HIGH = 0xE1 << 56                     # R (SP 800-38D 6.3) in the high qword of V
# VPERMD's index: dword d of each lane (blocks 0-3, then blocks 4-7) side by side
SLICE_PERMUTE = b"".join(i.to_bytes(4, "little") for i in (0, 4, 1, 5, 2, 6, 3, 7))


def times_x(b: KernelBuilder, lo: Reg, hi: Reg, r: Reg) -> None:
    """V = V x on the GHASH-order integer V = hi:lo in general-purpose registers: a right
    shift by one, R (``r``: R_HIGH) folded into hi under a mask made from the bit shifted
    out, so no branch depends on V."""
    a, c = b.asm, b.gp()
    a.mov(c, lo)
    b.emit("and", c, Imm(1))
    a.neg(c)
    b.emit("and", c, r)
    b.emit("shrd", lo, hi, Imm(1))
    a.shr(hi, Imm(1))
    a.xor(hi, c)


def fields() -> list[Field]:
    """The hash section of a context this engine hashes in."""
    return [
        Field("hash", "MATRICES", MATRIX_BYTES * len(POWERS), 32,
              "times H^8, H^4, H^2, H: M[p][j] (input byte p, output byte j) at "
              "8 (16 p + j) in each power's 2 KiB (gf128/bytesliced.py)"),
        Field("hash", "STREAMS", 128, 32, "the eight streams, byte-sliced: byte m of qword "
              "p is byte p of stream m"),
        Field("hash", "HASHED", 8, 8, "blocks hashed into STREAMS (block i went to stream "
              "i mod 8)", public=True),
        Field("hash", "WORK", 128, 32, "the streams a tag is computed on (the stream "
              "itself goes on); a power of H being derived"),
        Field("hash", "WORK_HASHED", 8, 8, "HASHED of WORK", public=True),
    ]


class ByteSlicedHash:
    """The engine's operations on a context (``f(name, extra, width)`` addresses a field)."""

    name = "bytesliced"
    features = ("GFNI", "AVX2")

    def __init__(self, b: KernelBuilder, v: VectorOps,
                 f: Callable[..., Mem], polyval: bool = False) -> None:
        if v.sse:
            raise ValueError("the byte-sliced GHASH runs on ymm: VEX or EVEX encodings")
        self.b, self.v, self.f, self.a = b, v, f, b.asm
        # POLYVAL's bit order (RFC 8452): the matrices of GHASH's times H' =
        # mulX_GHASH(ByteReverse(H)) with the bytes numbered from the other end
        # (gf128/bytesliced.py, matrices); blocks, streams and the finish are unchanged
        self.polyval = polyval
        # the lane moves have other mnemonics in EVEX (AVX-512 VL) form
        self.insert = "vinserti32x4" if v.evex else "vinserti128"
        self.extract = "vextracti32x4" if v.evex else "vextracti128"

    # --- pieces ------------------------------------------------------------------------
    def _matrix(self, power: int, p: int, a: int) -> Mem:
        """M[p][4a .. 4a + 3] of the power's matrices: one ymm."""
        return self.f("MATRICES", MATRIX_BYTES * POWERS.index(power) + 128 * p + 32 * a, 256)

    def multiply(self, state: str, power: int) -> list[Reg]:
        """The streams in field ``state`` times H^power: four ymm, qwords 4a .. 4a + 3 in
        register a."""
        b, v = self.b, self.v
        out: list[Reg | None] = [None] * 4
        with b.phase("ghash_multiply"):
            for p in range(16):
                t = b.vec(256)
                b.emit("vpbroadcastq", t, self.f(state, 8 * p, 64))
                for a in range(4):
                    y = b.vec(256)
                    v.affine(y, t, self._matrix(power, p, a), 0)
                    if out[a] is None:
                        out[a] = y
                    else:
                        v.xor(out[a], out[a], y)
        return out

    def slice_blocks(self, ptr: Reg, disp: int, n: int) -> list[Reg]:
        """n (1..8) blocks at ptr + disp in the streams' layout, block i in slot i (the
        slots from n on zero): four ymm, qwords 4q .. 4q + 3 in register q."""
        b, v = self.b, self.v
        ys = []
        with b.phase("load_store"):
            for m in range(4):
                y = b.vec(256)
                if m < n:
                    v.load(y.view(128), Mem(128, base=ptr, disp=disp + 16 * m), aligned=False)
                else:
                    v.xor(y.view(128), y.view(128), y.view(128))   # VEX: the upper lane too
                if m + 4 < n:
                    b.emit(self.insert, y, y, Mem(128, base=ptr, disp=disp + 16 * (m + 4)),
                           Imm(1))
                ys.append(y)
        return self._slice(ys)

    def _slice(self, ys: list[Reg]) -> list[Reg]:
        """Rows m and m + 4 in the lanes of ys[m] -> the byte-sliced qwords (see module)."""
        b = self.b
        with b.phase("ghash_multiply"):
            pairs = []
            for name in ("vpunpcklbw", "vpunpckhbw"):        # bytes of rows (0,1), (2,3)
                for m in (0, 2):
                    r = b.vec(256)
                    b.emit(name, r, ys[m], ys[m + 1])
                    pairs.append(r)
            lo01, lo23, hi01, hi23 = pairs
            quads = []
            for x, y in ((lo01, lo23), (hi01, hi23)):        # dwords of rows 0..3
                for name in ("vpunpcklwd", "vpunpckhwd"):
                    r = b.vec(256)
                    b.emit(name, r, x, y)
                    quads.append(r)
            idx = b.vec(256)
            self.v.load(idx, b.const("slice_permute", SLICE_PERMUTE, align=32), aligned=False)
            out = []
            for q in quads:                                   # rows 0-3 beside rows 4-7
                r = b.vec(256)
                b.emit("vpermd", r, idx, q)
                out.append(r)
        return out

    def spread_block(self, y: Reg) -> list[Reg]:
        """One block (xmm, block order) in the streams' layout, in slot 0."""
        b, v = self.b, self.v
        out = []
        with b.phase("ghash_multiply"):
            for q in range(4):
                src = y
                if q:
                    src = b.xmm()
                    v.shift_bytes_right(src, y, 4 * q)
                r = b.vec(256)
                b.emit("vpmovzxbq", r, src)
                out.append(r)
        return out

    def _rotation(self, hashed: str, right: bool = False) -> tuple[Reg, Reg]:
        """Shift counts (xmm) that rotate every qword left by 8 (HASHED mod 8) bits (right
        with ``right``): the two halves of the rotation, 8 c and 64 - 8 c."""
        a, b, v = self.a, self.b, self.v
        c, d = b.gp(), b.gp()
        a.mov(c, self.f(hashed, width=64))
        b.emit("and", c, Imm(STREAMS - 1))
        a.shl(c, Imm(3))
        a.mov(d, Imm(64))
        a.sub(d, c)
        up, down = b.xmm(), b.xmm()
        v.from_gp64(up, d if right else c)
        v.from_gp64(down, c if right else d)
        return up, down

    def _rotate(self, regs: list[Reg], counts: tuple[Reg, Reg]) -> list[Reg]:
        b, v = self.b, self.v
        out = []
        for r in regs:
            hi, lo = b.vec(256), b.vec(256)
            b.emit("vpsllq", hi, r, counts[0])           # a count of 64 gives zero
            b.emit("vpsrlq", lo, r, counts[1])
            v.or_(hi, hi, lo)
            out.append(hi)
        return out

    # --- hashing -----------------------------------------------------------------------
    def absorb(self, state: str, hashed: str, xs: list[Reg], n: int) -> None:
        """Hash n (1..8) blocks in the streams' layout (block i in slot i) into the streams
        of field ``state``, continuing from the count in field ``hashed``."""
        b, v = self.b, self.v
        with b.phase("ghash_multiply"):
            counts = self._rotation(hashed)
            xs = self._rotate(xs, counts)
            t = self.multiply(state, 8)
            for q in range(4):
                v.xor(t[q], t[q], xs[q])
            if n < STREAMS:                               # the other slots keep their value
                ones = (1 << (8 * n)) - 1
                m = b.vec(256)
                b.emit("vpbroadcastq", m,
                       b.const(f"slots{n}", ones.to_bytes(8, "little"), align=8).at(64))
                (m,) = self._rotate([m], counts)
                for q in range(4):
                    s = b.vec(256)
                    v.load(s, self.f(state, 32 * q, 256), aligned=False)
                    if v.evex:                            # t = m ? t : s, bit by bit
                        v.ternary(t[q], m, s, 0xE2)
                    else:
                        b.emit("vpblendvb", t[q], s, t[q], m)
        with b.phase("load_store"):
            for q in range(4):
                v.store(self.f(state, 32 * q, 256), t[q], aligned=False)
            self.a.add(self.f(hashed, width=64), Imm(n))

    def absorb_blocks(self, state: str, hashed: str, ptr: Reg, n: int, disp: int = 0) -> None:
        """Hash n whole blocks at ptr + disp, 8 a multiply."""
        for first in range(0, n, STREAMS):
            count = min(STREAMS, n - first)
            self.absorb(state, hashed, self.slice_blocks(ptr, disp + 16 * first, count),
                        count)

    def absorb_block(self, state: str, hashed: str, y: Reg) -> None:
        """Hash the block in y (xmm, block order)."""
        self.absorb(state, hashed, self.spread_block(y), 1)

    def copy_state(self, src: str, src_hashed: str, dst: str, dst_hashed: str) -> None:
        b, v = self.b, self.v
        for q in range(4):
            r = b.vec(256)
            v.load(r, self.f(src, 32 * q, 256), aligned=False)
            v.store(self.f(dst, 32 * q, 256), r, aligned=False)
        t = b.gp()
        self.a.mov(t, self.f(src_hashed, width=64))
        self.a.mov(self.f(dst_hashed, width=64), t)

    def reset(self, state: str, hashed: str) -> None:
        """No block hashed: the streams zero."""
        b, v = self.b, self.v
        z = b.vec(256)
        v.xor(z.view(128), z.view(128), z.view(128))
        for q in range(4):
            v.store(self.f(state, 32 * q, 256), z, aligned=False)
        self.a.mov(self.f(hashed, width=64), Imm(0))

    def value(self, state: str, hashed: str) -> Reg:
        """GHASH of the blocks the streams of field ``state`` hold (xmm, block order).
        Overwrites the field (run it on WORK)."""
        b, v = self.b, self.v
        with b.phase("reduction"):
            s = []
            for q in range(4):
                r = b.vec(256)
                v.load(r, self.f(state, 32 * q, 256), aligned=False)
                s.append(r)
            s = self._rotate(s, self._rotation(hashed, right=True))   # slot t: stream t + n
            for q in range(4):
                v.store(self.f(state, 32 * q, 256), s[q], aligned=False)
            for power, shift in ((4, 32), (2, 16), (1, 8)):
                t = self.multiply(state, power)
                for q in range(4):
                    u = b.vec(256)
                    v.shift_qwords(u, s[q], shift)
                    v.xor(t[q], t[q], u)
                    v.store(self.f(state, 32 * q, 256), t[q], aligned=False)
                s = t
            return self._gather_slot0(self.multiply(state, 1))

    def _gather_slot0(self, regs: list[Reg]) -> Reg:
        """Byte 0 of the 16 qwords (register a: qwords 4a .. 4a + 3) as one block."""
        b, v = self.b, self.v
        acc = None
        for a_, r in enumerate(regs):
            control = bytearray([0x80] * 32)
            for lane in range(2):
                control[16 * lane + 4 * a_ + 2 * lane] = 0
                control[16 * lane + 4 * a_ + 2 * lane + 1] = 8
            g = b.vec(256)
            v.shuffle_bytes(g, r, b.const(f"slot0_{a_}", bytes(control), align=32))
            if acc is None:
                acc = g
            else:
                v.xor(acc, acc, g)
        hi = b.xmm()
        b.emit(self.extract, hi, acc, Imm(1))
        out = b.xmm()
        v.xor(out, acc.view(128), hi)
        return out

    # --- the key ------------------------------------------------------------------------
    def setup(self, h: Reg) -> None:
        """The matrices of H, H^2, H^4 and H^8 from H = E_K(0^128) (xmm, block order);
        H^2e = H^e H^e through the matrices of H^e. Uses WORK."""
        p = h
        for e in sorted(POWERS):
            self._derive(p, e)
            if e != max(POWERS):
                self.v.store(self.f("WORK"), p)
                sq = self.b.xmm()
                self.v.load(sq, self.f("WORK"))
                spread = self.spread_block(sq)
                for q in range(4):
                    self.v.store(self.f("WORK", 32 * q, 256), spread[q], aligned=False)
                p = self._gather_slot0(self.multiply("WORK", e))

    def _derive(self, p: Reg, power: int) -> None:
        """The matrices of P (xmm, block order) into the power's 2 KiB: a loop over the 16
        input bytes, each storing its bits' images P x^k (k = 8 byte .. 8 byte + 7) as
        rows, then slicing the rows (byte j of each row to qword j) and transposing every
        qword's bits in place."""
        a, b, v = self.a, self.b, self.v
        v.store(self.f("WORK"), p)
        hi, lo, r, ptr, left = b.gp(), b.gp(), b.gp(), b.gp(), b.gp()
        base = MATRIX_BYTES * POWERS.index(power)
        if self.polyval:                     # V = mulX_GHASH(ByteReverse(P))
            a.movabs(r, Imm(R_HIGH))
            a.mov(hi, self.f("WORK", 8, width=64))
            a.mov(lo, self.f("WORK", width=64))
            times_x(b, lo, hi, r)
            # GHASH's input byte p is POLYVAL's 15 - p: the last 128 bytes first
            a.lea(ptr, self.f("MATRICES", base + MATRIX_BYTES - 128))
        else:
            a.mov(hi, self.f("WORK", width=64))
            a.mov(lo, self.f("WORK", 8, width=64))
            a.bswap(hi)                              # V as a 128-bit big-endian integer
            a.bswap(lo)
            a.movabs(r, Imm(R_HIGH))
            a.lea(ptr, self.f("MATRICES", base))
        a.mov(left, Imm(16))
        transposer = b.vec(256)
        v.load(transposer, b.const("transposer", TRANSPOSER.to_bytes(8, "little") * 4,
                                   align=32), aligned=False)
        top = b.label(f"derive{power}")
        b.bind(top)
        with b.repeat(16):
            for m in range(8):
                if self.polyval:                     # the row's bytes from the other end
                    a.mov(Mem(64, base=ptr, disp=16 * m), lo)
                    a.mov(Mem(64, base=ptr, disp=16 * m + 8), hi)
                else:
                    t = b.gp()
                    for half, src in ((0, hi), (8, lo)):
                        a.mov(t, src)
                        a.bswap(t)
                        a.mov(Mem(64, base=ptr, disp=16 * m + half), t)
                times_x(b, lo, hi, r)
            qs = self.slice_blocks(ptr, 0, STREAMS)
            for q, x in enumerate(qs):
                m_ = b.vec(256)
                v.affine(m_, transposer, x, 0)
                v.store(Mem(256, base=ptr, disp=32 * q), m_, aligned=False)
            a.add(ptr, Imm(-128 if self.polyval else 128))
            a.sub(left, Imm(1))
            a.jne(top)
