"""AES-GCM (NIST SP 800-38D) on AArch64: the layers the GCM skeleton (skeleton.py: the entry
points and the stream's state, written once) runs over, and the data path, over an A64
round engine (kernels/a64/engines.py: armv8-ce, neon-tbl, neon-bitsliced) and a hash
engine (gf128/aarch64/: PMULL with the Crypto Extension, PMULL.8b without it).

In the context: COUNTER is the next counter block in block order; the data loop keeps it
with each 32-bit lane's bytes reversed (REV32), so inc32 is an ADD of 1 to lane 3, wrapping
mod 2^32 without touching bytes 0..11. HASH is the GHASH accumulator in hash order (the
block byte-reversed, gf128/x86_64/clmul.py's representation).

Arguments (AAPCS64): seal and open take ten, the first eight in x0-x7 and tag, tag_len on
the stack at [sp] and [sp, #8] (the frame pass moves them past its own slots). The entry
points call the data path of their direction (bl; passes/frame.py keeps x29, x30 then).

A batch is 8 blocks: the counters, the engine's rounds with its round keys resident, the
XOR with the input, then the batch's ciphertext hashed by H^8..H^1 and reduced once (the
input, before the rounds, when decrypting: out may be in). An engine that takes fewer
blocks a call (neon-tbl: 4) gets the batch in pieces. Where the engine's resident registers
and the hash's do not fit together (neon-tbl's S-box in 16 registers beside the PMULL.8b
hash), the hash runs first and the engine loads its registers again after it, a batch at
a time.
"""
from __future__ import annotations

from dataclasses import dataclass

from ...arch.aarch64 import short_bytes
from ...arch.aarch64.scalar import A64Scalar
from ...arch.aarch64.zeroing import zero_context
from ...dsl.builder import KernelBuilder
from ...dsl.operands import SP, Imm, Label, Mem, Reg, xreg
from ...gf128.aarch64.pmull import PmullHash
from ...gf128.aarch64.pmull8 import Pmull8Hash
from ...isa.table import load_table
from ...kernels.a64.engine_choice import engine_for
from ...kernels.face_fill import FIRST_FILL, FaceRun, RunFields
from ...kernels.a64.schedule import latencies_of
from ...kernels.spec import FACE_ROUNDS, ROUNDS, KernelSpec
from ...uarch import model_for
from .. import BuiltKernel
from ..contracts import AEAD
from .layout import NO_WINDOW, gcm_layout
from .skeleton import BATCH, DATA_PATH, ENGINE_PHASES, GcmFrame, build_all

VECTOR_REGISTERS = 32
# vector registers the data loop keeps across a batch beside the engine's and the hash's:
# the counters, and two for the allocator; and the counter steps of one block and of a
# FACE batch, where they fit (else they are made again where used)
LOOP_REGISTERS = 3
STEP_REGISTERS = 2
# the PMULL.8b hash's budget: all but the loop's registers
PMULL8_REGISTERS = VECTOR_REGISTERS - LOOP_REGISTERS - 1
# seal's and open's later arguments by name (AAPCS64: x0-x7, then the stack, 8 bytes each)
REGISTER_ARG = {p.name: i for i, p in enumerate(AEAD.parameters("seal")) if 6 <= i < 8}
STACK_ARG = {p.name: 8 * (i - 8) for i, p in enumerate(AEAD.parameters("seal")) if i >= 8}


class GcmKernel:
    """Shared facts while one GCM kernel's entry points are built."""

    def __init__(self, spec: KernelSpec) -> None:
        self.spec = spec
        self.table = load_table("aarch64")
        self.engine = engine_for(spec)
        self.lanes = 1
        self.batch = self.hash_batch = BATCH
        self.powers = self.table_powers = BATCH
        self.face_rounds = FACE_ROUNDS[spec.face]
        self.karatsuba = spec.hash_multiply == "karatsuba"
        self.short_records = self.masked_tails = False
        self.layout = gcm_layout(self.table_powers, spec.face, 1, self.karatsuba,
                                 self.engine.context_fields(), 0, spec.hash)
        self.latencies = latencies_of(model_for(spec.uarch, "aarch64"))
        lay = self.layout
        self.run = FaceRun(A64Scalar(), RunFields(
            lay.FACE_TAG_LO, lay.FACE_TAG_HI, lay.FILL_START, lay.FILL_COUNT,
            lay.FILL_BUDGET)) if self.face_rounds else None

    def body(self, entry: str, doc: str) -> "Body":
        return Body(self, KernelBuilder(self.table, self.spec.symbol(entry), doc=doc))

    def hash_engine(self, b: KernelBuilder, f):
        """The spec's hash engine for one function: PMULL, or without the Crypto Extension
        PMULL.8b, scheduled for the preset's core with what the data loop keeps beside it."""
        if self.spec.hash == "pmull8":
            return Pmull8Hash(b, f, self.table_powers, True, self.latencies,
                              PMULL8_REGISTERS)
        return PmullHash(b, f, self.table_powers, self.karatsuba)

    def keys_stay(self, bits: int, hash_registers: int) -> bool:
        """Whether the engine's resident registers may stay through the data loop beside
        the hash (else it loads them a batch at a time, after the hash)."""
        return (self.engine.registers(bits) + hash_registers + LOOP_REGISTERS
                <= VECTOR_REGISTERS)

    def steps_stay(self, bits: int, hash_registers: int) -> bool:
        """Whether the counter steps may stay in registers through the data loop too."""
        keys = self.engine.registers(bits) if self.keys_stay(bits, hash_registers) else 0
        return (keys + hash_registers + LOOP_REGISTERS + STEP_REGISTERS
                <= VECTOR_REGISTERS)


@dataclass
class Body(GcmFrame):
    """One entry point under construction: the layers skeleton.GcmFrame asks for."""
    k: GcmKernel
    b: KernelBuilder

    isa = A64Scalar()

    def __post_init__(self) -> None:
        self.a = self.b.asm
        self.hash = self.k.hash_engine(self.b, self.f)
        self.ctx: Reg | None = None
        self.later: dict[str, Reg] = {}
        self.stitch = True          # crypt_size: whether a batch's rounds and hash fit
        self.loop: dict = {}        # crypt_size: its round keys, counter step registers

    # --- arguments and fields --------------------------------------------------------
    def args(self, count: int) -> list[Reg]:
        self.isa.entry(self.b)
        regs = self.isa.args(self.b, count + 2 if count == 6 else count)
        self.ctx = regs[0]
        if count == 6:                             # seal, open: len and out in x6, x7
            self.later = {name: regs[n] for name, n in REGISTER_ARG.items()}
        return regs[:count]

    def arg(self, name: str) -> Reg:
        """A later argument of seal and open, in a register of its own (the caller may
        consume it)."""
        r = self.b.gp()
        if name in self.later:
            self.a.mov(r, self.later[name])
        else:
            self.a.ldr(r, Mem(64, base=SP, disp=STACK_ARG[name]))
        return r

    def f(self, name: str, extra: int = 0, width: int = 128) -> Mem:
        return Mem(width, base=self.ctx, disp=self.k.layout.offset(name) + extra)

    def addr(self, name: str, index: Reg | None = None) -> Reg:
        r = self.b.gp()
        self.a.add(r, self.ctx, Imm(self.k.layout.offset(name)))
        if index is not None:
            self.a.add(r, r, index)
        return r

    # --- blocks --------------------------------------------------------------------------
    def new_block(self) -> Reg:
        return self.b.vec(128)

    def zero_block(self) -> Reg:
        z = self.b.vec(128)
        self.a.movi(z.d2, Imm(0))
        return z

    def load_block(self, y: Reg, name: str) -> None:
        self.a.ldr(y.q, self.f(name))

    def store_block(self, name: str, y: Reg) -> None:
        self.a.str(y.q, self.f(name))

    def short_move(self, n: Reg, **kw) -> None:
        short_bytes.short_move(self.b, n, **kw)

    def short_zero(self, n: Reg, *, dst: Reg) -> None:
        short_bytes.short_zero(self.b, n, dst=dst)

    def short_differ(self, n: Reg, **kw) -> None:
        short_bytes.short_differ(self.b, n, **kw)

    def zero_context(self, ctx: Reg) -> None:
        zero_context(self.b, ctx, self.k.layout.size)

    # --- AES -----------------------------------------------------------------------------
    def aes(self, blocks: list[Reg], bits: int, keys=None) -> None:
        nr = ROUNDS[bits]
        with self.b.phase("aes"):
            self.rounds(self._keys(bits, keys), blocks, 0, nr, nr)

    def _keys(self, bits: int, keys=None):
        """The engine's round keys: those the loop keeps, or loaded here."""
        if keys is not None:
            return keys
        with self.b.phase("aes"):
            return self.k.engine.prepare(self.k, self.b, self.ctx, bits)

    def rounds(self, keys, blocks: list[Reg], first: int, last: int, nr: int,
               offset: Reg | None = None) -> None:
        """The engine's rounds first..last on the blocks, as many a call as it takes; with
        ``offset`` the blocks XOR offset are the state after round first - 1 (the FACE
        cache: the engine may fold it into a round key)."""
        eng = self.k.engine
        size = eng.max_blocks or len(blocks)
        with self.b.phase_names(ENGINE_PHASES):
            for i in range(0, len(blocks), size):
                part = blocks[i:i + size]
                if offset is None:
                    eng.rounds(self.k, self.b, keys, part, first, last, nr)
                    continue
                eng.rounds_from_offset(self.k, self.b, keys, part, offset, first - 1,
                                       min(last, nr - 1), nr)
                if last >= nr:
                    eng.last_round(self.k, self.b, keys, part, nr)

    # --- GHASH ---------------------------------------------------------------------------
    def times_h(self, y: Reg) -> Reg:
        """y H, reduced, in a new register (hash order)."""
        return self.hash.times_h(y)

    def hash_blocks(self, x: Reg, ptr: Reg, n: int, disp: int = 0) -> None:
        """X = (X ^ B1) H^n ^ B2 H^(n-1) ^ .. ^ Bn H for the n blocks at ptr + disp: one
        reduction."""
        self.hash.absorb(x, ptr, n, disp)

    def hash_pending(self, x: Reg, *, clear: bool) -> None:
        """X = (X ^ PENDING) H; PENDING = 0 when clear."""
        y = self.b.vec(128)
        self.hash.load_block(y, self.f("PENDING"))
        self.a.eor(y.b16, y.b16, x.b16)
        self.a.mov(x.b16, self.times_h(y).b16)
        if clear:
            self.store_block("PENDING", self.zero_block())

    def reset_hash(self) -> None:
        """Nothing beside HASH: the accumulator is the whole state."""

    def keep_hash_key(self, h: Reg) -> None:
        """H~ and what the hash engine keeps of its powers, from H = E_K(0^128)."""
        self.hash.setup(h)

    def length_block(self) -> Reg:
        """[len(A)]64 || [len(C)]64 in hash order (SP 800-38D 7.1 step 5)."""
        a, b = self.a, self.b
        aad_bits, msg_bits = b.gp(), b.gp()
        a.ldr(aad_bits, self.f("AAD_LEN", width=64))
        a.ldr(msg_bits, self.f("MSG_LEN", width=64))
        a.lsl(aad_bits, aad_bits, Imm(3))
        a.lsl(msg_bits, msg_bits, Imm(3))
        lens = b.vec(128)
        a.fmov(lens.d, msg_bits)
        a.ins(lens.lane_view("d", 1), aad_bits)
        return lens

    # --- nonce, counter and tag ------------------------------------------------------------
    def j0_from_nonce12(self, nonce: Reg, j0: Reg) -> None:
        """J0 = the 12 nonce bytes || 00 00 00 01."""
        a, b = self.a, self.b
        t, one = b.vec(128), b.gp()
        a.ldr(j0.d, Mem(64, base=nonce))
        a.ldr(t.s, Mem(32, base=nonce, disp=8))
        a.ins(j0.lane_view("s", 2), t.lane_view("s", 0))
        a.movz(one, Imm(0x100), Imm(16))            # bytes 00 00 00 01, little-endian
        a.ins(j0.lane_view("s", 3), one.w)

    def j0_from_hash(self, x: Reg, bits_len: Reg, j0: Reg) -> None:
        """J0 = the hash X of a long nonce's blocks with 0^64 || [len]64 hashed last, in
        block order."""
        lens = self.b.vec(128)
        self.a.fmov(lens.d, bits_len)
        self.a.eor(x.b16, x.b16, lens.b16)
        self.hash.byte_reverse(j0, self.times_h(x))

    def _one(self, n: int = 1) -> Reg:
        """n in 32-bit lane 3: steps a counter kept REV32 by n blocks."""
        a, b = self.a, self.b
        one, t = b.vec(128), b.gp()
        a.movi(one.d2, Imm(0))
        a.mov(t.w, Imm(n))
        a.ins(one.lane_view("s", 3), t.w)
        return one

    def counter_after(self, j0: Reg) -> Reg:
        """J0 + 1 as COUNTER keeps it (block order: inc32 between two REV32s)."""
        a, b = self.a, self.b
        c = b.vec(128)
        a.rev32(c.b16, j0.b16)
        a.add(c.s4, c.s4, self._one().s4)
        a.rev32(c.b16, c.b16)
        return c

    def face_begin(self, j0: Reg, c: Reg) -> None:
        """FACE's step of a new message (skeleton.begin_message): the table's nonce bytes
        checked, the first counter's window cached beside E_K(J0) (in j0)."""
        a, b = self.a, self.b
        self.face_new_message(j0)

        def window_and_mask(bits: int) -> None:
            # the first counter's window cached now, beside E_K(J0): a new nonce's
            # first batch finds its window (no refresh on the way into the data)
            keys = self.k.engine.prepare(self.k, b, self.ctx, bits)
            cr = b.vec(128)
            a.rev32(cr.b16, c.b16)
            self._refresh(cr, bits, keys)
            self.aes([j0], bits, keys)
        self.per_key_size("aes_j0", window_and_mask, b.label("aes_j0_done"))

    # --- FACE on the GCM counter ---------------------------------------------------------
    def face_new_message(self, j0: Reg) -> None:
        """A new nonce: no window is cached; the run of filled table entries stays when
        counter bytes 0, 5 and 10 (nonce bytes) are those it was filled under, else it is
        emptied and only this record's first fill batch stores (kernels/face_fill.py)."""
        a, b, isa = self.a, self.b, self.isa
        t = b.gp()
        isa.move(b, t, NO_WINDOW)
        isa.store(b, self.f("FACE_WINDOW", width=64), t)
        same = b.label("same_table")
        hi, lo = b.gp(), b.gp()
        a.umov(hi, j0.lane_view("d", 0))
        a.umov(lo, j0.lane_view("d", 1))
        a.rev(hi, hi)                               # counter bytes 0..7, big-endian
        a.rev(lo, lo)
        self.k.run.keep_or_empty_table(b, self.ctx, lo, hi, same, FIRST_FILL)
        b.bind(same)

    def _counter_word(self, cr: Reg) -> Reg:
        """Counter bytes 12..15 as a number (lane 3 of the REV32 form)."""
        w = self.b.gp()
        self.a.umov(w.w, cr.lane_view("s", 3))
        return w

    def dispatch_batch(self, cr: Reg, labels: dict[str, Label]) -> Reg:
        """Branch on the public counter to the batch kind (skeleton.batch_loop); returns
        the register holding in15 of the batch's first block."""
        a, b, isa = self.a, self.b, self.isa
        blocks = self.k.batch
        with b.phase("face"):
            self.jump_if_counter_secret(labels["full"])   # J0 from GHASH: every batch in full
            ctr = self._counter_word(cr)
            idx = b.gp()
            b.emit("and", idx, ctr, Imm(0xFF))          # in15
            isa.compare_jump(b, "a", idx, 256 - blocks, labels["full"])
            a.lsr(ctr, ctr, Imm(8))
            isa.compare_jump(b, "ne", ctr, self.f("FACE_WINDOW", width=64), labels["refresh"])
            self.k.run.jump_unless_complete(b, self.ctx, labels["check"])
        return idx

    def _refresh(self, cr: Reg, bits: int, keys) -> None:
        """Cache the window of the counter (REV32 form): the engine's state after FACE's
        rounds of its in15 = 0 block, and the window's number."""
        a, b = self.a, self.b
        nr = ROUNDS[bits]
        with b.phase("face"):
            ctr = self._counter_word(cr)
            base, w = b.vec(128), b.gp()
            b.emit("and", w, ctr, Imm(0xFFFFFF00))
            a.mov(base.b16, cr.b16)
            a.ins(base.lane_view("s", 3), w.w)
            a.rev32(base.b16, base.b16)
            self.rounds(self._keys(bits, keys), [base], 0, self.k.face_rounds, nr)
            self.store_block("FACE_CACHE", base)
            a.lsr(ctr, ctr, Imm(8))
            a.str(ctr, self.f("FACE_WINDOW", width=64))

    def refresh_window(self, cr: Reg, bits: int) -> None:
        self._refresh(cr, bits, self.loop["keys"])

    def face_mark(self, in15: Reg) -> None:
        """Record the entries a fill batch stored (from in15 on) in the run."""
        with self.b.phase("face"):
            self.k.run.record_filled(self.b, self.ctx, in15, self.k.batch)

    def face_batch(self, kind: str, cr: Reg, idx: Reg | None, bits: int,
                   keys) -> list[Reg]:
        """The AES part of one batch: "full" computes every round; "fill" too, storing
        each block's table entry after FACE's rounds; "fast" starts each block from its
        table entry XOR the cache, the counter stepped past the batch. An engine that
        takes fewer blocks a call (max_blocks) gets the batch in pieces, each but the last
        XORed into the data and stored at once, so its keystream does not wait in
        registers; the last piece's blocks are returned (the skeleton stores them)."""
        a, b = self.a, self.b
        f, n = self.k.face_rounds, self.k.batch
        size = self.k.engine.max_blocks or n
        kind = "full" if not f else kind
        tp = None
        if kind != "full":
            keys = self._keys(bits, keys)
            tp = b.gp()
            with b.phase("face"):
                a.add(tp, self.ctx, idx, Imm(4))            # ctx + 16 in15
                a.add(tp, tp, Imm(self.k.layout.FACE_TABLE))  # its entry
        elif size < n:
            keys = self._keys(bits, keys)                   # once for the pieces
        for first in range(0, n, size):
            blocks = self._piece(kind, cr, tp, first, min(size, n - first), bits, keys)
            if first + size < n:
                self.xor_store(blocks, self.loop["inp"], self.loop["out"])
        return blocks

    def _step(self, name: str = "step") -> Reg:
        """The counter step of one block ("one") or of a batch ("step"): the loop's
        register, or made here where the loop keeps none."""
        if self.loop[name] is not None:
            return self.loop[name]
        with self.b.phase("counter"):
            return self._one(1 if name == "one" else self.k.batch)

    def _piece(self, kind: str, cr: Reg, tp: Reg | None, first: int, m: int, bits: int,
               keys) -> list[Reg]:
        """Blocks first..first+m-1 of a batch through the engine (face_batch); the FACE
        cache is loaded for each piece (no register holds it across another's rounds)."""
        a, b = self.a, self.b
        nr, f = ROUNDS[bits], self.k.face_rounds
        keys = self._keys(bits, keys)
        # the last round goes with the data into xor_store where the engine folds them
        # (EOR3 of the last key and the data), else it ends the rounds here
        last = nr - 1 if self.k.engine.folds_data else nr

        def done(blocks: list[Reg]):
            return LastRound(blocks, keys, nr) if last < nr else blocks
        if kind == "full":
            blocks = self._counters(cr, self._step("one"), m)
            with b.phase("aes"):
                self.rounds(keys, blocks, 0, last, nr)
            return done(blocks)
        cache = b.vec(128)
        if kind == "fast":
            with b.phase("face"):
                self.load_block(cache, "FACE_CACHE")
            blocks = [b.vec(128) for _ in range(m)]
            with b.phase("face"):
                for j in range(0, m, 2):
                    at = 16 * (first + j)
                    if j + 1 < m:
                        a.ldp(blocks[j].q, blocks[j + 1].q, Mem(256, base=tp, disp=at))
                    else:
                        a.ldr(blocks[j].q, Mem(128, base=tp, disp=at))
            if first + m == self.k.batch:
                with b.phase("counter"):
                    a.add(cr.s4, cr.s4, self._step().s4)
            with b.phase("aes"):                         # from T[in15] ^ the cache
                self.rounds(keys, blocks, f + 1, last, nr, offset=cache)
            return done(blocks)
        blocks = self._counters(cr, self._step("one"), m)     # fill
        with b.phase("aes"):
            self.rounds(keys, blocks, 0, f, nr)
        with b.phase("face"):
            self.load_block(cache, "FACE_CACHE")
            e = b.vec(128)
            for j, blk in enumerate(blocks):
                a.eor(e.b16, blk.b16, cache.b16)
                a.str(e.q, Mem(128, base=tp, disp=16 * (first + j)))
        with b.phase("aes"):
            self.rounds(keys, blocks, f + 1, last, nr)
        return done(blocks)

    def finish(self) -> Reg:
        """The full 16-byte tag (SP 800-38D 7.1 steps 5-6) in a register. Leaves the
        context as it was, so asking twice gives the same tag."""
        a = self.a
        self.begin_data()
        x = self.new_block()
        self.load_block(x, "HASH")
        self.flush_pending(x, "MSG_LEN", clear=False)
        a.eor(x.b16, x.b16, self.length_block().b16)
        tag, mask = self.new_block(), self.new_block()
        self.hash.byte_reverse(tag, self.times_h(x))
        self.load_block(mask, "TAG_MASK")
        a.eor(tag.b16, tag.b16, mask.b16)
        return tag

    def one_shot_tag(self) -> None:
        return None

    def write_tag(self, tag_out: Reg, tag_len: Reg, tag: Reg | None = None) -> None:
        """The first tag_len bytes of the tag: one store for 16, else through SCRATCH in
        pieces."""
        a, b = self.a, self.b
        tag = self.finish() if tag is None else tag
        pieces, done = b.label("tag_pieces"), b.label("tag_written")
        self.isa.compare_jump(b, "ne", tag_len, 16, pieces)
        a.str(tag.q, Mem(128, base=tag_out))
        a.b(done)
        b.bind(pieces)
        self.store_block("SCRATCH", tag)
        self.short_move(tag_len, src=self.addr("SCRATCH"), dst=tag_out, largest=16)
        b.bind(done)

    # --- the data path -------------------------------------------------------------------
    def call_data(self, inp, length, out, *, decrypt: bool, final: bool = False) -> None:
        """Run the data path of the direction on in, length, out (the context stays in a
        register the call keeps: x0 is set again from it)."""
        for n, value in enumerate((self.ctx, inp, length, out)):
            self.a.mov(xreg(n), value)
        self.a.bl(Label(self.k.spec.symbol(DATA_PATH[decrypt])))

    def _counters(self, cr: Reg, one: Reg, n: int) -> list[Reg]:
        """n counter blocks from cr (REV32 form), cr advanced past them."""
        blocks = []
        with self.b.phase("counter"):
            for _ in range(n):
                blk = self.b.vec(128)
                self.a.rev32(blk.b16, cr.b16)
                self.a.add(cr.s4, cr.s4, one.s4)
                blocks.append(blk)
        return blocks

    def xor_store(self, blocks, inp: Reg, out: Reg) -> None:
        """out = in ^ the keystream of the blocks, a pair at a time; blocks a round short
        of it (LastRound) get the engine's last round with the data folded in (EOR3 of
        the last key and the data where the preset has FEAT_SHA3)."""
        a, b = self.a, self.b
        last = blocks if isinstance(blocks, LastRound) else None
        regs = last.blocks if last else blocks
        with b.phase("load_store"):
            for i in range(0, len(regs), 2):
                pair = regs[i:i + 2]
                data = [b.vec(128) for _ in pair]
                if len(pair) == 2:
                    a.ldp(data[0].q, data[1].q, Mem(256, base=inp, disp=32, writeback="post"))
                else:
                    a.ldr(data[0].q, Mem(128, base=inp, disp=16, writeback="post"))
                if last:
                    with b.phase("aes"), b.phase_names(ENGINE_PHASES):
                        self.k.engine.last_round(self.k, b, last.keys, pair, last.nr, data)
                else:
                    for x, d in zip(pair, data):
                        a.eor(x.b16, x.b16, d.b16)
                if len(pair) == 2:
                    a.stp(pair[0].q, pair[1].q, Mem(256, base=out, disp=32, writeback="post"))
                else:
                    a.str(pair[0].q, Mem(128, base=out, disp=16, writeback="post"))

    @property
    def hash_ahead(self) -> bool:
        return not self.stitch

    def beside(self, rounds, hashing) -> tuple:
        """Emit rounds() and hashing() (independent streams) stitched, the second spread
        through the first (AESE/AESMC and PMULL issue side by side), and return what each
        returned; one after the other where they do not fit the registers together."""
        if not self.stitch:
            done = hashing()
            return rounds(), done
        with self.b.capture() as first:
            out1 = rounds()
        with self.b.capture() as second:
            out2 = hashing()
        self.b.emit_stitched(_fused_pairs(first), second, self.k.spec.stitch_window)
        return out1, out2

    # --- what skeleton.GcmFrame.batch_loop asks ----------------------------------------
    def hash_batch(self, x: Reg, inp: Reg, out: Reg, decrypt: bool) -> None:
        """The GHASH beside a batch: its own input when decrypting, else the previous
        batch's ciphertext (just before out)."""
        n = self.k.batch
        if decrypt:
            self.hash_blocks(x, inp, n)
            return
        written = self.b.gp()
        with self.b.phase("load_store"):
            self.a.sub(written, out, Imm(16 * n))
        self.hash_blocks(x, written, n)

    def plain_batches(self, body, cr: Reg, region: str) -> None:
        body("full", None)

    def advance(self, inp: Reg, out: Reg, length: Reg, n_blocks: int) -> None:
        """xor_store moved the pointers already (post-indexed): the length alone."""
        with self.b.phase("loop"):
            self.a.sub(length, length, Imm(16 * n_blocks))

    def crypt_size(self, bits: int, x: Reg, inp: Reg, length: Reg, out: Reg,
                   decrypt: bool, final: Reg | None) -> None:
        """Batches of 8 blocks (skeleton.batch_loop: with FACE, the kind the counter picks),
        their AES rounds stitched with the GHASH of 8 blocks already in memory:
        encrypting, the previous batch's ciphertext (so the first batch is hashed in the
        second's iteration and the last after the loop), decrypting, the batch's own
        input (hashed before out, which may be in, is written). Then single blocks and
        the partial last block, whose keystream stays in KEYSTREAM. Where the round keys,
        a batch and the hash's registers do not fit the 32 vector registers together
        (AES-256: 15 keys; the PMULL.8b hash), the hash runs before the rounds instead,
        and where the engine's resident registers do not fit beside the hash alone, the
        engine loads them a batch at a time."""
        a, b, isa = self.a, self.b, self.isa
        n, hashing = self.k.batch, self.hash.registers
        keys = (self.k.engine.prepare(self.k, b, self.ctx, bits)
                if self.k.keys_stay(bits, hashing) else None)
        steps = self.k.steps_stay(bits, hashing)
        cr = b.vec(128)
        one = self._one() if steps else None
        step = self._one(n) if self.k.face_rounds and steps else None
        self.loop = {"keys": keys, "one": one, "step": step, "inp": inp, "out": out}
        self.stitch = (self.k.engine.registers(bits) + n + hashing
                       + (2 if self.k.face_rounds else 0) <= VECTOR_REGISTERS)
        self.load_block(cr, "COUNTER")
        a.rev32(cr.b16, cr.b16)
        end, small = b.label(f"end{bits}"), b.label(f"small{bits}")
        top, drain = b.label(f"top{bits}"), b.label(f"drain{bits}")
        with b.phase("loop"):
            isa.compare_jump(b, "b", length, 16 * n, small)
        if not decrypt:                               # the pipeline fills: one batch
            first, first_done = b.label(f"first{bits}"), b.label(f"first_done{bits}")
            self.batch_loop(bits, x, cr, inp, length, out, decrypt, False, first,
                            first_done, f"first-{bits}", keys, once=True)
            b.bind(first_done)
        self.batch_loop(bits, x, cr, inp, length, out, decrypt, True, top,
                        small if decrypt else drain, f"steady-{bits}", keys)
        if not decrypt:
            with b.region(f"drain-{bits}"):             # the last batch's hash
                b.bind(drain)
                self.hash_batch(x, inp, out, False)
        b.bind(small)
        single, tail = b.label(f"single{bits}"), b.label(f"tail{bits}")
        with b.region(f"single-{bits}"):
            b.bind(single)
            with b.phase("loop"):
                isa.compare_jump(b, "b", length, 16, tail)
            if decrypt:
                self.hash_blocks(x, inp, 1)
            blocks = self._counters(cr, self._step("one"), 1)
            self.aes(blocks, bits, keys)
            self.xor_store(blocks, inp, out)
            if not decrypt:
                self.hash_blocks(x, previous_one(self, out), 1)
            with b.phase("loop"):
                a.sub(length, length, Imm(16))
                a.b(single)
        with b.region(f"tail-{bits}"), b.phase("tail"):
            b.bind(tail)
            isa.jump_if_zero(b, length, end)
            (blk,) = self._counters(cr, self._step("one"), 1)
            self.aes([blk], bits, keys)
            self.store_block("KEYSTREAM", blk)
            self.short_move(length, src=inp, dst=out, xor=self.addr("KEYSTREAM"),
                            record=self.addr("PENDING"), record_input=decrypt)
        b.bind(end)
        a.rev32(cr.b16, cr.b16)
        self.store_block("COUNTER", cr)


@dataclass
class LastRound:
    """A batch's blocks after round Nr - 1, and what finishes them: the engine's last round,
    which xor_store runs with the data beside it."""
    blocks: list
    keys: object
    nr: int


def _fused_pairs(stream: list) -> list:
    """The stream with each AESE and the AESMC after it on the same register as one unit
    (a list), so stitching never separates the pair the cores fuse."""
    units: list = []
    for item in stream:
        prev = units[-1] if units else None
        if (getattr(item, "name", "") == "aesmc" and prev is not None
                and not isinstance(prev, list) and prev.name == "aese"
                and prev.operands[0].key == item.operands[1].key):
            units[-1] = [prev, item]
        else:
            units.append(item)
    return units


def previous_one(g: Body, out: Reg) -> Reg:
    """The address of the block just written (out has moved past it)."""
    written = g.b.gp()
    with g.b.phase("load_store"):
        g.a.sub(written, out, Imm(16))
    return written


def build_kernel(spec: KernelSpec) -> BuiltKernel:
    """The GCM skeleton on AArch64 (modes/: the mode descriptor names it)."""
    k = GcmKernel(spec)
    functions = build_all(k)
    return BuiltKernel(functions, k.layout.size, tuple(k.layout.table()),
                       public_fields=k.layout.public_names(),
                       interleave=k.batch if k.batch != spec.interleave else None)
