"""Tests proving the FACE algebra (Park & Lee, TCHES, section 4) on the AES model."""

from __future__ import annotations

import random
from collections.abc import Callable, Iterator

import pytest

from aesgen.model.aes import (
    SBOX,
    counter_block,
    ctr_keystream,
    encrypt_block,
    expand_key,
    gf_mul,
    xor_bytes,
)
from aesgen.model.face import (
    TABLE_TAG_POSITIONS,
    blocks_until_refresh,
    finish_rounds,
    rd0_cache,
    rd1_cache,
    rd1_state,
    rd1plus_table,
    rd2_cache,
    rd2_state,
    rd2plus_table,
    round_states,
    table_tag,
    validity_window,
    window_base,
)

SEED = 2026
KEY_SIZES = (16, 24, 32)
NON_TAG_POSITIONS = tuple(i for i in range(16) if i not in TABLE_TAG_POSITIONS)


def _random_cases(keys_per_size: int) -> Iterator[tuple[bytes, bytes]]:
    """(key, counter block) pairs; the block's in15 is random, not window-aligned."""
    rng = random.Random(SEED)
    for size in KEY_SIZES:
        for _ in range(keys_per_size):
            yield rng.randbytes(size), rng.randbytes(16)


KEYS_PER_SIZE = 5
CASES = list(_random_cases(KEYS_PER_SIZE))
CASE_IDS = [f"aes{len(key) * 8}-{i}" for i, (key, _) in enumerate(CASES)]
# One case per key size for the costlier table-comparison tests.
ONE_PER_SIZE = CASES[::KEYS_PER_SIZE]
ONE_PER_SIZE_IDS = CASE_IDS[::KEYS_PER_SIZE]


def _with_byte(block: bytes, position: int, value: int) -> bytes:
    return block[:position] + bytes((value,)) + block[position + 1:]


def _changed_byte(rng: random.Random, block: bytes, position: int) -> bytes:
    return _with_byte(block, position, block[position] ^ rng.randrange(1, 256))


def _in_window(block: bytes, v: int) -> bytes:
    return _with_byte(block, 15, v)


# --- windows and reconstruction -------------------------------------------------

def test_window_base() -> None:
    assert window_base(0) == 0
    assert window_base(0x1234FF) == 0x123400
    assert window_base(0x123400) == 0x123400
    assert window_base(2**128 - 1) == 2**128 - 256


@pytest.mark.parametrize(("key", "block"), CASES, ids=CASE_IDS)
def test_round_states_reach_ciphertext(key: bytes, block: bytes) -> None:
    round_keys = expand_key(key)
    nr = len(round_keys) - 1
    states = round_states(round_keys, block, nr)
    assert len(states) == nr + 1
    assert states[-1] == encrypt_block(round_keys, block)
    assert finish_rounds(round_keys, states[2], 2) == states[-1]
    with pytest.raises(ValueError):
        round_states(round_keys, block, nr + 1)


@pytest.mark.parametrize(("key", "block"), CASES, ids=CASE_IDS)
def test_rd1_rd2_rebuild_every_block_of_window(key: bytes, block: bytes) -> None:
    round_keys = expand_key(key)
    # ``block`` has a random in15: the caches must still describe its window base.
    c1, t1 = rd1_cache(round_keys, block), rd1plus_table(round_keys, block)
    c2, t2 = rd2_cache(round_keys, block), rd2plus_table(round_keys, block)
    assert len(t1) == 256 and all(len(entry) == 4 for entry in t1)
    assert len(t2) == 256 and all(len(entry) == 16 for entry in t2)
    for v in range(256):
        _, s1, s2 = round_states(round_keys, _in_window(block, v), 2)
        assert rd1_state(c1, t1, v) == s1, v
        assert rd2_state(c2, t2, v) == s2, v


@pytest.mark.parametrize(("key", "block"), CASES, ids=CASE_IDS)
def test_rd1_difference_confined_to_column_zero(key: bytes, block: bytes) -> None:
    round_keys = expand_key(key)
    base_s1 = round_states(round_keys, _in_window(block, 0), 1)[1]
    t1 = rd1plus_table(round_keys, block)
    for v in range(256):
        diff = xor_bytes(round_states(round_keys, _in_window(block, v), 1)[1], base_s1)
        assert diff[4:] == bytes(12), v
        assert diff[:4] == t1[v], v
        # S-box and MixColumns are bijective, so only v == 0 gives no difference.
        assert (diff == bytes(16)) == (v == 0), v


@pytest.mark.parametrize(("key", "block"), CASES, ids=CASE_IDS)
def test_rd1plus_closed_form(key: bytes, block: bytes) -> None:
    round_keys = expand_key(key)
    # Column 0 after ShiftRows is (S[b0], S[b5], S[b10], S[b15]); only b15
    # varies, and MixColumns' last matrix column is (1, 1, 3, 2).
    k15 = round_keys[0][15]
    t1 = rd1plus_table(round_keys, block)
    for v in range(256):
        d = SBOX[v ^ k15] ^ SBOX[k15]
        assert t1[v] == bytes((d, d, gf_mul(d, 3), gf_mul(d, 2))), v


# --- what the tables depend on ------------------------------------------------------

@pytest.mark.parametrize(("key", "block"), ONE_PER_SIZE, ids=ONE_PER_SIZE_IDS)
def test_tables_ignore_non_tag_bytes(key: bytes, block: bytes) -> None:
    round_keys = expand_key(key)
    rng = random.Random(SEED + len(key))
    t1 = rd1plus_table(round_keys, block)
    t2 = rd2plus_table(round_keys, block)
    for position in NON_TAG_POSITIONS:
        other = _changed_byte(rng, block, position)
        assert table_tag(other) == table_tag(block), position
        assert rd1plus_table(round_keys, other) == t1, position
        assert rd2plus_table(round_keys, other) == t2, position


@pytest.mark.parametrize(("key", "block"), ONE_PER_SIZE, ids=ONE_PER_SIZE_IDS)
def test_rd2plus_follows_tag_bytes(key: bytes, block: bytes) -> None:
    round_keys = expand_key(key)
    rng = random.Random(SEED + 100 + len(key))
    t2 = rd2plus_table(round_keys, block)
    for position in TABLE_TAG_POSITIONS:
        other = _changed_byte(rng, block, position)
        assert table_tag(other) != table_tag(block), position
        assert rd2plus_table(round_keys, other) != t2, position


@pytest.mark.parametrize(("key", "block"), ONE_PER_SIZE, ids=ONE_PER_SIZE_IDS)
def test_rd1plus_depends_on_key_not_counter(key: bytes, block: bytes) -> None:
    round_keys = expand_key(key)
    # Stronger than the tag rule: the XOR-difference T1 ignores bytes 0, 5, 10 too.
    rng = random.Random(SEED + 200 + len(key))
    t1 = rd1plus_table(round_keys, block)
    for position in TABLE_TAG_POSITIONS:
        assert rd1plus_table(round_keys, _changed_byte(rng, block, position)) == t1
    other_key = _changed_byte(rng, key, 15)
    assert rd1plus_table(expand_key(other_key), block) != t1


def test_table_tag_positions() -> None:
    block = bytes(range(100, 116))
    assert table_tag(block) == bytes((100, 105, 110))


@pytest.mark.parametrize(("key", "block"), CASES, ids=CASE_IDS)
def test_rd0_depends_only_on_bytes_0_to_11(key: bytes, block: bytes) -> None:
    round_keys = expand_key(key)
    rng = random.Random(SEED + block[0])
    cached = rd0_cache(round_keys, block)
    assert cached == round_states(round_keys, block, 0)[0][:12]
    for _ in range(16):
        other = block[:12] + rng.randbytes(4)
        assert rd0_cache(round_keys, other) == cached
    for position in range(12):
        assert rd0_cache(round_keys, _changed_byte(rng, block, position)) != cached


# --- validity windows ---------------------------------------------------------------

def test_validity_windows() -> None:
    assert validity_window("rd0") == 2**32
    assert validity_window("rd1") == validity_window("rd2") == 256
    assert validity_window("rd1+") == validity_window("rd2+") == 2**40
    with pytest.raises(ValueError):
        validity_window("rd3")


def _rd0_key(ctr: int) -> bytes:
    return counter_block(ctr)[:12]


def _window_key(ctr: int) -> bytes:
    return counter_block(window_base(ctr))


def _tag_key(ctr: int) -> bytes:
    return table_tag(counter_block(ctr))


@pytest.mark.parametrize(
    ("technique", "key_of"),
    [("rd0", _rd0_key), ("rd1", _window_key), ("rd2", _window_key),
     ("rd1+", _tag_key), ("rd2+", _tag_key)],
)
def test_refresh_points_match_what_the_cache_depends_on(
    technique: str, key_of: Callable[[int], bytes]
) -> None:
    rng = random.Random(SEED + len(technique))
    starts = [rng.getrandbits(128) for _ in range(50)]
    starts += [0, 2**128 - 1, 2**40 - 1, 2**32 - 1, 255]
    for ctr in starts:
        n = blocks_until_refresh(technique, ctr)
        assert 1 <= n <= validity_window(technique)
        last = (ctr + n - 1) % 2**128
        after = (ctr + n) % 2**128
        assert key_of(last) == key_of(ctr), hex(ctr)
        assert key_of(after) != key_of(ctr), hex(ctr)


def _face_keystream(round_keys: list[bytes], first_ctr: int, nblocks: int) -> bytes:
    """Keystream built the FACE way, refreshing caches when their window ends."""
    out = []
    window_left = tables_left = 0
    for i in range(nblocks):
        ctr = (first_ctr + i) % 2**128
        block = counter_block(ctr)
        if tables_left == 0:
            t1 = rd1plus_table(round_keys, block)
            t2 = rd2plus_table(round_keys, block)
            tables_left = blocks_until_refresh("rd2+", ctr)
        if window_left == 0:
            c1 = rd1_cache(round_keys, block)
            c2 = rd2_cache(round_keys, block)
            window_left = blocks_until_refresh("rd2", ctr)
        s1 = rd1_state(c1, t1, block[15])
        s2 = rd2_state(c2, t2, block[15])
        assert finish_rounds(round_keys, s1, 1) == finish_rounds(round_keys, s2, 2)
        out.append(finish_rounds(round_keys, s2, 2))
        tables_left -= 1
        window_left -= 1
    return b"".join(out)


@pytest.mark.parametrize(
    ("key_size", "first_ctr"),
    [(16, 2**40 - 300), (24, 2**72 - 260), (32, 2**128 - 200)],
    ids=["aes128-byte10-carry", "aes192-byte6-carry", "aes256-wrap"],
)
def test_face_keystream_matches_ctr(key_size: int, first_ctr: int) -> None:
    rng = random.Random(SEED + key_size)
    round_keys = expand_key(rng.randbytes(key_size))
    nblocks = 520
    expected = ctr_keystream(round_keys, counter_block(first_ctr), nblocks)
    assert _face_keystream(round_keys, first_ctr, nblocks) == expected


def test_stale_rd2plus_table_breaks_after_tag_change() -> None:
    rng = random.Random(SEED)
    round_keys = expand_key(rng.randbytes(16))
    old_block = counter_block(2**40 - 1)
    new_block = counter_block(2**40)
    stale = rd2plus_table(round_keys, old_block)
    c2 = rd2_cache(round_keys, new_block)
    mismatches = [
        v for v in range(256)
        if rd2_state(c2, stale, v) != round_states(round_keys, _in_window(new_block, v), 2)[2]
    ]
    assert mismatches
