"""The instruction semantics as pure functions on Python ints (byte 0 = bits 0..7): width
masks, the lazy rflags record, lane and element masks, AES, carry-less multiply, GFNI, shuffles."""
from __future__ import annotations

from functools import lru_cache

from ...model import gf128
from ...model.aes import INV_SBOX, SBOX

M8, M16, M32, M64 = 0xFF, 0xFFFF, 0xFFFF_FFFF, (1 << 64) - 1
M128, M256, M512 = (1 << 128) - 1, (1 << 256) - 1, (1 << 512) - 1
WMASK = {16: M128, 32: M256, 64: M512}
BITS_MASK = {8: M8, 16: M16, 32: M32, 64: M64}

_SBOX_B = bytes(SBOX)
_INV_SBOX_B = bytes(INV_SBOX)


# =========================================================================================
# flags: a lazily evaluated record (kind, result, a, b, bits, extra)
F_LOGIC, F_ADD, F_SUB, F_INC, F_DEC, F_SHL, F_SHR, F_SAR, F_X = range(9)
_PARITY = bytes(1 - bin(i).count("1") % 2 for i in range(256))    # PF: 1 when even


def flag_cf(t) -> int:
    k = t[0]
    if k == F_SUB:
        return 1 if t[2] < t[3] + t[5] else 0
    if k == F_ADD:
        return ((t[2] + t[3] + t[5]) >> t[4]) & 1
    if k == F_LOGIC:
        return 0
    if k in (F_INC, F_DEC, F_X):
        return t[5]
    if k == F_SHL:
        return (t[2] >> (t[4] - t[3])) & 1 if t[3] <= t[4] else 0
    if k == F_SHR:
        return (t[2] >> (t[3] - 1)) & 1
    if k == F_SAR:
        a, bits = t[2], t[4]
        if a >> (bits - 1):
            a -= 1 << bits
        return (a >> (t[3] - 1)) & 1
    raise AssertionError(k)


def flag_of(t) -> int:
    k, r, a, b, bits = t[0], t[1], t[2], t[3], t[4]
    if k in (F_ADD, F_INC):
        return (((a ^ r) & (b ^ r)) >> (bits - 1)) & 1
    if k in (F_SUB, F_DEC):
        return (((a ^ b) & (a ^ r)) >> (bits - 1)) & 1
    if k == F_LOGIC or k == F_SAR:
        return 0
    if k == F_SHL:
        return ((r >> (bits - 1)) & 1) ^ flag_cf(t)
    if k == F_SHR:
        return (a >> (bits - 1)) & 1
    if k == F_X:
        return t[3]
    raise AssertionError(k)


def _zf(t) -> int:
    return 1 if t[1] == 0 else 0


def _sf(t) -> int:
    return (t[1] >> (t[4] - 1)) & 1


def _pf(t) -> int:
    if t[0] == F_X and len(t) > 6:
        return t[6]
    return _PARITY[t[1] & 0xFF]


def flags_x(r: int, bits: int, cf: int, of: int, pf: int | None = None):
    """Explicit flags: ZF, SF and PF from r (unless pf is given), CF and OF as given."""
    if pf is None:
        return (F_X, r, cf, of, bits, cf)
    return (F_X, r, cf, of, bits, cf, pf)


def _c_b(t):
    return t[2] < t[3] + t[5] if t[0] == F_SUB else flag_cf(t)


def _c_be(t):
    if t[0] == F_SUB:
        return t[2] <= t[3] + t[5]
    return flag_cf(t) or t[1] == 0


def _c_l(t):
    return _sf(t) != flag_of(t)


def _c_le(t):
    return t[1] == 0 or _sf(t) != flag_of(t)


CONDITIONS = {
    "o": lambda t: flag_of(t), "no": lambda t: not flag_of(t),
    "b": _c_b, "c": _c_b, "nae": _c_b,
    "ae": lambda t: not _c_b(t), "nb": lambda t: not _c_b(t), "nc": lambda t: not _c_b(t),
    "e": lambda t: t[1] == 0, "z": lambda t: t[1] == 0,
    "ne": lambda t: t[1] != 0, "nz": lambda t: t[1] != 0,
    "be": _c_be, "na": _c_be,
    "a": lambda t: not _c_be(t), "nbe": lambda t: not _c_be(t),
    "s": lambda t: _sf(t), "ns": lambda t: not _sf(t),
    "p": lambda t: _pf(t), "pe": lambda t: _pf(t), "np": lambda t: not _pf(t),
    "po": lambda t: not _pf(t),
    "l": _c_l, "nge": _c_l, "ge": lambda t: not _c_l(t), "nl": lambda t: not _c_l(t),
    "le": _c_le, "ng": _c_le, "g": lambda t: not _c_le(t), "nle": lambda t: not _c_le(t),
}


# =========================================================================================
# vector helpers (Python ints, byte 0 = bits 0..7)
def replicate(pattern: int, unit_bits: int, total_bits: int) -> int:
    v = 0
    for i in range(total_bits // unit_bits):
        v |= pattern << (unit_bits * i)
    return v


@lru_cache(maxsize=None)
def replicate_const(unit_bits: int, total_bits: int) -> int:
    """1 in the lowest bit of every unit: multiply a unit-wide value by it to broadcast."""
    return replicate(1, unit_bits, total_bits)


@lru_cache(maxsize=None)
def high_bits(esize: int, total_bits: int) -> int:
    return replicate(1 << (esize - 1), esize, total_bits)


@lru_cache(maxsize=None)
def lane_mask(nbits: int, which: tuple[bool, ...]) -> int:
    """Bytes i of every 128-bit lane with which[i] set."""
    lane = 0
    for i in range(16):
        if which[i]:
            lane |= 0xFF << (8 * i)
    return replicate(lane, 128, nbits)


def _lane_bytes_mask(nbits: int, pred) -> int:
    return lane_mask(nbits, tuple(bool(pred(i)) for i in range(16)))


class _AES:
    """AES round primitives on all 128-bit lanes of an nbits-wide int at once."""

    def __init__(self, nbits: int) -> None:
        self.nbytes = nbits // 8
        rb = lambda p: _lane_bytes_mask(nbits, p)  # noqa: E731
        self.row0 = rb(lambda i: i % 4 == 0)
        self.sr = []
        self.isr = []
        for r in (1, 2, 3):
            self.sr.append((32 * r, rb(lambda i, r=r: i % 4 == r and i // 4 < 4 - r),
                            128 - 32 * r, rb(lambda i, r=r: i % 4 == r and i // 4 >= 4 - r)))
            self.isr.append((32 * r, rb(lambda i, r=r: i % 4 == r and i // 4 >= r),
                             128 - 32 * r, rb(lambda i, r=r: i % 4 == r and i // 4 < r)))
        self.lo24 = replicate(0x00FFFFFF, 32, nbits)
        self.hi8 = replicate(0xFF000000, 32, nbits)
        self.lo16 = replicate(0x0000FFFF, 32, nbits)
        self.hi16 = replicate(0xFFFF0000, 32, nbits)
        self.b7f = replicate(0x7F, 8, nbits)
        self.b01 = replicate(0x01, 8, nbits)

    def shift_rows(self, x: int) -> int:
        (s1, n1, t1, w1), (s2, n2, t2, w2), (s3, n3, t3, w3) = self.sr
        return ((x & self.row0) | ((x >> s1) & n1) | ((x << t1) & w1) | ((x >> s2) & n2)
                | ((x << t2) & w2) | ((x >> s3) & n3) | ((x << t3) & w3))

    def inv_shift_rows(self, x: int) -> int:
        (s1, n1, t1, w1), (s2, n2, t2, w2), (s3, n3, t3, w3) = self.isr
        return ((x & self.row0) | ((x << s1) & n1) | ((x >> t1) & w1) | ((x << s2) & n2)
                | ((x >> t2) & w2) | ((x << s3) & n3) | ((x >> t3) & w3))

    def sub(self, x: int, box: bytes = _SBOX_B) -> int:
        n = self.nbytes
        return int.from_bytes(x.to_bytes(n, "little").translate(box), "little")

    def xt(self, x: int) -> int:
        return ((x & self.b7f) << 1) ^ (((x >> 7) & self.b01) * 0x1B)

    def mix(self, x: int) -> int:
        r1 = ((x >> 8) & self.lo24) | ((x << 24) & self.hi8)
        u = x ^ r1
        return self.xt(u) ^ ((u >> 16) & self.lo16) ^ ((u << 16) & self.hi16) ^ r1

    def inv_mix(self, x: int) -> int:
        v = x ^ ((x >> 16) & self.lo16) ^ ((x << 16) & self.hi16)
        return self.mix(x ^ self.xt(self.xt(v)))

    def enc(self, state: int, key: int) -> int:
        return self.mix(self.shift_rows(self.sub(state))) ^ key

    def enclast(self, state: int, key: int) -> int:
        return self.shift_rows(self.sub(state)) ^ key

    def dec(self, state: int, key: int) -> int:
        return self.inv_mix(self.inv_shift_rows(self.sub(state, _INV_SBOX_B))) ^ key

    def declast(self, state: int, key: int) -> int:
        return self.inv_shift_rows(self.sub(state, _INV_SBOX_B)) ^ key


AES_BY_WIDTH = {w: _AES(8 * w) for w in (16, 32, 64)}


def _sub_word(w: int) -> int:
    return int.from_bytes(w.to_bytes(4, "little").translate(_SBOX_B), "little")


def aeskeygenassist(src: int, rcon: int) -> int:
    x1 = _sub_word((src >> 32) & M32)
    x3 = _sub_word((src >> 96) & M32)
    rot = lambda w: ((w >> 8) | (w << 24)) & M32  # noqa: E731
    return x1 | ((rot(x1) ^ rcon) << 32) | (x3 << 64) | ((rot(x3) ^ rcon) << 96)


# --- carry-less multiply (64 x 64 -> 128) --------------------------------------------------
def _clmul_table4(a: int):
    t2 = a << 1
    t3 = t2 ^ a
    t4 = a << 2
    t8 = a << 3
    return (0, a, t2, t3, t4, t4 ^ a, t4 ^ t2, t4 ^ t3,
            t8, t8 ^ a, t8 ^ t2, t8 ^ t3, t8 ^ t4, t8 ^ t4 ^ a, t8 ^ t4 ^ t2, t8 ^ t4 ^ t3)


def _clmul_table8(a: int) -> list[int]:
    t = [0] * 256
    for i in range(8):
        s, bit = a << i, 1 << i
        for j in range(bit):
            t[bit | j] = t[j] ^ s
    return t


_ns: dict = {}
exec("def _mul4(T, b):\n return " + " ^ ".join(
    f"(T[b >> {4 * i} & 15] << {4 * i})" if i else "T[b & 15]" for i in range(16)), _ns)
exec("def _mul8(T, bb):\n return " + " ^ ".join(
    f"(T[bb[{i}]] << {8 * i})" if i else "T[bb[0]]" for i in range(8)), _ns)
_mul4, _mul8 = _ns["_mul4"], _ns["_mul8"]
_T8: dict[int, list] = {}
_SEEN: dict[int, int] = {}
_PROMOTE = 6          # sightings before a value gets its 8-bit-window table


def clmul64(a: int, b: int) -> int:
    """Carry-less product of two 64-bit ints. A value that keeps coming back (a hash-key
    power, a reduction constant) gets a cached 8-bit-window table; others a 4-bit one."""
    t = _T8.get(b)
    if t is not None:
        return _mul8(t, a.to_bytes(8, "little"))
    t = _T8.get(a)
    if t is not None:
        return _mul8(t, b.to_bytes(8, "little"))
    if not a or not b:
        return 0
    seen = _SEEN
    if len(seen) > 65536:
        seen.clear()
    na, nb = seen.get(a, 0) + 1, seen.get(b, 0) + 1
    seen[a], seen[b] = na, nb
    if nb >= _PROMOTE or na >= _PROMOTE:
        if len(_T8) > 4096:
            _T8.clear()
        v, other = (b, a) if nb >= na else (a, b)
        t = _T8[v] = _clmul_table8(v)
        del seen[v]
        return _mul8(t, other.to_bytes(8, "little"))
    return _mul4(_clmul_table4(a), b)


# the carry-less product the fast paths above are checked against
clmul_reference = gf128.clmul


# --- GF(2^8) (GFNI) ------------------------------------------------------------------------
def _gmul(a: int, b: int) -> int:
    r = 0
    while b:
        if b & 1:
            r ^= a
        a <<= 1
        if a & 0x100:
            a ^= 0x11B
        b >>= 1
    return r


def _build_inv() -> bytes:
    inv = [0] * 256
    for a in range(1, 256):
        for b in range(1, 256):
            if _gmul(a, b) == 1:
                inv[a] = b
                break
    return bytes(inv)


_GF_INV: bytes | None = None
_MUL_ROWS: dict[int, bytes] = {}
_AFFINE: dict[tuple[int, int, bool], bytes] = {}


def _gf_inv() -> bytes:
    global _GF_INV
    if _GF_INV is None:
        # the inverse is the S-box without its affine map: inv(x) = A^-1(S(x) ^ 0x63)
        inv = bytearray(256)
        for x in range(256):
            s = SBOX[x] ^ 0x63
            # A^-1: b'_i = b_{i+2} ^ b_{i+5} ^ b_{i+7} (FIPS-197 inverse affine, sans c)
            y = 0
            for i in range(8):
                bit = ((s >> ((i + 2) % 8)) ^ (s >> ((i + 5) % 8)) ^ (s >> ((i + 7) % 8))) & 1
                y |= bit << i
            inv[x] = y
        _GF_INV = bytes(inv)
    return _GF_INV


def _mul_row(c: int) -> bytes:
    row = _MUL_ROWS.get(c)
    if row is None:
        row = _MUL_ROWS[c] = bytes(_gmul(c, x) for x in range(256))
    return row


def _affine_table(matrix: int, imm: int, inverse: bool) -> bytes:
    """The 256-byte table of x -> affine(A, x) ^ imm (SDM: bit i of the result is the parity
    of (A.byte[7 - i] AND x), XOR imm bit i), applied to inv(x) for the INV form."""
    key = (matrix, imm, inverse)
    t = _AFFINE.get(key)
    if t is not None:
        return t
    cols = []
    for j in range(8):                  # the image of input bit j
        c = 0
        for i in range(8):
            c |= ((matrix >> (8 * (7 - i) + j)) & 1) << i
        cols.append(c)
    lin = [0] * 256
    for v in range(1, 256):
        low = v & -v
        lin[v] = lin[v ^ low] ^ cols[low.bit_length() - 1]
    src = _gf_inv() if inverse else bytes(range(256))
    t = bytes(lin[src[x]] ^ imm for x in range(256))
    if len(_AFFINE) > 4096:
        _AFFINE.clear()
    _AFFINE[key] = t
    return t


def gf2p8affine(x: int, matrix: int, imm: int, nbytes: int, inverse: bool) -> int:
    rq = replicate_const(64, 8 * nbytes)
    xb = x.to_bytes(nbytes, "little")
    m0 = matrix & M64
    if matrix == m0 * rq:
        return int.from_bytes(xb.translate(_affine_table(m0, imm, inverse)), "little")
    out = b"".join(xb[i:i + 8].translate(_affine_table((matrix >> (8 * i)) & M64, imm,
                                                         inverse))
                   for i in range(0, nbytes, 8))
    return int.from_bytes(out, "little")


def gf2p8mul(a: int, b: int, nbytes: int) -> int:
    rb = replicate_const(8, 8 * nbytes)
    if b == (b & 0xFF) * rb:
        return int.from_bytes(a.to_bytes(nbytes, "little").translate(_mul_row(b & 0xFF)),
                              "little")
    if a == (a & 0xFF) * rb:
        return int.from_bytes(b.to_bytes(nbytes, "little").translate(_mul_row(a & 0xFF)),
                              "little")
    ab, bb = a.to_bytes(nbytes, "little"), b.to_bytes(nbytes, "little")
    return int.from_bytes(bytes(_mul_row(p)[q] for p, q in zip(ab, bb)), "little")


# --- shuffles ------------------------------------------------------------------------------
_Z128 = bytes(128)


def pshufb(data: int, ctrl: int, nbytes: int) -> int:
    d = data.to_bytes(nbytes, "little")
    c = ctrl.to_bytes(nbytes, "little")
    if nbytes == 16:
        return int.from_bytes(c.translate(d * 8 + _Z128), "little")
    return int.from_bytes(b"".join(c[i:i + 16].translate(d[i:i + 16] * 8 + _Z128)
                                   for i in range(0, nbytes, 16)), "little")


@lru_cache(maxsize=None)
def _pshufd_plan(imm: int, nbits: int):
    d0 = replicate(M32, 128, nbits)
    return tuple((32 * ((imm >> (2 * k)) & 3), d0, 32 * k) for k in range(4))


def pshufd(x: int, imm: int, nbits: int) -> int:
    (a0, m, _), (a1, _, b1), (a2, _, b2), (a3, _, b3) = _pshufd_plan(imm, nbits)
    return (((x >> a0) & m) | (((x >> a1) & m) << b1) | (((x >> a2) & m) << b2)
            | (((x >> a3) & m) << b3))


def split_lanes(x: int, nbits: int) -> list[int]:
    return [(x >> s) & M128 for s in range(0, nbits, 128)]


def join_lanes(lanes) -> int:
    v = 0
    for i, lane in enumerate(lanes):
        v |= lane << (128 * i)
    return v


# --- masks ---------------------------------------------------------------------------------
@lru_cache(maxsize=None)
def _expand_table(esize: int) -> tuple[int, ...]:
    emask = (1 << esize) - 1
    return tuple(sum(emask << (esize * i) for i in range(8) if k >> i & 1) for k in range(256))


def expand_mask(k: int, esize: int, nelems: int) -> int:
    """The element mask (all bits of element i set when bit i of k is) of nelems elements."""
    k &= (1 << nelems) - 1
    if k == (1 << nelems) - 1:
        return (1 << (esize * nelems)) - 1
    t = _expand_table(esize)
    v, sh = 0, 0
    while k:
        v |= t[k & 0xFF] << sh
        k >>= 8
        sh += 8 * esize
    return v


def bit_runs(k: int):
    """(first, count) of each run of set bits of k."""
    pos = 0
    while k:
        if k & 1:
            n = (~k & (k + 1)).bit_length() - 1
            yield pos, n
            k >>= n
            pos += n
        else:
            n = (k & -k).bit_length() - 1
            k >>= n
            pos += n
