"""The CTR batch loop of engines whose batch may start at any block (the ladder strategy),
written once for x86-64 and AArch64 over the general-purpose layer (arch/*/scalar.py).

A batch of m registers (m x lanes blocks) runs only while byte 15 of the counter (in15) does
not wrap inside it, so block j of the batch is the batch's first counter plus j in byte 15
and the FACE window (the 256 blocks sharing bytes 0..14) is the same for the whole batch.
Near a window's end, or a message's, smaller batches (the ladder: halves of the interleave)
and then single blocks finish; a partial last block is a single block whose keystream stays
in the context. The engines that must compute whole aligned groups (bit-sliced) declare
``grouped_batches`` and run kernels/grouped_ctr.py instead.

FACE (kernels/face_fill.py): a batch whose table entries are all filled starts from them
("fast"); otherwise it computes in full and stores its entries ("fill"), while the fill
budget lasts; once it is spent ("spent": a tag seen once), the batches go to a copy of
none's ladder (the plain ladder) until the counter is back at the run of filled entries,
across windows, so a message under a fresh IV pays for its first batch's stores and for
nothing after it.

The kernel ``k`` supplies (besides what modes/ctr/skeleton.py asks):
  k.lanes, k.smallest_batch     blocks a register; the smallest ladder step (registers)
  k.aligned_batches             whether its batches have an "aligned" form (round 0 as one
                                XOR a register when in15 is a multiple of the batch)
  k.open_stream(b, bits, ctx, out, inp, length) -> Stream    counter, round keys, labels
  k.batch(b, bits, s, m, mode, then=None, single=False)      one batch; mode is full, fast,
                                fill or aligned; it jumps to ``then`` (default s.top)
  k.refresh(b, s, bits, window_ok)                            a new window's caches
"""
from __future__ import annotations

from dataclasses import dataclass, replace

from ...dsl.builder import KernelBuilder
from ...dsl.operands import Label, Reg
from ...kernels import ctx_layout as L
from .skeleton import keep_counter


@dataclass
class Stream:
    """The registers one key size's loop works with."""
    ctx: Reg
    out: Reg
    inp: Reg
    length: Reg
    lo: Reg          # counter bytes 8..15 as a number
    hi: Reg          # counter bytes 0..7
    idx: Reg         # in15 of the next block
    end: Label       # store the counter and return
    top: Label       # next batch
    keys: object     # the engine's round-key access for this key size
    one: Reg | None = None   # AArch64: a vector with 1 in byte 15 (steps a counter block)


def batch_ladder(interleave: int, smallest: int) -> list[int]:
    """Register counts a batch may use, largest first: the full interleave, then halves down
    to ``smallest``, for when the window's end or the message's end leaves less than a full
    batch (a message under a fresh IV starts anywhere in a window). Single blocks take what
    is left."""
    sizes, m = [interleave], interleave // 2
    while m >= smallest:
        sizes.append(m)
        m //= 2
    return sizes


def loop_head(isa, b: KernelBuilder, s: Stream, face: str, refresh: Label | None,
              window_ok: Label | None) -> None:
    """The top of a batch loop: stop at length 0; with FACE, go to ``refresh`` when the
    counter has left the window the caches hold; then idx = in15 of the next block."""
    with b.phase("loop"):
        b.bind(s.top)
        isa.jump_if_zero(b, s.length, s.end)
        if face != "none":
            base = b.gp()
            isa.arith(b, "and", base, s.lo, -256)
            isa.jump_by_pair(b, base, s.hi, s.ctx, L.WINDOW_LO, None, refresh)
        if window_ok is not None:
            b.bind(window_ok)
        isa.low_byte(b, s.idx, s.lo)


def loop_exit(isa, b: KernelBuilder, s: Stream, done: Label) -> None:
    """Where the batch loop ends: keep the counter in the context for the next call."""
    b.bind(s.end)
    keep_counter(isa, b, s.ctx, s.lo, s.hi, done)


def stream_body(k, b: KernelBuilder, bits: int, ctx: Reg, out: Reg, inp: Reg, length: Reg,
                done: Label) -> None:
    """The loop for one key size: batches, single blocks, the partial tail, FACE refresh;
    with FACE, also the plain ladder a spent tag runs on (``_plain_ladder``)."""
    isa, face = k.isa, k.spec.face
    s = k.open_stream(b, bits, ctx, out, inp, length)
    window_ok, refresh = b.label(f"window_ok{bits}"), b.label(f"refresh{bits}")
    plain = b.label(f"plain{bits}") if face != "none" else None

    with b.region(f"steady-{bits}"):
        loop_head(isa, b, s, face, refresh, window_ok)
    _ladder(k, b, bits, s, face, plain)
    if face != "none":
        _plain_ladder(k, b, bits, s, plain)

    loop_exit(isa, b, s, done)
    if face != "none":
        with b.region(f"refresh-{bits}"), b.phase("refresh"):
            b.bind(refresh)
            k.refresh(b, s, bits, window_ok)


def _ladder(k, b: KernelBuilder, bits: int, s: Stream, face: str, spent: Label | None,
            prefix: str = "") -> None:
    """The batch ladder after the loop head. At level none every batch is computed in
    full (aligned when it can be). With FACE, a batch whose entries are all filled runs
    fast, another fills while the budget lasts, and a spent tag goes to ``spent`` (the
    plain ladder, which is this ladder at level none, its labels and regions ``prefix``ed)."""
    isa, ctx = k.isa, s.ctx
    single = b.label(f"{prefix}single{bits}")
    ladder = batch_ladder(k.spec.interleave, k.smallest_batch)
    tries = [b.label(f"{prefix}try{m}_{bits}") for m in ladder] + [single]
    for n, m in enumerate(ladder):
        blocks = m * k.lanes
        aligned = k.aligned_batches and blocks & (blocks - 1) == 0
        region = f"{prefix}steady-{bits}" if n == 0 else f"{prefix}batch{m}-{bits}"
        fill = b.label(f"fill{m}_{bits}")
        with b.region(region):
            if n > 0:
                b.bind(tries[n])
            unaligned = b.label(f"{prefix}unaligned{m}_{bits}")
            with b.phase("loop"):
                isa.compare_jump(b, "b", s.length, 16 * blocks, tries[n + 1])
                isa.compare_jump(b, "a", s.idx, 256 - blocks, tries[n + 1])
                if face != "none":
                    k.run.jump_unless_complete(b, ctx, fill)
                elif aligned:
                    isa.jump_if_any_bits(b, s.idx, blocks - 1, unaligned)
            fast = b.label(f"{prefix}fast{m}_{bits}")
            b.bind(fast)
            k.batch(b, bits, s, m, "fast" if face != "none" else
                    ("aligned" if aligned else "full"))
        if face == "none" and aligned:
            with b.region(f"{prefix}unaligned{m}-{bits}"):
                b.bind(unaligned)
                k.batch(b, bits, s, m, "full")
        if face != "none":
            with b.region(f"fill{m}-{bits}"):
                b.bind(fill)
                k.run.back_if_filled(b, ctx, s.idx, blocks, fast)
                k.run.fill_allowed(b, ctx, spent)
                k.batch(b, bits, s, m, "fill")
    _single_paths(k, b, bits, s, face, single, spent, prefix)


def _plain_ladder(k, b: KernelBuilder, bits: int, s: Stream, enter: Label) -> None:
    """A spent tag (seen once, its one fill batch stored): the blocks ahead cannot lift the
    budget until the counter is back at the run, (start - idx) mod 256 blocks on (256 when
    idx is the start), whatever windows it crosses. They run on a copy of none's ladder,
    with no window check, no cache refresh and no table check, so a message under a fresh
    IV walks the same code as at level none after its first batch. The length is cut to
    those blocks for the copy (the rest waits in a register) and given back at its end,
    where the FACE loop's top takes over."""
    isa, ctx = k.isa, s.ctx
    top, end = b.label(f"plain_top{bits}"), b.label(f"plain_end{bits}")
    plain = replace(s, top=top, end=end)
    with b.region(f"plain-{bits}"):
        b.bind(enter)
        with b.phase("loop"):
            cap, rest = k.run.bytes_until_run(b, ctx, s.idx), b.gp()
            isa.unsigned_min(b, cap, s.length)
            isa.arith(b, "sub", rest, s.length, cap)
            isa.move(b, s.length, cap)
        loop_head(isa, b, plain, "none", None, None)
    _ladder(k, b, bits, plain, "none", None, "plain_")
    with b.region(f"plain-{bits}"):
        b.bind(end)
        with b.phase("loop"):
            isa.move(b, s.length, rest)
            isa.jump(b, s.top)


def _single_paths(k, b: KernelBuilder, bits: int, s: Stream, face: str, single: Label,
                  spent: Label | None, prefix: str) -> None:
    """Single blocks: what a window's or message's end leaves after the batch ladder."""
    ctx = s.ctx
    with b.region(f"{prefix}single-{bits}"):
        b.bind(single)
        if face == "none":
            k.batch(b, bits, s, 1, "full", single=True)
        else:
            single_fill, fast = b.label(f"single_fill{bits}"), b.label(f"single_fast{bits}")
            k.run.jump_unless_complete(b, ctx, single_fill)
            b.bind(fast)
            k.batch(b, bits, s, 1, "fast", single=True)
    if face != "none":
        with b.region(f"single_fill-{bits}"):
            b.bind(single_fill)
            k.run.back_if_filled(b, ctx, s.idx, 1, fast)
            k.run.fill_allowed(b, ctx, spent)
            k.batch(b, bits, s, 1, "fill", single=True)
