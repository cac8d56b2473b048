"""AES-CTR kernels for AArch64 (AAPCS64, GNU A64 syntax): the batch loop of xor_stream, under
the CTR skeleton's entry points (modes/ctr/skeleton.py: init, set_iv, wipe, xor_stream's frame,
written once for both instruction sets over arch/aarch64/scalar.py).

The twin of kernels/ctr_kernel.py (x86): the same context layout (kernels/ctx_layout.py), the
same stream and the same FACE semantics, so a context's meaning does not depend on the ISA
(except the FACE caches, which are in the engine's domain: see engines.py).

Counter: 128-bit big-endian, +1 a block (OpenSSL EVP_aes_*_ctr), kept as two native 64-bit
halves (CTR_LO = bytes 8..15, CTR_HI = bytes 0..7) so a step is adds/adc, wrapping at 2^128.
A batch of m blocks runs only while byte 15 (in15) does not wrap inside it, so block j is the
batch's first counter block plus j in byte 15 (one `add .16b` a block from the previous one),
and the FACE window (the 256 blocks sharing bytes 0..14) is the same for the whole batch.
Batches are ``interleave`` blocks, then halves (the ladder), then single blocks; the last
partial block is a single block whose keystream is kept in the context (KEYSTREAM,
KEYSTREAM_LEFT) for the next call. The loop itself is modes/ctr/batch_loop.py, shared with
the x86 vector kernels; this module gives it the batch.

FACE (Park & Lee, TCHES, section 4), in the engine's domain D_r = s_r ^ c_r (engines.py):
  rd1: C1 = D_1(base), T1[v] = D_1(base|v) ^ C1 = s_1(base|v) ^ s_1(base)  (column 0, 4 B)
  rd2: C2 = D_2(base), T2[v] = D_2(base|v) ^ C2 = s_2(base|v) ^ s_2(base)  (16 B)
A block with in15 = v then starts from C ^ T[v] = D_r(block): `r1` computes rounds 2..Nr,
`r2` rounds 3..Nr. The caches are recomputed once per window (the refresh); the tables depend
only on the key and counter bytes 0, 5, 10 (their tag), stay valid across windows and across
set_iv calls that keep those bytes, and are filled while encrypting: until a table is
complete each block is computed in full and stores its own entry; the first window's blocks
fill it, no set-up pass computes entries a message does not use. Table indices come from the
public counter only.
"""
from __future__ import annotations

from ...arch.aarch64.scalar import A64Scalar
from ...arch.aarch64.zeroing import zero_context
from ...dsl.builder import KernelBuilder
from ...dsl.operands import Imm, Label, Mem, Reg
from ...isa.table import load_table
from ...modes import BuiltKernel
from ...modes.ctr.batch_loop import Stream
from ...modes.ctr.batch_loop import stream_body as ladder_stream_body
from ...modes.ctr.skeleton import build_entries, keystream_tail, load_counter
from .. import ctx_layout as L
from ..face_fill import FIRST_FILL, FaceRun
from ..spec import FACE_ROUNDS, ROUNDS, KernelSpec
from .engine_choice import engine_for
from .engines import A64Engine

VECTOR_REGISTERS = 32


def _m(width: int, base: Reg, disp: int = 0, index: Reg | None = None, scale: int = 1,
       wb: str = "") -> Mem:
    return Mem(width, base=base, index=index, scale=scale, disp=disp, writeback=wb)


class Kernel:
    """Shared state while one kernel's four functions are built: what the CTR skeleton
    (modes/ctr/skeleton.py) asks of a kernel, on AArch64."""

    isa = A64Scalar()

    def __init__(self, spec: KernelSpec) -> None:
        if spec.arch != "aarch64":
            raise ValueError(f"{spec.name} is not an AArch64 kernel")
        self.spec = spec
        self.table = load_table("aarch64")
        self.engine: A64Engine = engine_for(spec)
        self.layout = L.layout_for(spec.face, 4, self.engine.context_fields())
        self.run = FaceRun(self.isa)
        self._check_registers()

    def _check_registers(self) -> None:
        """Resident keys + the batch + FACE cache + counter step + two data registers +
        a table-fill (or folded key) temporary must fit the 32 vector registers: the
        kernel is told its budget up front (there is no spilling)."""
        for bits in self.spec.key_bits:
            need = (self.engine.registers(bits) + self.spec.interleave + 1 + 1 + 2 +
                    (1 if self.spec.face != "none" else 0))
            if need > VECTOR_REGISTERS:
                raise ValueError(f"{self.spec.name}: AES-{bits} with interleave "
                                 f"{self.spec.interleave} needs {need} vector registers "
                                 f"of {VECTOR_REGISTERS}")

    def builder(self, entry: str, doc: str) -> KernelBuilder:
        return KernelBuilder(self.table, self.spec.symbol(entry), doc=doc)

    def zero_context(self, b: KernelBuilder, ctx: Reg) -> None:
        """Store zeros over all ctx_size bytes (a multiple of 64)."""
        zero_context(b, ctx, self.layout.size)

    def expand_key(self, b: KernelBuilder, ctx: Reg, key: Reg, bits: int) -> None:
        self.engine.expand_key(self, b, ctx, key, bits)

    def stream_body(self, b: KernelBuilder, bits: int, ctx: Reg, out: Reg, inp: Reg,
                    length: Reg, done: Label) -> None:
        ladder_stream_body(self, b, bits, ctx, out, inp, length, done)

    # --- what the ladder loop asks (modes/ctr/batch_loop.py) -----------------------------
    lanes = 1                    # a register is a block
    smallest_batch = 2           # then single blocks
    aligned_batches = False

    def open_stream(self, b: KernelBuilder, bits: int, ctx: Reg, out: Reg, inp: Reg,
                    length: Reg) -> Stream:
        """The counter from the context, the engine's round keys, and a vector with 1 in
        byte 15 that steps a counter block to the next."""
        a = b.asm
        lo, hi = load_counter(self.isa, b, ctx)
        with b.phase("key_load"):
            keys = self.engine.prepare(self, b, ctx, bits)
            one, t = b.vec(128), b.gp()
            a.movi(one.d2, Imm(0))
            a.mov(t.w, Imm(1))
            a.ins(one.lane_view("b", 15), t.w)
        return Stream(ctx, out, inp, length, lo, hi, b.gp(), b.label(f"end{bits}"),
                      b.label(f"top{bits}"), keys, one)

    def batch(self, b: KernelBuilder, bits: int, s: Stream, m: int, mode: str,
              then: Label | None = None, single: bool = False) -> None:
        _batch(self, b, bits, s, m, mode, then)

    def refresh(self, b: KernelBuilder, s: Stream, bits: int, window_ok: Label) -> None:
        _refresh(self, b, s, bits, window_ok)

    def scrub(self, b: KernelBuilder, entry: str) -> None:
        b.function.scrub_vectors = True     # passes/frame.py clears the vector registers

    def counter_block(self, b: KernelBuilder, lo: Reg, hi: Reg, x: Reg | None = None) -> Reg:
        """A vector register (``x`` or a new one) holding the 16 counter bytes (big-endian)
        of hi:lo."""
        a = b.asm
        t_hi, t_lo = b.gp(), b.gp()
        x = b.vec(128) if x is None else x
        a.rev(t_hi, hi)
        a.rev(t_lo, lo)
        a.fmov(x.d, t_hi)
        a.ins(x.lane_view("d", 1), t_lo)
        return x


# ====================================================================================
# xor_stream's loop (its frame is the CTR skeleton's)
# ====================================================================================
def _batch(k: Kernel, b: KernelBuilder, bits: int, s: Stream, m: int, mode: str,
           then: Label | None = None) -> None:
    """m blocks whose in15 run idx..idx+m-1 without wrapping.

    mode "full": every round computed; "fast": rounds up to the FACE level come from the
    cache and table; "fill": every round computed and the table entries stored. A single
    block (m == 1) may also be the partial last one (len < 16).
    """
    a, nr, face = b.asm, ROUNDS[bits], k.spec.face
    eng = k.engine
    skip = FACE_ROUNDS[face]
    blocks = [b.vec(128) for _ in range(m)]
    table = k.layout.table_r1 if face == "r1" else k.layout.table_r2
    entry = 4 if face == "r1" else 16
    tp = cache = None
    if mode in ("fast", "fill"):
        with b.phase("counter"):
            tp = b.gp()
            a.add(tp, s.ctx, s.idx, Imm(entry.bit_length() - 1))   # ctx + idx * entry
        cache = b.vec(128)
        with b.phase("rounds_0_2"):
            a.ldr(cache.q, _m(128, s.ctx, L.CACHE_R1 if face == "r1" else L.CACHE_R2))
    if mode == "fast":
        with b.phase("rounds_0_2"):
            if face == "r1":
                for i, x in enumerate(blocks):
                    a.ldr(x.s, _m(32, tp, table + 4 * i))         # column 0; the rest zero
            else:
                _load_pairs(b, blocks, lambda i: _m(128, tp, table + 16 * i),
                            lambda i: _m(256, tp, table + 16 * i))
        with b.phase("rounds_0_2" if face == "r1" else "rounds_3_nr"):
            eng.rounds_from_offset(k, b, s.keys, blocks, cache, skip, 2 if face == "r1" else 3, nr)
    else:
        with b.phase("counter"):
            k.counter_block(b, s.lo, s.hi, blocks[0])
            for i in range(1, m):
                a.add(blocks[i].b16, blocks[i - 1].b16, s.one.b16)
        with b.phase("rounds_0_2"):
            if mode == "full":
                eng.rounds(k, b, s.keys, blocks, 0, 2, nr)
            else:
                eng.rounds(k, b, s.keys, blocks, 0, skip, nr)
                with b.phase("table_fill"):
                    e = b.vec(128)
                    for i, x in enumerate(blocks):
                        a.eor(e.b16, x.b16, cache.b16)
                        if face == "r1":
                            a.str(e.s, _m(32, tp, table + 4 * i))
                        else:
                            a.str(e.q, _m(128, tp, table + 16 * i))
                if face == "r1":
                    eng.rounds(k, b, s.keys, blocks, 2, 2, nr)
    with b.phase("rounds_3_nr"):
        eng.rounds(k, b, s.keys, blocks, 4 if mode == "fast" and face == "r2" else 3,
                   nr - 1, nr)
    if mode == "fill":
        with b.phase("table_fill"):
            k.run.record_filled(b, s.ctx, s.idx, m)
    if m == 1:
        partial = b.label("partial")
        with b.phase("rounds_3_nr"):
            eng.last_round(k, b, s.keys, blocks, nr)
        with b.phase("partial"):
            a.cmp(s.length, Imm(16))
            a.b_lo(partial)
        with b.phase("load_xor_store"):
            d = b.vec(128)
            a.ldr(d.q, _m(128, s.inp, 16, wb="post"))
            a.eor(blocks[0].b16, blocks[0].b16, d.b16)
            a.str(blocks[0].q, _m(128, s.out, 16, wb="post"))
    else:
        for i in range(0, m, 2):                 # pairs; an odd batch ends with one
            pair = blocks[i:i + 2]
            data = [b.vec(128) for _ in pair]
            with b.phase("load_xor_store"):
                if len(pair) == 2:
                    a.ldp(data[0].q, data[1].q, _m(256, s.inp, 32, wb="post"))
                else:
                    a.ldr(data[0].q, _m(128, s.inp, 16, wb="post"))
            with b.phase("rounds_3_nr"):
                eng.last_round(k, b, s.keys, pair, nr, data)
            with b.phase("load_xor_store"):
                if len(pair) == 2:
                    a.stp(pair[0].q, pair[1].q, _m(256, s.out, 32, wb="post"))
                else:
                    a.str(pair[0].q, _m(128, s.out, 16, wb="post"))
    with b.phase("loop"):
        k.spec.counter_policy.count_up(k.isa, b, s.lo, s.hi, m)
        a.sub(s.length, s.length, Imm(16 * m))
        a.b(then or s.top)
    if m == 1:
        _partial_tail(k, b, s, blocks[0], partial)


def _load_pairs(b: KernelBuilder, regs: list[Reg], one, two) -> None:
    """Load consecutive 16-byte slots into regs: ldp for pairs, ldr for an odd last one."""
    for i in range(0, len(regs), 2):
        if i + 1 < len(regs):
            b.asm.ldp(regs[i].q, regs[i + 1].q, two(i))
        else:
            b.asm.ldr(regs[i].q, one(i))


def _partial_tail(k: Kernel, b: KernelBuilder, s: Stream, x: Reg, partial: Label) -> None:
    """len < 16: keep the keystream block in the context, use its first len bytes."""
    with b.phase("partial"):
        b.bind(partial)
        b.asm.str(x.q, _m(128, s.ctx, L.KEYSTREAM))
        k.spec.counter_policy.count_up(k.isa, b, s.lo, s.hi, 1)
        keystream_tail(k.isa, b, s.ctx, s.out, s.inp, s.length, s.end)


def _refresh(k: Kernel, b: KernelBuilder, s: Stream, bits: int, window_ok: Label) -> None:
    """A new window: recompute the cache; keep the table's run of filled entries when the
    counter's bytes 0, 5, 10 match its tag, else empty it (kernels/face_fill.py)."""
    a, face, ctx, lo, hi = b.asm, k.spec.face, s.ctx, s.lo, s.hi
    nr = ROUNDS[bits]
    base = b.gp()
    b.emit("and", base, lo, Imm(-256 & (2 ** 64 - 1)))
    x = k.counter_block(b, base, hi)
    k.engine.rounds(k, b, s.keys, [x], 0, 1 if face == "r1" else 2, nr)
    a.str(x.q, _m(128, ctx, L.CACHE_R1 if face == "r1" else L.CACHE_R2))
    a.stp(base, hi, _m(128, ctx, L.WINDOW_LO))
    k.run.keep_or_empty_table(b, ctx, lo, hi, window_ok, first_fill=FIRST_FILL)


def build_kernel(spec: KernelSpec) -> BuiltKernel:
    """The CTR skeleton on AArch64 (modes/: the mode descriptor names it)."""
    k = Kernel(spec)
    doc = (f"xor_stream(ctx, out, in, len): AES-CTR, {spec.interleave} blocks a batch, "
           f"FACE {spec.face}.")
    return BuiltKernel(build_entries(k, doc), k.layout.size, tuple(k.layout.table()),
                       public_fields=k.layout.public_names())
