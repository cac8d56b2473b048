"""A lowered S-box program as data: the instruction record (MI), what each operation computes
(SEMANTICS, for interpreting the program over 256 lanes), and the Lowering a strategy
produces. Split from lower.py so the timing model can read lowerings without importing
the lowering search that calls it.
"""
from __future__ import annotations

from dataclasses import dataclass, field


ONES = ("const", "ones")


def mem(slot: int) -> tuple[str, int]:
    return ("mem", slot)


def is_mem(x) -> bool:
    return isinstance(x, tuple) and x[0] == "mem"


@dataclass(frozen=True)
class MI:
    """One machine instruction over virtual registers (ints), memory slots and ONES.

    ``op`` names the semantics (see ``SEMANTICS``); ``kind`` is what it is for:
    logic (a gate or cone), copy, load (a reload of a spilled value), store (a spill),
    not (the XOR with all-ones that finishes an XNOR or NOT), const (setting up a
    constant register).
    """

    op: str
    dst: object
    srcs: tuple = ()
    imm: int | None = None
    kind: str = "logic"
    wire: str = ""

    def __str__(self) -> str:
        def f(x) -> str:
            if isinstance(x, int):
                return f"v{x}"
            if is_mem(x):
                return f"[slot{x[1]}]"
            return "ONES"
        imm = f", {self.imm:#04x}" if self.imm is not None else ""
        note = f"  ; {self.wire}" if self.wire else ""
        return f"{self.op} {f(self.dst)}, {', '.join(f(s) for s in self.srcs)}{imm}{note}"


def _ternlog(imm: int, a: int, b: int, c: int, mask: int) -> int:
    out = 0
    for i in range(8):
        if (imm >> i) & 1:
            out |= ((a if i & 4 else ~a) & (b if i & 2 else ~b) & (c if i & 1 else ~c))
    return out & mask


SEMANTICS = {
    "copy": lambda s, m, imm: s[0],
    "load": lambda s, m, imm: s[0],
    "store": lambda s, m, imm: s[0],
    "xor": lambda s, m, imm: s[0] ^ s[1],
    "and": lambda s, m, imm: s[0] & s[1],
    "or": lambda s, m, imm: s[0] | s[1],
    "andn": lambda s, m, imm: ~s[0] & s[1] & m,          # x86 PANDN/VPANDN: ~first & second
    "bic": lambda s, m, imm: s[0] & ~s[1] & m,            # NEON BIC: first & ~second
    "orn": lambda s, m, imm: (s[0] | ~s[1]) & m,          # NEON ORN
    "not": lambda s, m, imm: ~s[0] & m,                   # NEON MVN
    "eor3": lambda s, m, imm: s[0] ^ s[1] ^ s[2],
    "bcax": lambda s, m, imm: s[0] ^ (s[1] & ~s[2] & m),
    # NEON bit selects with the destination as srcs[0] (its old value):
    "bsl": lambda s, m, imm: ((s[0] & s[1]) | (~s[0] & s[2])) & m,   # dst is the mask
    "bit": lambda s, m, imm: ((s[0] & ~s[2]) | (s[1] & s[2])) & m,   # dst is the 'else'
    "bif": lambda s, m, imm: ((s[0] & s[2]) | (s[1] & ~s[2])) & m,   # dst is the 'then'
    "ternlog": lambda s, m, imm: _ternlog(imm, s[0], s[1], s[2], m),
    "movi": lambda s, m, imm: m if imm else 0,
}
# instructions that overwrite their first source (srcs[0] must be dst)
DESTRUCTIVE = {"ternlog", "bsl", "bit", "bif"}


@dataclass(frozen=True)
class Lowering:
    netlist: str
    strategy: str
    code: tuple[MI, ...]
    inputs: tuple[int, ...]           # register of input i at the start
    outputs: tuple[int, ...]          # register of output i at the end
    registers: int
    max_live: int                     # peak live values of the chosen order, unbounded
    operations: int                   # gates, or cones for a fused cover
    two_operand: bool
    order: tuple[str, ...] = ()
    forms: dict = field(default_factory=dict, compare=False)   # cone form -> count
    objective: str = "instructions"   # what chose it (OBJECTIVES)
    keep_near: int = 0                # the Machine settings it was lowered with
    cycles: float | None = None       # the timing model's estimate, when it chose

    @property
    def instructions(self) -> int:
        return len(self.code)

    def count(self, kind: str) -> int:
        return sum(1 for m in self.code if m.kind == kind)

    @property
    def copies(self) -> int:
        return self.count("copy")

    @property
    def spills(self) -> int:
        return self.count("store")

    @property
    def reloads(self) -> int:
        return self.count("load")

    @property
    def nots(self) -> int:
        return self.count("not")

    @property
    def scratch_slots(self) -> int:
        """Spill slots the code uses (each one vector of the target's width)."""
        slots = [x[1] for m in self.code for x in (m.dst, *m.srcs) if is_mem(x)]
        return max(slots) + 1 if slots else 0

    @property
    def fits(self) -> bool:
        return self.max_live <= self.registers

    def listing(self) -> str:
        return "\n".join(str(m) for m in self.code)
