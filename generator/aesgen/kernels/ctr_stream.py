"""The CTR stream's registers and loop frame, shared by the batch-ladder loop
(kernels/ctr_kernel.py) and the aligned-group loop (kernels/grouped_ctr.py): the counter as
two native 64-bit halves, the loop head with its FACE window check, the exit that keeps the
counter, and the per-lane counter helpers. ``k`` is the kernel being built
(kernels/ctr_kernel.Kernel).
"""
from __future__ import annotations

from dataclasses import dataclass

from ..arch.x86_64.scalar import X86Scalar
from ..dsl.builder import KernelBuilder
from ..dsl.operands import Imm, Label, Mem, Reg
from . import ctx_layout as L
from ..modes.ctr.skeleton import keep_counter, load_counter
from .vector_ops import VectorOps


def mem(width: int, base: Reg, disp: int = 0, index: Reg | None = None, scale: int = 1) -> Mem:
    return Mem(width, base=base, index=index, scale=scale, disp=disp)


@dataclass
class Stream:
    """The registers one key size's loop works with."""
    ctx: Reg
    out: Reg
    inp: Reg
    length: Reg
    lo: Reg          # counter bytes 8..15 as a number
    hi: Reg          # counter bytes 0..7
    idx: Reg         # in15 of the next block
    end: Label       # store the counter and return
    top: Label       # next batch
    keys: object     # the engine's round-key access for this key size


def count_up(b: KernelBuilder, lo: Reg, hi: Reg, n: int) -> None:
    b.asm.add(lo, Imm(n))
    b.asm.adc(hi, Imm(0))


def lane_offsets(lanes: int, first: int) -> bytes:
    """A vector constant adding first+k to byte 15 of lane k (in15 of the lane's block)."""
    out = bytearray()
    for lane in range(lanes):
        out += bytes(15) + bytes([first + lane])
    return bytes(out)


def spread_blocks(b: KernelBuilder, v: VectorOps, blocks: list[Reg], base: Reg,
                   combine) -> None:
    """blocks[i] = combine(base, in15 offsets of register i's lanes): add_bytes for any
    batch, XOR for an aligned one (where the offsets cannot carry)."""
    width = base.width
    lanes = width // 128
    for i, x in enumerate(blocks):
        if i == 0 and lanes == 1:
            v.copy(x, base)
        else:
            offsets = b.const(f"lanes{width}_plus{i * lanes}", lane_offsets(lanes, i * lanes),
                              align=min(64, width // 8))
            combine(x, base, offsets)


def open_stream(k, b: KernelBuilder, v: VectorOps, bits: int, ctx: Reg, out: Reg,
                inp: Reg, length: Reg) -> Stream:
    """The registers of one key size's loop: the counter read from the context, the
    engine's round-key access, the loop's top and end labels."""
    top, end = b.label(f"top{bits}"), b.label(f"end{bits}")
    lo, hi = load_counter(k.isa, b, ctx)
    idx = b.gp()
    with b.phase("key_load"):
        keys = k.engine.prepare(k, b, v, ctx, bits)
    return Stream(ctx, out, inp, length, lo, hi, idx, end, top, keys)


def loop_head(b: KernelBuilder, s: Stream, face: str, refresh: Label, window_ok: Label) -> None:
    """The top of a batch loop: stop at length 0; with FACE, go to ``refresh`` when the
    counter has left the window the caches hold; then idx = in15 of the next block."""
    a = b.asm
    with b.phase("loop"):
        b.bind(s.top)
        a.test(s.length, s.length)
        a.je(s.end)
        if face != "none":
            t = b.gp()
            a.mov(t, s.lo)
            b.emit("and", t, Imm(-256))
            a.cmp(t, mem(64, s.ctx, L.WINDOW_LO))
            a.jne(refresh)
            a.cmp(s.hi, mem(64, s.ctx, L.WINDOW_HI))
            a.jne(refresh)
        b.bind(window_ok)
        a.movzx(s.idx.w32, s.lo.w8)


def loop_exit(b: KernelBuilder, s: Stream, done: Label) -> None:
    """Where the batch loop ends: keep the counter in the context for the next call."""
    b.bind(s.end)
    keep_counter(X86Scalar(), b, s.ctx, s.lo, s.hi, done)


def counter_in_every_lane(k, b: KernelBuilder, v: VectorOps, lo: Reg, hi: Reg,
                          width: int) -> Reg:
    """The counter block hi:lo (a batch's first), in each 128-bit lane of a width-bit
    register."""
    ctr = k.counter_block(b, v, lo, hi)
    if width == 128:
        return ctr
    base = b.vec(width)
    v.broadcast_register(base, ctr)
    return base


def counter_tag(b: KernelBuilder, lo: Reg, hi: Reg, tag_lo: Reg, tag_hi: Reg) -> None:
    """tag_lo:tag_hi = the counter's bytes 0, 5 and 10 (hi:lo masked): what the FACE
    tables depend on besides the key, compared with TAG_LO/TAG_HI."""
    b.asm.movabs(tag_lo, Imm(L.TAG_LO_MASK))
    b.emit("and", tag_lo, lo)
    b.asm.movabs(tag_hi, Imm(L.TAG_HI_MASK))
    b.emit("and", tag_hi, hi)
