"""Moves of fewer than 32 bytes whose count is known only at run time, without a byte loop,
on AArch64: the twin of arch/x86_64/short_bytes.py, with the same calls and meaning.

The count n is public (a length); its bits choose the pieces: 16 (two doublewords), 8, 4,
2 (two bytes) and 1, one TBZ a bit, each piece at the offset the larger ones left. Every
pointer given advances with the pieces, so a caller passes copies it may lose.
"""
from __future__ import annotations

from ...dsl.builder import KernelBuilder
from ...dsl.operands import XZR, Imm, Mem, Reg

PIECES = (16, 8, 4, 2, 1)
_UNITS = {16: (8, 8), 8: (8,), 4: (4,), 2: (1, 1), 1: (1,)}


def _view(r: Reg, unit: int) -> Reg:
    return r if unit == 8 else r.w


def _load(b: KernelBuilder, t: Reg, unit: int, m: Mem) -> None:
    (b.asm.ldrb if unit == 1 else b.asm.ldr)(_view(t, unit), m)


def _store(b: KernelBuilder, m: Mem, unit: int, t: Reg) -> None:
    (b.asm.strb if unit == 1 else b.asm.str)(_view(t, unit), m)


def _pieces(b: KernelBuilder, n: Reg, largest: int, hint: str):
    """(piece, skip label) for each piece, the branch over it emitted."""
    for piece in PIECES[PIECES.index(largest):]:
        skip = b.label(f"{hint}{piece}")
        b.asm.tbz(n, Imm(piece.bit_length() - 1), skip)
        yield piece, skip


def short_move(b: KernelBuilder, n: Reg, *, src: Reg, dst: Reg, xor: Reg | None = None,
               record: Reg | None = None, record_input: bool = False,
               largest: int = 8) -> None:
    """dst[0..n) = src[0..n) (XOR xor[0..n) when given); record[0..n) gets the result, or
    with ``record_input`` the source bytes. n < 2 * largest; largest is 16 or 8."""
    pointers = [p for p in (src, dst, xor, record) if p is not None]
    t, k = b.gp(), b.gp()
    for piece, skip in _pieces(b, n, largest, "no"):
        off = 0
        for unit in _UNITS[piece]:
            width = 8 * unit
            _load(b, t, unit, Mem(width, base=src, disp=off))
            if record is not None and record_input:
                _store(b, Mem(width, base=record, disp=off), unit, t)
            if xor is not None:
                _load(b, k, unit, Mem(width, base=xor, disp=off))
                b.emit("eor", t, t, k)
            _store(b, Mem(width, base=dst, disp=off), unit, t)
            if record is not None and not record_input:
                _store(b, Mem(width, base=record, disp=off), unit, t)
            off += unit
        if piece != 1:
            for p in pointers:
                b.asm.add(p, p, Imm(piece))
        b.bind(skip)


def short_zero(b: KernelBuilder, n: Reg, *, dst: Reg, largest: int = 8) -> None:
    """dst[0..n) = 0 for n < 2 * largest."""
    for piece, skip in _pieces(b, n, largest, "nozero"):
        off = 0
        for unit in _UNITS[piece]:
            _store(b, Mem(8 * unit, base=dst, disp=off), unit, XZR)
            off += unit
        if piece != 1:
            b.asm.add(dst, dst, Imm(piece))
        b.bind(skip)


def short_differ(b: KernelBuilder, n: Reg, *, a: Reg, other: Reg, diff: Reg,
                 largest: int = 16) -> None:
    """diff |= a[0..n) XOR other[0..n), piece by piece: diff stays 0 only when the bytes
    agree. No branch depends on the bytes (a constant-time compare of tags)."""
    t, u = b.gp(), b.gp()
    for piece, skip in _pieces(b, n, largest, "nocmp"):
        off = 0
        for unit in _UNITS[piece]:
            _load(b, t, unit, Mem(8 * unit, base=a, disp=off))
            _load(b, u, unit, Mem(8 * unit, base=other, disp=off))
            b.emit("eor", t, t, u)
            b.emit("orr", diff, diff, t)
            off += unit
        if piece != 1:
            b.asm.add(a, a, Imm(piece))
            b.asm.add(other, other, Imm(piece))
        b.bind(skip)
