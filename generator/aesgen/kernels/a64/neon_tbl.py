"""neon-tbl: AES rounds on AArch64 without the Cryptographic Extension (seed 003, Kwon).

Constant time: the only table lookups are TBL/TBX, whose timing does not depend on the index
values; no AESE/AESMC/PMULL anywhere (init included). The domain is the plain FIPS state,
D_r = s_r (c_r = 0), so the FACE caches of a neon-tbl context equal the x86 ones byte for
byte (engines.py docstring).

SubBytes: the 256-byte S-box in 16 vector registers
----------------------------------------------------
Four groups of four consecutive registers (the allocator colours each TBL list together),
S[0:64], S[64:128], S[128:192], S[192:256]. Per 16-byte register (seed 003's sequence):

    i1 = x - 0x40 ; y = tbl {S0..S3}, x ; tbx y, {S4..S7}, i1
    i2 = i1 - 0x40;                      tbx y, {S8..S11}, i2
    i3 = i2 - 0x40;                      tbx y, {S12..S15}, i3

TBL writes 0 for an index >= 64 and TBX leaves the byte alone, so each byte is written by
exactly the lookup of its quarter: 1 tbl + 3 tbx + 3 sub = 7 instructions a register.
Resident through the loop: the 16 S-box registers and the 0x40 and 0x1b splats (18; the
skeleton adds its counter step, so 13 remain for 4 blocks and temporaries; v8-v15 are among
the registers used and the frame saves their low halves).

MixColumns: seed 003's transposed form, not one block a register
-----------------------------------------------------------------
Counted per block and round, S-box (7 a register either way) apart:

  one block a register (xtime form): a = tbl(y, SR) 1, r = rot1(a) = tbl(y, ROT1.SR) 1,
      t = a ^ r 1, xtime(t) = add + cmlt + and + eor 4, rot2(t) = rev32 .8h 1, 2 EORs to
      combine, AddRoundKey 1, round key load                   = 11 (+7 = 18 a block)
  transposed, 4 blocks in 4 registers (register r = row r of the 4 blocks):
      ShiftRows 3 EXT (row 0 stays), MixColumns 23 (seed 003's 10 steps: 3 EOR,
      3 xtime of 4, 8 EOR), AddRoundKey 4 EOR folded into those EORs, 2 LDP of the key rows
                                                               = 32 / 4 = 8 (+7 = 15)
      plus the transposes: 8 TRN in and 8 TRN out a call of ``rounds`` (4 a block a call).

The transposed form is cheaper: AES-128 FACE r2 (rounds 3..9 and the last) costs 122
instructions a block in ``rounds_3_nr`` against about 7 x 18 + 10 = 136 for the other. The
layout: block b, column c, row r goes to register r, lane 4c + b (column-major across the
blocks). Two TRN levels (.16b, then .8h) swap the block index with the row index and are
their own inverse (8 instructions each way, in registers, where seed 003 goes through memory
with ld4/st4: a 4-register ld4 is 4-5 issue cycles on its own in llvm-mca's A53 model and
would need the skeleton's loads). With lane 4c + b, ShiftRows of row r is a rotation of the
whole register by 4r bytes: ``ext x, x, x, #4r``, one instruction and no index register (the
row-major layout 4b + c would need a rotation inside each 32-bit word: TBL with an index
register, or USHR+SLI, 2). ShiftRows is applied before SubBytes (they commute), so the EXTs
start while the previous MixColumns finishes. The round key rows (rk[4c + r] repeated over
the 4 blocks) are precomputed in init into the context's method area (``layout.extra``,
15 x 64 bytes): K0, K0^K1, K2, K2^K3 for rounds 1..nr-1, so each is consumed by one of
MixColumns' first EORs (X1' = X0' ^ (T0 ^ K0 ^ K1) ^ 2T2 carries K0 from X0') and the four
key registers free before the xtimes; rounds 0 and nr keep the plain rows.

ShiftRows and the rotations: EXT, not REV32/TRN or TBL
------------------------------------------------------
In the transposed form ShiftRows is the only permutation (MixColumns combines whole
registers, no rotation at all): 3 EXT, the minimum of one instruction a moved row. Seed 003's
rev32/trn RotLeft (2 instructions) is not needed. In byte order (the last round, below)
ShiftRows is a general byte permutation: one TBL with an index register.

The last round, the calls and the schedule
-------------------------------------------
The skeleton calls ``rounds`` for the FACE split points and ``last_round`` per pair of a
batch. Within one batch the engine keeps what the next call needs in registers, used only
when no instruction emitted in between wrote a block register and no jump from before enters
that stretch (``_take``): a call continuing the previous one (round 3 of the FACE fast path in
``rounds_from_offset``, then rounds 4..; rounds 0..2 then 3.. in full mode) starts from the rows
left in registers (no transpose in); a call ending at nr - 1 transposes D_{nr-1} out into
the blocks (the interface) and runs the last round on them in byte order, 4 blocks together
(S-box 7, ShiftRows TBL 1, rk_nr EOR 1 a block), so ``last_round`` is one EOR with the data.
Fewer than 4 blocks pad the transpose with copies of the first block. The instruction order
is chosen for an in-order core (llvm-mca's Cortex-A53 model: one 128-bit ASIMD instruction
a cycle, results after 6 cycles): the S-box interleaves the 4 registers so every TBX finds
its inputs 6 instructions back, the key loads sit inside the S-box, and MixColumns follows a
list schedule (12 stall cycles a round instead of 20).

Key expansion (init): FIPS-197 word by word in general registers as the armv8-ce engine,
with SubWord as the 7-instruction TBL/TBX S-box on the word splatted into a vector (the
S-box is loaded into 16 registers for it); then each round key is spread into its 4
replicated rows by 4 TBL (index constants) and stored with one st1 of 4 registers.
"""
from __future__ import annotations

from dataclasses import dataclass

from ...dsl.ir import Instruction, LabelDef
from ...dsl.operands import Imm, Mem, Reg, VList
from ...model.aes import SBOX
from .. import ctx_layout as L
from ..spec import ROUNDS
from .engines import A64Engine, expand_key_words

# FIPS ShiftRows as a TBL index: out[4c + r] = in[4((c + r) % 4) + r]
SR_INDEX = bytes(4 * ((c + r) % 4) + r for c in range(4) for r in range(4))
# row r of a round key spread over the transposed layout: lane 4c + b <- rk[4c + r]
ROW_INDEX = bytes(4 * c + r for r in range(4) for c in range(4) for _ in range(4))
ROW_BYTES = 64                      # one round key in transposed form
KEY_ROWS = 15 * ROW_BYTES           # rounds 0..14


@dataclass
class TblKeys:
    """What prepare hands one function, and what its rounds left in registers for the next
    engine call of the same batch (the engine itself keeps nothing between calls)."""
    sbox: list[list[Reg]]   # 4 groups of 4 consecutive registers: S[64 q : 64 q + 64]
    c40: Reg                # 0x40 in every byte (the S-box quarter step)
    c1b: Reg                # 0x1b in every byte (xtime reduction)
    rows: Reg               # GPR: ctx + layout.extra (the transposed round keys)
    ctx: Reg
    rows_left: tuple | None = None      # (block keys, round, body position, row registers)
    stream_left: tuple | None = None    # the same for the keystream of the last round


def _m(width: int, base: Reg, disp: int = 0, wb: str = "") -> Mem:
    return Mem(width, base=base, disp=disp, writeback=wb)


class NeonTblEngine(A64Engine):
    """TBL/TBX S-box, seed 003's transposed MixColumns on 4 blocks."""

    GROUP = 4
    max_blocks = GROUP

    def registers(self, bits: int) -> int:
        return 16 + 2

    def context_extra(self) -> int:
        return KEY_ROWS

    # --- constants -------------------------------------------------------------------
    @staticmethod
    def _address(b, name: str, data: bytes) -> Reg:
        p = b.gp()
        sym = b.const_symbol(name, data)
        b.asm.adrp(p, sym)
        b.asm.add(p, p, sym)
        return p

    def _load_sbox(self, b) -> tuple[list[list[Reg]], Reg]:
        a = b.asm
        p = self._address(b, "sbox", bytes(SBOX))
        groups = []
        for _ in range(4):
            g = [b.vec(128) for _ in range(4)]
            a.ld1(VList(tuple(r.b16 for r in g)), _m(512, p, 64, "post"))
            groups.append(g)
        c40 = b.vec(128)
        a.movi(c40.b16, Imm(0x40))
        return groups, c40

    def prepare(self, k, b, ctx, bits) -> TblKeys:
        a = b.asm
        sbox, c40 = self._load_sbox(b)
        c1b = b.vec(128)
        a.movi(c1b.b16, Imm(0x1B))
        rows, t = b.gp(), b.gp()
        a.mov(t, Imm(k.layout.offset("EXTRA")))
        a.add(rows, ctx, t)
        return TblKeys(sbox, c40, c1b, rows, ctx)

    # --- SubBytes ----------------------------------------------------------------------
    @staticmethod
    def _sub_bytes(b, sbox, c40, xs: list[Reg], between=None) -> list[Reg]:
        """S-box on every byte of every register in ``xs``; returns the new registers.

        Emitted interleaved for in-order cores: with 4 registers every TBL/TBX finds the
        result it needs (the previous lookup, the index SUB) at least 6 instructions back,
        llvm-mca's Cortex-A53 ASIMD latency: tbl a, tbl b, sub a, tbl c, sub b, tbl d,
        sub c, sub d, then per quarter tbx r followed by the next quarter's sub r."""
        a = b.asm
        lst = [VList(tuple(r.b16 for r in g)) for g in sbox]
        n = len(xs)
        idx = [b.vec(128) for _ in xs]
        ys = [b.vec(128) for _ in xs]
        steps = []
        for j in range(n):
            steps.append(("tbl", j))
            if j >= 1:
                steps.append(("sub", j - 1))
        steps.append(("sub", n - 1))
        for kind, j in steps:
            if kind == "tbl":
                a.tbl(ys[j].b16, lst[0], xs[j].b16)
            else:
                a.sub(idx[j].b16, xs[j].b16, c40.b16)
        for q in (1, 2, 3):
            for j in range(n):
                if q == 3 and j == min(2, n - 1) and between is not None:
                    between()               # independent work (the key loads) fills slots
                a.tbx(ys[j].b16, lst[q], idx[j].b16)
                if q < 3:
                    nxt = b.vec(128)
                    a.sub(nxt.b16, idx[j].b16, c40.b16)
                    idx[j] = nxt
        return ys

    # --- the transposed layout ---------------------------------------------------------
    @staticmethod
    def _transpose(b, xs: list[Reg], outs: list[Reg]) -> None:
        """4 registers -> 4 registers, swapping register index and the low 2 lane bits:
        in[g][4c + r] -> out[r][4c + g]. Its own inverse."""
        a = b.asm
        p = [b.vec(128) for _ in range(4)]
        a.trn1(p[0].b16, xs[0].b16, xs[1].b16)
        a.trn2(p[1].b16, xs[0].b16, xs[1].b16)
        a.trn1(p[2].b16, xs[2].b16, xs[3].b16)
        a.trn2(p[3].b16, xs[2].b16, xs[3].b16)
        a.trn1(outs[0].h8, p[0].h8, p[2].h8)
        a.trn1(outs[1].h8, p[1].h8, p[3].h8)
        a.trn2(outs[2].h8, p[0].h8, p[2].h8)
        a.trn2(outs[3].h8, p[1].h8, p[3].h8)

    def _round_keys(self, b, rows: Reg, r: int) -> list[Reg]:
        """Round r's 4 key rows: two LDP (a 4-register ld1 blocks llvm-mca's in-order
        Cortex-A53 for 4 cycles and needs 4 consecutive free registers)."""
        ks = [b.vec(128) for _ in range(4)]
        b.asm.ldp(ks[0].q, ks[1].q, _m(256, rows, ROW_BYTES * r))
        b.asm.ldp(ks[2].q, ks[3].q, _m(256, rows, ROW_BYTES * r + 32))
        return ks

    def _mix_add(self, b, keys: TblKeys, y: list[Reg], ks: list[Reg]) -> list[Reg]:
        """Seed 003's MixColumns (its 10 steps) on rows y[0..3] (ShiftRows done) with
        AddRoundKey folded in: ``ks`` holds the round's key rows as stored by init,
        K0, K0^K1, K2, K2^K3, so every key row is used by the first EORs (the keys' registers
        free before the xtimes) and the count stays 23 + 4:

            X0' = (T1^X1^K0) ^ 2T0            X1' = X0' ^ (T0^K0^K1) ^ 2T2
            X2' = (T0^X3^K2) ^ 2T1            X3' = X2' ^ (T1^K2^K3) ^ 2T2

        with 2T = (T + T) ^ (0x1b & cmlt(T, 0)), the add folded early, the mask last."""
        a = b.asm
        n = lambda: b.vec(128)  # noqa: E731
        # emitted in a list-scheduled order for 6-cycle results, one issue a cycle (the
        # rows finish in the order 0, 2, 1, 3): 12 stall cycles a round in that model
        t0, t1, t2, yk0, yk2 = n(), n(), n(), n(), n()
        a.eor(t2.b16, y[0].b16, y[2].b16)           # 3: T2 = X0 ^ X2
        a.eor(t0.b16, y[0].b16, y[1].b16)           # 1: T0 = X0 ^ X1
        a.eor(t1.b16, y[2].b16, y[3].b16)           # 2: T1 = X2 ^ X3
        a.eor(yk0.b16, y[1].b16, ks[0].b16)
        a.eor(yk2.b16, y[3].b16, ks[2].b16)
        m2, m0, m1 = n(), n(), n()
        for t, m in ((t2, m2), (t0, m0), (t1, m1)):
            a.cmlt(m.b16, t.b16, Imm(0))
        e0, e2, w1, w3 = n(), n(), n(), n()
        a.eor(e0.b16, t1.b16, yk0.b16)              # T1 ^ X1 ^ K0
        a.eor(e2.b16, t0.b16, yk2.b16)              # T0 ^ X3 ^ K2
        a.eor(w1.b16, t0.b16, ks[1].b16)            # T0 ^ K0 ^ K1
        a.eor(w3.b16, t1.b16, ks[3].b16)            # T1 ^ K2 ^ K3
        d2, d0, d1 = n(), n(), n()
        for t, d in ((t2, d2), (t0, d0), (t1, d1)):
            a.add(d.b16, t.b16, t.b16)
        for m in (m2, m0, m1):                       # 4-6: the reductions of 2T2, 2T0, 2T1
            getattr(a, "and")(m.b16, m.b16, keys.c1b.b16)
        a.eor(e0.b16, e0.b16, d0.b16)
        a.eor(e2.b16, e2.b16, d1.b16)
        t5 = n()
        a.eor(t5.b16, d2.b16, m2.b16)               # T5 = 2 T2
        x0, x2 = n(), n()
        a.eor(x0.b16, e0.b16, m0.b16)               # 7: X0' = T1 ^ X1 ^ T3 (^ K0)
        a.eor(x2.b16, e2.b16, m1.b16)               # 9: X2' = T0 ^ X3 ^ T4 (^ K2)
        a.eor(w1.b16, w1.b16, t5.b16)
        a.eor(w3.b16, w3.b16, t5.b16)
        x1, x3 = n(), n()
        a.eor(x1.b16, x0.b16, w1.b16)               # 8: X1' = X0' ^ T0 ^ T5 (^ K1)
        a.eor(x3.b16, x2.b16, w3.b16)               # 10: X3' = X2' ^ T1 ^ T5 (^ K3)
        return [x0, x1, x2, x3]

    def rounds_before_last(self, k, b, keys: TblKeys, blocks, first, last, nr) -> None:
        """Transpose in, rounds first..last on the rows, transpose out. Two shortcuts, each
        taken only when no instruction emitted since the previous call wrote the blocks:

        - a call continuing the previous one (same blocks, first = its last + 1: the FACE
          fast path's round 3 in ``rounds_from_offset``, then rounds 4.., or rounds 0..2 then
          3.. in full mode) starts from the rows that call left in registers, no transpose
          in;
        - when ``last`` is nr - 1 the last round runs here too, in byte order on the 4
          blocks together, and its keystream waits in registers for ``last_round``.
        The blocks always receive D_last in byte order, as the interface says."""
        if first > last:
            return
        a = b.asm
        x = self._take(b, keys.rows_left, blocks, first - 1)
        if x is None:
            src = list(blocks) + [blocks[0]] * (self.GROUP - len(blocks))
            x = [b.vec(128) for _ in range(4)]
            self._transpose(b, src, x)
        if first == 0:
            ks = self._round_keys(b, keys.rows, 0)
            x2 = [b.vec(128) for _ in range(4)]
            for xi, ki, oi in zip(x, ks, x2):
                a.eor(oi.b16, xi.b16, ki.b16)
            x = x2
        for r in range(max(first, 1), last + 1):
            box: list = []                          # the key rows, loaded mid-S-box
            y = self._sub_shift(b, keys, x,
                                lambda r=r: box.extend(self._round_keys(b, keys.rows, r)))
            x = self._mix_add(b, keys, y, box)
        outs = list(blocks) + [b.vec(128) for _ in range(self.GROUP - len(blocks))]
        self._transpose(b, x, outs)
        if last != nr - 1:
            keys.rows_left = self._mark(b, blocks, last, x)
            return
        # the last round in byte order on the blocks just transposed out (fewer
        # instructions than on the rows plus a second transpose): SubBytes, ShiftRows (TBL),
        # rk_nr; the keystream waits for last_round
        rk, sr = b.vec(128), b.vec(128)

        def loads():
            a.ldr(rk.q, _m(128, keys.ctx, L.ROUND_KEYS + 16 * nr))
            q = self._address(b, "shift_rows", SR_INDEX)
            a.ldr(sr.q, _m(128, q))
        ys = self._sub_bytes(b, keys.sbox, keys.c40, list(blocks), loads)
        stream = [b.vec(128) for _ in blocks]
        for s_, y in zip(stream, ys):
            a.tbl(s_.b16, VList((y.b16,)), sr.b16)
        for s_ in stream:
            a.eor(s_.b16, s_.b16, rk.b16)
        keys.stream_left = self._mark(b, blocks, nr - 1, stream)

    @staticmethod
    def _mark(b, blocks, state: int, regs: list[Reg]) -> tuple:
        return (tuple(x.key for x in blocks), state, len(b.function.body), regs, b.function)

    @staticmethod
    def _take(b, mark, blocks, state: int):
        """The registers ``mark`` left, if it is for these blocks in this state, nothing
        emitted since wrote a block register and no jump from before enters the stretch
        (else None). The stretch is the skeleton's code between two engine calls of one
        batch: straight line, or a local branch such as the fill counter's (a jump emitted
        later into it would not be seen: the skeleton has none)."""
        if mark is None:
            return None
        keys, st, pos, regs, fn = mark
        if fn is not b.function or keys != tuple(x.key for x in blocks) or st != state:
            return None
        mine = set(keys)
        window = b.function.body[pos:]
        labels = {item.name for item in window if isinstance(item, LabelDef)}
        if labels and any(isinstance(item, Instruction) and item.label_target() in labels
                          for item in b.function.body[:pos]):
            return None                             # another path enters the window
        for item in window:
            if isinstance(item, Instruction) and any(
                    r.key in mine for r in item.registers_written()):
                return None
        return regs

    def _sub_shift(self, b, keys: TblKeys, x: list[Reg], between=None) -> list[Reg]:
        """ShiftRows, then SubBytes (they commute): row r rotates by 4r bytes (EXT); rows
        in the order 0, 2, 1, 3, the order _mix_add finishes them."""
        rot = list(x)
        for r in (2, 1, 3):
            s = b.vec(128)
            b.asm.ext(s.b16, x[r].b16, x[r].b16, Imm(4 * r))
            rot[r] = s
        order = (0, 2, 1, 3)
        ys = self._sub_bytes(b, keys.sbox, keys.c40, [rot[r] for r in order], between)
        y = [None] * 4
        for r, v in zip(order, ys):
            y[r] = v
        return y

    def last_round(self, k, b, keys: TblKeys, blocks, nr, data=None) -> None:
        """The keystream ``rounds`` left for these blocks XOR the data (the skeleton calls
        this per pair of a batch); blocks without one take the byte-order path: SubBytes,
        ShiftRows (TBL), rk_nr."""
        a = b.asm
        p = keys.stream_left
        stream = None
        if p is not None and set(x.key for x in blocks) <= set(p[0]) and p[1] == nr - 1:
            idx = [p[0].index(x.key) for x in blocks]
            sub = (tuple(p[0][i] for i in idx), p[1], p[2], [p[3][i] for i in idx], p[4])
            stream = self._take(b, sub, blocks, nr - 1)
        for i, x in enumerate(blocks):
            if stream is not None:
                if data is None:
                    a.mov(x.b16, stream[i].b16)
                else:
                    with b.phase("load_xor_store"):
                        a.eor(x.b16, stream[i].b16, data[i].b16)
                continue
            rk, sr = b.vec(128), b.vec(128)
            a.ldr(rk.q, _m(128, keys.ctx, L.ROUND_KEYS + 16 * nr))
            q = self._address(b, "shift_rows", SR_INDEX)
            a.ldr(sr.q, _m(128, q))
            (y,) = self._sub_bytes(b, keys.sbox, keys.c40, [x])
            a.tbl(x.b16, VList((y.b16,)), sr.b16)
            a.eor(x.b16, x.b16, rk.b16)
            if data is not None:
                with b.phase("load_xor_store"):
                    a.eor(x.b16, x.b16, data[i].b16)

    # --- init ------------------------------------------------------------------------
    def expand_key(self, k, b, ctx, key, bits) -> None:
        """FIPS-197 5.2 word by word (general registers); SubWord = the TBL/TBX S-box on
        the word splatted into a vector. Then the transposed rows of every round key."""
        a = b.asm
        nr = ROUNDS[bits]
        sbox, c40 = self._load_sbox(b)
        expand_key_words(b, ctx, key, bits, lambda w: self._sub_word(b, sbox, c40, w))
        # rows of each round key for the transposed layout: 4 TBL and one st1 a round
        p = self._address(b, "key_rows", ROW_INDEX)
        idx = [b.vec(128) for _ in range(4)]
        a.ld1(VList(tuple(r.b16 for r in idx)), _m(512, p))
        kp, t = b.gp(), b.gp()
        a.mov(t, Imm(k.layout.offset("EXTRA")))
        a.add(kp, ctx, t)
        for r in range(nr + 1):
            rk = b.vec(128)
            a.ldr(rk.q, _m(128, ctx, L.ROUND_KEYS + 16 * r))
            rows = [b.vec(128) for _ in range(4)]
            for row, ix in zip(rows, idx):
                a.tbl(row.b16, VList((rk.b16,)), ix.b16)
            if 0 < r < nr:                      # the form _mix_add folds: K0, K0^K1, K2, K2^K3
                for j in (1, 3):
                    x = b.vec(128)
                    a.eor(x.b16, rows[j].b16, rows[j - 1].b16)
                    rows[j] = x
            a.st1(VList(tuple(x.b16 for x in rows)), _m(512, kp, ROW_BYTES, "post"))

    def _sub_word(self, b, sbox, c40, w: Reg) -> Reg:
        x, out = b.vec(128), b.gp()
        b.asm.dup(x.s4, w.w)
        (y,) = self._sub_bytes(b, sbox, c40, [x])
        b.asm.umov(out.w, y.lane_view("s", 0))
        return out
