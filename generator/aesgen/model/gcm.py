"""AES-GCM (NIST SP 800-38D sections 6 and 7) over the AES model, as a test oracle.

Blocks are 16-byte ``bytes``; GHASH and its bit order come from ``aesgen.model.gf128``.
Lengths follow SP 800-38D section 5.2.1.1 and tags of 4..16 bytes are accepted (the
aesgen contract; section 5.2.1.2 allows 4 and 8 only for some applications).
"""

from __future__ import annotations

import hmac
from collections.abc import Sequence

from aesgen.model.aes import (
    BLOCK_SIZE,
    KeyOrRoundKeys,
    as_round_keys,
    encrypt_block,
    xor_bytes,
)
from aesgen.model.gf128 import ghash

RoundKeys = Sequence[bytes]

MIN_TAG_BYTES = 4
MAX_TAG_BYTES = 16

MAX_PLAINTEXT_BYTES = (1 << 36) - 32
"""len(P) <= 2^39 - 256 bits (SP 800-38D section 5.2.1.1): 2^32 - 2 blocks."""

MAX_AAD_BYTES = (1 << 61) - 1
"""len(A) <= 2^64 - 1 bits (section 5.2.1.1), in whole bytes."""

MAX_NONCE_BYTES = (1 << 61) - 1
"""1 <= len(IV) <= 2^64 - 1 bits (section 5.2.1.1), in whole bytes."""

_COUNTER_MODULUS = 1 << 32


# ---------------------------------------------------------------------------
# Building blocks (SP 800-38D section 6)
# ---------------------------------------------------------------------------

def check_lengths(nonce_len: int, aad_len: int, text_len: int) -> None:
    """Raise ValueError unless the lengths, in bytes, are within section 5.2.1.1.

    Works on lengths alone so callers can check before touching any data.
    """
    if not 1 <= nonce_len <= MAX_NONCE_BYTES:
        raise ValueError(f"GCM nonce must be 1..{MAX_NONCE_BYTES} bytes, got {nonce_len}")
    if not 0 <= aad_len <= MAX_AAD_BYTES:
        raise ValueError(f"GCM AAD must be at most {MAX_AAD_BYTES} bytes, got {aad_len}")
    if not 0 <= text_len <= MAX_PLAINTEXT_BYTES:
        raise ValueError(
            f"GCM plaintext must be at most {MAX_PLAINTEXT_BYTES} bytes, got {text_len}"
        )


def _check_tag_len(tag_len: int) -> None:
    if not MIN_TAG_BYTES <= tag_len <= MAX_TAG_BYTES:
        raise ValueError(f"GCM tag must be {MIN_TAG_BYTES}..{MAX_TAG_BYTES} bytes, got {tag_len}")


def inc32(block: bytes) -> bytes:
    """inc_32 (section 6.2): bytes 12..15, big-endian, plus one mod 2^32; bytes 0..11 kept."""
    if len(block) != BLOCK_SIZE:
        raise ValueError(f"counter block must be {BLOCK_SIZE} bytes, got {len(block)}")
    low = (int.from_bytes(block[12:], "big") + 1) % _COUNTER_MODULUS
    return bytes(block[:12]) + low.to_bytes(4, "big")


def inc32_sequence(icb: bytes, nblocks: int) -> list[bytes]:
    """[ICB, inc32(ICB), inc32^2(ICB), ..]: the ``nblocks`` counter blocks GCTR uses."""
    if nblocks < 0:
        raise ValueError("nblocks must be non-negative")
    blocks, cb = [], bytes(icb)
    for _ in range(nblocks):
        blocks.append(cb)
        cb = inc32(cb)
    return blocks


def gctr(key: KeyOrRoundKeys, icb: bytes, data: bytes) -> bytes:
    """GCTR_K(ICB, X) (section 6.5, Algorithm 3): XOR with CIPH_K of ICB, inc32(ICB), ...

    The last block may be partial; it uses the leftmost bytes of its keystream block.
    """
    round_keys = as_round_keys(key)
    nblocks = -(-len(data) // BLOCK_SIZE)
    stream = b"".join(encrypt_block(round_keys, cb) for cb in inc32_sequence(icb, nblocks))
    return xor_bytes(bytes(data), stream[:len(data)])


def hash_subkey(key: KeyOrRoundKeys) -> bytes:
    """H = CIPH_K(0^128) (section 7.1, step 1)."""
    return encrypt_block(as_round_keys(key), bytes(BLOCK_SIZE))


def _zero_pad(data: bytes) -> bytes:
    return bytes(data) + bytes(-len(data) % BLOCK_SIZE)


def j0(h: bytes, nonce: bytes) -> bytes:
    """The pre-counter block J_0 (section 7.1, step 2).

    96-bit IV: IV || 0^31 || 1.  Otherwise GHASH_H(IV || 0^(s+64) || [len(IV)]_64), the IV
    zero-padded to whole blocks, then 64 zero bits and the IV's bit length.
    """
    if len(nonce) == 12:
        return bytes(nonce) + b"\x00\x00\x00\x01"
    if len(nonce) < 1:
        raise ValueError("GCM nonce must be at least 1 byte")
    length_block = bytes(8) + (8 * len(nonce)).to_bytes(8, "big")
    return ghash(h, _zero_pad(nonce) + length_block)


def ghash_input(aad: bytes, ciphertext: bytes) -> bytes:
    """A || 0^v || C || 0^u || [len(A)]_64 || [len(C)]_64 (section 7.1, step 5)."""
    lengths = (8 * len(aad)).to_bytes(8, "big") + (8 * len(ciphertext)).to_bytes(8, "big")
    return _zero_pad(aad) + _zero_pad(ciphertext) + lengths


def keystream_counters(key: KeyOrRoundKeys, nonce: bytes, nblocks: int) -> list[bytes]:
    """The counter blocks J_0+1, J_0+2, .. (by inc32) that encrypt the first ``nblocks``.

    These are the AES inputs of GCTR in section 7.1 step 4; J_0 itself is kept for the tag.
    """
    check_lengths(len(nonce), 0, 0)
    return inc32_sequence(inc32(j0(hash_subkey(key), nonce)), nblocks)


def _tag(round_keys: RoundKeys, h: bytes, pre_counter: bytes, aad: bytes,
         ciphertext: bytes, tag_len: int) -> bytes:
    """T = MSB_t(GCTR_K(J_0, GHASH_H(A, C))) (section 7.1, steps 5 and 6)."""
    s = ghash(h, ghash_input(aad, ciphertext))
    return gctr(round_keys, pre_counter, s)[:tag_len]


# ---------------------------------------------------------------------------
# Authenticated encryption and decryption (SP 800-38D sections 7.1 and 7.2)
# ---------------------------------------------------------------------------

def seal(key: KeyOrRoundKeys, nonce: bytes, aad: bytes, plaintext: bytes,
         tag_len: int = 16) -> tuple[bytes, bytes]:
    """GCM-AE_K(IV, P, A) (section 7.1): returns (ciphertext, tag of ``tag_len`` bytes).

    A truncated tag is the leftmost ``tag_len`` bytes of the full one (MSB_t).
    """
    check_lengths(len(nonce), len(aad), len(plaintext))
    _check_tag_len(tag_len)
    round_keys = as_round_keys(key)
    h = hash_subkey(round_keys)
    pre_counter = j0(h, nonce)
    ciphertext = gctr(round_keys, inc32(pre_counter), plaintext)
    return ciphertext, _tag(round_keys, h, pre_counter, aad, ciphertext, tag_len)


def open(key: KeyOrRoundKeys, nonce: bytes, aad: bytes, ciphertext: bytes,
         tag: bytes) -> bytes | None:
    """GCM-AD_K(IV, C, A, T) (section 7.2): the plaintext, or None (FAIL) if T is wrong.

    The tag length is ``len(tag)``; lengths outside the limits raise ValueError, as the
    specification's step 1 returns FAIL for them without computing anything.
    """
    check_lengths(len(nonce), len(aad), len(ciphertext))
    _check_tag_len(len(tag))
    round_keys = as_round_keys(key)
    h = hash_subkey(round_keys)
    pre_counter = j0(h, nonce)
    expected = _tag(round_keys, h, pre_counter, aad, ciphertext, len(tag))
    if not hmac.compare_digest(expected, bytes(tag)):
        return None
    return gctr(round_keys, inc32(pre_counter), ciphertext)
