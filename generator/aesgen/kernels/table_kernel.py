"""Table-based AES-CTR: scalar x86-64 T-table AES (seed 000's table baseline), FACE none/r1/r2.

NOT CONSTANT TIME. Every round indexes the T-tables with bytes of the secret state, so which
cache lines (and banks) are touched depends on the key and the keystream: a process sharing
the cache can learn the key (Bernstein 2005; Osvik, Shamir, Tromer 2006). The method exists
as the paper's baseline and for CPUs where timing side channels do not matter; every
generated kernel says so (constant_time 0, a warning in aesgen.h and the manifest).

Only baseline x86-64 general-purpose instructions: no SSE at all (features: none).

State: four 32-bit column words s0..s3 in general-purpose registers, little-endian, so byte r
of word c is state row r, column c (FIPS-197 byte 4c+r) and a 32-bit load of a column from a
round key or a FACE cache is the word itself. One round, output column c:

    t_c = Te0[b0(s_c)] ^ Te1[b1(s_c+1)] ^ Te2[b2(s_c+2)] ^ Te3[b3(s_c+3)] ^ rk_c

(ShiftRows in the choice of words, SubBytes and MixColumns in the tables: Te0[x] holds the
column (2S, S, S, 3S)[x], Te1..Te3 its byte rotations). The last round uses four tables
Te4_r[x] = S[x] << 8r, so it is 16 lookups like the others and needs no masks. The round walks
the input words: byte r of s_j (movzx of the low byte, then shr 8) feeds output column j - r,
so a word dies as its last byte is used and at most 8 state registers are live. A round is
44 instructions: 12 movzx + 12 shr (byte extraction, the fourth byte is the shifted word
itself), 4 table loads + 12 table loads folded into XOR, 4 round-key XORs from the context.
The 8 KiB of tables live in .rodata, built from aesgen.model.aes (SBOX, gf_mul).

Registers (no spilling in this generator): the loop keeps ctx, the table base, in, out-in,
the length and the low counter half in registers; the high half lives in the context
(`adc` to memory when the low half carries). 14 of the 15 allocatable registers at the
peak. One block at a time (two would need 16 state registers).

Counter, windows, FACE state and semantics are those of ctr_kernel.py, on the same context
layout (ctx_layout.py, 4-byte rd1+ entries): rd1 cache C1 = s_1(base), rd2 cache C2 = s_2(base),
rd1+ table T1[v] = column 0 of s_1(base|v) ^ C1, rd2+ table T2[v] = s_2(base|v) ^ C2, filled
while encrypting (a block whose entry is outside the run of filled entries is computed in full
and stores its entry, kernels/face_fill.py),
tagged by counter bytes 0, 5, 10 so set_iv keeps them while those bytes hold. With r1 a block
starts at round 2 from C1 ^ T1[in15] (only column 0 differs: 1 load + 1 XOR, the other three
columns are read byte by byte from C1 by round 2 itself); with r2 a block starts at round 3
from C2 ^ T2[in15]: 4 loads + 4 XORs. The window is checked in full once per call and then
only when in15 wraps to 0 (the only point where counter bytes 0..14 change).

Instruction counts of the steady-state loop, per 16-byte block (`aesgen stats`; AES-192 and
AES-256 add 88 and 176 in rounds 3..Nr):

    AES-128  counter  rounds 0-2  rounds 3-10  load/xor/store  loop  total
    none           8          90          352               8     9    467
    r1             1          40          352               8    13    414
    r2             2           8          352               8    13    383

none builds the counter block (load CTR_HI, 2 bswap, split into 4 words: 8), does round 0 as
two 64-bit XORs and rounds 1-2 (88). r1 takes s_1 column 0 from C1 ^ T1[in15] (2) and does
round 2 (38: columns 1..3 are read byte by byte from C1, no shifts). r2 takes s_2 from
C2 ^ T2[in15]: in15 scaled by 16 (2, counted as counter) and 4 loads + 4 XORs (8). So up to
round 2 r2 needs 10 instructions against none's 98; seed 000 (section 5.1) counts 12 for its
table-based FACE against 128 for OpenSSL's table code. The loop's extra 4 at r1/r2: the window
test on in15 == 0 and the table-complete test. The window refresh (the full window check, the
caches, the table tag) is 93 (r1) and 137 (r2) instructions once per 256 blocks, about 0.4 and
0.5 a block. Speed (TSC ticks/byte, AES-128, 4096-byte streaming, medians of 9, on the
shared 2-core VM this was built on): none 7.6, r1 7.1, r2 6.0 in the quietest run; r2 ran
1.17x-1.31x as fast as none over 13 runs under load, median 1.25x (seed 000 reports 15-20%
for its table-based FACE; the instruction counts give 467/383 = 1.22).
"""
from __future__ import annotations

from ..arch.x86_64.scalar import X86Scalar
from ..passes.abi import calling_convention
from ..dsl.builder import KernelBuilder
from ..dsl.operands import Imm, Label, Mem, Reg, gp
from ..isa.table import load_table
from ..model.aes import SBOX, gf_mul
from ..modes import BuiltKernel
from ..modes.ctr.skeleton import build_entries, keystream_tail
from . import ctx_layout as L
from .face_fill import FIRST_FILL, FaceRun
from .engines import RoundEngine
from .spec import ROUNDS, KernelSpec

NOT_CONSTANT_TIME = ("NOT CONSTANT TIME: table lookups indexed by key-dependent data leak "
                     "through the cache; use only where timing side channels do not matter")

# byte offsets inside the 8 KiB table constant
TE = (0, 1024, 2048, 3072)              # Te0..Te3, the round tables
TE_LAST = (4096, 5120, 6144, 7168)      # Te4_0..Te4_3, the last round's S-box tables

# volatile registers zeroed before returning (state and key words pass through them)
SCRUB = ("ecx", "edx", "esi", "edi", "r8d", "r9d", "r10d", "r11d")


def round_tables() -> bytes:
    """Te0..Te3 then Te4_0..Te4_3, 256 little-endian u32 entries each."""
    out = bytearray()
    for r in range(4):
        for x in range(256):
            s = SBOX[x]
            column = [gf_mul(s, 2), s, s, gf_mul(s, 3)]        # Te0: (2S, S, S, 3S)
            column = column[-r:] + column[:-r] if r else column  # Te_r: rotated down r rows
            out += bytes(column)
    for r in range(4):
        for x in range(256):
            out += (SBOX[x] << (8 * r)).to_bytes(4, "little")
    return bytes(out)


def _m(width: int, base: Reg, disp: int = 0, index: Reg | None = None, scale: int = 1) -> Mem:
    return Mem(width, base=base, index=index, scale=scale, disp=disp)


class TableKernel:
    """Shared state while one table kernel's four functions are built: what the CTR
    skeleton (modes/ctr/skeleton.py) asks of a kernel."""

    def __init__(self, spec: KernelSpec) -> None:
        if spec.method != "table":
            raise ValueError(f"table_kernel builds method table, not {spec.method!r}")
        self.spec = spec
        self.isa = X86Scalar(calling_convention("x86_64", spec.abi))
        self.table = load_table("x86_64")
        self.layout = L.layout_for(spec.face, 4)
        self.run = FaceRun(self.isa)

    def builder(self, entry: str, doc: str) -> KernelBuilder:
        return KernelBuilder(self.table, self.spec.symbol(entry),
                             doc=doc + f"\n{NOT_CONSTANT_TIME}.")

    def zero_context(self, b: KernelBuilder, ctx: Reg) -> None:
        """Store zeros over all ctx_size bytes (a multiple of 64), 64 bytes an iteration,
        from a general-purpose register (the method uses no SSE)."""
        a = b.asm
        z, p, n = b.gp(), b.gp(), b.gp()
        a.xor(z.w32, z.w32)
        a.mov(p, ctx)
        a.mov(n, Imm(self.layout.size // 64))
        loop = b.label("zero")
        b.bind(loop)
        for off in range(0, 64, 8):
            a.mov(_m(64, p, off), z)
        a.add(p, Imm(64))
        a.dec(n)
        a.jne(loop)

    def expand_key(self, b: KernelBuilder, ctx: Reg, key: Reg, bits: int) -> None:
        ScalarKeySchedule(self.spec).expand_key(self, b, ctx, key, bits)

    def stream_body(self, b: KernelBuilder, bits: int, ctx: Reg, out: Reg, inp: Reg,
                    length: Reg, done: Label) -> None:
        delta = out                      # out - in: out is addressed as (in, delta)
        b.asm.sub(delta, inp)
        _stream_body(self, b, bits, ctx, inp, delta, length, done)

    def scrub(self, b: KernelBuilder, entry: str) -> None:
        """Zero the volatile registers a kernel may have left key or keystream words in
        (init keeps its result in eax)."""
        for name in (() if entry == "init" else ("eax",)) + SCRUB:
            b.emit("xor", gp(name), gp(name))


# ====================================================================================
# rounds
# ====================================================================================
Word = Reg | int      # a state word in a register, or at this ctx offset (read byte by byte)


def table_round(b: KernelBuilder, tb: Reg, ctx: Reg, s: list[Word], rk: int,
                last: bool = False) -> list[Reg]:
    """One T-table round: returns the four output words; register input words are consumed.

    ``rk`` is the ctx offset of the round key. A word given as a ctx offset is read byte by
    byte with movzx from memory (no shifts): r1's round 2 takes columns 1..3 from C1 so.
    """
    a = b.asm
    offs = TE_LAST if last else TE
    t: list[Reg | None] = [None] * 4
    for j, w in enumerate(s):
        for row in range(4):
            c = (j - row) % 4
            if isinstance(w, int):
                i = b.gp()
                a.movzx(i.w32, _m(8, ctx, w + row))
            else:
                if row:
                    a.shr(w, Imm(8))
                if row < 3:
                    i = b.gp()
                    a.movzx(i.w32, w.w8)
                else:
                    i = w            # bits 24..31 shifted down; the upper half is zero
            entry = _m(32, tb, offs[row], index=i, scale=4)
            if t[c] is None:
                t[c] = b.gp()
                a.mov(t[c].w32, entry)
            else:
                a.xor(t[c].w32, entry)
    for c in range(4):
        a.xor(t[c].w32, _m(32, ctx, rk + 4 * c))
    return t  # type: ignore[return-value]


def rounds(b: KernelBuilder, tb: Reg, ctx: Reg, s: list[Word], first: int, last: int,
           nr: int) -> list[Reg]:
    for r in range(first, last + 1):
        s = table_round(b, tb, ctx, s, L.ROUND_KEYS + 16 * r, last=(r == nr))
    return s  # type: ignore[return-value]


def counter_state(b: KernelBuilder, ctx: Reg, lo: Reg) -> list[Reg]:
    """State after round 0 of the counter block CTR_HI (from the context) : lo."""
    a = b.asm
    words = []
    for half, disp in ((None, 0), (lo, 8)):
        x = b.gp()
        with b.phase("counter"):
            if half is None:
                a.mov(x, _m(64, ctx, L.CTR_HI))
            else:
                a.mov(x, half)
            a.bswap(x)                            # counter bytes in memory order
        with b.phase("rounds_0_2"):
            a.xor(x, _m(64, ctx, L.ROUND_KEYS + disp))   # round 0, two columns at once
        with b.phase("counter"):
            w = b.gp()
            a.mov(w.w32, x.w32)
            a.shr(x, Imm(32))
        words += [w, x]
    return words


# ====================================================================================
# the key schedule
# ====================================================================================
class ScalarKeySchedule(RoundEngine):
    """FIPS-197 key expansion (RoundEngine.expand_key) with SubWord by byte S-box lookups."""

    def ops(self, b: KernelBuilder) -> None:
        return None                      # general-purpose registers only

    def sub_word(self, k, b: KernelBuilder, v, ctx: Reg, w: Reg) -> None:
        a = b.asm
        tb, acc = b.gp(), b.gp()
        a.lea(tb, b.const("sbox", bytes(SBOX)))
        for row in range(4):
            if row:
                a.shr(w, Imm(8))
            if row < 3:
                i = b.gp()
                a.movzx(i.w32, w.w8)
            else:
                i = w
            if row == 0:
                a.movzx(acc.w32, _m(8, tb, index=i))
            else:
                x = b.gp()
                a.movzx(x.w32, _m(8, tb, index=i))
                a.shl(x, Imm(8 * row))
                b.emit("or", acc, x)
        a.mov(w.w32, acc.w32)

    def sub_rot_word(self, k, b: KernelBuilder, v, ctx: Reg, w: Reg, rcon: int) -> None:
        b.emit("ror", w.w32, Imm(8))          # RotWord: bytes (a0 a1 a2 a3) -> (a1 a2 a3 a0)
        self.sub_word(k, b, v, ctx, w)
        b.emit("xor", w.w32, Imm(rcon))


# ====================================================================================
# xor_stream's loop (its frame is the CTR skeleton's)
# ====================================================================================
class Loop:
    """The registers and labels of one key size's loop."""

    def __init__(self, ctx: Reg, inp: Reg, delta: Reg, length: Reg, tb: Reg, lo: Reg,
                 top: Label, end: Label, counter) -> None:
        self.ctx, self.inp, self.delta, self.length = ctx, inp, delta, length
        self.tb, self.lo, self.top, self.end = tb, lo, top, end
        self.counter = counter        # the spec's counter policy (modes/counter.py)


def _stream_body(k: TableKernel, b: KernelBuilder, bits: int, ctx: Reg, inp: Reg,
                 delta: Reg, length: Reg, done: Label) -> None:
    """The loop for one key size: steady blocks, the partial last block, FACE fill/refresh."""
    a, face, nr = b.asm, k.spec.face, ROUNDS[bits]
    top, end = b.label(f"top{bits}"), b.label(f"end{bits}")
    single, fill = b.label(f"single{bits}"), b.label(f"fill{bits}")
    single_fill, fill_block = b.label(f"single_fill{bits}"), b.label(f"fill_block{bits}")
    check, checked = b.label(f"check{bits}"), b.label(f"checked{bits}")
    tb, lo = b.gp(), b.gp()
    with b.phase("key_load"):
        a.lea(tb, b.const("tables", round_tables(), align=64))
    a.mov(lo, _m(64, ctx, L.CTR_LO))
    s = Loop(ctx, inp, delta, length, tb, lo, top, end, k.spec.counter_policy)
    idx = b.gp()                      # in15 of the block (FACE levels only)
    if face != "none":
        a.jmp(check)                  # the window is checked in full once per call

    with b.region(f"steady-{bits}"):
        with b.phase("loop"):
            b.bind(top)
            a.test(length, length)
            a.je(end)
        if face != "none":
            with b.phase("counter"):
                a.movzx(idx.w32, lo.w8)
            with b.phase("loop"):
                a.test(idx, idx)      # in15 == 0: counter bytes 0..14 may have changed
                a.je(check)
            b.bind(checked)
        with b.phase("loop"):
            a.cmp(length, Imm(16))
            a.jb(single)
            if face != "none":
                k.run.jump_unless_complete(b, ctx, fill)
        fast = b.label("fast")
        b.bind(fast)
        if face == "none":
            t = _full_block(b, s, nr)
        else:
            t = _fast_block(k, b, s, idx, nr)
        _load_xor_store(b, s, t)

    with b.region(f"single-{bits}"):
        b.bind(single)
        if face == "none":
            t = _full_block(b, s, nr)
        else:
            single_fast = b.label("single_fast")
            k.run.jump_unless_complete(b, ctx, single_fill)
            b.bind(single_fast)
            t = _fast_block(k, b, s, idx, nr)
        _partial_tail(b, s, t)

    if face != "none":
        with b.region(f"single_fill-{bits}"):         # a partial block: the fill below
            b.bind(single_fill)
            k.run.back_if_filled(b, ctx, idx, 1, single_fast)
            a.jmp(fill_block)

        def use_block(t, hint: str) -> None:
            partial = b.label(hint)
            with b.phase("loop"):
                a.cmp(length, Imm(16))
                a.jb(partial)
            _load_xor_store(b, s, t)
            b.bind(partial)
            _partial_tail(b, s, t)

        spent = b.label("spent")
        with b.region(f"fill-{bits}"):
            b.bind(fill)
            k.run.back_if_filled(b, ctx, idx, 1, fast)
            b.bind(fill_block)
            k.run.fill_allowed(b, ctx, spent)
            use_block(_fill_block(k, b, s, nr), "fill_partial")
        with b.region(f"spent-{bits}"):               # a tag seen once: no stores
            b.bind(spent)
            use_block(_full_block(b, s, nr), "spent_partial")

    b.bind(end)
    a.mov(_m(64, ctx, L.CTR_LO), lo)
    a.jmp(done)

    if face != "none":
        with b.region(f"refresh-{bits}"), b.phase("refresh"):
            b.bind(check)
            _check_window(k, b, s, nr, idx, checked)


def _full_block(b: KernelBuilder, s: Loop, nr: int) -> list[Reg]:
    """Every round, from the counter."""
    state = counter_state(b, s.ctx, s.lo)
    with b.phase("rounds_0_2"):
        state = rounds(b, s.tb, s.ctx, state, 1, 2, nr)
    with b.phase("rounds_3_nr"):
        return rounds(b, s.tb, s.ctx, state, 3, nr, nr)


def _fast_block(k: TableKernel, b: KernelBuilder, s: Loop, idx: Reg, nr: int) -> list[Reg]:
    """FACE: the state after round 1 (r1) or 2 (r2) from the window's cache and the table."""
    a, ctx = b.asm, s.ctx
    if k.spec.face == "r1":
        with b.phase("rounds_0_2"):
            s0 = b.gp()
            a.mov(s0.w32, _m(32, ctx, L.CACHE_R1))
            a.xor(s0.w32, _m(32, ctx, k.layout.table_r1, index=idx, scale=4))
            # columns 1..3 equal C1's: round 2 reads their bytes straight from the cache
            state = rounds(b, s.tb, ctx, [s0] + [L.CACHE_R1 + 4 * c for c in (1, 2, 3)],
                           2, 2, nr)
    else:
        with b.phase("counter"):
            a.shl(idx, Imm(4))                    # 16-byte entries
        state = []
        with b.phase("rounds_0_2"):
            for c in range(4):
                w = b.gp()
                a.mov(w.w32, _m(32, ctx, L.CACHE_R2 + 4 * c))
                a.xor(w.w32, _m(32, ctx, k.layout.table_r2 + 4 * c, index=idx))
                state.append(w)
    with b.phase("rounds_3_nr"):
        return rounds(b, s.tb, ctx, state, 3, nr, nr)


def _fill_block(k: TableKernel, b: KernelBuilder, s: Loop, nr: int) -> list[Reg]:
    """Every round, and this block's table entry (state after round 1 or 2, XOR the cache)."""
    a, ctx = b.asm, s.ctx
    skip = 1 if k.spec.face == "r1" else 2
    state = counter_state(b, ctx, s.lo)
    with b.phase("rounds_0_2"):
        state = rounds(b, s.tb, ctx, state, 1, skip, nr)
    with b.phase("table_fill"):
        at = b.gp()
        a.movzx(at.w32, s.lo.w8)
        if skip == 1:
            e = b.gp()
            a.mov(e.w32, state[0].w32)
            a.xor(e.w32, _m(32, ctx, L.CACHE_R1))
            a.mov(_m(32, ctx, k.layout.table_r1, index=at, scale=4), e.w32)
        else:
            a.shl(at, Imm(4))
            for c in range(4):
                e = b.gp()
                a.mov(e.w32, state[c].w32)
                a.xor(e.w32, _m(32, ctx, L.CACHE_R2 + 4 * c))
                a.mov(_m(32, ctx, k.layout.table_r2 + 4 * c, index=at), e.w32)
        in15 = b.gp()
        a.movzx(in15.w32, s.lo.w8)
        k.run.record_filled(b, ctx, in15, 1)
    with b.phase("rounds_0_2"):
        state = rounds(b, s.tb, ctx, state, skip + 1, 2, nr)
    with b.phase("rounds_3_nr"):
        return rounds(b, s.tb, ctx, state, 3, nr, nr)


def _count_up(b: KernelBuilder, s: Loop) -> None:
    """The next block: the counter's low half in s.lo, its high half left in the context."""
    s.counter.count_up(X86Scalar(), b, s.lo, _m(64, s.ctx, L.CTR_HI), 1)


def _load_xor_store(b: KernelBuilder, s: Loop, t: list[Reg]) -> None:
    """out = in ^ keystream for one whole block, then the next block."""
    a = b.asm
    with b.phase("load_xor_store"):
        for c in range(4):
            a.xor(t[c].w32, _m(32, s.inp, 4 * c))          # in is read before out is written
            a.mov(_m(32, s.inp, 4 * c, index=s.delta), t[c].w32)
    with b.phase("loop"):
        _count_up(b, s)
        a.add(s.inp, Imm(16))
        a.sub(s.length, Imm(16))
        a.jmp(s.top)


def _partial_tail(b: KernelBuilder, s: Loop, t: list[Reg]) -> None:
    """len < 16: keep the keystream block in the context, use its first len bytes."""
    a = b.asm
    with b.phase("partial"):
        for c in range(4):
            a.mov(_m(32, s.ctx, L.KEYSTREAM + 4 * c), t[c].w32)
        _count_up(b, s)
        out = b.gp()
        a.lea(out, _m(8, s.inp, index=s.delta))
        keystream_tail(X86Scalar(), b, s.ctx, out, s.inp, s.length, s.end)


def _check_window(k: TableKernel, b: KernelBuilder, s: Loop, nr: int, idx: Reg,
                  checked: Label) -> None:
    """Is the cache for this window? If not: recompute it; keep, continue or restart the
    table fill (as ctr_kernel's refresh: the table is kept when the counter's bytes 0, 5, 10
    match its tag and it is complete, or when it is being filled and this block is the next
    entry to fill; otherwise the fill restarts at this block's in15)."""
    a, face, ctx, lo = b.asm, k.spec.face, s.ctx, s.lo
    refresh, window_ok = b.label("refresh"), b.label("window_ok")
    w, hi = b.gp(), b.gp()
    a.mov(w, lo)
    b.emit("and", w, Imm(-256))
    a.cmp(w, _m(64, ctx, L.WINDOW_LO))
    a.jne(refresh)
    a.mov(hi, _m(64, ctx, L.CTR_HI))
    a.cmp(hi, _m(64, ctx, L.WINDOW_HI))
    a.je(window_ok)

    b.bind(refresh)
    base = b.gp()
    a.mov(base, lo)
    b.emit("and", base, Imm(-256))
    state = counter_state(b, ctx, base)
    state = rounds(b, s.tb, ctx, state, 1, 1 if face == "r1" else 2, nr)
    cache = L.CACHE_R1 if face == "r1" else L.CACHE_R2
    for c in range(4):
        a.mov(_m(32, ctx, cache + 4 * c), state[c].w32)
    base2, hi2 = b.gp(), b.gp()
    a.mov(base2, lo)
    b.emit("and", base2, Imm(-256))
    a.mov(hi2, _m(64, ctx, L.CTR_HI))
    a.mov(_m(64, ctx, L.WINDOW_LO), base2)
    a.mov(_m(64, ctx, L.WINDOW_HI), hi2)
    k.run.keep_or_empty_table(b, ctx, lo, hi2, window_ok, first_fill=FIRST_FILL)
    b.bind(window_ok)
    a.movzx(idx.w32, lo.w8)
    a.jmp(checked)


def build_kernel(spec: KernelSpec) -> BuiltKernel:
    """The CTR skeleton of the table method (modes/: the mode descriptor names it)."""
    k = TableKernel(spec)
    doc = (f"xor_stream(ctx, out, in, len): AES-CTR by T-table lookups, one block at a "
           f"time, FACE {spec.face}.")
    return BuiltKernel(build_entries(k, doc), k.layout.size, tuple(k.layout.table()),
                       public_fields=k.layout.public_names(),
                       timing_warning=NOT_CONSTANT_TIME)
