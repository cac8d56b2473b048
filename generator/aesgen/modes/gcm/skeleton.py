"""AES-GCM (NIST SP 800-38D) written once: the AEAD contract's entry points and the state a
stream keeps between calls (the lengths, the AAD/data switch, the block a piece ended
inside, the tag), over the layers an instruction set supplies.

State between calls lives in the context (fields declared by the kernel). Invariants:
  COUNTER   the next counter block
  HASH      the GHASH accumulator X (in the hash engine's order)
  PENDING   the bytes of the current, incomplete 16-byte block of AAD or ciphertext, zero
            after them; all zero when the length hashed so far is a multiple of 16
  KEYSTREAM the keystream block whose first MSG_LEN % 16 bytes are used
Lengths are public: every branch below depends on lengths, the key size or the tag length,
never on a key, a plaintext, a hash value or a tag byte; the tag compare ORs the XOR of the
bytes and turns it into 0 / -1 without a branch.

What a kernel's frame (a subclass of GcmFrame, one per instruction set: x86_64.Body)
supplies:
  isa                       the general-purpose layer (arch/*/scalar.py)
  k.spec, k.layout, k.engine, k.hash_batch, k.face_rounds
  f(name, extra, width)     a context field; addr(name, index) its address in a register
  args(n), arg(name)        the first n arguments; a later one of seal/open by name
  new_block(), zero_block(), load_block(y, field), store_block(field, y)
  short_move(n, src, dst, ...), short_zero(n, dst), short_differ(n, a, other, diff)
  zero_context(ctx)         zeros over the whole context
  aes(blocks, bits)         the engine's rounds on blocks of one key size
  hash_blocks(x, ptr, n), hash_pending(x, clear)   the hash engine on whole blocks
  reset_hash(), keep_hash_key(h), j0_from_nonce12(nonce, j0), j0_from_hash(x, bits, j0)
  begin_message(j0)         the counter, FACE and E_K(J0) of a message from J0
  crypt_size(bits, x, in, len, out, decrypt, final)   the data loop of one key size, which
                            may run batch_loop over: beside(rounds, hashing), hash_batch,
                            face_batch, face_mark, xor_store, advance, plain_batches,
                            dispatch_batch, refresh_window (k.run: kernels/face_fill.py)
  call_data(in, len, out, decrypt, final)             call that direction's data path
  finish(), write_tag(out, len, tag), one_shot_tag()  the tag
  start_record, short_records, masked_tails           (x86: the short-record path)
"""
from __future__ import annotations

from ...dsl.ir import Function
from ...dsl.operands import Label, Reg
from ...kernels import ctx_layout
from ...kernels.key_schedule import accept_key_length, expand_by_size
from .layout import NO_WINDOW

# J0 from GHASH depends on H; its counter is stored for the data path, which branches on
# COUNTER_SECRET before any branch on the counter or index by it (passes/secrets.py reads
# this mark: the store is not a secret leaking into a public field)
COUNTER_DECLASSIFIED = ("declassify: a counter from GHASH, for a data path that branches on "
                        "COUNTER_SECRET first")

MAX_MESSAGE = 2**36 - 32        # bytes (SP 800-38D 5.2.1.1: 2^39 - 256 bits)
MAX_AAD = 2**61 - 1             # bytes (2^64 - 1 bits)
TAG_MIN, TAG_MAX = 4, 16
BATCH = 8                       # registers of blocks a loop iteration (one reduction each)
# a round engine's own phases (the CTR report's), counted in GCM's columns
ENGINE_PHASES = {"transpose": "aes", "rounds_0_2": "aes", "rounds_3_nr": "aes",
                 "load_xor_store": "load_store"}

# (the entry points, their order and the report's phases: modes.GCM, the descriptor)
# the data path, once a direction: seal and encrypt call one, open and decrypt the other
DATA_PATH = {False: "encrypt_data", True: "decrypt_data"}


class GcmFrame:
    """The ISA-independent part of one entry point under construction."""

    k: object
    b: object
    isa: object
    ctx: Reg | None
    # the data loop hashes a batch before its rounds (not stitched beside them)
    hash_ahead = False

    # --- small pieces --------------------------------------------------------------
    def returns(self, value: int, label: Label | None = None) -> None:
        if label is not None:
            self.b.bind(label)
        self.isa.result(self.b, value)
        self.isa.ret(self.b)

    def above(self, value: Reg, limit: int, fail: Label) -> None:
        """jump to fail when value > limit (unsigned)."""
        self.isa.compare_jump(self.b, "a", value, limit, fail)

    def check_tag_len(self, tag_len: Reg, fail: Label) -> None:
        self.isa.compare_jump(self.b, "b", tag_len, TAG_MIN, fail)
        self.above(tag_len, TAG_MAX, fail)

    def check_keyed(self, fail: Label) -> None:
        self.isa.compare_jump(self.b, "eq", self.f("KEY_BITS", width=32), 0, fail)

    def per_key_size(self, hint: str, body, join: Label) -> None:
        """Branch on the key size init stored (public) to body(bits), each ending at join."""
        isa, b = self.isa, self.b
        sizes = self.k.spec.key_bits
        kb = b.gp()
        isa.load(b, kb, self.f("KEY_BITS", width=32))
        labels = {bits: b.label(f"{hint}{bits}") for bits in sizes}
        for bits in sizes[:-1]:
            isa.jump_if_equal(b, kb, bits, labels[bits], width=32)
        for bits in sizes[-1:] + sizes[:-1]:          # the last size falls through
            b.bind(labels[bits])
            body(bits)
            isa.jump(b, join)
        b.bind(join)

    def aes_any_size(self, x: Reg) -> None:
        """One block through AES for the key size init stored."""
        self.per_key_size("aes", lambda bits: self.aes([x], bits), self.b.label("aes_done"))

    # --- hashing a stream of bytes ----------------------------------------------------
    def flush_pending(self, x: Reg, length_field: str, *, clear: bool) -> None:
        """Hash PENDING when the length so far ends inside a block."""
        done = self.b.label("flushed")
        t = self.b.gp()
        self.isa.load(self.b, t, self.f(length_field, width=64))
        self.isa.jump_unless_any_bits(self.b, t, 15, done)
        self.hash_pending(x, clear=clear)
        self.b.bind(done)

    def _continue_block(self, length_field: str, length: Reg, whole: Label) -> Reg:
        """part = the length so far mod 16, and the field grows by length; jump to whole
        when part is 0. Returns part."""
        isa, b = self.isa, self.b
        part = b.gp()
        isa.load(b, part, self.f(length_field, width=64))
        isa.add_to(b, self.f(length_field, width=64), length)
        isa.mask_jump_if_zero(b, part, 15, whole)
        return part

    def _piece_of_block(self, part: Reg, length: Reg) -> Reg:
        """n = min(16 - part, length): the bytes that finish the block begun."""
        n = self.b.gp()
        self.isa.move(self.b, n, 16)
        self.isa.arith(self.b, "sub", n, n, part)
        self.isa.unsigned_min(self.b, n, length)
        return n

    def absorb(self, ptr: Reg, length: Reg, length_field: str) -> None:
        """Hash length bytes at ptr as the continuation of a stream whose byte count so far
        is length_field (which grows by length). ptr and length are consumed."""
        isa, b = self.isa, self.b
        x = self.new_block()
        self.load_block(x, "HASH")
        whole, done = b.label("whole"), b.label("absorbed")
        part = self._continue_block(length_field, length, whole)
        with b.phase("tail"):
            n = self._piece_of_block(part, length)
            src, dst = b.gp(), self.addr("PENDING", part)
            isa.move(b, src, ptr)
            self.short_move(n, src=src, dst=dst)
            isa.arith(b, "add", ptr, ptr, n)
            isa.arith(b, "sub", length, length, n)
            isa.arith(b, "add", part, part, n)
            isa.compare_jump(b, "ne", part, 16, done)   # still inside the block: length 0
            self.hash_pending(x, clear=True)
        b.bind(whole)
        for n_blocks in sorted({self.k.hash_batch, 1}, reverse=True):
            top, next_ = b.label(f"hash{n_blocks}"), b.label(f"hashed{n_blocks}")
            b.bind(top)
            with b.phase("loop"):
                isa.compare_jump(b, "b", length, 16 * n_blocks, next_)
            self.hash_blocks(x, ptr, n_blocks)
            with b.phase("loop"):
                isa.arith(b, "add", ptr, ptr, 16 * n_blocks)
                isa.arith(b, "sub", length, length, 16 * n_blocks)
                isa.jump(b, top)
            b.bind(next_)
        with b.phase("tail"):
            isa.jump_if_zero(b, length, done)
            self.short_move(length, src=ptr, dst=self.addr("PENDING"))
        b.bind(done)
        self.store_block("HASH", x)

    def begin_data(self) -> None:
        """Close the AAD: hash its unfinished block, once, when the first data arrives."""
        isa, b = self.isa, self.b
        done = b.label("in_data")
        isa.compare_jump(b, "ne", self.f("IN_DATA", width=64), 0, done)
        x = self.new_block()
        self.load_block(x, "HASH")
        self.flush_pending(x, "AAD_LEN", clear=True)
        self.store_block("HASH", x)
        isa.store_imm(b, self.f("IN_DATA", width=64), 1)
        b.bind(done)

    # --- the data path -------------------------------------------------------------------
    def check_room(self, length: Reg, fail: Label) -> None:
        """Jump to fail when length more message bytes would pass SP 800-38D's limit."""
        isa, b = self.isa, self.b
        room = b.gp()
        isa.move(b, room, MAX_MESSAGE)
        isa.arith(b, "sub", room, room, self.f("MSG_LEN", width=64))
        isa.compare_jump(b, "a", length, room, fail)

    def crypt(self, inp: Reg, length: Reg, out: Reg, *, decrypt: bool,
              final: Reg | None = None) -> None:
        """out = in ^ keystream over length bytes, hashing the ciphertext; continues the
        stream at MSG_LEN: first the block the last call ended inside, then the kernel's
        data loop for the key size. The caller has checked the length. ``final`` (0 or 1,
        where the kernel takes it) says the call holds the whole message: HASH ends as
        the GHASH of AAD, ciphertext and the length block (SP 800-38D 7.1 step 5)."""
        isa, b = self.isa, self.b
        self.begin_data()
        x = self.new_block()
        self.load_block(x, "HASH")
        bulk, saved = b.label("bulk"), b.label("saved")
        part = self._continue_block("MSG_LEN", length, bulk)
        with b.phase("tail"):                      # finish the block the last call began
            n = self._piece_of_block(part, length)
            src, dst = b.gp(), b.gp()
            isa.move(b, src, inp)
            isa.move(b, dst, out)
            self.short_move(n, src=src, dst=dst, xor=self.addr("KEYSTREAM", part),
                            record=self.addr("PENDING", part), record_input=decrypt)
            for p in (inp, out):
                isa.arith(b, "add", p, p, n)
            isa.arith(b, "sub", length, length, n)
            isa.arith(b, "add", part, part, n)
            isa.compare_jump(b, "ne", part, 16, saved)
            self.hash_pending(x, clear=True)
        b.bind(bulk)
        self.per_key_size("data", lambda bits: self.crypt_size(bits, x, inp, length, out,
                                                               decrypt, final), saved)
        self.store_block("HASH", x)

    def batch_loop(self, bits: int, x: Reg, wide: Reg, inp: Reg, length: Reg, out: Reg,
                   decrypt: bool, hashed: bool, top: Label, exit_: Label, region: str,
                   keys, once: bool = False) -> None:
        """A loop of batches of k.batch registers: at ``top``, leave for ``exit_`` when less
        than a batch is left; else the batch (with FACE, the kind the counter picks),
        stitched with the GHASH of ciphertext in memory when ``hashed``; with ``once``,
        one batch and out. ``wide`` holds the counters in the kernel's form.

        With FACE (kernels/face_fill.py): the kernel's dispatch_batch sends a batch that
        would leave the counter's window to "full", one whose window is not cached to
        "refresh", one whose table is incomplete to "check" (back to "fast" when its
        entries are filled, else "fill" while the budget lasts, else "spent": batches in
        full until the window ends or the run of filled entries lies ahead).

        A kernel whose hash does not run beside the rounds (``hash_ahead``) hashes once a
        batch before the dispatch, not in each kind's body: one copy of the hash a loop."""
        isa, b = self.isa, self.b
        k = self.k
        blocks = k.batch * k.lanes
        step = 16 * blocks
        ahead = self.hash_ahead

        def hash_batch() -> None:
            if hashed:
                self.hash_batch(x, inp, out, decrypt)

        def body(kind: str, idx: Reg | None, then: Label | None = None) -> None:
            regs, _ = self.beside(lambda: self.face_batch(kind, wide, idx, bits, keys),
                                  (lambda: None) if ahead else hash_batch)
            if kind == "fill":
                self.face_mark(idx)
            self.xor_store(regs, inp, out)
            self.advance(inp, out, length, blocks)
            with b.phase("loop"):
                isa.jump(b, then or (exit_ if once else top))

        dispatch = top                              # where a refreshed window goes on
        with b.region(region):
            b.bind(top)
            with b.phase("loop"):
                isa.compare_jump(b, "b", length, step, exit_)
            if ahead:
                hash_batch()
                dispatch = b.label(f"dispatch_{region}".replace("-", "_"))
                b.bind(dispatch)
            if not k.face_rounds:
                self.plain_batches(body, wide, region)
                return
            labels = {kind: b.label(f"{kind}_{region}".replace("-", "_"))
                      for kind in ("full", "refresh", "check", "fast", "spent")}
            idx = self.dispatch_batch(wide, labels)
            b.bind(labels["fast"])
            body("fast", idx)
        with b.region(f"fill-{region}"):
            b.bind(labels["check"])
            with b.phase("face"):
                k.run.back_if_filled(b, self.ctx, idx, blocks, labels["fast"])
                k.run.fill_allowed(b, self.ctx, labels["full" if once else "spent"])
            body("fill", idx)
        with b.region(f"full-{region}"):
            b.bind(labels["full"])
            body("full", None)
        if not once:
            with b.region(f"spent-{region}"):
                # a nonce prefix seen once: batch after batch in full until the window
                # ends or the run lies ahead, with no check between them (face_fill.py)
                b.bind(labels["spent"])
                with b.phase("face"):
                    stop = k.run.clear_of_run(b, self.ctx, idx, blocks)
                again = b.label(f"again_{region}".replace("-", "_"))
                next_ = b.label(f"next_{region}".replace("-", "_"))
                b.bind(again)
                body("full", None, then=next_)
                b.bind(next_)
                with b.phase("loop"):
                    isa.arith(b, "add", idx, idx, blocks)
                    isa.compare_jump(b, "a", idx, stop, top)
                    isa.compare_jump(b, "b", length, step, top)
                if ahead:                           # the next batch's, as top would
                    hash_batch()
                with b.phase("loop"):
                    isa.jump(b, again)
        with b.region(f"refresh-{region}"):
            b.bind(labels["refresh"])
            self.refresh_window(wide, bits)
            isa.jump(b, dispatch)                   # (past the batch's hash)

    # --- nonce and tag -----------------------------------------------------------------
    def start(self, nonce: Reg, nonce_len: Reg) -> None:
        """J0 from the nonce (SP 800-38D 7.1 step 2), E_K(J0), the counter and a fresh hash
        state. The caller has checked nonce_len >= 1 and that a key is set.

        J0 of a 12-byte nonce is public; J0 of any other is GHASH_H(nonce, its length),
        linear in H: a branch on it or a table index from it (FACE's window and table, the
        in-byte counters) would leak bits of H a message at a time. COUNTER_SECRET says
        which, and the ISA layers' counter dispatches (jump_if_counter_secret) take the
        path that computes every block in full, branch-free, when it is set."""
        isa, b = self.isa, self.b
        z = self.zero_block()
        for name in ("HASH", "PENDING"):
            self.store_block(name, z)
        for name in ("AAD_LEN", "MSG_LEN", "IN_DATA"):
            isa.store_imm(b, self.f(name, width=64), 0)
        self.reset_hash()
        long_nonce, have_j0 = b.label("long_nonce"), b.label("have_j0")
        j0 = self.new_block()
        isa.compare_jump(b, "ne", nonce_len, 12, long_nonce)
        self.j0_from_nonce12(nonce, j0)             # J0 = nonce || 0^31 || 1
        isa.store_imm(b, self.f("COUNTER_SECRET", width=64), 0)
        self.begin_message(j0)
        isa.jump(b, have_j0)
        b.bind(long_nonce)                          # J0 = GHASH(nonce || 0 pad || 0^64 || [len]64)
        # a counter from GHASH depends on H: nothing branches on it or indexes by it
        isa.store_imm(b, self.f("COUNTER_SECRET", width=64), 1)
        bits_len = b.gp()
        isa.shift_left(b, bits_len, nonce_len, 3)
        self.absorb(nonce, nonce_len, "MSG_LEN")
        x = self.new_block()
        self.load_block(x, "HASH")
        self.flush_pending(x, "MSG_LEN", clear=True)
        self.j0_from_hash(x, bits_len, j0)
        self.store_block("HASH", self.zero_block())
        isa.store_imm(b, self.f("MSG_LEN", width=64), 0)
        self.begin_message(j0, counter_secret=True)
        b.bind(have_j0)

    def begin_message(self, j0, counter_secret: bool = False, face: str = "message") -> None:
        """What every message starts from J0: the counter J0 + 1 (the ISA layer's
        counter_after), FACE's step (face_begin: the nonce bytes its table is for checked,
        the counter's window cached) and E_K(J0), the tag's mask. With ``counter_secret``
        (J0 from GHASH, start) no FACE: the table stays as it is, no window is cached, and
        the counter is stored declassified (nothing branches on it: COUNTER_SECRET).
        With ``face`` "none" (a record the data path takes without FACE) no FACE either,
        the table and its run as they were (possibly another nonce prefix's: the caller
        sets COUNTER_SECRET, so no batch of this message reads them); "record" (a one-shot
        record of the ISA layer's record path) FACE's step as that path wants it
        (face_begin_record)."""
        b = self.b
        with b.phase("counter"):
            c = self.counter_after(j0)
            if counter_secret:
                b.comment(COUNTER_DECLASSIFIED)
            self.store_block("COUNTER", c)
        if counter_secret or face == "none":
            if self.k.face_rounds:
                self.isa.store_imm(b, self.f("FACE_WINDOW", width=64), NO_WINDOW)
            self.aes_any_size(j0)
        elif self.k.face_rounds and face == "record":
            self.face_begin_record(j0, c)
        elif self.k.face_rounds:
            self.face_begin(j0, c)
        else:
            self.aes_any_size(j0)
        self.store_block("TAG_MASK", j0)

    def jump_if_counter_secret(self, label: Label) -> None:
        """To label when this message's counter came from GHASH (COUNTER_SECRET, set by
        start): a branch on a public flag, before any branch on the counter."""
        self.isa.compare_jump(self.b, "ne", self.f("COUNTER_SECRET", width=64), 0, label)

    def tag_differs(self, tag_in: Reg, tag_len: Reg, tag: Reg | None = None) -> None:
        """The result register = 0 when the first tag_len bytes of the tag (``tag``, else
        the stream's) match tag_in, else -1; the bytes are compared without a branch on
        them."""
        self.store_block("SCRATCH", self.finish() if tag is None else tag)
        diff = self.b.gp()
        self.isa.clear(self.b, diff)
        self.short_differ(tag_len, a=tag_in, other=self.addr("SCRATCH"), diff=diff)
        self.isa.result_minus_one_unless_zero(self.b, diff)

    def zero_out(self, out: Reg, length: Reg) -> None:
        """out[0..length) = 0 (a rejected open)."""
        isa, b = self.isa, self.b
        top, tail = b.label("zero16"), b.label("zero_tail")
        b.bind(top)
        isa.compare_jump(b, "b", length, 16, tail)
        isa.store_zero_16(b, out)
        isa.arith(b, "add", out, out, 16)
        isa.arith(b, "sub", length, length, 16)
        isa.jump(b, top)
        b.bind(tail)
        self.short_zero(length, dst=out)


# ====================================================================================
# the entry points
# ====================================================================================
def build_init(k) -> Function:
    g = k.body("init", "init(ctx, key, key_len): expand the key, H = E_K(0) and what the "
                       f"hash keeps of it ({k.spec.hash}).\n"
                       "Returns 0, or -1 for a key length not built in (ctx unchanged).")
    isa, b = g.isa, g.b
    b.function.returns_value = True
    ctx, key, key_len = g.args(3)
    fail, accepted, hashed = b.label("refuse"), b.label("accepted"), b.label("hash_key")
    accept_key_length(isa, b, key_len, k.spec.key_bits, accepted)
    isa.jump(b, fail)
    b.bind(accepted)
    with b.phase("clear_context"):                  # a new key forgets all of the old
        g.zero_context(ctx)
    expand_by_size(isa, b, key_len, k.spec.key_bits, g.f("KEY_BITS", width=32), hashed,
                   lambda bits: k.engine.expand_key(k, b, ctx, key, bits))
    b.bind(hashed)
    if k.face_rounds:                               # no table yet: a tag no counter has
        isa.store_imm(b, g.f("FACE_TAG_HI", width=64), ctx_layout.NO_TABLE)
    with b.phase("hash_key"):
        h = g.zero_block()
        g.aes_any_size(h)
        g.keep_hash_key(h)
    g.returns(0)
    g.returns(-1, fail)
    b.function.scrub_vectors = True
    return b.build()


def _entry(k, entry: str, doc: str, nargs: int, body) -> Function:
    """An entry point that returns 0, or -1 from the label ``refuse``: body(g, args,
    refuse) emits the work and returns True when it wrote its own return."""
    g = k.body(entry, doc)
    g.b.function.returns_value = True
    args = g.args(nargs)
    refuse = g.b.label("refuse")
    if not body(g, args, refuse):
        g.returns(0)
    g.returns(-1, refuse)
    g.b.function.scrub_vectors = True
    return g.b.build()


def build_start(k) -> Function:
    def body(g, args, refuse):
        ctx, nonce, nonce_len = args
        g.isa.jump_if_zero(g.b, nonce_len, refuse)
        g.check_keyed(refuse)
        g.start(nonce, nonce_len)
    return _entry(k, "start", "start(ctx, nonce, nonce_len): begin a message under this "
                  "nonce.\nReturns 0, or -1 for nonce_len 0 or a context without a key.", 3, body)


def build_aad(k) -> Function:
    def body(g, args, refuse):
        ctx, ptr, length = args
        isa, b = g.isa, g.b
        isa.compare_jump(b, "ne", g.f("IN_DATA", width=64), 0, refuse)
        room = b.gp()
        isa.move(b, room, MAX_AAD)
        isa.arith(b, "sub", room, room, g.f("AAD_LEN", width=64))
        isa.compare_jump(b, "a", length, room, refuse)
        g.absorb(ptr, length, "AAD_LEN")
    return _entry(k, "aad", "aad(ctx, aad, len): hash more additional data; any piece "
                  "lengths.\nReturns 0, or -1 after data began or past 2^61 - 1 bytes of AAD.",
                  3, body)


def build_data(k, decrypt: bool) -> Function:
    """The data path of one direction, a function of this file only (no .globl): the
    entry points check lengths, then call it."""
    entry = DATA_PATH[decrypt]
    final = ("\nfinal = 1 (seal, open: the whole message) leaves in HASH the GHASH with the "
             "length block." if k.masked_tails else "")
    g = k.body(entry, f"{entry}(ctx, in, len, out{', final' if final else ''}): out = in ^ "
                      f"keystream and the GHASH of the ciphertext over len bytes, {k.batch} "
                      f"registers of blocks and one reduction a loop.{final}\nCalled by "
                      f"{'open and decrypt' if decrypt else 'seal and encrypt'} after their "
                      f"checks; not exported.")
    if k.masked_tails:
        _, inp, length, out, final = g.args(5)
    else:
        (_, inp, length, out), final = g.args(4), None
    g.crypt(inp, length, out, decrypt=decrypt, final=final)
    g.isa.ret(g.b)
    g.b.function.scrub_vectors = True
    g.b.function.exported = False
    return g.b.build()


def build_crypt(k, decrypt: bool) -> Function:
    entry = "decrypt" if decrypt else "encrypt"

    def body(g, args, refuse):
        ctx, inp, length, out = args
        g.check_room(length, refuse)
        g.call_data(inp, length, out, decrypt=decrypt)
    return _entry(k, entry, f"{entry}(ctx, in, len, out): GCM {entry}ion of the next len "
                  f"bytes.\nReturns 0, or -1 past 2^36 - 32 message bytes (nothing written).",
                  4, body)


def build_finish_seal(k) -> Function:
    def body(g, args, refuse):
        ctx, tag, tag_len = args
        g.check_tag_len(tag_len, refuse)
        g.write_tag(tag, tag_len)
    return _entry(k, "finish_seal", "finish_seal(ctx, tag, tag_len): write the first tag_len "
                  "bytes of the tag.\nReturns 0, or -1 for tag_len outside 4..16.", 3, body)


def build_finish_open(k) -> Function:
    def body(g, args, refuse):
        ctx, tag, tag_len = args
        g.check_tag_len(tag_len, refuse)
        g.tag_differs(tag, tag_len)
        g.isa.ret(g.b)
        return True
    return _entry(k, "finish_open", "finish_open(ctx, tag, tag_len): 0 when the tag matches "
                  "(compared in constant time), else -1.", 3, body)


def _one_shot_start(g, nonce: Reg, nonce_len: Reg, aad: Reg, aad_len: Reg, inp: Reg,
                    decrypt: bool, after_record) -> None:
    """J0, E_K(J0) and the AAD of a one-shot seal or open, through the kernel's short-record
    path where it has one (a whole short record there: after_record(tag) ends it)."""
    b = g.b
    general, record, data = (b.label(n) for n in ("general", "record", "data"))
    if g.k.short_records:
        length = g.arg("len")
        g.takes_short_path(nonce_len, aad_len, length, general, record)
        after_record(g.short_record(nonce, aad, aad_len, inp, length, g.arg("out"),
                                    decrypt=decrypt))
        b.bind(record)
        g.start_record(nonce, aad, aad_len, None if decrypt else length)
        g.isa.jump(b, data)
    b.bind(general)
    g.start(nonce, nonce_len)
    g.absorb(aad, aad_len, "AAD_LEN")
    b.bind(data)


def build_seal(k) -> Function:
    def body(g, args, refuse):
        ctx, nonce, nonce_len, aad, aad_len, inp = args
        g.isa.jump_if_zero(g.b, nonce_len, refuse)
        g.check_tag_len(g.arg("tag_len"), refuse)
        g.above(aad_len, MAX_AAD, refuse)
        g.above(g.arg("len"), MAX_MESSAGE, refuse)
        g.check_keyed(refuse)

        def record_done(tag: Reg) -> None:
            g.write_tag(g.arg("tag"), g.arg("tag_len"), tag)
            g.returns(0)
        _one_shot_start(g, nonce, nonce_len, aad, aad_len, inp, False, record_done)
        g.call_data(inp, g.arg("len"), g.arg("out"), decrypt=False, final=True)
        g.write_tag(g.arg("tag"), g.arg("tag_len"), g.one_shot_tag())
    return _entry(k, "seal", "seal(ctx, nonce, nonce_len, aad, aad_len, in, len, out, tag, "
                  "tag_len):\none-shot GCM encryption. Returns 0, or -1 for a length out of "
                  "range (nothing written).", 6, body)


def build_open(k) -> Function:
    g = k.body("open", "open(ctx, nonce, nonce_len, aad, aad_len, in, len, out, tag, tag_len):\n"
                       "one-shot GCM decryption. Returns 0; or -1 with out[0..len) zeroed for "
                       "a wrong tag or a length out of range (for len or aad_len past the "
                       "limits nothing is written).")
    isa, b = g.isa, g.b
    b.function.returns_value = True
    ctx, nonce, nonce_len, aad, aad_len, inp = g.args(6)
    refuse, reject, done = b.label("refuse"), b.label("reject"), b.label("done")
    g.above(g.arg("len"), MAX_MESSAGE, refuse)     # over the mode's limits: nothing written
    g.above(aad_len, MAX_AAD, refuse)
    isa.jump_if_zero(b, nonce_len, reject)
    g.check_tag_len(g.arg("tag_len"), reject)
    g.check_keyed(reject)

    def record_done(tag: Reg) -> None:
        g.tag_differs(g.arg("tag"), g.arg("tag_len"), tag)
        isa.jump_if_zero(b, isa.result_register(), done)
        isa.jump(b, reject)
    _one_shot_start(g, nonce, nonce_len, aad, aad_len, inp, True, record_done)
    g.call_data(inp, g.arg("len"), g.arg("out"), decrypt=True, final=True)
    g.tag_differs(g.arg("tag"), g.arg("tag_len"), g.one_shot_tag())
    return open_epilogue(g, refuse, reject, done)


def open_epilogue(g, refuse, reject, done) -> Function:
    """The end of a one-shot open after its tag compare (the result register 0 when the
    tags are equal): to ``done`` returning 0; else, and from ``reject``, out[0..len) zeroed
    and -1; from ``refuse`` -1 with nothing written."""
    isa, b = g.isa, g.b
    isa.jump_if_zero(b, isa.result_register(), done)
    b.bind(reject)                                  # plaintext never stays in out
    g.zero_out(g.arg("out"), g.arg("len"))
    g.returns(-1)
    g.returns(-1, refuse)
    b.bind(done)
    isa.ret(b)
    b.function.scrub_vectors = True
    return b.build()


def build_wipe(k) -> Function:
    g = k.body("wipe", f"wipe(ctx): zero all {k.layout.size} bytes of the context.")
    (ctx,) = g.args(1)
    g.zero_context(ctx)
    g.isa.ret(g.b)
    g.b.function.scrub_vectors = True
    return g.b.build()


def build_all(k) -> dict:
    return {
        "init": build_init(k), "seal": build_seal(k), "open": build_open(k),
        "start": build_start(k), "aad": build_aad(k), "encrypt": build_crypt(k, False),
        "decrypt": build_crypt(k, True), "finish_seal": build_finish_seal(k),
        "finish_open": build_finish_open(k), "wipe": build_wipe(k),
        "encrypt_data": build_data(k, False), "decrypt_data": build_data(k, True),
    }
