"""AES-GCM-SIV (RFC 8452) on x86-64: the layers its skeleton (skeleton.py) runs over. They
extend the GCM frame (modes/gcm/x86_64.py: arguments, context fields, short pieces, the AES
engine's rounds, the carry-less hash over blocks in memory) with what GCM-SIV does
differently:

- the hash engine runs in POLYVAL's bit order (gf128/x86_64/clmul.py with ``polyval``):
  blocks are loaded as they are, H is the key itself; POLYVAL's dot is the engine's dot;
- per message, the keys are derived from the nonce (4 or 6 AES blocks of LE32(i) || nonce,
  their low halves), the encryption key is expanded in registers (AESENCLAST of the last
  word, broadcast rotated by PSHUFB, with the round constant as the key: SubWord(RotWord)
  ^ rcon in every column, as seed 002 recommends over AESKEYGENASSIST) into MSG_KEYS, and
  the powers of the authentication key (as many as a batch has blocks) are computed
  into H_POWERS by a tree of multiplies, on ymm and zmm several a multiply;
- the counter is the tag with bit 127 set, a little-endian 32-bit number in bytes 0..3:
  kept in block order, it steps by one PADDD of a constant on its lowest dword.
"""
from __future__ import annotations

import contextlib

from ...dsl.operands import Imm, Label, Mem, Reg, kmask
from ...gf128.x86_64 import bytesliced
from ...gf128.x86_64.bytesliced import ByteSlicedHash
from ...gf128.x86_64.clmul import ClmulHash, Products
from ...isa.table import load_table
from ...kernels import ctx_layout
from ...kernels.engine_choice import engine_for
from ...kernels.engines import Keys
from ...kernels.key_schedule import RCON
from ...kernels.spec import ROUNDS, KernelSpec
from ...kernels.vector_ops import VectorOps
from ...dsl.builder import KernelBuilder
from ...arch.x86_64.short_bytes import short_move
from .. import BuiltKernel
from ..gcm.short_record import nonce_block
from ..gcm.skeleton import BATCH
from ..gcm.x86_64 import ZMM_LOOP_REGISTERS, Body as GcmBody, take_conventions
from .skeleton import build_all, ladder, layout

# registers of blocks a batch, of the CTR loop and of the POLYVAL loop alike (the reports
# count one batch of each a block): 8, 16 or 32 blocks on xmm, ymm, zmm; POLYVAL reduces
# once a batch, by the powers H^(8 lanes) .. H^1 computed for every message
BATCH_REGISTERS = BATCH
# the key schedule's byte moves (PSHUFB controls): the last word of the key, rotated
# (RotWord), in every column; and not rotated (AES-256's SubWord)
ROT_LAST_WORD = bytes([13, 14, 15, 12] * 4)
LAST_WORD = bytes([12, 13, 14, 15] * 4)
# the POLYVAL result XOR the nonce loses bit 127; the counter block gains it
CLEAR_TOP = bytes([0xFF] * 15 + [0x7F])
SET_TOP = bytes(15) + bytes([0x80])


class GcmSivKernel:
    """Shared facts while one GCM-SIV kernel's entry points are built (what the GCM frame
    asks of its kernel, and the message's own)."""

    def __init__(self, spec: KernelSpec) -> None:
        if (spec.width == 512) != (spec.encoding == "evex"):
            raise ValueError(f"{spec.name}: the GCM-SIV skeleton runs on xmm and ymm (SSE, "
                             f"VEX) and zmm (EVEX)")
        self.spec = spec
        self.table = load_table("x86_64")
        take_conventions(self, spec)
        self.engine = engine_for(spec)
        self.lanes = spec.width // 128
        # the hash engine: the carry-less multiply at the cipher's width, or without it
        # (the gfni method's constant-time form) byte-sliced streams in the context
        self.sliced_hash = spec.hash == "bytesliced"
        if not self.sliced_hash and spec.method not in ("aesni", "vaes256", "vaes512"):
            raise ValueError(f"{spec.name}: GCM-SIV's carry-less POLYVAL stitches with AES "
                             f"instructions; the {spec.method} method hashes by the "
                             f"byte-sliced engine (hash 'bytesliced')")
        self.batch = self.hash_batch = BATCH_REGISTERS
        # a batch's powers, and one more: a message's end (fewer blocks than a batch, a
        # partial block, the length block) is hashed with one reduction (hash_rest)
        self.powers = BATCH_REGISTERS * self.lanes
        self.table_powers = self.powers + 1
        self.hash_width = spec.width
        self.karatsuba = spec.hash_multiply == "karatsuba"
        self.table_hash = False
        self.short_records = self.masked_tails = self.spills = False
        self.face_rounds = 0
        self.counter = spec.counter_policy
        self.layout = layout(self.table_powers, self.karatsuba,
                             bytesliced.fields() if self.sliced_hash else None)
        self.run = None

    def body(self, entry: str, doc: str) -> "Body":
        b = KernelBuilder(self.table, self.spec.symbol(entry), doc=doc)
        return (SlicedBody if self.sliced_hash else Body)(self, b,
                                                          VectorOps(b, self.spec.encoding))


class Body(GcmBody):
    """One entry point: the GCM frame's layers with the hash in POLYVAL's bit order, and
    the message's own (skeleton.py)."""

    def __post_init__(self) -> None:
        super().__post_init__()
        self.hash = ClmulHash(self.b, self.v, polyval=True)

    def hash_start(self) -> Reg:
        """POLYVAL's state before any block: zero, in a register."""
        return self.zero_vec()

    # --- the message's keys -----------------------------------------------------------
    def _nonce(self, nonce: Reg) -> Reg:
        """The 12 nonce bytes in bytes 0..11 of a register, 12..15 zero, read a byte at a
        time (GCM's nonce_block: the caller has often just written them, and a wide load
        of several stores waits for them to reach the cache) and nothing past the nonce."""
        return nonce_block(self, nonce)

    def message_keys_base(self) -> Reg:
        """The address the engine reads the message's round keys from (as ROUND_KEYS of a
        context there)."""
        r = self.b.gp()
        self.a.lea(r, Mem(64, base=self.ctx, disp=self.k.layout.offset("MSG_KEYS")
                          - ctx_layout.ROUND_KEYS))
        return r

    def derive(self, nonce: Reg, bits: int, lengths: tuple[Reg, Reg]) -> None:
        """The message's keys from the nonce (skeleton.py, step 1); ``lengths`` (the AAD's
        and the plaintext's) tell how many powers of H the message needs."""
        b, v = self.b, self.v
        with b.phase("derive"):
            n = self._nonce(nonce)
            v.shift_bytes_left(n, n, 4)                 # LE32(i) || nonce
            blocks = []
            for i in range(2 + bits // 64):
                blk = b.xmm()
                v.or_(blk, n, b.const(f"le32_{i}", i.to_bytes(16, "little")))
                blocks.append(blk)
            self.aes(blocks, bits)
            halves = []
            for lo, hi in zip(blocks[::2], blocks[1::2]):
                v.unpack_low_qwords(lo, lo, hi)
                halves.append(lo)
            auth, enc = halves[0], halves[1:]
            # two independent chains: the expansion with H's first powers spread through it
            self.keep_hash_key(auth, lengths, beside=lambda: self._expand(enc, bits))

    def _expand(self, enc: list[Reg], bits: int) -> None:
        """FIPS-197's key expansion of the message key in registers, each round key stored
        to MSG_KEYS: the next 4 words are the prefix XOR of the 4 before (3 shifts by a
        word) and SubWord(RotWord(last)) ^ rcon (AES-256: SubWord(last) every other round
        key), that made by AESENCLAST on the word broadcast by PSHUFB."""
        b, v = self.b, self.v
        keys = list(enc)
        for r, k in enumerate(keys):
            v.store(self.f("MSG_KEYS", 16 * r), k)
        zero = self.zero_vec()
        i = 0
        while len(keys) < ROUNDS[bits] + 1:
            prev, last = keys[-len(enc)], keys[-1]
            rotated = len(keys) % len(enc) == 0
            t = b.xmm()
            v.shuffle_bytes(t, last, b.const("rot_last_word" if rotated else "last_word",
                                             ROT_LAST_WORD if rotated else LAST_WORD))
            if rotated:
                v.aes_last_round(t, t, b.const(f"rcon{i}", bytes([RCON[i], 0, 0, 0]) * 4))
                i += 1
            else:
                v.aes_last_round(t, t, zero)
            k = b.xmm()
            s = b.xmm()
            v.copy(k, prev)
            for _ in range(3):
                v.shift_bytes_left(s, k if _ == 0 else s, 4)
                v.xor(k, k, s)
            v.xor(k, k, t)
            v.store(self.f("MSG_KEYS", 16 * len(keys)), k)
            keys.append(k)

    # --- POLYVAL ------------------------------------------------------------------------
    def keep_hash_key(self, h: Reg, lengths: tuple[Reg, Reg] | None = None,
                      beside=None) -> None:
        """The powers H^1 .. H^T of the message's H into H_POWERS (and their Karatsuba keys),
        by a tree, not a chain: H^i = H^(i-m) H^m for m the largest power of two below i,
        so the multiplies of one level are independent. On ymm and zmm, H^1 .. H^lanes so,
        then each wide register of lanes powers times H^m broadcast, lane by lane: T = 32
        on zmm takes 3 xmm and 7 zmm multiplies, 5 in a row (and H^33 one more). Those
        past H^f (f = lanes, at least 2) only when ``lengths`` say the message needs them:
        a message of AAD and plaintext up to f and f - 1 blocks (64 and 48 bytes on zmm,
        32 and 16 on xmm) is hashed by hash_rest alone, H^m for m <= f (the lengths are
        public). ``beside`` (straight-line code independent of H, the key expansion) is
        emitted first with the multiplies up to H^f spread through it, so neither chain
        waits for the other to be decoded."""
        k, b, v = self.k, self.b, self.v
        lanes, w, top = k.lanes, k.spec.width, k.table_powers

        def keep(i: int, p: Reg) -> None:       # p: H^i .. H^(i - lanes(p) + 1)
            v.store(self.power(i, p.width), p, aligned=p.width == 128)
            if k.karatsuba:
                v.store(self.power(i, p.width, "H_KARATSUBA"), self.hash.karatsuba_key(p),
                        aligned=p.width == 128)

        pw = {1: h}
        keep(1, h)

        def tree(i: int) -> None:
            m = 1 << ((i - 1).bit_length() - 1)
            pw[i] = self.hash.dot(pw[i - m], pw[m])
            keep(i, pw[i])
        first = max(lanes, 2)                   # always: enough for a short record
        if beside is None:
            for i in range(2, first + 1):
                tree(i)
        else:
            with b.capture() as other:
                beside()
            with b.capture() as mine:
                for i in range(2, first + 1):
                    tree(i)
            b.emit_stitched(other, mine)
        top_done = b.label("powers_done")
        if lengths is not None:
            more = b.label("powers_more")
            self.isa.compare_jump(b, "a", lengths[0], 16 * first, more)
            self.isa.compare_jump(b, "be", lengths[1], 16 * (first - 1), top_done)
            b.bind(more)
        if lanes == 1:
            for i in range(first + 1, k.powers + 1):
                tree(i)
        else:
            groups = {0: b.vec(w)}              # j -> H^(j+lanes) .. H^(j+1), one a lane
            v.join_lanes(groups[0], [pw[i] for i in range(lanes, 0, -1)])
            m = lanes
            while m < k.powers:
                hm = b.vec(w)
                v.broadcast_register(hm, groups[m - lanes].view(128))   # H^m in every lane
                for j in range(0, m, lanes):
                    p = self.hash.dot_lanes(groups[j], hm)
                    groups[m + j] = p
                    keep(m + j + lanes, p)
                m *= 2
            pw[k.powers] = groups[k.powers - lanes].view(128)
        for i in range(k.powers + 1, top + 1):  # past a batch: one at a time
            pw[i] = self.hash.dot(pw[i - 1], h)
            keep(i, pw[i])
        b.bind(top_done)

    def hash_bytes(self, x: Reg, ptr: Reg, length: Reg, region: str | None = None,
                   lengths: tuple[Reg, Reg] | None = None) -> None:
        """X through POLYVAL over length bytes at ptr, the last block zero-padded, and with
        ``lengths`` (the AAD's and the plaintext's) the length block after them; ptr and
        length are the caller's (copies are consumed). Whole batches in a loop (in
        ``region`` when given: the reports' steady state), the rest by hash_rest."""
        a, b, isa = self.a, self.b, self.isa
        p, n = b.gp(), b.gp()
        isa.move(b, p, ptr)
        isa.move(b, n, length)
        w, batch = self.k.spec.width, self.k.powers
        with b.phase_names({"ghash_multiply": "polyval_multiply"}):
            top, next_ = b.label(f"polyval{batch}"), b.label(f"polyval{batch}_done")
            with b.region(region) if region else contextlib.nullcontext():
                b.bind(top)
                with b.phase("loop"):
                    isa.compare_jump(b, "b", n, 16 * batch, next_)
                # X's block multiplied last: the chain from one reduction to the next is
                # then one multiply, not the batch's
                self.hash_blocks(x, p, batch, width=w, x_last=True)
                with b.phase("loop"):
                    a.add(p, Imm(16 * batch))
                    a.sub(n, Imm(16 * batch))
                    a.jmp(top)
            b.bind(next_)
        self.hash_rest(x, p, n, lengths)

    def hash_rest(self, x: Reg, p: Reg, n: Reg, lengths: tuple[Reg, Reg] | None) -> None:
        """X through POLYVAL over the n bytes at p (fewer than a batch: the ladder's halves,
        a partial block zero-padded) and with ``lengths`` the length block, in one
        reduction: with m the blocks hashed here, X H^m + B1 H^m + B2 H^(m-1) + ... + L H,
        the powers read from H^m on through a pointer that advances past those used (m
        and the pointer depend on lengths alone). Products of each register width are
        summed apart, their lanes folded together before the reduction. p and n are
        consumed."""
        a, b, v, k = self.a, self.b, self.v, self.k
        w = k.spec.width
        apart = (k.layout.offset("H_KARATSUBA") - k.layout.offset("H_POWERS")
                 if k.karatsuba else 0)
        nothing = b.label("rest_nothing")
        if lengths is None:                     # m = 0: X stays as it is
            with b.phase("tail"):
                self.isa.jump_if_zero(b, n, nothing)
        pw = b.gp()                             # H^m: 16 (table_powers - m) into H_POWERS
        a.lea(pw, Mem(64, base=n, disp=15))
        b.emit("and", pw, Imm(-16))
        b.emit("neg", pw)
        a.lea(pw, Mem(64, base=self.ctx, index=pw, disp=k.layout.offset("H_POWERS")
                      + 16 * (k.table_powers - (1 if lengths else 0))))

        def power_at(disp: int, width: int, field: str = "H_POWERS") -> Mem:
            return Mem(width, base=pw, disp=disp + (apart if field == "H_KARATSUBA" else 0))

        def mul(y: Reg, acc):
            return self.mul_power_at(y, power_at(0, 128), acc)

        with b.phase_names({"ghash_multiply": "polyval_multiply"}), \
                b.phase("polyval_multiply"):
            sums = {}                           # width -> Products, zero to begin with
            for width in sorted({min(w, 128 * s) for s in ladder(k.powers)[1:]} - {128}):
                zero = [b.vec(width) for _ in range(3)]
                for r in zero:
                    v.xor(r, r, r)
                sums[width] = Products(*zero, karatsuba=k.karatsuba)
            sums[128] = mul(x, None)            # X H^m
            for size in ladder(k.powers)[1:]:
                width = min(w, 128 * size)
                lanes = width // 128
                skip = b.label(f"rest{size}_none")
                with b.phase("loop"):
                    self.isa.compare_jump(b, "b", n, 16 * size, skip)
                sums[width] = self.products(
                    None, p, size // lanes, 0, width,
                    lambda j, field, width=width, lanes=lanes: power_at(16 * lanes * j, width,
                                                                         field),
                    sums[width])
                with b.phase("loop"):
                    a.add(p, Imm(16 * size))
                    a.add(pw, Imm(16 * size))
                    a.sub(n, Imm(16 * size))
                b.bind(skip)
            last = b.label("rest_whole")
            with b.phase("tail"):
                self.isa.jump_if_zero(b, n, last)
                y = b.xmm()
                if v.evex:                      # a masked load: nothing read past the end
                    v.first_bytes_mask(kmask(1), n)
                    v.load_masked(y, Mem(128, base=p), kmask(1))
                else:
                    v.store(self.f("SCRATCH"), self.zero_vec())
                    short_move(b, n, src=p, dst=self.addr("SCRATCH"))
                    v.load(y, self.f("SCRATCH"))
                sums[128] = mul(y, sums[128])
                a.add(pw, Imm(16))
            b.bind(last)
            if lengths is not None:
                sums[128] = mul(self._length_block(lengths), sums[128])
            total = sums.pop(128)
            for part in sums.values():          # the wide sums' lanes onto the xmm one
                for mine, theirs in ((total.lo, part.lo), (total.hi, part.hi),
                                     (total.mi, part.mi)):
                    v.xor(mine, mine, self.hash.fold_lanes(theirs))
        with b.phase("reduction"):
            v.copy(x, self.hash.reduce(total))
        b.bind(nothing)

    def _length_block(self, lengths: tuple[Reg, Reg]) -> Reg:
        """The length block LE64(bits of AAD) || LE64(bits of text), in a register."""
        a, b, v = self.a, self.b, self.v
        aad_bits, msg_bits = b.gp(), b.gp()
        a.mov(aad_bits, lengths[0])
        a.shl(aad_bits, Imm(3))
        a.mov(msg_bits, lengths[1])
        a.shl(msg_bits, Imm(3))
        lens, t = b.xmm(), b.xmm()
        v.from_gp64(lens, aad_bits)
        v.from_gp64(t, msg_bits)
        v.unpack_low_qwords(lens, lens, t)
        return lens

    # --- the tag and the counter ---------------------------------------------------------
    def tag_block(self, x: Reg, nonce: Reg, bits: int) -> Reg:
        """AES under the message key of X XOR the nonce with bit 127 cleared."""
        b, v = self.b, self.v
        s = b.xmm()
        v.xor(s, x, self._nonce(nonce))
        v.and_(s, s, b.const("clear_top", CLEAR_TOP))
        with b.phase("aes"):
            self.rounds(Keys(self.message_keys_base(), None, 128), [s], 0, ROUNDS[bits],
                        ROUNDS[bits])
        return s

    def store_tag(self, ptr: Reg, tag: Reg) -> None:
        self.v.store(Mem(128, base=ptr), tag, aligned=False)

    def load_tag(self, ptr: Reg) -> Reg:
        t = self.b.xmm()
        self.v.load(t, Mem(128, base=ptr), aligned=False)
        return t

    def _step(self, n: int, width: int) -> Mem:
        """n in the counter dword of every lane (the le32 counter in bytes 0..3)."""
        lanes = width // 128
        return self.b.const(f"le32_{n}x{lanes}", n.to_bytes(16, "little") * lanes,
                            align=width // 8)

    def ctr_and_hash(self, bits: int, tag: Reg, inp: Reg, length: Reg, out: Reg,
                     x: Reg, lengths: tuple[Reg, Reg]) -> None:
        """ctr, and X through POLYVAL over what it writes (open's plaintext) and the length
        block: on zmm in one stitched loop (a batch's AES rounds beside the POLYVAL of the
        batch before); in 16 registers the two passes one after the other (a batch of each
        does not fit)."""
        if self.k.lanes == 4:
            self.ctr(bits, tag, inp, length, out, (x, lengths))
        else:
            self.ctr(bits, tag, inp, length, out)
            self.hash_bytes(x, out, length, lengths=lengths)

    def _ctr_keys(self, nr: int) -> Keys:
        """The message's round keys as CTR reads them: on zmm the last rounds' broadcast
        into registers before its loop, as many as the 32 registers leave beside a batch,
        the products of a register pair and the loop's own (GCM's budget,
        ZMM_LOOP_REGISTERS); the others, and every key elsewhere, loaded where used."""
        base = self.message_keys_base()
        k = self.k
        if k.lanes != 4 or not k.engine.resident_keys:
            return Keys(base, None, 128)
        room = (32 - k.batch - ZMM_LOOP_REGISTERS - (6 if k.karatsuba else 8)
                - k.engine.ROUND_TEMPORARIES)
        regs: list[Reg | None] = [None] * (nr + 1)
        for r in range(max(0, nr + 1 - room), nr + 1):
            regs[r] = self.b.vec(512)
            self.v.broadcast_lane(regs[r], Mem(128, base=base,
                                               disp=ctx_layout.ROUND_KEYS + 16 * r))
        return Keys(base, regs, 128)

    def ctr(self, bits: int, tag: Reg, inp: Reg, length: Reg, out: Reg,
            hashing: tuple | None = None) -> None:
        """out = in ^ AES-CTR from the tag with bit 127 set over length bytes: whole batches
        in a loop, the ladder's halves, and the block the message ends inside (masked on
        zmm; else its keystream in SCRATCH, the bytes moved by pieces). The counters of a
        register's lanes are consecutive; C's lanes hold the next ones. With ``hashing``
        (X, lengths), X also goes through POLYVAL over out as it is written and the length
        block: the batch loop a pipeline whose first batch is not hashed in its own
        iteration and whose last is hashed after it; what follows it by hash_rest."""
        x, lengths = hashing if hashing else (None, None)
        a, b, v, isa = self.a, self.b, self.v, self.isa
        nr, w = ROUNDS[bits], self.k.spec.width
        keys = self._ctr_keys(nr)
        lanes = w // 128
        c = b.xmm()
        v.or_(c, tag, b.const("set_top", SET_TOP))
        if lanes > 1:
            wide = b.vec(w)
            v.broadcast_register(wide, c)
            v.add_dwords(wide, wide, b.const(f"lane_counts{lanes}", b"".join(
                i.to_bytes(16, "little") for i in range(lanes)), align=w // 8))
            c = wide
        src, dst, n = b.gp(), b.gp(), b.gp()
        isa.move(b, src, inp)
        isa.move(b, dst, out)
        isa.move(b, n, length)
        end = b.label(f"ctr_end{bits}")
        batch = self.k.batch * lanes

        def crypt(n_blocks: int, hashing=None) -> None:
            """One step of n_blocks blocks: counters, rounds (beside ``hashing`` when
            given), out written, pointers advanced."""
            width = min(w, 128 * n_blocks)
            blocks = []
            with b.phase("counter"):
                for j in range(n_blocks * 128 // width):
                    blk = b.vec(width)
                    if j:
                        v.add_dwords(blk, c.view(width), self._step(j * width // 128, width))
                    else:
                        v.copy(blk, c.view(width))
                    blocks.append(blk)
                v.add_dwords(c, c, self._step(n_blocks, w))

            def rounds() -> None:
                with b.phase("aes"):
                    self.rounds(keys, blocks, 0, nr, nr)
            if hashing is None:
                rounds()
            else:
                self.beside(rounds, hashing)
            self.xor_store(blocks, src, dst)
            self.advance(src, dst, n, n_blocks)

        def previous_batch() -> None:                   # the batch just written
            self.hash_blocks(x, dst, batch, disp=-16 * batch, width=w)

        small = b.label(f"ctr_small{bits}")
        if x is not None:                               # the pipeline fills: one batch
            with b.region(f"first-{bits}"):
                with b.phase("loop"):
                    isa.compare_jump(b, "b", n, 16 * batch, small)
                crypt(batch)
        top, drain = b.label(f"ctr{batch}_{bits}"), b.label(f"ctr{batch}_done{bits}")
        with b.region(f"steady-{bits}"):
            b.bind(top)
            with b.phase("loop"):
                isa.compare_jump(b, "b", n, 16 * batch, drain)
            crypt(batch, previous_batch if x is not None else None)
            with b.phase("loop"):
                a.jmp(top)
        b.bind(drain)
        if x is not None:
            with b.region(f"drain-{bits}"):
                previous_batch()
        b.bind(small)
        if x is not None:                               # what hash_rest will hash
            rest, rest_n = b.gp(), b.gp()
            isa.move(b, rest, dst)
            isa.move(b, rest_n, n)
        for n_blocks in ladder(batch)[1:]:
            next_ = b.label(f"ctr{n_blocks}_done{bits}")
            with b.region(f"ladder-{bits}"):
                with b.phase("loop"):
                    isa.compare_jump(b, "b", n, 16 * n_blocks, next_)
                crypt(n_blocks)
            b.bind(next_)
        with b.region(f"tail-{bits}"), b.phase("tail"):
            isa.jump_if_zero(b, n, end)
            last = b.xmm()
            v.copy(last, c.view(128))
            with b.phase("aes"):
                self.rounds(keys, [last], 0, nr, nr)
            if v.evex:                      # masked: nothing read or written past the end
                k = kmask(1)
                v.first_bytes_mask(k, n)
                t = b.xmm()
                v.load_masked(t, Mem(128, base=src), k)
                v.xor(last, last, t)
                v.store_masked(Mem(128, base=dst), last, k)
            else:
                v.store(self.f("SCRATCH"), last)
                short_move(b, n, src=src, dst=dst, xor=self.addr("SCRATCH"))
        b.bind(end)
        if x is not None:
            self.hash_rest(x, rest, rest_n, lengths)


class SlicedBody(Body):
    """The same layers with POLYVAL by the byte-sliced engine (gf128/x86_64/bytesliced.py in
    POLYVAL's bit order: GF2P8AFFINEQB, no carry-less multiply) and the key expanded by the
    round engine (no AES instruction): the gfni method's constant-time form. POLYVAL's
    state is the engine's streams in the context (STREAMS, HASHED), so ``x`` is None
    until tag_block reads the value; the hash runs apart from the rounds (its multiply
    takes the registers), open's CTR and POLYVAL in two passes. Eight blocks a multiply,
    whatever their number: the matrices of H, H^2, H^4 and H^8 (8 KiB) are the message's
    set-up."""

    def __post_init__(self) -> None:
        super().__post_init__()
        self.streams = ByteSlicedHash(self.b, self.v, self.f, polyval=True)

    def hash_start(self) -> None:
        self.streams.reset("STREAMS", "HASHED")

    def _expand(self, enc: list[Reg], bits: int) -> None:
        """The round engine's key expansion (FIPS-197 word by word, its own SubWord) of
        the derived key, stored to SCRATCH for it, into MSG_KEYS."""
        for i, k in enumerate(enc):
            self.v.store(self.f("SCRATCH", 16 * i), k)
        self.k.engine.expand_key(self.k, self.b, self.message_keys_base(),
                                 self.addr("SCRATCH"), bits)

    def keep_hash_key(self, h: Reg, lengths: tuple[Reg, Reg] | None = None,
                      beside=None) -> None:
        """``beside`` (the key expansion), then the matrices of H, H^2, H^4 and H^8 under
        POLYVAL's dot (every message: the multiply is the same whatever the lengths)."""
        if beside is not None:
            beside()
        self.streams.setup(h)

    def hash_bytes(self, x: None, ptr: Reg, length: Reg, region: str | None = None,
                   lengths: tuple[Reg, Reg] | None = None) -> None:
        """The streams through POLYVAL over length bytes at ptr, the last block
        zero-padded, and with ``lengths`` the length block after them: 8 blocks a
        multiply, as many blocks an iteration as CTR's batch (in ``region`` when given: the
        reports count a block of each loop), then halves of it down to 1 block (8 a
        multiply), the partial block and the length block one multiply each. ptr and length are the caller's."""
        a, b, v, isa, s = self.a, self.b, self.v, self.isa, self.streams
        p, n = b.gp(), b.gp()
        isa.move(b, p, ptr)
        isa.move(b, n, length)
        batch = self.k.batch * self.k.lanes
        with b.phase_names({"ghash_multiply": "polyval_multiply"}):
            top, done = b.label(f"polyval{batch}"), b.label(f"polyval{batch}_done")
            with b.region(region) if region else contextlib.nullcontext():
                b.bind(top)
                with b.phase("loop"):
                    isa.compare_jump(b, "b", n, 16 * batch, done)
                s.absorb_blocks("STREAMS", "HASHED", p, batch)
                with b.phase("loop"):
                    a.add(p, Imm(16 * batch))
                    a.sub(n, Imm(16 * batch))
                    a.jmp(top)
            b.bind(done)
            for size in ladder(batch)[1:]:
                skip = b.label(f"polyval{size}_none")
                with b.phase("loop"):
                    isa.compare_jump(b, "b", n, 16 * size, skip)
                s.absorb_blocks("STREAMS", "HASHED", p, size)
                with b.phase("loop"):
                    a.add(p, Imm(16 * size))
                    a.sub(n, Imm(16 * size))
                b.bind(skip)
            whole = b.label("polyval_whole")
            with b.phase("tail"):
                isa.jump_if_zero(b, n, whole)
                v.store(self.f("SCRATCH"), self.zero_vec())
                short_move(b, n, src=p, dst=self.addr("SCRATCH"))
                y = b.xmm()
                v.load(y, self.f("SCRATCH"))
                s.absorb_block("STREAMS", "HASHED", y)
            b.bind(whole)
            if lengths is not None:             # LE64(bits of AAD) || LE64(bits of text)
                s.absorb_block("STREAMS", "HASHED", self._length_block(lengths))

    def tag_block(self, x: None, nonce: Reg, bits: int) -> Reg:
        """POLYVAL's value (the streams folded: they are not needed after it), then the
        tag as with the carry-less engines."""
        return super().tag_block(self.streams.value("STREAMS", "HASHED"), nonce, bits)

    def ctr_and_hash(self, bits: int, tag: Reg, inp: Reg, length: Reg, out: Reg,
                     x: None, lengths: tuple[Reg, Reg]) -> None:
        self.ctr(bits, tag, inp, length, out)
        self.hash_bytes(x, out, length, lengths=lengths)


def build_kernel(spec: KernelSpec) -> BuiltKernel:
    """The GCM-SIV skeleton on x86-64 (modes/: the mode descriptor names it)."""
    k = GcmSivKernel(spec)
    functions = build_all(k)
    abi = {entry: k.conv for entry in functions}
    return BuiltKernel(functions, k.layout.size, tuple(k.layout.table()),
                       public_fields=k.layout.public_names(), abi=abi,
                       interleave=k.batch if k.batch != spec.interleave else None)
