"""Round engines: how a method computes AES rounds and expands the key.

  AesEngine   AESENC/AESENCLAST on xmm (AES-NI) or ymm/zmm (VAES); AESKEYGENASSIST key schedule
  GfniEngine  no AES instruction at all: SubBytes with GF2P8AFFINEINVQB, ShiftRows not computed
              (the state's byte layout tracked instead), the doubling with GF2P8MULB, XORs
              folded by VPTERNLOGD where AVX-512 exists; the key schedule's SubWord also by GFNI

Round keys are either resident (broadcast once into registers before the loop: the EVEX
kernels, which have 32 registers) or loaded (broadcast) once per round per batch.

The protocol, the same on AArch64 (kernels/a64/engines.py): ``prepare(k, b, ctx, bits)``
gives the round keys of one size as ``rounds`` reads them; ``rounds(k, b, keys, blocks,
first, last, nr)`` computes rounds first..last on registers of blocks in FIPS-197 byte order;
``expand_key(k, b, ctx, key, bits)`` is the key schedule into the context; an engine emits
through its own vector operations (``ops(b)``, its encoding's). Nothing here knows about
counters, FACE or tags: the mode skeletons decide which rounds a block needs.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from ..dsl.builder import KernelBuilder
from ..dsl.operands import Imm, Mem, Reg
from . import ctx_layout as L
from .key_schedule import word_steps
from .spec import ROUNDS, KernelSpec
from .vector_ops import XOR3, VectorOps


# GF2P8AFFINEINVQB matrix and constant that give the AES S-box: A * x^-1 + 0x63 (seed 002,
# section 3; Intel GFNI: the matrix as a qword, row for result bit i in byte 7-i).
SBOX_MATRIX = 0xF1E3C78F1F3E7CF8
SBOX_CONSTANT = 0x63
# GF2P8AFFINEQB matrix of x -> 2x in GF(2^8) (xtime), derived from xtime's action on each bit.
DOUBLE_MATRIX = 0x8081028488102040


def _state_index(row: int, col: int) -> int:
    return 4 * col + row


def shift_rows_map() -> list[int]:
    """PSHUFB control: out[4c+r] = in[4((c+r)%4)+r] (FIPS-197 5.1.2)."""
    return [_state_index(r, (c + r) % 4) for c in range(4) for r in range(4)]


def rotate_columns_map(k: int) -> list[int]:
    """out[4c+r] = in[4c+(r+k)%4]: each column's bytes rotated up by k rows."""
    return [_state_index((r + k) % 4, c) for c in range(4) for r in range(4)]


def compose(first: list[int], then: list[int]) -> list[int]:
    """The single shuffle equal to applying ``first`` and then ``then``."""
    return [first[then[i]] for i in range(16)]


@dataclass
class Keys:
    """What ``prepare`` hands one function for one key size: round-key access (resident
    registers, or loads from the context) and any constants the engine keeps in registers
    there. The engine itself keeps nothing between calls."""
    ctx: Reg
    resident: list[Reg] | None
    width: int
    constants: dict = field(default_factory=dict)     # name -> register, this function's

    def get(self, b: KernelBuilder, v: VectorOps, r: int, width: int) -> Reg:
        if self.resident is not None and self.resident[r] is not None:
            return self.resident[r].view(width)
        key = b.vec(width)
        v.broadcast_lane(key, Mem(128, base=self.ctx, disp=L.ROUND_KEYS + 16 * r))
        return key


class RoundEngine:
    resident_keys: bool
    # True when a batch costs the same however few of its blocks are used (the bit-sliced
    # transposes and rounds): every batch is then one aligned group (kernels/grouped_ctr.py)
    grouped_batches = False
    # False when a mode may not interleave other work with its rounds (they take the
    # registers that work needs: the table engine's general-purpose registers)
    stitched = True

    def context_extra(self) -> int:
        """Bytes of the context this engine keeps for itself (ContextLayout.extra)."""
        return 0

    def context_fields(self) -> list:
        """The engine's own context fields, after the mode's: EXTRA of context_extra()
        bytes (secret), and any others the engine declares."""
        return L.engine_area(self.context_extra())

    def __init__(self, spec: KernelSpec) -> None:
        self.spec = spec
        self.resident_keys = spec.encoding == "evex" and spec.round_keys != "loaded"

    # vector registers a batch needs besides its blocks and the round keys (FACE cache,
    # table-fill temporary, counter base, input temporary)
    SPARE_REGISTERS = 4
    CONSTANT_REGISTERS = 0
    # vector temporaries a round of one register needs beside the register and its key
    # (a mode that interleaves other work with the rounds budgets them)
    ROUND_TEMPORARIES = 0

    def ops(self, b: KernelBuilder) -> VectorOps:
        """The vector operations of this engine's encoding, emitting into ``b``."""
        return VectorOps(b, self.spec.encoding)

    def fits(self, resident: int) -> bool:
        """Whether ``resident`` more registers stay live beside the batch, its spares and
        the engine's constants (only the 32-register EVEX kernels keep anything resident):
        the engine is told its register budget up front, there is no spilling."""
        need = resident + self.spec.interleave + self.SPARE_REGISTERS + self.CONSTANT_REGISTERS
        return self.resident_keys and need <= 32

    def prepare(self, k, b: KernelBuilder, ctx: Reg, bits: int) -> Keys:
        """The round keys of one key size, as ``rounds`` reads them."""
        v = self.ops(b)
        if not self.fits(ROUNDS[bits] + 1):
            return Keys(ctx, None, self.spec.width)
        regs = []
        for r in range(ROUNDS[bits] + 1):
            reg = b.vec(self.spec.width)
            v.broadcast_lane(reg, Mem(128, base=ctx, disp=L.ROUND_KEYS + 16 * r))
            regs.append(reg)
        return Keys(ctx, regs, self.spec.width)

    def rounds(self, k, b: KernelBuilder, keys: Keys, blocks: list[Reg],
               first: int, last: int, nr: int) -> list[Reg] | None:
        """Rounds first..last on ``blocks`` (byte order in, byte order out). Returns the
        registers now holding the blocks, or None when they are ``blocks`` themselves."""
        raise NotImplementedError

    def expand_key(self, k, b: KernelBuilder, ctx: Reg, key: Reg, bits: int) -> None:
        """FIPS-197 5.2 word by word; words live in the context, SubWord per engine (given
        the kernel and its context, for an engine that keeps scratch there)."""
        a, v = b.asm, self.ops(b)
        nk = bits // 32
        w = b.gp()
        for i in range(nk):
            a.mov(w.w32, Mem(32, base=key, disp=4 * i))
            a.mov(Mem(32, base=ctx, disp=L.ROUND_KEYS + 4 * i), w.w32)
        for i, step, rcon in word_steps(bits):
            a.mov(w.w32, Mem(32, base=ctx, disp=L.ROUND_KEYS + 4 * (i - 1)))
            if step == "rot_sub":
                self.sub_rot_word(k, b, v, ctx, w, rcon)
            elif step == "sub":
                self.sub_word(k, b, v, ctx, w)
            a.xor(w.w32, Mem(32, base=ctx, disp=L.ROUND_KEYS + 4 * (i - nk)))
            a.mov(Mem(32, base=ctx, disp=L.ROUND_KEYS + 4 * i), w.w32)

    def sub_word(self, k, b, v, ctx, w) -> None:
        raise NotImplementedError

    def sub_rot_word(self, k, b, v, ctx, w, rcon: int) -> None:
        raise NotImplementedError


class AesEngine(RoundEngine):
    """AES-NI (xmm) and VAES (ymm, zmm): one AESENC a round and register."""

    def rounds(self, k, b, keys, blocks, first, last, nr) -> None:
        v = self.ops(b)
        for r in range(first, last + 1):
            key = keys.get(b, v, r, blocks[0].width)
            for x in blocks:
                if r == 0:
                    v.xor(x, x, key)
                elif r == nr:
                    v.aes_last_round(x, x, key)
                else:
                    v.aes_round(x, x, key)

    def _assist(self, b, v, w, rcon: int, select: int | None) -> None:
        # AESKEYGENASSIST on a broadcast word gives dword0 = SubWord(w) and
        # dword1 = RotWord(SubWord(w)) ^ rcon (Intel SDM, AESKEYGENASSIST).
        x, y = b.xmm(), b.xmm()
        pre = "" if v.sse else "v"
        v.load_u32(x, w.w32)
        b.emit(f"{pre}pshufd", x, x, Imm(0))
        b.emit(f"{pre}aeskeygenassist", y, x, Imm(rcon))
        if select is not None:
            b.emit(f"{pre}pshufd", y, y, Imm(select))
        v.store_u32(w.w32, y)

    def sub_word(self, k, b, v, ctx, w) -> None:
        self._assist(b, v, w, 0, None)

    def sub_rot_word(self, k, b, v, ctx, w, rcon: int) -> None:
        self._assist(b, v, w, rcon, 0x55)


IDENTITY = list(range(16))


def gather(natural: list[int], target: list[int], rot: list[int] | None = None) -> list[int]:
    """The shuffle taking a register whose byte natural[i] holds state byte i to one whose
    byte target[i] holds byte rot[i] of that state (rot: a column rotation, or none)."""
    back = [0] * 16
    for i, j in enumerate(target):
        back[j] = i
    rot = rot or IDENTITY
    return [natural[rot[back[j]]] for j in range(16)]


class GfniEngine(RoundEngine):
    """AES rounds from GFNI and byte shuffles; no AES instruction.

    ShiftRows is not computed: it only moves bytes, so the state stays where SubBytes put
    it and the register holds the state permuted, state byte i in register byte L_r[i]
    after round r, with L_0 the identity and L_r = L_(r-1) . SR (ShiftRows has order 4:
    four layouts). MixColumns' column rotations in layout L_r are shuffles conjugated by
    it (``gather``), one constant each, and the key schedule stores round key r in layout
    L_r (expand_key), so AddRoundKey stays one XOR. Per round and register (seed 002,
    section 3, for the S-box):
      y = GF2P8AFFINEINVQB(x, A, 0x63)        SubBytes; with ShiftRows, a = y in layout L_r
      q = shuffle(y, ROT1 in L_r)             rot1(a)
      u = y ^ q                               u = a ^ rot1(a)
      d = GF2P8MULB(u, 2)  e = shuffle(u, ROT2 in L_r)
      x = d ^ q ^ e ^ k_r                     MixColumns + AddRoundKey
    since MixColumns(a) = 2a ^ 3rot1(a) ^ rot2(a) ^ rot3(a) = 2u ^ rot1(a) ^ rot2(u): two
    shuffles a round, where computing ShiftRows costs a third. The last round is SubBytes,
    the shuffle back to byte order (none when nr is a multiple of 4: AES-192) and the last
    key, kept in byte order. ``byte_order_through`` r: rounds 1..r end in byte order (they
    shuffle a = SR(y) into place, three shuffles), for a skeleton that reads a round's
    output bytes by position (the xmm FACE r1 table keeps column 0 of round 1); the
    layouts count from there. Round keys 1..nr-1 past it are stored in their layouts, not
    in FIPS-197 byte order.
    """

    CONSTANT_REGISTERS = 5         # the S-box matrix, the doubling, a round's 3 shuffles
    ROUND_TEMPORARIES = 3          # y, q, e of rounds()

    def __init__(self, spec: KernelSpec, byte_order_through: int = 0) -> None:
        super().__init__(spec)
        self.byte_order_through = byte_order_through
        # how MixColumns doubles, as the preset chose: "mulb" (GF2P8MULB by 2) or "affine"
        # (GF2P8AFFINEQB with DOUBLE_MATRIX); one instruction either way
        self.doubling = spec.doubling or "mulb"

    def layout(self, r: int) -> list[int]:
        """L_r: register byte L_r[i] holds state byte i after round r."""
        sr, lay = shift_rows_map(), list(IDENTITY)
        for _ in range(max(0, r - self.byte_order_through) % 4):
            lay = [lay[sr[i]] for i in range(16)]
        return lay

    def natural(self, r: int) -> list[int]:
        """Where round r's SubBytes output holds ShiftRows' result, before any shuffle."""
        before, sr = self.layout(r - 1), shift_rows_map()
        return [before[sr[i]] for i in range(16)]

    def prepare(self, k, b, ctx, bits) -> Keys:
        keys = super().prepare(k, b, ctx, bits)
        v = self.ops(b)
        if self.fits(0):
            # the constants live in registers too (the round keys may not fit beside them)
            for name in ("sbox", "two"):
                reg = b.vec(self.spec.width)
                v.load(reg, self._const_mem(b, name, self.spec.width), aligned=True)
                keys.constants[name] = reg
        return keys

    def _const_bytes(self, name: str) -> bytes:
        if name == "sbox":
            return SBOX_MATRIX.to_bytes(8, "little") * 2
        if name == "two":
            if self.doubling == "affine":
                return DOUBLE_MATRIX.to_bytes(8, "little") * 2
            return bytes([2]) * 16
        return bytes.fromhex(name.removeprefix("map_"))

    def _const_mem(self, b, name: str, width: int) -> Mem:
        lanes = width // 128
        return b.const(f"gfni_{name}{width}", self._const_bytes(name) * lanes,
                       align=width // 8)

    def _map(self, shuffle: list[int], width: int, b) -> Mem:
        return self._const_mem(b, "map_" + bytes(shuffle).hex(), width)

    def _c(self, keys: Keys, b, name: str, width: int) -> Reg | Mem:
        reg = keys.constants.get(name)
        if reg is not None:
            return reg.view(width)
        return self._const_mem(b, name, width)

    def _round_maps(self, keys: Keys, b, v, r: int, width: int) -> list[Reg | Mem | None]:
        """Round r's shuffles: into place (None when ShiftRows leaves a where it belongs),
        rot1 and rot2 in the round's layout; loaded once for all the batch's registers
        when the engine keeps constants in registers, else memory operands."""
        natural, target = self.natural(r), self.layout(r)
        maps = [None if natural == target else gather(natural, target),
                gather(natural, target, rotate_columns_map(1)),
                gather(target, target, rotate_columns_map(2))]
        out = []
        for m in maps:
            if m is None:
                out.append(None)
                continue
            mem = self._map(m, width, b)
            if keys.constants:
                reg = b.vec(width)
                v.load(reg, mem, aligned=True)
                out.append(reg)
            else:
                out.append(mem)
        return out

    def rounds(self, k, b, keys, blocks, first, last, nr) -> None:
        v, width = self.ops(b), blocks[0].width
        for r in range(first, last + 1):
            key = keys.get(b, v, r, width)
            if 0 < r < nr:
                place, rot1, rot2 = self._round_maps(keys, b, v, r, width)
            for x in blocks:
                if r == 0:
                    v.xor(x, x, key)
                    continue
                y = b.vec(width)
                v.affine_inverse(y, x, self._c(keys, b, "sbox", width), SBOX_CONSTANT)
                if r == nr:
                    home = self.natural(r)           # where y holds each state byte
                    if home != IDENTITY:                         # back to byte order
                        v.shuffle_bytes(y, y, self._map(home, width, b))
                    v.xor(x, y, key)
                    continue
                q, e = b.vec(width), b.vec(width)
                v.shuffle_bytes(q, y, rot1)
                if place is not None:
                    v.shuffle_bytes(y, y, place)
                v.xor(y, y, q)                                   # y = u
                self._double(keys, b, v, x, y, width)            # x = 2u
                v.shuffle_bytes(e, y, rot2)
                if v.evex:
                    v.ternary(x, q, e, XOR3)
                else:
                    v.xor(x, x, q)
                    v.xor(x, x, e)
                v.xor(x, x, key)

    def expand_key(self, k, b, ctx, key, bits) -> None:
        """FIPS-197's schedule, then round keys 1..nr-1 moved into their rounds' layouts."""
        super().expand_key(k, b, ctx, key, bits)
        v = self.ops(b)
        for r in range(1, ROUNDS[bits]):
            lay = self.layout(r)
            if lay != IDENTITY:
                t = b.xmm()
                at = Mem(128, base=ctx, disp=L.ROUND_KEYS + 16 * r)
                v.load(t, at, aligned=True)
                v.shuffle_bytes(t, t, self._map(gather(IDENTITY, lay), 128, b))
                v.store(at, t, aligned=True)

    def _double(self, keys: Keys, b, v, dst, src, width) -> None:
        if self.doubling == "affine":
            v.affine(dst, src, self._c(keys, b, "two", width), 0)
        else:
            v.gf_multiply(dst, src, self._c(keys, b, "two", width))

    def _subword_xmm(self, b, v, w) -> None:
        x = b.xmm()
        v.load_u32(x, w.w32)
        v.affine_inverse(x, x, self._const_mem(b, "sbox", 128), SBOX_CONSTANT)
        v.store_u32(w.w32, x)

    def sub_word(self, k, b, v, ctx, w) -> None:
        self._subword_xmm(b, v, w)

    def sub_rot_word(self, k, b, v, ctx, w, rcon: int) -> None:
        b.emit("ror", w.w32, Imm(8))          # RotWord: bytes (a0 a1 a2 a3) -> (a1 a2 a3 a0)
        self._subword_xmm(b, v, w)
        b.emit("xor", w.w32, Imm(rcon))

