"""The key schedule as a component of init, the same for every mode: accept a key length
the set was built for, then branch on it (public) to that size's expansion. ``schedule`` is
whatever expands a key: a round engine (kernels/engines.py) or the table method's scalar
schedule."""
from __future__ import annotations

from ..dsl.builder import KernelBuilder
from ..dsl.operands import Imm, Label, Mem, Reg


def accept_key_length(b: KernelBuilder, key_len: Reg, sizes: tuple[int, ...],
                      accepted: Label) -> None:
    """Jump to ``accepted`` when key_len is 16, 24 or 32 bytes for a size in ``sizes``."""
    for bits in sizes:
        b.asm.cmp(key_len, Imm(bits // 8))
        b.asm.je(accepted)


def expand_by_size(k, b: KernelBuilder, v, schedule, ctx: Reg, key: Reg, key_len: Reg,
                   sizes: tuple[int, ...], key_bits: Mem, done: Label) -> None:
    """Expand the key for its size (key_len already accepted) into kernel k's context,
    store the size in bits at ``key_bits`` and jump to ``done``."""
    a = b.asm
    per_size = {bits: b.label(f"key{bits}") for bits in sizes}
    for bits, label in per_size.items():
        a.cmp(key_len, Imm(bits // 8))
        a.je(label)
    for bits, label in per_size.items():
        b.bind(label)
        with b.phase("key_expansion"):
            schedule.expand_key(k, b, v, ctx, key, bits)
            a.mov(key_bits, Imm(bits))
        a.jmp(done)
