"""Readable AES (FIPS-197) and CTR mode, used only as a test oracle.

States and blocks are 16-byte ``bytes`` objects in FIPS-197 input order:
byte ``i`` sits at row ``i % 4``, column ``i // 4`` of the state matrix.
Nothing here aims at speed or side-channel resistance; it exists so tests
can check generated kernels against an implementation that is easy to audit.
"""

from __future__ import annotations

from collections.abc import Sequence

BLOCK_SIZE = 16
"""AES block size in bytes."""

_REDUCTION_POLY = 0x11B
"""x^8 + x^4 + x^3 + x + 1, the AES field polynomial (FIPS-197 section 4.2)."""

_COUNTER_MODULUS = 1 << 128

RoundKeys = Sequence[bytes]
KeyOrRoundKeys = bytes | bytearray | Sequence[bytes]


# ---------------------------------------------------------------------------
# GF(2^8) arithmetic (FIPS-197 section 4)
# ---------------------------------------------------------------------------

def _check_byte(value: int) -> None:
    if not 0 <= value <= 0xFF:
        raise ValueError(f"not a byte value: {value!r}")


def xtime(b: int) -> int:
    """Multiply ``b`` by x (i.e. by 0x02) in GF(2^8) (FIPS-197 section 4.2.1)."""
    _check_byte(b)
    doubled = b << 1
    if doubled & 0x100:
        doubled ^= _REDUCTION_POLY
    return doubled


def gf_mul(a: int, b: int) -> int:
    """Multiply two field elements by shift-and-add over ``xtime``."""
    _check_byte(a)
    _check_byte(b)
    product = 0
    while b:
        if b & 1:
            product ^= a
        a = xtime(a)
        b >>= 1
    return product


def gf_pow(a: int, exponent: int) -> int:
    """a to the power exponent in GF(2^8), by square and multiply."""
    result = 1
    while exponent:
        if exponent & 1:
            result = gf_mul(result, a)
        a = gf_mul(a, a)
        exponent >>= 1
    return result


def _gf_inverse(a: int) -> int:
    """Multiplicative inverse; 0 maps to 0 as FIPS-197 section 5.1.1 requires."""
    # The multiplicative group has order 255, so a^-1 == a^254.
    return gf_pow(a, 254) if a else 0


def _rotl8(value: int, amount: int) -> int:
    return ((value << amount) | (value >> (8 - amount))) & 0xFF


def _affine(b: int) -> int:
    """The S-box affine map: b ^ rotl1 ^ rotl2 ^ rotl3 ^ rotl4 ^ 0x63."""
    return b ^ _rotl8(b, 1) ^ _rotl8(b, 2) ^ _rotl8(b, 3) ^ _rotl8(b, 4) ^ 0x63


def _build_sbox() -> tuple[int, ...]:
    # FIPS-197 section 5.1.1: take the multiplicative inverse in GF(2^8)
    # (with 0 -> 0), then apply the affine transformation over GF(2).
    return tuple(_affine(_gf_inverse(x)) for x in range(256))


def _invert_permutation(table: Sequence[int]) -> tuple[int, ...]:
    inverse = [0] * len(table)
    for index, value in enumerate(table):
        inverse[value] = index
    return tuple(inverse)


SBOX: tuple[int, ...] = _build_sbox()
INV_SBOX: tuple[int, ...] = _invert_permutation(SBOX)


# ---------------------------------------------------------------------------
# Round transformations (FIPS-197 section 5.1)
# ---------------------------------------------------------------------------

def _check_state(state: bytes) -> None:
    if len(state) != BLOCK_SIZE:
        raise ValueError(f"AES state must be {BLOCK_SIZE} bytes, got {len(state)}")


def xor_bytes(a: bytes, b: bytes) -> bytes:
    """Bytewise XOR of two equal-length strings."""
    if len(a) != len(b):
        raise ValueError(f"length mismatch: {len(a)} != {len(b)}")
    return bytes(x ^ y for x, y in zip(a, b))


def sub_bytes(state: bytes) -> bytes:
    """SubBytes: apply the S-box to every byte (FIPS-197 section 5.1.1)."""
    _check_state(state)
    return bytes(SBOX[b] for b in state)


def shift_rows(state: bytes) -> bytes:
    """ShiftRows: rotate row r left by r positions (FIPS-197 section 5.1.2)."""
    _check_state(state)
    return bytes(
        state[row + 4 * ((column + row) % 4)]
        for column in range(4)
        for row in range(4)
    )


def _mix_column(column: bytes) -> bytes:
    a0, a1, a2, a3 = column
    return bytes((
        xtime(a0) ^ gf_mul(a1, 3) ^ a2 ^ a3,
        a0 ^ xtime(a1) ^ gf_mul(a2, 3) ^ a3,
        a0 ^ a1 ^ xtime(a2) ^ gf_mul(a3, 3),
        gf_mul(a0, 3) ^ a1 ^ a2 ^ xtime(a3),
    ))


def mix_columns(state: bytes) -> bytes:
    """MixColumns: multiply each column by {03}x^3+{01}x^2+{01}x+{02} (section 5.1.3)."""
    _check_state(state)
    return b"".join(_mix_column(state[4 * c:4 * c + 4]) for c in range(4))


def add_round_key(state: bytes, rk: bytes) -> bytes:
    """AddRoundKey: XOR the 16-byte round key into the state (section 5.1.4)."""
    _check_state(state)
    _check_state(rk)
    return xor_bytes(state, rk)


def aes_round(state: bytes, rk: bytes) -> bytes:
    """One full round, SubBytes/ShiftRows/MixColumns/AddRoundKey (= x86 AESENC)."""
    return add_round_key(mix_columns(shift_rows(sub_bytes(state))), rk)


def aes_final_round(state: bytes, rk: bytes) -> bytes:
    """The last round, without MixColumns (= x86 AESENCLAST)."""
    return add_round_key(shift_rows(sub_bytes(state)), rk)


# ---------------------------------------------------------------------------
# Key expansion (FIPS-197 section 5.2)
# ---------------------------------------------------------------------------

def rounds_for_key_length(key_length: int) -> int:
    """Nr for a key of ``key_length`` bytes: 10, 12 or 14 (FIPS-197 figure 4)."""
    if key_length not in (16, 24, 32):
        raise ValueError(f"AES key must be 16, 24 or 32 bytes, got {key_length}")
    return key_length // 4 + 6


def _sub_word(word: bytes) -> bytes:
    return bytes(SBOX[b] for b in word)


def _rot_word(word: bytes) -> bytes:
    return word[1:] + word[:1]


def expand_key(key: bytes) -> list[bytes]:
    """Expand ``key`` into Nr+1 round keys of 16 bytes each (FIPS-197 section 5.2)."""
    nk = len(key) // 4
    nr = rounds_for_key_length(len(key))
    words = [bytes(key[4 * i:4 * i + 4]) for i in range(nk)]
    rcon = 0x01
    for i in range(nk, 4 * (nr + 1)):
        temp = words[i - 1]
        if i % nk == 0:
            temp = xor_bytes(_sub_word(_rot_word(temp)), bytes((rcon, 0, 0, 0)))
            rcon = xtime(rcon)
        elif nk > 6 and i % nk == 4:
            temp = _sub_word(temp)
        words.append(xor_bytes(words[i - nk], temp))
    return [b"".join(words[4 * r:4 * r + 4]) for r in range(nr + 1)]


def as_round_keys(key_or_round_keys: KeyOrRoundKeys) -> list[bytes]:
    """Accept a raw key (16/24/32 bytes) or an already expanded schedule."""
    if isinstance(key_or_round_keys, (bytes, bytearray)):
        return expand_key(bytes(key_or_round_keys))
    round_keys = [bytes(rk) for rk in key_or_round_keys]
    if len(round_keys) not in (11, 13, 15):
        raise ValueError(f"expected 11, 13 or 15 round keys, got {len(round_keys)}")
    for rk in round_keys:
        _check_state(rk)
    return round_keys


def encrypt_block(key_or_round_keys: KeyOrRoundKeys, block: bytes) -> bytes:
    """Encrypt one 16-byte block (the Cipher of FIPS-197 section 5.1)."""
    round_keys = as_round_keys(key_or_round_keys)
    state = add_round_key(bytes(block), round_keys[0])
    for rk in round_keys[1:-1]:
        state = aes_round(state, rk)
    return aes_final_round(state, round_keys[-1])


# ---------------------------------------------------------------------------
# CTR mode, as OpenSSL's EVP_aes_*_ctr (SP 800-38A section 6.5)
# ---------------------------------------------------------------------------

def counter_block(counter: int) -> bytes:
    """The 128-bit big-endian counter block for ``counter`` (taken mod 2^128)."""
    return (counter % _COUNTER_MODULUS).to_bytes(BLOCK_SIZE, "big")


def counter_block_at(first: bytes, i: int, counter_bits: int = 128) -> bytes:
    """The counter block i steps after ``first`` when its last ``counter_bits`` bits count
    (big-endian, wrapping) and the bytes before them stay: 128 for SP 800-38A's CTR, 32 for
    SP 800-38D's inc_32."""
    if len(first) != BLOCK_SIZE:
        raise ValueError(f"counter block must be {BLOCK_SIZE} bytes, got {len(first)}")
    if counter_bits not in (32, 128):
        raise ValueError(f"counter_bits must be 32 or 128, not {counter_bits}")
    fixed = BLOCK_SIZE - counter_bits // 8
    low = (int.from_bytes(first[fixed:], "big") + i) % (1 << counter_bits)
    return bytes(first[:fixed]) + low.to_bytes(counter_bits // 8, "big")


def _initial_counter(iv: bytes) -> int:
    if len(iv) != BLOCK_SIZE:
        raise ValueError(f"CTR IV must be {BLOCK_SIZE} bytes, got {len(iv)}")
    return int.from_bytes(iv, "big")


def _keystream_blocks(round_keys: RoundKeys, first_counter: int, nblocks: int) -> bytes:
    return b"".join(
        encrypt_block(round_keys, counter_block(first_counter + i))
        for i in range(nblocks)
    )


def ctr_keystream(key: KeyOrRoundKeys, iv: bytes, nblocks: int) -> bytes:
    """The first ``nblocks`` keystream blocks for ``iv`` (counter +1 per block)."""
    if nblocks < 0:
        raise ValueError("nblocks must be non-negative")
    return _keystream_blocks(as_round_keys(key), _initial_counter(iv), nblocks)


def ctr_xor(key: KeyOrRoundKeys, iv: bytes, data: bytes, offset: int = 0,
            counter_bits: int = 128) -> bytes:
    """En-/decrypt ``data`` in CTR mode, ``offset`` keystream bytes into ``iv``'s stream.

    The counter is the whole 128-bit block, big-endian, wrapping at 2^128; with
    ``counter_bits`` 32, only its last 4 bytes count (and wrap), as GCM's inc_32.
    """
    if offset < 0:
        raise ValueError("offset must be non-negative")
    first_block, skip = divmod(offset, BLOCK_SIZE)
    nblocks = -(-(skip + len(data)) // BLOCK_SIZE)
    _initial_counter(iv)                               # checks the IV's length
    rk = as_round_keys(key)
    stream = b"".join(encrypt_block(rk, counter_block_at(iv, first_block + i, counter_bits))
                      for i in range(nblocks))
    return xor_bytes(bytes(data), stream[skip:skip + len(data)])
