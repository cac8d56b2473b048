"""Moves of fewer than 32 bytes whose count is known only at run time, without a byte loop.

The count n is public (a length); its bits choose the pieces: 16 (two qwords), 8, 4, 2 (two
bytes) and 1, one branch a bit, each piece at the offset the larger ones left. Every
pointer given advances with the pieces, so a caller passes copies it may lose.

    short_move(b, n, src=p, dst=q)                           q[0..n) = p[0..n)
    short_move(b, n, src=p, dst=q, xor=k, record=r)          q = p ^ k, r = q (GCM encrypt)
    short_move(b, n, src=p, dst=q, xor=k, record=r, record_input=True)   r = p (decrypt)
    short_zero(b, n, dst=q)                                  q[0..n) = 0
"""
from __future__ import annotations

from ...dsl.builder import KernelBuilder
from ...dsl.operands import Imm, Mem, Reg

# piece sizes, largest first; a piece of 16 moves two qwords and one of 2 two bytes, so
# every load and store is 8, 4 or 1 bytes wide
PIECES = (16, 8, 4, 2, 1)
_UNITS = {16: (8, 8), 8: (8,), 4: (4,), 2: (1, 1), 1: (1,)}


def _load(b: KernelBuilder, t: Reg, unit: int, m: Mem) -> None:
    if unit == 8:
        b.asm.mov(t, m)
    elif unit == 4:
        b.asm.mov(t.w32, m)
    else:
        b.asm.movzx(t.w32, m)


def _xor(b: KernelBuilder, t: Reg, unit: int, m: Mem) -> None:
    if unit == 8:
        b.asm.xor(t, m)
    elif unit == 4:
        b.asm.xor(t.w32, m)
    else:
        b.asm.xor(t.w8, m)


def _store(b: KernelBuilder, m: Mem, unit: int, t: Reg | Imm) -> None:
    if unit == 8:
        b.asm.mov(m, t)
    elif unit == 4:
        b.asm.mov(m, t if isinstance(t, Imm) else t.w32)
    else:
        b.asm.mov(m, t if isinstance(t, Imm) else t.w8)


def short_move(b: KernelBuilder, n: Reg, *, src: Reg, dst: Reg, xor: Reg | None = None,
               record: Reg | None = None, record_input: bool = False,
               largest: int = 8) -> None:
    """dst[0..n) = src[0..n) (XOR xor[0..n) when given); record[0..n) gets the result, or
    with ``record_input`` the source bytes. n < 2 * largest; largest is 16 or 8."""
    pointers = [p for p in (src, dst, xor, record) if p is not None]
    t = b.gp()
    for piece in PIECES[PIECES.index(largest):]:
        skip = b.label(f"no{piece}")
        b.asm.test(n, Imm(piece))
        b.asm.je(skip)
        off = 0
        for unit in _UNITS[piece]:
            width = 8 * unit
            _load(b, t, unit, Mem(width, base=src, disp=off))
            if record is not None and record_input:
                _store(b, Mem(width, base=record, disp=off), unit, t)
            if xor is not None:
                _xor(b, t, unit, Mem(width, base=xor, disp=off))
            _store(b, Mem(width, base=dst, disp=off), unit, t)
            if record is not None and not record_input:
                _store(b, Mem(width, base=record, disp=off), unit, t)
            off += unit
        if piece != 1:
            for p in pointers:
                b.asm.add(p, Imm(piece))
        b.bind(skip)


def short_zero(b: KernelBuilder, n: Reg, *, dst: Reg, largest: int = 8) -> None:
    """dst[0..n) = 0 for n < 2 * largest."""
    for piece in PIECES[PIECES.index(largest):]:
        skip = b.label(f"nozero{piece}")
        b.asm.test(n, Imm(piece))
        b.asm.je(skip)
        off = 0
        for unit in _UNITS[piece]:
            _store(b, Mem(8 * unit, base=dst, disp=off), unit, Imm(0))
            off += unit
        if piece != 1:
            b.asm.add(dst, Imm(piece))
        b.bind(skip)


def short_differ(b: KernelBuilder, n: Reg, *, a: Reg, other: Reg, diff: Reg,
                 largest: int = 16) -> None:
    """diff |= a[0..n) XOR other[0..n), piece by piece: diff stays 0 only when the bytes
    agree. No branch depends on the bytes (a constant-time compare of tags)."""
    t = b.gp()
    for piece in PIECES[PIECES.index(largest):]:
        skip = b.label(f"nocmp{piece}")
        b.asm.test(n, Imm(piece))
        b.asm.je(skip)
        off = 0
        for unit in _UNITS[piece]:
            _load(b, t, unit, Mem(8 * unit, base=a, disp=off))
            _xor(b, t, unit, Mem(8 * unit, base=other, disp=off))
            b.emit("or", diff, t)
            off += unit
        if piece != 1:
            b.asm.add(a, Imm(piece))
            b.asm.add(other, Imm(piece))
        b.bind(skip)
