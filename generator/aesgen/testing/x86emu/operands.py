"""One instruction as written: the register names, AT&T operand parsing (Operand,
parse_operand, split_operands) and Insn, an instruction with its operands and source line."""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import lru_cache

from .errors import ParseError

GPR64 = ["rax", "rcx", "rdx", "rbx", "rsp", "rbp", "rsi", "rdi"] + [f"r{i}" for i in range(8, 16)]
_GPR32 = ["eax", "ecx", "edx", "ebx", "esp", "ebp", "esi", "edi"] + [f"r{i}d" for i in range(8, 16)]
_GPR16 = ["ax", "cx", "dx", "bx", "sp", "bp", "si", "di"] + [f"r{i}w" for i in range(8, 16)]
_GPR8 = ["al", "cl", "dl", "bl", "spl", "bpl", "sil", "dil"] + [f"r{i}b" for i in range(8, 16)]

REGS: dict[str, tuple[str, int, int, bool]] = {}     # name -> (class, index, bits, high8)
for _i in range(16):
    REGS[GPR64[_i]] = ("g", _i, 64, False)
    REGS[_GPR32[_i]] = ("g", _i, 32, False)
    REGS[_GPR16[_i]] = ("g", _i, 16, False)
    REGS[_GPR8[_i]] = ("g", _i, 8, False)
    if _i >= 8:
        REGS[f"r{_i}l"] = ("g", _i, 8, False)
for _n, _i in (("ah", 0), ("ch", 1), ("dh", 2), ("bh", 3)):
    REGS[_n] = ("g", _i, 8, True)
for _i in range(32):
    REGS[f"xmm{_i}"] = ("v", _i, 128, False)
    REGS[f"ymm{_i}"] = ("v", _i, 256, False)
    REGS[f"zmm{_i}"] = ("v", _i, 512, False)
for _i in range(8):
    REGS[f"k{_i}"] = ("k", _i, 64, False)
REGS["rip"] = ("rip", 0, 64, False)

RAX, RCX, RDX, RBX, RSP, RBP, RSI, RDI = range(8)


@dataclass(frozen=True)
class Operand:
    kind: str                       # "reg", "imm", "mem", "label"
    text: str
    cls: str = ""                   # reg: "g", "v", "k"
    idx: int = 0
    bits: int = 0
    high: bool = False
    value: int = 0                  # imm
    base: int | None = None         # mem: GPR indexes; base None and rip False: absolute
    index: int | None = None
    scale: int = 1
    disp: int = 0
    sym: str | None = None          # mem: disp relative to a symbol (rip-relative)
    rip: bool = False
    mask: int = 0                   # {%kN} on this (destination) operand
    zero: bool = False              # {z}
    bcst: int = 0                   # {1toN}

    @property
    def is_vec(self) -> bool:
        return self.kind == "reg" and self.cls == "v"

    @property
    def is_gpr(self) -> bool:
        return self.kind == "reg" and self.cls == "g"

    @property
    def is_k(self) -> bool:
        return self.kind == "reg" and self.cls == "k"

    @property
    def nbytes(self) -> int:
        return self.bits // 8


_DECOR = re.compile(r"\{([^{}]*)\}")
_MEM = re.compile(r"^(?P<disp>[^()]*)\((?P<base>%\w+)?(?:\s*,\s*(?P<index>%\w+)?"
                  r"(?:\s*,\s*(?P<scale>\d+))?)?\s*\)$")
_SYMOFF = re.compile(r"^(?P<sym>[A-Za-z_.$][\w.$]*)?\s*(?P<off>[-+]\s*(?:0x[0-9a-fA-F]+|\d+))?$")
_IDENT = re.compile(r"^[A-Za-z_.$][\w.$]*$")


def parse_int(text: str) -> int:
    text = text.strip().replace(" ", "")
    neg = text.startswith("-")
    if neg or text.startswith("+"):
        text = text[1:]
    if len(text) > 1 and text[0] == "0" and text[1].isdigit():
        v = int(text, 8)
    else:
        v = int(text, 0)
    return -v if neg else v


@lru_cache(maxsize=65536)
def parse_operand(text: str) -> Operand:
    text = text.strip()
    mask, zero, bcst = 0, False, 0
    for d in _DECOR.findall(text):
        d = d.strip()
        if d == "z":
            zero = True
        elif d.startswith("%k") and d[1:] in REGS:
            mask = REGS[d[1:]][1]
            if mask == 0:
                raise ParseError(f"{{%k0}} cannot be a write mask: {text!r}")
        elif d.startswith("1to") and d[3:].isdigit():
            bcst = int(d[3:])
        else:
            raise ParseError(f"operand decoration {{{d}}} not understood: {text!r}")
    core = _DECOR.sub("", text).strip()
    if zero and not mask:
        raise ParseError(f"{{z}} without a mask: {text!r}")
    if core.startswith("%"):
        name = core[1:]
        if name not in REGS:
            raise ParseError(f"unknown register {core!r}")
        cls, idx, bits, high = REGS[name]
        return Operand("reg", text, cls=cls, idx=idx, bits=bits, high=high, mask=mask,
                       zero=zero)
    if core.startswith("$"):
        try:
            value = parse_int(core[1:])
        except ValueError:
            raise ParseError(f"immediate {core!r} is not a number") from None
        return Operand("imm", text, value=value)
    m = _MEM.match(core)
    if m:
        disp_text = m.group("disp").strip()
        disp, sym = 0, None
        if disp_text:
            try:
                disp = parse_int(disp_text)
            except ValueError:
                s = _SYMOFF.match(disp_text)
                if not s or not s.group("sym"):
                    raise ParseError(f"displacement {disp_text!r} not understood") from None
                sym = s.group("sym")
                disp = parse_int(s.group("off")) if s.group("off") else 0
        base = index = None
        rip = False
        if m.group("base"):
            bname = m.group("base")[1:]
            if bname == "rip":
                rip = True
            elif bname in REGS and REGS[bname][0] == "g" and REGS[bname][2] == 64:
                base = REGS[bname][1]
            else:
                raise ParseError(f"base register {bname!r} not supported in {text!r}")
        if m.group("index"):
            iname = m.group("index")[1:]
            if iname in REGS and REGS[iname][0] == "g" and REGS[iname][2] == 64 \
                    and REGS[iname][1] != RSP:
                index = REGS[iname][1]
            else:
                raise ParseError(f"index register {iname!r} not supported in {text!r}")
        scale = int(m.group("scale")) if m.group("scale") else 1
        if scale not in (1, 2, 4, 8):
            raise ParseError(f"scale {scale} in {text!r}")
        if rip and (index is not None):
            raise ParseError(f"rip-relative with an index: {text!r}")
        if sym is not None and not rip:
            raise ParseError(f"absolute symbol address {text!r} (only rip-relative is "
                             f"position independent)")
        return Operand("mem", text, base=base, index=index, scale=scale, disp=disp, sym=sym,
                       rip=rip, mask=mask, zero=zero, bcst=bcst)
    if _IDENT.match(core):
        return Operand("label", text, sym=core)
    if core.startswith("*"):
        raise ParseError(f"indirect branch target {text!r}")
    raise ParseError(f"operand {text!r} not understood")


def split_operands(text: str) -> list[str]:
    if "(" not in text and "{" not in text:
        return [t.strip() for t in text.split(",")] if text.strip() else []
    out, depth, cur = [], 0, []
    for ch in text:
        if ch in "({":
            depth += 1
        elif ch in ")}":
            depth -= 1
        if ch == "," and depth == 0:
            out.append("".join(cur).strip())
            cur = []
        else:
            cur.append(ch)
    if "".join(cur).strip():
        out.append("".join(cur).strip())
    return out


@dataclass
class Insn:
    mnemonic: str
    operand_text: list[str]
    text: str                 # the instruction as written (without comment)
    lineno: int
    filename: str
    index: int
    function: str = ""
    ops: list[Operand] = field(default_factory=list)

    def location(self) -> str:
        fn = f" in {self.function}" if self.function else ""
        return f"{self.filename}:{self.lineno}{fn}"

    def __str__(self) -> str:
        return f"{self.location()}: {self.text}"
