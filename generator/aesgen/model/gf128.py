"""GF(2^128) for GHASH (NIST SP 800-38D section 6.3) and POLYVAL (RFC 8452), as a test oracle.

Written from the definitions, bit by bit (shift-and-add, no tables); slow and easy to
audit.  GF doubling for OCB/OTR and XTS is here too.  Bit orders: see the comment below.
"""

from __future__ import annotations

# Bit orders.
#
# GHASH order (SP 800-38D sections 6.3 and 6.4).  A 16-byte block is read as one integer
# with ``int.from_bytes(block, "big")`` (``from_block``).  The block's first bit, the most
# significant bit of byte 0, is integer bit 127 and is the coefficient of x^0; the last
# bit, the least significant bit of byte 15, is integer bit 0 and is the coefficient of
# x^127.  So integer bit ``127 - i`` holds the coefficient of x^i, the element 1 is the
# block 80 00 .. 00 (``1 << 127``), x is 40 00 .. 00, and the field polynomial is
# x^128 + x^7 + x^2 + x + 1.
#
# POLYVAL order (RFC 8452 section 3).  A block is read with ``int.from_bytes(block,
# "little")``: integer bit i holds the coefficient of x^i, and the field polynomial is
# x^128 + x^127 + x^126 + x^121 + 1, the reverse of GHASH's.
#
# One field, two bit orders (RFC 8452 Appendix A).  ByteReverse turns a POLYVAL block a(x)
# into the GHASH block of x^127 * a(1/x).  Under it dot(a, b) = a * b * x^-128 becomes
# ByteReverse(a) * (x * ByteReverse(b)) in the GHASH field, so
# a -> mulX_GHASH(ByteReverse(a)) is a field isomorphism from (POLYVAL, dot) to
# (GHASH, *), and POLYVAL(H, X_1..X_n) ==
# ByteReverse(GHASH(mulX_GHASH(ByteReverse(H)), ByteReverse(X_1), .., ByteReverse(X_n))).
#
# Doubling (OCB, OTR, CMAC) uses the same polynomial as GHASH in the conventional order,
# ``int.from_bytes(block, "big")`` with integer bit i = x^i; XTS reads it little-endian.

BLOCK_SIZE = 16
"""GHASH and POLYVAL work on 16-byte blocks."""

_MASK128 = (1 << 128) - 1

GHASH_R = 0xE1 << 120
"""R = 11100001 || 0^120 (SP 800-38D section 6.3): x^128 = 1 + x + x^2 + x^7 in GHASH order."""

GHASH_ONE = 1 << 127
"""The element 1 in GHASH order: the block 80 00 .. 00."""

GHASH_X = 1 << 126
"""The element x in GHASH order: the block 40 00 .. 00."""

POLYVAL_MODULUS = (1 << 128) | (1 << 127) | (1 << 126) | (1 << 121) | 1
"""x^128 + x^127 + x^126 + x^121 + 1 (RFC 8452 section 3), as a little-endian bit mask."""

DOUBLING_CONSTANT = 0x87
"""x^128 = x^7 + x^2 + x + 1 in the conventional (non-reflected) order used by doubling."""


# ---------------------------------------------------------------------------
# Blocks and integers
# ---------------------------------------------------------------------------

def _check_block(block: bytes) -> bytes:
    if len(block) != BLOCK_SIZE:
        raise ValueError(f"GF(2^128) block must be {BLOCK_SIZE} bytes, got {len(block)}")
    return bytes(block)


def _blocks(data: bytes) -> list[bytes]:
    if len(data) % BLOCK_SIZE:
        raise ValueError(f"data must be a multiple of {BLOCK_SIZE} bytes, got {len(data)}")
    return [bytes(data[i:i + BLOCK_SIZE]) for i in range(0, len(data), BLOCK_SIZE)]


def from_block(block: bytes) -> int:
    """The GHASH-order integer of a block: ``int.from_bytes(block, "big")``."""
    return int.from_bytes(_check_block(block), "big")


def to_block(x: int) -> bytes:
    """The block of a GHASH-order integer (inverse of :func:`from_block`)."""
    if not 0 <= x <= _MASK128:
        raise ValueError(f"not a 128-bit value: {x!r}")
    return x.to_bytes(BLOCK_SIZE, "big")


def byte_reverse(block: bytes) -> bytes:
    """ByteReverse of RFC 8452 Appendix A: byte 0 <-> byte 15, and so on."""
    return _check_block(block)[::-1]


# ---------------------------------------------------------------------------
# GHASH (SP 800-38D sections 6.3 and 6.4)
# ---------------------------------------------------------------------------

def _mulx(v: int) -> int:
    """V * x in GHASH order: one right shift, R folded in when x^127's bit falls out."""
    return (v >> 1) ^ GHASH_R if v & 1 else v >> 1


def gf_mul(x: int, y: int) -> int:
    """X * Y in GHASH order, Algorithm 1 of SP 800-38D section 6.3.

    For i = 0..127: if bit x_i of X (x_0 the leftmost, integer bit 127) is set, Z ^= V;
    then V = V * x (rightshift, XOR R on carry).  Z is the product.
    """
    for value in (x, y):
        if not 0 <= value <= _MASK128:
            raise ValueError(f"not a 128-bit value: {value!r}")
    z, v = 0, y
    for i in range(128):
        if (x >> (127 - i)) & 1:
            z ^= v
        v = _mulx(v)
    return z


def mulx_ghash(block: bytes) -> bytes:
    """mulX_GHASH (RFC 8452 Appendix A): the block times x in the GHASH field."""
    return to_block(_mulx(from_block(block)))


def ghash(h: bytes, data: bytes) -> bytes:
    """GHASH_H(X_1 || .. || X_m), Algorithm 2 of SP 800-38D section 6.4.

    Y_0 = 0, Y_i = (Y_{i-1} ^ X_i) * H; the result is Y_m.  ``data`` must be whole blocks.
    """
    hv = from_block(h)
    y = 0
    for block in _blocks(data):
        y = gf_mul(y ^ from_block(block), hv)
    return to_block(y)


def h_powers(h: bytes, n: int) -> list[bytes]:
    """[H^1, H^2, .., H^n] in GHASH order, as blocks (the table an n-way GHASH kernel uses)."""
    if n < 0:
        raise ValueError("n must be non-negative")
    hv = from_block(h)
    powers, p = [], GHASH_ONE
    for _ in range(n):
        p = gf_mul(p, hv)
        powers.append(to_block(p))
    return powers


# ---------------------------------------------------------------------------
# POLYVAL (RFC 8452 section 3), defined directly in its own bit order
# ---------------------------------------------------------------------------

def _poly_mod(p: int, modulus: int) -> int:
    """Remainder of the GF(2) polynomial ``p`` by ``modulus`` (bit i = coefficient of x^i)."""
    degree = modulus.bit_length() - 1
    while p.bit_length() - 1 >= degree:
        p ^= modulus << (p.bit_length() - 1 - degree)
    return p


def clmul(a: int, b: int) -> int:
    """Carry-less product of two GF(2) polynomials, shift and add."""
    product = 0
    while b:
        if b & 1:
            product ^= a
        a <<= 1
        b >>= 1
    return product


def polyval_mul(a: bytes, b: bytes) -> bytes:
    """a * b in the POLYVAL field (little-endian blocks; RFC 8452 section 3)."""
    ai = int.from_bytes(_check_block(a), "little")
    bi = int.from_bytes(_check_block(b), "little")
    return _poly_mod(clmul(ai, bi), POLYVAL_MODULUS).to_bytes(BLOCK_SIZE, "little")


def polyval_dot(a: bytes, b: bytes) -> bytes:
    """dot(a, b) = a * b * x^-128 in the POLYVAL field (RFC 8452 section 3).

    x^-128 is applied as 128 divisions by x: the modulus has constant term 1, so adding
    it when bit 0 is set makes the value divisible by x without changing its class.
    """
    p = int.from_bytes(polyval_mul(a, b), "little")
    for _ in range(128):
        if p & 1:
            p ^= POLYVAL_MODULUS
        p >>= 1
    return p.to_bytes(BLOCK_SIZE, "little")


def mulx_polyval(block: bytes) -> bytes:
    """mulX_POLYVAL (RFC 8452 Appendix A): the block times x in the POLYVAL field."""
    p = int.from_bytes(_check_block(block), "little") << 1
    return _poly_mod(p, POLYVAL_MODULUS).to_bytes(BLOCK_SIZE, "little")


def polyval(h: bytes, data: bytes) -> bytes:
    """POLYVAL(H, X_1, .., X_s) (RFC 8452 section 3): S_0 = 0, S_j = dot(S_{j-1} + X_j, H)."""
    _check_block(h)
    s = bytes(BLOCK_SIZE)
    for block in _blocks(data):
        s = polyval_dot(bytes(u ^ v for u, v in zip(s, block)), h)
    return s


def polyval_via_ghash(h: bytes, data: bytes) -> bytes:
    """POLYVAL computed with GHASH, by the identity of RFC 8452 Appendix A.

    ByteReverse(GHASH(mulX_GHASH(ByteReverse(H)), ByteReverse(X_1), .., ByteReverse(X_n))).
    """
    reversed_data = b"".join(byte_reverse(block) for block in _blocks(data))
    return byte_reverse(ghash(mulx_ghash(byte_reverse(h)), reversed_data))


# ---------------------------------------------------------------------------
# Doubling (multiplication by x in the conventional, non-reflected order)
# ---------------------------------------------------------------------------

def double(block: bytes) -> bytes:
    """2 * block as OCB (RFC 7253 section 2) and OTR double it: big-endian.

    Shift the 128-bit big-endian value left by one bit; on carry out of bit 127, XOR
    0x87 into the last byte.  Same polynomial as GHASH but the conventional bit order
    (integer bit i = coefficient of x^i), so it is the bit-reversal of GHASH's
    multiplication by x, not the same operation on the same bytes.
    """
    v = int.from_bytes(_check_block(block), "big") << 1
    if v >> 128:
        v ^= (1 << 128) | DOUBLING_CONSTANT
    return v.to_bytes(BLOCK_SIZE, "big")


def double_le(block: bytes) -> bytes:
    """The XTS tweak update, multiplication by alpha (IEEE 1619-2007 section 5.2).

    :func:`double` on the byte-reversed block: shift the little-endian value left, and
    on carry XOR 0x87 into byte 0.
    """
    return double(byte_reverse(block))[::-1]
