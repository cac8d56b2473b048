"""Which FACE table entries of a CTR context are filled: one run of in15 values (AArch64).

The same run as the x86-64 kernels keep (kernels/face_fill.py has the whole story):
entries FILL_START .. FILL_START + FILL_COUNT - 1 (mod 256) are filled for the table's tag, a
complete table is FILL_START = 0, FILL_COUNT = 256; a batch inside the run starts from its
entries, any other batch fills its entries and grows the run (or restarts it at the batch);
a new tag empties the run, and only the first fill batch under a new tag stores its entries,
all of them once a batch overlaps the run again (FILL_BUDGET). Every value here is public.
"""
from __future__ import annotations

from ...dsl.builder import KernelBuilder
from ...dsl.operands import XZR, Imm, Label, Mem, Reg
from .. import ctx_layout as L
from ..face_fill import UNLIMITED


def _m(base: Reg, disp: int, width: int = 64) -> Mem:
    return Mem(width, base=base, disp=disp)


def _offset_in_run(b: KernelBuilder, ctx: Reg, idx: Reg) -> tuple[Reg, Reg]:
    """(idx - FILL_START) mod 256, and FILL_COUNT."""
    a = b.asm
    start, count, off = b.gp(), b.gp(), b.gp()
    a.ldp(start, count, _m(ctx, L.FILL_START, 128))
    a.sub(off, idx, start)
    b.emit("and", off, off, Imm(255))
    return off, count


def jump_unless_complete(b: KernelBuilder, ctx: Reg, fill: Label) -> None:
    """The steady state's check: branch to ``fill`` unless the table is complete. There,
    ``back_if_filled`` sends a batch whose entries are all in the run back to its fast path."""
    count = b.gp()
    b.asm.ldr(count, _m(ctx, L.FILL_COUNT))
    b.asm.cmp(count, Imm(256))
    b.asm.b_ne(fill)


def back_if_filled(b: KernelBuilder, ctx: Reg, idx: Reg, blocks: int, fast: Label) -> None:
    """Branch to ``fast`` when in15 = idx .. idx + blocks - 1 all lie in the run; else fall
    through to the fill. A batch that overlaps the run lifts the fill budget (the tag seen
    again; kernels/face_fill.py has the arithmetic)."""
    a = b.asm
    off, count = _offset_in_run(b, ctx, idx)
    e, limit = b.gp(), b.gp()
    outside = b.label("outside_run")
    a.add(e, off, Imm(blocks))
    b.emit("and", e, e, Imm(255))
    a.sub(e, e, Imm(1))                      # e - 1, huge when e = 0
    a.add(limit, count, Imm(blocks - 1))
    a.cmp(e, limit)
    a.b_hs(outside)
    budget = b.gp()                          # the batch overlaps the run: the tag seen again
    a.movz(budget, Imm(UNLIMITED), Imm(0))
    a.str(budget, _m(ctx, L.FILL_BUDGET))
    a.add(off, off, Imm(blocks))
    a.cmp(off, count)
    a.b_ls(fast)
    b.bind(outside)


def fill_allowed(b: KernelBuilder, ctx: Reg, full: Label) -> None:
    """Before a fill batch: branch to ``full`` (compute in full, store nothing) when the
    budget, counted in fill batches, is spent; else take one batch from it."""
    a = b.asm
    budget = b.gp()
    a.ldr(budget, _m(ctx, L.FILL_BUDGET))
    a.cbz(budget, full)
    a.sub(budget, budget, Imm(1))
    a.str(budget, _m(ctx, L.FILL_BUDGET))


def record_filled(b: KernelBuilder, ctx: Reg, idx: Reg, blocks: int) -> None:
    """After a batch stored the entries of in15 = idx .. idx + blocks - 1: grow the run
    when the batch starts inside it or at its end, else restart it at the batch."""
    a = b.asm
    restart, keep, grown, done = (b.label("run_restart"), b.label("run_keep"),
                                  b.label("run_grown"), b.label("run_done"))
    off, count = _offset_in_run(b, ctx, idx)
    a.cmp(off, count)
    a.b_hi(restart)
    a.add(off, off, Imm(blocks))
    a.cmp(off, count)
    a.b_ls(keep)
    a.mov(count, off)                        # the run now ends at the batch's end
    b.bind(keep)
    a.cmp(count, Imm(256))
    a.b_lo(grown)
    a.mov(count, Imm(256))                   # complete: every in15 from 0
    a.stp(XZR, count, _m(ctx, L.FILL_START, 128))
    a.b(done)
    b.bind(grown)
    a.str(count, _m(ctx, L.FILL_COUNT))
    a.b(done)
    b.bind(restart)
    n = b.gp()
    a.mov(n, Imm(blocks))
    a.stp(idx, n, _m(ctx, L.FILL_START, 128))
    b.bind(done)


def keep_or_empty_table(b: KernelBuilder, ctx: Reg, tag_lo: Reg, tag_hi: Reg,
                        window_ok: Label, first_fill: int) -> None:
    """At a new window: keep the run (branch to window_ok) when the counter's tag (bytes
    0, 5, 10, masked into tag_lo/tag_hi) is the table's; otherwise take the new tag with
    an empty run and a fill budget of ``first_fill`` fill batches, then branch to window_ok."""
    a = b.asm
    restart = b.label("restart")
    old_lo, old_hi, budget = b.gp(), b.gp(), b.gp()
    a.ldp(old_lo, old_hi, _m(ctx, L.TAG_LO, 128))
    a.cmp(tag_lo, old_lo)
    a.b_ne(restart)
    a.cmp(tag_hi, old_hi)
    a.b_eq(window_ok)
    b.bind(restart)
    a.stp(tag_lo, tag_hi, _m(ctx, L.TAG_LO, 128))
    a.stp(XZR, XZR, _m(ctx, L.FILL_START, 128))
    a.movz(budget, Imm(first_fill), Imm(0))
    a.str(budget, _m(ctx, L.FILL_BUDGET))
    a.b(window_ok)
