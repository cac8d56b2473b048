"""Byte layout of a CTR kernel's context, per FACE level (the ctx is 64-byte aligned).

The counter is kept as two native 64-bit numbers: CTR_HI holds counter bytes 0..7 and
CTR_LO bytes 8..15, both big-endian-decoded, so a 128-bit increment is add/adc.
"""
from __future__ import annotations

from dataclasses import dataclass

from .fields import Field, FieldLayout

# The header every CTR context starts with, declared field by field (kernels/fields.py);
# offsets follow from the order and alignment, and the names below are read from it.
# The cipher's fields, first in every context of every mode: the round engines address
# the round keys from offset 0.
CIPHER_FIELDS = [
    Field("cipher", "ROUND_KEYS", 240, 16, "15 x 16 bytes, FIPS-197 byte order"),
    Field("cipher", "KEY_BITS", 4, 4, "u32: 128, 192 or 256 once init succeeded; 0 before",
          public=True),
]
HEADER_FIELDS = CIPHER_FIELDS + [
    Field("mode", "CTR_LO", 8, 16, "u64: counter bytes 8..15 as a number (next block)",
          public=True),
    Field("mode", "CTR_HI", 8, 8, "u64: counter bytes 0..7", public=True),
    Field("mode", "KEYSTREAM", 16, 16, "keystream of the block partly used by the last call"),
    Field("mode", "KEYSTREAM_LEFT", 8, 8, "u64: unused bytes at the end of KEYSTREAM (0..15)",
          public=True),
    # FACE state (in every layout so set_iv/init are uniform; unused at level none)
    Field("face", "WINDOW_LO", 8, 8, "u64: CTR_LO with in15 cleared, for which C1/C2 hold; "
          "low byte 0xff = none", public=True),
    Field("face", "WINDOW_HI", 8, 8, "u64: CTR_HI of that window", public=True),
    Field("face", "TAG_LO", 8, 8, "u64: counter byte 10 (masked CTR_LO) the tables are for",
          public=True),
    Field("face", "TAG_HI", 8, 8, "u64: counter bytes 0 and 5 (masked CTR_HI); bit 0 set = "
          "no table", public=True),
    Field("face", "FILL_START", 8, 8, "u64: in15 of the first valid table entry", public=True),
    Field("face", "FILL_COUNT", 8, 8, "u64: valid entries from FILL_START on (256 = complete)",
          public=True),
    Field("face", "FILL_BUDGET", 8, 8, "u64: fill batches that may still store entries "
          "(face_fill.py: second sight)", public=True),
    Field("face", "CACHE_R1", 16, 16, "FACE rd1 cache: state after round 1 of the window's "
          "in15 = 0 block"),
    Field("face", "CACHE_R2", 16, 16, "FACE rd2 cache: state after round 2 of that block"),
]
HEADER = FieldLayout.build(HEADER_FIELDS)
ROUND_KEYS = HEADER.ROUND_KEYS
KEY_BITS = HEADER.KEY_BITS
CTR_LO = HEADER.CTR_LO
CTR_HI = HEADER.CTR_HI
KEYSTREAM = HEADER.KEYSTREAM
KEYSTREAM_LEFT = HEADER.KEYSTREAM_LEFT
WINDOW_LO = HEADER.WINDOW_LO
WINDOW_HI = HEADER.WINDOW_HI
TAG_LO = HEADER.TAG_LO
TAG_HI = HEADER.TAG_HI
FILL_START = HEADER.FILL_START
FILL_COUNT = HEADER.FILL_COUNT
FILL_BUDGET = HEADER.FILL_BUDGET
CACHE_R1 = HEADER.CACHE_R1
CACHE_R2 = HEADER.CACHE_R2
HEADER_END = HEADER.size

TAG_LO_MASK = 0x0000FF0000000000   # counter byte 10 inside CTR_LO
TAG_HI_MASK = 0xFF00000000FF0000   # counter bytes 0 and 5 inside CTR_HI
NO_WINDOW = 0xFF
NO_TABLE = 1


@dataclass(frozen=True)
class ContextLayout:
    face: str
    table_r1: int | None     # 256 rd1+ entries of r1_entry bytes
    table_r2: int | None     # 256 x 16-byte rd2+ entries
    size: int
    r1_entry: int = 4        # 4 (column 0 only) on xmm; 16 where one load must serve a lane
    extra: int | None = None # method-specific area (bit-sliced round keys), 64-aligned
    declared: FieldLayout | None = None   # the fields it was built from

    def offset(self, name: str) -> int:
        """A declared field's offset (as FieldLayout.offset: the two layouts answer alike)."""
        return self.declared.offset(name)

    def fields(self) -> dict[str, int]:
        out = {f.name: off for f, off in zip(self.declared.fields, self.declared.offsets)}
        out["SIZE"] = self.size
        return out

    def table(self) -> list[tuple[str, str, int, int, str]]:
        """(section, name, offset, size, doc) rows, for docs and the manifest."""
        return self.declared.table()

    def public_names(self) -> frozenset[str]:
        return self.declared.public_names()


def engine_area(size: int) -> list[Field]:
    """A round engine's own state as one secret field, EXTRA, of ``size`` bytes (rounded
    up to 64); nothing for none. What an engine declares unless it has more to say
    (``context_fields``: the bit-sliced engine's public FACE flags)."""
    return [Field("cipher", "EXTRA", (size + 63) // 64 * 64, 64, ENGINE_AREA_DOC)] if size else []


ENGINE_AREA_DOC = "the round engine's own state (bit-sliced round keys, spill slots, ...)"


def layout_for(face: str, r1_entry: int = 4, engine_fields: tuple | list = ()) -> ContextLayout:
    """Context layout for a FACE level: the header, then the level's table, then the round
    engine's own fields (its ``context_fields()``: EXTRA first). Vector kernels keep rd1+
    entries 16 bytes wide so a 256/512-bit load fetches the entries of 2/4 consecutive
    blocks, one a lane."""
    if face not in ("none", "r1", "r2"):
        raise ValueError(f"unknown FACE level {face!r}")
    fields = list(HEADER_FIELDS)
    if face == "r1":
        fields.append(Field("face", "TABLE_R1", 256 * r1_entry, 64,
                            f"rd1+ table: 256 entries of {r1_entry} bytes"))
    if face == "r2":
        fields.append(Field("face", "TABLE_R2", 256 * 16, 64, "rd2+ table: 256 x 16 bytes"))
    fields += list(engine_fields)
    lay = FieldLayout.build(fields)
    get = lambda name: lay.offset(name) if name in lay.fields_named() else None  # noqa: E731
    return ContextLayout(face, get("TABLE_R1"), get("TABLE_R2"), lay.size, r1_entry,
                         get("EXTRA"), lay)
