"""AES-CTR kernels for every x86 vector method: the batch (counters, FACE starts and fills,
load/XOR/store) that the shared loops run (modes/ctr/batch_loop.py for the ladder,
kernels/grouped_ctr.py for aligned groups), under the CTR skeleton's entry points
(modes/ctr/skeleton.py: init, set_iv, wipe, xor_stream's frame).

One body serves xmm, ymm and zmm: a vector register holds ``lanes`` = width/128 blocks and a
batch is ``interleave`` registers. The round function comes from a RoundEngine (AES-NI/VAES
or GFNI); everything else here is shared.

Counter: 128-bit big-endian, +1 a block (OpenSSL EVP_aes_*_ctr), kept as two native 64-bit
halves so a step is add/adc. A batch runs only while byte 15 of the counter (in15) does not
wrap inside it; then block j of the batch is the batch's first block plus j in byte 15 (one
byte add per register, lanes included), and FACE's window (the 256 blocks sharing bytes
0..14) is the same for the whole batch. Near a window's end a one-register batch, then single
blocks, finish the window; the last partial block is a single block kept in the context.

FACE (Park & Lee, TCHES, section 4 and appendix A.2), as these kernels compute it:
  s_r(ctr)  = state after round r;  base = ctr with in15 = 0
  rd1 cache  C1 = s_1(base),   rd1+ table T1[v] = s_1(base|v) ^ C1   (column 0 only)
  rd2 cache  C2 = s_2(base),   rd2+ table T2[v] = s_2(base|v) ^ C2   (16 bytes)
so s_1 = C1 ^ T1[in15] and s_2 = C2 ^ T2[in15]. The tables depend only on the key and counter
bytes 0, 5, 10 (the bytes that reach column 0 after ShiftRows); the caches on bytes 0..14.
Round 0 (rd0) is a single XOR here and is folded into the caches: with `r1` no block computes
rounds 0-1, with `r2` no block computes rounds 0-2. T1 entries are 4 bytes on xmm and 16 bytes
on ymm/zmm, where one load then fetches the entries of consecutive blocks, one a lane.
Tables are filled while encrypting: a batch whose entries are not all filled is computed in
full and each block stores its own entry (s ^ C); a batch whose entries are all filled starts
from them (the run of filled entries: kernels/face_fill.py). No set-up pass computes entries
a message does not use.
"""
from __future__ import annotations

from ..arch.x86_64.scalar import X86Scalar
from ..arch.x86_64.zeroing import zero_context
from ..dsl.builder import KernelBuilder
from ..dsl.operands import Imm, Label, Reg
from ..isa.table import load_table
from ..modes import BuiltKernel
from ..modes.ctr.batch_loop import Stream
from ..modes.ctr.batch_loop import stream_body as ladder_stream_body
from ..modes.ctr.skeleton import build_entries, keystream_tail
from ..passes.abi import calling_convention
from . import ctx_layout as L
from .engine_choice import engine_for
from .engines import RoundEngine
from .face_fill import FIRST_FILL, FaceRun
from .spec import FACE_ROUNDS, ROUNDS, KernelSpec
from .ctr_stream import counter_in_every_lane, mem, open_stream, spread_blocks
from .grouped_ctr import stream_body as grouped_stream_body
from .vector_ops import VectorOps

BSWAP128 = bytes(range(15, -1, -1))


class Kernel:
    """Shared state while one kernel's four functions are built: what the CTR skeleton
    (modes/ctr/skeleton.py) asks of a kernel, for the vector methods on x86-64."""

    def __init__(self, spec: KernelSpec) -> None:
        self.spec = spec
        self.isa = X86Scalar(calling_convention("x86_64", spec.abi))
        self.table = load_table("x86_64")
        self.engine: RoundEngine = engine_for(spec)
        if spec.face == "r1" and self.r1_entry_bytes() == 4:
            # the rd1+ table keeps column 0 of round 1's output: read by position
            self.engine = engine_for(spec, byte_order_through=1)
        self.layout = L.layout_for(spec.face, self.r1_entry_bytes(),
                                   self.engine.context_fields())
        self.r1_entry = self.layout.r1_entry
        self.run = FaceRun(self.isa)

    def r1_entry_bytes(self) -> int:
        """Bytes a block of the FACE rd1+ table: column 0 only (4) on xmm, 16 where one
        wide load must fetch the entries of a register's lanes, and 16 for aligned groups,
        whose entries are whole groups in slice form (grouped_ctr.py)."""
        return 4 if self.spec.width == 128 and not self.engine.grouped_batches else 16

    def builder(self, entry: str, doc: str) -> KernelBuilder:
        b = KernelBuilder(self.table, self.spec.symbol(entry), doc=doc)
        self.vector_ops(b)             # an EVEX kernel's builder prefers the EVEX rows
        return b

    def vector_ops(self, b: KernelBuilder) -> VectorOps:
        return VectorOps(b, self.spec.encoding)

    def zero_context(self, b: KernelBuilder, ctx: Reg) -> None:
        """Store zeros over all ctx_size bytes, with the encoding's widest store."""
        width = {"sse": 128, "avx": 256, "evex": 512}[self.spec.encoding]
        zero_context(b, self.vector_ops(b), ctx, self.layout.size, width)

    def expand_key(self, b: KernelBuilder, ctx: Reg, key: Reg, bits: int) -> None:
        self.engine.expand_key(self, b, ctx, key, bits)

    def stream_body(self, b: KernelBuilder, bits: int, ctx: Reg, out: Reg, inp: Reg,
                    length: Reg, done: Label) -> None:
        """The batch strategy is the engine's: aligned groups (kernels/grouped_ctr.py) or
        the ladder (modes/ctr/batch_loop.py)."""
        if self.engine.grouped_batches:
            grouped_stream_body(self, b, self.vector_ops(b), bits, ctx, out, inp, length, done)
        else:
            ladder_stream_body(self, b, bits, ctx, out, inp, length, done)

    # --- what the ladder loop asks (modes/ctr/batch_loop.py) -----------------------------
    aligned_batches = True       # in15 a multiple of the batch: round 0 is one XOR a register

    @property
    def lanes(self) -> int:
        return self.spec.lanes

    @property
    def smallest_batch(self) -> int:
        """On xmm a one-register batch is a single block, so the ladder stops at two."""
        return 1 if self.spec.lanes > 1 else 2

    def open_stream(self, b: KernelBuilder, bits: int, ctx: Reg, out: Reg, inp: Reg,
                    length: Reg) -> Stream:
        return open_stream(self, b, self.vector_ops(b), bits, ctx, out, inp, length)

    def batch(self, b: KernelBuilder, bits: int, s: Stream, m: int, mode: str,
              then: Label | None = None, single: bool = False) -> None:
        width = 128 if single else self.spec.width
        _batch(self, b, self.vector_ops(b), bits, s, m, width, mode, then)

    def refresh(self, b: KernelBuilder, s: Stream, bits: int, window_ok: Label) -> None:
        _refresh(self, b, self.vector_ops(b), s, bits, window_ok)

    def scrub(self, b: KernelBuilder, entry: str) -> None:
        b.function.scrub_vectors = True     # passes/frame.py clears the vector registers

    def counter_block(self, b: KernelBuilder, v: VectorOps, lo: Reg, hi: Reg) -> Reg:
        """xmm holding the 16 counter bytes (big-endian) of the number hi:lo."""
        x, t = b.xmm(), b.xmm()
        v.from_gp64(x, lo)
        v.from_gp64(t, hi)
        v.unpack_low_qwords(x, x, t)
        v.shuffle_bytes(x, x, b.const("bswap128", BSWAP128))
        return x


def _batch(k: Kernel, b: KernelBuilder, v: VectorOps, bits: int, s: Stream, m: int,
           width: int, mode: str, then: Label | None = None) -> None:
    """m registers of width bits (m * lanes blocks) whose in15 run idx.. without wrapping.

    mode "full": every round computed; "fast": rounds up to the FACE level come from the
    cache and table; "fill": every round computed and the table entries stored; "aligned":
    like full, for a batch whose first in15 is a multiple of its block count, so adding
    j < blocks to in15 never carries and equals XOR: block j XOR round key 0 is then
    (counter ^ key0) ^ j, one XOR a register instead of an add and an XOR.
    A single xmm block (m == 1, width 128) may also be the partial last one (len < 16).
    """
    a, nr, face = b.asm, ROUNDS[bits], k.spec.face
    lanes = width // 128
    blocks_n = m * lanes
    skip = FACE_ROUNDS[face]
    blocks = [b.vec(width) for _ in range(m)]
    r1_entry = 4 if width == 128 and k.r1_entry == 4 else 16
    table_ptr = cache = None
    if mode in ("fast", "fill"):
        with b.phase("counter"):
            table_ptr = b.gp()
            if face == "r1" and k.r1_entry == 4:
                a.lea(table_ptr, mem(8, s.ctx, k.layout.table_r1, index=s.idx, scale=4))
            elif face == "r1":
                a.lea(table_ptr, mem(8, s.ctx, k.layout.table_r1, index=_scaled(b, s.idx, 4)))
            else:
                a.lea(table_ptr, mem(8, s.ctx, k.layout.table_r2, index=_scaled(b, s.idx, 4)))
        cache = b.vec(width)
        with b.phase("rounds_0_2"):
            v.broadcast_lane(cache, mem(128, s.ctx, L.CACHE_R1 if face == "r1"
                                       else L.CACHE_R2))
    if mode == "aligned":
        with b.phase("counter"):
            base = counter_in_every_lane(k, b, v, s.lo, s.hi, width)
        with b.phase("rounds_0_2"):
            keyed = b.vec(width)
            v.xor(keyed, base, s.keys.get(b, v, 0, width))     # round 0 once a batch
            spread_blocks(b, v, blocks, keyed, v.xor)
            blocks = k.engine.rounds(k, b, s.keys, blocks, 1, 2, nr) or blocks
        done = 2
    elif mode == "fast":
        with b.phase("rounds_0_2"):
            for i, x in enumerate(blocks):
                step = lanes * (r1_entry if face == "r1" else 16)
                if face == "r1" and r1_entry == 4:
                    v.load_u32(x, mem(32, table_ptr, 4 * i))
                    v.xor(x, x, cache)
                else:
                    # entries are 16-byte aligned (the table is 64-aligned): legacy SSE
                    # may XOR them from memory directly
                    v.xor(x, cache, mem(width, table_ptr, step * i))
            done = skip
            if face == "r1":
                blocks = k.engine.rounds(k, b, s.keys, blocks, 2, 2, nr) or blocks
                done = 2
    else:
        with b.phase("counter"):
            base = counter_in_every_lane(k, b, v, s.lo, s.hi, width)
            spread_blocks(b, v, blocks, base, v.add_bytes)
        with b.phase("rounds_0_2"):
            if mode == "full":
                blocks = k.engine.rounds(k, b, s.keys, blocks, 0, 2, nr) or blocks
                done = 2
            else:
                blocks = k.engine.rounds(k, b, s.keys, blocks, 0, skip, nr) or blocks
                done = skip
                with b.phase("table_fill"):
                    e = b.vec(width)
                    for i, x in enumerate(blocks):
                        v.xor(e, x, cache)
                        if face == "r1" and r1_entry == 4:
                            v.store_u32(mem(32, table_ptr, 4 * i), e)
                        else:
                            step = lanes * (r1_entry if face == "r1" else 16)
                            v.store(mem(width, table_ptr, step * i), e,
                                    aligned=(width == 128))
                if face == "r1":
                    blocks = k.engine.rounds(k, b, s.keys, blocks, 2, 2, nr) or blocks
                    done = 2
    if done < nr:
        with b.phase("rounds_3_nr"):
            blocks = k.engine.rounds(k, b, s.keys, blocks, done + 1, nr, nr) or blocks
    if mode == "fill":
        with b.phase("table_fill"):
            k.run.record_filled(b, s.ctx, s.idx, blocks_n)
    partial = b.label("partial") if blocks_n == 1 else None
    if partial is not None:
        with b.phase("partial"):
            a.cmp(s.length, Imm(16))
            a.jb(partial)
    with b.phase("load_xor_store"):
        for i, x in enumerate(blocks):
            v.xor(x, x, mem(width, s.inp, width // 8 * i), unaligned=True)
            v.store(mem(width, s.out, width // 8 * i), x, aligned=False)
    with b.phase("loop"):
        k.spec.counter_policy.count_up(k.isa, b, s.lo, s.hi, blocks_n)
        a.add(s.inp, Imm(16 * blocks_n))
        a.add(s.out, Imm(16 * blocks_n))
        a.sub(s.length, Imm(16 * blocks_n))
        a.jmp(then or s.top)
    if partial is not None:
        _partial_tail(k, b, v, s, blocks[0], partial)


def _scaled(b: KernelBuilder, idx: Reg, shift: int) -> Reg:
    scaled = b.gp()
    b.asm.mov(scaled, idx)
    b.asm.shl(scaled, Imm(shift))
    return scaled


def _partial_tail(k: Kernel, b: KernelBuilder, v: VectorOps, s: Stream, x: Reg,
                  partial: Label) -> None:
    """len < 16: keep the keystream block in the context, use its first len bytes."""
    with b.phase("partial"):
        b.bind(partial)
        v.store(mem(128, s.ctx, L.KEYSTREAM), x)
        k.spec.counter_policy.count_up(k.isa, b, s.lo, s.hi, 1)
        keystream_tail(k.isa, b, s.ctx, s.out, s.inp, s.length, s.end)


def _refresh(k: Kernel, b: KernelBuilder, v: VectorOps, s: Stream, bits: int,
             window_ok: Label) -> None:
    """A new window: recompute the caches; keep the table's run of filled entries when
    the counter's bytes 0, 5, 10 match its tag, else empty it (kernels/face_fill.py)."""
    a, face, ctx, lo, hi = b.asm, k.spec.face, s.ctx, s.lo, s.hi
    nr = ROUNDS[bits]
    base = b.gp()
    a.mov(base, lo)
    b.emit("and", base, Imm(-256))
    x = k.counter_block(b, v, base, hi)
    x = (k.engine.rounds(k, b, s.keys, [x], 0, 1, nr) or [x])[0]
    if face == "r1":
        v.store(mem(128, ctx, L.CACHE_R1), x)
    else:
        x = (k.engine.rounds(k, b, s.keys, [x], 2, 2, nr) or [x])[0]
        v.store(mem(128, ctx, L.CACHE_R2), x)
    a.mov(mem(64, ctx, L.WINDOW_LO), base)
    a.mov(mem(64, ctx, L.WINDOW_HI), hi)
    k.run.keep_or_empty_table(b, ctx, lo, hi, window_ok, first_fill=FIRST_FILL)


def build_kernel(spec: KernelSpec) -> BuiltKernel:
    """The CTR skeleton of the vector methods on x86-64 (modes/: the mode descriptor names
    it). An EVEX kernel's xor_stream may use all 32 vector registers: every vector
    instruction it contains has an EVEX form; the other entry points keep to 16 (they use
    VEX-only instructions such as AESKEYGENASSIST)."""
    k = Kernel(spec)
    doc = (f"xor_stream(ctx, out, in, len): AES-CTR, {spec.interleave} x {spec.width}-bit "
           f"registers ({spec.interleave * spec.lanes} blocks) a batch, FACE {spec.face}.")
    abi = ({"xor_stream": calling_convention("x86_64", spec.abi, 32)}
           if spec.encoding == "evex" else {})
    return BuiltKernel(build_entries(k, doc), k.layout.size, tuple(k.layout.table()),
                       public_fields=k.layout.public_names(), abi=abi)
