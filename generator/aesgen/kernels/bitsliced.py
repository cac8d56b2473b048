"""Bit-sliced AES rounds (Käsper and Schwabe, CHES 2009, seed 004) from a gate netlist.

A batch of 8 registers (8 blocks on xmm, 16 on ymm, 32 on zmm; the 128-bit lanes are
independent) is transposed so that register i holds bit i of every state byte:

    slice register i, lane L, byte q, bit j
        = bit i of state byte pi_r[q] (FIPS order) of the block in lane L of register j

with pi_r the layout of the state after round r (kernels/slice_layout.py). The transpose is
an 8x8 bit-matrix transpose done by 12 SWAPMOVEs (shifts by 1, 2, 4 with masks 0x55, 0x33,
0x0f), preceded by a PSHUFB a register where the entry layout is not the identity; the
network is an involution, so the same steps transpose back.

A round on slices: SubBytes = the netlist (aesgen.netlist, bp113 by default) lowered for
the encoding (two-operand SSE, three-operand AVX2, VPTERNLOGD cones on AVX-512), with the
affine constant 0x63 left out of the circuit and folded into the bit-sliced round keys
(MixColumns maps a constant column c,c,c,c to itself). ShiftRows moves no byte: the state's
byte order drifts by ShiftRows^-1 a round (``layout(r, nr)``, period 4, the identity after
the last round), the round keys are stored in the layout of their round, and MixColumns' row
rotations are PSHUFBs with the controls of the current layout. Because the last round leaves
FIPS order, the keystream needs no byte shuffle on the way out, and the entry shuffle
absorbs the drift (none at all where the entry round's layout is the identity: FACE r2
with AES-128 and AES-256). This saves seed 004's 8 ShiftRows PSHUFBs a round. MixColumns with
t = a ^ rot1(a):  out = 2t ^ rot1(a) ^ rot2(t), 2t by moving slices up one bit and adding
slice 7 into slices 0, 1, 3, 4 (x^8 = x^4 + x^3 + x + 1): 8 + 8 + 8 + 19 = 43 instructions,
seed 004's count (legacy SSE adds a register copy before each destructive rot1 PSHUFB);
AddRoundKey = one XOR per slice (folded into VPTERNLOGD where a sum has five terms).

The batch loop is kernels/grouped_ctr.py (every batch one aligned group of 8 x lanes
blocks), which calls the parts separately: to_slices, slice_rounds, from_slices. FACE is
kept in slice form: a table entry is a group's slices after round 1 or 2 XOR the window's
cache in slice form (store_sliced_cache), so r2 starts a batch from 8 loads and 8 XORs with
no transpose into slices. Round 0 is an XOR in byte order before the transpose.

Constant time: no table lookups, no secret-dependent branch or address; the key schedule's
SubWord uses the same netlist on one register ("mask slices": each byte 0x00 or 0xff).
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

from ..dsl.builder import KernelBuilder
from ..dsl.operands import Imm, Mem, Reg
from ..netlist.emit import emit_lowering
from ..netlist.library import load as load_library_netlist
from ..netlist.lower import Lowering, lower
from ..netlist.timing import core_from_model
from ..netlist.transform import strip_output_constant
from ..uarch import model_for
from . import ctx_layout as L
from .fields import Field
from .engines import RoundEngine, Keys
from .slice_layout import IDENTITY, ROT1, ROT2, SWAPMOVES, inverse, layout, rotation
from .spec import ROUNDS, SBOX_NETLISTS, KernelSpec
from .vector_ops import XOR3, VectorOps

STRATEGY = {"sse": "two_operand", "avx": "three_operand", "evex": "ternary"}
# init runs with 16 vector registers even in EVEX kernels
KEY_SCHEDULE_STRATEGY = {"sse": "two_operand", "avx": "three_operand", "evex": "three_operand"}
SCRATCH_SLOTS = 32          # spill slots of the S-box lowerings (each one register wide)


@lru_cache(maxsize=None)
def sbox_lowering(strategy: str, uarch: str = "", netlist: str = "") -> tuple[Lowering, int]:
    """The S-box ``netlist`` (the preset's choice, "" the default: SBOX_NETLISTS) without its
    output constant, lowered (for the two-operand form, the fastest on the core of
    microarchitecture model ``uarch``); and that constant (0x63)."""
    stripped, constant = strip_output_constant(
        load_library_netlist(netlist or SBOX_NETLISTS[0]))
    core = core_from_model(model_for(uarch, "x86_64")) if strategy == "two_operand" else None
    return lower(stripped, strategy, core=core), constant


def key_slices_size(spec: KernelSpec) -> int:
    return 15 * 8 * spec.width // 8


@dataclass(frozen=True)
class Area:
    """Where one function finds the engine's part of the context: the context register and
    the offset of the engine's area (the kernel layout's ``extra``). Passed down, never
    kept: the engine holds nothing that depends on the order of calls."""
    ctx: Reg
    extra: int


class BitslicedEngine(RoundEngine):
    """Rounds on 8 registers of bit slices; see the module docstring."""

    grouped_batches = True      # transposes cost: every batch is a whole aligned group

    def __init__(self, spec: KernelSpec) -> None:
        super().__init__(spec)
        self.resident_keys = False
        self.strategy = STRATEGY[spec.encoding]
        _, self.constant = sbox_lowering(self.strategy, spec.uarch, spec.sbox)

    # --- context ----------------------------------------------------------------------
    def context_fields(self) -> list[Field]:
        """EXTRA: round-key slices, S-box spill slots, a batch's keystream (for the head and
        tail of a message), the sliced FACE cache (all secret); then GROUP_FLAGS, a byte a
        group marking its FACE table entry filled (public: FACE's bookkeeping)."""
        secret = key_slices_size(self.spec) + (SCRATCH_SLOTS + 16) * self.spec.width // 8
        return [Field("cipher", "EXTRA", secret, 64, "the bit-sliced engine's round-key "
                      "slices, spill slots, a batch's keystream and its sliced FACE cache"),
                Field("cipher", "GROUP_FLAGS", 64, 8, "a byte an aligned group of blocks: "
                      "its FACE table entry is filled (kernels/grouped_ctr.py)", public=True)]

    def keystream_buffer(self) -> int:
        """Offset in the extra area of a batch's keystream, block after block."""
        return key_slices_size(self.spec) + SCRATCH_SLOTS * self.spec.width // 8

    @staticmethod
    def area(k, ctx: Reg) -> Area:
        """The engine's area of kernel k's context (its EXTRA field), addressed from ctx."""
        return Area(ctx, k.layout.offset("EXTRA"))

    def _key_mem(self, at: Area, r: int, i: int, width: int) -> Mem:
        step = self.spec.width // 8
        return Mem(width, base=at.ctx, disp=at.extra + (8 * r + i) * step)

    def _slot(self, at: Area, width: int):
        base = at.extra + key_slices_size(self.spec)
        return lambda n: Mem(width, base=at.ctx, disp=base + n * width // 8)

    def prepare(self, k, b, ctx, bits) -> Keys:
        return Keys(ctx, None, self.spec.width)

    # --- constants --------------------------------------------------------------------
    def _const(self, b: KernelBuilder, name: str, data: list[int] | bytes, width: int) -> Mem:
        lane = bytes(data)
        return b.const(f"bs_{name}{width}", lane * (width // 128), align=min(64, width // 8))

    def _shuffle_unless_identity(self, b, v, regs: list[Reg], control: list[int],
                                 name: str, width: int) -> None:
        """PSHUFB every register by ``control`` (the constant ``name``), or nothing when
        ``control`` is the identity."""
        if control == IDENTITY:
            return
        mem = self._const(b, name, control, width)
        for x in regs:
            v.shuffle_bytes(x, x, mem)

    def _byte_mask(self, b, value: int, width: int) -> Mem:
        return self._const(b, f"m{value:02x}", bytes([value]) * 16, width)

    # --- building blocks --------------------------------------------------------------
    def _swapmove(self, b, v: VectorOps, a: Reg, c: Reg, n: int, mask: int) -> None:
        """t = ((c >> n) ^ a) & mask; a ^= t; c ^= t << n: swaps a's bits under mask with
        c's bits n places higher."""
        t = b.vec(a.width)
        m = self._byte_mask(b, mask, a.width)
        v.shift_qwords(t, c, n)
        if v.evex:
            # two bit-selects (~mask == mask << n in every byte): a = m ? c >> n : a and
            # c = m ? c : a << n, 4 instructions instead of 5
            u = b.vec(a.width)
            v.shift_qwords(u, a, -n)
            v.ternary(a, t, m, 0xD8)            # C ? B : A
            v.ternary(c, u, m, 0xE4)            # C ? A : B
            return
        v.xor(t, t, a)
        v.and_(t, t, m)
        v.xor(a, a, t)
        v.shift_qwords(t, t, -n)
        v.xor(c, c, t)

    def _bit_transpose(self, b, v, regs: list[Reg]) -> None:
        for n, mask, pairs in SWAPMOVES:
            for hi, lo in pairs:
                self._swapmove(b, v, regs[hi], regs[lo], n, mask)

    def _sbox(self, at: Area, b, v, slices: list[Reg], strategy: str) -> list[Reg]:
        lowering, _ = sbox_lowering(strategy, self.spec.uarch, self.spec.sbox)
        width = slices[0].width
        outs = emit_lowering(b, v, lowering, [slices[7 - j] for j in range(8)],
                             self._slot(at, width))
        return [outs[7 - i] for i in range(8)]

    def _mix_columns(self, b, v, a: list[Reg], key, rot1, rot2,
                     dest: list[Reg] | None = None) -> list[Reg]:
        """MixColumns then AddRoundKey (key(i) = slice i's operand); rot1/rot2 are the
        PSHUFB controls of the row rotations in the state's current layout. Returns the
        new slices, in ``dest`` when given (see module docstring)."""
        width = a[0].width
        ra = dest if dest is not None else [b.vec(width) for _ in range(8)]
        for i in range(8):
            v.shuffle_bytes(ra[i], a[i], rot1)
        t = a
        for i in range(8):
            v.xor(t[i], t[i], ra[i])                 # t = a ^ rot1(a), in place
        if v.evex:
            rt = [b.vec(width) for _ in range(8)]
            for i in range(8):
                v.shuffle_bytes(rt[i], t[i], rot2)
            for i in range(8):
                v.ternary(ra[i], t[(i - 1) % 8], rt[i], XOR3)
            for i in range(8):     # five terms fit two VPTERNLOGDs: x^8's reduction is free
                if i in (1, 3, 4):
                    v.ternary(ra[i], t[7], key(i), XOR3)
                else:
                    v.xor(ra[i], ra[i], key(i))
            return ra
        for i in range(8):
            v.xor(ra[i], ra[i], t[(i - 1) % 8])      # 2t: slice i-1 moves up ...
        for i in (1, 3, 4):
            v.xor(ra[i], ra[i], t[7])                # ... and x^8 reduces into 0, 1, 3, 4
        for i in range(8):
            v.shuffle_bytes(t[i], t[i], rot2)
            v.xor(ra[i], ra[i], t[i])
        for i in range(8):
            v.xor(ra[i], ra[i], key(i))
        return ra

    # --- the round function -------------------------------------------------------------
    def _key(self, at: Area, r: int, width: int):
        return lambda i: self._key_mem(at, r, i, width)

    def _rotations(self, b, r: int, width: int, nr: int) -> tuple[Mem, Mem]:
        """Row-rotation controls for round r's MixColumns (the state is in layout(r, nr))."""
        pi = layout(r, nr)
        return (self._const(b, f"rot1_l{(r - nr) % 4}", rotation(ROT1, pi), width),
                self._const(b, f"rot2_l{(r - nr) % 4}", rotation(ROT2, pi), width))

    def _round(self, at: Area, b, v, slices: list[Reg], key, rotations,
               dest: list[Reg] | None = None) -> list[Reg]:
        """SubBytes, MixColumns, AddRoundKey (key(i) = slice i's operand); ShiftRows is a
        change of layout, folded into the rotations and the round keys."""
        slices = self._sbox(at, b, v, slices, self.strategy)
        return self._mix_columns(b, v, slices, key, *rotations, dest)

    def _round_loop(self, at: Area, b, v, slices: list[Reg], lo: int, hi: int,
                    nr: int) -> list[Reg]:
        """Rounds lo..hi (all with MixColumns) as a counted loop over the round keys: the
        body is emitted once (a bit-sliced round is ~200 instructions)."""
        a, width = b.asm, slices[0].width
        step = 8 * self.spec.width // 8
        wb = width // 8
        with b.phase("rounds_3_nr"):
            kp, n, cp = b.gp(), b.gp(), b.gp()
            a.lea(kp, Mem(8, base=at.ctx, disp=at.extra + lo * step))
            # the rotations of the 4 layouts, 4 times over: round r's at (r - nr) % 4
            table = b.const(f"bs_rotations{width}", b"".join(
                bytes(rotation(rot, layout(j, 0))) * (width // 128)
                for j in range(4) for rot in (ROT1, ROT2)) * 4, align=min(64, wb))
            a.lea(cp, Mem(8, rip_label=table.rip_label, disp=2 * wb * ((lo - nr) % 4)))
            a.mov(n, Imm(hi - lo + 1))
            top = b.label("bs_round")
            b.bind(top)
            with b.repeat(hi - lo + 1):
                body = [b.vec(width) for _ in slices]
                for x, y in zip(body, slices):
                    v.copy(x, y)
                # the loop's registers stay the same: with 32 registers MixColumns writes
                # into them; with 16 that leaves the S-box too few, so copy at the end
                key = lambda i: Mem(width, base=kp, disp=i * self.spec.width // 8)
                rotations = (Mem(width, base=cp), Mem(width, base=cp, disp=wb))
                if v.evex:
                    self._round(at, b, v, body, key, rotations, dest=slices)
                else:
                    for x, y in zip(slices, self._round(at, b, v, body, key, rotations)):
                        v.copy(x, y)
                a.add(kp, Imm(step))
                a.add(cp, Imm(2 * wb))
                a.dec(n)
                a.jne(top)
        return slices

    def rounds(self, k, b, keys, blocks, first, last, nr) -> list[Reg] | None:
        """Rounds first..last on byte-order blocks: transpose in, rounds, transpose out."""
        v, width = self.ops(b), blocks[0].width
        if first == 0:
            key0 = keys.get(b, v, 0, width)
            for x in blocks:
                v.xor(x, x, key0)
            first = 1
        if first > last:
            return None
        slices = self.to_slices(b, v, blocks, first - 1, nr)
        slices = self.slice_rounds(self.area(k, keys.ctx), b, v, slices, first, last, nr)
        # the results stay where they are: the skeleton continues with these registers
        # (copying them back into ``blocks`` would give those a second live range)
        return self.from_slices(b, v, slices, last, nr, len(blocks))

    def to_slices(self, b, v, blocks: list[Reg], after: int, nr: int) -> list[Reg]:
        """Byte-order blocks (states after round ``after``) -> 8 registers of slices in
        layout(after, nr). A short batch is padded with zero lanes."""
        width = blocks[0].width
        regs = list(blocks)
        with b.phase("transpose"):
            while len(regs) < 8:
                z = b.vec(width)
                v.xor(z, z, z)
                regs.append(z)
            self._shuffle_unless_identity(b, v, regs, layout(after, nr),
                                          f"layout{(after - nr) % 4}", width)
            self._bit_transpose(b, v, regs)
        return regs

    def from_slices(self, b, v, slices: list[Reg], last: int, nr: int, n: int) -> list[Reg]:
        """Slices after round ``last`` -> the first ``n`` registers of byte-order blocks."""
        width = slices[0].width
        with b.phase("transpose"):
            self._bit_transpose(b, v, slices)
            self._shuffle_unless_identity(b, v, slices[:n], inverse(layout(last, nr)),
                                          f"unlayout{(last - nr) % 4}", width)
        return slices[:n]

    def slice_rounds(self, at: Area, b, v, slices: list[Reg], first: int, last: int,
                     nr: int) -> list[Reg]:
        """Rounds first..last (first >= 1) on slices in layout(first - 1, nr), the round
        keys' slices read from ``at``."""
        width = slices[0].width
        middle_end = min(last, nr - 1)
        loop_from = max(first, 3)
        for r in range(first, min(middle_end, 2) + 1):
            with b.phase("rounds_0_2"):
                slices = self._round(at, b, v, slices, self._key(at, r, width),
                                     self._rotations(b, r, width, nr))
        if middle_end - loop_from + 1 >= 2:
            slices = self._round_loop(at, b, v, slices, loop_from, middle_end, nr)
        elif middle_end == loop_from:
            with b.phase("rounds_3_nr"):
                slices = self._round(at, b, v, slices, self._key(at, loop_from, width),
                                     self._rotations(b, loop_from, width, nr))
        if last == nr:
            with b.phase("rounds_3_nr" if nr > 2 else "rounds_0_2"):
                slices = self._sbox(at, b, v, slices, self.strategy)
                key = self._key(at, nr, width)
                for i, x in enumerate(slices):
                    v.xor(x, x, key(i))
        return slices

    # --- FACE in slice form ---------------------------------------------------------------
    def sliced_cache_offset(self) -> int:
        """Offset in the extra area of the window's FACE cache in slice form (8 registers)."""
        return key_slices_size(self.spec) + (SCRATCH_SLOTS + 8) * self.spec.width // 8

    def sliced_cache(self, at: Area, i: int, width: int) -> Mem:
        """Slice i of the window's FACE cache (C1 or C2 in every block), in the context."""
        return Mem(width, base=at.ctx, disp=at.extra + self.sliced_cache_offset()
                   + i * self.spec.width // 8)

    def store_sliced_cache(self, k, b, v, ctx: Reg, cache: Reg, after: int, nr: int) -> None:
        """Store the slices of the byte-order cache ``cache`` (an xmm: the state after round
        ``after`` of the window's first block) as if every block of a batch held it: slice i
        byte q = 0xff where bit i of byte layout(after)[q] is set. A FACE table entry XORed
        with these is a batch's state after round ``after``, already in slice form."""
        at = self.area(k, ctx)
        width = self.spec.width
        x = b.xmm()
        v.copy(x, cache)
        self._shuffle_unless_identity(b, v, [x], layout(after, nr),
                                      f"layout{(after - nr) % 4}", 128)
        for i, s in enumerate(self._to_slices(b, v, x, 128)):
            if width == 128:
                v.store(self.sliced_cache(at, i, 128), s)
            else:
                wide = b.vec(width)
                v.broadcast_register(wide, s)
                v.store(self.sliced_cache(at, i, width), wide, aligned=False)

    # --- key schedule ------------------------------------------------------------------
    def _to_slices(self, b, v, x: Reg, width: int) -> list[Reg]:
        """Mask slices of the bytes of x: slice i byte p = 0xff if bit i of byte p is set."""
        one = self._byte_mask(b, 0x01, width)
        zero = b.vec(width)
        v.xor(zero, zero, zero)
        out = []
        for i in range(8):
            t, s = b.vec(width), b.vec(width)
            v.shift_qwords(t, x, i) if i else v.copy(t, x)
            v.and_(t, t, one)
            v.sub_bytes(s, zero, t)
            out.append(s)
        return out

    def _sub_word_xmm(self, at: Area, b, v, w: Reg) -> None:
        x = b.xmm()
        v.load_u32(x, w.w32)
        slices = self._to_slices(b, v, x, 128)
        outs = self._sbox(at, b, v, slices, KEY_SCHEDULE_STRATEGY[self.spec.encoding])
        acc = b.xmm()
        for i, s in enumerate(outs):
            if i == 0:
                v.and_(acc, s, self._byte_mask(b, 1, 128))
            else:
                v.and_(s, s, self._byte_mask(b, 1 << i, 128))
                v.or_(acc, acc, s)
        v.store_u32(w.w32, acc)
        if self.constant:
            b.emit("xor", w.w32, Imm(self.constant * 0x01010101))

    def expand_key(self, k, b, ctx, key, bits) -> None:
        super().expand_key(k, b, ctx, key, bits)
        self._slice_round_keys(self.area(k, ctx), b, self.ops(b), ctx, bits)

    def sub_word(self, k, b, v, ctx, w) -> None:
        self._sub_word_xmm(self.area(k, ctx), b, v, w)

    def sub_rot_word(self, k, b, v, ctx, w, rcon: int) -> None:
        b.emit("ror", w.w32, Imm(8))
        self._sub_word_xmm(self.area(k, ctx), b, v, w)
        b.emit("xor", w.w32, Imm(rcon))

    def _slice_round_keys(self, at: Area, b, v, ctx, bits) -> None:
        """Round keys 1..Nr as slices, each in its round's layout(r, nr), the S-box constant
        added, each stored at the kernel's width."""
        nr, width = ROUNDS[bits], self.spec.width
        for r in range(1, nr + 1):
            x = b.xmm()
            v.load(x, Mem(128, base=ctx, disp=L.ROUND_KEYS + 16 * r))
            self._shuffle_unless_identity(b, v, [x], layout(r, nr), f"layout{(r - nr) % 4}", 128)
            for i, s in enumerate(self._to_slices(b, v, x, 128)):
                if self.constant >> i & 1:
                    v.xor(s, s, b.const("ones128", b"\xff" * 16))
                if width == 128:
                    v.store(self._key_mem(at, r, i, 128), s)
                else:
                    wide = b.vec(width)
                    v.broadcast_register(wide, s)
                    v.store(self._key_mem(at, r, i, width), wide, aligned=False)
