"""Moves of fewer than 32 bytes whose count is known only at run time, without a byte loop,
written once over an instruction set's few operations (arch/x86_64/short_bytes.py,
arch/aarch64/short_bytes.py supply them).

The count n is public (a length); its bits choose the pieces: 16 (two 8-byte units), 8, 4,
2 (two bytes) and 1, one branch a bit, each piece at the offset the larger ones left. Every
pointer given advances with the pieces, so a caller passes copies it may lose.

    short_move(b, n, src=p, dst=q)                           q[0..n) = p[0..n)
    short_move(b, n, src=p, dst=q, xor=k, record=r)          q = p ^ k, r = q (GCM encrypt)
    short_move(b, n, src=p, dst=q, xor=k, record=r, record_input=True)   r = p (decrypt)
    short_zero(b, n, dst=q)                                  q[0..n) = 0
    short_differ(b, n, a=p, other=q, diff=d)                 d |= p[0..n) ^ q[0..n)

What an instruction set supplies (``ops``):
  skip_unless_bit(b, n, piece, label)   branch to label when n & piece is 0
  load(b, t, unit, mem)                 t = the unit (1, 4 or 8 bytes) at mem, zero-extended
  store(b, mem, unit, t)                the unit of t (a register, or None for zero) to mem
  xor(b, t, unit, mem)                  t ^= the unit at mem
  or_(b, diff, t)                       diff |= t
  advance(b, p, piece)                  p += piece
"""
from __future__ import annotations

import functools

from ..dsl.builder import KernelBuilder
from ..dsl.operands import Mem, Reg

# piece sizes, largest first; a piece of 16 moves two 8-byte units and one of 2 two bytes,
# so every load and store is 8, 4 or 1 bytes wide
PIECES = (16, 8, 4, 2, 1)
UNITS = {16: (8, 8), 8: (8,), 4: (4,), 2: (1, 1), 1: (1,)}


def _pieces(ops, b: KernelBuilder, n: Reg, largest: int, hint: str):
    """(piece, its units and their offsets) for each piece, with the branch over it; the
    caller binds the label after the piece."""
    for piece in PIECES[PIECES.index(largest):]:
        skip = b.label(f"{hint}{piece}")
        ops.skip_unless_bit(b, n, piece, skip)
        offsets, off = [], 0
        for unit in UNITS[piece]:
            offsets.append((unit, off))
            off += unit
        yield piece, offsets, skip


def short_move(ops, b: KernelBuilder, n: Reg, *, src: Reg, dst: Reg, xor: Reg | None = None,
               record: Reg | None = None, record_input: bool = False,
               largest: int = 8) -> None:
    """dst[0..n) = src[0..n) (XOR xor[0..n) when given); record[0..n) gets the result, or
    with ``record_input`` the source bytes. n < 2 * largest; largest is 16 or 8."""
    pointers = [p for p in (src, dst, xor, record) if p is not None]
    t = b.gp()
    for piece, units, skip in _pieces(ops, b, n, largest, "no"):
        for unit, off in units:
            width = 8 * unit
            ops.load(b, t, unit, Mem(width, base=src, disp=off))
            if record is not None and record_input:
                ops.store(b, Mem(width, base=record, disp=off), unit, t)
            if xor is not None:
                ops.xor(b, t, unit, Mem(width, base=xor, disp=off))
            ops.store(b, Mem(width, base=dst, disp=off), unit, t)
            if record is not None and not record_input:
                ops.store(b, Mem(width, base=record, disp=off), unit, t)
        if piece != 1:
            for p in pointers:
                ops.advance(b, p, piece)
        b.bind(skip)


def short_zero(ops, b: KernelBuilder, n: Reg, *, dst: Reg, largest: int = 8) -> None:
    """dst[0..n) = 0 for n < 2 * largest."""
    for piece, units, skip in _pieces(ops, b, n, largest, "nozero"):
        for unit, off in units:
            ops.store(b, Mem(8 * unit, base=dst, disp=off), unit, None)
        if piece != 1:
            ops.advance(b, dst, piece)
        b.bind(skip)


def short_differ(ops, b: KernelBuilder, n: Reg, *, a: Reg, other: Reg, diff: Reg,
                 largest: int = 16) -> None:
    """diff |= a[0..n) XOR other[0..n), piece by piece: diff stays 0 only when the bytes
    agree. No branch depends on the bytes (a constant-time compare of tags)."""
    t = b.gp()
    for piece, units, skip in _pieces(ops, b, n, largest, "nocmp"):
        for unit, off in units:
            ops.load(b, t, unit, Mem(8 * unit, base=a, disp=off))
            ops.xor(b, t, unit, Mem(8 * unit, base=other, disp=off))
            ops.or_(b, diff, t)
        if piece != 1:
            ops.advance(b, a, piece)
            ops.advance(b, other, piece)
        b.bind(skip)


def bound(ops) -> tuple:
    """short_move, short_zero and short_differ over an instruction set's operations."""
    return tuple(functools.partial(f, ops) for f in (short_move, short_zero, short_differ))
