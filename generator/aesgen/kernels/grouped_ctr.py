"""The CTR loop for engines whose batch is one aligned group of blocks (the bit-sliced engine).

A bit-sliced batch costs the same however few of its blocks are used (the transposes and
every round work on all 8 registers), so here a batch is always a *group*: the B = 8 x lanes
blocks whose in15 runs g .. g+B-1 with g a multiple of B. Groups never straddle a FACE window
(256 is a multiple of B), the counter inside a group never carries out of byte 15, and
adding j < B to in15 equals XOR-ing j, so round 0 is one XOR a register on the group's first
counter (the "aligned" batch of ctr_kernel).

Where a message starts inside a group (a previous call ended mid-group, or set_iv), or ends
before one is complete, the whole group is computed, its keystream goes to a buffer in the
context, and the blocks from in15's offset in the group on are used; a partial last block
keeps its keystream in KEYSTREAM for the next call, as in every kernel.

FACE in slice form (seed 000, section 5: the transformation to bit-slice form is part of
what its bit-sliced FACE caches). A table entry is a whole group, already transposed: the
slices of s_f(block) ^ C_f for the group's B blocks (f = 1 or 2, C_f the window's cache in
every block), the entries of in15 = g .. g+B-1 at the same address that held in15 = g's
16-byte entry (16 x in15, so the table keeps its 4 KiB at every width; r1's entries become
16 bytes a block too). The cache is kept in slice form as well (C_f in every block,
transposed once per window). A batch on a complete table is then 8 loads and 8 XORs and
rounds f+1..Nr: no transpose into slices, no counter, no rounds 0..f. Until the table is
filled, a group computes rounds 0..Nr in full and stores its entry: a byte a group records
that it is filled (validity is per group: a group whose entry is filled starts from it), and
FILL_COUNT counts the filled groups' blocks (256 = complete).
The tables depend on the key and counter bytes 0, 5, 10 only (the tag); a window whose tag
differs starts the table again.
"""
from __future__ import annotations

from ..dsl.builder import KernelBuilder
from ..dsl.operands import Imm, Label, Mem, Reg
from . import ctx_layout as L
from ..modes.ctr.batch_loop import Stream, loop_exit, loop_head
from .ctr_stream import counter_in_every_lane, mem, open_stream, spread_blocks
from .face_fill import counter_tag
from .spec import FACE_ROUNDS, ROUNDS
from .vector_ops import VectorOps


def group_blocks(k) -> int:
    """Blocks a batch (group) holds: 8 registers of ``lanes`` blocks."""
    return k.spec.interleave * k.spec.lanes


def stream_body(k, b: KernelBuilder, v: VectorOps, bits: int, ctx: Reg, out: Reg, inp: Reg,
                length: Reg, done: Label) -> None:
    """The loop for one key size: groups, the head and tail of a message, FACE refresh."""
    face = k.spec.face
    s = open_stream(k, b, v, bits, ctx, out, inp, length)
    window_ok, refresh = b.label(f"window_ok{bits}"), b.label(f"refresh{bits}")
    fill, consume = b.label(f"fill{bits}"), b.label(f"consume{bits}")

    with b.region(f"steady-{bits}"):
        loop_head(k.isa, b, s, face, refresh, window_ok)
        with b.phase("loop"):
            if face != "none":
                k.run.jump_unless_complete(b, ctx, fill)
        if face != "none":
            fast = b.label(f"fast{bits}")
            b.bind(fast)
        keystream = _group(k, b, v, bits, s, "fast" if face != "none" else "full")
        _use(k, b, v, s, keystream, consume, bits)
    if face != "none":
        with b.region(f"fill-{bits}"):
            b.bind(fill)
            b.asm.cmp(_group_flag(k, b, s), Imm(0))    # validity is per group: this
            b.asm.jne(fast)                            # group's entry may be filled
            keystream = _group(k, b, v, bits, s, "fill")
            _use(k, b, v, s, keystream, consume, bits)
    with b.region(f"tail-{bits}"), b.phase("tail"):
        b.bind(consume)
        _consume(k, b, v, s)
    loop_exit(k.isa, b, s, done)
    if face != "none":
        with b.region(f"refresh-{bits}"), b.phase("refresh"):
            b.bind(refresh)
            _refresh(k, b, v, s, bits, window_ok)


def _group(k, b: KernelBuilder, v: VectorOps, bits: int, s: Stream, mode: str) -> list[Reg]:
    """The keystream of the group holding in15 = idx, in 8 registers (byte order).

    mode "full": rounds 0..Nr; "fill": the same, storing the group's FACE entry after round
    f; "fast": rounds f+1..Nr from the table entry and the sliced cache.
    """
    a, eng, nr = b.asm, k.engine, ROUNDS[bits]
    width, n_regs = k.spec.width, k.spec.interleave
    wb = width // 8
    skip = FACE_ROUNDS[k.spec.face]
    blocks = group_blocks(k)
    if mode != "full":
        first = b.gp()                       # in15 of the group's first block
        with b.phase("counter"):
            a.mov(first, s.idx)
            b.emit("and", first, Imm(-blocks))
    if mode == "fast":
        with b.phase("counter"):                 # the entry's address: public (in15)
            entry = _entry_address(k, b, s, first)
        with b.phase("rounds_0_2"):
            slices = []
            for i in range(n_regs):
                x = b.vec(width)
                v.load(x, mem(width, entry, wb * i), aligned=False)
                v.xor(x, x, eng.sliced_cache(eng.area(k, s.ctx), i, width))   # 64-aligned
                slices.append(x)
        slices = eng.slice_rounds(eng.area(k, s.ctx), b, v, slices, skip + 1, nr, nr)
        return eng.from_slices(b, v, slices, nr, nr, n_regs)
    with b.phase("counter"):
        g_lo = b.gp()
        a.mov(g_lo, s.lo)
        b.emit("and", g_lo, Imm(-blocks))
        base = counter_in_every_lane(k, b, v, g_lo, s.hi, width)
    with b.phase("rounds_0_2"):
        keyed = b.vec(width)
        v.xor(keyed, base, s.keys.get(b, v, 0, width))      # round 0 once a group
        regs = [b.vec(width) for _ in range(n_regs)]
        spread_blocks(b, v, regs, keyed, v.xor)       # offsets < B: XOR equals add
    slices = eng.to_slices(b, v, regs, 0, nr)
    if mode == "fill":
        slices = eng.slice_rounds(eng.area(k, s.ctx), b, v, slices, 1, skip, nr)
        with b.phase("table_fill"):
            _store_entry(k, b, v, s, slices, first)
        slices = eng.slice_rounds(eng.area(k, s.ctx), b, v, slices, skip + 1, nr, nr)
    else:
        slices = eng.slice_rounds(eng.area(k, s.ctx), b, v, slices, 1, nr, nr)
    return eng.from_slices(b, v, slices, nr, nr, n_regs)


def _group_flag(k, b: KernelBuilder, s: Stream, first: Reg | None = None) -> Mem:
    """The byte recording that the group holding in15 = idx (or starting at ``first``)
    has its entry filled."""
    group = b.gp()
    b.asm.mov(group, s.idx if first is None else first)
    b.asm.shr(group, Imm(group_blocks(k).bit_length() - 1))
    return mem(8, s.ctx, k.layout.offset("GROUP_FLAGS"), index=group)


def _entry_address(k, b: KernelBuilder, s: Stream, first: Reg) -> Reg:
    """Address of the FACE entry of the group starting at in15 = ``first``: 16 bytes a
    block into the rd1+ or rd2+ table."""
    entry = b.gp()
    b.asm.mov(entry, first)
    b.asm.shl(entry, Imm(4))
    table = k.layout.table_r1 if k.spec.face == "r1" else k.layout.table_r2
    b.asm.lea(entry, mem(8, s.ctx, table, index=entry))
    return entry


def _store_entry(k, b: KernelBuilder, v: VectorOps, s: Stream, slices: list[Reg],
                 first: Reg) -> None:
    """Store the group's FACE entry (slices ^ sliced cache) and count the group as filled
    the first time."""
    a, eng = b.asm, k.engine
    width = slices[0].width
    wb = width // 8
    entry = _entry_address(k, b, s, first)
    e = b.vec(width)
    for i, x in enumerate(slices):
        v.xor(e, x, eng.sliced_cache(eng.area(k, s.ctx), i, width))
        v.store(mem(width, entry, wb * i), e, aligned=False)
    flag = _group_flag(k, b, s, first)
    counted = b.label("group_counted")
    a.cmp(flag, Imm(0))
    a.jne(counted)
    a.mov(flag, Imm(1))
    a.add(mem(64, s.ctx, L.FILL_COUNT), Imm(group_blocks(k)))
    b.bind(counted)


def _use(k, b: KernelBuilder, v: VectorOps, s: Stream, keystream: list[Reg], consume: Label,
         bits: int) -> None:
    """A whole group at the start of a group: XOR it into the message here. Otherwise (a
    head or a tail) leave the keystream in the context's buffer for _consume."""
    a = b.asm
    blocks = group_blocks(k)
    wb = keystream[0].width // 8
    partial = b.label(f"partial{bits}")
    with b.phase("loop"):
        a.test(s.idx, Imm(blocks - 1))
        a.jne(partial)
        a.cmp(s.length, Imm(16 * blocks))
        a.jb(partial)
    with b.phase("load_xor_store"):
        for i, x in enumerate(keystream):
            v.xor(x, x, mem(x.width, s.inp, wb * i), unaligned=True)
            v.store(mem(x.width, s.out, wb * i), x, aligned=False)
    with b.phase("loop"):
        k.spec.counter_policy.count_up(k.isa, b, s.lo, s.hi, blocks)
        a.add(s.inp, Imm(16 * blocks))
        a.add(s.out, Imm(16 * blocks))
        a.sub(s.length, Imm(16 * blocks))
        a.jmp(s.top)
    with b.region(f"tail-{bits}"), b.phase("tail"):
        b.bind(partial)
        buffer = k.layout.extra + k.engine.keystream_buffer()
        for i, x in enumerate(keystream):
            v.store(mem(x.width, s.ctx, buffer + wb * i), x, aligned=False)
        a.jmp(consume)


def _consume(k, b: KernelBuilder, v: VectorOps, s: Stream) -> None:
    """Use the buffered keystream from block idx % B on: as many bytes as the group and the
    message hold. Whole blocks are XORed 16 bytes at a time; a last partial block keeps
    its keystream in KEYSTREAM for the next call."""
    a, ctx = b.asm, s.ctx
    buffer = k.layout.extra + k.engine.keystream_buffer()
    blocks = group_blocks(k)
    ks, n, j, t = b.gp(), b.gp(), b.gp(), b.gp()
    a.mov(t, s.idx)
    b.emit("and", t, Imm(blocks - 1))
    a.shl(t, Imm(4))                       # bytes of the group before this block
    a.lea(ks, mem(8, ctx, buffer, index=t))
    a.mov(n, Imm(16 * blocks))
    a.sub(n, t)                            # bytes left in the group
    keep = b.label("consume_n")
    a.cmp(s.length, n)
    a.jae(keep)
    a.mov(n, s.length)
    b.bind(keep)
    a.xor(j.w32, j.w32)
    whole, part, used = b.label("consume_whole"), b.label("consume_part"), b.label("consume_used")
    b.bind(whole)
    a.lea(t, mem(8, j, 16))
    a.cmp(t, n)
    a.ja(part)
    x = b.xmm()
    v.load(x, mem(128, ks, 0, index=j), aligned=False)
    v.xor(x, x, mem(128, s.inp, index=j), unaligned=True)
    v.store(mem(128, s.out, index=j), x, aligned=False)
    a.mov(j, t)
    a.jmp(whole)
    b.bind(part)
    a.cmp(j, n)
    a.je(used)
    tb, loop = b.gp(), b.label("consume_byte")
    a.mov(t, j)
    b.bind(loop)
    a.movzx(tb.w32, mem(8, ks, 0, index=t))
    a.xor(tb.w8, mem(8, s.inp, index=t))
    a.mov(mem(8, s.out, index=t), tb.w8)
    a.inc(t)
    a.cmp(t, n)
    a.jb(loop)
    rest = b.xmm()
    v.load(rest, mem(128, ks, 0, index=j), aligned=False)
    v.store(mem(128, ctx, L.KEYSTREAM), rest)
    a.add(j, Imm(16))
    a.mov(t, j)
    a.sub(t, n)
    a.mov(mem(64, ctx, L.KEYSTREAM_LEFT), t)
    b.bind(used)
    a.shr(j, Imm(4))                       # blocks used
    k.spec.counter_policy.count_up(k.isa, b, s.lo, s.hi, j)
    a.add(s.inp, n)
    a.add(s.out, n)
    a.sub(s.length, n)
    a.jmp(s.top)


def _refresh(k, b: KernelBuilder, v: VectorOps, s: Stream, bits: int,
             window_ok: Label) -> None:
    """A new window: the cache C_f (byte order and sliced); keep the table when the tag
    (counter bytes 0, 5, 10) is the one it was built for, else start it again."""
    a, face, ctx, lo, hi = b.asm, k.spec.face, s.ctx, s.lo, s.hi
    nr, skip = ROUNDS[bits], FACE_ROUNDS[face]
    base = b.gp()
    a.mov(base, lo)
    b.emit("and", base, Imm(-256))
    x = k.counter_block(b, v, base, hi)
    x = (k.engine.rounds(k, b, s.keys, [x], 0, skip, nr) or [x])[0]
    v.store(mem(128, ctx, L.CACHE_R1 if face == "r1" else L.CACHE_R2), x)
    k.engine.store_sliced_cache(k, b, v, ctx, x, skip, nr)
    a.mov(mem(64, ctx, L.WINDOW_LO), base)
    a.mov(mem(64, ctx, L.WINDOW_HI), hi)
    tag_lo, tag_hi = counter_tag(k.isa, b, lo, hi)
    restart = b.label("restart")
    a.cmp(tag_lo, mem(64, ctx, L.TAG_LO))
    a.jne(restart)
    a.cmp(tag_hi, mem(64, ctx, L.TAG_HI))
    a.je(window_ok)
    b.bind(restart)
    a.mov(mem(64, ctx, L.TAG_LO), tag_lo)
    a.mov(mem(64, ctx, L.TAG_HI), tag_hi)
    a.mov(mem(64, ctx, L.FILL_COUNT), Imm(0))
    flags = k.layout.offset("GROUP_FLAGS")
    for off in range(0, 256 // group_blocks(k), 8):
        a.mov(mem(64, ctx, flags + off), Imm(0))
    a.jmp(window_ok)
