"""AES-GCM-SIV (RFC 8452) on x86-64: the layers its skeleton (skeleton.py) runs over. They
extend the GCM frame (modes/gcm/x86_64.py: arguments, context fields, short pieces, the AES
engine's rounds, the carry-less hash over blocks in memory) with what GCM-SIV does
differently:

- the hash engine runs in POLYVAL's bit order (gf128/x86_64/clmul.py with ``polyval``):
  blocks are loaded as they are, H is the key itself; POLYVAL's dot is the engine's dot;
- per message, the keys are derived from the nonce (4 or 6 AES blocks of LE32(i) || nonce,
  their low halves), the encryption key is expanded in registers (AESENCLAST of the last
  word, broadcast rotated by PSHUFB, with the round constant as the key: SubWord(RotWord)
  ^ rcon in every column, as seed 002 recommends over AESKEYGENASSIST) into MSG_KEYS, and
  the powers H..H^8 of the authentication key are computed into H_POWERS;
- the counter is the tag with bit 127 set, a little-endian 32-bit number in bytes 0..3:
  kept in block order, it steps by one PADDD of a constant on its lowest dword.
"""
from __future__ import annotations

import contextlib

from ...dsl.operands import Imm, Label, Mem, Reg
from ...gf128.x86_64.clmul import ClmulHash
from ...isa.table import load_table
from ...kernels import ctx_layout
from ...kernels.engine_choice import engine_for
from ...kernels.engines import Keys
from ...kernels.fields import Field, FieldLayout
from ...kernels.spec import ROUNDS, KernelSpec
from ...kernels.vector_ops import VectorOps
from ...dsl.builder import KernelBuilder
from ...arch.x86_64.short_bytes import short_move
from ...passes.abi import sysv_with_vectors
from .. import BuiltKernel
from ..gcm.skeleton import BATCH
from ..gcm.x86_64 import Body as GcmBody
from .skeleton import build_all

POWERS = BATCH                  # H^8..H^1: one reduction a batch of 8 blocks
# AES-128's round constants, and the key schedule's byte moves (PSHUFB controls): the last
# word of the key, rotated (RotWord), in every column; and not rotated (AES-256's SubWord)
RCON = (0x01, 0x02, 0x04, 0x08, 0x10, 0x20, 0x40, 0x80, 0x1B, 0x36)
ROT_LAST_WORD = bytes([13, 14, 15, 12] * 4)
LAST_WORD = bytes([12, 13, 14, 15] * 4)
# the POLYVAL result XOR the nonce loses bit 127; the counter block gains it
CLEAR_TOP = bytes([0xFF] * 15 + [0x7F])
SET_TOP = bytes(15) + bytes([0x80])


def layout(karatsuba: bool) -> FieldLayout:
    """The context: the key-generating key's cipher section, then the message's keys."""
    return FieldLayout.build(ctx_layout.CIPHER_FIELDS + [
        Field("mode", "MSG_KEYS", 240, 16, "the message's encryption key, expanded (derived "
              "from the nonce, RFC 8452 section 4)"),
        Field("hash", "H_POWERS", 16 * POWERS, 16, "the message's authentication key H: "
              "H^8 .. H^1, highest first"),
    ] + ([Field("hash", "H_KARATSUBA", 16 * POWERS, 16, "for each power, its two halves "
                "XORed (Karatsuba's middle key)")] if karatsuba else []) + [
        Field("mode", "SCRATCH", 16, 16, "a block the message ends inside; the tag being "
              "compared"),
    ])


class GcmSivKernel:
    """Shared facts while one GCM-SIV kernel's entry points are built (what the GCM frame
    asks of its kernel, and the message's own)."""

    def __init__(self, spec: KernelSpec) -> None:
        if spec.width != 128:
            raise ValueError(f"{spec.name}: the GCM-SIV skeleton runs on xmm")
        self.spec = spec
        self.table = load_table("x86_64")
        self.engine = engine_for(spec)
        self.lanes = 1
        self.batch = self.hash_batch = BATCH
        self.powers = self.table_powers = POWERS
        self.hash_width = 128
        self.karatsuba = spec.hash_multiply == "karatsuba"
        self.sliced_hash = self.table_hash = False
        self.short_records = self.masked_tails = self.spills = False
        self.face_rounds = 0
        self.counter = spec.counter_policy
        self.layout = layout(self.karatsuba)
        self.run = None

    def body(self, entry: str, doc: str) -> "Body":
        b = KernelBuilder(self.table, self.spec.symbol(entry), doc=doc)
        return Body(self, b, VectorOps(b, self.spec.encoding))


class Body(GcmBody):
    """One entry point: the GCM frame's layers with the hash in POLYVAL's bit order, and
    the message's own (skeleton.py)."""

    def __post_init__(self) -> None:
        super().__post_init__()
        self.hash = ClmulHash(self.b, self.v, polyval=True)

    # --- the message's keys -----------------------------------------------------------
    def _nonce(self, nonce: Reg) -> Reg:
        """The 12 nonce bytes in bytes 0..11 of a register, 12..15 zero (two loads, none
        past the nonce)."""
        n = self.b.xmm()
        self.v.load_u32(n, Mem(32, base=nonce, disp=8))
        self.v.shift_bytes_left(n, n, 8)
        t, g = self.b.xmm(), self.b.gp()
        self.a.mov(g, Mem(64, base=nonce))
        self.v.from_gp64(t, g)
        self.v.or_(n, n, t)
        return n

    def message_keys_base(self) -> Reg:
        """The address the engine reads the message's round keys from (as ROUND_KEYS of a
        context there)."""
        r = self.b.gp()
        self.a.lea(r, Mem(64, base=self.ctx, disp=self.k.layout.offset("MSG_KEYS")
                          - ctx_layout.ROUND_KEYS))
        return r

    def derive(self, nonce: Reg, bits: int) -> None:
        """The message's keys from the nonce (skeleton.py, step 1)."""
        b, v = self.b, self.v
        with b.phase("derive"):
            n = self._nonce(nonce)
            v.shift_bytes_left(n, n, 4)                 # LE32(i) || nonce
            blocks = []
            for i in range(2 + bits // 64):
                blk = b.xmm()
                v.or_(blk, n, b.const(f"le32_{i}", i.to_bytes(16, "little")))
                blocks.append(blk)
            self.aes(blocks, bits)
            halves = []
            for lo, hi in zip(blocks[::2], blocks[1::2]):
                v.unpack_low_qwords(lo, lo, hi)
                halves.append(lo)
            auth, enc = halves[0], halves[1:]
            self._expand(enc, bits)
            self.keep_hash_key(auth)

    def _expand(self, enc: list[Reg], bits: int) -> None:
        """FIPS-197's key expansion of the message key in registers, each round key stored
        to MSG_KEYS: the next 4 words are the prefix XOR of the 4 before (3 shifts by a
        word) and SubWord(RotWord(last)) ^ rcon (AES-256: SubWord(last) every other round
        key), that made by AESENCLAST on the word broadcast by PSHUFB."""
        b, v = self.b, self.v
        keys = list(enc)
        for r, k in enumerate(keys):
            v.store(self.f("MSG_KEYS", 16 * r), k)
        zero = self.zero_vec()
        i = 0
        while len(keys) < ROUNDS[bits] + 1:
            prev, last = keys[-len(enc)], keys[-1]
            rotated = len(keys) % len(enc) == 0
            t = b.xmm()
            v.shuffle_bytes(t, last, b.const("rot_last_word" if rotated else "last_word",
                                             ROT_LAST_WORD if rotated else LAST_WORD))
            if rotated:
                v.aes_last_round(t, t, b.const(f"rcon{i}", bytes([RCON[i], 0, 0, 0]) * 4))
                i += 1
            else:
                v.aes_last_round(t, t, zero)
            k = b.xmm()
            s = b.xmm()
            v.copy(k, prev)
            for _ in range(3):
                v.shift_bytes_left(s, k if _ == 0 else s, 4)
                v.xor(k, k, s)
            v.xor(k, k, t)
            v.store(self.f("MSG_KEYS", 16 * len(keys)), k)
            keys.append(k)

    # --- POLYVAL ------------------------------------------------------------------------
    def hash_bytes(self, x: Reg, ptr: Reg, length: Reg, region: str | None = None) -> None:
        """X through POLYVAL over length bytes at ptr, the last block zero-padded; ptr and
        length are the caller's (copies are consumed). The batch loop is in ``region``
        when given (the reports' steady state)."""
        a, b, v, isa = self.a, self.b, self.v, self.isa
        p, n = b.gp(), b.gp()
        isa.move(b, p, ptr)
        isa.move(b, n, length)
        with b.phase_names({"ghash_multiply": "polyval_multiply"}):
            for n_blocks in (self.k.batch, 1):
                top, next_ = b.label(f"polyval{n_blocks}"), b.label(f"polyval{n_blocks}_done")
                steady = region and n_blocks > 1
                with b.region(region) if steady else contextlib.nullcontext():
                    b.bind(top)
                    with b.phase("loop"):
                        isa.compare_jump(b, "b", n, 16 * n_blocks, next_)
                    self.hash_blocks(x, p, n_blocks)
                    with b.phase("loop"):
                        a.add(p, Imm(16 * n_blocks))
                        a.sub(n, Imm(16 * n_blocks))
                        a.jmp(top)
                b.bind(next_)
            done = b.label("polyval_end")
            with b.phase("tail"):
                isa.jump_if_zero(b, n, done)
                v.store(self.f("SCRATCH"), self.zero_vec())
                short_move(b, n, src=p, dst=self.addr("SCRATCH"))
                self.hash_blocks(x, self.ctx, 1, disp=self.k.layout.offset("SCRATCH"))
            b.bind(done)

    def hash_length_block(self, x: Reg, aad_len: Reg, length: Reg) -> None:
        """X through POLYVAL over LE64(bits of AAD) || LE64(bits of the plaintext)."""
        a, b, v = self.a, self.b, self.v
        with b.phase_names({"ghash_multiply": "polyval_multiply"}):
            aad_bits, msg_bits = b.gp(), b.gp()
            a.mov(aad_bits, aad_len)
            a.shl(aad_bits, Imm(3))
            a.mov(msg_bits, length)
            a.shl(msg_bits, Imm(3))
            lens, t = b.xmm(), b.xmm()
            v.from_gp64(lens, aad_bits)
            v.from_gp64(t, msg_bits)
            v.unpack_low_qwords(lens, lens, t)
            v.xor(lens, lens, x)
            v.copy(x, self.times_h(lens))

    # --- the tag and the counter ---------------------------------------------------------
    def tag_block(self, x: Reg, nonce: Reg, bits: int) -> Reg:
        """AES under the message key of X XOR the nonce with bit 127 cleared."""
        b, v = self.b, self.v
        s = b.xmm()
        v.xor(s, x, self._nonce(nonce))
        v.and_(s, s, b.const("clear_top", CLEAR_TOP))
        with b.phase("aes"):
            self.rounds(Keys(self.message_keys_base(), None, 128), [s], 0, ROUNDS[bits],
                        ROUNDS[bits])
        return s

    def store_tag(self, ptr: Reg, tag: Reg) -> None:
        self.v.store(Mem(128, base=ptr), tag, aligned=False)

    def load_tag(self, ptr: Reg) -> Reg:
        t = self.b.xmm()
        self.v.load(t, Mem(128, base=ptr), aligned=False)
        return t

    def _step(self, n: int) -> Mem:
        return self.b.const(f"le32_{n}", n.to_bytes(16, "little"))

    def ctr(self, bits: int, tag: Reg, inp: Reg, length: Reg, out: Reg) -> None:
        """out = in ^ AES-CTR from the tag with bit 127 set over length bytes: batches of
        8 blocks, single blocks, and the block the message ends inside (its keystream in
        SCRATCH, the bytes moved by pieces)."""
        a, b, v, isa = self.a, self.b, self.v, self.isa
        keys = Keys(self.message_keys_base(), None, 128)
        nr = ROUNDS[bits]
        c = b.xmm()
        v.or_(c, tag, b.const("set_top", SET_TOP))
        src, dst, n = b.gp(), b.gp(), b.gp()
        isa.move(b, src, inp)
        isa.move(b, dst, out)
        isa.move(b, n, length)
        end = b.label(f"ctr_end{bits}")
        for n_blocks, region in ((self.k.batch, f"steady-{bits}"), (1, f"single-{bits}")):
            top, next_ = b.label(f"ctr{n_blocks}_{bits}"), b.label(f"ctr{n_blocks}_done{bits}")
            with b.region(region):
                b.bind(top)
                with b.phase("loop"):
                    isa.compare_jump(b, "b", n, 16 * n_blocks, next_)
                blocks = []
                with b.phase("counter"):
                    for j in range(n_blocks):
                        blk = b.xmm()
                        if j:
                            v.add_dwords(blk, c, self._step(j))
                        else:
                            v.copy(blk, c)
                        blocks.append(blk)
                    v.add_dwords(c, c, self._step(n_blocks))
                with b.phase("aes"):
                    self.rounds(keys, blocks, 0, nr, nr)
                self.xor_store(blocks, src, dst)
                self.advance(src, dst, n, n_blocks)
                with b.phase("loop"):
                    a.jmp(top)
            b.bind(next_)
        with b.region(f"tail-{bits}"), b.phase("tail"):
            isa.jump_if_zero(b, n, end)
            with b.phase("aes"):
                self.rounds(keys, [c], 0, nr, nr)
            v.store(self.f("SCRATCH"), c)
            short_move(b, n, src=src, dst=dst, xor=self.addr("SCRATCH"))
        b.bind(end)


def build_kernel(spec: KernelSpec) -> BuiltKernel:
    """The GCM-SIV skeleton on x86-64 (modes/: the mode descriptor names it)."""
    k = GcmSivKernel(spec)
    functions = build_all(k)
    abi = {entry: sysv_with_vectors(32) for entry in functions} if spec.encoding == "evex" else {}
    return BuiltKernel(functions, k.layout.size, tuple(k.layout.table()), abi=abi)
