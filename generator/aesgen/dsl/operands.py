"""Operands of an instruction: registers (physical or virtual), memory, immediates, labels.

Physical and virtual registers share one type, told apart by their id: physical ids are the
hardware numbers (rax=0 ... r15=15, xmm0=0 ... xmm31=31), virtual ids start at VIRTUAL_BASE.
A register value is one allocation unit (a 64-bit GPR or a 512-bit vector); an operand is a
*view* of it at some width, so ``v.w32`` and ``v`` allocate together.
"""
from __future__ import annotations

from dataclasses import dataclass

VIRTUAL_BASE = 1000

GP = "gp"
VEC = "vec"

GP_NAMES = {
    64: ["rax", "rcx", "rdx", "rbx", "rsp", "rbp", "rsi", "rdi",
         "r8", "r9", "r10", "r11", "r12", "r13", "r14", "r15"],
    32: ["eax", "ecx", "edx", "ebx", "esp", "ebp", "esi", "edi",
         "r8d", "r9d", "r10d", "r11d", "r12d", "r13d", "r14d", "r15d"],
    8: ["al", "cl", "dl", "bl", "spl", "bpl", "sil", "dil",
        "r8b", "r9b", "r10b", "r11b", "r12b", "r13b", "r14b", "r15b"],
}
VEC_PREFIX = {128: "xmm", 256: "ymm", 512: "zmm"}


@dataclass(frozen=True, order=True)
class Reg:
    """A register view: class ``gp`` or ``vec``, an id, and the width this operand uses."""

    cls: str
    id: int
    width: int

    @property
    def is_virtual(self) -> bool:
        return self.id >= VIRTUAL_BASE

    @property
    def key(self) -> tuple[str, int]:
        """The allocation unit this view belongs to."""
        return (self.cls, self.id)

    def view(self, width: int) -> "Reg":
        return Reg(self.cls, self.id, width)

    @property
    def w8(self) -> "Reg":
        return self.view(8)

    @property
    def w32(self) -> "Reg":
        return self.view(32)

    @property
    def w64(self) -> "Reg":
        return self.view(64)

    @property
    def kind(self) -> str:
        """Operand kind used by the instruction tables: r8, r32, r64, xmm, ymm, zmm."""
        if self.cls == GP:
            return f"r{self.width}"
        return VEC_PREFIX[self.width]

    def name(self) -> str:
        if self.is_virtual:
            return f"v{self.cls}{self.id}.{self.width}"
        if self.cls == GP:
            return GP_NAMES[self.width][self.id]
        return f"{VEC_PREFIX[self.width]}{self.id}"

    def __repr__(self) -> str:
        return self.name()


def gp(name: str) -> Reg:
    """The physical general-purpose register called ``name`` (any width's name)."""
    for width, names in GP_NAMES.items():
        if name in names:
            return Reg(GP, names.index(name), width)
    raise ValueError(f"no general-purpose register named {name!r}")


def vec(n: int, width: int = 128) -> Reg:
    return Reg(VEC, n, width)


RSP = gp("rsp")


@dataclass(frozen=True)
class Mem:
    """A memory operand ``disp(base, index, scale)`` of ``width`` bits, or ``label(%rip)``."""

    width: int
    base: Reg | None = None
    index: Reg | None = None
    scale: int = 1
    disp: int = 0
    rip_label: str | None = None

    def __post_init__(self) -> None:
        for r in (self.base, self.index):
            if r is not None and (r.cls != GP or r.width != 64):
                raise TypeError(f"address register must be a 64-bit GPR, got {r!r}")
        if self.scale not in (1, 2, 4, 8):
            raise ValueError(f"scale must be 1, 2, 4 or 8, got {self.scale}")
        if (self.base is None) == (self.rip_label is None):
            raise ValueError("a memory operand has either a base register or a rip label")
        if not -(1 << 31) <= self.disp < (1 << 31):
            raise ValueError(f"displacement {self.disp} does not fit 32 bits")

    @property
    def kind(self) -> str:
        return f"m{self.width}"

    def registers(self) -> list[Reg]:
        return [r for r in (self.base, self.index) if r is not None]

    def with_registers(self, base: Reg | None, index: Reg | None) -> "Mem":
        return Mem(self.width, base, index, self.scale, self.disp, self.rip_label)

    def at(self, width: int) -> "Mem":
        return Mem(width, self.base, self.index, self.scale, self.disp, self.rip_label)


@dataclass(frozen=True)
class Imm:
    value: int

    @property
    def kind(self) -> str:
        v = self.value
        if -128 <= v <= 255:
            return "imm8"
        if -(1 << 31) <= v < (1 << 32):
            return "imm32"
        return "imm64"


@dataclass(frozen=True)
class Label:
    name: str

    kind = "label"


Operand = Reg | Mem | Imm | Label


def kind_matches(operand: Operand, allowed: str) -> bool:
    """True if ``operand`` is acceptable where the table says ``allowed`` (e.g. 'imm32')."""
    k = operand.kind
    if k == allowed:
        return True
    if allowed == "imm32" and k == "imm8":
        return True
    if allowed == "imm64" and k in ("imm8", "imm32"):
        return True
    if allowed == "imm8" and k == "imm8":
        return True
    return False
