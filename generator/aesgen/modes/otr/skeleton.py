"""AES-OTR (specs/aes-otr.md; seed 001) written once: init, seal, open and wipe over the layers
an instruction set supplies. No streaming (the tail's masks depend on where the message ends),
no FACE (nothing repeats between blocks: every block has its own mask).

A message, for the key size init stored:
  1. Format     the nonce block F from the nonce and the tag length (section 4)
  2. TA, U      the AD digest (parallel, "p": each full AD block under its own mask, the last
                padded and masked by 5 or 3 times the next power; TA = 0 for no AD) and
                U = E(F), the two last AES calls side by side (section 6, 7)
  3. pairs      two-round Feistel of each 32-byte pair under masks L_i, L*_i (section 8.2),
                many pairs in flight, their checksum of second blocks per lane
  4. tail       the last 1..32 bytes (or none): one AES (case a) or a Feistel pair with the
                second block partial (case b), then the checksum's final mask (section 8.3,
                8.4)
  5. tag        E(checksum) ^ TA, its first tau bytes
open runs the same with the Feistel rounds in the other order (only E, never its inverse),
compares the tag without a branch on its bytes and on a mismatch zeroes what it wrote. The
branches below depend on lengths, the key size and the tag compare's result only.

The variants (Version): v3.1 ("otr") L = U, second masks L_i ^ L_(i+1); v2 ("otr-v2")
L = 4U, second masks L_i ^ U; with the AD serial ("otr-s", "otr-v2-s") U ^ TA takes U's
place (v3.1 s doubles it once more) and TA stays out of the tag.

What a frame (x86_64.Body) supplies beyond GcmFrame's small pieces: format_block(nonce,
nonce_len, tag_len), digest_and_nonce(aad, aad_len, f, bits) -> (TA, U), crypt(bits, u, in,
len, out, decrypt) -> checksum with its final mask, tag_block(sigma, ta, bits), write_tag,
tag_differs.
"""
from __future__ import annotations

from dataclasses import dataclass

from ...dsl.ir import Function
from ...kernels.key_schedule import accept_key_length, expand_by_size
from ..gcm.skeleton import build_wipe, open_epilogue

NONCE_MIN, NONCE_MAX = 1, 15        # section 3: Format holds 8|N| <= 120 bits
TAG_MIN, TAG_MAX = 1, 16


@dataclass(frozen=True)
class Version:
    """Where the variants part: v3.1 and v2 (section 10) in the masks, p and s (sections 6,
    7) in how the AD is digested and where TA enters."""
    name: str
    # L from U (s: from U ^ TA): times this (v3.1 p: 1, v3.1 s: 2, v2: 4)
    nonce_factor: int
    # a pair's second mask: "next" (L_i ^ L_(i+1) = 3 L_i) or "delta" (L_i ^ U; s: U ^ TA)
    second: str
    # the AD: in parallel, TA XORed into the tag ("p"); or a CBC chain whose TA enters
    # through L ("s")
    serial: bool = False

    @property
    def v2(self) -> bool:
        return self.second == "delta"


V3_1 = Version("v3.1", nonce_factor=1, second="next")
V2 = Version("v2", nonce_factor=4, second="delta")
V3_1_S = Version("v3.1, serial AD", nonce_factor=2, second="next", serial=True)
V2_S = Version("v2, serial AD", nonce_factor=4, second="delta", serial=True)
VERSIONS = {"otr": V3_1, "otr-v2": V2, "otr-s": V3_1_S, "otr-v2-s": V2_S}


def _checked(g, nonce_len, tag_len, reject) -> None:
    """A nonce of 1..15 bytes, a tag of 1..16, and a key: else ``reject``."""
    isa, b = g.isa, g.b
    isa.compare_jump(b, "b", nonce_len, NONCE_MIN, reject)
    g.above(nonce_len, NONCE_MAX, reject)
    isa.compare_jump(b, "b", tag_len, TAG_MIN, reject)
    g.above(tag_len, TAG_MAX, reject)
    g.check_keyed(reject)


def build_init(k) -> Function:
    g = k.body("init", "init(ctx, key, key_len): expand the key (16 or 32 bytes) and keep "
                       "Q = E_K(0), the AD masks' base.\nReturns 0, or -1 for another key "
                       "length (ctx unchanged).")
    isa, b = g.isa, g.b
    b.function.returns_value = True
    ctx, key, key_len = g.args(3)
    fail, accepted, expanded = b.label("refuse"), b.label("accepted"), b.label("expanded")
    accept_key_length(isa, b, key_len, k.spec.key_bits, accepted)
    isa.jump(b, fail)
    b.bind(accepted)
    with b.phase("clear_context"):                  # a new key forgets all of the old
        g.zero_context(ctx)
    expand_by_size(isa, b, key_len, k.spec.key_bits, g.f("KEY_BITS", width=32), expanded,
                   lambda bits: k.engine.expand_key(k, b, ctx, key, bits))
    b.bind(expanded)
    with b.phase("masks"):
        g.keep_q()
    g.returns(0)
    g.returns(-1, fail)
    b.function.scrub_vectors = True
    return b.build()


def _message(g, nonce, nonce_len, aad, aad_len, inp, decrypt: bool, finish):
    """One message for a key size: out written, then finish(tag) with the full tag."""
    def message(bits: int) -> None:
        f = g.format_block(nonce, nonce_len, g.arg("tag_len"))
        ta, u = g.digest_and_nonce(aad, aad_len, f, bits)
        sigma = g.crypt(bits, u, inp, g.arg("len"), g.arg("out"), decrypt)
        finish(g.tag_block(sigma, ta, bits))
    return message


def build_seal(k) -> Function:
    g = k.body("seal", f"seal(ctx, nonce, nonce_len, aad, aad_len, in, len, out, tag, tag_len):"
                       f"\nAES-OTR {k.version.name} encryption: nonce "
                       f"1..15 bytes, tag 1..16.\nReturns 0, or -1 for a length out of range "
                       f"(nothing written).")
    b = g.b
    b.function.returns_value = True
    ctx, nonce, nonce_len, aad, aad_len, inp = g.args(6)
    refuse = b.label("refuse")
    _checked(g, nonce_len, g.arg("tag_len"), refuse)
    g.per_key_size("message", _message(
        g, nonce, nonce_len, aad, aad_len, inp, False,
        lambda tag: g.write_tag(g.arg("tag"), g.arg("tag_len"), tag)), b.label("sealed"))
    g.returns(0)
    g.returns(-1, refuse)
    b.function.scrub_vectors = True
    return b.build()


def build_open(k) -> Function:
    g = k.body("open", f"open(ctx, nonce, nonce_len, aad, aad_len, in, len, out, tag, tag_len):"
                       f"\nAES-OTR {k.version.name} decryption. Returns 0; or -1 with "
                       f"out[0..len) zeroed for a wrong tag, a nonce not of 1..15 bytes or a "
                       f"tag not of 1..16.")
    b = g.b
    b.function.returns_value = True
    ctx, nonce, nonce_len, aad, aad_len, inp = g.args(6)
    refuse, reject, done = b.label("refuse"), b.label("reject"), b.label("done")
    _checked(g, nonce_len, g.arg("tag_len"), reject)
    g.per_key_size("message", _message(
        g, nonce, nonce_len, aad, aad_len, inp, True,
        lambda tag: g.tag_differs(g.arg("tag"), g.arg("tag_len"), tag)), b.label("opened"))
    return open_epilogue(g, refuse, reject, done)


def build_all(k) -> dict:
    return {"init": build_init(k), "seal": build_seal(k), "open": build_open(k),
            "wipe": build_wipe(k)}
