"""Program: the .text instructions, labels and .rodata/.data of assembly texts, each
instruction decoded on first use into a closure by the handlers of scalar and vector."""
from __future__ import annotations

import re

from . import scalar, vector
from .decoder import Decoder
from .errors import ParseError, UnsupportedInstruction
from .layout import CODE_BASE, CODE_STRIDE, GAP, LOW_LIMIT
from .operands import Insn, parse_int, parse_operand, split_operands
from .vector import ESIZE, VEX_ONLY

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
            n = parse_int(arg.split(",")[0])
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
                    v = parse_int(item)
                except ValueError:
                    raise ParseError(f"{fname}:{lineno}: data value {item!r} is not a "
                                     f"number") from None
                buf.extend((v & ((1 << (8 * size)) - 1)).to_bytes(size, "little"))
            return section
        if d in (".zero", ".skip", ".space"):
            a = arg.split(",")
            fill = parse_int(a[1]) & 0xFF if len(a) > 1 else 0
            buf.extend(bytes([fill]) * parse_int(a[0]))
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
# decoding: each instruction becomes a factory make(m) -> closure() -> next pc
_HANDLERS = {**scalar.HANDLERS, **vector.HANDLERS}       # no mnemonic in both


def _decode(prog: Program, ins: Insn):
    d = Decoder(prog, ins)
    mn = ins.mnemonic
    ops = ins.ops
    if mn in VEX_ONLY:
        for op in ops:
            if op.kind == "reg" and op.cls == "v" and (op.idx >= 16 or op.bits == 512):
                raise d.fail(f"{op.text} cannot be encoded with VEX")
            if op.mask:
                raise d.fail("VEX instructions take no mask")
    elif any(op.mask or op.bcst for op in ops) and mn not in ESIZE:
        raise d.fail("masking/broadcast not implemented for this mnemonic")
    if not mn.startswith("v") and not mn.startswith("k"):
        for op in ops:
            if op.kind == "reg" and op.cls == "v" and (op.idx >= 16 or op.bits != 128):
                raise d.fail(f"{op.text} cannot be encoded in a legacy SSE instruction")
    h = _HANDLERS.get(mn)
    if h is None:
        raise d.fail()
    return h(d)
