"""GF(2^128) doubling on x86-64 (OTR's masks; specs/aes-otr.md section 2: a block is a
big-endian number modulo x^128 + x^7 + x^2 + x + 1).

Masks are held in *integer order*: the block byte-reversed (one PSHUFB), so that the register,
read as a little-endian 128-bit number, is the block's value (qword 1 the high half). A wide
register holds one mask a 128-bit lane. Two constant-time methods, the doubling engines an OTR
kernel chooses between (modes/__init__.py, OTR's ``hashes``):

- ``krovetz``: 2X in 5 instructions, Krovetz's (seed 001 quotes it): PSRAD 31 spreads each
  dword's top bit, PSHUFD moves it to the next dword up (the top one's to dword 0), PAND keeps
  1 there (0x87 in dword 0: the bit leaving x^127 comes back as x^7 + x^2 + x + 1), PSLLD 1,
  PXOR. 2^k X is k of them in a row.
- ``clmul``: 2^k X for any 1 <= k <= 64 in one step (the spec's batch shortcut):
  ((v << k) mod 2^128) XOR clmul(v >> (128 - k), 0x87): PSRLQ and PSLLQ by k and 64 - k,
  PSLLDQ 8 to carry the low half's top bits into the high half, one carry-less multiply of the
  bits leaving the top by 0x87 (at most 64 + 8 bits: no second reduction), two XORs (one
  VPTERNLOG under AVX-512): 6 instructions (5), whatever k is, so a register of four
  consecutive masks moves on by 2^4 in one step; with per-qword shift counts (VPSLLVQ,
  VPSRLVQ) each lane moves by its own k: X broadcast gives X, 2X, 4X, 8X in one step.

Seed 001's table methods (Aoki-Iwata-Yasuda's MOVMSKPD and a table; its own batch method's
two lookups) index memory by the mask's top bits, a secret: they are not built here.
"""
from __future__ import annotations

from dataclasses import dataclass

from ...dsl.builder import KernelBuilder
from ...dsl.operands import Reg
from ...kernels.vector_ops import XOR3, VectorOps

METHODS = ("krovetz", "clmul")
# instructions for 2^k X of one register, by method and encoding family (the reports' table;
# tests/test_otr_doubling.py counts the emitted ones against these)
INSTRUCTIONS = {("krovetz", "sse"): 7, ("krovetz", "avx"): 5, ("krovetz", "evex"): 5,
                ("clmul", "sse"): 10, ("clmul", "avx"): 6, ("clmul", "evex"): 5}

BYTE_REVERSE = bytes(range(15, -1, -1))
# after PSHUFD 0x93 (dword i <- dword i - 1): the carry into each dword's bit 0, and the bit
# leaving x^127 as x^7 + x^2 + x + 1 into dword 0
KROVETZ_KEEP = (0x87).to_bytes(4, "little") + (1).to_bytes(4, "little") * 3
REDUCE = (0x87).to_bytes(16, "little")          # qword 0: x^7 + x^2 + x + 1


@dataclass
class Doubling:
    """One function's doubling engine: ``method`` one of METHODS."""
    b: KernelBuilder
    v: VectorOps
    method: str

    def __post_init__(self) -> None:
        if self.method not in METHODS:
            raise ValueError(f"unknown doubling method {self.method!r}; known: "
                             f"{', '.join(METHODS)}")

    # --- block order <-> integer order ---------------------------------------------------
    def reverse(self, dst: Reg, src: Reg) -> None:
        """Block order to integer order, or back (the same byte reversal each lane)."""
        w = src.width
        self.v.shuffle_bytes(dst, src, self.b.const(f"byte_reverse{w}", BYTE_REVERSE * (w // 128),
                                                   align=w // 8))

    # --- 2^k X ---------------------------------------------------------------------------
    def times_power(self, x: Reg, k: int) -> Reg:
        """2^k X in each lane of x (integer order), in a new register; x is kept."""
        if not 1 <= k <= 64:
            raise ValueError(f"2^{k}: one step takes 1 <= k <= 64")
        if self.method == "krovetz":
            for _ in range(k):
                x = self._krovetz(x)
            return x
        return self._clmul(x, k)

    def double(self, x: Reg) -> Reg:
        return self.times_power(x, 1)

    def consecutive(self, x: Reg, width: int) -> Reg:
        """A register of ``width`` bits whose lane i holds 2^i X (X in integer order, xmm)."""
        b, v = self.b, self.v
        lanes = width // 128
        wide = b.vec(width)
        v.broadcast_register(wide, x)
        if lanes == 1:
            return wide
        if self.method == "krovetz":
            raise ValueError("consecutive masks in one register need the clmul method "
                             "(per-lane shift counts)")
        counts = b"".join(i.to_bytes(8, "little") * 2 for i in range(lanes))
        rest = b"".join((64 - i).to_bytes(8, "little") * 2 for i in range(lanes))
        return self._clmul(wide, (b.const(f"lane_shift{lanes}", counts, align=width // 8),
                                  b.const(f"lane_carry{lanes}", rest, align=width // 8)))

    def _krovetz(self, x: Reg) -> Reg:
        b, v = self.b, self.v
        t, y = b.vec(x.width), b.vec(x.width)
        v.shift_dwords_arith(t, x, 31)
        v.shuffle_dwords(t, t, 0x93)
        v.and_(t, t, b.const("krovetz_keep", KROVETZ_KEEP * (x.width // 128),
                             align=x.width // 8))
        v.shift_dwords_left(y, x, 1)
        v.xor(y, y, t)
        return y

    def _clmul(self, x: Reg, k) -> Reg:
        """2^k X: k an int (every lane), or (left counts, right counts) per qword."""
        b, v = self.b, self.v
        w = x.width
        s, u, t, c = (b.vec(w) for _ in range(4))
        if isinstance(k, int):
            v.shift_qwords(s, x, -k)
            v.shift_qwords(u, x, 64 - k)
        else:
            v.shift_qwords_by(s, x, k[0], left=True)
            v.shift_qwords_by(u, x, k[1], left=False)
        v.shift_bytes_left(t, u, 8)                 # the low half's top bits, into the high
        v.clmul(c, u, b.const(f"reduce{w}", REDUCE * (w // 128), align=w // 8), 0x01)
        if v.evex:
            v.ternary(s, t, c, XOR3)
        else:
            v.xor(s, s, t)
            v.xor(s, s, c)
        return s


def instructions_per_doubling(method: str, encoding: str, lanes: int) -> float:
    """Instructions a doubling costs when a register of ``lanes`` consecutive masks moves on
    by 2^lanes (clmul: one step; krovetz: one lane at a time, lanes 1)."""
    count = INSTRUCTIONS[(method, "sse" if encoding == "sse" else encoding)]
    return count / lanes if method == "clmul" else count
