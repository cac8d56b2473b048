"""Which FACE table entries of a CTR context are filled: one run of in15 values (x86-64).

The entries valid for the table's tag (counter bytes 0, 5, 10) are the run
FILL_START, FILL_START + 1, ..., FILL_START + FILL_COUNT - 1 (mod 256); a complete table is
kept as FILL_START = 0, FILL_COUNT = 256. A batch whose entries all lie in the run starts
from them ("fast"); any other batch computes its rounds in full, stores its entries and
records them: the run grows when the batch starts inside it or at its end, and restarts at
the batch otherwise. So a stream of messages that start at the same in15 fills the run with
its first message and starts from it with its second, whatever their lengths; a new tag
(a counter whose bytes 0, 5, 10 differ, seen when a window is entered) empties the run.

Filling is admitted on second sight: under a new tag, only the first fill batch stores its
entries (FILL_BUDGET counts fill batches) and the others compute in full without storing; the first batch that
overlaps the run (a later message under the same tag, or a long stream coming back to the same
in15 a window later) lifts the budget. So messages under fresh random IVs (a new tag each,
never back at their first in15) pay for one batch of stores, not for a table they never
reuse, while messages that share IV bytes 0, 5, 10 (sequence-number IVs) fill with their
second message what the first left and run from the table after that. (A batch that
merely overlaps the run lifts the budget: the batches of a later window need not line up
with the one batch filled at first sight.)

Every value here is public (in15 and the run come from the counter), so the branches are
too. The CTR contexts (kernels/ctx_layout.py) and the GCM ones (modes/gcm) keep the run in
four u64 fields, named by RunFields; the AArch64 kernels keep the same run
(kernels/a64/face_fill.py).
"""
from __future__ import annotations

from dataclasses import dataclass

from ..dsl.builder import KernelBuilder
from ..dsl.operands import Imm, Label, Mem, Reg
from . import ctx_layout as L
from .ctr_stream import counter_tag


@dataclass(frozen=True)
class RunFields:
    """Context offsets of the run and of the tag it is valid for (u64 each)."""
    tag_lo: int         # counter byte 10, masked (ctr_stream.counter_tag)
    tag_hi: int         # counter bytes 0 and 5, masked
    start: int          # in15 of the first filled entry
    count: int          # filled entries from start on; 256 = complete
    budget: int         # fill batches that may still store (admission on second sight)


CTR_RUN = RunFields(L.TAG_LO, L.TAG_HI, L.FILL_START, L.FILL_COUNT, L.FILL_BUDGET)
# the budget once the tag is seen again: more fill batches than a window (CTR) or a message
# (GCM) ever runs, since 256 contiguous entries complete the table
UNLIMITED = 0xFFFF


def _field(ctx: Reg, offset: int) -> Mem:
    return Mem(64, base=ctx, disp=offset)


def jump_unless_complete(b: KernelBuilder, ctx: Reg, fill: Label,
                         run: RunFields = CTR_RUN) -> None:
    """The steady state's check: jump to ``fill`` unless the table is complete. There,
    ``back_if_filled`` sends a batch whose entries are all in the run back to its fast path."""
    b.asm.cmp(_field(ctx, run.count), Imm(256))
    b.asm.jne(fill)


def _offset_in_run(b: KernelBuilder, ctx: Reg, idx: Reg, run: RunFields) -> Reg:
    """(idx - start) mod 256: where in15 = idx stands counted from the run's start."""
    off = b.gp()
    b.asm.mov(off, idx)
    b.asm.sub(off, _field(ctx, run.start))
    b.emit("and", off, Imm(255))
    return off


def back_if_filled(b: KernelBuilder, ctx: Reg, idx: Reg, blocks: int, fast: Label,
                   run: RunFields = CTR_RUN) -> None:
    """Jump to ``fast`` when the entries of in15 = idx .. idx + blocks - 1 all lie in the
    run: (idx - start) mod 256 + blocks <= count; else fall through to the fill.

    A batch that overlaps the run is the tag seen again (a later message, or a stream back
    at those in15 a window later), and lifts the fill budget. With d = (idx - start) mod
    256 and e = (d + blocks) mod 256, the batch overlaps the run exactly when
    1 <= e <= count + blocks - 1; a batch that continues the run (d = count) does not, so a
    message cannot lift its own budget by filling."""
    a = b.asm
    off = _offset_in_run(b, ctx, idx, run)
    e, limit = b.gp(), b.gp()
    outside = b.label("outside_run")
    a.lea(e, Mem(64, base=off, disp=blocks))
    b.emit("and", e, Imm(255))
    a.sub(e, Imm(1))                              # e - 1, huge when e = 0
    a.mov(limit, _field(ctx, run.count))
    a.add(limit, Imm(blocks - 1))
    a.cmp(e, limit)
    a.jae(outside)
    a.mov(_field(ctx, run.budget), Imm(UNLIMITED))
    a.add(off, Imm(blocks))
    a.cmp(off, _field(ctx, run.count))
    a.jbe(fast)
    b.bind(outside)


def clear_of_run(b: KernelBuilder, ctx: Reg, idx: Reg, blocks: int,
                 run: RunFields = CTR_RUN) -> Reg:
    """For a batch at in15 = idx that does not overlap the run: the last in15 a batch of
    ``blocks`` may start at, going on from idx in this window, and still end before the
    run begins: min(idx + ((start - idx) mod 256), 256) - blocks. Batches up to there can
    skip the run checks (none of them can lift the budget) and the window check."""
    a = b.asm
    last, end = b.gp(), b.gp()
    a.mov(last, _field(ctx, run.start))
    a.sub(last, idx)
    b.emit("and", last, Imm(255))
    a.add(last, idx)
    a.mov(end, Imm(256))
    a.cmp(last, end)
    a.cmova(last, end)
    a.sub(last, Imm(blocks))
    return last


def fill_allowed(b: KernelBuilder, ctx: Reg, full: Label, run: RunFields = CTR_RUN) -> None:
    """Before a fill batch: jump to ``full`` (compute in full, store nothing) when the
    budget, counted in fill batches, is spent; else take one batch from it."""
    b.asm.cmp(_field(ctx, run.budget), Imm(0))
    b.asm.je(full)
    b.asm.sub(_field(ctx, run.budget), Imm(1))


def record_filled(b: KernelBuilder, ctx: Reg, idx: Reg, blocks: int,
                  run: RunFields = CTR_RUN) -> None:
    """After a batch stored the entries of in15 = idx .. idx + blocks - 1: grow the run
    when the batch starts inside it or at its end, else restart it at the batch."""
    a = b.asm
    restart, grown, done = b.label("run_restart"), b.label("run_grown"), b.label("run_done")
    off, count = _offset_in_run(b, ctx, idx, run), b.gp()
    a.mov(count, _field(ctx, run.count))
    a.cmp(off, count)
    a.ja(restart)
    a.add(off, Imm(blocks))
    a.cmp(off, count)
    a.cmova(count, off)                           # the run now ends at the batch's end
    a.cmp(count, Imm(256))
    a.jb(grown)
    a.mov(_field(ctx, run.start), Imm(0))         # complete: every in15 from 0
    a.mov(count, Imm(256))
    b.bind(grown)
    a.mov(_field(ctx, run.count), count)
    a.jmp(done)
    b.bind(restart)
    a.mov(_field(ctx, run.start), idx)
    a.mov(_field(ctx, run.count), Imm(blocks))
    b.bind(done)


def keep_or_empty_table(b: KernelBuilder, ctx: Reg, lo: Reg, hi: Reg, window_ok: Label,
                        first_fill: int, run: RunFields = CTR_RUN) -> None:
    """At a new window or message (counter hi:lo, big-endian halves as numbers): when
    counter bytes 0, 5, 10 match the table's tag, keep the run; otherwise take the new tag
    with an empty run and a fill budget of ``first_fill`` batches (one). Either way
    continue at window_ok. Shared by the CTR vector skeleton, the table kernel and GCM's
    start."""
    a = b.asm
    restart = b.label("restart")
    tag_lo, tag_hi = b.gp(), b.gp()
    counter_tag(b, lo, hi, tag_lo, tag_hi)
    a.cmp(tag_lo, _field(ctx, run.tag_lo))
    a.jne(restart)
    a.cmp(tag_hi, _field(ctx, run.tag_hi))
    a.je(window_ok)
    b.bind(restart)
    a.mov(_field(ctx, run.tag_lo), tag_lo)
    a.mov(_field(ctx, run.tag_hi), tag_hi)
    a.mov(_field(ctx, run.start), Imm(0))
    a.mov(_field(ctx, run.count), Imm(0))
    a.mov(_field(ctx, run.budget), Imm(first_fill))
    a.jmp(window_ok)
