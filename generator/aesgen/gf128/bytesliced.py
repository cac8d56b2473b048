"""GHASH without a carry-less multiplier: byte-sliced streams multiplied by GF2P8AFFINEQB.

Multiplying by a fixed element P of GF(2^128) is a linear map on 128 bits, so output byte j
of X * P is the XOR over input bytes p of M[p][j] * X[p], each M[p][j] an 8x8 bit matrix:
the matrix GF2P8AFFINEQB applies to every byte of a qword. The map is 256 such matrices
(2 KiB), derived from P when the key is set (no table lookup ever: the data only meets
matrices through the instruction, at addresses that depend on nothing secret).

Layout. Eight independent Horner streams run side by side, the blocks of the message
dealt to stream (block index mod 8). The state is 16 qwords T[p], one an input byte
position: byte m of T[p] is byte p of stream m's value. The matrix M[p][j] goes to every
byte of T[p] at once (GF2P8AFFINEQB applies one matrix to the 8 bytes of its qword), so a
multiply of all eight streams by P is 256 byte-matrix products in 64 ymm affines: output
register a (T'[4a..4a+3]) is the XOR over p of affine(broadcast(T[p]), M[p][4a..4a+3]).

Hashing. A block with absolute index i (from 0) goes to stream i mod 8, which is first
multiplied by H^8: S[m] = S[m] * H^8 + X_i. After n blocks, stream m holds its blocks
weighted by H^(8 * later blocks of the same stream); GHASH needs H^(n - i), which is that
times H^e, e = ((n - 1 - m) mod 8) + 1, the same for all of stream m's blocks. The
finish rotates the streams so that slot t = (m - n) mod 8 holds stream m (e = 8 - t),
and then sums them as a tree: u[t] = u[t] H^4 + u[t + 4], then by H^2 and by H, and a
last multiply by H: H^4, H^2 and H join H^8 as the powers kept (8 KiB of matrices).

This module is the layout and arithmetic in Python: the constants the lowering
(gf128/x86_64/bytesliced.py) uses, and the model the tests check against GHASH's
definition (model/gf128.py) before the instructions are trusted with it.
"""
from __future__ import annotations

import functools

from ..model.gf128 import GHASH_R, from_block, to_block

STREAMS = 8                     # Horner streams: the bytes of a qword
POWERS = (8, 4, 2, 1)           # the powers of H whose matrices the context keeps
MASK64 = (1 << 64) - 1
# GF2P8AFFINEQB's data operand that turns its matrix operand into the matrix transposed
# (and both axes reversed): byte r of the data is 1 << (7 - r), see bit_transpose
TRANSPOSER = 0x0102040810204080


def affine_byte(matrix: int, x: int) -> int:
    """GF2P8AFFINEQB on one byte, no constant: bit i = parity(matrix.byte[7 - i] & x)."""
    out = 0
    for i in range(8):
        out |= (bin((matrix >> (8 * (7 - i))) & x & 0xFF).count("1") & 1) << i
    return out


@functools.lru_cache(maxsize=1 << 14)
def _affine_table(matrix: int) -> bytes:
    """affine_byte(matrix, x) for every byte x (the model's speed: the map is linear)."""
    cols = [affine_byte(matrix, 1 << c) for c in range(8)]
    table = bytearray(256)
    for x in range(1, 256):
        low = x & -x
        table[x] = table[x ^ low] ^ cols[low.bit_length() - 1]
    return bytes(table)


def affine_qword(matrix: int, data: int) -> int:
    """GF2P8AFFINEQB on one qword: every byte of data through the one matrix."""
    table = _affine_table(matrix)
    return int.from_bytes(bytes(table[b] for b in data.to_bytes(8, "little")), "little")


def transpose_rows(rows: list[bytes]) -> list[int]:
    """Eight 16-byte rows (missing rows are zero) -> 16 qwords: byte m of qword j is byte
    j of row m. For blocks it slices them into the streams' layout (T[p]); for the basis
    images of one input byte it gathers each output byte's column (see matrices)."""
    rows = list(rows) + [bytes(16)] * (STREAMS - len(rows))
    return [sum(rows[m][j] << (8 * m) for m in range(STREAMS)) for j in range(16)]


def bit_transpose(q: int) -> int:
    """The 8x8 bit matrix of q with rows and columns exchanged (and both reversed): byte r,
    bit c of the result is byte 7 - c, bit 7 - r of q. One GF2P8AFFINEQB with q as the
    matrix and TRANSPOSER as the data."""
    return affine_qword(q, TRANSPOSER)


def mulx(v: int) -> int:
    """V * x in GHASH order (the doubling of the matrices' derivation)."""
    return (v >> 1) ^ GHASH_R if v & 1 else v >> 1


def polyval_to_ghash(p: bytes) -> bytes:
    """The GHASH-order element whose multiply is POLYVAL's dot by p (RFC 8452 Appendix A):
    mulX_GHASH(ByteReverse(p)). With it, POLYVAL_H(X) = ByteReverse(GHASH_H'(ByteReverse(X)))
    block by block, so POLYVAL is this engine with its bytes numbered from the other end."""
    return to_block(mulx(from_block(p[::-1])))


def matrices(p: bytes, polyval: bool = False) -> list[int]:
    """The 256 matrix qwords of 'times P', in the context's order: index 16 p + j holds
    M[p][j] (input byte p, output byte j), so the four of output register a for input byte
    p are one 32-byte load. Derivation: input bit c of byte p is the coefficient of x^k,
    k = 8 p + 7 - c, whose image is P x^k (k doublings of P); byte j of the images of
    byte p's eight bits, transposed, is M[p][j].

    ``polyval``: the matrices of POLYVAL's dot by P (bytes as they are in memory): those of
    GHASH's times polyval_to_ghash(P) with input and output bytes numbered from the other
    end, M'[p][j] = M[15 - p][15 - j]; the bits inside a byte keep their order."""
    if polyval:
        return _renumbered(matrices(polyval_to_ghash(p)))
    images, v = [], from_block(p)
    for _ in range(128):
        images.append(to_block(v))
        v = mulx(v)
    out = []
    for byte in range(16):
        out += [bit_transpose(q) for q in transpose_rows(images[8 * byte:8 * byte + 8])]
    return out


def multiply(state: list[int], mats: list[int]) -> list[int]:
    """All eight streams times the matrices' element: T'[j] = XOR_p affine(M[p][j], T[p])."""
    out = [0] * 16
    for p in range(16):
        for j in range(16):
            out[j] ^= affine_qword(mats[16 * p + j], state[p])
    return out


def rotl(q: int, bits: int) -> int:
    bits %= 64
    return ((q << bits) | (q >> (64 - bits))) & MASK64


def slot_mask(first: int, count: int) -> int:
    """The bytes of the slots first .. first + count - 1 (mod 8) of a qword, all ones."""
    return rotl((1 << (8 * count)) - 1 if count < STREAMS else MASK64, 8 * first)


def absorb(state: list[int], hashed: int, blocks: list[bytes], h8: list[int]) -> list[int]:
    """The streams after up to 8 more blocks, ``hashed`` blocks hashed before them: block i
    goes to slot (hashed + i) mod 8, whose stream is first multiplied by H^8; the other
    slots keep their value."""
    if not 1 <= len(blocks) <= STREAMS:
        raise ValueError("absorb takes 1 to 8 blocks")
    first = hashed % STREAMS
    x = [rotl(q, 8 * first) for q in transpose_rows(blocks)]
    t = multiply(state, h8)
    keep = slot_mask(first, len(blocks))
    return [((ti ^ xi) & keep) | (si & ~keep & MASK64) for ti, xi, si in zip(t, x, state)]


def finish(state: list[int], hashed: int, mats: dict[int, list[int]]) -> bytes:
    """GHASH of the ``hashed`` blocks the streams hold (see the module text)."""
    s = [rotl(q, -8 * (hashed % STREAMS)) for q in state]     # slot t <- stream t + n
    for power, shift in ((4, 32), (2, 16), (1, 8)):
        s = [t ^ (q >> shift) for t, q in zip(multiply(s, mats[power]), s)]
    s = multiply(s, mats[1])
    return bytes(q & 0xFF for q in s)


def ghash(h: bytes, data: bytes, pieces: list[int] | None = None) -> bytes:
    """GHASH_H(data) the way the engine computes it: pieces of at most 8 blocks (``pieces``
    gives their block counts, else 8 a piece), then the finish."""
    mats = {e: matrices(to_block(_power(from_block(h), e))) for e in POWERS}
    return _streams_hash(mats, data, pieces)


def polyval(h: bytes, data: bytes, pieces: list[int] | None = None) -> bytes:
    """POLYVAL_H(data) (whole blocks) the way the engine computes it: the powers of H under
    POLYVAL's dot are, through polyval_to_ghash, GHASH's powers of H', so the matrices are
    those powers' with the bytes renumbered; blocks, streams and the finish are GHASH's."""
    hg = from_block(polyval_to_ghash(h))
    mats = {e: _renumbered(matrices(to_block(_power(hg, e)))) for e in POWERS}
    return _streams_hash(mats, data, pieces)


def _streams_hash(mats: dict[int, list[int]], data: bytes, pieces: list[int] | None) -> bytes:
    """The streams over data in pieces of at most 8 blocks (``pieces`` gives their block
    counts, else 8 a piece), then the finish, by the matrices of H^8, H^4, H^2, H."""
    blocks = [data[i:i + 16] for i in range(0, len(data), 16)]
    pieces = pieces or [STREAMS] * ((len(blocks) + STREAMS - 1) // STREAMS)
    state, hashed = [0] * 16, 0
    for n in pieces:
        piece, blocks = blocks[:n], blocks[n:]
        if piece:
            state = absorb(state, hashed, piece, mats[8])
            hashed += len(piece)
    return finish(state, hashed, mats)


def _renumbered(m: list[int]) -> list[int]:
    return [m[16 * (15 - i) + 15 - j] for i in range(16) for j in range(16)]


def _power(h: int, e: int) -> int:
    from ..model.gf128 import GHASH_ONE, gf_mul

    p = GHASH_ONE
    for _ in range(e):
        p = gf_mul(p, h)
    return p
