"""The key schedule as a component of init, the same for every mode, method and instruction
set: accept a key length the set was built for, branch on it (public) to that size's
expansion, and FIPS-197 5.2's word recurrence as data (``word_steps``), which every
engine's expansion walks. ``isa`` is the general-purpose layer (arch/*/scalar.py); what
expands a key for one size is the caller's ``expand(bits)``."""
from __future__ import annotations

from typing import Callable, Iterator

from ..dsl.builder import KernelBuilder
from ..dsl.operands import Label, Mem, Reg
from .spec import ROUNDS

RCON = (0x01, 0x02, 0x04, 0x08, 0x10, 0x20, 0x40, 0x80, 0x1B, 0x36)   # FIPS-197 5.2


def word_steps(bits: int) -> Iterator[tuple[int, str, int]]:
    """For each expanded word i (Nk <= i < 4(Nr+1)), what is done to w[i-1] before it is
    XORed into w[i-Nk]: ("rot_sub", rcon) for SubWord(RotWord(.)) ^ Rcon, ("sub", 0) for
    SubWord alone (AES-256, i mod 8 = 4), ("copy", 0) otherwise."""
    nk, nr = bits // 32, ROUNDS[bits]
    for i in range(nk, 4 * (nr + 1)):
        if i % nk == 0:
            yield i, "rot_sub", RCON[i // nk - 1]
        elif nk == 8 and i % nk == 4:
            yield i, "sub", 0
        else:
            yield i, "copy", 0


def accept_key_length(isa, b: KernelBuilder, key_len: Reg, sizes: tuple[int, ...],
                      accepted: Label) -> None:
    """Jump to ``accepted`` when key_len is 16, 24 or 32 bytes for a size in ``sizes``."""
    for bits in sizes:
        isa.jump_if_equal(b, key_len, bits // 8, accepted)


def expand_by_size(isa, b: KernelBuilder, key_len: Reg, sizes: tuple[int, ...],
                   key_bits: Mem, done: Label, expand: Callable[[int], None]) -> None:
    """Expand the key for its size (key_len already accepted) by ``expand(bits)``, store
    the size in bits at ``key_bits`` and jump to ``done``."""
    per_size = {bits: b.label(f"key{bits}") for bits in sizes}
    for bits, label in per_size.items():
        isa.jump_if_equal(b, key_len, bits // 8, label)
    for bits, label in per_size.items():
        b.bind(label)
        with b.phase("key_expansion"):
            expand(bits)
            isa.store_imm(b, key_bits, bits)
        isa.jump(b, done)
