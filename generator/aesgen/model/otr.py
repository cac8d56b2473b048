"""AES-OTR (v3.1 and v2, AD modes p and s) over the AES model, as a test oracle.

Written from the project's specification, /work/shared/specs/aes-otr.md (section numbers
below are its sections): Format (4), the key-only value Q (5), the AD digest TA (6), the
masks (7), pairs and tail (8.1-8.3), the tag (8.4), decryption (9) and v2's differences
(10). Only the forward cipher is used, also to decrypt. Blocks are 16-byte ``bytes``;
GF(2^128) elements are blocks read big-endian (section 2), doubled by ``gf128.double``.

``seal`` and ``open`` are the AEAD; ``trace`` runs ``seal`` and also returns the values the
specification's Appendix A lists (Q, TA, F, U, L and the final offset c*La), for tests.
"""
from __future__ import annotations

import hmac

from aesgen.model.aes import BLOCK_SIZE, encrypt_block, expand_key, xor_bytes
from aesgen.model.gf128 import double

KEY_BYTES = (16, 32)            # section 3: AES-128 and AES-256
NONCE_MIN, NONCE_MAX = 1, 15    # section 3: Format needs 8|N| <= 120
TAG_MIN, TAG_MAX = 1, 16        # section 3
VERSIONS = ("3.1", "2")
AD_MODES = ("p", "s")
ZERO = bytes(BLOCK_SIZE)

# The mode names of the aesgen_aead registry, and the (version, AD mode) each one is.
MODES = {"otr": ("3.1", "p"), "otr-v2": ("2", "p"), "otr-s": ("3.1", "s"), "otr-v2-s": ("2", "s")}


def pad(x: bytes) -> bytes:
    """Section 1: x itself when it is a whole block, else x || 80 || 00..00."""
    if len(x) > BLOCK_SIZE:
        raise ValueError(f"pad takes at most 16 bytes, not {len(x)}")
    if len(x) == BLOCK_SIZE:
        return bytes(x)
    return bytes(x) + b"\x80" + bytes(BLOCK_SIZE - 1 - len(x))


def times(c: int, x: bytes) -> bytes:
    """c * x for a small polynomial constant c (bits of c: 2 = x, 3 = x + 1, 5 = x^2 + 1,
    7 = x^2 + x + 1; section 2), as a sum of doublings. 3 * 3 is 5, not 9."""
    if c < 1:
        raise ValueError("the constant is a non-zero polynomial")
    acc, power = ZERO, bytes(x)
    while c:
        if c & 1:
            acc = xor_bytes(acc, power)
        power, c = double(power), c >> 1
    return acc


def double_n(x: bytes, n: int) -> bytes:
    """2^n * x: n doublings."""
    for _ in range(n):
        x = double(x)
    return x


def format_block(tag_len: int, nonce: bytes) -> bytes:
    """Section 4: num7(8 tau mod 128) || 0^(120 - 8|N|) || 1 || N."""
    check_lengths(nonce, tag_len)
    f = bytearray(BLOCK_SIZE)
    f[BLOCK_SIZE - len(nonce):] = nonce
    f[BLOCK_SIZE - 1 - len(nonce)] |= 0x01
    f[0] |= ((8 * tag_len) % 128) << 1      # OR: with a 15-byte nonce both are in byte 0
    return bytes(f)


def check_lengths(nonce: bytes, tag_len: int) -> None:
    if not NONCE_MIN <= len(nonce) <= NONCE_MAX:
        raise ValueError(f"AES-OTR nonces are 1 to 15 bytes, not {len(nonce)}")
    if not TAG_MIN <= tag_len <= TAG_MAX:
        raise ValueError(f"AES-OTR tags are 1 to 16 bytes, not {tag_len}")


def _check_variant(version: str, ad: str) -> None:
    if version not in VERSIONS:
        raise ValueError(f"AES-OTR version is '3.1' or '2', not {version!r}")
    if ad not in AD_MODES:
        raise ValueError(f"AES-OTR AD mode is 'p' or 's', not {ad!r}")


class _Otr:
    """One key, one variant: the per-key value and the mask arithmetic of sections 5-10."""

    def __init__(self, key: bytes, version: str, ad: str) -> None:
        if len(key) not in KEY_BYTES:
            raise ValueError(f"AES-OTR keys here are 16 or 32 bytes, not {len(key)}")
        _check_variant(version, ad)
        self.rk = expand_key(bytes(key))
        self.version, self.ad = version, ad
        self.q = self.e(ZERO)                   # Q (v3.1, section 5) or J (v2, section 10)

    def e(self, x: bytes) -> bytes:
        return encrypt_block(self.rk, x)

    def ad_digest(self, aad: bytes) -> bytes:
        """TA (section 6; v2: section 10). The empty AD gives 0, with no AES call."""
        if not aad:
            return ZERO
        blocks = [aad[i:i + BLOCK_SIZE] for i in range(0, len(aad), BLOCK_SIZE)]
        last, full = blocks[-1], len(blocks[-1]) == BLOCK_SIZE
        if self.ad == "s":                      # CBC chain; v2 with J for Q
            x = ZERO
            for a in blocks[:-1]:
                x = self.e(xor_bytes(x, a))
            x = xor_bytes(x, xor_bytes(pad(last), times(4 if full else 2, self.q)))
            return self.e(x)
        # p: masks Q, 2Q, 4Q, ... (v3.1) or 4J, 8J, ... (v2) for the full blocks
        mask = self.q if self.version == "3.1" else times(4, self.q)
        s = ZERO
        for a in blocks[:-1]:
            s = xor_bytes(s, self.e(xor_bytes(mask, a)))
            mask = double(mask)
        # mask is now 2^(h-1) Q (v3.1) or 2^(h-1) 4J (v2)
        if self.version == "3.1":
            final = times(5 if full else 3, mask)
        else:
            final = xor_bytes(mask, times(2 if full else 1, self.q))
        return self.e(xor_bytes(s, xor_bytes(pad(last), final)))

    def nonce_masks(self, nonce: bytes, tag_len: int, ta: bytes) -> tuple[bytes, bytes, bytes]:
        """(F, U or Delta, L): section 7 (v3.1), section 10 (v2)."""
        f = format_block(tag_len, nonce)
        u = self.e(f)
        if self.version == "3.1":
            return f, u, u if self.ad == "p" else double(xor_bytes(u, ta))
        delta = u if self.ad == "p" else xor_bytes(u, ta)
        return f, delta, times(4, delta)

    def second_mask(self, li: bytes, delta: bytes) -> bytes:
        """L*_i: 3 L_i (v3.1, section 7) or L_i xor Delta (v2, section 10)."""
        return times(3, li) if self.version == "3.1" else xor_bytes(li, delta)

    def final_offset(self, la: bytes, full: bool, delta: bytes) -> bytes:
        """What Sigma takes before TE: 7 La or 5 La (v3.1, section 8.4), 3 La (xor Delta when
        the last block is full) (v2, section 10)."""
        if self.version == "3.1":
            return times(7 if full else 5, la)
        return xor_bytes(times(3, la), delta) if full else times(3, la)

    def run(self, nonce: bytes, aad: bytes, data: bytes, tag_len: int,
            decrypt: bool) -> tuple[bytes, bytes, dict]:
        """(output, tag, intermediates): encryption of data (section 8) or decryption of it
        (section 9); the tag is the expected one either way."""
        ta = self.ad_digest(aad)
        f, u, lmask = self.nonce_masks(nonce, tag_len, ta)
        delta = u                               # v2's Delta (unused by v3.1's masks)
        # 8.1: l pairs of 32 bytes and a tail of r bytes (r = 32 when 32 divides n > 0)
        n = len(data)
        r = 0 if n == 0 else (n % 32 or 32)
        pairs = (n - r) // 32
        out = bytearray()
        sigma = ZERO
        li = lmask
        for i in range(pairs):                  # 8.2 (and section 9's inverse)
            a, b = data[32 * i:32 * i + 16], data[32 * i + 16:32 * i + 32]
            ls = self.second_mask(li, delta)
            if not decrypt:
                x, y = a, b
                c1 = xor_bytes(self.e(xor_bytes(li, x)), y)
                c2 = xor_bytes(self.e(xor_bytes(ls, c1)), x)
                out += c1 + c2
            else:
                c1, c2 = a, b
                x = xor_bytes(self.e(xor_bytes(ls, c1)), c2)
                y = xor_bytes(self.e(xor_bytes(li, x)), c1)
                out += x + y
            sigma = xor_bytes(sigma, y)
            li = double(li)
        # 8.3: the tail, with Lf = L_(l+1)
        lf, tail = li, data[32 * pairs:]
        if r <= 16:                             # case a (r = 0: the empty message)
            z = self.e(lf)
            res = xor_bytes(tail, z[:r])
            plain = res if decrypt else tail
            out += res
            sigma = xor_bytes(sigma, pad(plain))
            la = lf
        else:                                   # case b: two blocks, the first full
            lfs = self.second_mask(lf, delta)
            b = r - 16
            if not decrypt:
                x, y = tail[:16], tail[16:]
                z = self.e(xor_bytes(lf, x))
                cy = xor_bytes(y, z[:b])
                cx = xor_bytes(self.e(xor_bytes(lfs, pad(cy))), x)
                out += cx + cy
            else:
                cx, cy = tail[:16], tail[16:]
                x = xor_bytes(self.e(xor_bytes(lfs, pad(cy))), cx)
                z = self.e(xor_bytes(lf, x))
                y = xor_bytes(cy, z[:b])
                out += x + y
            sigma = xor_bytes(sigma, xor_bytes(z, pad(cy)))
            la = lfs
        full = r in (16, 32)
        offset = self.final_offset(la, full, delta)
        te = self.e(xor_bytes(sigma, offset))
        full_tag = xor_bytes(te, ta) if self.ad == "p" else te   # 8.4
        trace = {"Q": self.q, "TA": ta, "F": f, "U": u, "L": lmask, "cLa": offset,
                 "Sigma": sigma, "TE": te, "pairs": pairs, "r": r}
        return bytes(out), full_tag[:tag_len], trace


def trace(key: bytes, nonce: bytes, aad: bytes, msg: bytes, tag_len: int = 16,
          version: str = "3.1", ad: str = "p") -> tuple[bytes, bytes, dict]:
    """seal, and the intermediates: Q (v2: J), TA, F, U (v2: Delta), L, cLa (the offset XORed
    into Sigma before TE: c*La, v2 3La or 3La xor Delta), Sigma (before that offset), TE, and
    the split (pairs, r)."""
    check_lengths(nonce, tag_len)
    return _Otr(key, version, ad).run(bytes(nonce), bytes(aad), bytes(msg), tag_len, False)


def seal(key: bytes, nonce: bytes, aad: bytes, msg: bytes, tag_len: int = 16,
         version: str = "3.1", ad: str = "p") -> tuple[bytes, bytes]:
    """(C, T): section 8 (v3.1) or 10 (v2). |C| = |msg|, |T| = tag_len."""
    ct, tag, _ = trace(key, nonce, aad, msg, tag_len, version, ad)
    return ct, tag


def open(key: bytes, nonce: bytes, aad: bytes, ct: bytes, tag: bytes,  # noqa: A001
         version: str = "3.1", ad: str = "p") -> bytes | None:
    """The message, or None when the tag (of len(tag) bytes, the tau it was made with) does
    not match (section 9). Lengths out of range raise ValueError."""
    check_lengths(nonce, len(tag))
    msg, want, _ = _Otr(key, version, ad).run(bytes(nonce), bytes(aad), bytes(ct), len(tag), True)
    if not hmac.compare_digest(want, bytes(tag)):
        return None
    return msg


open_ = open


def seal_mode(mode: str, key: bytes, nonce: bytes, aad: bytes, msg: bytes,
              tag_len: int = 16) -> tuple[bytes, bytes]:
    """seal for a registry mode name ("otr", "otr-v2", "otr-s", "otr-v2-s")."""
    version, ad = MODES[mode]
    return seal(key, nonce, aad, msg, tag_len, version, ad)
