"""Context layouts built from declared fields: each section (cipher, hash, mode) declares
what it keeps, and offsets follow from the order and alignment of the declarations.

    lay = FieldLayout.build([
        Field("cipher", "ROUND_KEYS", 240, 16, "15 round keys"),
        Field("cipher", "KEY_BITS", 4, 4, "128, 192 or 256 once init succeeded"),
        Field("hash", "H_POWERS", 128, 16, "H~^1 .. H~^8"),
    ])
    lay.KEY_BITS     # 240
    lay.size         # a multiple of 64: contexts are 64-byte aligned and zeroed 64 at a time
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Field:
    section: str        # "header", "cipher", "hash" or "mode": which axis owns the bytes
    name: str           # upper case, the name the lowering reads it by
    size: int           # bytes
    align: int = 8
    doc: str = ""
    # holds public data only (a length, a counter, FACE's bookkeeping): the constant-time
    # pass (passes/secrets.py) lets loads of it be public, and finds secrets stored into it
    public: bool = False


@dataclass(frozen=True)
class FieldLayout:
    fields: tuple[Field, ...]
    offsets: tuple[int, ...]
    size: int

    @staticmethod
    def build(fields: list[Field], *, round_to: int = 64) -> "FieldLayout":
        names = [f.name for f in fields]
        dup = {n for n in names if names.count(n) > 1}
        if dup:
            raise ValueError(f"context field(s) declared twice: {', '.join(sorted(dup))}")
        offsets, end = [], 0
        for f in fields:
            if f.align & (f.align - 1) or f.size <= 0:
                raise ValueError(f"field {f.name}: size {f.size}, align {f.align}")
            end = (end + f.align - 1) // f.align * f.align
            offsets.append(end)
            end += f.size
        return FieldLayout(tuple(fields), tuple(offsets), (end + round_to - 1) // round_to * round_to)

    def offset(self, name: str) -> int:
        for f, off in zip(self.fields, self.offsets):
            if f.name == name:
                return off
        raise KeyError(f"no context field {name!r}")

    def fields_named(self) -> set[str]:
        return {f.name for f in self.fields}

    def __getattr__(self, name: str) -> int:
        if name.isupper():
            return self.offset(name)
        raise AttributeError(name)

    def public_names(self) -> frozenset[str]:
        """The fields declared public."""
        return frozenset(f.name for f in self.fields if f.public)

    def table(self) -> list[tuple[str, str, int, int, str]]:
        """(section, name, offset, size, doc) rows, for docs and the manifest."""
        return [(f.section, f.name, off, f.size, f.doc) for f, off in zip(self.fields, self.offsets)]
