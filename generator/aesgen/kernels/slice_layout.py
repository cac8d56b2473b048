"""Byte layouts of a bit-sliced AES state, shared by the x86 and the NEON bit-sliced engines.

Byte permutations have shuffle semantics (PSHUFB, TBL): out[q] = in[ctrl[q]]. State bytes are
in FIPS order, q = 4 * col + row. Neither engine applies ShiftRows: the state's bytes drift
by ShiftRows^-1 a round instead, so after round r the physical byte q holds logical byte
pi_r[q], with pi_origin = identity. MixColumns' row rotations then become the shuffles
``rotation(ROT1, pi_r)`` and ``rotation(ROT2, pi_r)``, and round key r is stored as
``apply(pi_r, rk_r)``. The engine picks the origin: NEON the FACE level's round (no input
shuffle in the fast path), x86 the last round (no output shuffle on any path).

SWAPMOVES is seed 004's 8x8 bit-transpose network (Käsper and Schwabe, CHES 2009): the
shift, the byte mask and the register pairs (hi, lo) of each of its three levels. The
network is an involution: the same steps transpose back.
"""
from __future__ import annotations

IDENTITY = list(range(16))
SHIFT_ROWS = [4 * ((q // 4 + q % 4) % 4) + q % 4 for q in range(16)]
ROT1 = [4 * (q // 4) + (q % 4 + 1) % 4 for q in range(16)]      # row i <- row i+1
ROT2 = [4 * (q // 4) + (q % 4 + 2) % 4 for q in range(16)]      # row i <- row i+2
SWAPMOVES = [(1, 0x55, [(j + 1, j) for j in (0, 2, 4, 6)]),
             (2, 0x33, [(j + 2, j) for j in (0, 1, 4, 5)]),
             (4, 0x0F, [(j + 4, j) for j in (0, 1, 2, 3)])]


def inverse(p: list[int]) -> list[int]:
    inv = [0] * len(p)
    for q, x in enumerate(p):
        inv[x] = q
    return inv


def apply(ctrl: list[int], x):
    """A shuffle: out[q] = x[ctrl[q]]."""
    return [x[c] for c in ctrl]


def layout(r: int, origin: int) -> list[int]:
    """pi_r: the physical byte q of the state after round r holds logical byte pi_r[q].
    pi_origin = identity and pi_r = SR^-1 o pi_{r-1} (a round skips ShiftRows); period 4."""
    sr_inv = inverse(SHIFT_ROWS)
    p = list(IDENTITY)
    for _ in range((r - origin) % 4):
        p = [sr_inv[x] for x in p]
    return p


def rotation(rot: list[int], pi: list[int]) -> list[int]:
    """The shuffle applying the logical row rotation ``rot`` to a state in layout pi."""
    pinv = inverse(pi)
    return [pinv[rot[pi[q]]] for q in range(16)]
