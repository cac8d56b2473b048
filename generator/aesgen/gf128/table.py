"""GHASH by lookup tables, the hash of the table method: seed 004's 8 KiB of tables (Shoup's
4-bit tables, one for each nibble position). NOT CONSTANT TIME: which table entries a block
reads depends on the data and the accumulator, and the entries' cache lines show it.

Multiplying by the fixed H is linear. With X as a GHASH-order integer V (model/gf128.py:
integer bit 127 - i is the coefficient of x^i) cut into 32 nibbles, V = sum over q of
n_q 2^(4q), the product is X H = XOR over q of T_q[n_q], where T_q[n] = (n 2^(4q)) H. So
32 tables of 16 entries of 16 bytes (8 KiB a key) and 32 lookups a block, with no shift
and no reduction at all. Seed 004 ("AES-GCM with Lookup Tables") built exactly this: 32
tables of 16 128-bit values, 8 KB, one multiplication in 32 loads and 84 arithmetic
instructions, about 3 cycles/byte on a Core 2.

Derivation when the key is set: T_q[2^b] is e_k H with k = 4q + b, where e_k = 2^k is the
element x^(127-k); walking k down from 127 (e_127 H = H), each is the previous one times
x, a right shift of V with R = 0xE1 || 0^120 folded in when bit 0 falls out (SP 800-38D
6.3). The other entries are XORs of those four: T_q[n] = T_q[top bit of n] ^ T_q[rest].

This module is the layout and the arithmetic in Python: what the lowering
(gf128/x86_64/table.py) stores, checked against GHASH's definition by the tests.
"""
from __future__ import annotations

from ..model.gf128 import GHASH_R, from_block

POSITIONS = 32                  # nibble positions of a block: one table each
ENTRIES = 16                    # a table's entries: one per nibble value
TABLE_BYTES = POSITIONS * ENTRIES * 16


def times_x(v: int) -> int:
    """v x in GHASH order: the right shift, R folded in for the bit that fell out."""
    return (v >> 1) ^ (GHASH_R if v & 1 else 0)


def tables(h: bytes) -> list[list[int]]:
    """T[q][n] = (n << 4q) H as GHASH-order integers, derived as the lowering does."""
    t = [[0] * ENTRIES for _ in range(POSITIONS)]
    d = from_block(h)                           # e_127 H: the element 1 times H
    for k in range(127, -1, -1):
        q, bit = divmod(k, 4)
        t[q][1 << bit] = d
        d = times_x(d)
    for q in range(POSITIONS):
        for n in range(3, ENTRIES):
            top = 1 << (n.bit_length() - 1)
            if n != top:
                t[q][n] = t[q][top] ^ t[q][n - top]
    return t


def multiply(v: int, t: list[list[int]]) -> int:
    """V H by the tables: one lookup a nibble of V."""
    out = 0
    for q in range(POSITIONS):
        out ^= t[q][(v >> (4 * q)) & 15]
    return out


def ghash(h: bytes, data: bytes) -> int:
    """GHASH_H of whole blocks by the tables (Horner: X = (X ^ B) H), GHASH order."""
    t, x = tables(h), 0
    for i in range(0, len(data), 16):
        x = multiply(x ^ from_block(data[i:i + 16]), t)
    return x


def entry_offset(q: int, n: int) -> int:
    """Byte offset of T_q[n] in the 8 KiB: table q at 256 q, entry n at 16 n."""
    return 16 * (ENTRIES * q + n)
