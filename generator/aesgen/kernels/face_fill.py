"""Which FACE table entries of a CTR context are filled: one run of in15 values (x86-64).

The entries valid for the table's tag (counter bytes 0, 5, 10) are the run
FILL_START, FILL_START + 1, ..., FILL_START + FILL_COUNT - 1 (mod 256); a complete table is
kept as FILL_START = 0, FILL_COUNT = 256. A batch whose entries all lie in the run starts
from them ("fast"); any other batch computes its rounds in full, stores its entries and
records them: the run grows when the batch starts inside it or at its end, and restarts at
the batch otherwise. So a stream of messages that start at the same in15 fills the run with
its first message and starts from it with its second, whatever their lengths; a new tag
(a counter whose bytes 0, 5, 10 differ, seen when a window is entered) empties the run.

Every value here is public (in15 and the run come from the counter), so the branches are
too. The AArch64 kernels keep the same run (kernels/a64/face_fill.py).
"""
from __future__ import annotations

from ..dsl.builder import KernelBuilder
from ..dsl.operands import Imm, Label, Mem, Reg
from . import ctx_layout as L
from .ctr_stream import counter_tag


def _field(ctx: Reg, offset: int) -> Mem:
    return Mem(64, base=ctx, disp=offset)


def jump_unless_complete(b: KernelBuilder, ctx: Reg, fill: Label) -> None:
    """The steady state's check: jump to ``fill`` unless the table is complete. There,
    ``back_if_filled`` sends a batch whose entries are all in the run back to its fast path."""
    b.asm.cmp(_field(ctx, L.FILL_COUNT), Imm(256))
    b.asm.jne(fill)


def _offset_in_run(b: KernelBuilder, ctx: Reg, idx: Reg) -> Reg:
    """(idx - FILL_START) mod 256: where in15 = idx stands counted from the run's start."""
    off = b.gp()
    b.asm.mov(off, idx)
    b.asm.sub(off, _field(ctx, L.FILL_START))
    b.emit("and", off, Imm(255))
    return off


def back_if_filled(b: KernelBuilder, ctx: Reg, idx: Reg, blocks: int, fast: Label) -> None:
    """Jump to ``fast`` when the entries of in15 = idx .. idx + blocks - 1 all lie in the
    run: (idx - FILL_START) mod 256 + blocks <= FILL_COUNT; else fall through to the fill."""
    a = b.asm
    off = _offset_in_run(b, ctx, idx)
    a.add(off, Imm(blocks))
    a.cmp(off, _field(ctx, L.FILL_COUNT))
    a.jbe(fast)


def record_filled(b: KernelBuilder, ctx: Reg, idx: Reg, blocks: int) -> None:
    """After a batch stored the entries of in15 = idx .. idx + blocks - 1: grow the run
    when the batch starts inside it or at its end, else restart it at the batch."""
    a = b.asm
    restart, grown, done = b.label("run_restart"), b.label("run_grown"), b.label("run_done")
    off, count = _offset_in_run(b, ctx, idx), b.gp()
    a.mov(count, _field(ctx, L.FILL_COUNT))
    a.cmp(off, count)
    a.ja(restart)
    a.add(off, Imm(blocks))
    a.cmp(off, count)
    a.cmova(count, off)                           # the run now ends at the batch's end
    a.cmp(count, Imm(256))
    a.jb(grown)
    a.mov(_field(ctx, L.FILL_START), Imm(0))      # complete: every in15 from 0
    a.mov(count, Imm(256))
    b.bind(grown)
    a.mov(_field(ctx, L.FILL_COUNT), count)
    a.jmp(done)
    b.bind(restart)
    a.mov(_field(ctx, L.FILL_START), idx)
    a.mov(_field(ctx, L.FILL_COUNT), Imm(blocks))
    b.bind(done)


def keep_or_empty_table(b: KernelBuilder, ctx: Reg, lo: Reg, hi: Reg, window_ok: Label) -> None:
    """At a new window (counter hi:lo): keep the run (jump to window_ok) when counter
    bytes 0, 5, 10 match the table's tag; otherwise take the new tag with an empty run and
    jump to window_ok. Shared by the vector skeleton and the table kernel."""
    a = b.asm
    restart = b.label("restart")
    tag_lo, tag_hi = b.gp(), b.gp()
    counter_tag(b, lo, hi, tag_lo, tag_hi)
    a.cmp(tag_lo, _field(ctx, L.TAG_LO))
    a.jne(restart)
    a.cmp(tag_hi, _field(ctx, L.TAG_HI))
    a.je(window_ok)
    b.bind(restart)
    a.mov(_field(ctx, L.TAG_LO), tag_lo)
    a.mov(_field(ctx, L.TAG_HI), tag_hi)
    a.mov(_field(ctx, L.FILL_START), Imm(0))
    a.mov(_field(ctx, L.FILL_COUNT), Imm(0))
    a.jmp(window_ok)
