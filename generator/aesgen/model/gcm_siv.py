"""AES-GCM-SIV (RFC 8452) over the AES model, as a test oracle: POLYVAL (section 3), the
per-nonce key derivation (section 4), seal (section 4) and open (section 5).

POLYVAL works on 16-byte blocks read as little-endian integers: bit i of byte j is the
coefficient of x^(8j + i), with dot(a, b) = a * b * x^-128 mod x^128 + x^127 + x^126 +
x^121 + 1. It is written here from that definition alone, so the tests can hold the
kernels' arithmetic (gf128/x86_64/clmul.py's dot, which is this multiply on the same
integers) against it.
"""
from __future__ import annotations

import hmac

from aesgen.model.aes import BLOCK_SIZE, encrypt_block, xor_bytes

POLY = (1 << 128) | (1 << 127) | (1 << 126) | (1 << 121) | 1
KEY_BYTES = (16, 32)
NONCE_BYTES = 12
TAG_BYTES = 16
MAX_PLAINTEXT_BYTES = 1 << 36       # RFC 8452 section 6: P_MAX, A_MAX
MAX_AAD_BYTES = 1 << 36


def _clmul(a: int, b: int) -> int:
    r = 0
    while b:
        if b & 1:
            r ^= a
        a, b = a << 1, b >> 1
    return r


def _mod(a: int) -> int:
    while a.bit_length() > 128:
        a ^= POLY << (a.bit_length() - 129)
    return a


def _times(a: int, b: int) -> int:
    return _mod(_clmul(a, b))


def _power(a: int, e: int) -> int:
    r = 1
    while e:
        if e & 1:
            r = _times(r, a)
        a, e = _times(a, a), e >> 1
    return r


# x^-128: the field's multiplicative group has order 2^128 - 1
X_INV_128 = _power(2, (1 << 128) - 1 - 128)


def dot(a: int, b: int) -> int:
    """POLYVAL's product: a * b * x^-128 in GF(2^128) mod x^128 + x^127 + x^126 + x^121 + 1."""
    return _times(_times(a, b), X_INV_128)


def polyval(h: bytes, data: bytes) -> bytes:
    """POLYVAL(H, X_1, ..., X_s) over data, a whole number of blocks."""
    if len(data) % BLOCK_SIZE:
        raise ValueError("POLYVAL takes whole 16-byte blocks")
    hv, s = int.from_bytes(h, "little"), 0
    for i in range(0, len(data), BLOCK_SIZE):
        s = dot(s ^ int.from_bytes(data[i:i + BLOCK_SIZE], "little"), hv)
    return s.to_bytes(BLOCK_SIZE, "little")


def _pad(data: bytes) -> bytes:
    return data + bytes(-len(data) % BLOCK_SIZE)


def derive_keys(key: bytes, nonce: bytes) -> tuple[bytes, bytes]:
    """(message authentication key, message encryption key): the first 8 bytes of the
    encryptions of LE32(i) || nonce, i = 0, 1 and 2.. (4 blocks for AES-128, 6 for AES-256)."""
    if len(key) not in KEY_BYTES:
        raise ValueError(f"AES-GCM-SIV keys are 16 or 32 bytes, not {len(key)}")
    if len(nonce) != NONCE_BYTES:
        raise ValueError(f"AES-GCM-SIV nonces are 12 bytes, not {len(nonce)}")
    halves = [encrypt_block(key, i.to_bytes(4, "little") + nonce)[:8]
              for i in range(2 + len(key) // 8)]
    return halves[0] + halves[1], b"".join(halves[2:])


def _tag(auth: bytes, enc: bytes, nonce: bytes, aad: bytes, plaintext: bytes) -> bytes:
    lengths = (8 * len(aad)).to_bytes(8, "little") + (8 * len(plaintext)).to_bytes(8, "little")
    s = bytearray(polyval(auth, _pad(aad) + _pad(plaintext) + lengths))
    for i in range(NONCE_BYTES):
        s[i] ^= nonce[i]
    s[15] &= 0x7F
    return encrypt_block(enc, bytes(s))


def _ctr(enc: bytes, tag: bytes, data: bytes) -> bytes:
    """AES-CTR from the tag with its top bit set, the counter the little-endian 32 bits of
    bytes 0..3 (wrapping in them)."""
    block = bytearray(tag)
    block[15] |= 0x80
    first = int.from_bytes(block[:4], "little")
    out = bytearray()
    for i in range(0, len(data), BLOCK_SIZE):
        block[:4] = ((first + i // BLOCK_SIZE) & 0xFFFFFFFF).to_bytes(4, "little")
        out += xor_bytes(data[i:i + BLOCK_SIZE],
                         encrypt_block(enc, bytes(block))[:len(data) - i])
    return bytes(out)


def check_lengths(aad_len: int, text_len: int) -> None:
    if aad_len > MAX_AAD_BYTES:
        raise ValueError(f"AES-GCM-SIV AAD is at most 2^36 bytes, not {aad_len}")
    if text_len > MAX_PLAINTEXT_BYTES:
        raise ValueError(f"AES-GCM-SIV plaintext is at most 2^36 bytes, not {text_len}")


def seal(key: bytes, nonce: bytes, aad: bytes, plaintext: bytes) -> bytes:
    """The ciphertext followed by the 16-byte tag (RFC 8452 section 4)."""
    check_lengths(len(aad), len(plaintext))
    auth, enc = derive_keys(key, nonce)
    tag = _tag(auth, enc, nonce, aad, plaintext)
    return _ctr(enc, tag, plaintext) + tag


def open_(key: bytes, nonce: bytes, aad: bytes, sealed: bytes) -> bytes | None:
    """The plaintext, or None when the tag does not match (RFC 8452 section 5)."""
    if len(sealed) < TAG_BYTES:
        return None
    check_lengths(len(aad), len(sealed) - TAG_BYTES)
    auth, enc = derive_keys(key, nonce)
    ciphertext, tag = sealed[:-TAG_BYTES], sealed[-TAG_BYTES:]
    plaintext = _ctr(enc, tag, ciphertext)
    if not hmac.compare_digest(_tag(auth, enc, nonce, aad, plaintext), tag):
        return None
    return plaintext
