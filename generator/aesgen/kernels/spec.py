"""KernelSpec: the frozen description of one kernel; its name and symbols derive from it."""
from __future__ import annotations

from dataclasses import dataclass

FACE_LEVELS = ("none", "r1", "r2")
KEY_BITS = (128, 192, 256)
ROUNDS = {128: 10, 192: 12, 256: 14}


@dataclass(frozen=True)
class KernelSpec:
    method: str                      # "aesni", ...
    face: str                        # "none", "r1", "r2"
    key_bits: tuple[int, ...] = KEY_BITS
    interleave: int = 8              # blocks in flight in the steady-state loop
    encoding: str = "sse"            # "sse" (legacy, two-operand) or "avx" (VEX, three-operand)
    prefix: str = "aesgen_"

    def __post_init__(self) -> None:
        if self.face not in FACE_LEVELS:
            raise ValueError(f"unknown FACE level {self.face!r}; choose from {FACE_LEVELS}")
        bad = [k for k in self.key_bits if k not in KEY_BITS]
        if bad or not self.key_bits:
            raise ValueError(f"key sizes must be among {KEY_BITS}, got {self.key_bits}")
        if not 1 <= self.interleave <= 16:
            raise ValueError(f"interleave must be 1..16, got {self.interleave}")
        if self.encoding not in ("sse", "avx"):
            raise ValueError(f"unknown encoding {self.encoding!r}")

    @property
    def name(self) -> str:
        """Registry name, e.g. ``aesni-face-r2``."""
        return f"{self.method}-face-{self.face}"

    @property
    def symbol_stem(self) -> str:
        return f"{self.prefix}{self.method}_face_{self.face}".replace("-", "_")

    def symbol(self, entry: str) -> str:
        return f"{self.symbol_stem}_{entry}"
