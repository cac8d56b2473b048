"""Which FACE table entries of a context are filled: one run of in15 values, kept the same
way by every counter-mode kernel on both instruction sets (written over the general-purpose
layer, arch/*/scalar.py).

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
five u64 fields, named by RunFields; a kernel holds a FaceRun (its ISA layer and fields) and
calls its methods.
"""
from __future__ import annotations

from dataclasses import dataclass

from ..dsl.builder import KernelBuilder
from ..dsl.operands import Label, Mem, Reg
from . import ctx_layout as L


@dataclass(frozen=True)
class RunFields:
    """Context offsets of the run and of the tag it is valid for (u64 each)."""
    tag_lo: int         # counter byte 10, masked (counter_tag)
    tag_hi: int         # counter bytes 0 and 5, masked
    start: int          # in15 of the first filled entry
    count: int          # filled entries from start on; 256 = complete
    budget: int         # fill batches that may still store (admission on second sight)

    def __post_init__(self) -> None:
        if self.tag_hi != self.tag_lo + 8:
            raise ValueError("the tag's two halves must be one 16-byte pair")


CTR_RUN = RunFields(L.TAG_LO, L.TAG_HI, L.FILL_START, L.FILL_COUNT, L.FILL_BUDGET)
# the budget once the tag is seen again: more fill batches than a window (CTR) or a message
# (GCM) ever runs, since 256 contiguous entries complete the table
UNLIMITED = 0xFFFF
# a new tag's budget: one fill batch (its first), stored by keep_or_empty_table's callers
FIRST_FILL = 1
# the budget after a record saw a new tag without filling (first_record_sight): the next
# record under the tag fills, as does a later long message's first fill batch and one more
RECORD_SEEN = 2


def counter_tag(isa, b: KernelBuilder, lo: Reg, hi: Reg) -> tuple[Reg, Reg]:
    """(tag_lo, tag_hi): the counter's bytes 0, 5 and 10 (hi:lo masked), what the FACE
    tables depend on besides the key."""
    tag_lo, tag_hi = b.gp(), b.gp()
    isa.and_constant(b, tag_lo, lo, L.TAG_LO_MASK)
    isa.and_constant(b, tag_hi, hi, L.TAG_HI_MASK)
    return tag_lo, tag_hi


@dataclass(frozen=True)
class FaceRun:
    """The run's bookkeeping for one kernel: its ISA layer and the fields it keeps the run in.
    Every method branches on public values only (in15 and the run come from the counter)."""
    isa: object
    fields: RunFields = CTR_RUN

    def _f(self, ctx: Reg, offset: int) -> Mem:
        return Mem(64, base=ctx, disp=offset)

    def jump_unless_complete(self, b: KernelBuilder, ctx: Reg, fill: Label) -> None:
        """The steady state's check: jump to ``fill`` unless the table is complete. There,
        ``back_if_filled`` sends a batch whose entries are all in the run back to its fast
        path."""
        self.isa.compare_jump(b, "ne", self._f(ctx, self.fields.count), 256, fill)

    def _offset_in_run(self, b: KernelBuilder, ctx: Reg, idx: Reg) -> Reg:
        """(idx - start) mod 256: where in15 = idx stands counted from the run's start."""
        off = b.gp()
        self.isa.arith(b, "sub", off, idx, self._f(ctx, self.fields.start))
        self.isa.arith(b, "and", off, off, 255)
        return off

    def back_if_filled(self, b: KernelBuilder, ctx: Reg, idx: Reg, blocks: int | Reg,
                       fast: Label) -> None:
        """Jump to ``fast`` when the entries of in15 = idx .. idx + blocks - 1 all lie in
        the run: (idx - start) mod 256 + blocks <= count; else fall through to the fill.

        A batch that overlaps the run is the tag seen again (a later message, or a stream
        back at those in15 a window later), and lifts the fill budget. With
        d = (idx - start) mod 256 and e = (d + blocks) mod 256, the batch overlaps the run
        exactly when 1 <= e <= count + blocks - 1; a batch that continues the run
        (d = count) does not, so a message cannot lift its own budget by filling."""
        isa, f = self.isa, self.fields
        off = self._offset_in_run(b, ctx, idx)
        e, limit = b.gp(), b.gp()
        outside = b.label("outside_run")
        isa.arith(b, "add", e, off, blocks)
        isa.arith(b, "and", e, e, 255)
        isa.arith(b, "sub", e, e, 1)                     # e - 1, huge when e = 0
        isa.load(b, limit, self._f(ctx, f.count))
        if isinstance(blocks, int):
            isa.arith(b, "add", limit, limit, blocks - 1)
        else:                                            # a record's blocks (public)
            isa.arith(b, "add", limit, limit, blocks)
            isa.arith(b, "sub", limit, limit, 1)
        isa.compare_jump(b, "ae", e, limit, outside)
        isa.store_imm(b, self._f(ctx, f.budget), UNLIMITED)
        isa.arith(b, "add", off, off, blocks)
        isa.compare_jump(b, "be", off, self._f(ctx, f.count), fast)
        b.bind(outside)

    def bytes_until_run(self, b: KernelBuilder, ctx: Reg, idx: Reg) -> Reg:
        """For a batch at in15 = idx that does not overlap the run: how many bytes the
        counter goes on before its in15 is back at the run's start, 16 x (((start - idx - 1)
        mod 256) + 1), 16..4096 and across windows. None of those blocks can lift the
        budget, so they need no run check."""
        isa, cap = self.isa, b.gp()
        isa.load(b, cap, self._f(ctx, self.fields.start))
        isa.arith(b, "sub", cap, cap, idx)
        isa.arith(b, "sub", cap, cap, 1)
        isa.arith(b, "and", cap, cap, 255)
        isa.arith(b, "add", cap, cap, 1)
        isa.shift_left(b, cap, cap, 4)
        return cap

    def clear_of_run(self, b: KernelBuilder, ctx: Reg, idx: Reg, blocks: int) -> Reg:
        """For a batch at in15 = idx that does not overlap the run: the last in15 a batch of
        ``blocks`` may start at, going on from idx in this window, and still end before the
        run begins: min(idx + ((start - idx) mod 256), 256) - blocks. Batches up to there
        can skip the run checks (none of them can lift the budget) and the window check."""
        isa, last = self.isa, b.gp()
        isa.load(b, last, self._f(ctx, self.fields.start))
        isa.arith(b, "sub", last, last, idx)
        isa.arith(b, "and", last, last, 255)
        isa.arith(b, "add", last, last, idx)
        isa.unsigned_min(b, last, 256)
        isa.arith(b, "sub", last, last, blocks)
        return last

    def first_record_sight(self, b: KernelBuilder, ctx: Reg, full: Label) -> None:
        """Before a record's fill (a one-shot message filled as one batch): a record is a
        whole message, so filling it at the first sight of its tag would pay for entries
        that fresh nonces never read. When the run is empty and the budget is a new tag's
        (FIRST_FILL), this record sees the tag first: the budget becomes RECORD_SEEN (the
        next record under the tag fills) and the record goes to ``full``."""
        isa, f = self.isa, self.fields
        later = b.label("seen_before")
        isa.compare_jump(b, "ne", self._f(ctx, f.count), 0, later)
        isa.compare_jump(b, "ne", self._f(ctx, f.budget), FIRST_FILL, later)
        isa.store_imm(b, self._f(ctx, f.budget), RECORD_SEEN)
        isa.jump(b, full)
        b.bind(later)

    def fill_allowed(self, b: KernelBuilder, ctx: Reg, full: Label) -> None:
        """Before a fill batch: jump to ``full`` (compute in full, store nothing) when the
        budget, counted in fill batches, is spent; else take one batch from it."""
        self.isa.take_one(b, self._f(ctx, self.fields.budget), full)

    def record_filled(self, b: KernelBuilder, ctx: Reg, idx: Reg, blocks: int | Reg) -> None:
        """After a batch stored the entries of in15 = idx .. idx + blocks - 1: grow the run
        when the batch starts inside it or at its end, else restart it at the batch."""
        isa, f = self.isa, self.fields
        restart, grown, done = b.label("run_restart"), b.label("run_grown"), b.label("run_done")
        off, count = self._offset_in_run(b, ctx, idx), b.gp()
        isa.load(b, count, self._f(ctx, f.count))
        isa.compare_jump(b, "a", off, count, restart)
        isa.arith(b, "add", off, off, blocks)
        isa.unsigned_max(b, count, off)                  # the run now ends at the batch's end
        isa.compare_jump(b, "b", count, 256, grown)
        isa.store_imm(b, self._f(ctx, f.start), 0)       # complete: every in15 from 0
        isa.move(b, count, 256)
        b.bind(grown)
        isa.store(b, self._f(ctx, f.count), count)
        isa.jump(b, done)
        b.bind(restart)
        isa.store(b, self._f(ctx, f.start), idx)
        if isinstance(blocks, int):
            isa.store_imm(b, self._f(ctx, f.count), blocks)
        else:
            isa.store(b, self._f(ctx, f.count), blocks)
        b.bind(done)

    def keep_or_empty_table(self, b: KernelBuilder, ctx: Reg, lo: Reg, hi: Reg,
                            window_ok: Label, first_fill: int,
                            new_tag: Label | None = None) -> None:
        """At a new window or message (counter hi:lo, big-endian halves as numbers): when
        counter bytes 0, 5, 10 match the table's tag, keep the run; otherwise take the new
        tag with an empty run and a fill budget of ``first_fill`` batches (one). Either way
        continue at window_ok, or after a new tag at ``new_tag`` when given."""
        isa, f = self.isa, self.fields
        restart = b.label("restart")
        tag_lo, tag_hi = counter_tag(isa, b, lo, hi)
        isa.jump_by_pair(b, tag_lo, tag_hi, ctx, f.tag_lo, window_ok, restart)
        b.bind(restart)
        isa.store_pair(b, ctx, f.tag_lo, tag_lo, tag_hi)
        isa.store_imm(b, self._f(ctx, f.start), 0)
        isa.store_imm(b, self._f(ctx, f.count), 0)
        isa.store_imm(b, self._f(ctx, f.budget), first_fill)
        isa.jump(b, new_tag or window_ok)
