"""AES-GCM (NIST SP 800-38D) on x86-64: the layers the GCM skeleton (skeleton.py: the
entry points and the stream's state, written once) runs over, and the data path, over a
cipher engine (kernels/engines.py: rounds and the key schedule) and a hash engine
(gf128/x86_64: multiply, accumulate, reduce).

In the context: COUNTER is the next counter block, byte-reversed, so inc32 is PADDD of 1
on dword 0 (wrapping mod 2^32 as SP 800-38D's inc32 does, without touching bytes 0..11);
HASH is the GHASH accumulator X, byte-reversed (hash order, see gf128/x86_64/clmul.py).

Short pieces (a tail, the partial block a streaming call starts or ends in, a tag) move by
pieces of 8, 4, 2 and 1 bytes chosen by the bits of the length (arch/x86_64/short_bytes.py):
no byte loop, nothing read or written outside the caller's buffers.
"""
from __future__ import annotations

import contextlib
from dataclasses import dataclass

from ...arch.x86_64.scalar import X86Scalar
from ...arch.x86_64.short_bytes import short_differ, short_move, short_zero
from ...arch.x86_64.zeroing import zero_context
from ...dsl.builder import KernelBuilder
from ...dsl.operands import Imm, Label, Mem, Reg, kmask
from ...gf128.x86_64.bytesliced import ByteSlicedHash
from ...gf128.x86_64.clmul import ClmulHash, Products
from ...gf128.x86_64.table import TableHash
from ...isa.table import load_table
from ...kernels import ctx_layout
from ...kernels.engine_choice import engine_for
from ...kernels.engines import Keys
from ...kernels.face_fill import FIRST_FILL, RECORD_SEEN, FaceRun, RunFields
from ...kernels.spec import FACE_ROUNDS, ROUNDS, KernelSpec
from ...kernels.table_kernel import NOT_CONSTANT_TIME
from ...kernels.vector_ops import VectorOps
from ...passes.abi import calling_convention
from .. import BuiltKernel
from ..contracts import AEAD
from . import short_record as short
from .short_record import SHORT_BLOCKS, counter_block, load_short, nonce_block
from .layout import NO_WINDOW, gcm_layout
from .skeleton import BATCH, DATA_PATH, ENGINE_PHASES, GcmFrame, build_all

ONE = (1).to_bytes(16, "little")


def tail_sizes(batch: int) -> list[int]:
    """Registers of AES the zmm masked tail may compute, the fewest that hold its bytes: the
    powers of two below the batch, and the batch (8: 1, 2, 4 or 8), so a 100-byte record
    does not pay for a batch of AES."""
    return sorted({1 << i for i in range(batch.bit_length()) if 1 << i < batch} | {batch})


@dataclass(frozen=True)
class Drain:
    """What the zmm masked tail hashes beside its AES rounds: the ``regs`` registers of
    ciphertext just before out (the encrypt loop's last batch, or the record path's last
    chunk), into ``acc`` (the sum so far, unreduced) or a new sum that X joins;
    ``length_hashed``: acc holds the length block's product already."""
    regs: int
    acc: Products | None = None
    length_hashed: bool = False


# vector registers the zmm loop holds beside a batch's blocks, its resident round keys and
# the products of one register pair (6 Karatsuba, 8 schoolbook): the counters, X, the three
# sums, the FACE cache, a loaded power of H (found by the allocator: with 8 blocks and
# Karatsuba, 11 keys allocate and 12 do not; with schoolbook, 9 and 10)
ZMM_LOOP_REGISTERS = 7
# vector registers the record path (_record_chunks) needs beside a chunk's blocks and its
# resident round keys (found by the allocator: a chunk of 8 with 10 keys allocates, with 11
# not; of 7 with 11)
CHUNK_LOOP_REGISTERS = 14
SPILLED = 2                     # vector registers Body.rounds may keep in SPILL


def take_conventions(k, spec: KernelSpec) -> None:
    """Give a kernel under construction (GCM's, and the modes that reuse its frame) the
    calling convention of its entry points (``conv``: the spec's, with 32 vector registers
    under EVEX) and of the data path they call (``data_conv``: a function of this file,
    all five of (ctx, in, len, out, final) in registers), and a scalar layer for each."""
    k.conv = calling_convention("x86_64", spec.abi, 32 if spec.encoding == "evex" else None)
    k.data_conv = k.conv.local(5)
    k.isa = X86Scalar(k.conv)
    k.data_isa = X86Scalar(k.data_conv)
    k.data_symbols = frozenset(spec.symbol(e) for e in DATA_PATH.values())


class GcmKernel:
    """Shared facts while one GCM kernel's entry points are built."""

    def __init__(self, spec: KernelSpec) -> None:
        if (spec.width == 512) != (spec.encoding == "evex"):
            raise ValueError(f"{spec.name}: the GCM skeleton runs on xmm (SSE, VEX), ymm (VEX) "
                             f"and zmm (EVEX, 32 registers)")
        self.spec = spec
        self.table = load_table("x86_64")
        take_conventions(self, spec)
        self.engine = engine_for(spec)
        self.lanes = spec.width // 128
        # the hash engine: PCLMULQDQ / VPCLMULQDQ, or without them byte-sliced streams
        # (state in the context, 8 blocks a multiply; no short-record path), or for the
        # table method lookup tables (a block at a time, by H alone; not constant time)
        self.sliced_hash = spec.hash == "bytesliced"
        self.table_hash = spec.hash == "table"
        # the carry-less multiply's register width: the cipher's, or xmm beside a ymm
        # cipher where the CPU has PCLMULQDQ but not VPCLMULQDQ ("clmul-xmm")
        self.hash_width = spec.width if spec.hash == "clmul" else 128
        # short records (short_record.py) hash by the powers of H in registers, and the zmm
        # data path ends a message in masked registers whose products join the last
        # batch's before one reduction: both clmul only (the other engines take the
        # 16-register path's tails: batches of 4, single blocks, a partial block)
        self.short_records = spec.hash in ("clmul", "clmul-xmm")
        self.masked_tails = self.lanes == 4 and not self.sliced_hash
        # registers a batch: on zmm the preset's [gcm] zmm_batch (the spec's interleave);
        # in 16 registers, BATCH less the temporaries the engine's rounds need; with the
        # byte-sliced hash, whose state waits in the context, 8 blocks (its 8 streams)
        self.batch = (spec.interleave if self.lanes == 4
                      else BATCH - self.engine.ROUND_TEMPORARIES)
        if self.sliced_hash and not self.engine.grouped_batches and self.lanes < 4:
            self.batch = 8 // self.lanes        # the rounds no longer share registers
        # an engine whose rounds are not stitched with the hash (the table engine's, on
        # general-purpose registers) gains nothing from a batch: a block a loop, and the
        # AAD hashed a block at a time
        self.hash_batch = BATCH
        if not self.engine.stitched:
            self.batch = self.hash_batch = 1
        self.powers = self.batch * self.lanes     # one reduction per batch of registers
        # one-shot records of a few chunks: a pipeline of chunks of registers
        # (_record_chunks), where the engine's rounds cost by the register; a chunk smaller
        # than the batch (the masked tail without a batch before it takes up to a chunk:
        # a chunk of a batch or more would have the batch loop's shape)
        self.record_chunk = (spec.record_chunk if self.masked_tails and spec.hash == "clmul"
                             and self.engine.stitched and not self.engine.grouped_batches
                             and spec.record_chunk < self.batch else 0)
        # on zmm a one-shot message ends in one reduction over its last batch, its tail and
        # the length block (_tail_registers, _end_alone): up to twice a batch and one more
        # and absorb hashes the AAD BATCH blocks a reduction, a short record
        # (short_record.py) its blocks, the AAD and the length block (SHORT_BLOCKS + 2)
        self.table_powers = (2 * self.powers + 1 if self.lanes == 4
                             else max(self.powers, BATCH, SHORT_BLOCKS + 2))
        self.face_rounds = FACE_ROUNDS[spec.face]
        self.counter = spec.counter_policy          # inc32 (the mode admits no other)
        self.karatsuba = spec.hash_multiply == "karatsuba"
        # an engine whose rounds take all 16 registers: the data path's hash accumulator
        # and counter wait in the context while they run
        self.spills = (self.engine.grouped_batches and spec.encoding != "evex")
        self.layout = gcm_layout(self.table_powers, spec.face, self.lanes, self.karatsuba,
                                 self.engine.context_fields(), SPILLED if self.spills else 0,
                                 spec.hash)
        lay = self.layout
        self.run = FaceRun(self.isa, RunFields(
            lay.FACE_TAG_LO, lay.FACE_TAG_HI, lay.FILL_START, lay.FILL_COUNT,
            lay.FILL_BUDGET)) if self.face_rounds else None

    def resident_rounds(self, bits: int) -> range:
        """The rounds whose keys the zmm data loop keeps in registers: as many of the last
        rounds a FACE-fast batch computes as the 32 registers leave room for (the others
        are broadcast from the context each batch); none where the preset loads round
        keys, or off zmm. On Zen 4 keys in registers, with the FACE cache and each power
        of H loaded once, take 6% off a 16 KiB seal (the loads slow VPCLMULQDQ)."""
        if self.lanes != 4 or not self.engine.resident_keys:
            return range(0)
        nr = ROUNDS[bits]
        room = (32 - self.batch - ZMM_LOOP_REGISTERS - (6 if self.karatsuba else 8)
                - self.engine.ROUND_TEMPORARIES)
        first = self.face_rounds + 1 if self.face_rounds else 0     # none: the whitening too
        return range(max(first, nr + 1 - room), nr + 1)

    def body(self, entry: str, doc: str) -> "Body":
        if self.table_hash:
            doc += f"\n{NOT_CONSTANT_TIME}."
        b = KernelBuilder(self.table, self.spec.symbol(entry), doc=doc)
        return Body(self, b, VectorOps(b, self.spec.encoding))


@dataclass
class Body(GcmFrame):
    """One entry point under construction: its builder, vector ops and hash engine; the
    layers skeleton.GcmFrame asks for, on x86-64."""
    k: GcmKernel
    b: KernelBuilder
    v: VectorOps

    @property
    def isa(self) -> X86Scalar:
        """The scalar layer under this function's calling convention (the data path's is
        the local one)."""
        return self.k.data_isa if self.b.function.symbol in self.k.data_symbols else self.k.isa

    def __post_init__(self) -> None:
        self.a = self.b.asm
        self.hash = ClmulHash(self.b, self.v)       # its byte-order constants serve all
        self.streams = ByteSlicedHash(self.b, self.v, self.f) if self.k.sliced_hash else None
        self.lookup = TableHash(self.b, self.v, self.f) if self.k.table_hash else None
        self.ctx: Reg | None = None
        self.across: tuple[Reg, ...] = ()   # live across the rounds emitted now (keeping)

    # --- small pieces --------------------------------------------------------------
    def args(self, count: int) -> list[Reg]:
        self.isa.entry(self.b)
        regs = self.isa.args(self.b, count)
        self.ctx = regs[0]
        return regs

    def arg(self, name: str) -> Reg:
        """A later argument of seal and open by its name in the C prototype (each call a
        load from where the calling convention keeps it at entry: SysV on the stack, Win64
        from the fifth on)."""
        return self.isa.arg(self.b, AEAD.position("seal", name))

    def f(self, name: str, extra: int = 0, width: int = 128) -> Mem:
        return Mem(width, base=self.ctx, disp=self.k.layout.offset(name) + extra)

    def addr(self, name: str, index: Reg | None = None) -> Reg:
        r = self.b.gp()
        self.a.lea(r, Mem(64, base=self.ctx, index=index, disp=self.k.layout.offset(name)))
        return r


    def zero_vec(self) -> Reg:
        z = self.b.xmm()
        self.v.xor(z, z, z)
        return z

    zero_block = zero_vec

    def new_block(self) -> Reg:
        return self.b.xmm()

    def load_block(self, y: Reg, name: str) -> None:
        self.v.load(y, self.f(name))

    def store_block(self, name: str, y: Reg) -> None:
        self.v.store(self.f(name), y)

    def short_move(self, n: Reg, **kw) -> None:
        short_move(self.b, n, **kw)

    def short_zero(self, n: Reg, *, dst: Reg) -> None:
        short_zero(self.b, n, dst=dst)

    def short_differ(self, n: Reg, **kw) -> None:
        short_differ(self.b, n, **kw)

    def zero_context(self, ctx: Reg) -> None:
        zero_context(self.b, self.v, ctx, self.k.layout.size, self.k.spec.width,
                     aligned=self.k.spec.width == 128)

    # --- AES -----------------------------------------------------------------------
    def aes(self, blocks: list[Reg], bits: int, keys: Keys | None = None) -> None:
        nr = ROUNDS[bits]
        with self.b.phase("aes"):
            self.rounds(keys or Keys(self.ctx, None, 128), blocks, 0, nr, nr)

    def beside(self, rounds, hashing) -> tuple:
        """Emit rounds() and hashing() (independent streams) stitched, the second spread
        through the first, and return what each returned. An engine with batch-wide
        transposes, a round loop and spills (grouped_batches) runs them one after the
        other: stitched, the two would not fit the registers together."""
        b = self.b
        if self.streams is not None:        # its multiply first: no block register live
            done = hashing()
            return rounds(), done
        if self.k.engine.grouped_batches or not self.k.engine.stitched:
            return rounds(), hashing()
        with b.capture() as first:
            out1 = rounds()
        with b.capture() as second:
            out2 = hashing()
        b.emit_stitched(first, second, self.k.spec.stitch_window)
        return out1, out2

    @contextlib.contextmanager
    def keeping(self, *regs: Reg):
        """Inside, ``regs`` are live across every engine's rounds emitted (see rounds)."""
        old, self.across = self.across, regs
        try:
            yield
        finally:
            self.across = old

    def rounds(self, keys: Keys, blocks: list[Reg], first: int, last: int, nr: int) -> None:
        """The engine's rounds first..last on blocks, in place: an engine that leaves its
        results in other registers (the bit-sliced one) has them copied back. Where the
        kernel spills (k.spills), the registers ``keeping`` names wait in the context while
        the rounds run (stored before, loaded after: not live in between)."""
        busy = {x.key for x in blocks}
        kept = [r for r in self.across if r.key not in busy] if self.k.spills else []
        for i, r in enumerate(kept):
            self.v.store(self.f("SPILL", 64 * i, r.width), r, aligned=True)
        with self.b.phase_names(ENGINE_PHASES):
            out = self.k.engine.rounds(self.k, self.b, keys, blocks, first, last, nr)
        for x, y in zip(blocks, out or blocks):
            if x is not y:
                self.v.copy(x, y)
        for i, r in enumerate(kept):
            self.v.load(r, self.f("SPILL", 64 * i, r.width), aligned=True)

    def loop_keys(self, bits: int) -> Keys:
        """The round keys of the data loop: k.resident_rounds broadcast into registers here,
        before it, the others loaded where used."""
        nr = ROUNDS[bits]
        regs: list[Reg | None] = [None] * (nr + 1)
        for r in self.k.resident_rounds(bits):
            regs[r] = self.b.vec(512)
            self.v.broadcast_lane(regs[r], Mem(128, base=self.ctx,
                                               disp=ctx_layout.ROUND_KEYS + 16 * r))
        return Keys(self.ctx, regs, 128)



    # --- GHASH -----------------------------------------------------------------------
    def power(self, i: int, width: int = 128, field: str = "H_POWERS") -> Mem:
        """H~^i (i >= 1) in the context; at width 256, H~^i and H~^(i-1) in its lanes."""
        return self.f(field, 16 * (self.k.table_powers - i), width)

    def times_h(self, y: Reg) -> Reg:
        """y H, reduced, in a new register (hash order)."""
        if self.lookup is not None:
            return self.lookup.multiply(y)
        return self.hash.dot(y, self.power(1))

    def mul_power(self, y: Reg, i: int, acc):
        """acc += y * H~^i (y's lanes by H~^i, H~^(i-1), ...), as the preset chose."""
        return self.mul_power_at(y, self.power(i, y.width), acc)

    def mul_power_at(self, y: Reg, h: Mem, acc):
        """acc += y * the power of H at h in H_POWERS, schoolbook or Karatsuba as the preset
        chose (Karatsuba's key for it stands as far into H_KARATSUBA)."""
        if self.k.karatsuba:
            apart = self.k.layout.offset("H_KARATSUBA") - self.k.layout.offset("H_POWERS")
            return self.hash.multiply_karatsuba(y, h, Mem(h.width, h.base, h.index, h.scale,
                                                          h.disp + apart, h.rip_label), acc)
        return self.hash.multiply(y, h, acc)

    def products(self, x: Reg | None, ptr: Reg, regs: int, disp: int, width: int,
                 power_of, acc: Products | None = None, x_last: bool = False) -> Products:
        """acc + the unreduced products of the ``regs`` registers of blocks at ptr + disp,
        register j times the powers power_of(j, field) gives (a Mem in field H_POWERS or
        H_KARATSUBA); X (when given) joins register 0's first lane. Under EVEX the
        registers go in pairs, their products summed three at a time; with EVEX's 32
        registers the register X joins is multiplied and summed last: the other products
        do not depend on X, so the chain from one reduction to the next (X, one multiply,
        one sum, the lane fold, the reduction) stays shorter than the multiplies take (16
        registers have no room to keep X that long beside a batch of AES; ``x_last`` asks
        for it where nothing else runs: a loop of hashing alone)."""
        h = self.hash
        step = 2 if self.v.evex and regs % 2 == 0 else 1
        order = range(0, regs, step)
        for j0 in reversed(order) if self.v.evex or x_last else order:
            ys = []
            for j in range(j0, j0 + step):
                y = self.b.vec(width)
                with self.b.phase("load_store"):
                    h.load_block(y, Mem(width, base=ptr, disp=disp + width // 8 * j))
                if j == 0 and x is not None:
                    with self.b.phase("ghash_multiply"):
                        self.v.xor(y, y, x.view(width))   # X in lane 0; upper lanes are 0
                ys.append(y)
            with self.b.phase("ghash_multiply"):
                if step == 1:
                    acc = self.mul_power_at(ys[0], power_of(j0, "H_POWERS"), acc)
                else:
                    hks = None
                    if self.k.karatsuba:
                        hks = tuple(power_of(j, "H_KARATSUBA") for j in (j0, j0 + 1))
                    acc = self.hash.multiply_two(
                        tuple(ys), tuple(power_of(j, "H_POWERS") for j in (j0, j0 + 1)),
                        hks, acc)
        return acc

    def hash_blocks(self, x: Reg, ptr: Reg, n: int, disp: int = 0, width: int = 128,
                    x_last: bool = False) -> None:
        """X = (X ^ B1) H^n ^ B2 H^(n-1) ^ .. ^ Bn H for the n blocks at ptr + disp: one
        reduction. At width 256 a register takes two blocks, the powers two a load. (The
        byte-sliced engine hashes them into its streams, 8 a multiply.) ``x_last``: see
        products."""
        if self.streams is not None:
            self.streams.absorb_blocks("STREAMS", "HASHED", ptr, n, disp)
            return
        if self.lookup is not None:                 # Horner, a block at a time
            for i in range(n):
                y = self.b.xmm()
                with self.b.phase("load_store"):
                    self.hash.load_block(y, Mem(128, base=ptr, disp=disp + 16 * i))
                with self.b.phase("ghash_multiply"):
                    self.v.xor(y, y, x)
                    self.v.copy(x, self.lookup.multiply(y))
            return
        lanes = width // 128
        acc = self.products(x, ptr, n // lanes, disp, width,
                            lambda j, field: self.power(n - lanes * j, width, field),
                            x_last=x_last)
        with self.b.phase("reduction"):
            self.v.copy(x, self.hash.reduce(acc))

    def hash_pending(self, x: Reg, *, clear: bool) -> None:
        """X = (X ^ PENDING) H; PENDING = 0 when clear."""
        if self.streams is not None:
            y = self.b.xmm()
            self.v.load(y, self.f("PENDING"))
            self.streams.absorb_block("STREAMS", "HASHED", y)
            if clear:
                self.v.store(self.f("PENDING"), self.zero_vec())
            return
        y = self.b.xmm()
        self.hash.load_block(y, self.f("PENDING"), aligned=True)
        self.v.xor(y, y, x)
        self.v.copy(x, self.times_h(y))
        if clear:
            self.v.store(self.f("PENDING"), self.zero_vec())




    # --- the data path -------------------------------------------------------------------

    def call_data(self, inp, length, out, *, decrypt: bool, final: bool = False) -> None:
        """Run the data path (build_data's function) on in, length, out (registers or
        stack arguments); the context stays in a register the call keeps. On zmm the data
        path takes a fifth argument, ``final``: the call holds the whole message (seal,
        open), so it leaves in HASH the GHASH of AAD, ciphertext and the length block."""
        values = (self.ctx, inp, length, out)
        if self.k.masked_tails:
            values += (Imm(1 if final else 0),)
        for reg, value in zip(self.k.data_conv.arguments, values):
            self.a.mov(reg, value)
        self.a.call(Label(self.k.spec.symbol(DATA_PATH[decrypt])))


    def _counters(self, c: Reg, n: int) -> list[Reg]:
        """n registers of counter blocks from c (byte-reversed, one counter a lane, the
        lanes consecutive), c advanced by n blocks a lane (inc32 each)."""
        v, b, w = self.v, self.b, c.width
        blocks = []
        with b.phase("counter"):
            for j in range(n):                  # c + j registers' blocks: no chain of adds
                blk = b.vec(w)
                if j:
                    self.k.counter.vector_add(v, blk, c, self._blocks_step(j, w))
                v.shuffle_bytes(blk, blk if j else c, self.hash.bswap_mask(w))
                blocks.append(blk)
            self.k.counter.vector_add(v, c, c, self._blocks_step(n, w))
        return blocks

    def _counters_in_byte(self, c: Reg, n: int) -> list[Reg]:
        """_counters for a batch whose counters differ in byte 15 alone (the caller checked
        that its last does not carry out of it): one byte swap, then byte adds, where
        _counters swaps every register."""
        v, b, w = self.v, self.b, c.width
        lanes = w // 128
        step = b.vec(w)
        blocks = []
        with b.phase("counter"):
            v.load(step, b.const(f"byte_step{lanes}", (bytes(15) + bytes([lanes])) * lanes,
                                 align=w // 8), aligned=False)
            for j in range(n):
                blk = b.vec(w)
                if j == 0:
                    v.shuffle_bytes(blk, c, self.hash.bswap_mask(w))
                else:
                    v.add_bytes(blk, blocks[-1], step)
                blocks.append(blk)
            self.k.counter.vector_add(v, c, c, self._blocks_step(n, w))
        return blocks

    def lane_steps(self) -> Mem:
        """The constant that makes lane l of a register of one counter broadcast count
        from it + l (0, 1, 2, 3: inc32 in the counters' byte-reversed form)."""
        lanes, width = self.k.lanes, self.k.spec.width
        return self.b.const(f"lanes{lanes}", b"".join(
            lane.to_bytes(16, "little") for lane in range(lanes)), align=width // 8)

    def _blocks_step(self, n: int, width: int) -> Mem:
        """The constant that advances counters kept byte-reversed, one a lane, by n
        registers of blocks (n lanes' worth in every lane)."""
        lanes = width // 128
        return self.b.const(f"step{lanes}x{n}", (n * lanes).to_bytes(16, "little") * lanes,
                            align=width // 8)

    def xor_store(self, blocks: list[Reg], inp: Reg, out: Reg) -> None:
        with self.b.phase("load_store"):
            for j, blk in enumerate(blocks):
                size = blk.width // 8
                self.v.xor(blk, blk, Mem(blk.width, base=inp, disp=size * j), unaligned=True)
                self.v.store(Mem(blk.width, base=out, disp=size * j), blk, aligned=False)

    def advance(self, inp: Reg, out: Reg, length: Reg, n_blocks: int) -> None:
        with self.b.phase("loop"):
            self.a.add(inp, Imm(16 * n_blocks))
            self.a.add(out, Imm(16 * n_blocks))
            self.a.sub(length, Imm(16 * n_blocks))

    # --- FACE on the GCM counter ---------------------------------------------------------
    def face_new_message(self, j0: Reg, first_fill: int = FIRST_FILL,
                         new_tag: Label | None = None) -> None:
        """A new nonce: no window is cached; the run of filled table entries stays (and
        fill batches may store freely) when counter bytes 0, 5 and 10 (nonce bytes, fixed
        for the whole message) are those it was filled under, else it is emptied and only
        this record's first fill batch stores (admission on second sight: face_fill.py),
        or ``first_fill`` batches, continuing at ``new_tag`` when given."""
        a, b, v = self.a, self.b, self.v
        a.mov(self.f("FACE_WINDOW", width=64), Imm(NO_WINDOW))
        same = b.label("same_table")
        v.store(self.f("SCRATCH"), j0)
        lo, hi = b.gp(), b.gp()
        a.mov(hi, self.f("SCRATCH", width=64))
        a.bswap(hi)
        a.mov(lo, self.f("SCRATCH", 8, width=64))
        a.bswap(lo)
        self.k.run.keep_or_empty_table(b, self.ctx, lo, hi, same, first_fill, new_tag)
        b.bind(same)

    def _face_dispatch(self, c: Reg, labels: dict[str, Label]) -> Reg:
        """Branch on the public counter to the batch kind: "full" when the batch would
        leave the window (in15 wraps inside it), "refresh" when the cache holds another
        window, "check" unless the table is complete (there, kernels/face_fill.py sends a
        batch whose entries are all filled back to "fast"), else fall through to "fast".
        Returns the register holding in15 of the batch's first block."""
        a, b = self.a, self.b
        blocks = self.k.batch * self.k.lanes
        with b.phase("face"):
            ctr, idx = self._face_counter(c, labels["full"])
            a.cmp(idx, Imm(256 - blocks))
            a.ja(labels["full"])
            a.shr(ctr, Imm(8))
            a.cmp(ctr, self.f("FACE_WINDOW", width=64))
            a.jne(labels["refresh"])
            self.k.run.jump_unless_complete(b, self.ctx, labels["check"])
        return idx

    def _face_counter(self, c: Reg, secret: Label) -> tuple[Reg, Reg]:
        """Counter c's bytes 12..15 as a number and its in15, for FACE's public branches,
        after a jump to ``secret`` when the counter came from GHASH (COUNTER_SECRET)."""
        ctr, in15 = self.b.gp(), self.b.gp()
        self.jump_if_counter_secret(secret)
        self.v.store_u32(ctr.w32, c)
        self.a.movzx(in15.w32, ctr.w8)
        return ctr, in15

    def _face_refresh(self, c: Reg, bits: int) -> None:
        """Cache the window of counter c: the state after FACE's rounds of its in15 = 0
        block (each lane), and the window's number."""
        a, b, v = self.a, self.b, self.v
        with b.phase("face"):
            base = b.xmm()
            v.and_(base, c, b.const("window_mask", bytes([0]) + bytes([0xFF]) * 15))
            v.shuffle_bytes(base, base, self.hash.bswap_mask())
            nr = ROUNDS[bits]
            self.rounds(Keys(self.ctx, None, 128), [base], 0, self.k.face_rounds, nr)
            if self.k.lanes == 1:
                v.store(self.f("FACE_CACHE"), base)
            else:       # one store the width of the loads that read it: it forwards to them
                wide = b.vec(self.k.spec.width)
                v.broadcast_register(wide, base)
                v.store(self.f("FACE_CACHE", width=wide.width), wide)
            ctr = b.gp()
            v.store_u32(ctr.w32, c)
            a.shr(ctr, Imm(8))
            a.mov(self.f("FACE_WINDOW", width=64), ctr)

    def face_batch(self, kind: str, wide: Reg, idx: Reg | None, bits: int,
                    keys: Keys) -> list[Reg]:
        """The AES part of one batch: "full" computes every round; "fill" too, storing
        each block's table entry after FACE's rounds and marking it filled; "fast" starts
        each block from its table entry and the cache, after FACE's rounds."""
        b, v, a = self.b, self.v, self.a
        nr, f, width = ROUNDS[bits], self.k.face_rounds, wide.width
        lanes = width // 128
        if kind in ("full", "in-byte") or not f:
            blocks = (self._counters_in_byte if kind == "in-byte" else self._counters)(
                wide, self.k.batch)
            self.aes(blocks, bits, keys)
            return blocks
        table = self.k.layout.FACE_TABLE
        in15 = idx
        idx = b.gp()                                     # the first entry's table offset
        with b.phase("face"):
            a.mov(idx, in15)
            a.shl(idx, Imm(4))
        if kind == "fast":
            blocks = []
            with b.phase("face"):
                cache: Reg | Mem = self.f("FACE_CACHE", width=width)
                if v.evex:                               # loaded once, not once a register
                    cache = b.vec(width)
                    v.load(cache, self.f("FACE_CACHE", width=width), aligned=False)
                for j in range(self.k.batch):
                    blk = b.vec(width)
                    entry = Mem(width, base=self.ctx, index=idx, disp=table + 16 * lanes * j)
                    if v.evex:
                        v.xor(blk, cache, entry)
                    else:
                        v.load(blk, entry, aligned=width == 128)
                        v.xor(blk, blk, cache)
                    blocks.append(blk)
            with b.phase("counter"):
                self.k.counter.vector_add(v, wide, wide, self._blocks_step(self.k.batch, width))
            with b.phase("aes"):
                self.rounds(keys, blocks, f + 1, nr, nr)
            return blocks
        blocks = self._counters(wide, self.k.batch)      # fill
        with b.phase("aes"):
            self.rounds(keys, blocks, 0, f, nr)
        with b.phase("face"):
            for j, blk in enumerate(blocks):
                self._store_entry(blk, Mem(width, base=self.ctx, index=idx,
                                           disp=table + 16 * lanes * j))
        with b.phase("aes"):
            self.rounds(keys, blocks, f + 1, nr, nr)
        return blocks

    def _store_entry(self, blk: Reg, entry: Mem) -> None:
        """Store FACE's table entry of a block after FACE's rounds: the block XOR the
        window's cache, at ``entry``; the block is left as it was (with 32 registers the
        entry takes one of its own, with 16 the block is XORed back)."""
        v, width = self.v, blk.width
        cache = self.f("FACE_CACHE", width=width)
        if v.evex:
            t = self.b.vec(width)
            v.xor(t, blk, cache)
            v.store(entry, t, aligned=width == 128)
            return
        v.xor(blk, blk, cache)
        v.store(entry, blk, aligned=width == 128)
        v.xor(blk, blk, cache)

    def face_mark(self, in15: Reg) -> None:
        """Record the entries a fill batch stored (from in15 on) in the run."""
        with self.b.phase("face"):
            self.k.run.record_filled(self.b, self.ctx, in15, self.k.batch * self.k.lanes)

    # --- what skeleton.GcmFrame.batch_loop asks ----------------------------------------
    def hash_batch(self, x: Reg, inp: Reg, out: Reg, decrypt: bool) -> None:
        """The GHASH beside a batch: its own input when decrypting, else the previous
        batch's ciphertext (just before out)."""
        step = 16 * self.k.batch * self.k.lanes
        self.hash_blocks(x, inp if decrypt else out, self.k.batch * self.k.lanes,
                         disp=0 if decrypt else -step, width=self.k.hash_width)

    def plain_batches(self, body, wide: Reg, region: str) -> None:
        """The batches without FACE: on zmm, where byte 15 does not carry inside the
        batch, the counters by byte adds ("in-byte"), else in full."""
        a, b, v = self.a, self.b, self.v
        lanes = self.k.lanes
        if lanes != 4:
            body("full", None)
            return
        carry = b.label(f"carry_{region}".replace("-", "_"))
        in15 = b.gp()
        with b.phase("counter"):
            self.jump_if_counter_secret(carry)         # J0 from GHASH: no branch on byte 15
            v.store_u32(in15.w32, wide.view(128))
            b.emit("and", in15, Imm(0xFF))
            a.cmp(in15, Imm(256 - self.k.batch * lanes))
            a.ja(carry)
        body("in-byte", None)
        with b.region(f"carry-{region}"):    # 1 batch in 256 / its blocks:
            b.bind(carry)                    # not the steady state's
            body("full", None)

    def dispatch_batch(self, wide: Reg, labels: dict[str, Label]) -> Reg:
        return self._face_dispatch(wide.view(128), labels)

    def refresh_window(self, wide: Reg, bits: int) -> None:
        self._face_refresh(wide.view(128), bits)

    def crypt_size(self, bits: int, x: Reg, inp: Reg, length: Reg, out: Reg,
                    decrypt: bool, final: Reg | None) -> None:
        """The data path for one key size. Batches of k.batch registers are stitched: the AES
        rounds of a batch run beside the GHASH of ciphertext already in memory, the
        previous batch's output when encrypting (so a pipeline: the first batch is not
        hashed in its own iteration, the last is hashed after the loop), the batch's own
        input when decrypting (hashed before out, which may be in, is written). Then one
        batch of 4, single blocks, and the partial tail; on zmm the masked tail, which
        ends a one-shot message in one reduction (``final``, _tail_registers), and a
        one-shot seal of a few chunks the record path (_record_chunks) instead."""
        wide = self.b.vec(self.k.spec.width)          # the counters; lane 0 the next one
        with self.keeping(x, wide):                   # live across every batch's rounds
            self._crypt_blocks(bits, x, wide, inp, length, out, decrypt, final)

    def _crypt_blocks(self, bits: int, x: Reg, wide: Reg, inp: Reg, length: Reg, out: Reg,
                      decrypt: bool, final: Reg | None) -> None:
        """crypt_size's work from the loaded counter (lane 0 of ``wide``) on."""
        a, b, v = self.a, self.b, self.v
        lanes = self.k.lanes
        c = wide.view(128)
        v.load(c, self.f("COUNTER"))
        end, small = b.label(f"end{bits}"), b.label(f"small{bits}")
        top, drain = b.label(f"top{bits}"), b.label(f"drain{bits}")
        step = 16 * self.k.batch * lanes              # bytes a batch
        chunked = self.k.record_chunk and not decrypt
        if chunked:                                   # a one-shot record of a few chunks
            batches, chunks = b.label(f"batches{bits}"), b.label(f"chunks{bits}")
            with b.phase("loop"):
                a.test(final, final)
                a.je(batches)
                self.unless_record_path(length, small, batches)
                a.jmp(chunks)
                b.bind(batches)
        with b.phase("loop"):
            a.cmp(length, Imm(step))
            a.jb(small)
        if lanes > 1:                                 # lane l counts from c + l
            with b.phase("counter"):
                v.broadcast_register(wide, c)
                self.k.counter.vector_add(v, wide, wide, self.lane_steps())
        keys = self.loop_keys(bits)
        if not decrypt:                               # the pipeline fills: one batch
            first, first_done = b.label(f"first{bits}"), b.label(f"first_done{bits}")
            self.batch_loop(bits, x, wide, inp, length, out, decrypt, False, first,
                             first_done, f"first-{bits}", keys, once=True)
            b.bind(first_done)
        self.batch_loop(bits, x, wide, inp, length, out, decrypt, True, top, drain,
                         f"steady-{bits}", keys)
        b.bind(drain)

        if self.k.masked_tails:
            if not decrypt:
                # the last batch's hash: beside the tail's AES rounds, as a loop iteration's
                # is, and summed with the tail's products before their one reduction
                alone = b.label(f"drain_alone{bits}")
                with b.region(f"drain-{bits}"):
                    a.test(length, length)
                    a.je(alone)
                self._masked_tail(bits, x, c, inp, length, out, decrypt, final,
                                  Drain(self.k.batch), "d")
                with b.region(f"drain-{bits}"):
                    a.jmp(end)
                    b.bind(alone)
                    self._end_alone(x, out, final)
                    a.jmp(end)
                if chunked:
                    b.bind(chunks)
                    self._record_chunks(bits, x, wide, inp, length, out, final)
                    a.jmp(end)
            b.bind(small)
            self._masked_tail(bits, x, c, inp, length, out, decrypt, final, None)
            b.bind(end)
            v.store(self.f("COUNTER"), c)
            return
        if not decrypt:                               # the last batch's hash
            with b.region(f"drain-{bits}"):
                self.hash_blocks(x, out, self.k.batch * lanes, disp=-step,
                                 width=self.k.hash_width)
        b.bind(small)
        for n_blocks in [n for n in (4, 1) if n < self.k.batch * lanes or n == 1]:
            next_ = b.label(f"next{n_blocks}_{bits}")
            with b.region(f"batch{n_blocks}-{bits}"):
                again = b.label(f"again{n_blocks}_{bits}")
                b.bind(again)
                with b.phase("loop"):
                    a.cmp(length, Imm(16 * n_blocks))
                    a.jb(next_)
                if decrypt:
                    self.hash_blocks(x, inp, n_blocks)
                blocks = self._counters(c, n_blocks)
                self.aes(blocks, bits)
                self.xor_store(blocks, inp, out)
                if not decrypt:
                    self.hash_blocks(x, out, n_blocks)
                self.advance(inp, out, length, n_blocks)
                if n_blocks == 1:
                    with b.phase("loop"):
                        a.jmp(again)
            b.bind(next_)
        with b.region(f"tail-{bits}"), b.phase("tail"):
            a.test(length, length)
            a.je(end)
            (blk,) = self._counters(c, 1)
            self.aes([blk], bits)
            v.store(self.f("KEYSTREAM"), blk)
            short_move(b, length, src=inp, dst=out, xor=self.addr("KEYSTREAM"),
                       record=self.addr("PENDING"), record_input=decrypt)
        b.bind(end)
        v.store(self.f("COUNTER"), c)

    def _record_chunks(self, bits: int, x: Reg, wide: Reg, inp: Reg, length: Reg, out: Reg,
                       final: Reg) -> None:
        """A one-shot encryption of more than a chunk and at most table_powers - 1 blocks
        (the powers of H reach every block and the length block): _record_pipeline. With
        FACE, once a record on public values (_record_face), its blocks start from their
        table entries after FACE's rounds where those are filled or may be filled now,
        else it computes every round."""
        if not self.k.face_rounds:
            self._record_pipeline(bits, x, wide, inp, length, out, final, None, "c")
            return
        a, b = self.a, self.b
        fast, full, done = (b.label(f"record_fast{bits}"), b.label(f"record_full{bits}"),
                            b.label(f"record_done{bits}"))
        entry = self._record_face(bits, wide.view(128), length, full)
        b.bind(fast)
        self._record_pipeline(bits, x, wide, inp, length, out, final, entry, "cf")
        a.jmp(done)
        b.bind(full)
        self._record_pipeline(bits, x, wide, inp, length, out, final, None, "c")
        b.bind(done)

    def _record_pipeline(self, bits: int, x: Reg, wide: Reg, inp: Reg, length: Reg,
                         out: Reg, final: Reg, entry: Reg | None, tag: str) -> None:
        """The record path as a pipeline of chunks of k.record_chunk registers: the AES
        rounds of chunk i beside the products of chunk i - 1 (read back from out), every
        block by its own power of H from _group_powers' pointer, all summed unreduced; the
        last chunk's products beside the masked tail's rounds (1..record_chunk registers),
        one reduction at the end. The batch loop would run a whole batch of AES before its
        first multiply and hash its last batch alone after the rounds: at a 1420-byte
        record most of the time. With ``entry`` (the table offset of the record's first
        block, _record_face) the registers start from FACE's table entries and the cache
        and compute the rounds after FACE's; without it every round, from the counters."""
        a, b, v, k = self.a, self.b, self.v, self.k
        chunk, lanes = k.record_chunk, k.lanes
        c = wide.view(128)
        with b.region(f"chunks-{bits}"):
            with b.phase("ghash_multiply"):
                # register j of the record takes its powers at pw + 64 j; X joins the first
                # block: its product by that block's power starts the sum, with the length
                # block's by H~^1 (both while the first chunk's rounds leave the
                # multiplier idle, not at the end, where it is the bottleneck)
                pw = self._group_powers(length, final)
                xp = self.mul_power_at(x, Mem(128, base=pw), None)
            lp = self._length_products(final)
            self._add_products(xp, lp)
            acc = Products(xp.lo.view(512), xp.hi.view(512), xp.mi.view(512), k.karatsuba)
            with b.phase("counter"):
                v.broadcast_register(wide, c)
                k.counter.vector_add(v, wide, wide, self.lane_steps())
            keys = self.chunk_keys(bits, 0 if entry is None else k.face_rounds + 1)
            blocks = self._record_blocks(wide, chunk, entry)
            self._record_rounds(blocks, bits, keys, entry)
            self.xor_store(blocks, inp, out)
            self.advance(inp, out, length, chunk * lanes)
            top, last = b.label(f"chunk_top{bits}"), b.label(f"chunk_last{bits}")
            if entry is not None:
                with b.phase("face"):
                    a.add(entry, Imm(64 * chunk))
            b.bind(top)
            with b.phase("loop"):
                a.cmp(length, Imm(64 * chunk))
                a.jbe(last)
            blocks = self._record_blocks(wide, chunk, entry)
            self.beside(lambda: self._record_rounds(blocks, bits, keys, entry),
                        lambda: self.products(None, out, chunk, -64 * chunk, 512,
                                              self._powers_from(pw, 0), acc))
            self.xor_store(blocks, inp, out)
            self.advance(inp, out, length, chunk * lanes)
            with b.phase("loop"):
                a.add(pw, Imm(64 * chunk))
                if entry is not None:
                    a.add(entry, Imm(64 * chunk))
                a.jmp(top)
            b.bind(last)
        self._masked_tail(bits, x, c, inp, length, out, False, final,
                          Drain(chunk, acc, length_hashed=True), tag, most=chunk, entry=entry)

    def _record_face(self, bits: int, c: Reg, length: Reg, full: Label) -> Reg:
        """FACE's choice for a record on the record path, made once on public values (the
        counter c, the length, the run): to ``full`` when the counter came from GHASH,
        when the record's registers would pass in15 = 255, when the cache holds another
        window, or when the record's entries are not all in the run and the fill budget
        is spent (kernels/face_fill.py: a record counts as one fill batch, and one that
        overlaps the run lifts the budget); entries not yet in the run are filled first
        (_fill_record). Falls through with a register holding the table offset of the
        record's first block (16 in15). A record of 1420 bytes starts every register from
        its entries with FACE's rounds done: about a tenth less time on Zen 5 than all its
        rounds (no counter byte swaps either)."""
        a, b, k = self.a, self.b, self.k
        blocks, end = b.gp(), b.gp()
        filled = b.label(f"record_filled{bits}")
        with b.region(f"record-face-{bits}"), b.phase("face"):
            ctr, in15 = self._face_counter(c, full)
            a.lea(blocks, Mem(64, base=length, disp=63))
            a.shr(blocks, Imm(6))
            a.shl(blocks, Imm(2))                      # whole registers' blocks
            # the masked tail may compute up to a chunk less one register past them,
            # whose entries it reads: all must lie in the table (a record starts at
            # in15 = 2, so at most 2 + 4 (24 + 7) here)
            a.lea(end, Mem(64, base=in15, index=blocks, disp=4 * (k.record_chunk - 1)))
            a.cmp(end, Imm(256))
            a.ja(full)
            a.shr(ctr, Imm(8))
            a.cmp(ctr, self.f("FACE_WINDOW", width=64))
            a.jne(full)
            k.run.back_if_filled(b, self.ctx, in15, blocks, filled)
            k.run.first_record_sight(b, self.ctx, full)
            k.run.fill_allowed(b, self.ctx, full)
            self._fill_record(bits, c, in15, blocks)
            k.run.record_filled(b, self.ctx, in15, blocks)
            b.bind(filled)
            entry = b.gp()
            a.mov(entry, in15)
            a.shl(entry, Imm(4))
        return entry

    def _fill_record(self, bits: int, c: Reg, in15: Reg, blocks: Reg) -> None:
        """Store the table entries of a record's ``blocks`` counters from c on (whole
        registers; in15 that of c): FACE's rounds of each, XOR the window's cache, a
        register at a time (their chains independent, so they overlap)."""
        a, b, v, k = self.a, self.b, self.v, self.k
        nr = ROUNDS[bits]
        w, at, n = b.vec(512), b.gp(), b.gp()
        v.broadcast_register(w, c)
        k.counter.vector_add(v, w, w, self.lane_steps())
        a.mov(at, in15)
        a.shl(at, Imm(4))
        a.mov(n, blocks)
        a.shr(n, Imm(2))
        top = b.label(f"fill_record{bits}")
        b.bind(top)
        blk = b.vec(512)
        v.shuffle_bytes(blk, w, self.hash.bswap_mask(512))
        self.rounds(Keys(self.ctx, None, 128), [blk], 0, k.face_rounds, nr)
        self._store_entry(blk, Mem(512, base=self.ctx, index=at, disp=k.layout.FACE_TABLE))
        k.counter.vector_add(v, w, w, self._blocks_step(1, 512))
        a.add(at, Imm(64))
        a.sub(n, Imm(1))
        a.jne(top)

    def _record_blocks(self, wide: Reg | None, n: int, entry: Reg | None) -> list[Reg]:
        """n registers for the record path's rounds: counters from ``wide`` (advanced), or
        with ``entry`` the table entries from there on XOR the window's cache (``wide``,
        when given, advanced all the same: its lane 0 is the counter the record leaves)."""
        if entry is None:
            return self._counters(wide, n)
        b, v = self.b, self.v
        blocks = []
        with b.phase("face"):
            for j in range(n):
                blk = b.vec(512)
                v.load(blk, Mem(512, base=self.ctx, index=entry,
                                disp=self.k.layout.FACE_TABLE + 64 * j), aligned=False)
                v.xor(blk, blk, self.f("FACE_CACHE", width=512))
                blocks.append(blk)
        if wide is not None:
            with b.phase("counter"):
                self.k.counter.vector_add(v, wide, wide, self._blocks_step(n, 512))
        return blocks

    def _record_rounds(self, blocks: list[Reg], bits: int, keys: Keys | None,
                       entry: Reg | None) -> None:
        """The rounds of _record_blocks' registers: all, or those after FACE's."""
        nr = ROUNDS[bits]
        first = 0 if entry is None else self.k.face_rounds + 1
        with self.b.phase("aes"):
            self.rounds(keys or Keys(self.ctx, None, 128), blocks, first, nr, nr)

    def face_free_limit(self) -> int:
        """The longest one-shot seal whose data path reads no FACE table: a chunk, where the
        record path (_record_chunks, whose records FACE serves) takes longer ones and the
        masked tail, every round computed, shorter ones; else one byte less than a batch
        (the tails compute every round)."""
        k = self.k
        if k.record_chunk:
            return 64 * k.record_chunk
        return 16 * k.batch * k.lanes - 1

    def unless_record_path(self, length: Reg, shorter: Label, longer: Label) -> None:
        """Fall through when a one-shot seal of ``length`` bytes takes the record path
        (_record_chunks: more than a chunk, every block within the powers of H kept); else
        to ``shorter`` or ``longer``. The length is public."""
        a = self.a
        a.cmp(length, Imm(64 * self.k.record_chunk))
        a.jbe(shorter)
        a.cmp(length, Imm(16 * (self.k.table_powers - 1)))
        a.ja(longer)

    def chunk_keys(self, bits: int, first: int = 0) -> Keys:
        """The record path's round keys from round ``first`` on: the last rounds' in
        registers, as many as there is room for beside a chunk (the others broadcast where
        used)."""
        nr = ROUNDS[bits]
        room = 32 - self.k.record_chunk - CHUNK_LOOP_REGISTERS
        regs: list[Reg | None] = [None] * (nr + 1)
        for r in range(max(first, nr + 1 - room), nr + 1):
            regs[r] = self.b.vec(512)
            self.v.broadcast_lane(regs[r], Mem(128, base=self.ctx,
                                               disp=ctx_layout.ROUND_KEYS + 16 * r))
        return Keys(self.ctx, regs, 128)

    def _group_powers(self, length: Reg | None, final: Reg) -> Reg:
        """The address in H_POWERS of H~^(t + F), the power of the last block the message's
        end hashes: F = final (0 or 1), the length block's own; t the tail's blocks hashed
        now, ceil(length / 16) when final (a partial last block too), else
        floor(length / 16) (a partial block waits in PENDING); none with no tail (length
        None). Lane l of register j of the tail takes its power at this address + 64 j,
        of the drained registers' j (the last batch's, or the record path's last chunk's)
        at - 64 drain.regs + 64 j."""
        a, b, k = self.a, self.b, self.k
        n = b.gp()
        if length is None:
            a.mov(n, final)
            a.shl(n, Imm(4))
        else:
            t = b.gp()
            a.lea(n, Mem(64, base=length, disp=31))  # 16 (ceil(length / 16) + 1)
            b.emit("and", n, Imm(-16))
            a.mov(t, length)
            b.emit("and", t, Imm(-16))
            a.test(final, final)
            b.emit("cmove", n, t)
        a.neg(n)
        pw = b.gp()
        a.lea(pw, Mem(64, base=self.ctx, index=n,
                      disp=k.layout.offset("H_POWERS") + 16 * k.table_powers))
        return pw

    def length_block(self, aad_len: Reg | None = None, msg_len: Reg | None = None,
                     final: Reg | None = None) -> Reg:
        """[len(A)]64 || [len(C)]64 in hash order (SP 800-38D 7.1 step 5), from the byte
        counts given, else from AAD_LEN and MSG_LEN; all zero when ``final`` holds 0."""
        a, b, v = self.a, self.b, self.v
        aad_bits, msg_bits = b.gp(), b.gp()
        a.mov(aad_bits, aad_len if aad_len is not None else self.f("AAD_LEN", width=64))
        a.shl(aad_bits, Imm(3))
        a.mov(msg_bits, msg_len if msg_len is not None else self.f("MSG_LEN", width=64))
        a.shl(msg_bits, Imm(3))
        if final is not None:
            zero = b.gp()
            a.xor(zero, zero)
            a.test(final, final)
            b.emit("cmove", aad_bits, zero)
            b.emit("cmove", msg_bits, zero)
        lens, t = b.xmm(), b.xmm()
        v.from_gp64(lens, msg_bits)                 # byte-reversed [len(A)]64 || [len(C)]64
        v.from_gp64(t, aad_bits)
        v.unpack_low_qwords(lens, lens, t)
        return lens

    def _drain_products(self, x: Reg, out: Reg, pw: Reg, drain: Drain) -> Products:
        """The unreduced products of the drain.regs registers before out (the encrypt
        loop's last batch, or the record path's last chunk), their powers from
        _group_powers' pw, added to drain.acc; without drain.acc, X joins the first block
        of a new sum."""
        return self.products(None if drain.acc else x, out, drain.regs, -64 * drain.regs,
                             512, self._powers_from(pw, -64 * drain.regs), drain.acc)

    def _powers_from(self, pw: Reg, disp: int):
        """products' power_of for registers whose first takes its powers at pw + disp
        (register j 64 j further; H_KARATSUBA's keys as far into their field)."""
        k = self.k
        apart = k.layout.offset("H_KARATSUBA") - k.layout.offset("H_POWERS") \
            if k.karatsuba else 0

        def power_of(j: int, field: str) -> Mem:
            return Mem(512, base=pw, disp=disp + 64 * j
                       + (apart if field == "H_KARATSUBA" else 0))
        return power_of

    def _length_products(self, final: Reg) -> Products:
        """The length block times H~^1, unreduced, in xmm (zero above: a wide view is the
        product in lane 0); zero unless ``final``."""
        with self.b.phase("ghash_multiply"):
            return self.mul_power(self.length_block(final=final), 1, None)

    def _add_products(self, acc: Products, part: Products) -> None:
        """acc += part, where part may be narrower (its upper lanes are zero)."""
        with self.b.phase("ghash_multiply"):
            for dst, src in zip((acc.lo, acc.hi, acc.mi), (part.lo, part.hi, part.mi)):
                self.v.xor(dst, dst, src.view(dst.width))

    def _end_alone(self, x: Reg, out: Reg, final: Reg) -> None:
        """The encrypt loop's last batch when no tail follows: X = its hash, one reduction;
        when ``final``, by H~^(n+1) .. H~^2 with the length block by H~^1 in the same sum."""
        b, v, h = self.b, self.v, self.hash
        with b.phase("ghash_multiply"):
            pw = self._group_powers(None, final)
        lp = self._length_products(final)
        acc = self._drain_products(x, out, pw, Drain(self.k.batch))
        self._add_products(acc, lp)
        with b.phase("reduction"):
            v.copy(x, h.reduce(acc))

    def _masked_tail(self, bits: int, x: Reg, c: Reg, inp: Reg, length: Reg, out: Reg,
                     decrypt: bool, final: Reg, drain: Drain | None, tag: str = "",
                     most: int | None = None, entry: Reg | None = None) -> None:
        """The last ``length`` bytes (less than a batch) on zmm, with no loop: one AES batch
        of registers of counters, the fewest of tail_sizes(k.batch) that hold them; each
        register's 64 bytes are loaded, XORed and stored whole, or, in the
        register the message ends in, through a byte mask (masked loads and stores touch
        nothing past the buffers). With ``drain`` (after the encrypt loop or the record
        path's chunks, length > 0) the registers before out are hashed beside the tail's
        AES rounds and summed with the tail's products; one reduction ends it all
        (_tail_registers). With no data and ``final``, X = (X ^ L) H~. ``tag`` keeps this
        copy's labels apart; ``most``: the registers length may need (default a batch);
        ``entry``: the record path's FACE table offset of the first block
        (_record_blocks)."""
        a, b, k, v = self.a, self.b, self.k, self.v
        end = b.label(f"tail_end{tag}{bits}")
        empty = b.label(f"tail_empty{tag}{bits}")
        if drain is None:
            with b.region(f"tail-{bits}"), b.phase("tail"):
                a.test(length, length)
                a.je(empty)
        # a bit-sliced group costs the same however few of its registers are used: one size
        sizes = [k.batch] if k.engine.grouped_batches else tail_sizes(k.batch)
        if most is not None:
            sizes = [n for n in sizes if n < most] + [most]
        for regs in sizes[:-1]:                     # the largest falls through
            bigger = b.label(f"tail_over{regs}{tag}_{bits}")
            with b.region(f"tail-{bits}"), b.phase("tail"):
                a.cmp(length, Imm(64 * regs))
                a.ja(bigger)
            self._tail_registers(bits, x, c, inp, length, out, decrypt, regs,
                                 f"{tag}r{regs}", final, drain, entry)
            with b.region(f"tail-{bits}"), b.phase("tail"):
                a.jmp(end)
            b.bind(bigger)
        self._tail_registers(bits, x, c, inp, length, out, decrypt, sizes[-1], tag, final,
                             drain, entry)
        if drain is None:
            with b.region(f"tail-{bits}"), b.phase("tail"):
                a.jmp(end)
                b.bind(empty)
                a.test(final, final)
                a.je(end)
                v.xor(x, x, self.length_block())
                v.copy(x, self.hash.dot(x, self.power(1)))
        b.bind(end)

    def _tail_registers(self, bits: int, x: Reg, c: Reg, inp: Reg, length: Reg, out: Reg,
                        decrypt: bool, regs: int, tag: str, final: Reg,
                        drain: Drain | None, entry: Reg | None = None) -> None:
        """_masked_tail's work with ``regs`` registers (0 < length <= 64 regs); label
        names take ``tag``. The whole blocks are hashed with one reduction, lane l of
        register j by H~^(t + F - 4j - l) from _group_powers' pointer (set by the public
        length): lanes past the last block are zero and meet the zero slots after H~^1.
        Unless ``final``, a partial last block leaves its keystream in KEYSTREAM and its
        ciphertext in PENDING, as a streaming call expects; when final it is hashed here,
        zero-padded, and the length block joins the sum by H~^1 (F = 1), so the message
        ends in this one reduction."""
        a, b, v, h, k = self.a, self.b, self.v, self.hash, self.k
        width = 512
        reduce_, unreduced = (b.label(f"tail_reduce{tag}{bits}"),
                              b.label(f"tail_unreduced{tag}{bits}"))
        with b.region(f"tail-{bits}"):
            wide = None
            if entry is None:
                wide = b.vec(width)
                with b.phase("counter"):
                    v.broadcast_register(wide, c)
                    self.k.counter.vector_add(v, wide, wide, self.lane_steps())
            blocks = self._record_blocks(wide, regs, entry)
            with b.phase("counter"):                   # c += ceil(length / 16)
                n, t = b.gp(), b.xmm()
                a.lea(n, Mem(64, base=length, disp=15))
                a.shr(n, Imm(4))
                v.from_gp64(t, n)
                self.k.counter.vector_add(v, c, c, t)
            with b.phase("ghash_multiply"):
                pw = self._group_powers(length, final)
            drained = drain is not None
            lp = None if drained and drain.length_hashed else self._length_products(final)
            if drained:
                _, acc = self.beside(lambda: self._record_rounds(blocks, bits, None, entry),
                                     lambda: self._drain_products(x, out, pw, drain))
                if lp is not None:
                    self._add_products(acc, lp)
            else:
                self._record_rounds(blocks, bits, None, entry)
                # the length block's products, zero above lane 0, start the sum
                acc = Products(lp.lo.view(width), lp.hi.view(width), lp.mi.view(width),
                               k.karatsuba)
            partials = [b.label(f"tail_part{tag}{j}_{bits}") for j in range(regs)]

            def hash_register(y: Reg, j: int) -> None:
                with b.phase("ghash_multiply"):
                    v.shuffle_bytes(y, y, h.bswap_mask(width))
                    if j == 0 and not drained:
                        v.xor(y, y, x.view(width))     # X joins the first block
                    self.mul_power_at(y, Mem(width, base=pw, disp=64 * j), acc)

            for j in range(regs - 1):               # the registers the message fills
                with b.phase("loop"):
                    a.cmp(length, Imm(64 * (j + 1)))
                    a.jb(partials[j])
                d = b.vec(width)
                with b.phase("load_store"):
                    v.load(d, Mem(width, base=inp, disp=64 * j), aligned=False)
                    v.xor(blocks[j], blocks[j], d)
                    v.store(Mem(width, base=out, disp=64 * j), blocks[j], aligned=False)
                hash_register(d if decrypt else blocks[j], j)
            # the register the message ends in: the last falls through from the loop above
            for j in [regs - 1] + list(range(regs - 1)):
                b.bind(partials[j])
                rest, whole = b.gp(), b.gp()
                with b.phase("tail"):
                    a.mov(rest, length)
                    if j:
                        a.sub(rest, Imm(64 * j))
                        a.je(reduce_)                  # ended with register j - 1
                    kb, kw = kmask(1), kmask(2)
                    v.first_bytes_mask(kb, rest)
                    a.mov(whole, rest)                 # the bytes hashed now: whole blocks,
                    b.emit("and", whole, Imm(-16))
                    a.test(final, final)
                    b.emit("cmovne", whole, rest)      # or all when final
                    v.first_bytes_mask(kw, whole)
                    d, e = b.vec(width), b.vec(width)
                    v.load_masked(d, Mem(width, base=inp, disp=64 * j), kb)
                    v.xor(e, blocks[j], d)
                    v.store_masked(Mem(width, base=out, disp=64 * j), e, kb)
                    if not decrypt:                    # the ciphertext, zero past the end
                        v.keep_masked(e, e, kb)
                    hashed = d if decrypt else e
                    y = b.vec(width)
                    v.keep_masked(y, hashed, kw)
                    pending = b.label(f"tail_pending{tag}{j}_{bits}")
                    a.test(whole, whole)
                    a.je(pending)
                hash_register(y, j)
                with b.phase("tail"):
                    b.bind(pending)
                    done = b.label(f"tail_whole{tag}{j}_{bits}")
                    b.emit("test", rest, Imm(15))
                    a.je(done)                         # no partial block
                    a.test(final, final)
                    a.jne(done)                        # hashed above: nothing waits
                    v.store(self.f("TAIL", width=width), blocks[j])
                    v.store(self.f("TAIL", 64, width=width), hashed)
                    t = b.xmm()
                    v.load(t, Mem(128, base=self.ctx, index=whole,
                                  disp=k.layout.offset("TAIL")), aligned=True)
                    v.store(self.f("KEYSTREAM"), t)
                    v.load(t, Mem(128, base=self.ctx, index=whole,
                                  disp=k.layout.offset("TAIL") + 64), aligned=True)
                    v.store(self.f("PENDING"), t)
                    b.bind(done)
                    if j == 0 and not drained:         # nothing hashed below 16 bytes,
                        a.cmp(length, Imm(16))         # unless final
                        a.jae(reduce_)
                        a.test(final, final)
                        a.je(unreduced)
                    a.jmp(reduce_)
            b.bind(reduce_)
            with b.phase("reduction"):
                v.copy(x, h.reduce(acc))
            b.bind(unreduced)

    # --- nonce and tag -----------------------------------------------------------------
    def reset_hash(self) -> None:
        """A new message's hash state beside HASH (the byte-sliced streams)."""
        if self.streams is not None:
            self.streams.reset("STREAMS", "HASHED")

    def keep_hash_key(self, h: Reg) -> None:
        """What the hash engine keeps of H = E_K(0^128) (h, block order): the powers of H
        in the carry-less engine's form, the byte-sliced engine's matrices, the tables."""
        k, v = self.k, self.v
        if self.streams is not None:
            self.streams.setup(h)
        elif self.lookup is not None:
            self.lookup.setup(h)
        else:
            ht = self.hash.hash_key(h)
            p = ht
            for i in range(1, k.table_powers + 1):
                if i > 1:
                    p = self.hash.dot(p, ht)
                v.store(self.power(i), p)
                if k.karatsuba:
                    v.store(self.power(i, field="H_KARATSUBA"), self.hash.karatsuba_key(p))

    def j0_from_nonce12(self, nonce: Reg, j0: Reg) -> None:
        counter_block(self, nonce_block(self, nonce), 1, j0)

    def j0_from_hash(self, x: Reg, bits_len: Reg, j0: Reg) -> None:
        """J0 = the hash X of a long nonce's blocks, with the block 0^64 || [len]64 (the
        nonce's length in bits) hashed last, in block order."""
        v = self.v
        lens = self.b.xmm()
        v.from_gp64(lens, bits_len)
        if self.streams is not None:
            v.shuffle_bytes(lens, lens, self.hash.bswap_mask())
            self.streams.absorb_block("STREAMS", "HASHED", lens)
            v.copy(j0, self.streams.value("STREAMS", "HASHED"))
            self.streams.reset("STREAMS", "HASHED")
        else:
            v.xor(x, x, lens)
            h = self.times_h(x)
            v.shuffle_bytes(j0, h, self.hash.bswap_mask())

    def takes_short_path(self, *args) -> None:
        short.takes_short_path(self, *args)

    def short_record(self, *args, **kw) -> Reg:
        return short.short_record(self, *args, **kw)

    def counter_after(self, j0: Reg) -> Reg:
        """J0 + 1 as COUNTER keeps it (byte-reversed: inc32 is a vector add)."""
        c = self.b.xmm()
        self.v.shuffle_bytes(c, j0, self.hash.bswap_mask())
        self.k.counter.vector_add(self.v, c, c, self.b.const("one", ONE))
        return c

    def face_begin(self, j0: Reg, c: Reg, first_fill: int = FIRST_FILL,
                   new_tag: Label | None = None) -> None:
        """FACE's step of a new message (skeleton.begin_message): the table's nonce bytes
        checked, the first counter's window cached beside E_K(J0) (in j0). A new prefix
        takes ``first_fill`` as its budget and, with ``new_tag``, goes there instead."""
        b = self.b
        self.face_new_message(j0, first_fill, new_tag)

        def window_and_mask(bits: int) -> None:
            # the first counter's window cached now, beside E_K(J0): a new nonce's
            # first batch finds its window (no refresh on the way into the data)
            self._face_refresh(c, bits)
            self.aes([j0], bits)
        with self.keeping(c, j0):
            self.per_key_size("aes_j0", window_and_mask, b.label("aes_j0_done"))

    def face_begin_record(self, j0: Reg, c: Reg) -> None:
        """face_begin for a one-shot record of the record path (_record_chunks): under a
        nonce prefix the table does not hold, the new prefix is taken with an empty run
        and a budget of RECORD_SEEN, and no window is cached, so the record runs every
        round (_record_face finds no window) and the next record under the prefix fills
        what it needs: under fresh random nonces, where every record is such a first
        sight, a record pays for the prefix check alone (not the window's rounds)."""
        b = self.b
        new_tag, begun = b.label("record_new_tag"), b.label("record_face_begun")
        self.face_begin(j0, c, RECORD_SEEN, new_tag)
        self.isa.jump(b, begun)
        b.bind(new_tag)                       # FACE_WINDOW: NO_WINDOW (face_new_message)
        self.aes_any_size(j0)
        b.bind(begun)

    def start_record(self, nonce: Reg, aad: Reg, aad_len: Reg, length: Reg | None) -> None:
        """start() and absorb() of a one-shot record under a 12-byte nonce with at most 16
        bytes of AAD (takes_short_path), from registers: J0 = nonce || 1 built in place,
        the AAD's one block hashed as X = A H (an empty AAD gives X = 0, as GHASH of no
        block does), the AAD closed. No store is read back before the data path, and no
        partial AAD block waits in PENDING for it. A seal (``length`` given) whose data
        path runs no FACE batch (face_free_limit) skips FACE's step too."""
        a, b, v = self.a, self.b, self.v
        with b.phase("counter"):
            j0 = counter_block(self, nonce_block(self, nonce), 1)
        with b.phase("ghash_multiply"):
            blk = b.xmm()
            load_short(self, blk, aad, aad_len, "PENDING", largest=16)
            v.shuffle_bytes(blk, blk, self.hash.bswap_mask())
            v.store(self.f("HASH"), self.hash.dot(blk, self.power(1)))
        v.store(self.f("PENDING"), self.zero_vec())
        a.mov(self.f("AAD_LEN", width=64), aad_len)
        a.mov(self.f("MSG_LEN", width=64), Imm(0))
        a.mov(self.f("IN_DATA", width=64), Imm(1))
        if not (self.k.face_rounds and length is not None):
            a.mov(self.f("COUNTER_SECRET", width=64), Imm(0))  # J0 = nonce || 1: public
            self.begin_message(j0)
            return
        faced, begun = b.label("record_faced"), b.label("record_begun")
        with b.phase("loop"):
            a.cmp(length, Imm(self.face_free_limit()))
            a.ja(faced)
        # no FACE step: the table may be another nonce prefix's, so the flag that sends
        # every batch the full way is set, as for a counter from GHASH (a data call this
        # message should not see, as encrypt after seal, finds it too)
        a.mov(self.f("COUNTER_SECRET", width=64), Imm(1))
        self.begin_message(j0, face="none")
        a.jmp(begun)
        b.bind(faced)
        a.mov(self.f("COUNTER_SECRET", width=64), Imm(0))      # J0 = nonce || 1: public
        if self.k.record_chunk:               # the record path's records: their own step
            batches = b.label("record_batches")
            with b.phase("loop"):
                a.cmp(length, Imm(16 * (self.k.table_powers - 1)))
                a.ja(batches)
            self.begin_message(j0, face="record")
            a.jmp(begun)
            b.bind(batches)
        self.begin_message(j0)
        b.bind(begun)

    def finish(self) -> Reg:
        """The full 16-byte tag (SP 800-38D 7.1 steps 5-6) in a register. Leaves the
        context as it was, so asking twice gives the same tag."""
        b, v = self.b, self.v
        self.begin_data()
        if self.streams is not None:
            return self._finish_streams()
        x = b.xmm()
        v.load(x, self.f("HASH"))
        self.flush_pending(x, "MSG_LEN", clear=False)
        v.xor(x, x, self.length_block())
        s = self.times_h(x)
        tag = b.xmm()
        v.shuffle_bytes(tag, s, self.hash.bswap_mask())
        v.xor(tag, tag, self.f("TAG_MASK"))
        return tag

    def _finish_streams(self) -> Reg:
        """finish with the byte-sliced hash: on a copy of the streams (WORK), the pending
        block and the length block hashed, then the streams summed (ByteSlicedHash.value)."""
        a, b, v, st = self.a, self.b, self.v, self.streams
        st.copy_state("STREAMS", "HASHED", "WORK", "WORK_HASHED")
        whole = b.label("whole_message")
        t = b.gp()
        a.mov(t, self.f("MSG_LEN", width=64))
        a.test(t, Imm(15))
        a.je(whole)
        y = b.xmm()
        v.load(y, self.f("PENDING"))
        st.absorb_block("WORK", "WORK_HASHED", y)
        b.bind(whole)
        lens = self.length_block()
        v.shuffle_bytes(lens, lens, self.hash.bswap_mask())      # block order
        st.absorb_block("WORK", "WORK_HASHED", lens)
        tag = st.value("WORK", "WORK_HASHED")
        v.xor(tag, tag, self.f("TAG_MASK"))
        return tag

    def one_shot_tag(self) -> Reg | None:
        """After call_data(final=True): the full tag from HASH, which the zmm data path
        left as the whole GHASH; None elsewhere (finish computes it)."""
        if not self.k.masked_tails:
            return None
        tag = self.b.xmm()
        self.hash.load_block(tag, self.f("HASH"), aligned=True)
        self.v.xor(tag, tag, self.f("TAG_MASK"))
        return tag

    def write_tag(self, tag_out: Reg, tag_len: Reg, tag: Reg | None = None) -> None:
        """The first tag_len bytes of the tag (``tag``, else the stream's) to tag_out: with
        AVX-512 one byte-masked store; else a whole store for 16 bytes, or through SCRATCH
        in pieces (no store of the tag is read back on the common path)."""
        a, b, v = self.a, self.b, self.v
        tag = self.finish() if tag is None else tag
        if v.evex:
            k = kmask(1)
            v.first_bytes_mask(k, tag_len)
            v.store_masked(Mem(128, base=tag_out), tag, k)
            return
        pieces, done = b.label("tag_pieces"), b.label("tag_written")
        a.cmp(tag_len, Imm(16))
        a.jne(pieces)
        v.store(Mem(128, base=tag_out), tag, aligned=False)
        a.jmp(done)
        b.bind(pieces)
        v.store(self.f("SCRATCH"), tag)
        short_move(b, tag_len, src=self.addr("SCRATCH"), dst=tag_out, largest=16)
        b.bind(done)




def build_kernel(spec: KernelSpec) -> BuiltKernel:
    """The GCM skeleton on x86-64 (modes/: the mode descriptor names it)."""
    k = GcmKernel(spec)
    functions = build_all(k)
    abi = {entry: k.data_conv if fn.symbol in k.data_symbols else k.conv
           for entry, fn in functions.items()}
    return BuiltKernel(functions, k.layout.size, tuple(k.layout.table()),
                       public_fields=k.layout.public_names(), abi=abi,
                       interleave=k.batch if k.batch != spec.interleave else None,
                       record_chunk=k.record_chunk,
                       timing_warning=NOT_CONSTANT_TIME if k.table_hash else None)
