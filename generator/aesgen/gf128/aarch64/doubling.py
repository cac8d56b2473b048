"""GF(2^128) doubling on AArch64 (OTR's masks; specs/aes-otr.md section 2: a block is a
big-endian number modulo x^128 + x^7 + x^2 + x + 1). The twin of gf128/x86_64/doubling.py.

Masks stay in *block order*: Advanced SIMD shifts every byte lane by the same count and EXT
moves whole bytes, so the big-endian block needs no byte reversal at all. The x86 layer
keeps masks in integer order (the block byte-reversed by one PSHUFB) because its lanes are
dwords and qwords of a little-endian number; here that order would cost a REV64 and an EXT
(or a TBL and its index register) each way, two instructions a mask, for nothing a byte
lane cannot do in place.

- ``neon-krovetz``: 2X in 5 instructions, Krovetz's doubling (seed 001 quotes it) on byte
  lanes: SSHR #7 spreads each byte's top bit over the byte, EXT #1 of that register with
  itself moves it to the byte before (byte i gets byte i + 1's; byte 15 gets byte 0's, the
  bit leaving x^127), AND keeps 1 there and 0x87 in byte 15 (the bit comes back as
  x^7 + x^2 + x + 1), SHL #1, EOR. The AND's operand (1 in bytes 0..14, 0x87 in byte 15)
  is made once (MOVI, MOV, INS: no memory) and kept in a register by the caller. The chain
  is 4 deep (SSHR, EXT, AND, EOR; the SHL beside them). 2^k X is k of them in a row.

What the x86 clmul step does (2^k X in one step from one carry-less multiply) would cost
here USHR and SHL on the 64-bit lanes, EXT to carry the low half's top bits up, PMULL2 of
the bits leaving the top by 0x87 and two EOR (one EOR3 with FEAT_SHA3): 6 (5) instructions
on integer order, plus the reversal of each mask used (REV64 + EXT). A NEON register holds
one mask, so no lanes share that step: it pays where one register moves by 2^k with k
large, never in a chain that uses every mask, and OTR's chains use every one. It is not
built; neither are seed 001's table methods (they index memory by a mask's top bits, a
secret).

Instruction counts (the reports' and tests/test_otr_aarch64.py's table): 5 a doubling, 0 a
byte reversal, 3 for the constant once a function.
"""
from __future__ import annotations

from dataclasses import dataclass

from ...dsl.builder import KernelBuilder
from ...dsl.operands import Imm, Reg

METHODS = ("neon-krovetz",)
# instructions for 2X of one register, by method (tests/test_otr_aarch64.py counts them)
INSTRUCTIONS = {"neon-krovetz": 5}
# the constant the AND keeps: 1 in bytes 0..14 (the carry into each byte's bit 0), 0x87 in
# byte 15 (x^128 = x^7 + x^2 + x + 1)
KEEP = bytes([1] * 15 + [0x87])


@dataclass
class Doubling:
    """One function's doubling engine: ``method`` one of METHODS. Values are vector
    registers in block order (FIPS-197 byte order, byte 0 the top byte)."""
    b: KernelBuilder
    method: str = "neon-krovetz"

    def __post_init__(self) -> None:
        if self.method not in METHODS:
            raise ValueError(f"unknown AArch64 doubling method {self.method!r}; known: "
                             f"{', '.join(METHODS)}")

    def constant(self) -> Reg:
        """The AND's operand (KEEP) in a new register: MOVI of 1 to every byte, 0x87 into
        byte 15."""
        a, b = self.b.asm, self.b
        keep, t = b.vec(128), b.gp()
        a.movi(keep.b16, Imm(1))
        a.mov(t.w, Imm(0x87))
        a.ins(keep.lane_view("b", 15), t.w)
        return keep

    def double(self, x: Reg, keep: Reg, dst: Reg | None = None) -> Reg:
        """2X (block order) in ``dst`` (a new register when None); x is kept unless it is
        dst. ``keep`` is constant()'s register."""
        a, b = self.b.asm, self.b
        t = b.vec(128)
        y = dst if dst is not None else b.vec(128)
        a.sshr(t.b16, x.b16, Imm(7))                 # 0xff where a byte's top bit is set
        a.ext(t.b16, t.b16, t.b16, Imm(1))           # byte i <- byte i + 1, 15 <- 0
        b.emit("and", t.b16, t.b16, keep.b16)        # 1 (0x87 in byte 15) where set
        a.shl(y.b16, x.b16, Imm(1))
        a.eor(y.b16, y.b16, t.b16)
        return y

    def times_power(self, x: Reg, k: int, keep: Reg) -> Reg:
        """2^k X in a new register (k >= 0; k = 0 gives a copy)."""
        if k < 0:
            raise ValueError(f"2^{k}: k must not be negative")
        if k == 0:
            y = self.b.vec(128)
            self.b.asm.mov(y.b16, x.b16)
            return y
        for _ in range(k):
            x = self.double(x, keep)
        return x


def instructions_per_doubling(method: str) -> int:
    """Instructions one doubling costs (a chain of masks: one doubling a mask)."""
    return INSTRUCTIONS[method]
