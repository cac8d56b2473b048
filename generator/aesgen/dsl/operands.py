"""Operands of an instruction: registers (physical or virtual), memory, immediates, labels.

Physical and virtual registers share one type, told apart by their id: physical ids are the
hardware numbers (rax=0 ... r15=15, xmm0=0 ... xmm31=31), virtual ids start at VIRTUAL_BASE.
A register value is one allocation unit (a 64-bit GPR or a 512-bit vector); an operand is a
*view* of it at some width, so ``v.w32`` and ``v`` allocate together.

AArch64 registers are two more classes, ``A64_GP`` (x0-x30 with w views; sp and xzr have
ids 31 and 32 and are never allocated) and ``A64_VEC`` (v0-v31). A vector view carries an
arrangement (``v.b16`` -> ``v3.16b``; ``.h8 .s4 .d2 .b8 .h4 .s2 .d1``), a scalar view
(``v.q v.d v.s v.h v.b`` -> ``q3 d3 ...``) or an element (``v.lane("s", 1)`` -> ``v3.s[1]``).
The table kinds are ``x w sp wsp xzr wzr``, ``v16b v8h ...``, ``q d s h b`` and
``eb eh es ed`` (elements). ``VList`` is a register list (``{v0.16b-v3.16b}``), whose
registers the allocator keeps consecutive; ``Sym`` is a data symbol (``adrp``).
"""
from __future__ import annotations

from dataclasses import dataclass

VIRTUAL_BASE = 1000

GP = "gp"
VEC = "vec"
KMASK = "k"          # AVX-512 opmask registers k1-k7 (physical only: the lowering names them)

GP_NAMES = {
    64: ["rax", "rcx", "rdx", "rbx", "rsp", "rbp", "rsi", "rdi",
         "r8", "r9", "r10", "r11", "r12", "r13", "r14", "r15"],
    32: ["eax", "ecx", "edx", "ebx", "esp", "ebp", "esi", "edi",
         "r8d", "r9d", "r10d", "r11d", "r12d", "r13d", "r14d", "r15d"],
    8: ["al", "cl", "dl", "bl", "spl", "bpl", "sil", "dil",
        "r8b", "r9b", "r10b", "r11b", "r12b", "r13b", "r14b", "r15b"],
}
VEC_PREFIX = {128: "xmm", 256: "ymm", 512: "zmm"}

# --- AArch64 ------------------------------------------------------------------------------
A64_GP = "x"
A64_VEC = "v"
A64_SP = 31          # the stack pointer: only as a memory base or add/sub operand
A64_ZR = 32          # xzr / wzr
A64_ARRANGEMENTS = ("16b", "8h", "4s", "2d", "8b", "4h", "2s", "1d", "1q")
A64_SCALARS = ("q", "d", "s", "h", "b")
A64_ELEMENT_BYTES = {"b": 1, "h": 2, "s": 4, "d": 8}


@dataclass(frozen=True, order=True)
class Reg:
    """A register view: class ``gp`` or ``vec``, an id, and the width this operand uses."""

    cls: str
    id: int
    width: int
    arr: str = ""        # AArch64 vector view: arrangement, scalar or element size
    lane: int = -1       # AArch64 element index (with arr in "bhsd"), else -1

    @property
    def is_virtual(self) -> bool:
        return self.id >= VIRTUAL_BASE

    @property
    def key(self) -> tuple[str, int]:
        """The allocation unit this view belongs to."""
        return (self.cls, self.id)

    def view(self, width: int) -> "Reg":
        return Reg(self.cls, self.id, width)

    # --- AArch64 views ---------------------------------------------------------------
    def _a64_view(self, arr: str, lane: int = -1) -> "Reg":
        if self.cls != A64_VEC:
            raise TypeError(f"{self!r} is not an AArch64 vector register")
        return Reg(self.cls, self.id, 128, arr, lane)

    def arrangement(self, arr: str) -> "Reg":
        if arr not in A64_ARRANGEMENTS + A64_SCALARS:
            raise ValueError(f"no AArch64 vector view {arr!r}")
        return self._a64_view(arr)

    def lane_view(self, size: str, index: int) -> "Reg":
        """Element ``index`` of size ``size`` ('b', 'h', 's', 'd'): ``v3.s[1]``."""
        if size not in A64_ELEMENT_BYTES or not 0 <= index < 16 // A64_ELEMENT_BYTES[size]:
            raise ValueError(f"no element {size}[{index}] in a 128-bit register")
        return self._a64_view(size, index)

    b16 = property(lambda self: self.arrangement("16b"))
    h8 = property(lambda self: self.arrangement("8h"))
    s4 = property(lambda self: self.arrangement("4s"))
    d2 = property(lambda self: self.arrangement("2d"))
    b8 = property(lambda self: self.arrangement("8b"))
    h4 = property(lambda self: self.arrangement("4h"))
    s2 = property(lambda self: self.arrangement("2s"))
    d1 = property(lambda self: self.arrangement("1d"))
    q1 = property(lambda self: self.arrangement("1q"))
    q = property(lambda self: self.arrangement("q"))
    d = property(lambda self: self.arrangement("d"))
    s = property(lambda self: self.arrangement("s"))

    @property
    def x(self) -> "Reg":
        """The 64-bit view of an AArch64 general register."""
        return Reg(self.cls, self.id, 64)

    @property
    def w(self) -> "Reg":
        """The 32-bit view of an AArch64 general register."""
        return Reg(self.cls, self.id, 32)

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
        if self.cls == KMASK:
            return "k"
        if self.cls == A64_GP:
            if self.id == A64_SP:
                return "sp" if self.width == 64 else "wsp"
            if self.id == A64_ZR:
                return "xzr" if self.width == 64 else "wzr"
            return "x" if self.width == 64 else "w"
        if self.cls == A64_VEC:
            if self.lane >= 0:
                return f"e{self.arr}"
            if self.arr in A64_SCALARS:
                return self.arr
            return f"v{self.arr or '16b'}"
        return VEC_PREFIX[self.width]

    def name(self) -> str:
        if self.cls in (A64_GP, A64_VEC):
            return self._a64_name()
        if self.is_virtual:
            return f"v{self.cls}{self.id}.{self.width}"
        if self.cls == GP:
            return GP_NAMES[self.width][self.id]
        if self.cls == KMASK:
            return f"k{self.id}"
        return f"{VEC_PREFIX[self.width]}{self.id}"

    def _a64_name(self) -> str:
        n = f"%{self.id}" if self.is_virtual else str(self.id)
        if self.cls == A64_GP:
            if self.id == A64_SP:
                return "sp" if self.width == 64 else "wsp"
            if self.id == A64_ZR:
                return "xzr" if self.width == 64 else "wzr"
            return f"{'x' if self.width == 64 else 'w'}{n}"
        if self.lane >= 0:
            return f"v{n}.{self.arr}[{self.lane}]"
        if self.arr in A64_SCALARS:
            return f"{self.arr}{n}"
        return f"v{n}.{self.arr or '16b'}"

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


def kmask(n: int) -> Reg:
    """The AVX-512 opmask register k<n> (1..7; k0 cannot mask)."""
    if not 1 <= n <= 7:
        raise ValueError(f"opmask register k{n}: only k1..k7 can mask")
    return Reg(KMASK, n, 64)


RSP = gp("rsp")


def xreg(n: int, width: int = 64) -> Reg:
    """AArch64 general register x<n> (w<n> with width 32); 31 is sp, 32 is xzr."""
    return Reg(A64_GP, n, width)


def vreg(n: int, arr: str = "16b") -> Reg:
    """AArch64 vector register v<n> with a view (arrangement or scalar)."""
    return Reg(A64_VEC, n, 128).arrangement(arr)


SP = xreg(A64_SP)
XZR = xreg(A64_ZR)
WZR = xreg(A64_ZR, 32)


@dataclass(frozen=True)
class VList:
    """An AArch64 register list ``{v0.16b-v3.16b}`` (or ``{v0.s}[1]`` for one element):
    1 to 4 views of the same arrangement on consecutive registers. The allocator colours a
    list's virtual registers consecutively."""

    regs: tuple[Reg, ...]

    def __post_init__(self) -> None:
        if not 1 <= len(self.regs) <= 4:
            raise ValueError("a register list holds 1 to 4 registers")
        if any(r.cls != A64_VEC for r in self.regs):
            raise TypeError("a register list holds AArch64 vector registers")
        if len({(r.arr, r.lane) for r in self.regs}) != 1:
            raise ValueError("the registers of a list share one arrangement")
        if len({r.key for r in self.regs}) != len(self.regs):
            raise ValueError("a register list names a register twice")

    @property
    def kind(self) -> str:
        return f"L{len(self.regs)}{self.regs[0].kind}"

    def with_regs(self, regs: tuple[Reg, ...]) -> "VList":
        return VList(tuple(regs))


@dataclass(frozen=True)
class Sym:
    """A data symbol's address (``adrp x0, sym`` / ``add x0, x0, :lo12:sym``)."""
    name: str

    kind = "sym"


@dataclass(frozen=True)
class Mem:
    """A memory operand ``disp(base, index, scale)`` of ``width`` bits, or ``label(%rip)``."""

    width: int
    base: Reg | None = None
    index: Reg | None = None
    scale: int = 1
    disp: int = 0
    rip_label: str | None = None
    writeback: str = ""      # AArch64: "pre" ([x0, #16]!) or "post" ([x0], #16 or [x0], x1)

    def __post_init__(self) -> None:
        a64 = self.base is not None and self.base.cls == A64_GP
        for r in (self.base, self.index):
            if r is None:
                continue
            if a64:
                if r.cls != A64_GP or r.width != 64 or r.id == A64_ZR or (
                        r is self.index and r.id == A64_SP):
                    raise TypeError(f"AArch64 address register must be x0-x30 or sp "
                                    f"(base), got {r!r}")
            elif r.cls != GP or r.width != 64:
                raise TypeError(f"address register must be a 64-bit GPR, got {r!r}")
        if self.scale not in ((1, 2, 4, 8, 16) if a64 else (1, 2, 4, 8)):
            raise ValueError(f"scale must be 1, 2, 4 or 8, got {self.scale}")
        if self.writeback not in ("", "pre", "post") or (self.writeback and not a64):
            raise ValueError(f"bad writeback {self.writeback!r}")
        if self.writeback == "pre" and self.index is not None:
            raise ValueError("pre-index addressing takes an immediate")
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
        return Mem(self.width, base, index, self.scale, self.disp, self.rip_label,
                   self.writeback)

    def at(self, width: int) -> "Mem":
        return Mem(width, self.base, self.index, self.scale, self.disp, self.rip_label,
                   self.writeback)

    def written_registers(self) -> list[Reg]:
        """Registers the access itself updates (AArch64 pre/post-index writeback)."""
        return [self.base] if self.writeback and self.base is not None else []


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


@dataclass(frozen=True)
class Masked:
    """An AVX-512 write mask on the instruction's destination: ``{%k1}`` (elements the mask
    clears keep their old value; for a store, are not written) or with ``zero``, ``{%k1}{z}``
    (they become 0). It is the last operand in the DSL (Intel order); the printer attaches
    it to the destination. Kinds: ``km`` (merging) and ``kz`` (zeroing)."""

    reg: Reg
    zero: bool = False

    @property
    def kind(self) -> str:
        return "kz" if self.zero else "km"


Operand = Reg | Mem | Imm | Label | VList | Sym | Masked


def kind_matches(operand: Operand, allowed: str) -> bool:
    """True if ``operand`` is acceptable where the table says ``allowed`` (e.g. 'imm32')."""
    if allowed in A64_IMMEDIATES:
        return isinstance(operand, Imm) and A64_IMMEDIATES[allowed](operand.value)
    if allowed[:2] in A64_MEMORY and allowed[2:].isdigit():
        return isinstance(operand, Mem) and _a64_memory_ok(operand, allowed[:2],
                                                           int(allowed[2:]))
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


# --- AArch64 immediates and addressing modes, checked by value ------------------------------
def logical_immediate(value: int, bits: int) -> bool:
    """Whether ``value`` is an A64 bitmask immediate of ``bits`` (32 or 64) bits: a rotated
    run of ones replicated in 2, 4, ..., 64-bit elements (not all zeros or all ones)."""
    mask = (1 << bits) - 1
    value &= mask
    if value in (0, mask):
        return False
    size = next(n for n in (2, 4, 8, 16, 32, 64)
                if n >= bits or sum((value & ((1 << n) - 1)) << k
                                    for k in range(0, bits, n)) == value)
    elem = value & ((1 << size) - 1)
    emask = (1 << size) - 1
    for rot in range(size):           # some rotation is a run of ones from bit 0
        r = ((elem >> rot) | (elem << (size - rot))) & emask
        if r & (r + 1) == 0:
            return True
    return False


def _movi64(v: int) -> bool:
    return 0 <= v < (1 << 64) and all(((v >> (8 * i)) & 0xFF) in (0, 0xFF) for i in range(8))


A64_IMMEDIATES = {
    "u12": lambda v: 0 <= v < 4096,                     # add/sub/cmp immediate
    "u16": lambda v: 0 <= v < 65536,                    # movz/movk
    "sh16": lambda v: v in (0, 16, 32, 48),             # movz/movk lsl
    "u8": lambda v: 0 <= v < 256,                       # movi byte immediate
    "movi64": _movi64,                                  # movi 2d bytes of 0x00 / 0xff
    "bimm32": lambda v: logical_immediate(v, 32),       # and/orr/eor w, #imm
    "bimm64": lambda v: logical_immediate(v, 64),       # and/orr/eor x, #imm
    "sh5": lambda v: 0 <= v < 32,                       # shift of a w register
    "sh6": lambda v: 0 <= v < 64,                       # shift of an x register; tbz bit
    "lsl6": lambda v: 0 <= v < 64,                      # shifted-register operand
    "vsh8": lambda v: 1 <= v <= 8,                      # ushr/sri .16b
    "vsh32": lambda v: 1 <= v <= 32,                    # ushr/sri .4s
    "vsh64": lambda v: 1 <= v <= 64,                    # ushr/sri .2d
    "vl8": lambda v: 0 <= v < 8,                        # shl/sli .16b
    "vl32": lambda v: 0 <= v < 32,                      # shl/sli .4s
    "vl64": lambda v: 0 <= v < 64,                      # shl/sli .2d
    "ext16": lambda v: 0 <= v < 16,                     # ext .16b byte index
    "zero": lambda v: v == 0,                           # cmeq/cmlt #0
    "hint": lambda v: 0 <= v < 128,                     # hint #n (bti c = #34)
}

A64_MEMORY = ("mu", "mp", "mv", "ms")


def _a64_memory_ok(m: Mem, mode: str, width: int) -> bool:
    """AArch64 addressing modes by instruction group (width = bits an access moves):
    mu: ldr/str: [xn, #u12*size], [xn, xm{, lsl #log2 size}], pre/post-index #simm9
    ms: ldur/stur: [xn, #simm9]
    mp: ldp/stp: [xn, #simm7*size], pre/post-index likewise (size = one register)
    mv: ld1/st1/ld4/st4: [xn], or post-index by the bytes moved or by a register."""
    if m.base is None or m.base.cls != A64_GP or m.width != width:
        return False
    size = width // 8
    if mode == "mv":
        if m.disp and not m.writeback:
            return False
        if m.writeback == "post":
            return (m.index is not None and m.disp == 0) or (m.index is None and m.disp == size)
        return m.writeback == "" and m.index is None and m.disp == 0
    if m.index is not None:
        return (mode == "mu" and not m.writeback and m.disp == 0
                and m.scale in (1, size) and m.base.id != A64_ZR)
    if mode == "ms":
        return not m.writeback and -256 <= m.disp < 256
    if mode == "mu":
        if m.writeback:
            return -256 <= m.disp < 256
        return m.disp % size == 0 and 0 <= m.disp // size < 4096
    if mode == "mp":
        reg = size // 2
        return m.disp % reg == 0 and -64 <= m.disp // reg < 64
    return False
