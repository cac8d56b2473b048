"""AES-OTR on x86-64: the layers its skeleton (skeleton.py) runs over. They extend the GCM
frame (modes/gcm/x86_64.py: arguments, context fields, short pieces, the AES engine's rounds,
the tag's store and constant-time compare) with OTR's own:

- masks in integer order (gf128/x86_64/doubling.py), a register of ``lanes`` consecutive
  ones, moved on by 2^lanes a register (the clmul engine) or doubled one at a time (xmm,
  Krovetz's); each used one byte-reversed back to block order;
- pairs in flight: a batch of registers of pairs, loaded as they lie (first and second
  blocks alternate) and dealt into a register of first blocks and one of second blocks by
  128-bit lane moves (and dealt back before the stores); the first Feistel round of the
  whole batch, then the second; a pair's second mask is its first XOR the next lane's (the
  register shifted by a lane), v2's its first XOR U; the second masks of a batch wait in the
  context (MASKS) while the first round runs;
- the checksum of second blocks summed per lane and width, folded into one block at the end;
- the tail's partial blocks by byte masks (AVX-512) or through SCRATCH (short pieces), the
  padding bit and the first-bytes mask read from tables at an offset of the length (public).
"""
from __future__ import annotations

from dataclasses import dataclass

from ...arch.x86_64.short_bytes import short_move
from ...dsl.builder import KernelBuilder
from ...dsl.operands import Imm, Mem, Reg, kmask
from ...gf128.x86_64.doubling import TABLE_METHODS, Doubling
from ...isa.table import load_table
from ...kernels import ctx_layout
from ...kernels.engine_choice import engine_for
from ...kernels.engines import Keys
from ...kernels.fields import Field, FieldLayout
from ...kernels.spec import ROUNDS, KernelSpec
from ...kernels.table_kernel import NOT_CONSTANT_TIME
from ...kernels.vector_ops import VectorOps
from .. import BuiltKernel
from ..gcm.short_record import nonce_block
from ..gcm.x86_64 import Body as GcmBody, take_conventions
from .skeleton import VERSIONS, build_all

# registers of pairs a batch: 4 at every width (xmm: 4 pairs, their blocks read from
# memory where used; ymm: 8 pairs, loaded and dealt again where used; zmm: 16 pairs, kept
# in registers), two batches in flight (_pipelined). Measured on Zen 5, seal 16 KiB, ticks/B
# (one batch of 8 registers -> two of 4): zmm 0.098 -> 0.086 (two of 8, dealt again: 0.090),
# ymm 0.207 -> 0.169, xmm 0.290 -> 0.251
BATCH = {128: 4, 256: 4, 512: 4}
# round keys the pipelined zmm loop keeps in registers where the method's round_keys says
# resident (the last ones; what its two batches leave of the 32 registers), the others
# read where used. Zen 5 retires 2 zmm loads a cycle, and with every key read where used
# the loop made 117 loads for 32 blocks (8 a round): the throughput bound's busiest.
RESIDENT_KEYS = {512: 4}
# tables read at an offset of a length n: 16 bytes from FIRST_BYTES + 16 - n are n bytes of
# 0xff then zeros; from PAD_BIT + 16 - n, 0x80 at byte n (none for n = 16); from MARK + n + 1,
# 0x01 at byte 15 - n (Format's bit before the nonce)
FIRST_BYTES = bytes([0xFF] * 16 + [0] * 16)
PAD_BIT = bytes(16) + bytes([0x80]) + bytes(15)
MARK = bytes(16) + bytes([0x01]) + bytes(15)


def layout(lanes: int) -> FieldLayout:
    """The context: the cipher section, Q, a batch's masks, a scratch block."""
    wide = ([Field("cipher", "ROUND_KEYS_WIDE", 15 * 16 * lanes, 64, "each round key in "
                   "every lane: the AES instructions read them as memory operands")]
            if lanes > 1 else [])
    return FieldLayout.build(ctx_layout.CIPHER_FIELDS + wide + [
        Field("mode", "Q", 16, 16, "Q = E_K(0) (v2: J), integer order (byte-reversed)"),
        Field("mode", "MASKS", 16 * lanes * BATCH[128 * lanes], 64,
              "the second-round masks of the batch in flight (block order; decryption: "
              "the first-round ones)"),
        Field("mode", "DELTA", 16, 16, "v2: U (integer order), for the tail's masks"),
        Field("mode", "DELTA_BLOCK", 16 * lanes, 16, "v2: U in every lane (block order), "
              "the second masks' offset"),
        Field("mode", "SCRATCH", 32, 16, "partial blocks on their way in or out; the tag "
              "being compared"),
    ] + ([Field("mode", "OUT1", 16 * lanes * BATCH[128 * lanes], 64,
                "the batch's first outputs while its second round runs (16 registers)")]
         if lanes < 4 else []))


def halves(batch: int) -> list[int]:
    """A batch, then each half down to 1: whole batches loop, the rest takes each once."""
    sizes = [batch]
    while sizes[-1] > 1:
        sizes.append(sizes[-1] // 2)
    return sizes


@dataclass
class KeysInContext(Keys):
    """Round keys for ymm and zmm read where used, as memory operands: their copies in every
    lane (ROUND_KEYS_WIDE), no broadcast a round and batch, no register held; xmm loads
    ROUND_KEYS into a register a round."""
    wide: int = 0           # ROUND_KEYS_WIDE's offset

    def get(self, b: KernelBuilder, v: VectorOps, r: int, width: int) -> Reg | Mem:
        # xmm: a load a round, shared by the batch's blocks; a resident key: its register
        if width == 128 or (self.resident is not None and self.resident[r] is not None):
            return super().get(b, v, r, width)
        return Mem(width, base=self.ctx, disp=self.wide + 16 * self.lanes * r)

    lanes: int = 1


class OtrKernel:
    """Shared facts while one OTR kernel's entry points are built (what the GCM frame asks of
    its kernel, and OTR's own)."""

    def __init__(self, spec: KernelSpec) -> None:
        if (spec.width == 512) != (spec.encoding == "evex"):
            raise ValueError(f"{spec.name}: the OTR skeleton runs on xmm and ymm (SSE, VEX) "
                             f"and zmm (EVEX)")
        self.spec = spec
        self.version = VERSIONS[spec.mode]
        self.table = load_table("x86_64")
        take_conventions(self, spec)
        self.engine = engine_for(spec)
        self.lanes = spec.width // 128
        self.batch = BATCH[spec.width]
        self.doubling = spec.hash
        self.layout = layout(self.lanes)
        # what the GCM frame's pieces look at
        self.karatsuba = self.sliced_hash = self.table_hash = False
        self.short_records = self.masked_tails = self.spills = False
        self.face_rounds = 0
        self.run = None

    def body(self, entry: str, doc: str) -> "Body":
        b = KernelBuilder(self.table, self.spec.symbol(entry), doc=doc)
        return Body(self, b, VectorOps(b, self.spec.encoding))

    def timing_warning(self) -> str | None:
        """Why the kernel is NOT constant time (the table method's T-table rounds, a
        doubling by table lookups), or None."""
        if self.spec.method == "table":
            return NOT_CONSTANT_TIME
        if self.doubling in TABLE_METHODS:
            return (f"NOT CONSTANT TIME: the {self.doubling} doubling reads a table at an "
                    f"index made of the mask's top bits")
        return None


class Body(GcmBody):
    """One entry point: the GCM frame's small pieces and OTR's layers (skeleton.py)."""

    def __post_init__(self) -> None:
        super().__post_init__()
        self.dbl = Doubling(self.b, self.v, self.k.doubling)
        self.cur: Reg | None = None          # the mask chain: lanes consecutive masks
        self.sums: dict[int, Reg] = {}       # width -> checksum (or AD sum) per lane

    # --- small pieces ------------------------------------------------------------------
    def _table(self, name: str, data: bytes, offset: Reg) -> Reg:
        """16 bytes of a constant table from ``offset`` (a register) on, in a register."""
        base = self.b.gp()
        self.a.lea(base, self.b.const(name, data))
        y = self.b.xmm()
        self.v.load(y, Mem(128, base=base, index=offset), aligned=False)
        return y

    def _from_end(self, n: Reg, extra: int = 16) -> Reg:
        """extra - n in a new register."""
        t = self.b.gp()
        self.a.mov(t, Imm(extra))
        self.a.sub(t, n)
        return t

    def first_bytes(self, n: Reg) -> Reg:
        return self._table("first_bytes", FIRST_BYTES, self._from_end(n))

    def pad_bit(self, n: Reg) -> Reg:
        return self._table("pad_bit", PAD_BIT, self._from_end(n))

    def load_partial(self, ptr: Reg, n: Reg) -> Reg:
        """The n (0..16) bytes at ptr, zero after them; nothing read past them."""
        y = self.b.xmm()
        if self.v.evex:
            self.v.first_bytes_mask(kmask(1), n)
            self.v.load_masked(y, Mem(128, base=ptr), kmask(1))
        else:
            self.v.store(self.f("SCRATCH"), self.zero_vec())
            short_move(self.b, n, src=ptr, dst=self.addr("SCRATCH"), largest=16)
            self.v.load(y, self.f("SCRATCH"))
        return y

    def store_partial(self, ptr: Reg, n: Reg, y: Reg) -> None:
        """The first n (0..16) bytes of y to ptr; nothing written past them."""
        if self.v.evex:
            self.v.first_bytes_mask(kmask(1), n)
            self.v.store_masked(Mem(128, base=ptr), y, kmask(1))
        else:
            self.v.store(self.f("SCRATCH"), y)
            short_move(self.b, n, src=self.addr("SCRATCH"), dst=ptr, largest=16)

    def block_order(self, x: Reg) -> Reg:
        y = self.b.vec(x.width)
        self.dbl.reverse(y, x)
        return y

    def keys(self) -> Keys:
        lay = self.k.layout
        return KeysInContext(self.ctx, None, 128, lanes=self.k.lanes,
                             wide=lay.offset("ROUND_KEYS_WIDE") if self.k.lanes > 1 else 0)

    def loop_keys(self, bits: int) -> Keys:
        """The pipelined loop's round keys: the last RESIDENT_KEYS of them loaded into
        registers here (before the loop) where the engine keeps keys resident, the others
        read where used."""
        keys, nr = self.keys(), ROUNDS[bits]
        w = self.k.spec.width
        n = RESIDENT_KEYS.get(w, 0) if self.k.engine.resident_keys else 0
        if n:
            keys.resident = [None] * (nr + 1)
            for r in range(nr + 1 - n, nr + 1):
                keys.resident[r] = self.b.vec(w)
                self.v.load(keys.resident[r], Mem(w, base=self.ctx,
                                                  disp=keys.wide + 16 * self.k.lanes * r),
                            aligned=True)
        return keys

    def aes_blocks(self, blocks: list[Reg], bits: int, keys: Keys | None = None) -> None:
        with self.b.phase("aes"):
            self.rounds(keys or self.keys(), blocks, 0, ROUNDS[bits], ROUNDS[bits])

    # --- init --------------------------------------------------------------------------
    def keep_q(self) -> None:
        """Q = E(0) for the key size init stored, in integer order; on ymm and zmm the
        round keys copied into every lane (all 15: a shorter key's last ones are zero)."""
        if self.k.lanes > 1:
            w = self.k.spec.width
            for r in range(15):
                wide = self.b.vec(w)
                self.v.broadcast_lane(wide, Mem(128, base=self.ctx,
                                                disp=ctx_layout.ROUND_KEYS + 16 * r))
                self.v.store(self.f("ROUND_KEYS_WIDE", w // 8 * r, w), wide)
        q = self.zero_vec()
        self.aes_any_size(q)
        self.v.store(self.f("Q"), self.block_order(q))

    # --- Format, the AD and the nonce ---------------------------------------------------
    def format_block(self, nonce: Reg, nonce_len: Reg, tag_len: Reg) -> Reg:
        """F (section 4): the nonce in the last nonce_len bytes, 0x01 in the byte before,
        (8 tau mod 128) << 1 in byte 0. A 12-byte nonce is read a byte at a time; another
        length goes through SCRATCH."""
        a, b, v = self.a, self.b, self.v
        f = b.xmm()
        t = b.gp()
        a.mov(t, tag_len)
        b.emit("and", t, Imm(15))
        a.shl(t, Imm(4))                                 # ((8 tau) mod 128) << 1
        general, built = b.label("format_any"), b.label("format_built")
        self.isa.compare_jump(b, "ne", nonce_len, 12, general)
        b.emit("or", t, Imm(0x01000000))                # byte 3: the mark before 12 bytes
        # read a byte at a time (GCM's nonce_block): a wide load of a nonce the caller
        # just wrote would wait for its stores to reach the cache
        v.shift_bytes_left(f, nonce_block(self, nonce), 4)
        self.isa.jump(b, built)
        b.bind(general)
        v.store(self.f("SCRATCH"), self.zero_vec())
        at = b.gp()
        a.mov(at, nonce_len)
        b.emit("neg", at)
        a.lea(at, Mem(64, base=self.ctx, index=at, disp=self.k.layout.offset("SCRATCH") + 16))
        short_move(b, nonce_len, src=nonce, dst=at, largest=8)
        v.load(f, self.f("SCRATCH"))
        one = b.gp()
        a.lea(one, Mem(64, base=nonce_len, disp=1))
        v.or_(f, f, self._table("mark", MARK, one))
        b.bind(built)
        m = b.xmm()
        v.load_u32(m, t.w32)
        v.or_(f, f, m)
        return f

    def digest_and_nonce(self, aad: Reg, aad_len: Reg, f: Reg, bits: int) -> tuple[Reg, Reg]:
        """(what the tag takes of TA, what the masks start from) (sections 6, 7, 10): TA = 0
        for no AD, else E(S) with S the AD's parallel sum (p) or the end of its CBC chain
        (s), the last AES beside U = E(F). p: (TA, U); s: (0, U ^ TA)."""
        b, v = self.b, self.v
        ta, u = b.xmm(), b.xmm()
        v.copy(u, f)
        v.xor(ta, ta, ta)
        no_ad, joined = b.label("no_ad"), b.label("ad_done")
        self.isa.jump_if_zero(b, aad_len, no_ad)
        s = (self.ad_chain if self.k.version.serial else self.ad_sum)(aad, aad_len, bits)
        v.copy(ta, s)
        self.aes_blocks([ta, u], bits)
        self.isa.jump(b, joined)
        b.bind(no_ad)
        self.aes_blocks([u], bits)
        b.bind(joined)
        if self.k.version.serial:                     # TA enters through the masks
            v.xor(u, u, ta)
            v.xor(ta, ta, ta)
        return ta, u

    def ad_chain(self, aad: Reg, aad_len: Reg, bits: int) -> Reg:
        """X of section 6 (s) for aad_len >= 1, before its last AES: the h - 1 full blocks
        through a CBC chain from 0, one AES after the other; then pad(A_h) ^ 4Q (full) or
        2Q (v2: J for Q)."""
        a, b, v = self.a, self.b, self.v
        x = self.zero_vec()
        src, n = b.gp(), b.gp()
        self.isa.move(b, src, aad)
        a.lea(n, Mem(64, base=aad_len, disp=-1))
        b.emit("and", n, Imm(-16))                       # the h - 1 full blocks' bytes
        top, done = b.label("ad_chain"), b.label("ad_chain_done")
        with b.region(f"ad-{bits}"):
            b.bind(top)
            with b.phase("loop"):
                self.isa.jump_if_zero(b, n, done)
            v.xor(x, x, Mem(128, base=src), unaligned=True)
            self.aes_blocks([x], bits)
            with b.phase("loop"):
                a.add(src, Imm(16))
                a.sub(n, Imm(16))
                self.isa.jump(b, top)
        b.bind(done)
        rest = b.gp()
        a.mov(rest, aad_len)
        a.sub(rest, self._consumed(aad_len))
        y = self.load_partial(src, rest)
        v.or_(y, y, self.pad_bit(rest))
        v.xor(x, x, y)
        q = b.xmm()
        v.load(q, self.f("Q"))
        twice = self.dbl.double(q)
        full, join = b.label("ad_chain_full"), b.label("ad_chain_end")
        off = b.xmm()
        self.isa.compare_jump(b, "eq", rest, 16, full)
        v.copy(off, twice)                               # 2Q
        self.isa.jump(b, join)
        b.bind(full)
        v.copy(off, self.dbl.double(twice))              # 4Q
        b.bind(join)
        v.xor(x, x, self.block_order(off))
        return x

    def ad_sum(self, aad: Reg, aad_len: Reg, bits: int) -> Reg:
        """S of section 6 (p) for aad_len >= 1: the h - 1 full blocks each E(mask ^ A_j),
        masks Q, 2Q, 4Q, ... (v2: 4J, 8J, ...), summed; then pad(A_h) ^ (5 or 3) 2^(h-1) Q
        (v2: 2^(h-1) 4J ^ (2J or J)), 5 and 2J when A_h is full."""
        a, b, v, k = self.a, self.b, self.v, self.k
        q = b.xmm()
        v.load(q, self.f("Q"))
        base = self.dbl.times_power(q, 2) if k.version.v2 else q
        self._start_chain(base)
        src, n = b.gp(), b.gp()
        self.isa.move(b, src, aad)
        a.lea(n, Mem(64, base=aad_len, disp=-1))
        b.emit("and", n, Imm(-16))                       # the h - 1 full blocks' bytes
        self.sums = {}

        def step(regs: int, width: int) -> None:
            blocks = []
            for j, m in enumerate(self._masks(regs, width, False)):
                x = b.vec(width)
                v.xor(x, m, Mem(width, base=src, disp=j * width // 8), unaligned=True)
                blocks.append(x)
            self.aes_blocks(blocks, bits)
            for x in blocks:
                self._sum(x)
            a.add(src, Imm(regs * width // 8))
            a.sub(n, Imm(regs * width // 8))
        self._steps("ad", f"ad-{bits}", n, 16, step)
        last = self._last_lane()                          # 2^(h-1) times the base
        rest = b.gp()
        a.mov(rest, aad_len)
        a.sub(rest, self._consumed(aad_len))
        s = self._fold_sums()
        y = self.load_partial(src, rest)
        v.or_(y, y, self.pad_bit(rest))
        v.xor(s, s, y)
        full, done = b.label("ad_full"), b.label("ad_last_done")
        off = b.xmm()
        self.isa.compare_jump(b, "eq", rest, 16, full)
        if k.version.v2:                                   # + J
            v.xor(off, last, q)
        else:                                              # 3 = 2 + 1
            v.xor(off, last, self.dbl.double(last))
        self.isa.jump(b, done)
        b.bind(full)
        if k.version.v2:                                   # + 2J
            v.xor(off, last, self.dbl.double(q))
        else:                                              # 5 = 4 + 1
            v.xor(off, last, self.dbl.times_power(last, 2))
        b.bind(done)
        v.xor(s, s, self.block_order(off))
        return s

    def _consumed(self, aad_len: Reg) -> Reg:
        """The bytes of the h - 1 full AD blocks, again (the loop consumed its count)."""
        n = self.b.gp()
        self.a.lea(n, Mem(64, base=aad_len, disp=-1))
        self.b.emit("and", n, Imm(-16))
        return n

    # --- the mask chain and the per-lane sums ------------------------------------------
    def _start_chain(self, x: Reg) -> None:
        """The chain from X (integer order): lanes X, 2X, 4X, ..."""
        self.cur = self.b.vec(self.k.spec.width)
        self.v.copy(self.cur, self.dbl.consecutive(x, self.k.spec.width))

    def _last_lane(self) -> Reg:
        """The chain's next mask (lane 0), as an xmm value."""
        m = self.b.xmm()
        self.v.copy(m, self.cur.view(128))
        return m

    def _masks(self, regs: int, width: int, pairs: bool, delta: bool = False,
               swap: bool = False):
        """For each of the next ``regs`` registers of ``width`` bits, in turn, yield its
        first masks (block order), and the chain moves past them. With ``pairs`` its second
        masks go to MASKS (register j at j): v3.1 a lane's mask ^ the next lane's (3 L_i),
        v2 (``delta``: DELTA_BLOCK) the mask ^ U; with ``swap`` (decryption's order) the
        second masks are yielded and the first ones kept."""
        b, v, w, lanes = self.b, self.v, self.k.spec.width, self.k.lanes
        size = width // 8

        def keep(j: int, first: Reg, following: Reg | None) -> Reg:
            if not pairs:
                return first
            s = b.vec(width)
            v.xor(s, first, self.f("DELTA_BLOCK", 0, width) if delta
                  else self._shift_lanes(first, following))
            one, two = (s, first) if swap else (first, s)
            v.store(self.f("MASKS", j * size, width), two)
            return one

        if width == w:
            m = self.cur
            with b.phase("masks"):
                first = self.block_order(m)
            # one step moves a register of masks any 2^k (clmul): each register's masks
            # straight from the batch's first ones, not a chain through the batch;
            # batch-table: all of them from one pair of lookups
            from_first = self.dbl.method in ("clmul", "batch-table")
            ahead = None
            if self.dbl.method == "batch-table":
                with b.phase("masks"):
                    ahead = self.dbl.times_powers(self.cur, [lanes * (j + 1)
                                                             for j in range(regs)])
            for j in range(regs):
                with b.phase("masks"):
                    nxt = (ahead[j] if ahead is not None
                           else self.dbl.times_power(self.cur, lanes * (j + 1)) if from_first
                           else self.dbl.times_power(m, lanes))
                    following = (self.block_order(nxt) if j + 1 < regs or pairs and not delta
                                 else None)
                    one = keep(j, first, following)
                yield one
                m, first = nxt, following
            with b.phase("masks"):
                v.copy(self.cur, m)
            return
        with b.phase("masks"):                           # one register, fewer lanes
            m = b.vec(width)
            v.copy(m, self.cur.view(width))
            following = None
            if pairs and not delta:
                following = self.block_order(self._lanes_on(self.cur, width)).view(width)
            first = self.block_order(m)
            if following is not None:                   # its lanes are the next ones
                s2 = b.vec(width)
                v.xor(s2, first, following)
                one, two = (s2, first) if swap else (first, s2)
                v.store(self.f("MASKS", 0, width), two)
            else:
                one = keep(0, first, None)
            v.copy(self.cur, self.dbl.times_power(self.cur, width // 128))
        yield one

    def _shift_lanes(self, m: Reg, nxt: Reg) -> Reg:
        """A register whose lane i is m's lane i + 1, the last nxt's lane 0."""
        b = self.b
        if m.width == 128:
            return nxt
        s = b.vec(m.width)
        if m.width == 256:
            b.emit("vperm2i128", s, m, nxt, Imm(0x21))
        else:
            b.emit("valignq", s, nxt, m, Imm(2))
        return s

    def _lanes_on(self, cur: Reg, width: int) -> Reg:
        """cur's lanes 1 .. width/128 as a register of ``width`` bits (fewer than cur's)."""
        b = self.b
        s = b.vec(cur.width)
        if cur.width == 256:
            b.emit("vperm2i128", s, cur, cur, Imm(0x01))
        else:
            b.emit("valignq", s, cur, cur, Imm(2))
        return s.view(width)

    def _sum(self, x: Reg) -> None:
        """The per-lane sum of its width += x."""
        if x.width not in self.sums:
            self.sums[x.width] = self.b.vec(x.width)
            self.v.xor(self.sums[x.width], self.sums[x.width], self.sums[x.width])
        self.v.xor(self.sums[x.width], self.sums[x.width], x)

    def _open_sums(self, widths) -> None:
        """Zeroed per-lane sums of these widths (before the steps that add to them)."""
        for w in sorted(set(widths)):
            self.sums[w] = self.b.vec(w)
            self.v.xor(self.sums[w], self.sums[w], self.sums[w])

    def _fold_sums(self) -> Reg:
        """Every per-lane sum folded into one block (a new xmm register)."""
        b, v = self.b, self.v
        total = self.zero_vec()
        for w, s in sorted(self.sums.items(), reverse=True):
            x = s
            while x.width > 128:
                half = b.vec(x.width // 2)
                if x.width == 512:
                    b.emit("vextracti64x4", half, x, Imm(1))
                elif v.evex:
                    b.emit("vextracti32x4", half, x, Imm(1))
                else:
                    b.emit("vextracti128", half, x, Imm(1))
                v.xor(half, half, x.view(x.width // 2))
                x = half
            v.xor(total, total, x)
        self.sums = {}
        return total

    def _widths(self) -> list[int]:
        w = self.k.spec.width
        return sorted({min(w, 128 * s) for s in halves(self.k.batch * self.k.lanes)})

    def _steps(self, name: str, region: str, n: Reg, unit: int, step) -> None:
        """step(regs, width) over n bytes of ``unit``-byte lanes: whole batches in a loop,
        then each half of a batch at most once (n is consumed; what is left is below a
        unit). Opens the per-lane sums of every width a step may add to."""
        b, isa, w = self.b, self.isa, self.k.spec.width
        batch = self.k.batch * self.k.lanes
        self.sums = {}
        self._open_sums([w])
        top, done = b.label(f"{name}_batch"), b.label(f"{name}_batches_done")
        with b.region(region):
            b.bind(top)
            with b.phase("loop"):
                isa.compare_jump(b, "b", n, unit * batch, done)
            with b.phase("load_store"):             # the data's moves and XORs
                step(self.k.batch, w)
            with b.phase("loop"):
                isa.jump(b, top)
        b.bind(done)
        self._ladder(name, n, unit, step)

    def _ladder(self, name: str, n: Reg, unit: int, step) -> None:
        """Each half of a batch at most once, after its loop (zeroing the sums of the
        widths below a register first)."""
        b, isa, w = self.b, self.isa, self.k.spec.width
        batch = self.k.batch * self.k.lanes
        self._open_sums(set(self._widths()) - {w})     # after the loop: fewer registers
        for size in halves(batch)[1:]:                 # live in it
            skip = b.label(f"{name}{size}_none")
            with b.region(f"ladder-{name}"):
                with b.phase("loop"):
                    isa.compare_jump(b, "b", n, unit * size, skip)
                width = min(w, 128 * size)
                with b.phase("load_store"):
                    step(size * 128 // width, width)
            b.bind(skip)

    def _pipelined(self, n: Reg, begin, rounds, middle, end, moved, src: Reg, dst: Reg,
                   bits: int) -> None:
        """Whole batches of pairs with two batches in flight: each iteration runs the first
        Feistel round of the batch it loads beside the second round of the one before
        (stitched), so twice a batch's registers of AES are in flight and no round waits
        for a batch to drain. The first batch's first round runs alone before the loop,
        the last one's second round after it."""
        b, isa, v, w = self.b, self.isa, self.v, self.k.spec.width
        regs, bytes_ = self.k.batch, 2 * w // 8 * self.k.batch
        self.sums = {}
        self._open_sums([w])
        none, top, drain = (b.label(x) for x in ("pipe_none", "pipe_top", "pipe_drain"))
        with b.region(f"first-{bits}"):
            with b.phase("loop"):
                isa.compare_jump(b, "b", n, bytes_, none)
            with b.phase("aes"):
                keys = self.loop_keys(bits)
            with b.phase("load_store"):
                prev = begin(regs, w)
                moved(regs, w, src)
                with b.phase("loop"):
                    self.a.sub(n, Imm(bytes_))
                rounds(prev, keys)
                middle(prev, bytes_)
        with b.region(f"steady-{bits}"):
            b.bind(top)
            with b.phase("loop"):
                isa.compare_jump(b, "b", n, bytes_, drain)
            with b.phase("load_store"):
                cur = begin(regs, w)
                moved(regs, w, src)
                with b.phase("loop"):
                    self.a.sub(n, Imm(bytes_))
                self.beside(lambda: rounds(cur, keys), lambda: rounds(prev, keys))
                end(prev, 2 * bytes_)
                moved(regs, w, dst)
                middle(cur, bytes_)
                for key in ("xs", "states", "ps"):      # the next iteration's batch before
                    for old, new in zip(prev[key], cur[key]):
                        if isinstance(old, Reg):        # (xmm: blocks read where used)
                            v.copy(old, new)
            with b.phase("loop"):
                isa.jump(b, top)
        b.bind(drain)
        with b.region(f"drain-{bits}"), b.phase("load_store"):
            rounds(prev, keys)
            end(prev, bytes_)
            moved(regs, w, dst)
        b.bind(none)

    # --- pairs, the tail and the tag ------------------------------------------------------
    def _deal(self, lo: Reg, hi: Reg) -> tuple[Reg, Reg]:
        """Two registers of pairs as they lie (first, second, first, ...) -> a register of
        their first blocks and one of their second blocks; and back (the same moves)."""
        b, v = self.b, self.v
        if lo.width == 128:
            return lo, hi
        x, y = b.vec(lo.width), b.vec(lo.width)
        if lo.width == 256:
            if v.evex:
                b.emit("vshufi32x4", x, lo, hi, Imm(0b00))
                b.emit("vshufi32x4", y, lo, hi, Imm(0b11))
            else:
                b.emit("vperm2i128", x, lo, hi, Imm(0x20))
                b.emit("vperm2i128", y, lo, hi, Imm(0x31))
        else:
            b.emit("vshufi32x4", x, lo, hi, Imm(0x88))   # lanes 0, 2 of lo, then of hi
            b.emit("vshufi32x4", y, lo, hi, Imm(0xDD))   # lanes 1, 3
        return x, y

    def _dealt(self, src: Reg, disp: int, width: int, which: str) -> Reg:
        """The first (or second) blocks of the pairs at src + disp (two ymm registers'
        worth): two loads and one lane move."""
        b = self.b
        lo, hi, out = b.vec(width), b.vec(width), b.vec(width)
        self.v.load(lo, Mem(width, base=src, disp=disp), aligned=False)
        self.v.load(hi, Mem(width, base=src, disp=disp + width // 8), aligned=False)
        b.emit("vperm2i128", out, lo, hi, Imm(0x20 if which == "first" else 0x31))
        return out

    def _interleave(self, p: Reg, q: Reg) -> tuple[Reg, Reg]:
        """Registers of first and second outputs -> the pairs as they lie."""
        b = self.b
        if p.width < 512:
            return self._deal(p, q)
        out = []
        for half, lanes in (("lo", (0, 1)), ("hi", (2, 3))):
            # qword indexes into p (0..7) then q (8..15): p's lane, q's lane, ...
            idx = [i for lane in lanes for i in (2 * lane, 2 * lane + 1,
                                                 8 + 2 * lane, 8 + 2 * lane + 1)]
            r = b.vec(512)
            self.v.load(r, b.const(f"interleave_{half}", b"".join(
                i.to_bytes(8, "little") for i in idx), align=64))
            b.emit("vpermi2q", r, p, q)                  # the index register is written
            out.append(r)
        return out[0], out[1]

    def crypt(self, bits: int, u: Reg, inp: Reg, length: Reg, out: Reg,
              decrypt: bool) -> Reg:
        """The pairs and the tail (sections 8.2 to 8.4, 9) from U: out written; the
        checksum with its final mask returned (block order)."""
        a, b, v, k, isa = self.a, self.b, self.v, self.k, self.isa
        w, lanes = k.spec.width, k.lanes
        ur = self.block_order(u)                          # U (s: U ^ TA), integer order
        delta = k.version.v2
        if delta:                                         # second masks L_i ^ U
            v.store(self.f("DELTA"), ur)
            wide = b.vec(w)
            v.broadcast_register(wide, u)
            v.store(self.f("DELTA_BLOCK", 0, w), wide)
        factor = k.version.nonce_factor                   # L = U, 2U or 4U
        self._start_chain(self.dbl.times_power(ur, factor.bit_length() - 1) if factor > 1
                          else ur)
        src, dst, n = b.gp(), b.gp(), b.gp()
        isa.move(b, src, inp)
        isa.move(b, dst, out)
        # the pairs' bytes: all but the last 1..32 (none of none)
        empty = b.label("no_pairs")
        isa.clear(b, n)
        isa.jump_if_zero(b, length, empty)
        a.lea(n, Mem(64, base=length, disp=-1))
        b.emit("and", n, Imm(-32))
        b.bind(empty)

        kept_aside = lanes < 4          # 16 registers: a batch's first outputs wait in OUT1
        redeal = lanes == 2             # ymm: a batch's blocks are not kept in registers

        def begin(regs: int, width: int) -> dict:
            """A batch's masks, its pairs loaded (and dealt), the first round's inputs."""
            size = width // 8
            # decryption: the second mask meets the first ciphertext block
            masks = self._masks(regs, width, True, delta, swap=decrypt)
            xs, ys, states = [], [], []
            for j, m in enumerate(masks):
                with b.phase("load_store"):
                    if width == 128:     # read where used (as memory operands)
                        x, y = (Mem(128, base=src, disp=32 * j),
                                Mem(128, base=src, disp=32 * j + 16))
                    elif redeal and width == w:
                        # ymm: dealt again where used (two batches in flight do not fit
                        # 16 registers with their blocks)
                        x, y = (("first", 2 * size * j), ("second", 2 * size * j))
                        st = b.vec(width)
                        v.xor(st, m, self._dealt(src, 2 * size * j, width, "first"))
                        xs.append(x)
                        ys.append(y)
                        states.append(st)
                        continue
                    else:
                        lo, hi = b.vec(width), b.vec(width)
                        v.load(lo, Mem(width, base=src, disp=2 * size * j), aligned=False)
                        v.load(hi, Mem(width, base=src, disp=2 * size * j + size),
                               aligned=False)
                        x, y = self._deal(lo, hi)
                xs.append(x)
                ys.append(y)
                st = b.vec(width)
                v.xor(st, m, x, unaligned=True)
                states.append(st)
            return {"regs": regs, "width": width, "xs": xs, "ys": ys, "states": states}

        def rounds(bt: dict, keys: Keys | None = None) -> None:
            self.aes_blocks(bt["states"], bits, keys)

        def back(x, by: int):
            """A block read where used (xmm: a memory operand; ymm: loaded and dealt again
            there), its address as src has moved on by ``by``."""
            if isinstance(x, Mem):
                return Mem(x.width, base=src, disp=x.disp - by)
            if isinstance(x, tuple):
                which, disp = x
                return self._dealt(src, disp - by, w, which)
            return x

        def middle(bt: dict, moved_by: int = 0) -> None:
            """After the first round: the first outputs (kept in registers on zmm, else in
            OUT1), the checksum (encryption), the second round's inputs."""
            width, size = bt["width"], bt["width"] // 8
            ps = []
            for j, (y, st) in enumerate(zip(bt["ys"], bt["states"])):
                y = back(y, moved_by)
                v.xor(st, st, y, unaligned=True)
                if kept_aside:
                    v.store(self.f("OUT1", j * size, width), st)
                    ps.append(None)
                else:
                    p = b.vec(width)
                    v.copy(p, st)
                    ps.append(p)
                if not decrypt:
                    self._sum_of(y, width)
                v.xor(st, st, self.f("MASKS", j * size, width))
            bt["ps"] = ps

        def end(bt: dict, moved_by: int = 0) -> None:
            """After the second round: the second outputs, the checksum (decryption), the
            pairs dealt back and stored at dst."""
            width, size = bt["width"], bt["width"] // 8
            with b.phase("load_store"):
                for j, (x, t, p) in enumerate(zip(bt["xs"], bt["states"], bt["ps"])):
                    v.xor(t, t, back(x, moved_by), unaligned=True)
                    if decrypt:
                        self._sum(t)
                    if p is None:
                        p = b.vec(width)
                        v.load(p, self.f("OUT1", j * size, width))
                    lo, hi = self._interleave(p, t)
                    v.store(Mem(width, base=dst, disp=2 * size * j), lo, aligned=False)
                    v.store(Mem(width, base=dst, disp=2 * size * j + size), hi,
                            aligned=False)

        def moved(regs: int, width: int, *ptrs: Reg) -> None:
            with b.phase("loop"):
                for r in ptrs:
                    a.add(r, Imm(2 * width // 8 * regs))

        def step(regs: int, width: int) -> None:
            bt = begin(regs, width)
            rounds(bt)
            middle(bt)
            rounds(bt)
            end(bt)
            moved(regs, width, src, dst)
            with b.phase("loop"):
                a.sub(n, Imm(2 * width // 8 * regs))

        # the reports' steady state: one iteration, a batch of pairs loaded and one
        # written (2 batch registers of blocks)
        self._pipelined(n, begin, rounds, middle, end, moved, src, dst, bits)
        self._ladder("pairs", n, 32, step)
        sigma = self._fold_sums()
        lf = self._last_lane()
        rest = b.gp()
        a.mov(rest, length)
        a.sub(rest, self._pair_bytes(length))
        return self._tail(bits, src, dst, rest, decrypt, lf, sigma)

    def _sum_of(self, y, width: int) -> None:
        """The checksum += y (a register, or a block in memory)."""
        if isinstance(y, Mem):
            t = self.b.vec(width)
            self.v.load(t, y, aligned=False)
            y = t
        self._sum(y)

    def _pair_bytes(self, length: Reg) -> Reg:
        """The whole pairs' bytes of a message of ``length`` bytes, again."""
        b, a = self.b, self.a
        n = b.gp()
        empty = b.label("no_pairs_again")
        self.isa.clear(b, n)
        self.isa.jump_if_zero(b, length, empty)
        a.lea(n, Mem(64, base=length, disp=-1))
        b.emit("and", n, Imm(-32))
        b.bind(empty)
        return n

    def _tail(self, bits: int, src: Reg, dst: Reg, r: Reg, decrypt: bool, lf: Reg,
              sigma: Reg) -> Reg:
        """The last r (0..32) bytes (section 8.3, 9) with Lf (integer order) and the final
        mask (8.4): the checksum ready for E, block order."""
        a, b, v, k = self.a, self.b, self.v, self.k
        la = b.xmm()                         # the final mask's base
        ur = None
        if k.version.v2:                     # U (integer order), kept in DELTA
            ur = b.xmm()
            v.load(ur, self.f("DELTA"))
        case_b, full, last, done = (b.label(x) for x in ("tail_b", "tail_full",
                                                           "tail_partial", "tail_done"))
        with b.region("tail"), b.phase("tail"):
            self.isa.compare_jump(b, "a", r, 16, case_b)
            # case a: Z = E(Lf), the tail XOR its first r bytes, pad(plaintext) summed
            z = self.block_order(lf)
            self.aes_blocks([z], bits)
            x = self.load_partial(src, r)
            y = b.xmm()
            v.xor(y, x, z)
            v.and_(y, y, self.first_bytes(r))
            self.store_partial(dst, r, y)
            plain = y if decrypt else x
            v.or_(plain, plain, self.pad_bit(r))
            v.xor(sigma, sigma, plain)
            v.copy(la, lf)
            self.isa.compare_jump(b, "eq", r, 16, full)
            self.isa.jump(b, last)
            # case b: a pair whose second block has r - 16 bytes
            b.bind(case_b)
            rb = b.gp()
            a.lea(rb, Mem(64, base=r, disp=-16))
            if k.version.v2:
                lstar = b.xmm()
                v.xor(lstar, lf, ur)
            else:
                lstar = b.xmm()
                v.xor(lstar, lf, self.dbl.double(lf))
            first = b.xmm()
            v.load(first, Mem(128, base=src), aligned=False)
            part = self.load_partial(self._plus(src, 16), rb)
            mask = self.first_bytes(rb)
            if not decrypt:
                zz = self.block_order(lf)
                v.xor(zz, zz, first)
                self.aes_blocks([zz], bits)              # Z = E(Lf ^ X)
                cy = b.xmm()
                v.xor(cy, part, zz)
                v.and_(cy, cy, mask)     # C_Y
                pcy = b.xmm()
                v.or_(pcy, cy, self.pad_bit(rb))
                s2 = self.block_order(lstar)
                v.xor(s2, s2, pcy)
                self.aes_blocks([s2], bits)
                v.xor(s2, s2, first)                     # C_X
                v.store(Mem(128, base=dst), s2, aligned=False)
                self.store_partial(self._plus(dst, 16), rb, cy)
            else:
                pcy = b.xmm()
                v.or_(pcy, part, self.pad_bit(rb))
                s1 = self.block_order(lstar)
                v.xor(s1, s1, pcy)
                self.aes_blocks([s1], bits)
                v.xor(s1, s1, first)                     # X
                zz = self.block_order(lf)
                v.xor(zz, zz, s1)
                self.aes_blocks([zz], bits)              # Z = E(Lf ^ X)
                yy = b.xmm()
                v.xor(yy, part, zz)
                v.and_(yy, yy, mask)     # Y
                v.store(Mem(128, base=dst), s1, aligned=False)
                self.store_partial(self._plus(dst, 16), rb, yy)
            v.xor(sigma, sigma, zz)
            v.xor(sigma, sigma, pcy)
            v.copy(la, lstar)
            self.isa.compare_jump(b, "ne", r, 32, last)
            # the final mask: v3.1 7 La (last block full) or 5 La; v2 3 La (+ U when full)
            b.bind(full)
            off = b.xmm()
            d2 = self.dbl.double(la)
            if k.version.v2:
                v.xor(off, la, d2)
                v.xor(off, off, ur)
            else:
                v.xor(off, la, d2)
                v.xor(off, off, self.dbl.double(d2))
            self.isa.jump(b, done)
            b.bind(last)
            d2 = self.dbl.double(la)
            if k.version.v2:
                v.xor(off, la, d2)
            else:
                v.xor(off, la, self.dbl.double(d2))
            b.bind(done)
            v.xor(sigma, sigma, self.block_order(off))
        return sigma

    def _plus(self, p: Reg, disp: int) -> Reg:
        r = self.b.gp()
        self.a.lea(r, Mem(64, base=p, disp=disp))
        return r

    def tag_block(self, sigma: Reg, ta: Reg, bits: int) -> Reg:
        """E(checksum) ^ TA (p: the AD's digest enters here)."""
        self.aes_blocks([sigma], bits)
        self.v.xor(sigma, sigma, ta)
        return sigma


def build_kernel(spec: KernelSpec) -> BuiltKernel:
    """The OTR skeleton on x86-64 (modes/: the mode descriptor names it)."""
    k = OtrKernel(spec)
    functions = build_all(k)
    abi = {entry: k.conv for entry in functions}
    # registers of blocks a batch: its registers of pairs hold two blocks each
    return BuiltKernel(functions, k.layout.size, tuple(k.layout.table()),
                       public_fields=k.layout.public_names(), abi=abi,
                       interleave=2 * k.batch if 2 * k.batch != spec.interleave else None,
                       timing_warning=k.timing_warning())
