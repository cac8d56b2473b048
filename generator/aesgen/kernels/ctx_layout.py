"""Byte layout of a CTR kernel's context, per FACE level (the ctx is 64-byte aligned).

The counter is kept as two native 64-bit numbers: CTR_HI holds counter bytes 0..7 and
CTR_LO bytes 8..15, both big-endian-decoded, so a 128-bit increment is add/adc.
"""
from __future__ import annotations

from dataclasses import dataclass

ROUND_KEYS = 0        # 15 x 16 bytes, FIPS-197 byte order
KEY_BITS = 240        # u32: 128, 192 or 256 once init succeeded
CTR_LO = 256          # u64: counter bytes 8..15 as a number (next block to generate)
CTR_HI = 264          # u64: counter bytes 0..7
KEYSTREAM = 272       # 16 bytes: keystream of the block partly used by the last call
KEYSTREAM_LEFT = 288  # u64: unused bytes at the end of KEYSTREAM (0..15)
# FACE state (present in every layout so set_iv/init are uniform; unused at level none)
WINDOW_LO = 296       # u64: CTR_LO with in15 cleared, for which C1/C2 hold; low byte 0xff = none
WINDOW_HI = 304       # u64
TAG_LO = 312          # u64: counter byte 10 (masked CTR_LO) the tables were built for
TAG_HI = 320          # u64: counter bytes 0 and 5 (masked CTR_HI); bit 0 set = no table
FILL_START = 328      # u64: in15 of the first valid table entry
FILL_COUNT = 336      # u64: valid entries from FILL_START on (256 = table complete)
FILL_BUDGET = 344     # u64: fill batches that may still store entries (face_fill.py: second sight)
CACHE_R1 = 352        # 16 bytes: FACE rd1 cache, state after round 1 of the window's in15=0 block
CACHE_R2 = 368        # 16 bytes: FACE rd2 cache, state after round 2 of the same block
HEADER_END = 384

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

    def fields(self) -> dict[str, int]:
        out = {name: value for name, value in globals().items()
               if name.isupper() and isinstance(value, int) and not name.endswith("MASK")
               and name not in ("NO_WINDOW", "NO_TABLE")}
        if self.table_r1 is not None:
            out["TABLE_R1"] = self.table_r1
        if self.table_r2 is not None:
            out["TABLE_R2"] = self.table_r2
        if self.extra is not None:
            out["EXTRA"] = self.extra
        out["SIZE"] = self.size
        return out


def layout_for(face: str, r1_entry: int = 4, extra: int = 0) -> ContextLayout:
    """Context layout for a FACE level. Vector kernels keep rd1+ entries 16 bytes wide so a
    256/512-bit load fetches the entries of 2/4 consecutive blocks, one a lane. ``extra``
    bytes (rounded up to 64) follow everything else for a method's own state."""
    base = _layout(face, r1_entry)
    if not extra:
        return base
    return ContextLayout(face, base.table_r1, base.table_r2,
                         base.size + (extra + 63) // 64 * 64, r1_entry, base.size)


def _layout(face: str, r1_entry: int) -> ContextLayout:
    if face == "none":
        return ContextLayout(face, None, None, HEADER_END, r1_entry)
    if face == "r1":
        return ContextLayout(face, HEADER_END, None, HEADER_END + 256 * r1_entry, r1_entry)
    if face == "r2":
        return ContextLayout(face, None, HEADER_END, HEADER_END + 4096, r1_entry)
    raise ValueError(f"unknown FACE level {face!r}")
