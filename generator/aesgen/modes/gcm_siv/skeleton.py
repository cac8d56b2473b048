"""AES-GCM-SIV (RFC 8452) written once: init, seal, open and wipe over the layers an
instruction set supplies. No streaming (seal cannot start before it has seen the whole
plaintext), no FACE (every message has its own keys).

A message, for the key size init stored:
  1. derive      the message's authentication key H and encryption key from the nonce (4
                 or 6 AES blocks of LE32(i) || nonce under the key-generating key), the
                 encryption key expanded into MSG_KEYS and the powers of H into the context
  2. POLYVAL     over the AAD and the plaintext (each zero-padded to whole blocks) and the
                 block of their bit lengths, by the hash engine in POLYVAL's bit order
  3. tag         AES under the message key of the POLYVAL result XOR the nonce, bit 127
                 cleared
  4. CTR         from the tag with bit 127 set, a 32-bit little-endian counter in bytes 0..3
seal runs them in that order (two passes over the plaintext); open hashes the AAD, runs CTR
from the tag it was given with POLYVAL over what it writes (one stitched loop where the
frame can), then the tag compare, and on a mismatch zeroes what it wrote. Lengths are public: the branches below depend on lengths, the key size
and the tag compare's result only.

What a frame (one per instruction set: x86_64.Body, aarch64.Body) supplies beyond
GcmFrame's layers:
derive(nonce, bits, lengths), hash_start() (POLYVAL's state X of no block: a register,
or None where the engine keeps it in the context), hash_bytes(x, ptr, length, region,
lengths) (with lengths, the
length block LE64(AAD bits) || LE64(plaintext bits) after the bytes), tag_block(x, nonce,
bits), ctr(bits, tag, in, length, out) (its batch loop in region steady-<bits>),
ctr_and_hash(bits, tag, in, length, out, x, lengths), store_tag(ptr, tag), load_tag(ptr).
The context (``layout``) and the block counts a message's end goes through (``ladder``) are
the same on every instruction set.
"""
from __future__ import annotations

from ...dsl.ir import Function
from ...kernels import ctx_layout
from ...kernels.fields import Field, FieldLayout
from ...kernels.key_schedule import accept_key_length, expand_by_size
from ..gcm.skeleton import build_wipe, open_epilogue

MAX_BYTES = 1 << 36             # RFC 8452 section 6: plaintext and AAD, P_MAX and A_MAX
NONCE_BYTES = 12
TAG_BYTES = 16


def layout(powers: int, karatsuba: bool, hash_fields: list[Field] | None = None) -> FieldLayout:
    """The context: the key-generating key's cipher section, then the message's keys: the
    powers of H of the carry-less engines, or ``hash_fields`` of another hash engine (whose
    key expansion reads the derived key from SCRATCH: 32 bytes then)."""
    if hash_fields is None:
        hash_fields = [
            Field("hash", "H_POWERS", 16 * powers, 16, f"the message's authentication key H: "
                  f"H^{powers} .. H^1, highest first"),
        ] + ([Field("hash", "H_KARATSUBA", 16 * powers, 16, "for each power, its two halves "
                    "XORed (Karatsuba's middle key)")] if karatsuba else [])
        scratch = 16
    else:
        scratch = 32
    return FieldLayout.build(ctx_layout.CIPHER_FIELDS + [
        Field("mode", "MSG_KEYS", 240, 16, "the message's encryption key, expanded (derived "
              "from the nonce, RFC 8452 section 4)"),
    ] + hash_fields + [
        Field("mode", "SCRATCH", scratch, 16, "a block the message ends inside; the tag being "
              "compared" + ("; the derived key being expanded" if scratch > 16 else "")),
    ])


def ladder(batch: int) -> list[int]:
    """The block counts a message's blocks go through: whole batches in a loop, then what
    is left (fewer than a batch) by powers of two, each at most once (no loop of single
    blocks): halves of a batch of a power of two, [5, 4, 2, 1] for 5."""
    return [batch] + [1 << j for j in reversed(range((batch - 1).bit_length()))]


def _checked(g, nonce_len, tag_len, aad_len, length, refuse, reject) -> None:
    """Lengths over RFC 8452's limits go to ``refuse`` (nothing written), a nonce or tag of
    another length or a context without a key to ``reject``."""
    isa, b = g.isa, g.b
    g.above(length, MAX_BYTES, refuse)
    g.above(aad_len, MAX_BYTES, refuse)
    isa.compare_jump(b, "ne", nonce_len, NONCE_BYTES, reject)
    isa.compare_jump(b, "ne", tag_len, TAG_BYTES, reject)
    g.check_keyed(reject)


def build_init(k) -> Function:
    g = k.body("init", "init(ctx, key, key_len): expand the key-generating key (16 or 32 "
                       "bytes).\nReturns 0, or -1 for another key length (ctx unchanged).")
    isa, b = g.isa, g.b
    b.function.returns_value = True
    ctx, key, key_len = g.args(3)
    fail, accepted, done = b.label("refuse"), b.label("accepted"), b.label("expanded")
    accept_key_length(isa, b, key_len, k.spec.key_bits, accepted)
    isa.jump(b, fail)
    b.bind(accepted)
    with b.phase("clear_context"):                  # a new key forgets all of the old
        g.zero_context(ctx)
    expand_by_size(isa, b, key_len, k.spec.key_bits, g.f("KEY_BITS", width=32), done,
                   lambda bits: k.engine.expand_key(k, b, ctx, key, bits))
    b.bind(done)
    g.returns(0)
    g.returns(-1, fail)
    b.function.scrub_vectors = True
    return b.build()


def build_seal(k) -> Function:
    g = k.body("seal", "seal(ctx, nonce, nonce_len, aad, aad_len, in, len, out, tag, tag_len):"
                       "\nAES-GCM-SIV encryption (RFC 8452): nonce 12 bytes, tag 16, AAD and "
                       "message up to 2^36 bytes.\nReturns 0, or -1 for a length out of range "
                       "(nothing written).")
    isa, b = g.isa, g.b
    b.function.returns_value = True
    ctx, nonce, nonce_len, aad, aad_len, inp = g.args(6)
    refuse = b.label("refuse")
    _checked(g, nonce_len, g.arg("tag_len"), aad_len, g.arg("len"), refuse, refuse)

    def message(bits: int) -> None:
        g.derive(nonce, bits, (aad_len, g.arg("len")))
        x = g.hash_start()
        g.hash_bytes(x, aad, aad_len)
        # the plaintext, before out is written; its loop and CTR's are the steady state
        g.hash_bytes(x, inp, g.arg("len"), region=f"steady-{bits}",
                     lengths=(aad_len, g.arg("len")))
        tag = g.tag_block(x, nonce, bits)
        g.store_tag(g.arg("tag"), tag)
        g.ctr(bits, tag, inp, g.arg("len"), g.arg("out"))
    g.per_key_size("message", message, b.label("sealed"))
    g.returns(0)
    g.returns(-1, refuse)
    b.function.scrub_vectors = True
    return b.build()


def build_open(k) -> Function:
    g = k.body("open", "open(ctx, nonce, nonce_len, aad, aad_len, in, len, out, tag, tag_len):"
                       "\nAES-GCM-SIV decryption (RFC 8452). Returns 0; or -1 with out[0..len) "
                       "zeroed for a wrong tag, a nonce other than 12 bytes or a tag other "
                       "than 16 (for AAD or len past 2^36 nothing is written).")
    isa, b = g.isa, g.b
    b.function.returns_value = True
    ctx, nonce, nonce_len, aad, aad_len, inp = g.args(6)
    refuse, reject, done = b.label("refuse"), b.label("reject"), b.label("done")
    _checked(g, nonce_len, g.arg("tag_len"), aad_len, g.arg("len"), refuse, reject)

    def message(bits: int) -> None:
        g.derive(nonce, bits, (aad_len, g.arg("len")))
        given = g.load_tag(g.arg("tag"))
        x = g.hash_start()
        g.hash_bytes(x, aad, aad_len)
        # CTR, and POLYVAL over the plaintext it writes and the length block
        g.ctr_and_hash(bits, given, inp, g.arg("len"), g.arg("out"), x,
                       (aad_len, g.arg("len")))
        g.tag_differs(g.arg("tag"), g.arg("tag_len"), g.tag_block(x, nonce, bits))
    g.per_key_size("message", message, b.label("opened"))
    return open_epilogue(g, refuse, reject, done)


def build_all(k) -> dict:
    return {"init": build_init(k), "seal": build_seal(k), "open": build_open(k),
            "wipe": build_wipe(k)}
