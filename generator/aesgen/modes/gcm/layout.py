"""The GCM context, field by field, for every instruction set: the cipher section first (the
round engines address ROUND_KEYS from 0), then the hash engine's, the mode's and, with FACE,
the cache and table of the counter's rounds (kernels/fields.py builds the offsets)."""
from __future__ import annotations

from ...gf128.aarch64 import pmull8
from ...gf128.x86_64 import bytesliced
from ...gf128.x86_64 import table as table_hash
from ...kernels import ctx_layout
from ...kernels.fields import Field, FieldLayout
from ...kernels.spec import FACE_ROUNDS

NO_WINDOW = -1                  # FACE_WINDOW when no window is cached (counter >> 8 < 2^24)


def gcm_layout(powers: int, face: str = "none", lanes: int = 1,
               karatsuba: bool = False, engine_fields: tuple | list = (),
               spill: int = 0, hash_engine: str = "clmul") -> FieldLayout:
    """The GCM context: cipher section first (the round engines address ROUND_KEYS from 0),
    then hash, mode and, with FACE, the cache and table of the counter's rounds. On zmm the
    powers are followed by four zero slots, so a wide load of powers whose lanes reach past
    H~^1 multiplies the (zero) blocks there by zero (the masked tail, _masked_tail)."""
    zero_slots = 4 if lanes == 4 else 0
    face_fields = [] if face == "none" else [
        Field("face", "FACE_WINDOW", 8, 8, "counter >> 8 of the window FACE_CACHE holds; "
              "NO_WINDOW when none", public=True),
        Field("face", "FACE_TAG_LO", 8, 8, "counter byte 10 the table is for "
              "(kernels/face_fill.counter_tag)", public=True),
        Field("face", "FACE_TAG_HI", 8, 8, "counter bytes 0 and 5 the table is for", public=True),
        Field("face", "FILL_START", 8, 8, "in15 of the first filled table entry "
              "(kernels/face_fill.py)", public=True),
        Field("face", "FILL_COUNT", 8, 8, "filled entries from FILL_START on; 256 = complete",
              public=True),
        Field("face", "FILL_BUDGET", 8, 8, "fill batches that may still store entries "
              "(kernels/face_fill.py: admission on second sight)", public=True),
        Field("face", "FACE_CACHE", 16 * lanes, 16 * lanes,
              f"state after round {FACE_ROUNDS[face]} of the window's in15 = 0 block, "
              "once a lane"),
        Field("face", "FACE_TABLE", 256 * 16, 64, f"T[v] = state after round "
              f"{FACE_ROUNDS[face]} of the block with in15 = v, XOR FACE_CACHE"),
    ]
    engine_hash_fields = {"bytesliced": bytesliced.fields, "table": table_hash.fields,
                          "pmull8": lambda: pmull8.fields(powers)}
    hash_fields = engine_hash_fields[hash_engine]() if hash_engine in engine_hash_fields else [
        Field("hash", "H_POWERS", 16 * (powers + zero_slots), 16,
              "H~^n .. H~^1, highest first: one wide load gives a register's lanes their "
              "powers (gf128/x86_64/clmul.py)" + (", then 4 zero slots" if zero_slots else "")),
    ] + ([Field("hash", "H_KARATSUBA", 16 * (powers + zero_slots), 16,
                "for each power, its two halves XORed (Karatsuba's middle key)"
                + (", then 4 zero slots" if zero_slots else ""))] if karatsuba else [])
    layout = FieldLayout.build(ctx_layout.CIPHER_FIELDS + list(engine_fields) + hash_fields + (
        [Field("mode", "TAIL", 128, 64,
                                           "the last register's keystream and hashed blocks "
                                           "(the masked tail's partial block is read here)")]
         if zero_slots else []) + [
        Field("mode", "TAG_MASK", 16, 16, "E_K(J0)"),
        Field("mode", "COUNTER", 16, 16, "next counter block, byte-reversed", public=True),
        Field("mode", "HASH", 16, 16, "GHASH accumulator, byte-reversed (clmul; the "
              "byte-sliced engine keeps STREAMS)"),
        Field("mode", "PENDING", 16, 16, "bytes of the unfinished block, zero after them"),
        Field("mode", "KEYSTREAM", 16, 16, "keystream of the partly used block"),
        Field("mode", "SCRATCH", 16, 16, "J0 of a 12-byte nonce; the tag being written"),
        Field("mode", "AAD_LEN", 8, 8, "AAD bytes so far", public=True),
        Field("mode", "MSG_LEN", 8, 8, "message bytes so far", public=True),
        Field("mode", "IN_DATA", 8, 8, "1 once encrypt or decrypt began (AAD closed)", public=True),
        Field("mode", "COUNTER_SECRET", 8, 8, "1 when J0 came from GHASH (a nonce of other "
              "than 12 bytes): the counter then depends on H, and the data path takes no "
              "branch and no table index on it (no FACE, no in-byte counters); 0 for J0 = "
              "nonce || 1, a public counter; 1 too for a one-shot seal begun without "
              "FACE's step (its table may be another nonce prefix's)", public=True),
    ] + ([Field("mode", "SPILL", 64 * spill, 64, "registers of the data path kept here "
                "while rounds that take every register run (Body.rounds)")] if spill else [])
      + face_fields)
    if layout.ROUND_KEYS != ctx_layout.ROUND_KEYS:
        raise AssertionError("the round engines address the round keys at ROUND_KEYS")
    return layout
