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

Seed 001's table methods index memory by the mask's top bits, a secret: NOT constant time,
so only the table method's kernels take them (modes/__init__.py, OTR's ``method_hashes``),
and those kernels say so:

- ``aoki``: Aoki-Iwata-Yasuda's (DIAC 2012, as seed 001 shows it): MOVMSKPD takes the two
  qwords' top bits as an index 0..3, PSLLQ 1 doubles each qword, and a PXOR of a 4-entry
  table puts back what left them (the low qword's top bit as bit 64, the high one's as
  0x87): 3 instructions and a lookup (4 here: the index is scaled by 16).
- ``batch-table``: seed 001's batch method ("A new batch method for 8 doublings"): the top
  byte a of the high qword and b of the low one index two 256-entry tables, TX[a] holding
  what 2^i X must get back for the bits leaving x^127 (a >> (8 - i) times 0x87, 2 bytes)
  and TY[b] the low qword's carry into the high one (b >> (8 - i)), for each i; then 2^i X
  is PSHUFB (the i-th pair of values into place), PSLLQ i, PXOR: 3 instructions a doubling
  after the two lookups. The seed joins its two lookups with two unpacks; here the two
  tables keep their values in different bytes of a 4-byte slot, so one POR joins them, and
  a 16-byte entry serves 2^1 .. 2^4 X (a batch of four pairs' masks, from one pair of
  lookups; 8 KiB of tables).
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

from ...dsl.builder import KernelBuilder
from ...dsl.operands import Imm, Mem, Reg
from ...kernels.vector_ops import XOR3, VectorOps
from ...model.gf128 import clmul

METHODS = ("krovetz", "clmul", "aoki", "batch-table")
TABLE_METHODS = ("aoki", "batch-table")        # NOT constant time: a secret index
BATCH_TABLE_SPAN = 4                             # batch-table: 2^1 .. 2^4 X a pair of lookups
# batch-table's two lookups: PEXTRB, SHL, LEA each, a load and a POR
BATCH_LOOKUP_INSTRUCTIONS = 8
# instructions for 2^k X of one register, by method and encoding family (the reports' table;
# tests/test_otr_doubling.py counts the emitted ones against these); batch-table: a
# doubling's own 3 (3 more for the SSE copies), the 8 of its lookups shared by the batch
INSTRUCTIONS = {("krovetz", "sse"): 7, ("krovetz", "avx"): 5, ("krovetz", "evex"): 5,
                ("clmul", "sse"): 10, ("clmul", "avx"): 6, ("clmul", "evex"): 5,
                ("aoki", "sse"): 6, ("aoki", "avx"): 5, ("aoki", "evex"): 5,
                ("batch-table", "sse"): 5, ("batch-table", "avx"): 3,
                ("batch-table", "evex"): 3}

BYTE_REVERSE = bytes(range(15, -1, -1))
# after PSHUFD 0x93 (dword i <- dword i - 1): the carry into each dword's bit 0, and the bit
# leaving x^127 as x^7 + x^2 + x + 1 into dword 0
KROVETZ_KEEP = (0x87).to_bytes(4, "little") + (1).to_bytes(4, "little") * 3
REDUCE = (0x87).to_bytes(16, "little")          # qword 0: x^7 + x^2 + x + 1
# aoki: by the index (qword 1's top bit, qword 0's): what the doubled qwords get back
AOKI_TABLE = b"".join((0x87 if e & 2 else 0).to_bytes(8, "little") + (e & 1).to_bytes(8, "little")
                      for e in range(4))


@lru_cache(maxsize=None)
def _batch_tables() -> tuple[bytes, bytes]:
    """batch-table's TX and TY: entry v, slot s (4 bytes) for 2^(s+1): TX bytes 0-1 the
    reduction (v >> (7 - s)) * 0x87, TY byte 2 the carry v >> (7 - s); the rest zero."""
    tx, ty = bytearray(), bytearray()
    for v in range(256):
        for s in range(BATCH_TABLE_SPAN):
            tx += clmul(v >> (7 - s), 0x87).to_bytes(2, "little") + bytes(2)
            ty += bytes(2) + bytes([v >> (7 - s)]) + bytes(1)
    return bytes(tx), bytes(ty)


def _batch_select(i: int) -> bytes:
    """PSHUFB control for 2^i X: slot i - 1's reduction into bytes 0-1, its carry into
    byte 8, zero elsewhere."""
    s = i - 1
    c = [0x80] * 16
    c[0], c[1], c[8] = 4 * s, 4 * s + 1, 4 * s + 2
    return bytes(c)


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
        if self.method in ("krovetz", "aoki"):
            step = self._krovetz if self.method == "krovetz" else self._aoki
            for _ in range(k):
                x = step(x)
            return x
        if self.method == "batch-table":
            return self.times_powers(x, [k])[0]
        return self._clmul(x, k)

    def times_powers(self, x: Reg, ks: list[int]) -> list[Reg]:
        """2^k X for each k of ks, new registers; batch-table: from one pair of lookups
        for every k up to BATCH_TABLE_SPAN (whole spans chained past it)."""
        if self.method != "batch-table":
            return [self.times_power(x, k) for k in ks]
        out: dict[int, Reg] = {}
        base, done = x, 0
        while len(out) < len(set(ks)):
            joined = self._batch_lookup(base)
            for k in sorted(set(ks)):
                if done < k <= done + BATCH_TABLE_SPAN:
                    out[k] = self._batch_step(base, joined, k - done)
            if len(out) < len(set(ks)):
                base = self._batch_step(base, joined, BATCH_TABLE_SPAN)
                done += BATCH_TABLE_SPAN
        return [out[k] for k in ks]

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

    def _aoki(self, x: Reg) -> Reg:
        """2X: MOVMSKPD, PSLLQ 1, PXOR of the table entry at the top bits (a secret
        index: NOT constant time)."""
        if x.width != 128:
            raise ValueError("aoki doubles one xmm mask at a time")
        b, v, a = self.b, self.v, self.b.asm
        idx, tb = b.gp(), b.gp()
        b.emit("movmskpd" if v.sse else "vmovmskpd", idx.w32, x)
        a.shl(idx, Imm(4))
        a.lea(tb, b.const("aoki_table", AOKI_TABLE, align=64))
        y = b.xmm()
        v.shift_qwords(y, x, -1)
        v.xor(y, y, Mem(128, base=tb, index=idx))
        return y

    def _batch_lookup(self, x: Reg) -> Reg:
        """batch-table's two lookups, joined: TX at the high qword's top byte (byte 15),
        TY at the low qword's (byte 7), each scaled by 16 (a secret index: NOT constant
        time)."""
        if x.width != 128:
            raise ValueError("batch-table doubles one xmm mask at a time")
        b, v, a = self.b, self.v, self.b.asm
        tx, ty = _batch_tables()
        extract = "pextrb" if v.sse else "vpextrb"
        joined = b.xmm()
        for name, table, byte in (("batch_tx", tx, 15), ("batch_ty", ty, 7)):
            i, tb = b.gp(), b.gp()
            b.emit(extract, i.w32, x, Imm(byte))
            a.shl(i, Imm(4))
            a.lea(tb, b.const(name, table, align=64))
            if name == "batch_tx":
                v.load(joined, Mem(128, base=tb, index=i), aligned=True)
            else:
                v.or_(joined, joined, Mem(128, base=tb, index=i))
        return joined

    def _batch_step(self, x: Reg, joined: Reg, i: int) -> Reg:
        """2^i X (1 <= i <= BATCH_TABLE_SPAN) from the joined lookups: PSHUFB, PSLLQ i,
        PXOR."""
        b, v = self.b, self.v
        c, y = b.xmm(), b.xmm()
        v.shuffle_bytes(c, joined, b.const(f"batch_select{i}", _batch_select(i)))
        v.shift_qwords(y, x, -i)
        v.xor(y, y, c)
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
    by 2^lanes (clmul: one step; krovetz and aoki: one lane at a time, lanes 1;
    batch-table: its 3 and a share of the lookups a batch of BATCH_TABLE_SPAN shares)."""
    count = INSTRUCTIONS[(method, "sse" if encoding == "sse" else encoding)]
    if method == "batch-table":
        return count + BATCH_LOOKUP_INSTRUCTIONS / BATCH_TABLE_SPAN
    return count / lanes if method == "clmul" else count
