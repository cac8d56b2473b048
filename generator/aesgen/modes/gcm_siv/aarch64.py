"""AES-GCM-SIV (RFC 8452) on AArch64, method armv8-ce: the layers its skeleton (skeleton.py)
runs over. They extend the AArch64 GCM frame (modes/gcm/aarch64.py: arguments, context
fields, short pieces, the engine's AESE/AESMC rounds, the xor_store with the last round
folded into EOR3 where the preset has FEAT_SHA3, stitching) with what GCM-SIV does
differently, as modes/gcm_siv/x86_64.py extends the x86 GCM frame:

- the hash engine is PMULL in POLYVAL's bit order (gf128/aarch64/pmull.py with
  ``polyval``): blocks are loaded as they are and H is the key itself; its multiply, its
  Karatsuba keys and its reduction are GHASH's. Batches of 8 blocks are multiplied by
  H^8 .. H^1 and reduced once; what follows the last batch (4, 2, 1 blocks, the partial
  block, the length block) is hashed with one reduction, X H^m + B1 H^m + .. + L H, the
  powers read through a pointer that depends on the lengths only (hash_rest). Seal's
  POLYVAL loop hashes and does nothing else, so H^8 .. H^1 (and their Karatsuba keys) stay
  in registers through it, the block X joins is multiplied last (what the next batch waits
  for is one multiply and the reduction, not the sum of all eight products) and the batch
  is list-scheduled for the preset's latencies (kernels/a64/schedule.py: an in-order core
  otherwise waits on each product);
- per message, the keys come from the nonce (4 or 6 AES blocks of LE32(i) || nonce under
  the key-generating key, their low halves joined by ZIP1), and the encryption key is
  expanded in vector registers: TBL broadcasts RotWord of the last word to every column,
  AESE with a zero key is then SubWord in every column (ShiftRows only moves bytes between
  equal columns), and the new round key is that, the round constant (a register doubled
  by SHL, reloaded as 0x1b at round 9) and the prefix XOR of the previous round key's
  words (w0, w0^w1, w0^w1^w2, w0^..^w3: the key and the key moved up by 1, 2 and 3 words,
  three EXT against zero, summed as a tree; EOR3 with FEAT_SHA3); AES-256's other round
  keys take SubWord of the last word broadcast by DUP, no rotation or constant. That is 10
  instructions a round key (8 with EOR3), on a chain 4 deep (3), whole round keys at a time
  and never out of the vector registers. The word by word
  schedule init uses (kernels/a64/engines.py: CeEngine.expand_key) moves every SubWord
  between the register files twice (DUP of the word in, UMOV of the result out, each a
  transfer with its own latency on the chain) and walks the 4 words of a round key one
  by one in general registers: right for a key expanded once at init, not for one expanded
  for every message, where it is the chain a short record waits on. The round keys go to
  MSG_KEYS, where the engine reads them (as ROUND_KEYS of a context at MSG_KEYS) for the tag
  and the counter blocks. The AES of the 4 (6) blocks runs round by round (AESE/AESMC pairs
  adjacent, as the cores fuse them); then the expansion and H^2, two independent chains, are
  emitted side by side (DSL emit_stitched) and list-scheduled for the preset's latencies,
  which an in-order core (Cortex-A53) would otherwise run one after the other;
- the powers H^1 .. H^9 (a batch's, and one more for a message's end) come from a tree, not
  a chain (H^i = H^(i-m) H^m, m the largest power of two below i: 4 multiplies in a row,
  those of a level list-scheduled together), and those past H^2 only when the lengths say
  the message needs them (AAD over 32 bytes or plaintext over 16);
- the counter is the tag with bit 127 set, kept in block order: its little-endian 32-bit
  count in bytes 0..3 is lane 0 of the .4s view, so a block is one ADD of [1, 0, 0, 0] after
  the one before (wrapping in 32 bits, bytes 4..15 untouched), no REV32 as GCM's inc32 needs;
- seal is two passes (POLYVAL over AAD and plaintext, the tag, CTR from the tag); open is
  one: CTR in batches of 8 whose AES rounds are stitched with the POLYVAL of the batch
  written before (as the GCM encrypt loop), where round keys, a batch and the hash fit the
  32 registers together (AES-128); else (AES-256: 15 round keys) the hash of the previous
  batch runs before the batch's rounds in the same loop (GcmBody.beside), one pass over the
  data either way.
"""
from __future__ import annotations

import contextlib

from ...dsl.builder import KernelBuilder
from ...dsl.operands import Imm, Mem, Reg, VList
from ...gf128.aarch64.pmull import PmullHash
from ...isa.table import load_table
from ...kernels import ctx_layout
from ...kernels.a64.engine_choice import engine_for
from ...kernels.a64.schedule import latencies_of, scheduled
from ...kernels.spec import ROUNDS, KernelSpec
from ...uarch import model_for
from .. import BuiltKernel
from ..gcm.aarch64 import LOOP_REGISTERS, VECTOR_REGISTERS, Body as GcmBody, LastRound, \
    _fused_pairs
from ..gcm.skeleton import BATCH
from .skeleton import build_all, ladder, layout

# TBL indices: the last word of a round key, rotated (RotWord), in every column
ROT_LAST_WORD = bytes([13, 14, 15, 12] * 4)
# the round constant in byte 0 of every column: 0x01 doubled by SHL up to 0x80, then 0x1b
RCON_FIRST = bytes([0x01, 0, 0, 0] * 4)
RCON_LATE = bytes([0x1B, 0, 0, 0] * 4)
RCON_LATE_ROUND = 8                 # RCON[8] = 0x1b (FIPS-197 5.2)
# the POLYVAL result XOR the nonce loses bit 127; the counter block gains it
CLEAR_TOP = bytes([0xFF] * 15 + [0x7F])
SET_TOP = bytes(15) + bytes([0x80])
# powers of H always made: enough for AAD up to 2 blocks and plaintext up to 1 (hash_rest)
FIRST_POWERS = 2


class GcmSivKernel:
    """Shared facts while one GCM-SIV kernel's entry points are built (what the AArch64 GCM
    frame asks of its kernel, and the message's own)."""

    def __init__(self, spec: KernelSpec) -> None:
        if spec.method != "armv8-ce" or spec.hash != "pmull":
            raise ValueError(f"{spec.name}: the AArch64 GCM-SIV skeleton takes armv8-ce with "
                             f"the PMULL hash, not {spec.method} with {spec.hash!r}")
        self.spec = spec
        self.table = load_table("aarch64")
        self.engine = engine_for(spec)
        self.lanes = 1
        self.batch = self.hash_batch = BATCH
        # a batch's powers, and one more: a message's end is hashed with one reduction
        self.powers = BATCH
        self.table_powers = BATCH + 1
        self.karatsuba = spec.hash_multiply == "karatsuba"
        self.face_rounds = 0
        self.short_records = self.masked_tails = False
        self.counter = spec.counter_policy
        self.layout = layout(self.table_powers, self.karatsuba)
        self.latencies = latencies_of(model_for(spec.uarch, "aarch64"))
        self.run = None

    def hash_engine(self, b: KernelBuilder, f):
        """PMULL in POLYVAL's bit order, over the powers in H_POWERS."""
        return PmullHash(b, f, self.table_powers, self.karatsuba, polyval=True)

    def body(self, entry: str, doc: str) -> "Body":
        return Body(self, KernelBuilder(self.table, self.spec.symbol(entry), doc=doc))


class Body(GcmBody):
    """One entry point: the AArch64 GCM frame's layers with the hash in POLYVAL's bit order,
    and the message's own (skeleton.py)."""

    # --- small pieces --------------------------------------------------------------------
    def _nonce(self, nonce: Reg) -> Reg:
        """The 12 nonce bytes in bytes 0..11 of a register, 12..15 zero (two loads, none
        past the nonce)."""
        a, b = self.a, self.b
        n, t = b.vec(128), b.vec(128)
        a.ldr(n.d, Mem(64, base=nonce))                 # bytes 0..7, the rest zero
        a.ldr(t.s, Mem(32, base=nonce, disp=8))
        a.ins(n.lane_view("s", 2), t.lane_view("s", 0))
        return n

    def _lane0(self, value: int) -> Reg:
        """[value, 0, 0, 0] in 32-bit lanes: a step of the le32 counter."""
        r, t = self.b.vec(128), self.b.gp()
        self.a.mov(t.w, Imm(value))
        self.a.fmov(r.s, t.w)                           # the other lanes zero
        return r

    def _constant(self, name: str, data: bytes) -> Reg:
        return self.hash.constant(name, data)

    def message_keys_base(self) -> Reg:
        """The address the engine reads the message's round keys from (as ROUND_KEYS of a
        context there)."""
        r = self.b.gp()
        self.a.add(r, self.ctx, Imm(self.k.layout.offset("MSG_KEYS") - ctx_layout.ROUND_KEYS))
        return r

    def _side_by_side(self, main, other) -> None:
        """main() and other(), two independent straight-line streams, emitted as one (the
        second spread through the first; AESE/AESMC pairs kept together)."""
        b = self.b
        with b.capture() as first:
            main()
        with b.capture() as second:
            other()
        b.emit_stitched(_fused_pairs(first), second)

    # --- the message's keys --------------------------------------------------------------
    def hash_start(self) -> Reg:
        """POLYVAL's state before any block: zero, in a register."""
        return self.zero_block()

    def derive(self, nonce: Reg, bits: int, lengths: tuple[Reg, Reg]) -> None:
        """The message's keys from the nonce (skeleton.py, step 1); ``lengths`` (the AAD's
        and the plaintext's) tell how many powers of H the message needs."""
        a, b = self.a, self.b
        powers: dict[int, Reg] = {}
        kept: list[Reg] = []            # what lives past the stretch: H^1, H^2 (filled in)
        with b.phase("derive"):
            zero = self.zero_block()
            n = self._nonce(nonce)
            a.ext(n.b16, zero.b16, n.b16, Imm(12))      # LE32(0) || nonce
            one = self._lane0(1)
            blocks = [n]
            for _ in range(1 + bits // 64):             # LE32(i) || nonce, i = 1 .. 3 (5)
                blk = b.vec(128)
                a.add(blk.s4, blocks[-1].s4, one.s4)
                blocks.append(blk)
            self.aes(blocks, bits)                      # round by round: AESE/AESMC pairs
            # the key expansion beside H^2, list-scheduled for the core's latencies (an
            # in-order core would otherwise wait on each chain in turn)
            with scheduled(b, VECTOR_REGISTERS - 2, self.k.latencies, keep=kept):
                halves = []
                for lo, hi in zip(blocks[::2], blocks[1::2]):
                    h = b.vec(128)
                    a.zip1(h.d2, lo.d2, hi.d2)          # the two low halves
                    halves.append(h)
                auth, enc = halves[0], halves[1:]
                self._side_by_side(lambda: self._expand(enc, bits, zero),
                                   lambda: self._first_powers(auth, powers))
                kept += powers.values()
            self._more_powers(powers, lengths)

    def _expand(self, enc: list[Reg], bits: int, zero: Reg) -> None:
        """FIPS-197's key expansion of the message key in vector registers, each round key
        stored to MSG_KEYS (module text)."""
        a, b = self.a, self.b
        keys = list(enc)
        for r, key in enumerate(keys):
            a.str(key.q, self.f("MSG_KEYS", 16 * r))
        rot = self._constant("rot_last_word", ROT_LAST_WORD)
        sha3 = self.k.spec.encoding == "neon-sha3"      # EOR3 (FEAT_SHA3)
        rcon = None
        i = 0
        while len(keys) < ROUNDS[bits] + 1:
            prev, last = keys[-len(enc)], keys[-1]
            t = b.vec(128)
            step = None                                 # the round constant, if any
            if len(keys) % len(enc) == 0:               # SubWord(RotWord(last)) ^ rcon
                a.tbl(t.b16, VList((last.b16,)), rot.b16)
                if rcon is None:
                    rcon = self._constant("rcon", RCON_FIRST)
                elif i == RCON_LATE_ROUND:
                    rcon = self._constant("rcon_late", RCON_LATE)
                else:
                    a.shl(rcon.s4, rcon.s4, Imm(1))
                step = rcon
                i += 1
            else:                                       # AES-256: SubWord(last)
                a.dup(t.s4, last.lane_view("s", 3))
            a.aese(t.b16, zero.b16)
            # the prefix XOR of prev's words (w0, w0^w1, w0^w1^w2, w0^..^w3): prev and
            # prev moved up by 1, 2 and 3 words (three EXT against zero, side by side)
            # summed as a tree, so AES-128's longest chain from one round key to the next
            # is 4 instructions (EXT and three levels of EOR; TBL, AESE, EOR beside it), 3
            # with EOR3 (FEAT_SHA3), where one EXT and one EOR at a time would take 7
            s1, s2, s3, k = (b.vec(128) for _ in range(4))
            a.ext(s1.b16, zero.b16, prev.b16, Imm(12))  # 0, w0, w1, w2
            a.ext(s2.b16, zero.b16, prev.b16, Imm(8))   # 0, 0, w0, w1
            a.ext(s3.b16, zero.b16, prev.b16, Imm(4))   # 0, 0, 0, w0
            if step is not None:
                a.eor(s3.b16, s3.b16, step.b16)
            if sha3:
                a.eor3(s1.b16, s1.b16, prev.b16, s2.b16)
                a.eor3(k.b16, s1.b16, s3.b16, t.b16)
            else:
                a.eor(s1.b16, s1.b16, prev.b16)
                a.eor(s2.b16, s2.b16, s3.b16)
                a.eor(s1.b16, s1.b16, s2.b16)
                a.eor(k.b16, s1.b16, t.b16)
            a.str(k.q, self.f("MSG_KEYS", 16 * len(keys)))
            keys.append(k)

    # --- the powers of H -----------------------------------------------------------------
    def _keep(self, i: int, p: Reg) -> None:
        """H^i (and its Karatsuba key) into the context."""
        self.a.str(p.q, self.hash.power(i))
        if self.k.karatsuba:
            self.a.str(self.hash.karatsuba_key(p).q, self.hash.power(i, "H_KARATSUBA"))

    def _tree(self, powers: dict[int, Reg], i: int) -> None:
        """H^i = H^(i-m) H^m, m the largest power of two below i."""
        m = 1 << ((i - 1).bit_length() - 1)
        with self.b.phase("polyval_multiply"):
            powers[i] = self.hash.dot(powers[i - m], powers[m])
        self._keep(i, powers[i])

    def _first_powers(self, h: Reg, powers: dict[int, Reg]) -> None:
        powers[1] = h
        self._keep(1, h)
        for i in range(2, FIRST_POWERS + 1):
            self._tree(powers, i)

    def _more_powers(self, powers: dict[int, Reg], lengths: tuple[Reg, Reg] | None) -> None:
        """H^3 .. H^9, unless ``lengths`` (public) say the message is hashed by hash_rest
        alone with H^1 and H^2: AAD up to 2 blocks and plaintext up to 1."""
        b = self.b
        done = b.label("powers_done")
        if lengths is not None:
            more = b.label("powers_more")
            self.isa.compare_jump(b, "a", lengths[0], 16 * FIRST_POWERS, more)
            self.isa.compare_jump(b, "be", lengths[1], 16 * (FIRST_POWERS - 1), done)
            b.bind(more)
        with scheduled(b, VECTOR_REGISTERS - 2, self.k.latencies):
            for i in range(FIRST_POWERS + 1, self.k.table_powers + 1):
                self._tree(powers, i)
        b.bind(done)

    def keep_hash_key(self, h: Reg, lengths: tuple[Reg, Reg] | None = None) -> None:
        """The powers H^1 .. H^9 of the message's H into H_POWERS (derive makes them beside
        the key expansion)."""
        powers: dict[int, Reg] = {}
        self._first_powers(h, powers)
        self._more_powers(powers, lengths)

    # --- POLYVAL ---------------------------------------------------------------------------
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
        batch = self.k.batch
        top, next_ = b.label(f"polyval{batch}"), b.label(f"polyval{batch}_done")
        with b.phase_names({"ghash_multiply": "polyval_multiply"}):
            with b.phase("loop"):
                isa.compare_jump(b, "b", n, 16 * batch, next_)
            with b.phase("polyval_multiply"):       # the loop hashes alone: powers stay
                keys = self.hash.load_powers(batch)
            with b.region(region) if region else contextlib.nullcontext():
                b.bind(top)
                with b.phase("loop"):
                    isa.compare_jump(b, "b", n, 16 * batch, next_)
                regs = [x] + [r for pair in keys.values() for r in pair if r is not None]
                with scheduled(b, VECTOR_REGISTERS - 2, self.k.latencies, keep=regs):
                    self.hash.absorb(x, p, batch, keys=keys, carried_last=True)
                with b.phase("loop"):
                    a.add(p, p, Imm(16 * batch))
                    a.sub(n, n, Imm(16 * batch))
                    a.b(top)
            b.bind(next_)
            self.hash_rest(x, p, n, lengths)

    def hash_rest(self, x: Reg, p: Reg, n: Reg, lengths: tuple[Reg, Reg] | None) -> None:
        """X through POLYVAL over the n bytes at p (fewer than a batch: 4, 2, 1 blocks each
        at most once, a partial block zero-padded) and with ``lengths`` the length block, in
        one reduction: with m the blocks hashed here, X H^m + B1 H^m + B2 H^(m-1) + ... +
        L H, the powers read from H^m on through a pointer that advances past those used (m
        and the pointer depend on lengths alone). p and n are consumed."""
        a, b, isa, k = self.a, self.b, self.isa, self.k
        lay = k.layout
        apart = lay.offset("H_KARATSUBA") - lay.offset("H_POWERS") if k.karatsuba else 0
        nothing = b.label("rest_nothing")
        if lengths is None:                     # m = 0: X stays as it is
            with b.phase("tail"):
                isa.jump_if_zero(b, n, nothing)
        pw = b.gp()                             # H^m: 16 (table_powers - m) into H_POWERS
        with b.phase("tail"):
            a.add(pw, n, Imm(15))
            isa.arith(b, "and", pw, pw, -16)
            a.sub(pw, self.ctx, pw)
            a.add(pw, pw, Imm(lay.offset("H_POWERS")
                              + 16 * (k.table_powers - (1 if lengths else 0))))

        def times_power(y: Reg, disp: int, acc):
            """acc += y H^(m - disp / 16), unreduced."""
            h = b.vec(128)
            a.ldr(h.q, Mem(128, base=pw, disp=disp))
            hk = None
            if k.karatsuba:
                hk = b.vec(128)
                a.ldr(hk.q, Mem(128, base=pw, disp=disp + apart))
            return self.hash.multiply(y, h, acc, hk)

        with b.phase("polyval_multiply"):
            acc = times_power(x, 0, None)       # X H^m
            for size in ladder(k.batch)[1:]:
                skip = b.label(f"rest{size}_none")
                with b.phase("loop"):
                    isa.compare_jump(b, "b", n, 16 * size, skip)
                for j in range(0, size, 2):
                    ys = [b.vec(128) for _ in range(min(2, size - j))]
                    with b.phase("load_store"):
                        if len(ys) == 2:
                            a.ldp(ys[0].q, ys[1].q, Mem(256, base=p, disp=16 * j))
                        else:
                            a.ldr(ys[0].q, Mem(128, base=p, disp=16 * j))
                    for i, y in enumerate(ys):
                        acc = times_power(y, 16 * (j + i), acc)
                with b.phase("loop"):
                    a.add(p, p, Imm(16 * size))
                    a.add(pw, pw, Imm(16 * size))
                    a.sub(n, n, Imm(16 * size))
                b.bind(skip)
            whole = b.label("rest_whole")
            with b.phase("tail"):
                isa.jump_if_zero(b, n, whole)
                self.store_block("SCRATCH", self.zero_block())
                self.short_move(n, src=p, dst=self.addr("SCRATCH"))
                y = b.vec(128)
                self.load_block(y, "SCRATCH")
                acc = times_power(y, 0, acc)
                a.add(pw, pw, Imm(16))
            b.bind(whole)
            if lengths is not None:             # LE64(bits of AAD) || LE64(bits of text)
                aad_bits, msg_bits = b.gp(), b.gp()
                a.lsl(aad_bits, lengths[0], Imm(3))
                a.lsl(msg_bits, lengths[1], Imm(3))
                lens = b.vec(128)
                a.fmov(lens.d, aad_bits)
                a.ins(lens.lane_view("d", 1), msg_bits)
                acc = times_power(lens, 0, acc)
        with b.phase("reduction"):
            self.hash.reduce(acc, dst=x)
        b.bind(nothing)

    # --- the tag and the counter -----------------------------------------------------------
    def tag_block(self, x: Reg, nonce: Reg, bits: int) -> Reg:
        """AES under the message key of X XOR the nonce with bit 127 cleared."""
        a, b = self.a, self.b
        s = b.vec(128)
        a.eor(s.b16, x.b16, self._nonce(nonce).b16)
        b.emit("and", s.b16, s.b16, self._constant("clear_top", CLEAR_TOP).b16)
        keys = self.k.engine.prepare(self.k, b, self.message_keys_base(), bits)
        nr = ROUNDS[bits]
        with b.phase("aes"):
            self.rounds(keys, [s], 0, nr, nr)
        return s

    def store_tag(self, ptr: Reg, tag: Reg) -> None:
        self.a.str(tag.q, Mem(128, base=ptr))

    def load_tag(self, ptr: Reg) -> Reg:
        t = self.b.vec(128)
        self.a.ldr(t.q, Mem(128, base=ptr))
        return t

    def _le32_counters(self, c: Reg, one: Reg, n: int) -> list[Reg]:
        """n counter blocks from c (block order, the count in lane 0), c advanced past
        them."""
        a, b = self.a, self.b
        blocks = []
        with b.phase("counter"):
            for j in range(n):
                blk = b.vec(128)
                if j == 0:
                    a.mov(blk.b16, c.b16)
                else:
                    a.add(blk.s4, blocks[-1].s4, one.s4)
                blocks.append(blk)
            a.add(c.s4, blocks[-1].s4, one.s4)
        return blocks

    def ctr_and_hash(self, bits: int, tag: Reg, inp: Reg, length: Reg, out: Reg,
                     x: Reg, lengths: tuple[Reg, Reg]) -> None:
        """ctr, and X through POLYVAL over what it writes (open's plaintext) and the length
        block, in one loop (module text)."""
        self.ctr(bits, tag, inp, length, out, (x, lengths))

    def ctr(self, bits: int, tag: Reg, inp: Reg, length: Reg, out: Reg,
            hashing: tuple | None = None) -> None:
        """out = in ^ AES-CTR from the tag with bit 127 set over length bytes: batches of 8
        blocks in a loop, then 4, 2 and 1 block each at most once, and the block the
        message ends inside (its keystream in SCRATCH, the bytes moved by pieces). With
        ``hashing`` (X, lengths), X also goes through POLYVAL over out as it is written and
        the length block: the batch loop a pipeline whose first batch is not hashed in its
        own iteration and whose last is hashed after it; what follows it by hash_rest."""
        x, lengths = hashing if hashing else (None, None)
        a, b, isa, k = self.a, self.b, self.isa, self.k
        nr, batch = ROUNDS[bits], k.batch
        keys = k.engine.prepare(k, b, self.message_keys_base(), bits)
        # the last round goes with the data into xor_store where the engine folds them
        last = nr - 1 if k.engine.folds_data else nr
        self.stitch = (k.engine.registers(bits) + batch + self.hash.registers
                       + LOOP_REGISTERS <= VECTOR_REGISTERS)
        c = b.vec(128)
        with b.phase("counter"):
            b.emit("orr", c.b16, tag.b16, self._constant("set_top", SET_TOP).b16)
            one = self._lane0(1)
        src, dst, n = b.gp(), b.gp(), b.gp()
        isa.move(b, src, inp)
        isa.move(b, dst, out)
        isa.move(b, n, length)
        end = b.label(f"ctr_end{bits}")

        def crypt(n_blocks: int, hash_previous=None) -> None:
            """One step of n_blocks blocks: counters and rounds (beside ``hash_previous``
            when given), out written, the pointers advanced."""
            def rounds() -> list[Reg]:
                blocks = self._le32_counters(c, one, n_blocks)
                with b.phase("aes"):
                    self.rounds(keys, blocks, 0, last, nr)
                return blocks
            if hash_previous is None:
                blocks = rounds()
            else:
                blocks, _ = self.beside(rounds, hash_previous)
            self.xor_store(LastRound(blocks, keys, nr) if last < nr else blocks, src, dst)
            self.advance(src, dst, n, n_blocks)

        def previous_batch() -> None:                   # the batch just written
            w = b.gp()
            with b.phase("load_store"):
                a.sub(w, dst, Imm(16 * batch))
            with b.phase_names({"ghash_multiply": "polyval_multiply"}):
                self.hash.absorb(x, w, batch, carried_last=True)

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
                a.b(top)
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
            with b.phase("aes"):
                self.rounds(keys, [c], 0, nr, nr)
            self.store_block("SCRATCH", c)
            self.short_move(n, src=src, dst=dst, xor=self.addr("SCRATCH"))
        b.bind(end)
        if x is not None:
            with b.phase_names({"ghash_multiply": "polyval_multiply"}):
                self.hash_rest(x, rest, rest_n, lengths)


def build_kernel(spec: KernelSpec) -> BuiltKernel:
    """The GCM-SIV skeleton on AArch64 (modes/: the mode descriptor names it)."""
    k = GcmSivKernel(spec)
    functions = build_all(k)
    return BuiltKernel(functions, k.layout.size, tuple(k.layout.table()),
                       public_fields=k.layout.public_names(),
                       interleave=k.batch if k.batch != spec.interleave else None)
