"""The x86 side of the CTR stream, shared by the batch-ladder loop (modes/ctr/batch_loop.py
through kernels/ctr_kernel.py) and the aligned-group loop (kernels/grouped_ctr.py): the
stream's registers (the counter as two native 64-bit halves, the engine's round keys) and
the per-lane counter helpers. ``k`` is the kernel being built (kernels/ctr_kernel.Kernel).
"""
from __future__ import annotations

from ..dsl.builder import KernelBuilder
from ..dsl.operands import Mem, Reg
from ..modes.ctr.batch_loop import Stream
from ..modes.ctr.skeleton import load_counter
from .vector_ops import VectorOps


def mem(width: int, base: Reg, disp: int = 0, index: Reg | None = None, scale: int = 1) -> Mem:
    return Mem(width, base=base, index=index, scale=scale, disp=disp)


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
        keys = k.engine.prepare(k, b, ctx, bits)
    return Stream(ctx, out, inp, length, lo, hi, idx, end, top, keys)


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
