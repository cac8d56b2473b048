"""AES-OTR on AArch64 (method armv8-ce): the layers its skeleton (skeleton.py) runs over. They
extend the AArch64 GCM frame (modes/gcm/aarch64.py: arguments, context fields, short
pieces, the engine's AESE/AESMC rounds with the round keys resident, the last round with
the data folded into EOR3 where the preset has FEAT_SHA3, the tag's store and constant-time
compare) with OTR's own, as x86_64.py extends the x86 GCM frame:

- masks in *block order* (gf128/aarch64/doubling.py): byte lanes shift and EXT moves bytes,
  so a doubling is Krovetz's 5 instructions on the block as it is, and no mask is ever
  byte-reversed (x86 keeps them in integer order for its dword and qword lanes); one chain,
  one doubling a pair, the AND's constant and the round keys in registers for the whole
  message;
- pairs in flight: a batch of 8 pairs (16 blocks), the first Feistel round of all 8, then
  the second, each round the engine's round-major AESE/AESMC stream (the fused pairs
  adjacent, 8 independent blocks between a block's rounds); a block's first round is
  emitted as soon as its mask is made, so the doubling chain runs between them. The 32
  vector registers hold the round keys (11 or 15), the 8 states, the mask chain, the
  checksum and the doubling's constant; what waits between the rounds goes through the
  context: the second-round masks
  (MASKS, stored as the chain makes them, read back after the first round) and the first
  outputs (OUT1, read back beside the second outputs for one STP a pair). Those are loads
  and stores, which run on their own pipes beside the AES pipe; the inputs are read again
  where used (LDR: the first block for the first round and again for the second round's
  last XOR, the second block after the first round), so out may be in. Then 4, 2 and 1 pairs
  each at most once, then the tail;
- masks carry round key 0: AESE adds its key before SubBytes, so AESE(x, L_i ^ rk0) is
  AESE(x ^ L_i, rk0), and the first round of a block takes its mask as the key instead of
  an XOR into the block. A pair's first mask is then L_i ^ rk0 (one EOR) and its second
  that XOR the next mask (v3.1: 3 L_i ^ rk0 = (L_i ^ rk0) ^ L_(i+1), the doubling made
  anyway) or XOR U (v2, from DELTA): the second Feistel round starts from the first output
  with no XOR either. Decryption swaps the two masks. A pair costs 5 + 2 vector
  instructions of masks and 5 of data (the last rounds' XORs of the last key and the data,
  two EOR3 with FEAT_SHA3; the checksum) beside its 2 x 19 (AES-128) AESE/AESMC;
- the checksum of second blocks in one register (EOR a pair);
- the AD in parallel (p) in batches of 8 blocks under their masks, or serially (s) by a
  CBC chain; TA kept in the context until the tag (p), or XORed into U (s);
- partial blocks through the context: the keystream's first bytes XORed by the short
  pieces (arch/aarch64/short_bytes.py, TBZ on the length's bits), pad() by zeroing PADDED,
  moving the bytes in and storing 0x80 after them (a byte store at an offset of the
  length, public), so no table and no byte mask is needed.
"""
from __future__ import annotations

from ...dsl.builder import KernelBuilder
from ...dsl.operands import Imm, Mem, Reg
from ...gf128.aarch64.doubling import Doubling
from ...isa.table import load_table
from ...kernels import ctx_layout
from ...kernels.a64.engine_choice import engine_for
from ...kernels.fields import Field, FieldLayout
from ...kernels.spec import ROUNDS, KernelSpec
from .. import BuiltKernel
from ..gcm.aarch64 import Body as GcmBody
from ..gcm.skeleton import ENGINE_PHASES
from .skeleton import VERSIONS, build_all

# pairs a batch (16 blocks: the first Feistel round of 8 pairs, then the second); then each
# half of it once
BATCH = 8
# AD blocks a batch (p): one AES each, all independent
AD_BATCH = 8
# blocks whose last rounds meet their data together, the loads first (two independent
# chains between a load and its use, for an in-order core)
GROUP = 2
PAD = 0x80


def layout(batch: int) -> FieldLayout:
    """The context: the cipher section, Q, what a batch keeps between its Feistel rounds,
    the message's U (v2) and TA (p), and the partial blocks' room."""
    return FieldLayout.build(ctx_layout.CIPHER_FIELDS + [
        Field("mode", "Q", 16, 16, "Q = E_K(0) (v2: J), block order"),
        Field("mode", "MASKS", 16 * batch, 64, "the second-round masks of the batch in "
              "flight (decryption: the first-round ones), XOR round key 0, block order"),
        Field("mode", "OUT1", 16 * batch, 64, "the batch's first outputs while its second "
              "round runs"),
        Field("mode", "DELTA", 16, 16, "v2: U (s: U ^ TA), the second masks' offset"),
        Field("mode", "TA", 16, 16, "p: the AD's digest TA, XORed into the tag"),
        Field("mode", "SCRATCH", 16, 16, "the keystream of a partial block; Format of a "
              "nonce not of 12 bytes; the tag being written or compared"),
        Field("mode", "PADDED", 32, 16, "pad() of a partial block: its bytes, 0x80, zeros"),
    ])


def ladder(batch: int) -> list[int]:
    """A batch, then each half down to 1: whole batches loop, the rest takes each once."""
    sizes = [batch]
    while sizes[-1] > 1:
        sizes.append(sizes[-1] // 2)
    return sizes


class OtrKernel:
    """Shared facts while one OTR kernel's entry points are built (what the AArch64 GCM
    frame asks of its kernel, and OTR's own)."""

    def __init__(self, spec: KernelSpec) -> None:
        if spec.method != "armv8-ce":
            raise ValueError(f"{spec.name}: the AArch64 OTR skeleton takes armv8-ce "
                             f"(AESE/AESMC), not {spec.method}")
        self.spec = spec
        self.version = VERSIONS[spec.mode]
        self.table = load_table("aarch64")
        self.engine = engine_for(spec)
        self.lanes = 1
        self.batch = BATCH
        self.doubling = spec.hash
        self.layout = layout(BATCH)
        # what the GCM frame's pieces look at
        self.karatsuba = False
        self.short_records = self.masked_tails = False
        self.face_rounds = 0
        self.run = None

    def hash_engine(self, b: KernelBuilder, f):
        """OTR's hash engine is its mask doubling."""
        return Doubling(b, self.doubling)

    def body(self, entry: str, doc: str) -> "Body":
        return Body(self, KernelBuilder(self.table, self.spec.symbol(entry), doc=doc))


class Body(GcmBody):
    """One entry point: the AArch64 GCM frame's small pieces and OTR's layers
    (skeleton.py)."""

    def __post_init__(self) -> None:
        super().__post_init__()
        self.dbl: Doubling = self.hash
        # key size -> (the round keys, the doubling's constant), loaded once a message
        self.ready: dict[int, tuple] = {}

    # --- small pieces ------------------------------------------------------------------
    def _ready(self, bits: int) -> tuple:
        """The round keys of the key size and the doubling's constant, in registers from
        the first use on (the message's first step: it dominates the rest)."""
        if bits not in self.ready:
            with self.b.phase("aes"):
                keys = self.k.engine.prepare(self.k, self.b, self.ctx, bits)
            with self.b.phase("masks"):
                keep = self.dbl.constant()
            self.ready[bits] = (keys, keep)
        return self.ready[bits]

    def _copy(self, r: Reg) -> Reg:
        c = self.b.gp()
        self.a.mov(c, r)
        return c

    def _plus(self, p: Reg, disp: int) -> Reg:
        r = self.b.gp()
        self.a.add(r, p, Imm(disp))
        return r

    def _xor(self, dst: Reg, x: Reg, y: Reg) -> Reg:
        self.a.eor(dst.b16, x.b16, y.b16)
        return dst

    def _new_xor(self, x: Reg, y: Reg) -> Reg:
        return self._xor(self.b.vec(128), x, y)

    def load_padded(self, ptr: Reg, n: Reg) -> Reg:
        """pad() of the n (0..16) bytes at ptr: them, 0x80 after them when n < 16, zeros;
        nothing read past them (ptr may be NULL when n is 0)."""
        a, b = self.a, self.b
        self.store_block("PADDED", self.zero_block())
        self.short_move(n, src=self._copy(ptr), dst=self.addr("PADDED"), largest=16)
        end, t = self.addr("PADDED", n), b.gp()
        a.mov(t.w, Imm(PAD))
        a.strb(t.w, Mem(8, base=end))       # at byte 16 (outside the block) when n = 16
        y = b.vec(128)
        self.load_block(y, "PADDED")
        return y

    def xor_out(self, z: Reg, src: Reg, dst: Reg, n: Reg) -> None:
        """dst[0..n) = src[0..n) ^ the first n (0..16) bytes of z, through SCRATCH."""
        self.store_block("SCRATCH", z)
        self.short_move(n, src=self._copy(src), dst=self._copy(dst),
                        xor=self.addr("SCRATCH"), largest=16)

    def aes_blocks(self, blocks: list[Reg], bits: int) -> None:
        keys, _ = self._ready(bits)
        self.aes(blocks, bits, keys)

    def _last_round(self, keys, x: Reg, data: Reg, bits: int) -> None:
        """x = the last round of x, XOR data (EOR3 of the last key and the data with
        FEAT_SHA3)."""
        with self.b.phase("aes"), self.b.phase_names(ENGINE_PHASES):
            self.k.engine.last_round(self.k, self.b, keys, [x], ROUNDS[bits], [data])

    # --- init --------------------------------------------------------------------------
    def keep_q(self) -> None:
        """Q = E(0) (v2: J) for the key size init stored, block order."""
        q = self.zero_block()
        self.aes_any_size(q)
        self.store_block("Q", q)

    # --- Format, the AD and the nonce ---------------------------------------------------
    def format_block(self, nonce: Reg, nonce_len: Reg, tag_len: Reg) -> Reg:
        """F (section 4): the nonce in the last nonce_len bytes, 0x01 in the byte before,
        (8 tau mod 128) << 1 in byte 0. A 12-byte nonce takes two loads into a register;
        another length goes through SCRATCH."""
        a, b, isa = self.a, self.b, self.isa
        t = b.gp()
        b.emit("and", t, tag_len, Imm(15))
        a.lsl(t, t, Imm(4))                         # ((8 tau) mod 128) << 1
        f = b.vec(128)
        general, built = b.label("format_any"), b.label("format_built")
        isa.compare_jump(b, "ne", nonce_len, 12, general)
        b.emit("orr", t, t, Imm(0x01000000))        # byte 3: the mark before 12 bytes
        lo, hi, z = b.vec(128), b.vec(128), b.vec(128)
        a.ldr(lo.d, Mem(64, base=nonce))
        a.ldr(hi.s, Mem(32, base=nonce, disp=8))
        a.ins(lo.lane_view("s", 2), hi.lane_view("s", 0))
        a.movi(z.d2, Imm(0))
        a.ext(f.b16, z.b16, lo.b16, Imm(12))        # 4 zero bytes, then the nonce
        a.ins(f.lane_view("s", 0), t.w)
        isa.jump(b, built)
        b.bind(general)
        self.store_block("SCRATCH", self.zero_block())
        mark = self.addr("SCRATCH")
        a.add(mark, mark, Imm(15))
        a.sub(mark, mark, nonce_len)                # byte 15 - nonce_len
        one = b.gp()
        a.mov(one.w, Imm(1))
        a.strb(one.w, Mem(8, base=mark))
        self.short_move(nonce_len, src=self._copy(nonce), dst=self._plus(mark, 1))
        self.load_block(f, "SCRATCH")
        m = b.vec(128)
        a.fmov(m.s, t.w)                            # byte 0 (a 15-byte nonce's mark too)
        a.orr(f.b16, f.b16, m.b16)
        b.bind(built)
        return f

    def digest_and_nonce(self, aad: Reg, aad_len: Reg, f: Reg, bits: int) -> tuple:
        """(where the tag takes TA from, what the masks start from) (sections 6, 7, 10):
        TA = 0 for no AD, else E(S) with S the AD's parallel sum (p) or the end of its CBC
        chain (s), that last AES beside U = E(F). p: ("TA", U) with TA in the context; s:
        (None, U ^ TA)."""
        b, isa = self.b, self.isa
        serial = self.k.version.serial
        self._ready(bits)
        u = f
        no_ad, joined = b.label("no_ad"), b.label("ad_done")
        isa.jump_if_zero(b, aad_len, no_ad)
        s = (self.ad_chain if serial else self.ad_sum)(aad, aad_len, bits)
        self.aes_blocks([s, u], bits)
        if serial:                                  # TA enters through the masks
            self._xor(u, u, s)
        else:
            self.store_block("TA", s)
        isa.jump(b, joined)
        b.bind(no_ad)
        self.aes_blocks([u], bits)
        if not serial:
            self.store_block("TA", self.zero_block())
        b.bind(joined)
        return (None if serial else "TA"), u

    def _full_blocks(self, length: Reg) -> Reg:
        """The bytes of all but the last 1..16 of length bytes (length >= 1)."""
        n = self.b.gp()
        self.a.sub(n, length, Imm(1))
        self.b.emit("and", n, n, Imm(2**64 - 16))
        return n

    def ad_chain(self, aad: Reg, aad_len: Reg, bits: int) -> Reg:
        """X of section 6 (s) for aad_len >= 1, before its last AES: the h - 1 full blocks
        through a CBC chain from 0, one AES after the other; then pad(A_h) ^ 4Q (full) or
        2Q (v2: J for Q)."""
        a, b, isa = self.a, self.b, self.isa
        _, keep = self._ready(bits)
        x = self.zero_block()
        src = self._copy(aad)
        n = self._full_blocks(aad_len)
        rest = b.gp()
        a.sub(rest, aad_len, n)                     # 1..16
        top, done = b.label("ad_chain"), b.label("ad_chain_done")
        with b.region(f"ad-{bits}"):
            b.bind(top)
            with b.phase("loop"):
                isa.jump_if_zero(b, n, done)
            y = b.vec(128)
            with b.phase("load_store"):
                a.ldr(y.q, Mem(128, base=src, disp=16, writeback="post"))
                self._xor(x, x, y)
            self.aes_blocks([x], bits)
            with b.phase("loop"):
                a.sub(n, n, Imm(16))
                isa.jump(b, top)
        b.bind(done)
        self._xor(x, x, self.load_padded(src, rest))
        q = b.vec(128)
        self.load_block(q, "Q")
        twice = self.dbl.double(q, keep)
        off = b.vec(128)
        full, join = b.label("ad_chain_full"), b.label("ad_chain_end")
        isa.compare_jump(b, "eq", rest, 16, full)
        a.mov(off.b16, twice.b16)                   # 2Q
        isa.jump(b, join)
        b.bind(full)
        self.dbl.double(twice, keep, dst=off)       # 4Q
        b.bind(join)
        return self._xor(x, x, off)

    def ad_sum(self, aad: Reg, aad_len: Reg, bits: int) -> Reg:
        """S of section 6 (p) for aad_len >= 1: the h - 1 full blocks each E(mask ^ A_j),
        masks Q, 2Q, 4Q, ... (v2: 4J, 8J, ...), summed; then pad(A_h) ^ (5 or 3) 2^(h-1) Q
        (v2: 2^(h-1) 4J ^ (2J or J)), 5 and 2J when A_h is full."""
        a, b, isa, k = self.a, self.b, self.isa, self.k
        keys, keep = self._ready(bits)
        nr = ROUNDS[bits]
        q = b.vec(128)
        self.load_block(q, "Q")
        chain = b.vec(128)
        with b.phase("masks"):
            if k.version.v2:                        # 4J
                self.dbl.double(self.dbl.double(q, keep), keep, dst=chain)
            else:
                a.mov(chain.b16, q.b16)
        s = self.zero_block()
        src = self._copy(aad)
        n = self._full_blocks(aad_len)
        rest = b.gp()
        a.sub(rest, aad_len, n)                     # 1..16

        def step(count: int) -> None:
            states = []
            for j in range(count):
                x = b.vec(128)
                with b.phase("load_store"):
                    a.ldr(x.q, Mem(128, base=src, disp=16 * j))
                    self._xor(x, x, chain)
                with b.phase("masks"):
                    self.dbl.double(chain, keep, dst=chain)
                states.append(x)
            with b.phase("aes"):
                self.rounds(keys, states, 0, nr, nr)
            with b.phase("load_store"):
                for x in states:
                    self._xor(s, s, x)
            with b.phase("loop"):
                a.add(src, src, Imm(16 * count))
        self._batches("ad", f"ad-{bits}", n, 16, AD_BATCH, step)
        # chain = 2^(h-1) times the base
        self._xor(s, s, self.load_padded(src, rest))
        off = b.vec(128)
        full, done = b.label("ad_full"), b.label("ad_last_done")
        isa.compare_jump(b, "eq", rest, 16, full)
        if k.version.v2:                            # + J
            self.load_block(q, "Q")
            self._xor(off, chain, q)
        else:                                       # 3 = 2 + 1
            self._xor(off, chain, self.dbl.double(chain, keep))
        isa.jump(b, done)
        b.bind(full)
        if k.version.v2:                            # + 2J
            self.load_block(q, "Q")
            self._xor(off, chain, self.dbl.double(q, keep))
        else:                                       # 5 = 4 + 1
            self._xor(off, chain, self.dbl.times_power(chain, 2, keep))
        b.bind(done)
        return self._xor(s, s, off)

    def _batches(self, name: str, region: str, n: Reg, unit: int, batch: int,
                 step) -> None:
        """step(count) over n bytes of ``unit``-byte items: whole batches of ``batch`` in a
        loop (in ``region``), then each half of a batch at most once. n is consumed (what
        is left is below a unit); step moves its pointers."""
        a, b, isa = self.a, self.b, self.isa
        top, done = b.label(f"{name}_batch"), b.label(f"{name}_batches_done")
        with b.region(region):
            b.bind(top)
            with b.phase("loop"):
                isa.compare_jump(b, "b", n, unit * batch, done)
            step(batch)
            with b.phase("loop"):
                a.sub(n, n, Imm(unit * batch))
                isa.jump(b, top)
        b.bind(done)
        for size in ladder(batch)[1:]:
            skip = b.label(f"{name}{size}_none")
            with b.region(f"ladder-{name}"):
                with b.phase("loop"):
                    isa.compare_jump(b, "b", n, unit * size, skip)
                step(size)
                with b.phase("loop"):
                    a.sub(n, n, Imm(unit * size))
            b.bind(skip)

    # --- pairs, the tail and the tag ------------------------------------------------------
    def crypt(self, bits: int, u: Reg, inp: Reg, length: Reg, out: Reg,
              decrypt: bool) -> Reg:
        """The pairs and the tail (sections 8.2 to 8.4, 9) from U (s: U ^ TA): out written;
        the checksum with its final mask returned."""
        a, b, isa, k = self.a, self.b, self.isa, self.k
        keys, keep = self._ready(bits)
        nr = ROUNDS[bits]
        v2 = k.version.v2
        if v2:                                      # second masks L_i ^ U
            self.store_block("DELTA", u)
        chain = b.vec(128)                          # L = U, 2U or 4U
        with b.phase("masks"):
            factor = k.version.nonce_factor.bit_length() - 1
            if factor == 0:
                a.mov(chain.b16, u.b16)
            else:
                x = u
                for _ in range(factor - 1):
                    x = self.dbl.double(x, keep)
                self.dbl.double(x, keep, dst=chain)
        sigma = self.zero_block()
        src, dst = self._copy(inp), self._copy(out)
        # the pairs' bytes: all but the last 1..32 (none of none); r the rest
        n = b.gp()
        empty = b.label("no_pairs")
        isa.clear(b, n)
        isa.jump_if_zero(b, length, empty)
        a.sub(n, length, Imm(1))
        b.emit("and", n, n, Imm(2**64 - 32))
        b.bind(empty)
        r = b.gp()
        a.sub(r, length, n)

        rk0 = keys.regs[0]

        def round_one(x: Reg, key: Reg) -> None:
            """The first AES round of x with a mask folded into its key (AESE adds the key
            first): AESE(x, mask ^ rk0) = AESE(x ^ mask, rk0)."""
            with b.phase("aes"):
                a.aese(x.b16, key.b16)
                a.aesmc(x.b16, x.b16)

        def step(count: int) -> None:
            """count pairs: masks, the first Feistel round of all, then the second, stored.
            A mask carries round key 0 (round_one): the first masks' XOR with the data
            becomes the first AESE's key, and the second masks follow from them by one XOR
            each (v3.1: (L_i ^ rk0) ^ L_(i+1); v2: (L_i ^ rk0) ^ U)."""
            delta = None
            if v2:
                with b.phase("masks"):
                    delta = b.vec(128)
                    self.load_block(delta, "DELTA")
            states, cur = [], chain
            for j in range(count):
                with b.phase("masks"):
                    # the chain's register ends the batch holding the next mask
                    into = chain if j == count - 1 and cur is not chain else None
                    nxt = self.dbl.double(cur, keep, dst=into)
                    c0 = self._new_xor(cur, rk0)
                    c1 = self._new_xor(c0, delta if v2 else nxt)
                first, second = (c1, c0) if decrypt else (c0, c1)
                x = b.vec(128)
                with b.phase("load_store"):
                    a.str(second.q, self.f("MASKS", 16 * j))
                    a.ldr(x.q, Mem(128, base=src, disp=32 * j))
                round_one(x, first)
                states.append(x)
                cur = nxt
            if cur is not chain:
                with b.phase("masks"):
                    a.mov(chain.b16, cur.b16)
            with b.phase("aes"):
                self.rounds(keys, states, 2, nr - 1, nr)
            for g in range(0, count, GROUP):        # first outputs, second inputs
                js = list(range(g, min(g + GROUP, count)))
                ys, ms = {}, {}
                with b.phase("load_store"):
                    for j in js:
                        ys[j] = b.vec(128)
                        a.ldr(ys[j].q, Mem(128, base=src, disp=32 * j + 16))
                for j in js:
                    self._last_round(keys, states[j], ys[j], bits)
                with b.phase("load_store"):
                    for j in js:
                        if not decrypt:
                            self._xor(sigma, sigma, ys[j])
                        a.str(states[j].q, self.f("OUT1", 16 * j))
                    for j in js:
                        ms[j] = b.vec(128)
                        a.ldr(ms[j].q, self.f("MASKS", 16 * j))
                for j in js:
                    round_one(states[j], ms[j])
            with b.phase("aes"):
                self.rounds(keys, states, 2, nr - 1, nr)
            for g in range(0, count, GROUP):        # second outputs
                js = list(range(g, min(g + GROUP, count)))
                xs, ps = {}, {}
                with b.phase("load_store"):
                    for j in js:
                        xs[j] = b.vec(128)
                        a.ldr(xs[j].q, Mem(128, base=src, disp=32 * j))
                for j in js:
                    self._last_round(keys, states[j], xs[j], bits)
                with b.phase("load_store"):
                    for j in js:
                        if decrypt:
                            self._xor(sigma, sigma, states[j])
                        ps[j] = b.vec(128)
                        a.ldr(ps[j].q, self.f("OUT1", 16 * j))
                    for j in js:
                        a.stp(ps[j].q, states[j].q, Mem(256, base=dst, disp=32 * j))
            with b.phase("loop"):
                a.add(src, src, Imm(32 * count))
                a.add(dst, dst, Imm(32 * count))

        self._batches("pairs", f"steady-{bits}", n, 32, k.batch, step)
        return self._tail(bits, src, dst, r, decrypt, chain, sigma)

    def _tail(self, bits: int, src: Reg, dst: Reg, r: Reg, decrypt: bool, lf: Reg,
              sigma: Reg) -> Reg:
        """The last r (0..32) bytes (section 8.3, 9) with Lf and the final mask (8.4): the
        checksum ready for E."""
        a, b, isa, k = self.a, self.b, self.isa, self.k
        _, keep = self._ready(bits)
        v2 = k.version.v2
        la, off = b.vec(128), b.vec(128)            # the final mask's base; its multiple
        case_b, full, last, done = (b.label(x) for x in ("tail_b", "tail_full",
                                                           "tail_partial", "tail_done"))
        with b.region("tail"), b.phase("tail"):
            isa.compare_jump(b, "a", r, 16, case_b)
            # case a: Z = E(Lf), the tail XOR its first r bytes, pad(plaintext) summed
            z = b.vec(128)
            a.mov(z.b16, lf.b16)
            self.aes_blocks([z], bits)
            if not decrypt:                          # before out (may be in) is written
                plain = self.load_padded(src, r)
            self.xor_out(z, src, dst, r)
            if decrypt:
                plain = self.load_padded(dst, r)
            self._xor(sigma, sigma, plain)
            a.mov(la.b16, lf.b16)
            isa.compare_jump(b, "eq", r, 16, full)
            isa.jump(b, last)
            # case b: a pair whose second block has r - 16 bytes
            b.bind(case_b)
            rb = b.gp()
            a.sub(rb, r, Imm(16))
            if v2:
                delta = b.vec(128)
                self.load_block(delta, "DELTA")
                lstar = self._new_xor(lf, delta)
            else:
                lstar = self._new_xor(lf, self.dbl.double(lf, keep))
            first = b.vec(128)
            a.ldr(first.q, Mem(128, base=src))
            src2, dst2 = self._plus(src, 16), self._plus(dst, 16)
            if not decrypt:
                zz = self._new_xor(lf, first)
                self.aes_blocks([zz], bits)          # Z = E(Lf ^ X)
                self.xor_out(zz, src2, dst2, rb)     # C_Y
                pcy = self.load_padded(dst2, rb)
                s2 = self._new_xor(lstar, pcy)
                self.aes_blocks([s2], bits)
                self._xor(s2, s2, first)             # C_X
                a.str(s2.q, Mem(128, base=dst))
            else:
                pcy = self.load_padded(src2, rb)     # before out (may be in) is written
                s1 = self._new_xor(lstar, pcy)
                self.aes_blocks([s1], bits)
                self._xor(s1, s1, first)             # X
                zz = self._new_xor(lf, s1)
                self.aes_blocks([zz], bits)          # Z = E(Lf ^ X)
                self.xor_out(zz, src2, dst2, rb)     # Y
                a.str(s1.q, Mem(128, base=dst))
            self._xor(sigma, sigma, zz)
            self._xor(sigma, sigma, pcy)
            a.mov(la.b16, lstar.b16)
            isa.compare_jump(b, "ne", r, 32, last)
            # the final mask: v3.1 7 La (last block full) or 5 La; v2 3 La (+ U when full)
            b.bind(full)
            d2 = self.dbl.double(la, keep)
            self._xor(off, la, d2)
            if v2:
                delta = b.vec(128)
                self.load_block(delta, "DELTA")
                self._xor(off, off, delta)
            else:
                self._xor(off, off, self.dbl.double(d2, keep))
            isa.jump(b, done)
            b.bind(last)
            d2 = self.dbl.double(la, keep)
            if v2:
                self._xor(off, la, d2)
            else:
                self._xor(off, la, self.dbl.double(d2, keep))
            b.bind(done)
            self._xor(sigma, sigma, off)
        return sigma

    def tag_block(self, sigma: Reg, ta, bits: int) -> Reg:
        """E(checksum), XOR TA (p: the AD's digest, from the context)."""
        self.aes_blocks([sigma], bits)
        if ta is not None:
            t = self.b.vec(128)
            self.load_block(t, ta)
            self._xor(sigma, sigma, t)
        return sigma


def build_kernel(spec: KernelSpec) -> BuiltKernel:
    """The OTR skeleton on AArch64 (modes/: the mode descriptor names it)."""
    k = OtrKernel(spec)
    functions = build_all(k)
    # blocks a batch: its pairs hold two each
    return BuiltKernel(functions, k.layout.size, tuple(k.layout.table()),
                       public_fields=k.layout.public_names(),
                       interleave=2 * k.batch if 2 * k.batch != spec.interleave else None)
