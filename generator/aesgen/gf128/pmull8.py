"""A carry-less multiply without the Crypto Extension's 64-bit PMULL, for a constant-time
GHASH on NEON cores without it (the neon-tbl and neon-bitsliced methods): the model the
AArch64 lowering is to follow, checked against clmul's arithmetic by the tests.

PMULL on .8b (base Advanced SIMD, fixed latency) multiplies 8 pairs of bytes at once: lane j
of the 128-bit result is the 15-bit carry-less product a_j * b_j, which is where the term
a_j b_j of the 64x64 product belongs (x^(16 j)). Every other term a_i b_j has i - j = k or
k - 8 for one k in 1..7: multiplying a with its bytes rotated by k (EXT) by b gives, in lane
j, a_(j+k mod 8) b_j, whose place is x^(16 j + 8 k) when j + k < 8 and x^(16 j + 8 k - 64)
when it wrapped. So the product is 8 PMULL.8b, each split by a lane mask and the two halves
moved by whole bytes (EXT with zero): no table, no branch, no secret-dependent address.

GHASH's reduction (gf128/x86_64/clmul.py) multiplies a 64-bit half by 0xC200000000000000 =
x^63 + x^62 + x^57 (bit order of the register): three shifts and XORs, no multiply at all.
"""
from __future__ import annotations

MASK64 = (1 << 64) - 1
REDUCTION_SHIFTS = (57, 62, 63)          # the set bits of 0xC2 << 56


def pmull8(a: int, b: int) -> int:
    """PMULL Vd.8H, Vn.8B, Vm.8B on 64-bit a and b: lane j of the result (16 bits) is the
    carry-less product of byte j of a and byte j of b."""
    out = 0
    for j in range(8):
        x, y, p = (a >> 8 * j) & 255, (b >> 8 * j) & 255, 0
        for i in range(8):
            if y >> i & 1:
                p ^= x << i
        out |= p << 16 * j
    return out


def rotate_bytes(a: int, k: int) -> int:
    """EXT Vd.8B, Vn.8B, Vn.8B, #k: byte j of the result is byte (j + k) mod 8 of a."""
    return ((a >> 8 * k) | (a << (64 - 8 * k))) & MASK64 if k else a


def low_lanes_mask(k: int) -> int:
    """The 16-bit lanes j < 8 - k of a 128-bit value: the products that did not wrap."""
    return (1 << 16 * (8 - k)) - 1


def clmul64(a: int, b: int) -> int:
    """The 128-bit carry-less product of 64-bit a and b from 8 PMULL.8b (module text)."""
    out = 0
    for k in range(8):
        p = pmull8(rotate_bytes(a, k), b)
        m = low_lanes_mask(k)
        out ^= ((p & m) << 8 * k) ^ ((p & ~m & (1 << 128) - 1) >> (64 - 8 * k) if k else 0)
    return out


def times_reduction_constant(t: int) -> int:
    """t (64 bits) times 0xC200000000000000, carry-less: three shifts."""
    out = 0
    for s in REDUCTION_SHIFTS:
        out ^= t << s
    return out
