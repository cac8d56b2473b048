"""Zeroing a context: ctx_size bytes (a multiple of 64), 64 bytes an iteration, with the
widest store the kernel's encoding has. init uses it before a new key (nothing of the old
key survives) and wipe is nothing else."""
from __future__ import annotations

from ...dsl.builder import KernelBuilder
from ...dsl.operands import Imm, Mem, Reg
from ...kernels.vector_ops import VectorOps


def zero_context(b: KernelBuilder, v: VectorOps, ctx: Reg, size: int, width: int,
                 *, aligned: bool = False) -> None:
    if size % 64:
        raise ValueError(f"context size {size} is not a multiple of 64")
    a = b.asm
    z, p, n = b.vec(width), b.gp(), b.gp()
    v.xor(z.view(128), z.view(128), z.view(128))      # zeroes the whole register
    a.mov(p, ctx)
    a.mov(n, Imm(size // 64))
    loop = b.label("zero")
    b.bind(loop)
    for off in range(0, 64, width // 8):
        v.store(Mem(width, base=p, disp=off), z, aligned=aligned)
    a.add(p, Imm(64))
    a.dec(n)
    a.jne(loop)
