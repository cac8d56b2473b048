"""neon-bitsliced: the AArch64 round engine of 8 blocks in 8 q-registers of bit slices.

The port of the x86 engine (kernels/bitsliced.py) to A64 Advanced SIMD, behind the A64
engine interface (engines.py). Constant time: no table lookup by secret data, no AES or
PMULL instruction, no secret-dependent branch or address.

Slices
------
8 blocks (one per ``.16b`` register, FIPS byte order, short batches padded with zero
registers) are bit-transposed so that

    slice register i, byte q, bit j = bit i of state byte pi_r[q] of block j

where pi_r is the byte layout of the state after round r (below). The 8x8 bit transpose is
12 SWAPMOVEs (shifts 1, 2, 4 with masks 0x55, 0x33, 0x0f, seed 004's network, an
involution) of **4** instructions each, not the usual 6: for a = regs[hi], c = regs[lo]

    t1 = ushr(c, n); t2 = shl(a, n); BIT a, t1, M; BIF c, t2, M

since a' = (a & ~M) | (c >> n & M) and c' = (c & M) | (a << n & ~M) with ~M = M << n at
every level (0xaa, 0xcc, 0xf0). The masks are three MOVIs, so a transpose is 48 + 3
instructions and loads nothing.

Byte order: FIPS (column-major), as on x86; the layouts are shared with the x86 engine
(kernels/slice_layout.py). Here the drift's origin is the entry round, which saves the input
permutation (below); x86 anchors it at the last round instead.

ShiftRows as layout drift (counted)
------------------------------------
ShiftRows moves no byte: after SubBytes the state of round r is read in the layout
pi_r = SR^-1 o pi_{r-1} (``layout``). MixColumns' two rotations (rot1, rot2: row i <- row
i+1 / i+2 of the same column) then become byte permutations of that layout, one TBL each
per slice, with controls (``rotation``) that repeat every 4 rounds; the round loop loads them
with one LDP a round. Per round and batch:

    drift:                 16 TBL (rot1, rot2)                     + 1 LDP of controls
    explicit ShiftRows:     8 TBL (SR) + 8 EXT #4/#8 (rot1, rot2 in row-major order), or
                            8 TBL + 8 TBL (rot1) + 8 REV32.8H (rot2) in FIPS order

so drift issues 8 fewer instructions a round (every A64 vector instruction is one issue
slot on the in-order Cortex-A53); on cores where TBL is a 3-micro-op instruction
(Cortex-A72/Neoverse N1 in llvm-mca: TBL 1.5 cycles, EXT 0.5) the explicit form is 20
cycles against 24. The target here is the in-order A53, so: drift.

The drift has a free origin: pi_origin = identity with origin = the FACE level (0, 1, 2),
i.e. the round the fast path enters after (r2: the state C2 ^ T2[in15] in FIPS order enters
round 3 with no TBL). The output needs one TBL a block when (last - origin) % 4 != 0; for
AES-128 at r2 and AES-256 at r2 it does not.

Rounds
------
SubBytes: the netlist (bp113, affine constant stripped) lowered with strategy ``neon``
(BSL/BIT/BIF cones, 110 instructions) or ``neon_sha3`` (EOR3/BCAX, 90), emitted by
netlist/emit_neon.py. MixColumns with t = a ^ rot1(a): out = 2t ^ rot1(a) ^ rot2(t);
2t moves slice i-1 to i and adds slice 7 into 0, 1, 3, 4. Counting AddRoundKey:

    neon:  8 TBL + 8 EOR (t) + 8 TBL + 8 + 3 + 8 EOR (sum) + 8 EOR (key)         = 51
    sha3:  8 TBL + 8 EOR (t) + 8 TBL + 8 EOR3 + 8 (EOR3 for 1, 3, 4; EOR else)    = 40

The round keys are stored bit-sliced in the context (``extra`` area, 15 x 8 x 16 bytes;
round r in layout pi_r, the S-box constant 0x63 added: MixColumns maps a constant column
(c, c, c, c) to itself), built by ``init``. A round loads its 8 key slices (4 LDP).
Rounds first..2 and 3..Nr-1 are counted loops (``b.repeat``) whose body is one round
written back into the same 8 registers; the last round is SubBytes and AddRoundKey.

The domain (engines.py) is D_r = s_r (c_r = 0): the FACE caches hold the x86 values.

Whole batches inside the per-call interface
-------------------------------------------
A transpose pair costs about 100 instructions, two thirds of a round, so the engine does
not transpose at every call boundary the skeleton offers:

* ``rounds(first, Nr-1)`` computes through the last round and transposes back: the block
  registers then hold the keystream, and ``last_round`` only adds the data. (The skeleton
  reads D_{Nr-1} only through last_round.)
* A call whose result the skeleton cannot read before the next engine call is *deferred*:
  ``rounds_from_offset`` (always followed by rounds(last+1, Nr-1)), and ``rounds`` with
  first > 0 or at FACE level none (the full path, rounds(0, 2) then rounds(3, Nr-1)).
  The next call must continue the same registers at the next round, or the build fails.
  Calls with first = 0 at FACE r1/r2 (table fill, window refresh) are computed at once.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache

from ...dsl.builder import KernelBuilder
from ...dsl.operands import Imm, Mem, Reg, Sym, VList
from ...netlist.emit_neon import emit_lowering_neon
from ...netlist.library import load as load_library_netlist
from ...netlist.lower import Lowering, lower
from ...netlist.transform import strip_output_constant
from .. import ctx_layout as L
from ..slice_layout import ROT1, ROT2, SWAPMOVES, inverse, layout, rotation
from ..spec import ROUNDS, SBOX_NETLISTS, KernelSpec
from .engines import A64Engine, expand_key_words
from ...uarch import model_for
from .schedule import latencies_of, scheduled

STRATEGY = {"neon": "neon", "neon-sha3": "neon_sha3"}
ORIGIN = {"none": 0, "r1": 1, "r2": 2}
SLICE_BYTES = 16
KEY_SLICES = 15 * 8 * SLICE_BYTES          # round keys 0..14 (0 unused), 8 slices each

# byte permutations (TBL semantics), the layouts and the transpose network: slice_layout.py
# vector registers the scheduler may fill (schedule.py): 32 less the skeleton's counter step
# and FACE cache, less slack for the allocator's greedy colouring
SCHEDULE_BUDGET = 28
CONTROL_COPIES = 4           # the rotation table repeats 4 x 4 layouts: 16 rounds from any start


def constants_blob() -> tuple[bytes, dict[str, int]]:
    """One read-only blob: rotation controls (layout k at 32 * k, rot1 then rot2, repeated
    CONTROL_COPIES times), then the 4 layouts (input TBLs) and their inverses (output TBLs).
    Indexed by (r - origin) % 4."""
    rots = b"".join(bytes(rotation(ROT1, layout(k, 0))) + bytes(rotation(ROT2, layout(k, 0)))
                    for k in range(4)) * CONTROL_COPIES
    ins = b"".join(bytes(layout(k, 0)) for k in range(4))
    outs = b"".join(bytes(inverse(layout(k, 0))) for k in range(4))
    offsets = {"rot": 0, "in": len(rots), "out": len(rots) + len(ins)}
    return rots + ins + outs, offsets


@lru_cache(maxsize=None)
def sbox_lowering(strategy: str, netlist: str = "") -> tuple[Lowering, int]:
    """The S-box ``netlist`` ("" the default: SBOX_NETLISTS) without its output constant,
    lowered for ``strategy``; and the constant."""
    stripped, constant = strip_output_constant(
        load_library_netlist(netlist or SBOX_NETLISTS[0]))
    return lower(stripped, strategy), constant


@dataclass
class BsKeys:
    """What prepare hands one function: the context, the constants' address, the key size,
    and the rounds this function's batches have deferred or run ahead (the engine keeps
    nothing between calls)."""
    ctx: Reg
    base: Reg           # address of the constants blob
    bits: int
    pending: "_Pending | None" = None
    ahead: set = field(default_factory=set)   # blocks whose last round already ran


@dataclass
class _Pending:
    regs: tuple            # register keys of the blocks
    start: int             # first round still to compute (0: round key 0 not yet added)
    last: int              # the state the skeleton believes the registers hold


class NeonBitslicedEngine(A64Engine):
    """See the module docstring."""

    max_blocks = 8

    def __init__(self, spec: KernelSpec) -> None:
        super().__init__(spec)
        if spec.interleave != 8:
            raise ValueError("neon-bitsliced works on batches of 8 blocks: interleave 8")
        self.strategy = STRATEGY[spec.encoding]
        self.sha3 = spec.encoding == "neon-sha3"
        self.lowering, self.constant = sbox_lowering(self.strategy, spec.sbox)
        self.latencies = latencies_of(model_for(spec.uarch, "aarch64"))
        self.origin = ORIGIN[spec.face]
        # the S-box's peak plus the skeleton's counter step and FACE cache
        if self.lowering.max_live + 2 > 32:
            raise ValueError(f"{spec.name}: the {self.strategy} S-box needs "
                             f"{self.lowering.max_live} vector registers")

    # --- interface ------------------------------------------------------------------
    def context_extra(self) -> int:
        return KEY_SLICES

    def registers(self, bits: int) -> int:
        return 0            # nothing resident: round-key slices are loaded a round at a time

    def prepare(self, k, b: KernelBuilder, ctx: Reg, bits: int) -> BsKeys:
        return BsKeys(ctx, self._blob_address(b), bits)

    def rounds_before_last(self, k, b, keys, blocks, first, last, nr) -> None:
        ids = tuple(x.key for x in blocks)
        start = first
        if keys.pending is not None:
            p = keys.pending
            if p.regs != ids or first != p.last + 1:
                raise RuntimeError(f"deferred rounds {p.start}..{p.last} were not continued "
                                   f"(next call: rounds {first}..{last} on other registers)")
            start, keys.pending = p.start, None
        if last < nr - 1 and (first > 0 or self.spec.face == "none"):
            keys.pending = _Pending(ids, start, last)
            return
        stop = nr if last == nr - 1 else last
        self._compute(k, b, keys, blocks, start, stop, nr)
        if stop == nr:
            keys.ahead |= set(ids)

    def rounds_from_offset(self, k, b, keys, blocks, cache, level, last, nr) -> None:
        """The offset XORed into the blocks, then rounds_before_last: deferred to the
        next call unless it reaches Nr - 1."""
        with b.phase("rounds_0_2"):
            for x in blocks:
                b.asm.eor(x.b16, x.b16, cache.b16)
        if keys.pending is not None:
            raise RuntimeError("rounds_from_offset while rounds are deferred")
        self.rounds_before_last(k, b, keys, blocks, level + 1, last, nr)

    def last_round(self, k, b, keys, blocks, nr, data=None) -> None:
        if not all(x.key in keys.ahead for x in blocks):
            raise RuntimeError("last_round on blocks whose rounds were not computed by "
                               "rounds(..., Nr-1)")
        if data is not None:
            with b.phase("load_xor_store"):
                for x, d in zip(blocks, data):
                    b.asm.eor(x.b16, x.b16, d.b16)

    # --- constants ------------------------------------------------------------------
    def _blob_address(self, b: KernelBuilder) -> Reg:
        blob, _ = constants_blob()
        sym: Sym = b.const_symbol("bsn_consts", blob, align=64)
        base = b.gp()
        b.asm.adrp(base, sym)
        b.asm.add(base, base, sym)
        return base

    def _control(self, b, base: Reg, kind: str, index: int) -> Reg:
        _, off = constants_blob()
        x = b.vec(128)
        b.asm.ldr(x.q, Mem(128, base=base, disp=off[kind] + 16 * index))
        return x

    # --- building blocks -------------------------------------------------------------
    def _transpose(self, b, regs: list[Reg]) -> None:
        a = b.asm
        for n, mask, pairs in SWAPMOVES:
            m = b.vec(128)
            a.movi(m.b16, Imm(mask))
            for hi, lo in pairs:
                x, c = regs[hi], regs[lo]
                t1, t2 = b.vec(128), b.vec(128)
                a.ushr(t1.b16, c.b16, Imm(n))
                a.shl(t2.b16, x.b16, Imm(n))
                a.bit(x.b16, t1.b16, m.b16)      # x = x & ~M | (c >> n) & M
                a.bif(c.b16, t2.b16, m.b16)      # c = c & M | (x << n) & ~M

    def _sbox(self, b, slices: list[Reg]) -> list[Reg]:
        """SubBytes without its constant; the inputs are left intact (the outputs and
        temporaries are other registers), so the round can write its result over them."""
        ins = [slices[7 - j] for j in range(8)]          # netlist input 0 = the MSB
        outs = emit_lowering_neon(b, self.lowering, ins, preserve_inputs=True)
        return [outs[7 - i] for i in range(8)]

    def _mix_columns(self, b, s: list[Reg], keys: list[Reg], c1: Reg, c2: Reg,
                     dest: list[Reg]) -> None:
        """dest = MixColumns(s) ^ keys, rotations by TBL with controls c1, c2."""
        a = b.asm
        ra, t = [], []
        for i in range(8):
            r = b.vec(128)
            a.tbl(r.b16, VList((s[i].b16,)), c1.b16)
            ra.append(r)
        for i in range(8):
            x = b.vec(128)
            a.eor(x.b16, s[i].b16, ra[i].b16)
            t.append(x)
        for i in range(8):
            # associated for depth: ra ^ key and t[i-1] are ready before rt = rot2(t)
            rt, x = b.vec(128), b.vec(128)
            a.tbl(rt.b16, VList((t[i].b16,)), c2.b16)
            if self.sha3:
                a.eor3(x.b16, ra[i].b16, keys[i].b16, t[(i - 1) % 8].b16)
                if i in (1, 3, 4):
                    a.eor3(dest[i].b16, x.b16, t[7].b16, rt.b16)
                else:
                    a.eor(dest[i].b16, x.b16, rt.b16)
                continue
            a.eor(x.b16, ra[i].b16, keys[i].b16)
            a.eor(x.b16, x.b16, t[(i - 1) % 8].b16)
            if i in (1, 3, 4):
                a.eor(x.b16, x.b16, t[7].b16)
            a.eor(dest[i].b16, x.b16, rt.b16)

    def _key_slices_at(self, b, ptr: Reg, disp: int | None) -> list[Reg]:
        """8 key slices: from [ptr + disp] (disp given) or post-incremented LDPs at ptr."""
        keys = [b.vec(128) for _ in range(8)]
        for i in range(0, 8, 2):
            if disp is None:
                b.asm.ldp(keys[i].q, keys[i + 1].q,
                          Mem(256, base=ptr, disp=32, writeback="post"))
            else:
                for j in (i, i + 1):
                    b.asm.ldr(keys[j].q, Mem(128, base=ptr, disp=disp + 16 * j))
        return keys

    def _key_disp(self, k, r: int) -> int:
        return k.layout.offset("EXTRA") + 8 * SLICE_BYTES * r

    def _round(self, k, b, keys: BsKeys, regs: list[Reg], r: int) -> None:
        """One round, inline: regs (layout pi_{r-1}) -> regs (layout pi_r)."""
        with scheduled(b, SCHEDULE_BUDGET, self.latencies, regs):
            self._round_body(k, b, keys, regs, r)

    def _round_body(self, k, b, keys: BsKeys, regs: list[Reg], r: int) -> None:
        s = self._sbox(b, regs)
        idx = (r - self.origin) % 4
        c1 = self._control(b, keys.base, "rot", 2 * idx)
        c2 = self._control(b, keys.base, "rot", 2 * idx + 1)
        rk = self._key_slices_at(b, keys.ctx, self._key_disp(k, r))
        self._mix_columns(b, s, rk, c1, c2, regs)

    def _round_loop(self, k, b, keys: BsKeys, regs: list[Reg], lo: int, hi: int) -> None:
        """Rounds lo..hi as a counted loop, one round a trip, in place in regs."""
        a = b.asm
        trips = hi - lo + 1
        kp, cp, n, t = b.gp(), b.gp(), b.gp(), b.gp()
        a.mov(t, Imm(self._key_disp(k, lo)))
        a.add(kp, keys.ctx, t)
        _, off = constants_blob()
        a.add(cp, keys.base, Imm(off["rot"] + 32 * ((lo - self.origin) % 4)))
        a.mov(n, Imm(trips))
        top = b.label("bs_round")
        b.bind(top)
        with b.repeat(trips):
            with scheduled(b, SCHEDULE_BUDGET, self.latencies, regs):
                s = self._sbox(b, regs)
                c1, c2 = b.vec(128), b.vec(128)
                a.ldp(c1.q, c2.q, Mem(256, base=cp, disp=32, writeback="post"))
                rk = self._key_slices_at(b, kp, None)
                self._mix_columns(b, s, rk, c1, c2, regs)
            a.subs(n, n, Imm(1))
            a.b_ne(top)

    def _rounds_range(self, k, b, keys, regs, lo: int, hi: int) -> None:
        if hi - lo + 1 >= 2:
            self._round_loop(k, b, keys, regs, lo, hi)
        elif hi == lo:
            self._round(k, b, keys, regs, lo)

    def _compute(self, k, b, keys: BsKeys, blocks: list[Reg], start: int, stop: int,
                 nr: int) -> None:
        """D_{start-1} -> D_stop in the block registers (stop = nr: the keystream)."""
        m = len(blocks)
        if not 1 <= m <= 8:
            raise ValueError(f"neon-bitsliced takes 1 to 8 blocks a call, not {m}")
        regs = list(blocks)
        with scheduled(b, SCHEDULE_BUDGET, self.latencies, regs):      # regs grows by the padding inside
            start = self._enter(b, keys, blocks, regs, start)
        mc_stop = min(stop, nr - 1)
        with b.phase("rounds_0_2"):
            self._rounds_range(k, b, keys, regs, start, min(mc_stop, 2))
        with b.phase("rounds_3_nr"):
            self._rounds_range(k, b, keys, regs, max(start, 3), mc_stop)
        with scheduled(b, SCHEDULE_BUDGET, self.latencies, blocks):
            self._leave(k, b, keys, blocks, regs, stop, nr)

    def _enter(self, b, keys: BsKeys, blocks: list[Reg], regs: list[Reg], start: int) -> int:
        """Round key 0 (start = 0), padding, the input TBL and the transpose: regs hold
        the slices of D_{start-1}; returns the first round still to compute."""
        a = b.asm
        m = len(blocks)
        if start == 0:
            with b.phase("rounds_0_2"):
                k0 = b.vec(128)
                a.ldr(k0.q, Mem(128, base=keys.ctx, disp=L.ROUND_KEYS))
                for x in blocks:
                    a.eor(x.b16, x.b16, k0.b16)
            start = 1
        with b.phase("transpose"):
            for _ in range(8 - m):               # a short batch: zero blocks
                z = b.vec(128)
                a.movi(z.d2, Imm(0))
                regs.append(z)
            idx = (start - 1 - self.origin) % 4
            if idx:
                ctrl = self._control(b, keys.base, "in", idx)
                for x in blocks:
                    a.tbl(x.b16, VList((x.b16,)), ctrl.b16)
            self._transpose(b, regs)
        return start

    def _leave(self, k, b, keys: BsKeys, blocks: list[Reg], regs: list[Reg], stop: int,
               nr: int) -> None:
        """The last round (stop = nr), the transpose back and the output TBL."""
        a = b.asm
        if stop == nr:
            with b.phase("rounds_3_nr"):
                s = self._sbox(b, regs)
                rk = self._key_slices_at(b, keys.ctx, self._key_disp(k, nr))
                for i in range(8):
                    a.eor(regs[i].b16, s[i].b16, rk[i].b16)
        with b.phase("transpose"):
            self._transpose(b, regs)
            idx = (stop - self.origin) % 4
            if idx:
                ctrl = self._control(b, keys.base, "out", idx)
                for x in blocks:
                    a.tbl(x.b16, VList((x.b16,)), ctrl.b16)

    # --- key schedule ----------------------------------------------------------------
    def expand_key(self, k, b, ctx, key, bits) -> None:
        """FIPS-197 5.2 in general registers (round keys to ctx + ROUND_KEYS, as every
        method), SubWord through the same netlist on mask slices; then the bit-sliced
        round keys 1..Nr into the extra area."""
        nr = ROUNDS[bits]
        expand_key_words(b, ctx, key, bits, lambda w: self._sub_word(b, w))
        self._slice_round_keys(k, b, ctx, nr)

    def _mask_slices(self, b, x: Reg) -> list[Reg]:
        """slice i byte q = 0xff if bit i of x's byte q is set, else 0."""
        out = []
        for i in range(8):
            m, s = b.vec(128), b.vec(128)
            b.asm.movi(m.b16, Imm(1 << i))
            b.asm.cmtst(s.b16, x.b16, m.b16)
            out.append(s)
        return out

    def _sub_word(self, b, w: Reg) -> Reg:
        a = b.asm
        x = b.vec(128)
        a.dup(x.s4, w.w)
        outs = self._sbox(b, self._mask_slices(b, x))
        acc = b.vec(128)
        a.movi(acc.d2, Imm(0))
        for i, s in enumerate(outs):
            m = b.vec(128)
            a.movi(m.b16, Imm(1 << i))
            a.bit(acc.b16, s.b16, m.b16)
        c = b.vec(128)
        a.movi(c.b16, Imm(self.constant))
        a.eor(acc.b16, acc.b16, c.b16)
        out = b.gp()
        a.umov(out.w, acc.lane_view("s", 0))
        return out

    def _slice_round_keys(self, k, b, ctx: Reg, nr: int) -> None:
        """Round key r (1..Nr) in layout pi_r as 8 mask slices, 0x63 added."""
        a = b.asm
        base = self._blob_address(b)
        for r in range(1, nr + 1):
            x = b.vec(128)
            a.ldr(x.q, Mem(128, base=ctx, disp=L.ROUND_KEYS + 16 * r))
            idx = (r - self.origin) % 4
            if idx:
                ctrl = self._control(b, base, "in", idx)
                a.tbl(x.b16, VList((x.b16,)), ctrl.b16)
            for i, s in enumerate(self._mask_slices(b, x)):
                if self.constant >> i & 1:
                    a.mvn(s.b16, s.b16)
                a.str(s.q, Mem(128, base=ctx, disp=self._key_disp(k, r) + 16 * i))
