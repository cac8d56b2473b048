"""AES-CTR written once for every method and both instruction sets: the entry points init,
set_iv and wipe, the frame of xor_stream (the keystream left by the previous call, the
branch on the key size, the return), and the two places every batch loop ends in (the
counter kept for the next call, the keystream block a partial last block leaves).

Counter: 128-bit big-endian, +1 a block (OpenSSL EVP_aes_*_ctr), kept in the context as two
native 64-bit halves (CTR_LO = bytes 8..15, CTR_HI = bytes 0..7, kernels/ctx_layout.py), so
a step is an add with carry. KEYSTREAM holds the keystream block a call ended inside and
KEYSTREAM_LEFT how many of its bytes are still unused; the next call starts with them.

What differs per kernel comes from the kernel object ``k``:
  k.spec, k.layout        the kernel's spec and context layout
  k.isa                   the general-purpose layer (arch/x86_64/scalar.py, arch/aarch64/...)
  k.builder(entry, doc)   a KernelBuilder for one entry point
  k.zero_context(b, ctx)  store zeros over the whole context (the widest store it has)
  k.expand_key(b, ctx, key, bits)         the key schedule of one size (its engine's)
  k.stream_body(b, bits, ctx, out, inp, length, done)   the batch loop of one key size
  k.scrub(b, entry)       what init and xor_stream clear before returning
The batch loops (kernels/ctr_kernel.py, kernels/grouped_ctr.py, kernels/table_kernel.py,
kernels/a64/ctr_kernel.py) are the kernel's own.
"""
from __future__ import annotations

from ...dsl.builder import KernelBuilder
from ...dsl.ir import Function
from ...dsl.operands import Label, Mem, Reg
from ...kernels import ctx_layout as L
from ...kernels.key_schedule import accept_key_length, expand_by_size

ENTRY_POINTS = ("init", "set_iv", "xor_stream", "wipe")


def field(width: int, ctx: Reg, offset: int) -> Mem:
    return Mem(width, base=ctx, disp=offset)


def build_entries(k, xor_stream_doc: str) -> dict[str, Function]:
    """The four entry points of one CTR kernel, uncompiled (virtual registers)."""
    return {"init": build_init(k), "set_iv": build_set_iv(k),
            "xor_stream": build_xor_stream(k, xor_stream_doc), "wipe": build_wipe(k)}


def _start(k, entry: str, doc: str, args: int, returns_value: bool = False):
    """An entry point's builder, its landing pad and its arguments in virtual registers."""
    b = k.builder(entry, doc)
    b.function.returns_value = returns_value
    k.isa.entry(b)
    return b, k.isa.args(b, args)


# ====================================================================================
# init, set_iv, wipe
# ====================================================================================
def build_init(k) -> Function:
    isa = k.isa
    b, (ctx, key, key_len, iv) = _start(
        k, "init", "init(ctx, key, key_len, iv): expand the key, reset FACE state, set the "
        "IV.\nReturns 0, or -1 for a key length not built in.", 4, returns_value=True)
    ret, common, accepted = b.label("return"), b.label("common"), b.label("accepted")
    accept_key_length(isa, b, key_len, k.spec.key_bits, accepted)
    isa.result(b, -1)                  # a refused key leaves the context as it was
    isa.jump(b, ret)
    b.bind(accepted)
    with b.phase("clear_context"):     # re-keying forgets every byte of the old key's state
        k.zero_context(b, ctx)
    expand_by_size(isa, b, key_len, k.spec.key_bits, field(32, ctx, L.KEY_BITS), common,
                   lambda bits: k.expand_key(b, ctx, key, bits))
    b.bind(common)
    isa.store_imm(b, field(64, ctx, L.TAG_HI), L.NO_TABLE)
    set_iv_body(isa, b, ctx, iv)
    isa.result(b, 0)
    b.bind(ret)
    k.scrub(b, "init")
    isa.ret(b)
    return b.build()


def set_iv_body(isa, b: KernelBuilder, ctx: Reg, iv: Reg) -> None:
    """The counter from the 16 IV bytes; no keystream left; the FACE caches are checked
    again on use (the tables stay: their tag decides)."""
    hi, lo = isa.load_big_endian_128(b, iv)
    isa.store_pair(b, ctx, L.CTR_LO, lo, hi)
    isa.store_imm(b, field(64, ctx, L.KEYSTREAM_LEFT), 0)
    isa.store_imm(b, field(64, ctx, L.WINDOW_LO), L.NO_WINDOW)


def build_set_iv(k) -> Function:
    isa = k.isa
    b, (ctx, iv) = _start(k, "set_iv", "set_iv(ctx, iv): restart the stream at iv under the "
                          "same key.\nFACE tables stay while IV bytes 0, 5 and 10 are "
                          "unchanged.", 2, returns_value=True)
    set_iv_body(isa, b, ctx, iv)
    isa.result(b, 0)
    isa.ret(b)
    return b.build()


def build_wipe(k) -> Function:
    b, (ctx,) = _start(k, "wipe", f"wipe(ctx): zero all {k.layout.size} bytes of the "
                       "context.", 1)
    k.zero_context(b, ctx)
    k.isa.ret(b)
    return b.build()


# ====================================================================================
# xor_stream
# ====================================================================================
def build_xor_stream(k, doc: str) -> Function:
    isa, spec = k.isa, k.spec
    b, (ctx, out, inp, length) = _start(k, "xor_stream", doc, 4)
    done = b.label("return")
    isa.jump_if_zero(b, length, done)
    _use_keystream_left(isa, b, ctx, out, inp, length, done)

    bodies = {bits: b.label(f"aes{bits}") for bits in spec.key_bits}
    kb = b.gp()
    isa.load(b, kb, field(32, ctx, L.KEY_BITS))       # the key size init stored
    for bits, label in bodies.items():
        isa.jump_if_equal(b, kb, bits, label, width=32)
    isa.jump(b, done)                                 # not initialised: nothing to do
    for bits, label in bodies.items():
        b.bind(label)
        k.stream_body(b, bits, ctx, out, inp, length, done)
    b.bind(done)
    k.scrub(b, "xor_stream")
    isa.ret(b)
    return b.build()


def _use_keystream_left(isa, b: KernelBuilder, ctx: Reg, out: Reg, inp: Reg, length: Reg,
                        done: Label) -> None:
    """XOR the bytes the previous call left in KEYSTREAM into the first bytes of the
    message (at most 15, so a byte at a time); return when the message ends there."""
    bulk, drain, drained = b.label("bulk"), b.label("drain"), b.label("drained")
    with b.phase("partial"):
        left = b.gp()
        isa.load(b, left, field(64, ctx, L.KEYSTREAM_LEFT))
        isa.jump_if_zero(b, left, bulk)
        b.bind(drain)
        p = isa.address_below(b, ctx, left)      # byte 16 - left of KEYSTREAM
        isa.xor_byte(b, out, inp, field(8, p, L.KEYSTREAM + 16))
        isa.decrement(b, length)
        isa.decrement_jump_if_zero(b, left, drained)
        isa.jump_if_nonzero(b, length, drain)
        b.bind(drained)
        isa.store(b, field(64, ctx, L.KEYSTREAM_LEFT), left)
        isa.jump_if_zero(b, length, done)
    b.bind(bulk)


# ====================================================================================
# where every batch loop ends
# ====================================================================================
def load_counter(isa, b: KernelBuilder, ctx: Reg) -> tuple[Reg, Reg]:
    """(lo, hi): the counter of the next block, as the previous call left it."""
    return isa.load_pair(b, ctx, L.CTR_LO)


def keep_counter(isa, b: KernelBuilder, ctx: Reg, lo: Reg, hi: Reg, done: Label) -> None:
    """The loop's end: the counter stays in the context for the next call."""
    isa.store_pair(b, ctx, L.CTR_LO, lo, hi)
    isa.jump(b, done)


def keystream_tail(isa, b: KernelBuilder, ctx: Reg, out: Reg, inp: Reg, length: Reg,
                   end: Label) -> None:
    """A last block under 16 bytes, after its keystream block was stored at KEYSTREAM and
    the counter stepped past it: out = in ^ the first ``length`` bytes, the rest left for
    the next call."""
    isa.xor_bytes(b, out, inp, ctx, L.KEYSTREAM, length, "partial_byte")
    isa.store_difference(b, field(64, ctx, L.KEYSTREAM_LEFT), 16, length)
    isa.jump(b, end)
