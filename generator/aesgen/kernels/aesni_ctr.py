"""AES-CTR with AES-NI on xmm: init (key expansion), set_iv, xor_stream, wipe.

The counter is 128-bit big-endian, +1 a block (OpenSSL EVP_aes_*_ctr). Blocks are made in
batches of ``interleave`` only while byte 15 of the counter (in15) does not wrap inside the
batch; then block i of the batch is the batch's first block plus i in byte 15 (one paddb), and
FACE's window (the 256 blocks that share bytes 0..14) is the same for the whole batch. Near a
window's end, and for the last partial block, single blocks are made.

FACE (Park & Lee, TCHES, section 4 and appendix A.2), as this kernel computes it:
  s_r(ctr)  = state after round r;  base = ctr with in15 = 0
  rd1 cache  C1 = s_1(base),   rd1+ table T1[v] = s_1(base|v) ^ C1   (column 0 only: 4 bytes)
  rd2 cache  C2 = s_2(base),   rd2+ table T2[v] = s_2(base|v) ^ C2   (16 bytes)
so s_1 = C1 ^ T1[in15] and s_2 = C2 ^ T2[in15]. The tables depend only on the key and counter
bytes 0, 5, 10 (the bytes that reach column 0 after ShiftRows); the caches on bytes 0..14.
Round 0 (rd0) is a single pxor here and is folded into the caches: with `r1` no block computes
rounds 0-1, with `r2` no block computes rounds 0-2.
Tables are filled while encrypting: until a table is complete, blocks are computed in full and
each one stores its own entry (s ^ C); no set-up pass computes entries a message does not use.
"""
from __future__ import annotations

from ..dsl.builder import KernelBuilder
from ..dsl.ir import Function
from ..dsl.operands import Imm, Label, Mem, Reg, gp
from ..isa.table import load_table
from . import ctx_layout as L
from .spec import ROUNDS, KernelSpec
from .vector_ops import VectorOps

BSWAP128 = bytes(range(15, -1, -1))


def _m(width: int, base: Reg, disp: int = 0, index: Reg | None = None, scale: int = 1) -> Mem:
    return Mem(width, base=base, index=index, scale=scale, disp=disp)


class _Kernel:
    """Shared state while one kernel's functions are built."""

    def __init__(self, spec: KernelSpec) -> None:
        self.spec = spec
        self.table = load_table("x86_64")
        self.layout = L.layout_for(spec.face)

    def builder(self, entry: str, doc: str) -> tuple[KernelBuilder, VectorOps]:
        b = KernelBuilder(self.table, self.spec.symbol(entry), doc=doc)
        return b, VectorOps(b, self.spec.encoding)

    def args(self, b: KernelBuilder, count: int) -> list[Reg]:
        regs = []
        for name in ("rdi", "rsi", "rdx", "rcx")[:count]:
            v = b.gp()
            b.asm.mov(v, gp(name))
            regs.append(v)
        return regs

    # --- counter as a vector ------------------------------------------------------------
    def counter_block(self, b: KernelBuilder, v: VectorOps, lo: Reg, hi: Reg) -> Reg:
        """xmm holding the 16 counter bytes (big-endian) of the number hi:lo."""
        x, t = b.xmm(), b.xmm()
        v.from_gp64(x, lo)
        v.from_gp64(t, hi)
        v.unpack_low_qwords(x, x, t)
        v.shuffle_bytes(x, x, b.const("bswap128", BSWAP128))
        return x

    def rounds(self, b: KernelBuilder, v: VectorOps, ctx: Reg, blocks: list[Reg],
               first: int, last: int, nr: int) -> None:
        """Apply rounds first..last (0 = AddRoundKey, nr = the final round) to every block."""
        for r in range(first, last + 1):
            k = b.xmm()
            v.load(k, _m(128, ctx, L.ROUND_KEYS + 16 * r))
            for x in blocks:
                if r == 0:
                    v.xor(x, x, k)
                elif r == nr:
                    v.aes_last_round(x, x, k)
                else:
                    v.aes_round(x, x, k)


def _count_up(b: KernelBuilder, lo: Reg, hi: Reg, n: int) -> None:
    b.asm.add(lo, Imm(n))
    b.asm.adc(hi, Imm(0))


# ====================================================================================
# init: key expansion (FIPS-197 5.2, word by word, SubWord from AESKEYGENASSIST)
# ====================================================================================
def build_init(k: _Kernel) -> Function:
    b, v = k.builder("init", "init(ctx, key, key_len, iv): expand the key, reset FACE state, "
                             "set the IV.\nReturns 0, or -1 for a key length not built in.")
    b.function.returns_value = True
    a = b.asm
    a.endbr64()
    ctx, key, key_len, iv = k.args(b, 4)
    ret = b.label("return")
    common = b.label("common")
    per_size = {bits: b.label(f"key{bits}") for bits in k.spec.key_bits}
    accepted = b.label("accepted")
    for bits in per_size:
        a.cmp(key_len, Imm(bits // 8))
        a.je(accepted)
    a.mov(gp("eax"), Imm(-1))          # a refused key leaves the context as it was
    a.jmp(ret)
    b.bind(accepted)
    with b.phase("clear_context"):     # re-keying forgets every byte of the old key's state
        _zero_context(k, b, v, ctx)
    for bits, label in per_size.items():
        a.cmp(key_len, Imm(bits // 8))
        a.je(label)
    rcon = [0x01, 0x02, 0x04, 0x08, 0x10, 0x20, 0x40, 0x80, 0x1B, 0x36]
    for bits, label in per_size.items():
        b.bind(label)
        with b.phase("key_expansion"):
            nk, nr = bits // 32, ROUNDS[bits]
            w = b.gp()
            for i in range(nk):
                a.mov(w.w32, _m(32, key, 4 * i))
                a.mov(_m(32, ctx, L.ROUND_KEYS + 4 * i), w.w32)
            x, y = b.xmm(), b.xmm()
            vname = "v" if k.spec.encoding == "avx" else ""
            for i in range(nk, 4 * (nr + 1)):
                a.mov(w.w32, _m(32, ctx, L.ROUND_KEYS + 4 * (i - 1)))
                if i % nk == 0 or (nk == 8 and i % nk == 4):
                    # AESKEYGENASSIST on a broadcast word gives dword0 = SubWord(w) and
                    # dword1 = RotWord(SubWord(w)) ^ rcon (Intel SDM, AESKEYGENASSIST).
                    v.load_u32(x, w.w32)
                    b.emit(f"{vname}pshufd", x, x, Imm(0))
                    rc = rcon[i // nk - 1] if i % nk == 0 else 0
                    b.emit(f"{vname}aeskeygenassist", y, x, Imm(rc))
                    if i % nk == 0:
                        b.emit(f"{vname}pshufd", y, y, Imm(0x55))
                    v.store_u32(w.w32, y)
                a.xor(w.w32, _m(32, ctx, L.ROUND_KEYS + 4 * (i - nk)))
                a.mov(_m(32, ctx, L.ROUND_KEYS + 4 * i), w.w32)
            a.mov(_m(32, ctx, L.KEY_BITS), Imm(bits))
        a.jmp(common)
    b.bind(common)
    a.mov(_m(64, ctx, L.TAG_LO), Imm(0))
    a.mov(_m(64, ctx, L.TAG_HI), Imm(L.NO_TABLE))
    a.mov(_m(64, ctx, L.FILL_START), Imm(0))
    a.mov(_m(64, ctx, L.FILL_COUNT), Imm(0))
    _set_iv_body(b, ctx, iv)
    a.xor(gp("eax"), gp("eax"))
    b.bind(ret)
    a.ret()
    b.function.scrub_vectors = True
    return b.build()


def _set_iv_body(b: KernelBuilder, ctx: Reg, iv: Reg) -> None:
    a = b.asm
    hi, lo = b.gp(), b.gp()
    a.mov(hi, _m(64, iv, 0))
    a.mov(lo, _m(64, iv, 8))
    a.bswap(hi)
    a.bswap(lo)
    a.mov(_m(64, ctx, L.CTR_HI), hi)
    a.mov(_m(64, ctx, L.CTR_LO), lo)
    a.mov(_m(64, ctx, L.KEYSTREAM_LEFT), Imm(0))
    a.mov(_m(64, ctx, L.WINDOW_LO), Imm(L.NO_WINDOW))   # caches are checked again on use


def build_set_iv(k: _Kernel) -> Function:
    b, _ = k.builder("set_iv", "set_iv(ctx, iv): restart the stream at iv under the same key.\n"
                               "FACE tables stay while IV bytes 0, 5 and 10 are unchanged.")
    b.function.returns_value = True
    b.asm.endbr64()
    ctx, iv = k.args(b, 2)
    _set_iv_body(b, ctx, iv)
    b.asm.xor(gp("eax"), gp("eax"))
    b.asm.ret()
    return b.build()


def _zero_context(k: _Kernel, b: KernelBuilder, v: VectorOps, ctx: Reg) -> None:
    """Store zeros over all ctx_size bytes (a multiple of 64), 64 bytes an iteration."""
    a = b.asm
    z, p, n = b.xmm(), b.gp(), b.gp()
    v.xor(z, z, z)
    a.mov(p, ctx)
    a.mov(n, Imm(k.layout.size // 64))
    loop = b.label("zero")
    b.bind(loop)
    for off in range(0, 64, 16):
        v.store(_m(128, p, off), z)
    a.add(p, Imm(64))
    a.dec(n)
    a.jne(loop)


def build_wipe(k: _Kernel) -> Function:
    b, v = k.builder("wipe", f"wipe(ctx): zero all {k.layout.size} bytes of the context.")
    b.asm.endbr64()
    (ctx,) = k.args(b, 1)
    _zero_context(k, b, v, ctx)
    b.asm.ret()
    return b.build()


# ====================================================================================
# xor_stream
# ====================================================================================
def build_xor_stream(k: _Kernel) -> Function:
    spec = k.spec
    b, v = k.builder("xor_stream", f"xor_stream(ctx, out, in, len): AES-CTR, {spec.interleave} "
                                   f"blocks a batch, FACE {spec.face}.")
    a = b.asm
    a.endbr64()
    ctx, out, inp, length = k.args(b, 4)
    done = b.label("return")
    a.test(length, length)
    a.je(done)

    # 1. bytes left in the keystream block of the previous call
    bulk, drain, drained = b.label("bulk"), b.label("drain"), b.label("drained")
    with b.phase("partial"):
        left = b.gp()
        a.mov(left, _m(64, ctx, L.KEYSTREAM_LEFT))
        a.test(left, left)
        a.je(bulk)
        b.bind(drain)
        p, t = b.gp(), b.gp()
        a.mov(p, ctx)
        a.sub(p, left)
        a.movzx(t.w32, _m(8, p, L.KEYSTREAM + 16))
        a.xor(t.w8, _m(8, inp))
        a.mov(_m(8, out), t.w8)
        a.inc(inp)
        a.inc(out)
        a.dec(length)
        a.dec(left)
        a.je(drained)
        a.test(length, length)
        a.jne(drain)
        b.bind(drained)
        a.mov(_m(64, ctx, L.KEYSTREAM_LEFT), left)
        a.test(length, length)
        a.je(done)

    # 2. dispatch on the key size init stored
    b.bind(bulk)
    bodies = {bits: b.label(f"aes{bits}") for bits in spec.key_bits}
    kb = b.gp()
    a.mov(kb.w32, _m(32, ctx, L.KEY_BITS))
    for bits, label in bodies.items():
        a.cmp(kb.w32, Imm(bits))
        a.je(label)
    a.jmp(done)                      # not initialised: nothing to do
    for bits, label in bodies.items():
        b.bind(label)
        _stream_body(k, b, v, bits, ctx, out, inp, length, done)
    b.bind(done)
    a.ret()
    b.function.scrub_vectors = True
    return b.build()


def _stream_body(k: _Kernel, b: KernelBuilder, v: VectorOps, bits: int, ctx: Reg, out: Reg,
                 inp: Reg, length: Reg, done: Label) -> None:
    """The loop for one key size: batches, single blocks, the partial tail, FACE refresh."""
    spec, a, nr, n = k.spec, b.asm, ROUNDS[bits], k.spec.interleave
    face = spec.face
    top, end = b.label(f"top{bits}"), b.label(f"end{bits}")
    window_ok, refresh = b.label(f"window_ok{bits}"), b.label(f"refresh{bits}")
    single, batch_fill = b.label(f"single{bits}"), b.label(f"batch_fill{bits}")
    lo, hi, idx = b.gp(), b.gp(), b.gp()
    a.mov(lo, _m(64, ctx, L.CTR_LO))
    a.mov(hi, _m(64, ctx, L.CTR_HI))
    io = (ctx, out, inp, length, lo, hi, idx, end)

    with b.region(f"steady-{bits}"):
        with b.phase("loop"):
            b.bind(top)
            a.test(length, length)
            a.je(end)
            if face != "none":
                t = b.gp()
                a.mov(t, lo)
                b.emit("and", t, Imm(-256))
                a.cmp(t, _m(64, ctx, L.WINDOW_LO))
                a.jne(refresh)
                a.cmp(hi, _m(64, ctx, L.WINDOW_HI))
                a.jne(refresh)
            b.bind(window_ok)
            a.movzx(idx.w32, lo.w8)
            a.cmp(length, Imm(16 * n))
            a.jb(single)
            a.cmp(idx, Imm(256 - n))
            a.ja(single)
            if face != "none":
                a.cmp(_m(64, ctx, L.FILL_COUNT), Imm(256))
                a.jne(batch_fill)
        _batch(k, b, v, bits, io, n, "fast" if face != "none" else "full", top)

    if face != "none":
        with b.region(f"fill-{bits}"):
            b.bind(batch_fill)
            _batch(k, b, v, bits, io, n, "fill", top)

    with b.region(f"single-{bits}"):
        b.bind(single)
        if face == "none":
            _batch(k, b, v, bits, io, 1, "full", top)
        else:
            single_fill = b.label(f"single_fill{bits}")
            a.cmp(_m(64, ctx, L.FILL_COUNT), Imm(256))
            a.jne(single_fill)
            _batch(k, b, v, bits, io, 1, "fast", top)
    if face != "none":
        with b.region(f"single_fill-{bits}"):
            b.bind(single_fill)
            _batch(k, b, v, bits, io, 1, "fill", top)

    b.bind(end)
    a.mov(_m(64, ctx, L.CTR_LO), lo)
    a.mov(_m(64, ctx, L.CTR_HI), hi)
    a.jmp(done)

    if face != "none":
        with b.region(f"refresh-{bits}"), b.phase("refresh"):
            b.bind(refresh)
            _refresh(k, b, v, ctx, lo, hi, window_ok)


def _batch(k: _Kernel, b: KernelBuilder, v: VectorOps, bits: int, io: tuple, n: int,
           mode: str, top: Label) -> None:
    """n blocks whose in15 run idx..idx+n-1 without wrapping; then back to ``top``.

    mode "full": every round computed; "fast": rounds up to the FACE level come from the
    cache and table; "fill": every round computed and the table entries stored.
    With n == 1 the block may also be the partial last one (len < 16).
    """
    ctx, out, inp, length, lo, hi, idx, end = io
    spec, a, nr, face = k.spec, b.asm, ROUNDS[bits], k.spec.face
    skip = {"none": 0, "r1": 1, "r2": 2}[face]       # last round FACE provides
    blocks = [b.xmm() for _ in range(n)]
    table_ptr = None
    if mode != "full":
        with b.phase("counter"):
            table_ptr = b.gp()
            if face == "r1":
                a.lea(table_ptr, _m(8, ctx, k.layout.table_r1, index=idx, scale=4))
            else:
                scaled = b.gp()
                a.mov(scaled, idx)
                a.shl(scaled, Imm(4))
                a.lea(table_ptr, _m(8, ctx, k.layout.table_r2, index=scaled))
        cache = b.xmm()
        with b.phase("rounds_0_2"):
            v.load(cache, _m(128, ctx, L.CACHE_R1 if face == "r1" else L.CACHE_R2))
    if mode == "fast":
        with b.phase("rounds_0_2"):
            for i, x in enumerate(blocks):
                if face == "r1":
                    v.load_u32(x, _m(32, table_ptr, 4 * i))
                    v.xor(x, x, cache)
                else:
                    v.xor(x, cache, _m(128, table_ptr, 16 * i))
            if face == "r1":
                k.rounds(b, v, ctx, blocks, 2, 2, nr)
    else:
        with b.phase("counter"):
            ctr = k.counter_block(b, v, lo, hi)
            for i, x in enumerate(blocks):
                if i == 0:
                    v.copy(x, ctr)
                else:
                    inc = bytes(15) + bytes([i])
                    v.add_bytes(x, ctr, b.const(f"plus{i}", inc))
        with b.phase("rounds_0_2"):
            if mode == "full":
                k.rounds(b, v, ctx, blocks, 0, 2, nr)
            else:
                k.rounds(b, v, ctx, blocks, 0, skip, nr)
                with b.phase("table_fill"):
                    e = b.xmm()
                    for i, x in enumerate(blocks):
                        v.xor(e, x, cache)
                        if face == "r1":
                            v.store_u32(_m(32, table_ptr, 4 * i), e)
                        else:
                            v.store(_m(128, table_ptr, 16 * i), e)
                if face == "r1":
                    k.rounds(b, v, ctx, blocks, 2, 2, nr)
    with b.phase("rounds_3_nr"):
        k.rounds(b, v, ctx, blocks, 3, nr, nr)
    if mode == "fill":
        with b.phase("table_fill"):
            fill_ok = b.label("fill_counted")
            count = b.gp()
            a.mov(count, _m(64, ctx, L.FILL_COUNT))
            a.add(count, Imm(n))
            a.cmp(count, Imm(256))
            a.jbe(fill_ok)
            a.mov(count, Imm(256))
            b.bind(fill_ok)
            a.mov(_m(64, ctx, L.FILL_COUNT), count)
    partial = b.label("partial") if n == 1 else None
    if partial is not None:
        with b.phase("partial"):
            a.cmp(length, Imm(16))
            a.jb(partial)
    with b.phase("load_xor_store"):
        for i, x in enumerate(blocks):
            v.xor(x, x, _m(128, inp, 16 * i), unaligned=True)
            v.store(_m(128, out, 16 * i), x, aligned=False)
    with b.phase("loop"):
        _count_up(b, lo, hi, n)
        a.add(inp, Imm(16 * n))
        a.add(out, Imm(16 * n))
        a.sub(length, Imm(16 * n))
        a.jmp(top)
    if partial is not None:
        _partial_tail(b, v, io, blocks[0], partial)


def _partial_tail(b: KernelBuilder, v: VectorOps, io: tuple, x: Reg, partial: Label) -> None:
    """len < 16: keep the keystream block in the context, use its first len bytes."""
    ctx, out, inp, length, lo, hi, idx, end = io
    a = b.asm
    with b.phase("partial"):
        b.bind(partial)
        v.store(_m(128, ctx, L.KEYSTREAM), x)
        _count_up(b, lo, hi, 1)
        j, t = b.gp(), b.gp()
        a.xor(j.w32, j.w32)
        loop = b.label("partial_byte")
        b.bind(loop)
        a.movzx(t.w32, _m(8, ctx, L.KEYSTREAM, index=j))
        a.xor(t.w8, _m(8, inp, index=j))
        a.mov(_m(8, out, index=j), t.w8)
        a.inc(j)
        a.cmp(j, length)
        a.jb(loop)
        a.mov(t, Imm(16))
        a.sub(t, length)
        a.mov(_m(64, ctx, L.KEYSTREAM_LEFT), t)
        a.jmp(end)


def _refresh(k: _Kernel, b: KernelBuilder, v: VectorOps, ctx: Reg, lo: Reg, hi: Reg,
             window_ok: Label) -> None:
    """A new window: recompute the caches; keep, continue or restart the table fill.

    The table is kept when the counter's bytes 0, 5, 10 match its tag and it is complete, or
    when it is being filled and this block is the next entry to fill; otherwise the fill
    restarts at this block's in15.
    """
    a, face, nr = b.asm, k.spec.face, None
    base = b.gp()
    a.mov(base, lo)
    b.emit("and", base, Imm(-256))
    x = k.counter_block(b, v, base, hi)
    k.rounds(b, v, ctx, [x], 0, 1, 99)
    if face == "r1":
        v.store(_m(128, ctx, L.CACHE_R1), x)
    else:
        k.rounds(b, v, ctx, [x], 2, 2, 99)
        v.store(_m(128, ctx, L.CACHE_R2), x)
    a.mov(_m(64, ctx, L.WINDOW_LO), base)
    a.mov(_m(64, ctx, L.WINDOW_HI), hi)
    restart = b.label("restart")
    tag_lo, tag_hi, here = b.gp(), b.gp(), b.gp()
    a.movzx(here.w32, lo.w8)
    a.movabs(tag_lo, Imm(L.TAG_LO_MASK))
    b.emit("and", tag_lo, lo)
    a.movabs(tag_hi, Imm(L.TAG_HI_MASK))
    b.emit("and", tag_hi, hi)
    a.cmp(tag_lo, _m(64, ctx, L.TAG_LO))
    a.jne(restart)
    a.cmp(tag_hi, _m(64, ctx, L.TAG_HI))
    a.jne(restart)
    a.cmp(_m(64, ctx, L.FILL_COUNT), Imm(256))
    a.je(window_ok)
    pos = b.gp()
    a.mov(pos, _m(64, ctx, L.FILL_START))
    a.add(pos, _m(64, ctx, L.FILL_COUNT))
    b.emit("and", pos, Imm(255))
    a.cmp(pos, here)
    a.je(window_ok)
    b.bind(restart)
    a.mov(_m(64, ctx, L.TAG_LO), tag_lo)
    a.mov(_m(64, ctx, L.TAG_HI), tag_hi)
    a.mov(_m(64, ctx, L.FILL_START), here)
    a.mov(_m(64, ctx, L.FILL_COUNT), Imm(0))
    a.jmp(window_ok)


ENTRY_POINTS = ("init", "set_iv", "xor_stream", "wipe")


def build_kernel(spec: KernelSpec) -> dict[str, Function]:
    """The four entry points of one aesni CTR kernel, uncompiled (virtual registers)."""
    if spec.method != "aesni":
        raise ValueError(f"aesni_ctr cannot build method {spec.method!r}")
    k = _Kernel(spec)
    return {"init": build_init(k), "set_iv": build_set_iv(k),
            "xor_stream": build_xor_stream(k), "wipe": build_wipe(k)}
