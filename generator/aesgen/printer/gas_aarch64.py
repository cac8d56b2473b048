"""GNU assembler text, A64 syntax, for compiled AArch64 Functions.

Comments are ``//`` (``#`` is the immediate prefix in A64). Directives that differ between
object formats (ELF, Mach-O: leading ``_``, other section names, ``@PAGE``/``@PAGEOFF`` in
place of ``:lo12:``) come from a Flavour (flavours.py), the unwind directives from the frame
pass's FrameSteps (unwind.py), as for x86-64.
"""
from __future__ import annotations

from ..dsl.ir import Comment, FrameStep, Function, Instruction, LabelDef
from ..dsl.operands import Imm, Label, Mem, Reg, Sym, VList
from .flavours import ELF_AARCH64, Flavour
from .unwind import UnwindWriter


# operand kinds printed with a keyword in front of the number
SHIFT_KINDS = {"sh16": "lsl", "lsl6": "lsl"}


# the text of a register view by (class, id, width, arrangement, lane): a few hundred views
# print a million times
_REGISTER_TEXT: dict[tuple, str] = {}


def _reg(r: Reg) -> str:
    key = (r.cls, r.id, r.width, r.arr, r.lane)
    text = _REGISTER_TEXT.get(key)
    if text is None:
        if r.is_virtual:
            raise ValueError(f"virtual register {r!r} reached the printer")
        text = _REGISTER_TEXT[key] = r.name()
    return text


def _imm(value: int) -> str:
    return f"#{value}" if -4096 < value < 4096 else f"#{value:#x}"


def format_operand(op, kinds: tuple[str, ...] = (), mnemonic: str = "",
                   flavour: Flavour = ELF_AARCH64) -> str:
    if isinstance(op, Reg):
        return _reg(op)
    if isinstance(op, Imm):
        for k in kinds:
            if k in SHIFT_KINDS:
                return f"{SHIFT_KINDS[k]} #{op.value}"
        if "movi64" in kinds:
            return f"#{op.value:#018x}"
        return _imm(op.value)
    if isinstance(op, Label):
        return flavour.label(op.name)
    if isinstance(op, Sym):
        name = flavour.label(op.name)
        return flavour.page_offset(name) if mnemonic == "add" else flavour.page(name)
    if isinstance(op, VList):
        regs = [_reg(r) for r in op.regs]
        first = op.regs[0]
        if first.lane >= 0:
            return f"{{v{first.id}.{first.arr}}}[{first.lane}]"
        return "{" + ", ".join(regs) + "}"
    if isinstance(op, Mem):
        if op.base is None:
            raise ValueError("AArch64 memory operands need a base register")
        base = _reg(op.base)
        if op.writeback == "post":
            step = _reg(op.index) if op.index is not None else _imm(op.disp)
            return f"[{base}], {step}"
        if op.index is not None:
            shift = (op.scale.bit_length() - 1)
            tail = f", lsl #{shift}" if shift else ""
            return f"[{base}, {_reg(op.index)}{tail}]"
        inner = f"[{base}, {_imm(op.disp)}]" if op.disp else f"[{base}]"
        return inner + ("!" if op.writeback == "pre" else "")
    raise TypeError(f"cannot print operand {op!r}")


def format_instruction(ins: Instruction, flavour: Flavour = ELF_AARCH64) -> str:
    mnemonic = ins.form.mnemonic
    ops = ", ".join(format_operand(op, spec.kinds, mnemonic, flavour)
                    for spec, op in zip(ins.form.operands, ins.operands))
    text = f"\t{mnemonic}\t{ops}" if ops else f"\t{mnemonic}"
    comment = ins.comment
    if mnemonic == "hint" and ins.operands == (Imm(34),):
        comment = comment or "bti c"
    if comment:
        text = f"{text:<48}// {comment}"
    return text


def arch_directive(features: tuple[str, ...]) -> str:
    """The `.arch` line that lets GNU as accept exactly what the function needs."""
    if "SHA3" in features:
        return "armv8.2-a+crypto+sha3"
    if "AES" in features or "PMULL" in features:
        return "armv8-a+crypto"
    return "armv8-a"


def print_function(function: Function, flavour: Flavour = ELF_AARCH64) -> str:
    sym = flavour.symbol(function.symbol)
    lines: list[str] = []
    if function.doc:
        lines += [f"// {line}".rstrip() for line in function.doc.splitlines()]
    lines += [f"// Requires: {', '.join(function.features) or 'baseline AArch64'}"]
    lines += [f"\t.arch\t{arch_directive(function.features)}"]
    lines += ["\t.text"] + flavour.function_start(sym, function.exported)
    unwind = UnwindWriter(flavour)
    for item in function.body:
        if isinstance(item, Instruction):
            lines.append(format_instruction(item, flavour))
        elif isinstance(item, LabelDef):
            lines.append(f"{flavour.label(item.name)}:")
        elif isinstance(item, FrameStep):
            lines += unwind.step(item)
        elif isinstance(item, Comment):
            lines.append(f"\t// {item.text}")
    lines += flavour.function_end(sym)
    if function.constants:
        lines.append(flavour.rodata)
        for label, (align, data) in function.constants.items():
            lines.append(f"\t.p2align\t{align.bit_length() - 1}")
            lines.append(f"{flavour.label(label)}:")
            for i in range(0, len(data), 16):
                chunk = ", ".join(f"{b:#04x}" for b in data[i:i + 16])
                lines.append(f"\t.byte\t{chunk}")
    return "\n".join(lines) + "\n"
