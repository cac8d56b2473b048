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


# --- the lowering's arithmetic (gf128/aarch64/pmull8.py), step for step -------------------
# The hash engine multiplies blocks in clmul's representation (gf128/x86_64/clmul.py: hash
# order, H~, dot(a, b) = a b x^-128) by Karatsuba on 64-bit halves. Each 64x64 product is
# the sum above over the 8 byte rotations k of the key's half, and the spread of a rotation's
# lanes (the two byte shifts) is linear: so the PMULL.8b products of every block of a batch
# are summed per rotation first and spread once a rotation and a Karatsuba part. The key's
# rotations are computed once a key (init) and stored per power.
MASK128 = (1 << 128) - 1
ROTATIONS = 8


def key_rotations(h: int) -> list[int]:
    """K_k, k = 0..7: each 64-bit half of the 128-bit h rotated by k bytes (one TBL)."""
    lo, hi = h & MASK64, h >> 64
    return [rotate_bytes(lo, k) | rotate_bytes(hi, k) << 64 for k in range(ROTATIONS)]


def middle_rotations(h: int) -> list[int]:
    """M_k: Karatsuba's middle key h.lo ^ h.hi rotated by k bytes."""
    return [rotate_bytes((h & MASK64) ^ (h >> 64), k) for k in range(ROTATIONS)]


def spread(p: int, k: int) -> int:
    """The lanes of a sum of PMULL.8b products under rotation k at their places in the
    128-bit product, as the lowering does it with four EXTs: the lanes that did not wrap
    (p shifted up 2k bytes, the top dropped, then down k) and those that did (p shifted
    down 16 - 2k bytes, then up 8 - k)."""
    if k == 0:
        return p
    kept = ((p << 16 * k) & MASK128) >> 8 * k
    wrapped = (p >> 8 * (16 - 2 * k)) << 8 * (8 - k)
    return kept ^ wrapped


def karatsuba_sums(ys: list[int], keys: list[int]) -> tuple[int, int, int]:
    """The three Karatsuba sums over the pairs (y, h): sum y.lo h.lo, sum y.hi h.hi and
    sum (y.lo ^ y.hi)(h.lo ^ h.hi), each 128 bits, from PMULL.8b (low halves) and PMULL2.8b
    (high halves) of the keys' rotations, summed per rotation and spread once."""
    parts = [0, 0, 0]
    for k in range(ROTATIONS):
        sums = [0, 0, 0]
        for y, h in zip(ys, keys):
            rot, mid = key_rotations(h)[k], middle_rotations(h)[k]
            sums[0] ^= pmull8(rot & MASK64, y & MASK64)
            sums[1] ^= pmull8(rot >> 64, y >> 64)
            sums[2] ^= pmull8(mid, (y & MASK64) ^ (y >> 64))
        for i in range(3):
            parts[i] ^= spread(sums[i], k)
    return parts[0], parts[1], parts[2]


def montgomery_fold(lo: int) -> int:
    """One of clmul.dot's two folds, the multiply by 0xC2 << 56 by shifts: the halves
    swapped, plus the low half times the constant (USHL on the low half in both lanes by
    (s, s - 64) for each of the constant's bits s is t x^s as 128 bits)."""
    t = lo & MASK64
    return ((lo & MASK64) << 64 | lo >> 64) ^ times_reduction_constant(t)


def reduce(lo: int, hi: int, mi: int) -> int:
    """Karatsuba's parts to the 256-bit product, reduced as clmul.dot (two folds)."""
    mi ^= lo ^ hi
    lo ^= (mi << 64) & MASK128
    hi ^= mi >> 64
    for _ in range(2):
        lo = montgomery_fold(lo)
    return lo ^ hi


def dot_sum(x: int, blocks: list[int], keys: list[int]) -> int:
    """(X ^ B1) K1 ^ B2 K2 ^ .. ^ Bn Kn in clmul.dot's terms (K_j = H~^(n - j + 1) for
    GHASH's aggregated Horner step), one reduction: the engine's batch."""
    ys = [blocks[0] ^ x] + list(blocks[1:])
    return reduce(*karatsuba_sums(ys, keys))
