"""A test-only x86-64 interpreter of the GNU assembler text (AT&T syntax) aesgen prints.

It runs the committed ``.S`` kernels on machines that lack the instructions they use (the
zmm, GFNI and VAES kernels on a CPU without AVX-512 or GFNI), so their outputs can be
checked against the Python model anywhere. It reads the assembly *text*, not machine code:

    prog = Program.parse(Path("generated/znver4/vaes512_face_none.S").read_text())
    m = Machine(prog)
    ctx = m.alloc(384)                      # 64-byte aligned region
    key = m.alloc(b"\\x00" * 16)
    assert m.call("aesgen_vaes512_face_none_init", ctx, key, 16, iv) == 0

Memory is made of explicitly allocated regions with unmapped gaps between them: every
access outside a region (a read past a buffer, a write into read-only data) raises
:class:`MemoryFault` naming the instruction, its source line and the address. EVEX masked
loads and stores touch only the bytes of their enabled elements (fault suppression), so a
masked tail that reads past the end of a buffer is legal only when the mask covers it.

Semantics kept exactly: AT&T operand order (sources first, destination last); VEX and
EVEX forms zero the destination above the operand width (to bit 511), legacy SSE forms
keep those bits; merging ``{%kN}`` and zeroing ``{%kN}{z}`` masks with the element size of
the mnemonic; per-128-bit-lane shuffles, AES rounds, carry-less multiplies; lazily
computed rflags (CF, ZF, SF, OF, PF) for jcc, cmov, setcc, adc and sbb. Instructions are
decoded once into Python closures (on first execution, or all at once by
:meth:`Program.decode_all`); anything not implemented raises
:class:`UnsupportedInstruction` rather than being skipped.

Sources for the instruction semantics: Intel SDM vol. 2 (the per-instruction
"Operation" sections), as summarised at felixcloutier.com/x86.
"""
from __future__ import annotations

import operator
import random
import re
from collections import Counter
from dataclasses import dataclass, field
from functools import lru_cache

from ..model import gf128
from ..model.aes import INV_SBOX, SBOX

__all__ = ["EmulatorError", "ParseError", "UnsupportedInstruction", "MemoryFault",
           "ExecutionError", "Program", "Machine", "Insn"]

M8, M16, M32, M64 = 0xFF, 0xFFFF, 0xFFFF_FFFF, (1 << 64) - 1
M128, M256, M512 = (1 << 128) - 1, (1 << 256) - 1, (1 << 512) - 1
WMASK = {16: M128, 32: M256, 64: M512}
BITS_MASK = {8: M8, 16: M16, 32: M32, 64: M64}

# Address-space layout: nothing below LOW_LIMIT is ever mapped (NULL and small pointers
# fault); read-only data of the program first, then the heap of allocated regions.
LOW_LIMIT = 0x10000
GAP = 256                     # unmapped bytes at least between two regions
CODE_BASE = 0x7F00_0000_0000  # pseudo addresses of instructions (return addresses)
CODE_STRIDE = 16
SENTINEL = 0x7EEE_DEAD_BEE0   # the return address of Machine.call: `ret` to it ends the run

_SBOX_B = bytes(SBOX)
_INV_SBOX_B = bytes(INV_SBOX)


# =========================================================================================
# errors
class EmulatorError(Exception):
    """Base of the emulator's errors."""


class ParseError(EmulatorError):
    pass


class UnsupportedInstruction(EmulatorError):
    """An instruction (mnemonic and operand form) the emulator does not implement."""


class ExecutionError(EmulatorError):
    """The run went wrong: bad return address, clobbered callee-saved register, too many
    steps, a #GP-like condition (misaligned legacy/aligned vector access)."""


class MemoryFault(EmulatorError):
    """An access to bytes outside every allocated region (or a write to read-only data)."""

    def __init__(self, addr: int, size: int, write: bool, detail: str = "") -> None:
        super().__init__()
        self.addr, self.size, self.write, self.detail = addr, size, write, detail
        self.insn: Insn | None = None
        self.where = ""

    def __str__(self) -> str:
        what = "write" if self.write else "read"
        text = f"{what} of {self.size} byte(s) at {self.addr:#x}"
        if self.detail:
            text += f" ({self.detail})"
        if self.where:
            text += f"; {self.where}"
        if self.insn is not None:
            text = f"{self.insn.location()}: `{self.insn.text}`: {text}"
        return text


# =========================================================================================
# registers and operands
_GPR64 = ["rax", "rcx", "rdx", "rbx", "rsp", "rbp", "rsi", "rdi"] + [f"r{i}" for i in range(8, 16)]
_GPR32 = ["eax", "ecx", "edx", "ebx", "esp", "ebp", "esi", "edi"] + [f"r{i}d" for i in range(8, 16)]
_GPR16 = ["ax", "cx", "dx", "bx", "sp", "bp", "si", "di"] + [f"r{i}w" for i in range(8, 16)]
_GPR8 = ["al", "cl", "dl", "bl", "spl", "bpl", "sil", "dil"] + [f"r{i}b" for i in range(8, 16)]

REGS: dict[str, tuple[str, int, int, bool]] = {}     # name -> (class, index, bits, high8)
for _i in range(16):
    REGS[_GPR64[_i]] = ("g", _i, 64, False)
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
ARG_REGS = (RDI, RSI, RDX, RCX, 8, 9)
CALLEE_SAVED = (RBX, RBP, 12, 13, 14, 15)


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


def _int(text: str) -> int:
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
            value = _int(core[1:])
        except ValueError:
            raise ParseError(f"immediate {core!r} is not a number") from None
        return Operand("imm", text, value=value)
    m = _MEM.match(core)
    if m:
        disp_text = m.group("disp").strip()
        disp, sym = 0, None
        if disp_text:
            try:
                disp = _int(disp_text)
            except ValueError:
                s = _SYMOFF.match(disp_text)
                if not s or not s.group("sym"):
                    raise ParseError(f"displacement {disp_text!r} not understood") from None
                sym = s.group("sym")
                disp = _int(s.group("off")) if s.group("off") else 0
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


# =========================================================================================
# the program: instructions, labels, data
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


def _unsupported(ins: Insn, why: str = "") -> UnsupportedInstruction:
    extra = f" ({why})" if why else ""
    return UnsupportedInstruction(f"{ins.location()}: `{ins.text}`: mnemonic "
                                  f"{ins.mnemonic!r} with operands {ins.operand_text} is not "
                                  f"implemented by the emulator{extra}")


_DATA_DIRECTIVES = {".byte": 1, ".short": 2, ".value": 2, ".2byte": 2, ".hword": 2,
                    ".word": 2, ".long": 4, ".int": 4, ".4byte": 4, ".quad": 8,
                    ".8byte": 8, ".octa": 16}
_IGNORED = {".globl", ".global", ".type", ".size", ".file", ".ident", ".hidden", ".local",
            ".weak", ".protected", ".internal", ".loc", ".cfi_startproc", ".cfi_endproc",
            ".cfi_def_cfa_offset", ".cfi_offset", ".cfi_def_cfa", ".cfi_def_cfa_register",
            ".cfi_adjust_cfa_offset", ".cfi_rel_offset", ".cfi_restore", ".cfi_sections",
            ".cfi_remember_state", ".cfi_restore_state", ".addrsig", ".att_syntax"}
_LABEL = re.compile(r"^\s*([A-Za-z_.$][\w.$]*)\s*:(.*)$")
_BLOCK_COMMENT = re.compile(r"/\*.*?\*/", re.S)


def _strip_comment(line: str) -> str:
    if "#" not in line:
        return line
    if '"' not in line:
        return line[:line.index("#")]
    out, quote = [], False
    for ch in line:
        if ch == '"':
            quote = not quote
        elif ch == "#" and not quote:
            break
        out.append(ch)
    return "".join(out)


class Program:
    """The instructions of the ``.text`` sections and the data of ``.rodata``/``.data``.

    Instructions are numbered in order; labels of code name an instruction index, labels of
    data an address (data is laid out from RODATA_BASE when parsed). ``functions`` maps each
    symbol declared ``@function`` or ``.globl`` in ``.text`` to its first instruction.
    """

    RODATA_BASE = LOW_LIMIT

    def __init__(self) -> None:
        self.insns: list[Insn] = []
        self.code_labels: dict[str, int] = {}
        self.data_labels: dict[str, int] = {}        # absolute addresses
        self.rodata = bytearray()
        self.data = bytearray()
        self.functions: dict[str, int] = {}
        self._factories: list = []
        self._by_text: dict = {}
        self.data_base = 0

    # --- parsing ----------------------------------------------------------------------
    @classmethod
    def parse(cls, *texts: str, filenames: list[str] | None = None) -> "Program":
        prog = cls()
        pending_data_labels: list[tuple[str, str, int]] = []   # (name, section, offset)
        declared: set[str] = set()
        for n, text in enumerate(texts):
            fname = filenames[n] if filenames else (f"<asm{n}>" if len(texts) > 1 else "<asm>")
            prog._parse_one(text, fname, pending_data_labels, declared)
        # lay out: rodata, then data, each 64-byte aligned, from RODATA_BASE
        ro_base = cls.RODATA_BASE
        data_base = ro_base + ((len(prog.rodata) + GAP + 63) // 64) * 64
        prog.data_base = data_base
        for name, section, off in pending_data_labels:
            if name in prog.data_labels or name in prog.code_labels:
                raise ParseError(f"label {name!r} defined twice")
            prog.data_labels[name] = (ro_base if section == "rodata" else data_base) + off
        for name in declared:
            if name in prog.code_labels:
                prog.functions[name] = prog.code_labels[name]
        prog._factories = [None] * len(prog.insns)
        return prog

    @classmethod
    def parse_files(cls, *paths) -> "Program":
        from pathlib import Path
        return cls.parse(*(Path(p).read_text() for p in paths),
                         filenames=[Path(p).name for p in paths])

    def _parse_one(self, text, fname, pending, declared) -> None:
        text = _BLOCK_COMMENT.sub(lambda m: "\n" * m.group().count("\n"), text)
        section = "text"
        function = ""
        for lineno, raw in enumerate(text.splitlines(), 1):
            line = _strip_comment(raw).strip()
            while line:
                m = _LABEL.match(line)
                if not m or line.startswith('"'):
                    break
                name = m.group(1)
                if section == "text":
                    if name in self.code_labels or name in self.data_labels:
                        raise ParseError(f"{fname}:{lineno}: label {name!r} defined twice")
                    self.code_labels[name] = len(self.insns)
                    if not name.startswith(".L"):
                        function = name
                elif section in ("rodata", "data"):
                    buf = self.rodata if section == "rodata" else self.data
                    pending.append((name, section, len(buf)))
                line = m.group(2).strip()
            if not line:
                continue
            if line.startswith("."):
                section = self._directive(line, section, fname, lineno, declared)
                continue
            if section != "text":
                raise ParseError(f"{fname}:{lineno}: instruction outside .text: {line!r}")
            parts = line.split(None, 1)
            mnemonic = parts[0].lower()
            if mnemonic in ("rep", "repz", "repe", "repnz", "repne", "lock", "notrack",
                            "data16", "addr32") or mnemonic.startswith("{"):
                raise UnsupportedInstruction(f"{fname}:{lineno}: prefix {mnemonic!r} in "
                                             f"{line!r} is not implemented")
            opstr = parts[1] if len(parts) > 1 else ""
            self.insns.append(Insn(mnemonic, split_operands(opstr), line, lineno, fname,
                                   len(self.insns), function))

    def _directive(self, line, section, fname, lineno, declared) -> str:
        parts = line.split(None, 1)
        d, arg = parts[0], (parts[1].strip() if len(parts) > 1 else "")
        if d == ".text":
            return "text"
        if d in (".data", ".bss"):
            return "data"
        if d == ".section":
            name = arg.split(",")[0].strip()
            if name.startswith(".text"):
                return "text"
            if name.startswith(".rodata"):
                return "rodata"
            if name.startswith((".data", ".bss")):
                return "data"
            return "other"
        if d in (".globl", ".global"):
            declared.update(a.strip() for a in arg.split(","))
            return section
        if d == ".type":
            bits = [a.strip() for a in arg.split(",")]
            if len(bits) == 2 and bits[1] in ("@function", "%function"):
                declared.add(bits[0])
            return section
        if d in _IGNORED:
            return section
        if section == "other":
            return section
        if d in (".p2align", ".balign", ".align"):
            n = _int(arg.split(",")[0])
            align = (1 << n) if d == ".p2align" else n
            if section == "text":
                return section
            buf = self.rodata if section == "rodata" else self.data
            buf.extend(bytes((-len(buf)) % align))
            return section
        if section == "text":
            raise ParseError(f"{fname}:{lineno}: directive {d} in .text not understood")
        buf = self.rodata if section == "rodata" else self.data
        if d in _DATA_DIRECTIVES:
            size = _DATA_DIRECTIVES[d]
            for item in arg.split(","):
                try:
                    v = _int(item)
                except ValueError:
                    raise ParseError(f"{fname}:{lineno}: data value {item!r} is not a "
                                     f"number") from None
                buf.extend((v & ((1 << (8 * size)) - 1)).to_bytes(size, "little"))
            return section
        if d in (".zero", ".skip", ".space"):
            a = arg.split(",")
            fill = _int(a[1]) & 0xFF if len(a) > 1 else 0
            buf.extend(bytes([fill]) * _int(a[0]))
            return section
        if d in (".ascii", ".asciz", ".string"):
            for s in re.findall(r'"((?:[^"\\]|\\.)*)"', arg):
                b = s.encode().decode("unicode_escape").encode("latin-1")
                buf.extend(b + (b"\0" if d != ".ascii" else b""))
            return section
        raise ParseError(f"{fname}:{lineno}: directive {d} not understood")

    # --- symbols --------------------------------------------------------------------------
    def address_of(self, name: str) -> int:
        if name in self.data_labels:
            return self.data_labels[name]
        if name in self.code_labels:
            return CODE_BASE + CODE_STRIDE * self.code_labels[name]
        raise KeyError(name)

    def entry(self, symbol: str) -> int:
        if symbol in self.functions:
            return self.functions[symbol]
        if symbol in self.code_labels:
            return self.code_labels[symbol]
        raise KeyError(f"no function {symbol!r} in the program")

    # --- decoding -------------------------------------------------------------------------
    def factory(self, i: int):
        """bind(machine, next_index) -> the closure that runs instruction i. Identical
        instruction texts share one decoded form (labels resolve the same in a program)."""
        f = self._factories[i]
        if f is None:
            ins = self.insns[i]
            key = (ins.mnemonic, tuple(ins.operand_text))
            f = self._by_text.get(key)
            if f is None:
                try:
                    ins.ops = [parse_operand(t) for t in ins.operand_text]
                except ParseError as e:
                    raise ParseError(f"{ins.location()}: `{ins.text}`: {e}") from None
                f = self._by_text[key] = _decode(self, ins)
            self._factories[i] = f
        return f

    def decode_all(self) -> None:
        """Decode every instruction (raises UnsupportedInstruction/ParseError on the first
        that cannot be)."""
        for i in range(len(self.insns)):
            self.factory(i)

    def mnemonics(self) -> set[str]:
        return {ins.mnemonic for ins in self.insns}


# =========================================================================================
# flags: a lazily evaluated record (kind, result, a, b, bits, extra)
F_LOGIC, F_ADD, F_SUB, F_INC, F_DEC, F_SHL, F_SHR, F_SAR, F_X = range(9)
_PARITY = bytes(1 - bin(i).count("1") % 2 for i in range(256))    # PF: 1 when even


def _cf(t) -> int:
    k = t[0]
    if k == F_SUB:
        return 1 if t[2] < t[3] + t[5] else 0
    if k == F_ADD:
        return ((t[2] + t[3] + t[5]) >> t[4]) & 1
    if k == F_LOGIC:
        return 0
    if k in (F_INC, F_DEC, F_X):
        return t[5]
    if k == F_SHL:
        return (t[2] >> (t[4] - t[3])) & 1 if t[3] <= t[4] else 0
    if k == F_SHR:
        return (t[2] >> (t[3] - 1)) & 1
    if k == F_SAR:
        a, bits = t[2], t[4]
        if a >> (bits - 1):
            a -= 1 << bits
        return (a >> (t[3] - 1)) & 1
    raise AssertionError(k)


def _of(t) -> int:
    k, r, a, b, bits = t[0], t[1], t[2], t[3], t[4]
    if k in (F_ADD, F_INC):
        return (((a ^ r) & (b ^ r)) >> (bits - 1)) & 1
    if k in (F_SUB, F_DEC):
        return (((a ^ b) & (a ^ r)) >> (bits - 1)) & 1
    if k == F_LOGIC or k == F_SAR:
        return 0
    if k == F_SHL:
        return ((r >> (bits - 1)) & 1) ^ _cf(t)
    if k == F_SHR:
        return (a >> (bits - 1)) & 1
    if k == F_X:
        return t[3]
    raise AssertionError(k)


def _zf(t) -> int:
    return 1 if t[1] == 0 else 0


def _sf(t) -> int:
    return (t[1] >> (t[4] - 1)) & 1


def _pf(t) -> int:
    if t[0] == F_X and len(t) > 6:
        return t[6]
    return _PARITY[t[1] & 0xFF]


def _flags_x(r: int, bits: int, cf: int, of: int, pf: int | None = None):
    """Explicit flags: ZF, SF and PF from r (unless pf is given), CF and OF as given."""
    if pf is None:
        return (F_X, r, cf, of, bits, cf)
    return (F_X, r, cf, of, bits, cf, pf)


def _c_b(t):
    return t[2] < t[3] + t[5] if t[0] == F_SUB else _cf(t)


def _c_be(t):
    if t[0] == F_SUB:
        return t[2] <= t[3] + t[5]
    return _cf(t) or t[1] == 0


def _c_l(t):
    return _sf(t) != _of(t)


def _c_le(t):
    return t[1] == 0 or _sf(t) != _of(t)


CONDITIONS = {
    "o": lambda t: _of(t), "no": lambda t: not _of(t),
    "b": _c_b, "c": _c_b, "nae": _c_b,
    "ae": lambda t: not _c_b(t), "nb": lambda t: not _c_b(t), "nc": lambda t: not _c_b(t),
    "e": lambda t: t[1] == 0, "z": lambda t: t[1] == 0,
    "ne": lambda t: t[1] != 0, "nz": lambda t: t[1] != 0,
    "be": _c_be, "na": _c_be,
    "a": lambda t: not _c_be(t), "nbe": lambda t: not _c_be(t),
    "s": lambda t: _sf(t), "ns": lambda t: not _sf(t),
    "p": lambda t: _pf(t), "pe": lambda t: _pf(t), "np": lambda t: not _pf(t),
    "po": lambda t: not _pf(t),
    "l": _c_l, "nge": _c_l, "ge": lambda t: not _c_l(t), "nl": lambda t: not _c_l(t),
    "le": _c_le, "ng": _c_le, "g": lambda t: not _c_le(t), "nle": lambda t: not _c_le(t),
}


# =========================================================================================
# vector helpers (Python ints, byte 0 = bits 0..7)
def _rep(pattern: int, unit_bits: int, total_bits: int) -> int:
    v = 0
    for i in range(total_bits // unit_bits):
        v |= pattern << (unit_bits * i)
    return v


@lru_cache(maxsize=None)
def _rep_const(unit_bits: int, total_bits: int) -> int:
    """1 in the lowest bit of every unit: multiply a unit-wide value by it to broadcast."""
    return _rep(1, unit_bits, total_bits)


@lru_cache(maxsize=None)
def _high_bits(esize: int, total_bits: int) -> int:
    return _rep(1 << (esize - 1), esize, total_bits)


@lru_cache(maxsize=None)
def _lane_mask(nbits: int, which: tuple[bool, ...]) -> int:
    """Bytes i of every 128-bit lane with which[i] set."""
    lane = 0
    for i in range(16):
        if which[i]:
            lane |= 0xFF << (8 * i)
    return _rep(lane, 128, nbits)


def _lane_bytes_mask(nbits: int, pred) -> int:
    return _lane_mask(nbits, tuple(bool(pred(i)) for i in range(16)))


class _AES:
    """AES round primitives on all 128-bit lanes of an nbits-wide int at once."""

    def __init__(self, nbits: int) -> None:
        self.nbytes = nbits // 8
        rb = lambda p: _lane_bytes_mask(nbits, p)  # noqa: E731
        self.row0 = rb(lambda i: i % 4 == 0)
        self.sr = []
        self.isr = []
        for r in (1, 2, 3):
            self.sr.append((32 * r, rb(lambda i, r=r: i % 4 == r and i // 4 < 4 - r),
                            128 - 32 * r, rb(lambda i, r=r: i % 4 == r and i // 4 >= 4 - r)))
            self.isr.append((32 * r, rb(lambda i, r=r: i % 4 == r and i // 4 >= r),
                             128 - 32 * r, rb(lambda i, r=r: i % 4 == r and i // 4 < r)))
        self.lo24 = _rep(0x00FFFFFF, 32, nbits)
        self.hi8 = _rep(0xFF000000, 32, nbits)
        self.lo16 = _rep(0x0000FFFF, 32, nbits)
        self.hi16 = _rep(0xFFFF0000, 32, nbits)
        self.b7f = _rep(0x7F, 8, nbits)
        self.b01 = _rep(0x01, 8, nbits)

    def shift_rows(self, x: int) -> int:
        (s1, n1, t1, w1), (s2, n2, t2, w2), (s3, n3, t3, w3) = self.sr
        return ((x & self.row0) | ((x >> s1) & n1) | ((x << t1) & w1) | ((x >> s2) & n2)
                | ((x << t2) & w2) | ((x >> s3) & n3) | ((x << t3) & w3))

    def inv_shift_rows(self, x: int) -> int:
        (s1, n1, t1, w1), (s2, n2, t2, w2), (s3, n3, t3, w3) = self.isr
        return ((x & self.row0) | ((x << s1) & n1) | ((x >> t1) & w1) | ((x << s2) & n2)
                | ((x >> t2) & w2) | ((x << s3) & n3) | ((x >> t3) & w3))

    def sub(self, x: int, box: bytes = _SBOX_B) -> int:
        n = self.nbytes
        return int.from_bytes(x.to_bytes(n, "little").translate(box), "little")

    def xt(self, x: int) -> int:
        return ((x & self.b7f) << 1) ^ (((x >> 7) & self.b01) * 0x1B)

    def mix(self, x: int) -> int:
        r1 = ((x >> 8) & self.lo24) | ((x << 24) & self.hi8)
        u = x ^ r1
        return self.xt(u) ^ ((u >> 16) & self.lo16) ^ ((u << 16) & self.hi16) ^ r1

    def inv_mix(self, x: int) -> int:
        v = x ^ ((x >> 16) & self.lo16) ^ ((x << 16) & self.hi16)
        return self.mix(x ^ self.xt(self.xt(v)))

    def enc(self, state: int, key: int) -> int:
        return self.mix(self.shift_rows(self.sub(state))) ^ key

    def enclast(self, state: int, key: int) -> int:
        return self.shift_rows(self.sub(state)) ^ key

    def dec(self, state: int, key: int) -> int:
        return self.inv_mix(self.inv_shift_rows(self.sub(state, _INV_SBOX_B))) ^ key

    def declast(self, state: int, key: int) -> int:
        return self.inv_shift_rows(self.sub(state, _INV_SBOX_B)) ^ key


_AES_BY_WIDTH = {w: _AES(8 * w) for w in (16, 32, 64)}


def _sub_word(w: int) -> int:
    return int.from_bytes(w.to_bytes(4, "little").translate(_SBOX_B), "little")


def aeskeygenassist(src: int, rcon: int) -> int:
    x1 = _sub_word((src >> 32) & M32)
    x3 = _sub_word((src >> 96) & M32)
    rot = lambda w: ((w >> 8) | (w << 24)) & M32  # noqa: E731
    return x1 | ((rot(x1) ^ rcon) << 32) | (x3 << 64) | ((rot(x3) ^ rcon) << 96)


# --- carry-less multiply (64 x 64 -> 128) --------------------------------------------------
def _clmul_table4(a: int):
    t2 = a << 1
    t3 = t2 ^ a
    t4 = a << 2
    t8 = a << 3
    return (0, a, t2, t3, t4, t4 ^ a, t4 ^ t2, t4 ^ t3,
            t8, t8 ^ a, t8 ^ t2, t8 ^ t3, t8 ^ t4, t8 ^ t4 ^ a, t8 ^ t4 ^ t2, t8 ^ t4 ^ t3)


def _clmul_table8(a: int) -> list[int]:
    t = [0] * 256
    for i in range(8):
        s, bit = a << i, 1 << i
        for j in range(bit):
            t[bit | j] = t[j] ^ s
    return t


_ns: dict = {}
exec("def _mul4(T, b):\n return " + " ^ ".join(
    f"(T[b >> {4 * i} & 15] << {4 * i})" if i else "T[b & 15]" for i in range(16)), _ns)
exec("def _mul8(T, bb):\n return " + " ^ ".join(
    f"(T[bb[{i}]] << {8 * i})" if i else "T[bb[0]]" for i in range(8)), _ns)
_mul4, _mul8 = _ns["_mul4"], _ns["_mul8"]
_T8: dict[int, list] = {}
_SEEN: dict[int, int] = {}
_PROMOTE = 6          # sightings before a value gets its 8-bit-window table


def clmul64(a: int, b: int) -> int:
    """Carry-less product of two 64-bit ints. A value that keeps coming back (a hash-key
    power, a reduction constant) gets a cached 8-bit-window table; others a 4-bit one."""
    t = _T8.get(b)
    if t is not None:
        return _mul8(t, a.to_bytes(8, "little"))
    t = _T8.get(a)
    if t is not None:
        return _mul8(t, b.to_bytes(8, "little"))
    if not a or not b:
        return 0
    seen = _SEEN
    if len(seen) > 65536:
        seen.clear()
    na, nb = seen.get(a, 0) + 1, seen.get(b, 0) + 1
    seen[a], seen[b] = na, nb
    if nb >= _PROMOTE or na >= _PROMOTE:
        if len(_T8) > 4096:
            _T8.clear()
        v, other = (b, a) if nb >= na else (a, b)
        t = _T8[v] = _clmul_table8(v)
        del seen[v]
        return _mul8(t, other.to_bytes(8, "little"))
    return _mul4(_clmul_table4(a), b)


# the carry-less product the fast paths above are checked against
clmul_reference = gf128.clmul


# --- GF(2^8) (GFNI) ------------------------------------------------------------------------
def _gmul(a: int, b: int) -> int:
    r = 0
    while b:
        if b & 1:
            r ^= a
        a <<= 1
        if a & 0x100:
            a ^= 0x11B
        b >>= 1
    return r


def _build_inv() -> bytes:
    inv = [0] * 256
    for a in range(1, 256):
        for b in range(1, 256):
            if _gmul(a, b) == 1:
                inv[a] = b
                break
    return bytes(inv)


_GF_INV: bytes | None = None
_MUL_ROWS: dict[int, bytes] = {}
_AFFINE: dict[tuple[int, int, bool], bytes] = {}


def _gf_inv() -> bytes:
    global _GF_INV
    if _GF_INV is None:
        # the inverse is the S-box without its affine map: inv(x) = A^-1(S(x) ^ 0x63)
        inv = bytearray(256)
        for x in range(256):
            s = SBOX[x] ^ 0x63
            # A^-1: b'_i = b_{i+2} ^ b_{i+5} ^ b_{i+7} (FIPS-197 inverse affine, sans c)
            y = 0
            for i in range(8):
                bit = ((s >> ((i + 2) % 8)) ^ (s >> ((i + 5) % 8)) ^ (s >> ((i + 7) % 8))) & 1
                y |= bit << i
            inv[x] = y
        _GF_INV = bytes(inv)
    return _GF_INV


def _mul_row(c: int) -> bytes:
    row = _MUL_ROWS.get(c)
    if row is None:
        row = _MUL_ROWS[c] = bytes(_gmul(c, x) for x in range(256))
    return row


def _affine_table(matrix: int, imm: int, inverse: bool) -> bytes:
    """The 256-byte table of x -> affine(A, x) ^ imm (SDM: bit i of the result is the parity
    of (A.byte[7 - i] AND x), XOR imm bit i), applied to inv(x) for the INV form."""
    key = (matrix, imm, inverse)
    t = _AFFINE.get(key)
    if t is not None:
        return t
    cols = []
    for j in range(8):                  # the image of input bit j
        c = 0
        for i in range(8):
            c |= ((matrix >> (8 * (7 - i) + j)) & 1) << i
        cols.append(c)
    lin = [0] * 256
    for v in range(1, 256):
        low = v & -v
        lin[v] = lin[v ^ low] ^ cols[low.bit_length() - 1]
    src = _gf_inv() if inverse else bytes(range(256))
    t = bytes(lin[src[x]] ^ imm for x in range(256))
    if len(_AFFINE) > 4096:
        _AFFINE.clear()
    _AFFINE[key] = t
    return t


def gf2p8affine(x: int, matrix: int, imm: int, nbytes: int, inverse: bool) -> int:
    rq = _rep_const(64, 8 * nbytes)
    xb = x.to_bytes(nbytes, "little")
    m0 = matrix & M64
    if matrix == m0 * rq:
        return int.from_bytes(xb.translate(_affine_table(m0, imm, inverse)), "little")
    out = b"".join(xb[i:i + 8].translate(_affine_table((matrix >> (8 * i)) & M64, imm,
                                                         inverse))
                   for i in range(0, nbytes, 8))
    return int.from_bytes(out, "little")


def gf2p8mul(a: int, b: int, nbytes: int) -> int:
    rb = _rep_const(8, 8 * nbytes)
    if b == (b & 0xFF) * rb:
        return int.from_bytes(a.to_bytes(nbytes, "little").translate(_mul_row(b & 0xFF)),
                              "little")
    if a == (a & 0xFF) * rb:
        return int.from_bytes(b.to_bytes(nbytes, "little").translate(_mul_row(a & 0xFF)),
                              "little")
    ab, bb = a.to_bytes(nbytes, "little"), b.to_bytes(nbytes, "little")
    return int.from_bytes(bytes(_mul_row(p)[q] for p, q in zip(ab, bb)), "little")


# --- shuffles ------------------------------------------------------------------------------
_Z128 = bytes(128)


def pshufb(data: int, ctrl: int, nbytes: int) -> int:
    d = data.to_bytes(nbytes, "little")
    c = ctrl.to_bytes(nbytes, "little")
    if nbytes == 16:
        return int.from_bytes(c.translate(d * 8 + _Z128), "little")
    return int.from_bytes(b"".join(c[i:i + 16].translate(d[i:i + 16] * 8 + _Z128)
                                   for i in range(0, nbytes, 16)), "little")


@lru_cache(maxsize=None)
def _pshufd_plan(imm: int, nbits: int):
    d0 = _rep(M32, 128, nbits)
    return tuple((32 * ((imm >> (2 * k)) & 3), d0, 32 * k) for k in range(4))


def pshufd(x: int, imm: int, nbits: int) -> int:
    (a0, m, _), (a1, _, b1), (a2, _, b2), (a3, _, b3) = _pshufd_plan(imm, nbits)
    return (((x >> a0) & m) | (((x >> a1) & m) << b1) | (((x >> a2) & m) << b2)
            | (((x >> a3) & m) << b3))


def _lanes(x: int, nbits: int) -> list[int]:
    return [(x >> s) & M128 for s in range(0, nbits, 128)]


def _join(lanes) -> int:
    v = 0
    for i, lane in enumerate(lanes):
        v |= lane << (128 * i)
    return v


# --- masks ---------------------------------------------------------------------------------
@lru_cache(maxsize=None)
def _expand_table(esize: int) -> tuple[int, ...]:
    emask = (1 << esize) - 1
    return tuple(sum(emask << (esize * i) for i in range(8) if k >> i & 1) for k in range(256))


def expand_mask(k: int, esize: int, nelems: int) -> int:
    """The element mask (all bits of element i set when bit i of k is) of nelems elements."""
    k &= (1 << nelems) - 1
    if k == (1 << nelems) - 1:
        return (1 << (esize * nelems)) - 1
    t = _expand_table(esize)
    v, sh = 0, 0
    while k:
        v |= t[k & 0xFF] << sh
        k >>= 8
        sh += 8 * esize
    return v


def _runs(k: int):
    """(first, count) of each run of set bits of k."""
    pos = 0
    while k:
        if k & 1:
            n = (~k & (k + 1)).bit_length() - 1
            yield pos, n
            k >>= n
            pos += n
        else:
            n = (k & -k).bit_length() - 1
            k >>= n
            pos += n


# =========================================================================================
# decoding: each instruction becomes a factory make(m) -> closure() -> next pc
_LEGACY_UNALIGNED = {"movdqu", "movups", "lddqu", "movd", "movq", "pinsrd", "pinsrq",
                     "pextrd", "pextrq", "pinsrb", "pextrb", "pinsrw", "pextrw"}
# element sizes (mask granularity, broadcast element) of the EVEX forms
_ESIZE: dict[str, tuple[int, int]] = {}
for _mn, _e in (("vmovdqu8", 8), ("vmovdqu16", 16), ("vmovdqu32", 32), ("vmovdqu64", 64),
                ("vmovdqa32", 32), ("vmovdqa64", 64),
                ("vpxord", 32), ("vpxorq", 64), ("vpandd", 32), ("vpandq", 64),
                ("vpord", 32), ("vporq", 64), ("vpandnd", 32), ("vpandnq", 64),
                ("vpternlogd", 32), ("vpternlogq", 64),
                ("vpaddb", 8), ("vpaddw", 16), ("vpaddd", 32), ("vpaddq", 64),
                ("vpsubb", 8), ("vpsubw", 16), ("vpsubd", 32), ("vpsubq", 64),
                ("vpshufb", 8), ("vpshufd", 32), ("vpalignr", 8),
                ("vpsllq", 64), ("vpsrlq", 64), ("vpslld", 32), ("vpsrld", 32),
                ("vpsrad", 32), ("vpsraq", 64), ("vpsllw", 16), ("vpsrlw", 16),
                ("vpunpcklqdq", 64), ("vpunpckhqdq", 64), ("vpunpckldq", 32),
                ("vpunpckhdq", 32),
                ("vshufi32x4", 32), ("vshufi64x2", 64),
                ("vbroadcasti32x4", 32), ("vbroadcasti64x2", 64),
                ("vbroadcasti32x8", 32), ("vbroadcasti64x4", 64),
                ("vinserti32x4", 32), ("vinserti64x2", 64), ("vinserti32x8", 32),
                ("vinserti64x4", 64),
                ("vextracti32x4", 32), ("vextracti64x2", 64), ("vextracti32x8", 32),
                ("vextracti64x4", 64),
                ("vpbroadcastb", 8), ("vpbroadcastw", 16), ("vpbroadcastd", 32),
                ("vpbroadcastq", 64), ("vpermq", 64)):
    _ESIZE[_mn] = (_e, _e)
_ESIZE["vgf2p8affineqb"] = (8, 64)
_ESIZE["vgf2p8affineinvqb"] = (8, 64)
_ESIZE["vgf2p8mulb"] = (8, 0)
# VEX-only mnemonics: no EVEX encoding, so no xmm16-31, zmm or masks
_VEX_ONLY = {"vpxor", "vpand", "vpor", "vpandn", "vmovdqa", "vmovdqu", "vbroadcasti128",
             "vinserti128", "vextracti128", "vperm2i128", "vzeroupper", "vzeroall", "vptest",
             "vaeskeygenassist", "vaesimc"}


class _D:
    """Decode-time context of one instruction."""

    def __init__(self, prog: Program, ins: Insn) -> None:
        self.prog, self.ins, self.ops = prog, ins, ins.ops

    def fail(self, why: str = "") -> UnsupportedInstruction:
        return _unsupported(self.ins, why)

    def need(self, cond: bool, why="operand form") -> None:
        """Raise UnsupportedInstruction unless cond; why: a string or a function making one
        (so the message costs nothing when the form is fine)."""
        if not cond:
            raise self.fail(why() if callable(why) else why)

    # --- addresses ------------------------------------------------------------------------
    def addr(self, op: Operand):
        """binder(m) -> () -> effective address."""
        if op.rip:
            try:
                c = (self.prog.address_of(op.sym) + op.disp) & M64 if op.sym else None
            except KeyError:
                raise ParseError(f"{self.ins.location()}: `{self.ins.text}`: undefined "
                                 f"symbol {op.sym!r}") from None
            if c is None:
                raise self.fail("rip-relative without a symbol")
            return lambda m: (lambda: c)
        b, x, s, d = op.base, op.index, op.scale, op.disp
        if b is None and x is None:
            c = d & M64
            return lambda m: (lambda: c)

        def bind(m):
            R = m.R
            if x is None:
                if d == 0:
                    return lambda: R[b]
                return lambda: (R[b] + d) & M64
            if b is None:
                return lambda: (R[x] * s + d) & M64
            if s == 1:
                return lambda: (R[b] + R[x] + d) & M64
            return lambda: (R[b] + R[x] * s + d) & M64
        return bind

    # --- GPR operands ----------------------------------------------------------------------
    def gget(self, op: Operand, bits: int):
        """binder(m) -> () -> value (unsigned, bits wide)."""
        mask = BITS_MASK[bits]
        if op.kind == "imm":
            v = op.value & mask
            return lambda m: (lambda: v)
        if op.kind == "reg":
            self.need(op.cls == "g" and op.bits == bits, lambda: f"register {op.text} is not "
                      f"{bits}-bit")
            i = op.idx
            if bits == 64:
                return lambda m: (lambda R=m.R: R[i])
            if op.high:
                return lambda m: (lambda R=m.R: (R[i] >> 8) & 0xFF)
            return lambda m: (lambda R=m.R: R[i] & mask)
        if op.kind == "mem":
            self.need(not op.mask and not op.bcst, "decorated memory operand")
            a = self.addr(op)
            n = bits // 8
            return lambda m: (lambda ga=a(m), ld=m._load: ld(ga(), n))
        raise self.fail()

    def gset(self, op: Operand, bits: int):
        """binder(m) -> (value) -> None; value already truncated to bits."""
        if op.kind == "reg":
            self.need(op.cls == "g" and op.bits == bits, lambda: f"register {op.text} is not "
                      f"{bits}-bit")
            i = op.idx
            if bits in (64, 32):
                def bind(m):
                    R = m.R

                    def put(v):
                        R[i] = v
                    return put
                return bind
            keep = M64 ^ (BITS_MASK[bits] << (8 if op.high else 0))
            sh = 8 if op.high else 0

            def bind(m):
                R = m.R

                def put(v):
                    R[i] = (R[i] & keep) | (v << sh)
                return put
            return bind
        if op.kind == "mem":
            self.need(not op.mask and not op.bcst, "decorated memory operand")
            a = self.addr(op)
            n = bits // 8

            def bind(m):
                ga, st = a(m), m._store
                return lambda v: st(ga(), n, v)
            return bind
        raise self.fail()

    # --- vector operands -------------------------------------------------------------------
    def vget(self, op: Operand, nbytes: int, align: int = 0, esize: int = 0,
             mask_src: Operand | None = None, mask_esize: int = 0):
        """binder(m) -> () -> value of nbytes. esize: the broadcast element. A memory source
        of a masked EVEX instruction reads only the enabled elements of mask_esize bits
        (mask_src: the destination carrying the mask): fault suppression."""
        if op.kind == "reg":
            self.need(op.cls == "v", lambda: f"{op.text} is not a vector register")
            self.need(op.bits // 8 == nbytes, lambda: f"{op.text} is not {nbytes} bytes wide")
            i = op.idx
            wm = WMASK.get(nbytes) or ((1 << (8 * nbytes)) - 1)
            if nbytes == 64:
                return lambda m: (lambda V=m.V: V[i])
            return lambda m: (lambda V=m.V: V[i] & wm)
        if op.kind != "mem":
            raise self.fail("vector operand expected")
        self.need(not op.mask, "a mask on a source operand")
        a = self.addr(op)
        if op.bcst:
            self.need(esize and op.bcst * esize == 8 * nbytes,
                      f"broadcast {{1to{op.bcst}}} does not fit")
            eb = esize // 8
            rep = _rep_const(esize, 8 * nbytes)
            return lambda m: (lambda ga=a(m), ld=m._load: ld(ga(), eb) * rep)
        if mask_src is not None and mask_src.mask:
            e = mask_esize or esize
            self.need(e, "masked memory source without an element size")
            k, n = mask_src.mask, 8 * nbytes // e

            def bind(m):
                ga, ldm, K = a(m), m._load_masked, m.K
                return lambda: ldm(ga(), nbytes, e, K[k] & ((1 << n) - 1), align)
            return bind
        if align:
            return lambda m: (lambda ga=a(m), ld=m._load_aligned: ld(ga(), nbytes, align))
        return lambda m: (lambda ga=a(m), ld=m._load: ld(ga(), nbytes))

    def vset(self, op: Operand, nbytes: int, legacy: bool = False, esize: int = 0,
             align: int = 0):
        """binder(m) -> (value) -> None."""
        if op.kind == "reg":
            self.need(op.cls == "v", lambda: f"{op.text} is not a vector register")
            self.need(op.bits // 8 == nbytes, lambda: f"{op.text} is not {nbytes} bytes wide")
            i = op.idx
            if op.mask:
                self.need(not legacy and esize, "write mask on an instruction without one")
                k, n, zero = op.mask, 8 * nbytes // esize, op.zero
                wm = WMASK[nbytes]

                def bind(m):
                    V, K = m.V, m.K

                    def put(v):
                        e = expand_mask(K[k], esize, n)
                        V[i] = (v & e) if zero else ((v & e) | (V[i] & (wm ^ e)))
                    return put
                return bind
            if legacy:
                keep = M512 ^ ((1 << (8 * nbytes)) - 1)

                def bind(m):
                    V = m.V

                    def put(v):
                        V[i] = (V[i] & keep) | v
                    return put
                return bind

            def bind(m):
                V = m.V

                def put(v):
                    V[i] = v
                return put
            return bind
        if op.kind != "mem":
            raise self.fail("vector destination expected")
        a = self.addr(op)
        if op.mask:
            self.need(esize and not op.zero, "masked store needs an element size, no {z}")
            k, n = op.mask, 8 * nbytes // esize

            def bind(m):
                ga, stm, K = a(m), m._store_masked, m.K
                return lambda v: stm(ga(), nbytes, esize, K[k] & ((1 << n) - 1), v, align)
            return bind
        if align:
            def bind(m):
                ga, st = a(m), m._store_aligned
                return lambda v: st(ga(), nbytes, v, align)
            return bind

        def bind(m):
            ga, st = a(m), m._store
            return lambda v: st(ga(), nbytes, v)
        return bind


def _decode(prog: Program, ins: Insn):
    d = _D(prog, ins)
    mn = ins.mnemonic
    ops = ins.ops
    if mn in _VEX_ONLY:
        for op in ops:
            if op.kind == "reg" and op.cls == "v" and (op.idx >= 16 or op.bits == 512):
                raise d.fail(f"{op.text} cannot be encoded with VEX")
            if op.mask:
                raise d.fail("VEX instructions take no mask")
    elif any(op.mask or op.bcst for op in ops) and mn not in _ESIZE:
        raise d.fail("masking/broadcast not implemented for this mnemonic")
    if not mn.startswith("v") and not mn.startswith("k"):
        for op in ops:
            if op.kind == "reg" and op.cls == "v" and (op.idx >= 16 or op.bits != 128):
                raise d.fail(f"{op.text} cannot be encoded in a legacy SSE instruction")
    h = _HANDLERS.get(mn)
    if h is None:
        raise d.fail()
    return h(d)


# =========================================================================================
# handlers: GPR and control flow
_HANDLERS: dict = {}
_SUFFIX_BITS = {"b": 8, "w": 16, "l": 32, "q": 64}


def _op_bits(d: _D, suffix_bits: int | None) -> int:
    if suffix_bits:
        return suffix_bits
    regs = [op.bits for op in d.ops if op.kind == "reg" and op.cls == "g"]
    if not regs:
        raise d.fail("operand size not given by a suffix or a register")
    return regs[-1]


def _h_simple():
    def h(d):
        return lambda m, nxt: (lambda: nxt)
    return h


_HANDLERS["endbr64"] = _h_simple()
for _n in ("nop", "nopw", "nopl"):
    _HANDLERS[_n] = _h_simple()


def _h_jmp(d: _D):
    d.need(len(d.ops) == 1 and d.ops[0].kind == "label", "direct jump to a label")
    name = d.ops[0].sym
    if name not in d.prog.code_labels:
        raise ParseError(f"{d.ins.location()}: jump to undefined label {name!r}")
    t = d.prog.code_labels[name]
    return lambda m, nxt: (lambda: t)


_HANDLERS["jmp"] = _h_jmp
_HANDLERS["jmpq"] = _h_jmp


def _h_jcc(cc):
    cond = CONDITIONS[cc]

    def h(d: _D):
        d.need(len(d.ops) == 1 and d.ops[0].kind == "label", "direct jump to a label")
        name = d.ops[0].sym
        if name not in d.prog.code_labels:
            raise ParseError(f"{d.ins.location()}: jump to undefined label {name!r}")
        t = d.prog.code_labels[name]
        if cc in ("e", "z"):
            def bind(m, nxt):
                FL = m.FL
                return lambda: t if FL[0][1] == 0 else nxt
            return bind
        if cc in ("ne", "nz"):
            def bind(m, nxt):
                FL = m.FL
                return lambda: t if FL[0][1] != 0 else nxt
            return bind

        def bind(m, nxt):
            FL = m.FL
            return lambda: t if cond(FL[0]) else nxt
        return bind
    return h


for _cc in CONDITIONS:
    _HANDLERS["j" + _cc] = _h_jcc(_cc)


def _h_call(d: _D):
    d.need(len(d.ops) == 1 and d.ops[0].kind == "label", "direct call of a label")
    name = d.ops[0].sym
    if name not in d.prog.code_labels:
        raise d.fail(f"call of {name!r}, which is not in the program")
    t = d.prog.code_labels[name]

    def bind(m, nxt):
        R, st = m.R, m._store
        ret_addr = CODE_BASE + CODE_STRIDE * nxt

        def run():
            sp = (R[RSP] - 8) & M64
            st(sp, 8, ret_addr)
            R[RSP] = sp
            return t
        return run
    return bind


_HANDLERS["call"] = _h_call
_HANDLERS["callq"] = _h_call


def _h_ret(d: _D):
    d.need(not d.ops, "ret with an immediate")
    n = len(d.prog.insns)

    def bind(m, nxt):
        R, ld = m.R, m._load

        def run():
            sp = R[RSP]
            a = ld(sp, 8)
            R[RSP] = (sp + 8) & M64
            if a == SENTINEL:
                return -1
            i, rem = divmod(a - CODE_BASE, CODE_STRIDE)
            if rem or not 0 <= i < n:
                raise ExecutionError(f"ret to {a:#x}, not a return address (stack "
                                     f"corrupted?)")
            return i
        return run
    return bind


_HANDLERS["ret"] = _h_ret
_HANDLERS["retq"] = _h_ret


def _h_push(d: _D):
    d.need(len(d.ops) == 1)
    g = d.gget(d.ops[0], 64)

    def bind(m, nxt):
        R, st, get = m.R, m._store, g(m)

        def run():
            v = get()
            sp = (R[RSP] - 8) & M64
            st(sp, 8, v)
            R[RSP] = sp
            return nxt
        return run
    return bind


def _h_pop(d: _D):
    d.need(len(d.ops) == 1 and d.ops[0].kind in ("reg", "mem"))
    s = d.gset(d.ops[0], 64)

    def bind(m, nxt):
        R, ld, put = m.R, m._load, s(m)

        def run():
            sp = R[RSP]
            v = ld(sp, 8)
            R[RSP] = (sp + 8) & M64
            put(v)
            return nxt
        return run
    return bind


for _n in ("push", "pushq"):
    _HANDLERS[_n] = _h_push
for _n in ("pop", "popq"):
    _HANDLERS[_n] = _h_pop


def _h_mov(bits):
    def h(d: _D):
        d.need(len(d.ops) == 2)
        if any(op.is_vec for op in d.ops):
            return _h_vmovdq_scalar(d, legacy=True)
        b = _op_bits(d, bits)
        src, dst = d.ops
        d.need(dst.kind in ("reg", "mem") and not (src.kind == "mem" and dst.kind == "mem"))
        if src.kind == "imm" and b == 64 and dst.kind == "mem":
            d.need(-(1 << 31) <= src.value < (1 << 31), "immediate does not fit in 32 bits")
        g, s = d.gget(src, b), d.gset(dst, b)
        if src.kind == "reg" and dst.kind == "reg" and b == 64:
            i, j = src.idx, dst.idx

            def bind(m, nxt):
                R = m.R

                def run():
                    R[j] = R[i]
                    return nxt
                return run
            return bind

        def bind(m, nxt):
            get, put = g(m), s(m)

            def run():
                put(get())
                return nxt
            return run
        return bind
    return h


for _sfx, _b in (("", None), ("b", 8), ("w", 16), ("l", 32), ("q", 64)):
    _HANDLERS["mov" + _sfx] = _h_mov(_b)
_HANDLERS["movabsq"] = _h_mov(64)
_HANDLERS["movabs"] = _h_mov(64)


def _h_movx(src_bits, dst_bits, signed):
    def h(d: _D):
        d.need(len(d.ops) == 2 and d.ops[1].kind == "reg")
        g, s = d.gget(d.ops[0], src_bits), d.gset(d.ops[1], dst_bits)
        sign, full, dm = 1 << (src_bits - 1), 1 << src_bits, BITS_MASK[dst_bits]

        def bind(m, nxt):
            get, put = g(m), s(m)
            if signed:
                def run():
                    v = get()
                    put(((v - full) if v & sign else v) & dm)
                    return nxt
            else:
                def run():
                    put(get())
                    return nxt
            return run
        return bind
    return h


for _sb, _sc in ((8, "b"), (16, "w"), (32, "l")):
    for _db, _dc in ((16, "w"), (32, "l"), (64, "q")):
        if _db > _sb:
            if _sb != 32:
                _HANDLERS[f"movz{_sc}{_dc}"] = _h_movx(_sb, _db, False)
            _HANDLERS[f"movs{_sc}{_dc}"] = _h_movx(_sb, _db, True)
_HANDLERS["movslq"] = _h_movx(32, 64, True)
_HANDLERS["movsxd"] = _h_movx(32, 64, True)


def _h_cltq(d: _D):

    def bind(m, nxt):
        R = m.R

        def run():
            v = R[RAX] & M32
            R[RAX] = (v - (1 << 32)) & M64 if v >> 31 else v
            return nxt
        return run
    return bind


_HANDLERS["cltq"] = _h_cltq
_HANDLERS["cdqe"] = _h_cltq


def _h_lea(bits):
    def h(d: _D):
        d.need(len(d.ops) == 2 and d.ops[0].kind == "mem" and d.ops[1].kind == "reg")
        b = _op_bits(d, bits)
        a, s = d.addr(d.ops[0]), d.gset(d.ops[1], b)
        mask = BITS_MASK[b]

        def bind(m, nxt):
            ga, put = a(m), s(m)

            def run():
                put(ga() & mask)
                return nxt
            return run
        return bind
    return h


_HANDLERS["lea"] = _h_lea(None)
_HANDLERS["leaq"] = _h_lea(64)
_HANDLERS["leal"] = _h_lea(32)

# --- two-operand ALU ------------------------------------------------------------------------
_ALU = {"add": (F_ADD, operator.add), "sub": (F_SUB, operator.sub),
        "and": (F_LOGIC, operator.and_), "or": (F_LOGIC, operator.or_),
        "xor": (F_LOGIC, operator.xor)}


def _h_alu(name, bits, write=True):
    kind, fn = _ALU.get(name, (None, None))

    def h(d: _D):
        d.need(len(d.ops) == 2)
        b = _op_bits(d, bits)
        src, dst = d.ops
        d.need(dst.kind in ("reg", "mem") and not (src.kind == "mem" and dst.kind == "mem"))
        mask = BITS_MASK[b]
        g1, g2 = d.gget(dst, b), d.gget(src, b)
        s = d.gset(dst, b) if write else None
        k = F_SUB if name == "cmp" else (F_LOGIC if name == "test" else kind)
        op = operator.sub if name == "cmp" else (operator.and_ if name == "test" else fn)
        if name in ("adc", "sbb"):
            k = F_ADD if name == "adc" else F_SUB

            def bind(m, nxt):
                ga, gb, put, FL = g1(m), g2(m), s(m), m.FL

                def run():
                    a, c = ga(), gb()
                    cin = _cf(FL[0])
                    r = ((a + c + cin) if k == F_ADD else (a - c - cin)) & mask
                    put(r)
                    FL[0] = (k, r, a, c, b, cin)
                    return nxt
                return run
            return bind
        # register destination, 64-bit: the common case, inline
        if dst.kind == "reg" and b == 64 and src.kind in ("reg", "imm"):
            i = dst.idx
            if src.kind == "imm":
                c = src.value & mask

                def bind(m, nxt):
                    R, FL = m.R, m.FL

                    def run():
                        a = R[i]
                        r = op(a, c) & mask
                        if write:
                            R[i] = r
                        FL[0] = (k, r, a, c, 64, 0)
                        return nxt
                    return run
                return bind
            j = src.idx

            def bind(m, nxt):
                R, FL = m.R, m.FL

                def run():
                    a, c = R[i], R[j]
                    r = op(a, c) & mask
                    if write:
                        R[i] = r
                    FL[0] = (k, r, a, c, 64, 0)
                    return nxt
                return run
            return bind

        def bind(m, nxt):
            ga, gb, FL = g1(m), g2(m), m.FL
            put = s(m) if write else None

            def run():
                a, c = ga(), gb()
                r = op(a, c) & mask
                if put is not None:
                    put(r)
                FL[0] = (k, r, a, c, b, 0)
                return nxt
            return run
        return bind
    return h


for _name in ("add", "sub", "and", "or", "xor", "adc", "sbb"):
    _HANDLERS[_name] = _h_alu(_name, None)
    for _sfx, _b in _SUFFIX_BITS.items():
        _HANDLERS[_name + _sfx] = _h_alu(_name, _b)
for _name in ("cmp", "test"):
    _HANDLERS[_name] = _h_alu(_name, None, write=False)
    for _sfx, _b in _SUFFIX_BITS.items():
        _HANDLERS[_name + _sfx] = _h_alu(_name, _b, write=False)


def _h_unary(name, bits):
    def h(d: _D):
        d.need(len(d.ops) == 1 and d.ops[0].kind in ("reg", "mem"))
        b = _op_bits(d, bits)
        mask = BITS_MASK[b]
        g, s = d.gget(d.ops[0], b), d.gset(d.ops[0], b)

        def bind(m, nxt):
            get, put, FL = g(m), s(m), m.FL
            if name == "inc":
                def run():
                    a = get()
                    r = (a + 1) & mask
                    put(r)
                    FL[0] = (F_INC, r, a, 1, b, _cf(FL[0]))
                    return nxt
            elif name == "dec":
                def run():
                    a = get()
                    r = (a - 1) & mask
                    put(r)
                    FL[0] = (F_DEC, r, a, 1, b, _cf(FL[0]))
                    return nxt
            elif name == "neg":
                def run():
                    a = get()
                    r = (-a) & mask
                    put(r)
                    FL[0] = (F_SUB, r, 0, a, b, 0)
                    return nxt
            elif name == "not":
                def run():
                    put(get() ^ mask)
                    return nxt
            elif name == "bswap":
                n = b // 8

                def run():
                    put(int.from_bytes(get().to_bytes(n, "little"), "big"))
                    return nxt
            else:
                raise AssertionError(name)
            return run
        return bind
    return h


for _name in ("inc", "dec", "neg", "not"):
    _HANDLERS[_name] = _h_unary(_name, None)
    for _sfx, _b in _SUFFIX_BITS.items():
        _HANDLERS[_name + _sfx] = _h_unary(_name, _b)
_HANDLERS["bswap"] = _h_unary("bswap", None)
_HANDLERS["bswapl"] = _h_unary("bswap", 32)
_HANDLERS["bswapq"] = _h_unary("bswap", 64)


def _h_shift(name, bits):
    def h(d: _D):
        ops = d.ops
        d.need(len(ops) in (1, 2))
        dst = ops[-1]
        d.need(dst.kind in ("reg", "mem"))
        b = _op_bits(d, bits) if bits else dst.bits
        if len(ops) == 2:
            cnt = ops[0]
            d.need(cnt.kind == "imm" or (cnt.kind == "reg" and cnt.cls == "g"
                                         and cnt.idx == RCX and cnt.bits == 8),
                   "shift count must be an immediate or %cl")
        mask = BITS_MASK[b]
        cmask = 63 if b == 64 else 31
        g, s = d.gget(dst, b), d.gset(dst, b)
        if len(ops) == 1:
            fixed = 1
        elif ops[0].kind == "imm":
            fixed = ops[0].value & cmask
        else:
            fixed = None
        sign = 1 << (b - 1)

        def bind(m, nxt):
            get, put, FL, R = g(m), s(m), m.FL, m.R

            def run():
                c = fixed if fixed is not None else R[RCX] & cmask
                if c == 0:
                    if b == 32:
                        put(get())          # a 32-bit destination is still zero-extended
                    return nxt
                a = get()
                if name == "shl":
                    r = (a << c) & mask
                    FL[0] = (F_SHL, r, a, c, b, 0)
                elif name == "shr":
                    r = a >> c
                    FL[0] = (F_SHR, r, a, c, b, 0)
                elif name == "sar":
                    r = (((a - (sign << 1)) if a & sign else a) >> c) & mask
                    FL[0] = (F_SAR, r, a, c, b, 0)
                else:
                    cc = c % b
                    if name == "rol":
                        r = ((a << cc) | (a >> (b - cc))) & mask
                        cf = r & 1
                        of = ((r >> (b - 1)) & 1) ^ cf
                    else:
                        r = ((a >> cc) | (a << (b - cc))) & mask
                        cf = (r >> (b - 1)) & 1
                        of = cf ^ ((r >> (b - 2)) & 1)
                    p = FL[0]
                    FL[0] = (F_X, p[1], cf, of if c == 1 else _of(p), p[4], cf)
                put(r)
                return nxt
            return run
        return bind
    return h


for _name in ("shl", "shr", "sar", "rol", "ror", "sal"):
    base = "shl" if _name == "sal" else _name
    _HANDLERS[_name] = _h_shift(base, None)
    for _sfx, _b in _SUFFIX_BITS.items():
        _HANDLERS[_name + _sfx] = _h_shift(base, _b)


def _h_cmov(cc, bits):
    cond = CONDITIONS[cc]

    def h(d: _D):
        d.need(len(d.ops) == 2 and d.ops[1].kind == "reg")
        b = _op_bits(d, bits)
        d.need(b in (16, 32, 64), "cmov of 8 bits")
        g, s, gd = d.gget(d.ops[0], b), d.gset(d.ops[1], b), d.gget(d.ops[1], b)

        def bind(m, nxt):
            get, put, getd, FL = g(m), s(m), gd(m), m.FL

            def run():
                v = get()           # the source is read (and may fault) either way
                put(v if cond(FL[0]) else getd())    # 32-bit: upper half zeroed either way
                return nxt
            return run
        return bind
    return h


def _h_setcc(cc):
    cond = CONDITIONS[cc]

    def h(d: _D):
        d.need(len(d.ops) == 1)
        s = d.gset(d.ops[0], 8)

        def bind(m, nxt):
            put, FL = s(m), m.FL

            def run():
                put(1 if cond(FL[0]) else 0)
                return nxt
            return run
        return bind
    return h


for _cc in CONDITIONS:
    _HANDLERS["cmov" + _cc] = _h_cmov(_cc, None)
    for _sfx in ("w", "l", "q"):
        _HANDLERS["cmov" + _cc + _sfx] = _h_cmov(_cc, _SUFFIX_BITS[_sfx])
    _HANDLERS["set" + _cc] = _h_setcc(_cc)
    _HANDLERS["set" + _cc + "b"] = _h_setcc(_cc)


def _h_imul(bits):
    def h(d: _D):
        ops = d.ops
        d.need(len(ops) in (2, 3) and ops[-1].kind == "reg", "imul: 2- or 3-operand form")
        b = _op_bits(d, bits)
        mask, sign = BITS_MASK[b], 1 << (b - 1)
        if len(ops) == 2:
            g1, g2 = d.gget(ops[1], b), d.gget(ops[0], b)
        else:
            d.need(ops[0].kind == "imm")
            g1, g2 = d.gget(ops[1], b), d.gget(ops[0], b)
        s = d.gset(ops[-1], b)

        def sx(v):
            return v - (sign << 1) if v & sign else v

        def bind(m, nxt):
            ga, gb, put, FL = g1(m), g2(m), s(m), m.FL

            def run():
                p = sx(ga()) * sx(gb())
                r = p & mask
                ovf = 0 if sx(r) == p else 1
                put(r)
                FL[0] = _flags_x(r, b, ovf, ovf)
                return nxt
            return run
        return bind
    return h


_HANDLERS["imul"] = _h_imul(None)
for _sfx in ("w", "l", "q"):
    _HANDLERS["imul" + _sfx] = _h_imul(_SUFFIX_BITS[_sfx])


def _h_xchg(bits):
    def h(d: _D):
        d.need(len(d.ops) == 2)
        b = _op_bits(d, bits)
        a0, a1 = d.ops
        g0, g1, s0, s1 = d.gget(a0, b), d.gget(a1, b), d.gset(a0, b), d.gset(a1, b)

        def bind(m, nxt):
            x0, x1, p0, p1 = g0(m), g1(m), s0(m), s1(m)

            def run():
                v0, v1 = x0(), x1()
                p0(v1)
                p1(v0)
                return nxt
            return run
        return bind
    return h


_HANDLERS["xchg"] = _h_xchg(None)
for _sfx, _b in _SUFFIX_BITS.items():
    _HANDLERS["xchg" + _sfx] = _h_xchg(_b)


def _h_bt(bits):
    def h(d: _D):
        d.need(len(d.ops) == 2 and d.ops[1].kind == "reg" and d.ops[0].kind == "imm",
               "bt $imm, %reg only")
        b = _op_bits(d, bits)
        g = d.gget(d.ops[1], b)
        bit = d.ops[0].value % b

        def bind(m, nxt):
            get, FL = g(m), m.FL

            def run():
                cf = (get() >> bit) & 1
                p = FL[0]
                FL[0] = (F_X, p[1], cf, _of(p), p[4], cf)
                return nxt
            return run
        return bind
    return h


_HANDLERS["bt"] = _h_bt(None)
for _sfx in ("w", "l", "q"):
    _HANDLERS["bt" + _sfx] = _h_bt(_SUFFIX_BITS[_sfx])


def _h_movbe(bits):
    def h(d: _D):
        d.need(len(d.ops) == 2 and {d.ops[0].kind, d.ops[1].kind} == {"reg", "mem"},
               "movbe moves between a register and memory")
        b = _op_bits(d, bits)
        g, s = d.gget(d.ops[0], b), d.gset(d.ops[1], b)
        n = b // 8

        def bind(m, nxt):
            get, put = g(m), s(m)

            def run():
                put(int.from_bytes(get().to_bytes(n, "little"), "big"))
                return nxt
            return run
        return bind
    return h


_HANDLERS["movbe"] = _h_movbe(None)
for _sfx in ("w", "l", "q"):
    _HANDLERS["movbe" + _sfx] = _h_movbe(_SUFFIX_BITS[_sfx])


def _h_bmi(name, bits):
    """bzhi, shlx, shrx, sarx (count register first in AT&T), rorx (imm), andn."""
    def h(d: _D):
        ops = d.ops
        d.need(len(ops) == 3 and ops[2].kind == "reg" and ops[1].kind in ("reg", "mem"))
        b = _op_bits(d, bits)
        d.need(b in (32, 64), "BMI forms are 32 or 64 bits")
        mask, sign = BITS_MASK[b], 1 << (b - 1)
        if name == "rorx":
            d.need(ops[0].kind == "imm")
        else:
            d.need(ops[0].kind == "reg" if name != "andn" else ops[0].kind in ("reg", "mem"))
        g0 = d.gget(ops[0], b) if ops[0].kind != "imm" else None
        imm = ops[0].value if ops[0].kind == "imm" else 0
        g1, s = d.gget(ops[1], b), d.gset(ops[2], b)
        cm = b - 1

        def bind(m, nxt):
            c0 = g0(m) if g0 else None
            src, put, FL = g1(m), s(m), m.FL
            if name == "bzhi":
                def run():
                    n = c0() & 0xFF
                    v = src()
                    if n < b:
                        r, cf = v & ((1 << n) - 1), 0
                    else:
                        r, cf = v, 1
                    put(r)
                    FL[0] = _flags_x(r, b, cf, 0)
                    return nxt
            elif name == "shlx":
                def run():
                    put((src() << (c0() & cm)) & mask)
                    return nxt
            elif name == "shrx":
                def run():
                    put(src() >> (c0() & cm))
                    return nxt
            elif name == "sarx":
                def run():
                    v = src()
                    put((((v - (sign << 1)) if v & sign else v) >> (c0() & cm)) & mask)
                    return nxt
            elif name == "rorx":
                c = imm % b

                def run():
                    v = src()
                    put(((v >> c) | (v << (b - c))) & mask)
                    return nxt
            elif name == "andn":
                # AT&T andn src2(r/m), src1, dest: dest = ~src1 & src2
                def run():
                    r = (c0() & ~src()) & mask
                    put(r)
                    FL[0] = (F_LOGIC, r, 0, 0, b, 0)
                    return nxt
            else:
                raise AssertionError(name)
            return run
        return bind
    return h


for _name in ("bzhi", "shlx", "shrx", "sarx", "rorx", "andn"):
    _HANDLERS[_name] = _h_bmi(_name, None)
    for _sfx in ("l", "q"):
        _HANDLERS[_name + _sfx] = _h_bmi(_name, _SUFFIX_BITS[_sfx])


# =========================================================================================
# handlers: vectors
def _vwidth(d: _D, op: Operand) -> int:
    d.need(op.kind == "reg" and op.cls == "v", lambda: f"{op.text}: vector register expected")
    return op.bits // 8


def _h_vmovdq_scalar(d: _D, legacy: bool):
    """movd/movq/vmovd/vmovq between GPRs, memory and xmm."""
    mn = d.ins.mnemonic
    n = 8 if mn.endswith("q") else 4
    src, dst = d.ops
    if dst.is_vec:
        d.need(dst.bits == 128, "movd/movq write an xmm register")
        if src.is_vec:
            d.need(n == 8, "movd between xmm registers")
            g = d.vget(src, 16)
            lowmask = M64
        elif src.kind == "mem":
            g = d.gget(src, 8 * n)
            lowmask = BITS_MASK[8 * n]
        else:
            d.need(src.is_gpr and src.bits == 8 * n, lambda: f"{src.text}: {8 * n}-bit GPR expected")
            g = d.gget(src, 8 * n)
            lowmask = BITS_MASK[8 * n]
        i = dst.idx
        keep = (M512 ^ M128) if legacy else 0

        def bind(m, nxt):
            get, V = g(m), m.V

            def run():
                V[i] = (V[i] & keep) | (get() & lowmask)
                return nxt
            return run
        return bind
    d.need(src.is_vec and src.bits == 128, "movd/movq read an xmm register")
    g = d.vget(src, 16)
    s = d.gset(dst, 8 * n)
    lowmask = BITS_MASK[8 * n]

    def bind(m, nxt):
        get, put = g(m), s(m)

        def run():
            put(get() & lowmask)
            return nxt
        return run
    return bind


def _h_movd_q(legacy):
    def h(d: _D):
        d.need(len(d.ops) == 2)
        if d.ins.mnemonic in ("movq",) and not any(op.is_vec for op in d.ops):
            return _h_mov(64)(d)
        return _h_vmovdq_scalar(d, legacy)
    return h


_HANDLERS["movd"] = _h_movd_q(True)
_HANDLERS["movq"] = _h_movd_q(True)
_HANDLERS["vmovd"] = _h_movd_q(False)
_HANDLERS["vmovq"] = _h_movd_q(False)


def _h_vmov(aligned: bool, legacy: bool):
    """Whole-register moves: movdqa/movdqu/vmovdqa/vmovdqu/vmovdqa32/64/vmovdqu8..64."""
    def h(d: _D):
        d.need(len(d.ops) == 2)
        src, dst = d.ops
        esize = _ESIZE.get(d.ins.mnemonic, (0, 0))[0]
        if src.is_vec:
            W = _vwidth(d, src)
        else:
            W = _vwidth(d, dst)
        if legacy:
            d.need(W == 16, "legacy SSE moves are 128-bit")
        align = W if aligned else 0
        d.need(not (src.kind == "mem" and dst.kind == "mem"))
        g = d.vget(src, W, align, 0, mask_src=dst if dst.mask else None, mask_esize=esize)
        s = d.vset(dst, W, legacy, esize, align)
        if src.is_vec and dst.is_vec and not dst.mask:
            i, j, wm = src.idx, dst.idx, WMASK[W]
            if legacy:
                keep = M512 ^ M128

                def bind(m, nxt):
                    V = m.V

                    def run():
                        V[j] = (V[j] & keep) | (V[i] & M128)
                        return nxt
                    return run
                return bind

            def bind(m, nxt):
                V = m.V

                def run():
                    V[j] = V[i] & wm
                    return nxt
                return run
            return bind

        def bind(m, nxt):
            get, put = g(m), s(m)

            def run():
                put(get())
                return nxt
            return run
        return bind
    return h


for _n, _al, _lg in (("movdqa", True, True), ("movdqu", False, True), ("movaps", True, True),
                     ("movups", False, True), ("vmovdqa", True, False),
                     ("vmovdqu", False, False), ("vmovaps", True, False),
                     ("vmovups", False, False), ("vmovdqa32", True, False),
                     ("vmovdqa64", True, False), ("vmovdqu8", False, False),
                     ("vmovdqu16", False, False), ("vmovdqu32", False, False),
                     ("vmovdqu64", False, False)):
    _HANDLERS[_n] = _h_vmov(_al, _lg)


# --- element-wise arithmetic ---------------------------------------------------------------
def _swar_add(esize, nbits):
    h = _high_bits(esize, nbits)
    lo = ((1 << nbits) - 1) ^ h
    return lambda a, b: ((a & lo) + (b & lo)) ^ ((a ^ b) & h)


def _swar_sub(esize, nbits):
    h = _high_bits(esize, nbits)
    lo = ((1 << nbits) - 1) ^ h
    return lambda a, b: ((a | h) - (b & lo)) ^ ((a ^ ~b) & h)


@lru_cache(maxsize=None)
def _shift_fn(kind: str, esize: int, nbits: int, c: int):
    """x -> every esize-bit element of x shifted by c (sll, srl, sra; counts past the
    element width give 0, or the sign, as the SDM says)."""
    if kind == "sll":
        if c >= esize:
            return lambda x: 0
        keep = ((1 << nbits) - 1) ^ _rep((1 << c) - 1, esize, nbits)
        return lambda x: (x << c) & keep
    if kind == "srl":
        if c >= esize:
            return lambda x: 0
        low = _rep((1 << (esize - c)) - 1, esize, nbits)
        return lambda x: (x >> c) & low
    c = min(c, esize - 1)
    ones = _rep(1, esize, nbits)
    low = _rep((1 << (esize - c)) - 1, esize, nbits)
    fill = ((1 << c) - 1) << (esize - c)
    return lambda x: ((x >> c) & low) | (((x >> (esize - 1)) & ones) * fill)


@lru_cache(maxsize=None)
def _bytes_shift_fn(kind: str, nbits: int, n: int):
    """pslldq/psrldq: every 128-bit lane shifted by n bytes."""
    if n > 15:
        return lambda x: 0
    if kind == "l":
        keep = _lane_mask(nbits, tuple(i >= n for i in range(16)))
        return lambda x: (x << (8 * n)) & keep
    keep = _lane_mask(nbits, tuple(i < 16 - n for i in range(16)))
    return lambda x: (x >> (8 * n)) & keep


def _unpck(kind, esize, nbits):
    """punpckl/h: interleave the low (l) or high (h) halves of each lane of a and b."""
    if esize == 64:
        q0 = _rep(M64, 128, nbits)
        q1 = q0 << 64
        if kind == "l":
            return lambda a, b: (a & q0) | ((b & q0) << 64)
        return lambda a, b: ((a >> 64) & q0) | (b & q1)

    def f(a, b):
        out = []
        per = 64 // esize
        em = (1 << esize) - 1
        for la, lb in zip(_lanes(a, nbits), _lanes(b, nbits)):
            if kind == "h":
                la, lb = la >> 64, lb >> 64
            v = 0
            for i in range(per):
                v |= ((la >> (esize * i)) & em) << (2 * esize * i)
                v |= ((lb >> (esize * i)) & em) << (2 * esize * i + esize)
            out.append(v)
        return _join(out)
    return f


@lru_cache(maxsize=None)
def _ternlog_fn(imm: int):
    two = ["0", "~(b | c)", "(c & ~b)", "~b", "(b & ~c)", "~c", "(b ^ c)", "~(b & c)",
           "(b & c)", "~(b ^ c)", "c", "(c | ~b)", "b", "(b | ~c)", "(b | c)", "-1"]
    f0, f1 = imm & 15, imm >> 4
    if f0 == f1:
        expr = two[f0]
    elif f1 == f0 ^ 15:
        expr = f"(a ^ {two[f0]})"
    elif f0 == 0:
        expr = f"(a & {two[f1]})"
    elif f1 == 0:
        expr = f"(~a & {two[f0]})"
    else:
        expr = f"((a & {two[f1]}) | (~a & {two[f0]}))"
    return eval(f"lambda a, b, c, M: ({expr}) & M")


def _vec_binary(fn_of_width, *, imm=False, src2_bytes=None, legacy_align=True):
    """dest = fn(src1, src2[, imm]) in Intel order. AT&T forms:
    VEX/EVEX  [imm,] src2, src1, dest      legacy  [imm,] src, dest (src1 = dest)."""
    def h(d: _D):
        mn = d.ins.mnemonic
        legacy = not mn.startswith("v")
        ops = d.ops
        want = (2 if legacy else 3) + (1 if imm else 0)
        d.need(len(ops) == want, lambda: f"{want} operands expected")
        k = ops[0].value if imm else None
        if imm:
            d.need(ops[0].kind == "imm")
            ops = ops[1:]
        if legacy:
            src2, src1, dst = ops[0], ops[1], ops[1]
        else:
            src2, src1, dst = ops
        W = _vwidth(d, dst)
        if legacy:
            d.need(W == 16, "legacy SSE is 128-bit")
        mesize, besize = _ESIZE.get(mn, (0, 0))
        W2 = src2_bytes(W) if src2_bytes else W
        align = 16 if (legacy and legacy_align and mn not in _LEGACY_UNALIGNED) else 0
        g1 = d.vget(src1, W)
        g2 = d.vget(src2, W2, align, besize, mask_src=dst if (dst.mask and W2 == W) else None,
                    mask_esize=mesize)
        s = d.vset(dst, W, legacy, mesize)
        fn = fn_of_width(W, k) if imm else fn_of_width(W)
        if src1.is_vec and src2.is_vec and not dst.mask and not legacy and W2 == W:
            i, j, o, wm = src1.idx, src2.idx, dst.idx, WMASK[W]

            def bind(m, nxt):
                V = m.V

                def run():
                    V[o] = fn(V[i] & wm, V[j] & wm)
                    return nxt
                return run
            return bind

        def bind(m, nxt):
            ga, gb, put = g1(m), g2(m), s(m)

            def run():
                put(fn(ga(), gb()))
                return nxt
            return run
        return bind
    return h


def _h_bitwise(opname):
    """pxor/pand/por/pandn families, with the all-register case inlined."""
    def h(d: _D):
        mn = d.ins.mnemonic
        legacy = not mn.startswith("v")
        ops = d.ops
        d.need(len(ops) == (2 if legacy else 3))
        if legacy:
            src2, src1, dst = ops[0], ops[1], ops[1]
        else:
            src2, src1, dst = ops
        W = _vwidth(d, dst)
        if legacy:
            d.need(W == 16, "legacy SSE is 128-bit")
        wm = WMASK[W]
        if src1.is_vec and src2.is_vec and not dst.mask and not legacy:
            i, j, o = src1.idx, src2.idx, dst.idx
            d.vget(src1, W)
            d.vget(src2, W)

            def bind(m, nxt):
                V = m.V
                if opname == "xor":
                    def run():
                        V[o] = (V[i] ^ V[j]) & wm
                        return nxt
                elif opname == "and":
                    def run():
                        V[o] = V[i] & V[j] & wm
                        return nxt
                elif opname == "or":
                    def run():
                        V[o] = (V[i] | V[j]) & wm
                        return nxt
                else:
                    def run():
                        V[o] = ~V[i] & V[j] & wm
                        return nxt
                return run
            return bind
        fn = {"xor": operator.xor, "and": operator.and_, "or": operator.or_,
              "andn": lambda a, b: ~a & b & wm}[opname]
        return _vec_binary(lambda W: fn)(d)
    return h


for _op in ("xor", "and", "or", "andn"):
    for _n in (f"p{_op}", f"vp{_op}", f"vp{_op}d", f"vp{_op}q"):
        _HANDLERS[_n] = _h_bitwise(_op)
_HANDLERS["xorps"] = _h_bitwise("xor")
_HANDLERS["vxorps"] = _h_bitwise("xor")

for _e, _c in ((8, "b"), (16, "w"), (32, "d"), (64, "q")):
    for _pre in ("p", "vp"):
        _HANDLERS[f"{_pre}add{_c}"] = _vec_binary(lambda W, e=_e: _swar_add(e, 8 * W))
        _HANDLERS[f"{_pre}sub{_c}"] = _vec_binary(lambda W, e=_e: _swar_sub(e, 8 * W))

for _pre in ("p", "vp"):
    _HANDLERS[f"{_pre}shufb"] = _vec_binary(lambda W: (lambda a, b: pshufb(a, b, W)))
    _HANDLERS[f"{_pre}unpcklqdq"] = _vec_binary(lambda W: _unpck("l", 64, 8 * W))
    _HANDLERS[f"{_pre}unpckhqdq"] = _vec_binary(lambda W: _unpck("h", 64, 8 * W))
    _HANDLERS[f"{_pre}unpckldq"] = _vec_binary(lambda W: _unpck("l", 32, 8 * W))
    _HANDLERS[f"{_pre}unpckhdq"] = _vec_binary(lambda W: _unpck("h", 32, 8 * W))
    _HANDLERS[f"{_pre}unpcklbw"] = _vec_binary(lambda W: _unpck("l", 8, 8 * W))
    _HANDLERS[f"{_pre}unpckhbw"] = _vec_binary(lambda W: _unpck("h", 8, 8 * W))


def _palignr(W, k):
    def f(a, b):       # Intel: dest = (src1:src2) >> 8*imm per lane
        out = []
        for la, lb in zip(_lanes(a, 8 * W), _lanes(b, 8 * W)):
            out.append((((la << 128) | lb) >> (8 * k)) & M128 if k < 32 else 0)
        return _join(out)
    return f


def _cmpeq_bits(a: int, b: int, esize: int, nbits: int) -> int:
    """Bit i set when element i of a and b are equal."""
    x, em, k = a ^ b, (1 << esize) - 1, 0
    for i in range(nbits // esize):
        if not (x >> (esize * i)) & em:
            k |= 1 << i
    return k


def _h_pcmpeq(esize):
    vector_form = _vec_binary(
        lambda W: (lambda a, b: expand_mask(_cmpeq_bits(a, b, esize, 8 * W), esize,
                                            8 * W // esize)))

    def h(d: _D):
        if not (d.ops and d.ops[-1].is_k):
            return vector_form(d)
        # EVEX: vpcmpeqX src2, src1, %kN[{%kM}]
        d.need(len(d.ops) == 3 and not d.ops[-1].zero)
        src2, src1, dst = d.ops
        W = _vwidth(d, src1)
        g1, g2 = d.vget(src1, W), d.vget(src2, W, 0, esize)
        o, km = dst.idx, dst.mask

        def bind(m, nxt):
            a, b, K = g1(m), g2(m), m.K

            def run():
                k = _cmpeq_bits(a(), b(), esize, 8 * W)
                K[o] = k & K[km] if km else k
                return nxt
            return run
        return bind
    return h


for _e, _c in ((8, "b"), (16, "w"), (32, "d"), (64, "q")):
    _HANDLERS[f"pcmpeq{_c}"] = _h_pcmpeq(_e)
    _HANDLERS[f"vpcmpeq{_c}"] = _h_pcmpeq(_e)
    _ESIZE.setdefault(f"vpcmpeq{_c}", (_e, _e))

_HANDLERS["palignr"] = _vec_binary(_palignr, imm=True)
_HANDLERS["vpalignr"] = _vec_binary(_palignr, imm=True)


# --- AES -----------------------------------------------------------------------------------
def _aes_fn(which):
    return lambda W: getattr(_AES_BY_WIDTH[W], which)


for _which in ("enc", "enclast", "dec", "declast"):
    _HANDLERS[f"aes{_which}"] = _vec_binary(_aes_fn(_which))
    _HANDLERS[f"vaes{_which}"] = _vec_binary(_aes_fn(_which))


def _vec_unary(fn_of_width, *, imm=False, legacy_inplace=False, src_bytes=None,
               dst_bytes=None, aligned_legacy=True):
    """dest = fn(src[, imm]). AT&T: [imm,] src, dest; legacy in-place shifts: imm, dest."""
    def h(d: _D):
        mn = d.ins.mnemonic
        legacy = not mn.startswith("v")
        ops = d.ops
        k = None
        if imm:
            d.need(ops and ops[0].kind == "imm", "immediate expected first")
            k = ops[0].value
            ops = ops[1:]
        if legacy_inplace and legacy:
            d.need(len(ops) == 1)
            src, dst = ops[0], ops[0]
        else:
            d.need(len(ops) == 2)
            src, dst = ops
        if dst.is_vec:
            W = _vwidth(d, dst)
            Wd = W
            Ws = src_bytes(W) if src_bytes else W
        else:
            W = _vwidth(d, src)
            Ws = W
            Wd = dst_bytes(W) if dst_bytes else W
        if legacy:
            d.need(W == 16, "legacy SSE is 128-bit")
        mesize, besize = _ESIZE.get(mn, (0, 0))
        align = 16 if (legacy and aligned_legacy and mn not in _LEGACY_UNALIGNED) else 0
        g = d.vget(src, Ws, align, besize, mask_src=dst if (dst.mask and Ws == Wd) else None,
                   mask_esize=mesize)
        s = d.vset(dst, Wd, legacy, mesize)
        fn = fn_of_width(W, k) if imm else fn_of_width(W)

        def bind(m, nxt):
            get, put = g(m), s(m)

            def run():
                put(fn(get()))
                return nxt
            return run
        return bind
    return h


def _h_vshift(kind, esize):
    imm_form = _vec_unary(lambda W, k: _shift_fn(kind, esize, 8 * W, min(k & 0xFF, esize)),
                          imm=True, legacy_inplace=True)

    def count_fn(W):
        return lambda x, c: _shift_fn(kind, esize, 8 * W, min(c & M64, esize))(x)
    reg_form = _vec_binary(count_fn, src2_bytes=lambda W: 16)

    def h(d: _D):
        if d.ops and d.ops[0].kind == "imm":
            return imm_form(d)
        return reg_form(d)
    return h


for _kind, _e, _c in (("sll", 16, "w"), ("sll", 32, "d"), ("sll", 64, "q"),
                      ("srl", 16, "w"), ("srl", 32, "d"), ("srl", 64, "q"),
                      ("sra", 16, "w"), ("sra", 32, "d"), ("sra", 64, "q")):
    _HANDLERS[f"p{_kind}{_c}"] = _h_vshift(_kind, _e)
    _HANDLERS[f"vp{_kind}{_c}"] = _h_vshift(_kind, _e)
for _kind in ("l", "r"):
    _HANDLERS[f"ps{_kind}ldq"] = _vec_unary(
        lambda W, k, kind=_kind: _bytes_shift_fn(kind, 8 * W, k & 0xFF),
        imm=True, legacy_inplace=True)
    _HANDLERS[f"vps{_kind}ldq"] = _HANDLERS[f"ps{_kind}ldq"]

_HANDLERS["pshufd"] = _vec_unary(lambda W, k: (lambda x: pshufd(x, k & 0xFF, 8 * W)), imm=True)
_HANDLERS["vpshufd"] = _HANDLERS["pshufd"]
_HANDLERS["aeskeygenassist"] = _vec_unary(lambda W, k: (lambda x: aeskeygenassist(x, k & 0xFF)),
                                          imm=True)
_HANDLERS["vaeskeygenassist"] = _HANDLERS["aeskeygenassist"]
_HANDLERS["aesimc"] = _vec_unary(lambda W: _AES_BY_WIDTH[16].inv_mix)
_HANDLERS["vaesimc"] = _HANDLERS["aesimc"]


def _vpermq(W, k):
    def f(x):
        v = 0
        for i in range(W // 8):
            sel = (k >> (2 * (i % 4))) & 3 if W == 32 else (4 * (i // 4) + ((k >> (2 * (i % 4))) & 3))
            v |= ((x >> (64 * sel)) & M64) << (64 * i)
        return v
    return f


_HANDLERS["vpermq"] = _vec_unary(_vpermq, imm=True)


# --- carry-less multiply, GFNI, ternary logic -----------------------------------------------
def _clmul_fn(W, k):
    s1, s2 = 64 * (k & 1), 64 * ((k >> 4) & 1)
    if W == 16:
        return lambda a, b: clmul64((a >> s1) & M64, (b >> s2) & M64)

    def f(a, b):
        v = 0
        for sh in range(0, 8 * W, 128):
            v |= clmul64((a >> (sh + s1)) & M64, (b >> (sh + s2)) & M64) << sh
        return v
    return f


_HANDLERS["pclmulqdq"] = _vec_binary(_clmul_fn, imm=True)
_HANDLERS["vpclmulqdq"] = _vec_binary(_clmul_fn, imm=True)
for _n, _k in (("pclmullqlqdq", 0x00), ("pclmulhqlqdq", 0x01), ("pclmullqhqdq", 0x10),
               ("pclmulhqhqdq", 0x11)):
    _HANDLERS[_n] = _vec_binary(lambda W, k=_k: _clmul_fn(W, k))
    _HANDLERS["v" + _n] = _HANDLERS[_n]

for _pre in ("", "v"):
    _HANDLERS[f"{_pre}gf2p8affineqb"] = _vec_binary(
        lambda W, k: (lambda x, a: gf2p8affine(x, a, k & 0xFF, W, False)), imm=True)
    _HANDLERS[f"{_pre}gf2p8affineinvqb"] = _vec_binary(
        lambda W, k: (lambda x, a: gf2p8affine(x, a, k & 0xFF, W, True)), imm=True)
    _HANDLERS[f"{_pre}gf2p8mulb"] = _vec_binary(lambda W: (lambda a, b: gf2p8mul(a, b, W)))


def _h_ternlog(d: _D):
    ops = d.ops
    d.need(len(ops) == 4 and ops[0].kind == "imm")
    c_op, b_op, a_op = ops[1], ops[2], ops[3]
    W = _vwidth(d, a_op)
    mesize, besize = _ESIZE[d.ins.mnemonic]
    fn = _ternlog_fn(ops[0].value & 0xFF)
    ga, gb = d.vget(a_op, W), d.vget(b_op, W)
    gc = d.vget(c_op, W, 0, besize, mask_src=a_op if a_op.mask else None, mask_esize=mesize)
    s = d.vset(a_op, W, False, mesize)
    wm = WMASK[W]
    if b_op.is_vec and c_op.is_vec and not a_op.mask:
        i, j, o = b_op.idx, c_op.idx, a_op.idx

        def bind(m, nxt):
            V = m.V

            def run():
                V[o] = fn(V[o] & wm, V[i] & wm, V[j] & wm, wm)
                return nxt
            return run
        return bind

    def bind(m, nxt):
        a, b, c, put = ga(m), gb(m), gc(m), s(m)

        def run():
            put(fn(a(), b(), c(), wm))
            return nxt
        return run
    return bind


_HANDLERS["vpternlogd"] = _h_ternlog
_HANDLERS["vpternlogq"] = _h_ternlog


# --- 128-bit lane moves: broadcast, insert, extract, shuffle --------------------------------
def _h_broadcast(lane_bytes):
    def h(d: _D):
        d.need(len(d.ops) == 2)
        src, dst = d.ops
        W = _vwidth(d, dst)
        d.need(W > lane_bytes or lane_bytes < 16, "broadcast into a wider register")
        element = d.ins.mnemonic.startswith("vpbroadcast")
        mesize, _ = _ESIZE.get(d.ins.mnemonic, (0, 0))
        if src.kind == "reg":
            d.need(element, "this broadcast takes a memory source only")
            if src.is_gpr:
                d.need(not d.ins.mnemonic in _VEX_ONLY and src.bits == max(32, 8 * lane_bytes),
                       "GPR source of the wrong size")
                g = d.gget(src, src.bits)
            else:
                g = d.vget(src, 16)
        else:
            g = d.vget(src, lane_bytes)
        rep = _rep_const(8 * lane_bytes, 8 * W)
        lm = (1 << (8 * lane_bytes)) - 1
        s = d.vset(dst, W, False, mesize)

        def bind(m, nxt):
            get, put = g(m), s(m)

            def run():
                put((get() & lm) * rep)
                return nxt
            return run
        return bind
    return h


_HANDLERS["vbroadcasti128"] = _h_broadcast(16)
_HANDLERS["vbroadcasti32x4"] = _h_broadcast(16)
_HANDLERS["vbroadcasti64x2"] = _h_broadcast(16)
_HANDLERS["vbroadcasti32x8"] = _h_broadcast(32)
_HANDLERS["vbroadcasti64x4"] = _h_broadcast(32)
_HANDLERS["vpbroadcastb"] = _h_broadcast(1)
_HANDLERS["vpbroadcastw"] = _h_broadcast(2)
_HANDLERS["vpbroadcastd"] = _h_broadcast(4)
_HANDLERS["vpbroadcastq"] = _h_broadcast(8)


def _h_insert(part_bytes):
    def h(d: _D):
        ops = d.ops
        d.need(len(ops) == 4 and ops[0].kind == "imm")
        k, src2, src1, dst = ops[0].value, ops[1], ops[2], ops[3]
        W = _vwidth(d, dst)
        d.need(W > part_bytes)
        nparts = W // part_bytes
        pos = (k % nparts) * 8 * part_bytes
        pm = ((1 << (8 * part_bytes)) - 1) << pos
        wm = WMASK[W]
        return _vec_binary(lambda W_: (lambda a, b: (a & (wm ^ pm)) | (b << pos)),
                           src2_bytes=lambda W_: part_bytes)(_with_ops(d, [src2, src1, dst]))
    return h


def _with_ops(d: _D, ops) -> _D:
    d2 = _D(d.prog, d.ins)
    d2.ops = ops
    return d2


def _h_extract(part_bytes):
    def h(d: _D):
        ops = d.ops
        d.need(len(ops) == 3 and ops[0].kind == "imm")
        k, src, dst = ops[0].value, ops[1], ops[2]
        W = _vwidth(d, src)
        d.need(W > part_bytes)
        pos = (k % (W // part_bytes)) * 8 * part_bytes
        pm = (1 << (8 * part_bytes)) - 1
        mesize, _ = _ESIZE.get(d.ins.mnemonic, (0, 0))
        g = d.vget(src, W)
        if dst.kind == "reg":
            d.need(dst.bits // 8 == part_bytes, lambda: f"{dst.text} is not {part_bytes} bytes")
        s = d.vset(dst, part_bytes, False, mesize)

        def bind(m, nxt):
            get, put = g(m), s(m)

            def run():
                put((get() >> pos) & pm)
                return nxt
            return run
        return bind
    return h


_HANDLERS["vinserti128"] = _h_insert(16)
_HANDLERS["vinserti32x4"] = _h_insert(16)
_HANDLERS["vinserti64x2"] = _h_insert(16)
_HANDLERS["vinserti32x8"] = _h_insert(32)
_HANDLERS["vinserti64x4"] = _h_insert(32)
_HANDLERS["vextracti128"] = _h_extract(16)
_HANDLERS["vextracti32x4"] = _h_extract(16)
_HANDLERS["vextracti64x2"] = _h_extract(16)
_HANDLERS["vextracti32x8"] = _h_extract(32)
_HANDLERS["vextracti64x4"] = _h_extract(32)


def _shufi(W, k):
    n = W // 16
    bits = 1 if n == 2 else 2

    def f(a, b):
        out = 0
        for j in range(n):
            sel = (k >> (bits * j)) & ((1 << bits) - 1)
            src = a if j < n // 2 else b
            out |= ((src >> (128 * sel)) & M128) << (128 * j)
        return out
    return f


_HANDLERS["vshufi32x4"] = _vec_binary(_shufi, imm=True)
_HANDLERS["vshufi64x2"] = _vec_binary(_shufi, imm=True)


def _perm2i128(W, k):
    def f(a, b):
        out = 0
        for j in range(2):
            c = (k >> (4 * j)) & 0xF
            if c & 8:
                continue
            src = a if c & 2 == 0 else b
            out |= ((src >> (128 * (c & 1))) & M128) << (128 * j)
        return out
    return f


_HANDLERS["vperm2i128"] = _vec_binary(_perm2i128, imm=True)


# --- pinsr/pextr, ptest ----------------------------------------------------------------------
def _h_pextr(esize):
    def h(d: _D):
        ops = d.ops
        d.need(len(ops) == 3 and ops[0].kind == "imm" and ops[1].is_vec and ops[1].bits == 128)
        sel = ops[0].value % (128 // esize)
        g = d.vget(ops[1], 16)
        dst = ops[2]
        if dst.kind == "reg":
            d.need(dst.is_gpr and dst.bits in (esize, 32, 64) and dst.bits >= esize)
            s = d.gset(dst, dst.bits)
        else:
            s = d.gset(dst, esize)
        sh, em = esize * sel, (1 << esize) - 1

        def bind(m, nxt):
            get, put = g(m), s(m)

            def run():
                put((get() >> sh) & em)
                return nxt
            return run
        return bind
    return h


def _h_pinsr(esize):
    def h(d: _D):
        ops = d.ops
        legacy = not d.ins.mnemonic.startswith("v")
        d.need(len(ops) == (3 if legacy else 4) and ops[0].kind == "imm")
        sel = ops[0].value % (128 // esize)
        src = ops[1]
        src1, dst = (ops[2], ops[2]) if legacy else (ops[2], ops[3])
        d.need(dst.is_vec and dst.bits == 128)
        if src.kind == "reg":
            d.need(src.is_gpr and src.bits == max(esize, 32))
            g = d.gget(src, src.bits)
        else:
            g = d.gget(src, esize)
        g1 = d.vget(src1, 16)
        s = d.vset(dst, 16, legacy)
        sh, em = esize * sel, (1 << esize) - 1

        def bind(m, nxt):
            get, get1, put = g(m), g1(m), s(m)

            def run():
                put((get1() & (M128 ^ (em << sh))) | ((get() & em) << sh))
                return nxt
            return run
        return bind
    return h


for _e, _c in ((8, "b"), (16, "w"), (32, "d"), (64, "q")):
    for _pre in ("p", "vp"):
        _HANDLERS[f"{_pre}extr{_c}"] = _h_pextr(_e)
        _HANDLERS[f"{_pre}insr{_c}"] = _h_pinsr(_e)


def _h_ptest(d: _D):
    d.need(len(d.ops) == 2)
    src2, src1 = d.ops
    W = _vwidth(d, src1)
    legacy = not d.ins.mnemonic.startswith("v")
    g1 = d.vget(src1, W)
    g2 = d.vget(src2, W, 16 if legacy else 0)
    wm = WMASK[W]

    def bind(m, nxt):
        a, b, FL = g1(m), g2(m), m.FL

        def run():
            x, y = a(), b()
            zf = (x & y) == 0
            cf = 1 if (~x & y & wm) == 0 else 0
            FL[0] = _flags_x(0 if zf else 1, 64, cf, 0, 0)
            return nxt
        return run
    return bind


_HANDLERS["ptest"] = _h_ptest
_HANDLERS["vptest"] = _h_ptest


def _h_vzero(upper: bool):
    def h(d: _D):
        d.need(not d.ops)

        def bind(m, nxt):
            V = m.V

            def run():
                for i in range(16):
                    V[i] = V[i] & M128 if upper else 0
                return nxt
            return run
        return bind
    return h


_HANDLERS["vzeroupper"] = _h_vzero(True)
_HANDLERS["vzeroall"] = _h_vzero(False)


# --- opmask registers ----------------------------------------------------------------------
_KBITS = {"b": 8, "w": 16, "d": 32, "q": 64}


def _h_kmov(bits):
    def h(d: _D):
        d.need(len(d.ops) == 2)
        src, dst = d.ops
        km = BITS_MASK[bits]
        if dst.is_k:
            o = dst.idx
            if src.is_k:
                i = src.idx
                g = lambda m: (lambda K=m.K: K[i])  # noqa: E731
            elif src.kind == "reg":
                d.need(src.is_gpr and src.bits == (64 if bits == 64 else 32),
                       f"kmov from {src.text}")
                g = d.gget(src, src.bits)
            else:
                g = d.gget(src, bits)

            def bind(m, nxt):
                get, K = g(m), m.K

                def run():
                    K[o] = get() & km
                    return nxt
                return run
            return bind
        d.need(src.is_k, "kmov needs a mask register")
        i = src.idx
        if dst.kind == "reg":
            d.need(dst.is_gpr and dst.bits == (64 if bits == 64 else 32), lambda: f"kmov to {dst.text}")
            s = d.gset(dst, dst.bits)
        else:
            s = d.gset(dst, bits)

        def bind(m, nxt):
            put, K = s(m), m.K

            def run():
                put(K[i] & km)
                return nxt
            return run
        return bind
    return h


def _h_klogic(name, bits):
    def h(d: _D):
        ops = d.ops
        km = BITS_MASK[bits]
        d.need(all(op.is_k for op in ops[-2:]))
        o = ops[-1].idx
        if name in ("kshiftl", "kshiftr"):
            d.need(len(ops) == 3 and ops[0].kind == "imm")
            c, i = ops[0].value & 0xFF, ops[1].idx

            def bind(m, nxt):
                K = m.K
                if c >= bits:
                    def run():
                        K[o] = 0
                        return nxt
                elif name == "kshiftl":
                    def run():
                        K[o] = (K[i] << c) & km
                        return nxt
                else:
                    def run():
                        K[o] = (K[i] & km) >> c
                        return nxt
                return run
            return bind
        if name == "knot":
            d.need(len(ops) == 2)
            i = ops[0].idx

            def bind(m, nxt):
                K = m.K

                def run():
                    K[o] = ~K[i] & km
                    return nxt
                return run
            return bind
        if name in ("kortest", "ktest"):
            d.need(len(ops) == 2)
            j, i = ops[0].idx, ops[1].idx      # Intel: kortest k1(i), k2(j)

            def bind(m, nxt):
                K, FL = m.K, m.FL

                def run():
                    a, b = K[i] & km, K[j] & km
                    if name == "kortest":
                        v = a | b
                        zf, cf = v == 0, v == km
                    else:
                        zf, cf = (a & b) == 0, (~a & b & km) == 0
                    FL[0] = _flags_x(0 if zf else 1, 64, 1 if cf else 0, 0, 0)
                    return nxt
                return run
            return bind
        d.need(len(ops) == 3 and ops[0].is_k)
        j, i = ops[0].idx, ops[1].idx          # AT&T: src2, src1, dest
        fn = {"kand": lambda a, b: a & b, "kor": lambda a, b: a | b,
              "kxor": lambda a, b: a ^ b, "kandn": lambda a, b: ~a & b,
              "kxnor": lambda a, b: ~(a ^ b), "kadd": lambda a, b: a + b}[name]

        def bind(m, nxt):
            K = m.K

            def run():
                K[o] = fn(K[i] & km, K[j] & km) & km
                return nxt
            return run
        return bind
    return h


for _c, _b in _KBITS.items():
    _HANDLERS["kmov" + _c] = _h_kmov(_b)
    for _name in ("kshiftl", "kshiftr", "knot", "kortest", "ktest", "kand", "kor", "kxor",
                  "kandn", "kxnor", "kadd"):
        _HANDLERS[_name + _c] = _h_klogic(_name, _b)


# =========================================================================================
# the machine
class Machine:
    """Registers, memory and the run loop for one Program.

    Registers: ``R`` (16 GPRs, unsigned 64-bit ints), ``V`` (zmm0-31 as 512-bit ints),
    ``K`` (k0-7). ``executed`` counts instructions run by all calls; ``counts()`` gives
    them per mnemonic.
    """

    def __init__(self, program: Program, *, stack_size: int = 1 << 16, seed: int = 1,
                 max_steps: int = 200_000_000) -> None:
        self.program = program
        self.R = [0] * 16
        self.V = [0] * 32
        self.K = [0] * 8
        self.FL = [(F_LOGIC, 0, 0, 0, 64, 0)]
        self.max_steps = max_steps
        self.executed = 0
        self._hits = [0] * len(program.insns)
        self._rng = random.Random(seed)
        n = len(program.insns)
        self._code = [self._stub(i) for i in range(n)]
        # memory: one bytearray indexed by address, with per-byte read/write permissions
        self.mem = bytearray(LOW_LIMIT)
        self.rd = bytearray(LOW_LIMIT)
        self.wr = bytearray(LOW_LIMIT)
        self.regions: dict[int, tuple[int, str]] = {}     # start -> (size, name)
        self._free: list[tuple[int, int]] = []            # freed (slot start, slot end)
        if program.rodata:
            self._map(program.RODATA_BASE, bytes(program.rodata), ".rodata", writable=False)
        if program.data:
            self._map(program.data_base, bytes(program.data), ".data", writable=True)
        self._make_accessors()
        self.stack = self.alloc(stack_size, align=64, name="stack")
        self.stack_top = self.stack + stack_size

    # --- memory -----------------------------------------------------------------------------
    def _grow(self, end: int) -> None:
        if end > len(self.mem):
            extra = end - len(self.mem)
            self.mem.extend(bytes(extra))
            self.rd.extend(bytes(extra))
            self.wr.extend(bytes(extra))

    def _map(self, start: int, data: bytes, name: str, writable: bool = True) -> None:
        end = start + len(data)
        self._grow(end + GAP)
        self.mem[start:end] = data
        self.rd[start:end] = b"\x01" * len(data)
        if writable:
            self.wr[start:end] = b"\x01" * len(data)
        self.regions[start] = (len(data), name)

    def alloc(self, size_or_bytes, align: int = 64, name: str = "", offset: int = 0) -> int:
        """A new region of ``size`` bytes (or holding the given bytes) whose start is
        ``offset`` bytes past an ``align``-aligned address; unmapped gaps on both sides.
        Fresh memory holds a fixed pseudo-random pattern, never zeros by luck."""
        if isinstance(size_or_bytes, int):
            size = size_or_bytes
            data = self._rng.randbytes(size)
        else:
            data = bytes(size_or_bytes)
            size = len(data)
        if size < 0 or align <= 0 or align & (align - 1):
            raise ValueError("bad size or alignment")
        need = size + GAP
        start = None
        for n, (lo, hi) in enumerate(self._free):
            s = ((lo + GAP + align - 1) // align) * align + offset
            if s + need <= hi:
                start = s
                del self._free[n]
                break
        if start is None:
            base = max(len(self.mem), LOW_LIMIT)
            start = ((base + GAP + align - 1) // align) * align + offset
        self._grow(start + size + GAP)
        self._map(start, data, name or f"region{len(self.regions)}")
        return start

    def alloc_end(self, size_or_bytes, name: str = "") -> int:
        """A region whose last byte is the last mapped byte before a gap: any access past
        ``start + size`` faults at once. The start is unaligned unless size is."""
        size = size_or_bytes if isinstance(size_or_bytes, int) else len(size_or_bytes)
        offset = (-size) % 64
        return self.alloc(size_or_bytes, align=64, name=name, offset=offset)

    def free(self, addr: int) -> None:
        size, _ = self.regions.pop(addr)
        self.rd[addr:addr + size] = bytes(size)
        self.wr[addr:addr + size] = bytes(size)
        self._free.append((addr - GAP, addr + size + GAP))

    def read(self, addr: int, n: int) -> bytes:
        if n and (addr < 0 or addr + n > len(self.mem) or self.rd.find(0, addr, addr + n) >= 0):
            raise self._fault(addr, n, False)
        return bytes(self.mem[addr:addr + n])

    def write(self, addr: int, data: bytes) -> None:
        n = len(data)
        if n and (addr < 0 or addr + n > len(self.mem) or self.wr.find(0, addr, addr + n) >= 0):
            raise self._fault(addr, n, True)
        self.mem[addr:addr + n] = data

    def region_of(self, addr: int):
        for start, (size, name) in self.regions.items():
            if start <= addr < start + size:
                return start, size, name
        return None

    def _fault(self, addr: int, n: int, write: bool, detail: str = "") -> MemoryFault:
        f = MemoryFault(addr, n, write, detail)
        perm = self.wr if write else self.rd
        bad = None
        if 0 <= addr < len(perm):
            hit = perm.find(0, addr, min(addr + n, len(perm)))
            bad = hit if hit >= 0 else None
        if bad is None and addr + n > len(perm):
            bad = max(addr, len(perm))
        if bad is not None:
            near = None
            for start, (size, name) in self.regions.items():
                if start <= bad < start + size:
                    near = f"byte {bad:#x} is in read-only {name!r}"
                    break
                dist = bad - (start + size) if bad >= start + size else start - bad
                if near is None or dist < near[0]:
                    near = (dist, f"byte {bad:#x} is {bad - (start + size) + 1} byte(s) past "
                                  f"the end of {name!r} [{start:#x}, {start + size:#x})"
                            if bad >= start + size else
                            f"byte {bad:#x} is {start - bad} byte(s) before {name!r} "
                            f"[{start:#x}, {start + size:#x})")
            if isinstance(near, tuple):
                near = near[1]
            f.where = near or f"byte {bad:#x} is unmapped"
        return f

    def _make_accessors(self) -> None:
        mem, rd, wr = self.mem, self.rd, self.wr
        fault = self._fault
        frombytes = int.from_bytes

        def load(a, n):
            if a + n > len(mem) or rd.find(0, a, a + n) >= 0:
                raise fault(a, n, False)
            return frombytes(mem[a:a + n], "little")

        def store(a, n, v):
            if a + n > len(mem) or wr.find(0, a, a + n) >= 0:
                raise fault(a, n, True)
            mem[a:a + n] = v.to_bytes(n, "little")

        def load_aligned(a, n, align):
            if a % align:
                raise ExecutionError(f"#GP: {n}-byte aligned access at {a:#x}, not a "
                                     f"multiple of {align}")
            return load(a, n)

        def store_aligned(a, n, v, align):
            if a % align:
                raise ExecutionError(f"#GP: {n}-byte aligned access at {a:#x}, not a "
                                     f"multiple of {align}")
            store(a, n, v)

        def load_masked(a, n, esize, k, align):
            if align and a % align:
                raise ExecutionError(f"#GP: aligned masked load at {a:#x}")
            eb = esize // 8
            v = 0
            for first, count in _runs(k):
                lo, ln = a + first * eb, count * eb
                if lo + ln > len(mem) or rd.find(0, lo, lo + ln) >= 0:
                    raise fault(lo, ln, False, f"enabled elements {first}..{first + count - 1}"
                                               f" of a masked load")
                v |= frombytes(mem[lo:lo + ln], "little") << (8 * first * eb)
            return v

        def store_masked(a, n, esize, k, v, align):
            if align and a % align:
                raise ExecutionError(f"#GP: aligned masked store at {a:#x}")
            eb = esize // 8
            runs = list(_runs(k))
            for first, count in runs:           # check everything before writing anything
                lo, ln = a + first * eb, count * eb
                if lo + ln > len(mem) or wr.find(0, lo, lo + ln) >= 0:
                    raise fault(lo, ln, True, f"enabled elements {first}..{first + count - 1}"
                                              f" of a masked store")
            for first, count in runs:
                lo, ln = a + first * eb, count * eb
                mem[lo:lo + ln] = ((v >> (8 * first * eb)) & ((1 << (8 * ln)) - 1)).to_bytes(
                    ln, "little")

        self._load, self._store = load, store
        self._load_aligned, self._store_aligned = load_aligned, store_aligned
        self._load_masked, self._store_masked = load_masked, store_masked

    # --- running ----------------------------------------------------------------------------
    def _stub(self, i: int):
        def stub():
            f = self.program.factory(i)(self, i + 1)
            self._code[i] = f
            return f()
        return stub

    def poison(self) -> None:
        """Random values in every register a callee may not rely on: caller-saved GPRs,
        all vector registers (all 512 bits), all mask registers, the flags."""
        rng = self._rng
        for r in (RAX, RCX, RDX, RSI, RDI, 8, 9, 10, 11):
            self.R[r] = rng.getrandbits(64)
        for i in range(32):
            self.V[i] = rng.getrandbits(512)
        for i in range(8):
            self.K[i] = rng.getrandbits(64)
        self.FL[0] = _flags_x(rng.getrandbits(64) | 1, 64, rng.getrandbits(1), rng.getrandbits(1))

    def call(self, symbol: str, *args: int, poison: bool = True) -> int:
        """Call ``symbol`` with the System V AMD64 convention; returns rax.

        Integer arguments go to rdi, rsi, rdx, rcx, r8, r9, the rest on the stack (rsp is
        16-byte aligned at the call, then the return address is pushed). After the return,
        rbx, rbp, r12-r15 and rsp must be as before."""
        entry = self.program.entry(symbol)
        if poison:
            self.poison()
        R = self.R
        for n, reg in enumerate(ARG_REGS[:len(args)]):
            R[reg] = args[n] & M64
        stack_args = [a & M64 for a in args[6:]]
        top = (self.stack_top - 128) & ~15
        sp = top - 8 * len(stack_args)
        sp &= ~15                                   # aligned at the call instruction
        for n, v in enumerate(stack_args):
            self._store(sp + 8 * n, 8, v)
        sp -= 8
        self._store(sp, 8, SENTINEL)
        R[RSP] = sp
        if poison:
            for r in CALLEE_SAVED:
                R[r] = self._rng.getrandbits(64)
        saved = [R[r] for r in CALLEE_SAVED]
        self._run(entry)
        if R[RSP] != sp + 8:
            raise ExecutionError(f"{symbol}: rsp after return is {R[RSP]:#x}, not "
                                 f"{sp + 8:#x}")
        for r, v in zip(CALLEE_SAVED, saved):
            if R[r] != v:
                raise ExecutionError(f"{symbol}: callee-saved {_GPR64[r]} changed "
                                     f"({v:#x} -> {R[r]:#x})")
        return R[RAX]

    def _run(self, pc: int) -> None:
        code, hits = self._code, self._hits
        limit = self.max_steps
        n = 0
        try:
            while pc >= 0:
                hits[pc] += 1
                n += 1
                if n > limit:
                    raise ExecutionError(f"more than {limit} instructions: stopped at "
                                         f"{self.program.insns[pc]}")
                pc = code[pc]()
        except MemoryFault as e:
            if e.insn is None:
                e.insn = self.program.insns[pc]
            raise
        except ExecutionError as e:
            ins = self.program.insns[pc]
            if not str(e).startswith(ins.location()):
                raise ExecutionError(f"{ins.location()}: `{ins.text}`: {e}") from None
            raise
        finally:
            self.executed += n

    def counts(self) -> Counter:
        """Executed instructions per mnemonic (all calls so far)."""
        c: Counter = Counter()
        for ins, h in zip(self.program.insns, self._hits):
            if h:
                c[ins.mnemonic] += h
        return c

    # --- register views ---------------------------------------------------------------------
    def xmm(self, i: int) -> int:
        return self.V[i] & M128

    def ymm(self, i: int) -> int:
        return self.V[i] & M256

    def zmm(self, i: int) -> int:
        return self.V[i]
