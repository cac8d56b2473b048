"""FACE round-reuse algebra for AES-CTR, as a test oracle.

Reference: Park & Lee, "FACE: Fast AES CTR mode Encryption Techniques based
on the Reuse of Repetitive Data", TCHES, section 4.  This module fixes the
exact formulation our kernels use:

* ``s_r(ctr)`` is the AES state after round ``r`` for counter block ``ctr``:
  round 0 is AddRoundKey with rk0, round r >= 1 is ``aes_round`` with rk_r.
* A *window* is the 256 counters that share bytes 0..14; its base has
  byte 15 ("in15") equal to zero.
* rd1:  ``c1 = s_1(base)``;  ``T1[v] = s_1(base | v) ^ s_1(base)``.
  T1[v] is non-zero only in bytes 0..3 (column 0), so it is stored as
  256 entries of 4 bytes.  ``s_1(ctr) == c1 ^ T1[in15]``.
* rd2:  ``c2 = s_2(base)``;  ``T2[v] = s_2(base | v) ^ s_2(base)``, 256
  entries of 16 bytes.  ``s_2(ctr) == c2 ^ T2[in15]``.
* rd0:  bytes 0..11 of ``s_0`` depend only on counter bytes 0..11.

Because MixColumns is linear, the XOR-difference form of T1 works out to
``MixColumns((0, 0, 0, S[v ^ rk0[15]] ^ S[rk0[15]]))``: it depends on the
key alone, not on counter bytes 0, 5, 10.  T2 does depend on those bytes
(through ``s_1(base)`` column 0), which is why both tables share the tag
``table_tag`` and the 2^40-block validity window of rd2+.
"""

from __future__ import annotations

from collections.abc import Sequence

from aesgen.model.aes import (
    BLOCK_SIZE,
    add_round_key,
    aes_final_round,
    aes_round,
    xor_bytes,
)

RoundKeys = Sequence[bytes]

TABLE_ENTRIES = 256
"""One table entry per value of counter byte 15."""

RD0_CACHED_BYTES = 12
RD1PLUS_ENTRY_BYTES = 4
RD2PLUS_ENTRY_BYTES = 16

TABLE_TAG_POSITIONS: tuple[int, ...] = (0, 5, 10)
"""Counter bytes that (with the key) determine the rd1+/rd2+ tables."""

_LOW_BYTE_MASK = 0xFF


def window_base(ctr: int) -> int:
    """First counter of the 256-block window containing ``ctr`` (section 4.2)."""
    return ctr & ~_LOW_BYTE_MASK


def _check_block(block: bytes) -> bytes:
    if len(block) != BLOCK_SIZE:
        raise ValueError(f"counter block must be {BLOCK_SIZE} bytes, got {len(block)}")
    return bytes(block)


def _with_in15(block: bytes, value: int) -> bytes:
    """``block`` with byte 15 replaced by ``value``."""
    return _check_block(block)[:15] + bytes((value,))


def window_base_block(block: bytes) -> bytes:
    """Counter block of the window base, i.e. ``block`` with in15 = 0 (section 4.2)."""
    return _with_in15(block, 0)


def round_states(round_keys: RoundKeys, block: bytes, upto: int) -> list[bytes]:
    """States ``[s_0, ..., s_upto]`` for ``block`` (section 3.2 notation, rout_{i,r}).

    Round Nr uses the final round (no MixColumns), so ``s_Nr`` is the ciphertext.
    """
    last_round = len(round_keys) - 1
    if not 0 <= upto <= last_round:
        raise ValueError(f"upto must be in 0..{last_round}, got {upto}")
    states = [add_round_key(_check_block(block), round_keys[0])]
    for r in range(1, upto + 1):
        step = aes_final_round if r == last_round else aes_round
        states.append(step(states[-1], round_keys[r]))
    return states


def finish_rounds(round_keys: RoundKeys, state: bytes, done: int) -> bytes:
    """Run rounds ``done+1 .. Nr`` on ``s_done``, giving the keystream block.

    This is what a kernel does after rebuilding ``s_2`` from the rd2 cache.
    """
    last_round = len(round_keys) - 1
    if not 0 <= done <= last_round:
        raise ValueError(f"done must be in 0..{last_round}, got {done}")
    for r in range(done + 1, last_round + 1):
        step = aes_final_round if r == last_round else aes_round
        state = step(state, round_keys[r])
    return state


def _state_after(round_keys: RoundKeys, block: bytes, r: int) -> bytes:
    return round_states(round_keys, block, r)[r]


def rd0_cache(round_keys: RoundKeys, block: bytes) -> bytes:
    """Bytes 0..11 of s_0; valid while counter bytes 0..11 hold, 2^32 blocks (section 4.1)."""
    return _state_after(round_keys, block, 0)[:RD0_CACHED_BYTES]


def rd1_cache(round_keys: RoundKeys, block: bytes) -> bytes:
    """c1 = s_1 of the window base of ``block``; refreshed every 256 blocks (section 4.2)."""
    return _state_after(round_keys, window_base_block(block), 1)


def rd2_cache(round_keys: RoundKeys, block: bytes) -> bytes:
    """c2 = s_2 of the window base of ``block``; refreshed every 256 blocks (section 4.4)."""
    return _state_after(round_keys, window_base_block(block), 2)


def _difference_table(round_keys: RoundKeys, block: bytes, r: int) -> list[bytes]:
    """``[s_r(base | v) ^ s_r(base) for v in 0..255]`` for ``block``'s window."""
    base_state = _state_after(round_keys, window_base_block(block), r)
    return [
        xor_bytes(_state_after(round_keys, _with_in15(block, v), r), base_state)
        for v in range(TABLE_ENTRIES)
    ]


def rd1plus_table(round_keys: RoundKeys, block: bytes) -> list[bytes]:
    """T1: 256 four-byte column-0 entries of s_1(base|v) ^ s_1(base) (section 4.3).

    Only column 0 is kept; the tests prove bytes 4..15 of the difference are zero.
    """
    return [
        diff[:RD1PLUS_ENTRY_BYTES]
        for diff in _difference_table(round_keys, block, 1)
    ]


def rd2plus_table(round_keys: RoundKeys, block: bytes) -> list[bytes]:
    """T2: 256 sixteen-byte entries of s_2(base|v) ^ s_2(base) (section 4.5)."""
    return _difference_table(round_keys, block, 2)


def rd1plus_entry_state(entry: bytes) -> bytes:
    """Widen a 4-byte T1 entry to a 16-byte state (column 0 only) (section 4.3)."""
    if len(entry) != RD1PLUS_ENTRY_BYTES:
        raise ValueError(f"T1 entry must be {RD1PLUS_ENTRY_BYTES} bytes")
    return bytes(entry) + bytes(BLOCK_SIZE - RD1PLUS_ENTRY_BYTES)


def rd1_state(c1: bytes, t1: Sequence[bytes], in15: int) -> bytes:
    """Rebuild s_1 as c1 ^ T1[in15] (sections 4.2 and 4.3)."""
    return xor_bytes(c1, rd1plus_entry_state(t1[in15]))


def rd2_state(c2: bytes, t2: Sequence[bytes], in15: int) -> bytes:
    """Rebuild s_2 as c2 ^ T2[in15] (sections 4.4 and 4.5)."""
    return xor_bytes(c2, t2[in15])


def table_tag(block: bytes) -> bytes:
    """Counter bytes 0, 5, 10: the rd1+/rd2+ tables are valid while these hold (section 4.3)."""
    checked = _check_block(block)
    return bytes(checked[i] for i in TABLE_TAG_POSITIONS)


def validity_window(technique: str) -> int:
    """Blocks in the aligned counter window over which a cache stays valid (section 4).

    rd1/rd2: 2^8 (in15 wraps); rd1+/rd2+: 2^40 (carry into byte 10, which
    must happen before bytes 5 or 0 can change); rd0: 2^32 (carry into byte 11).
    """
    match technique:
        case "rd0":
            return 1 << 32
        case "rd1" | "rd2":
            return 1 << 8
        case "rd1+" | "rd2+":
            return 1 << 40
        case _:
            raise ValueError(f"unknown FACE technique: {technique!r}")


def blocks_until_refresh(technique: str, ctr: int) -> int:
    """Blocks, counting ``ctr`` itself, that the cache built for ``ctr`` still covers (section 4)."""
    window = validity_window(technique)
    return window - (ctr % window)
