"""GNU assembler text, AT&T syntax, for compiled x86-64 Functions.

Directives that differ between object formats (ELF, Mach-O, Win64 COFF) come from a Flavour
(flavours.py), the unwind directives from the frame pass's FrameSteps (unwind.py); nothing
here knows one format from another.
"""
from __future__ import annotations

from ..dsl.ir import Comment, FrameStep, Function, Instruction, LabelDef
from ..dsl.operands import Imm, Label, Masked, Mem, Reg
from .flavours import ELF_X86_64, Flavour
from .unwind import UnwindWriter


# the text of a register by (class, id, width): a few dozen registers print a million times
_REGISTER_TEXT: dict[tuple[str, int, int], str] = {}


def _register(op: Reg) -> str:
    key = (op.cls, op.id, op.width)
    text = _REGISTER_TEXT.get(key)
    if text is None or op.arr or op.lane >= 0:    # (AArch64 views do not come here)
        if op.is_virtual:
            raise ValueError(f"virtual register {op!r} reached the printer")
        text = f"%{op.name()}"
        if not op.arr and op.lane < 0:
            _REGISTER_TEXT[key] = text
    return text


def format_operand(op, flavour: Flavour = ELF_X86_64) -> str:
    if isinstance(op, Reg):
        return _register(op)
    if isinstance(op, Mem):
        if op.rip_label is not None:
            label = flavour.label(op.rip_label)
            disp = f"{label}+{op.disp}" if op.disp else label
            return f"{disp}(%rip)"
        disp = str(op.disp) if op.disp else ""
        if op.index is None:
            return f"{disp}({_register(op.base)})"
        return f"{disp}({_register(op.base)},{_register(op.index)},{op.scale})"
    if isinstance(op, Imm):
        return f"${op.value}" if -4096 < op.value < 4096 else f"${op.value:#x}"
    if isinstance(op, Label):
        return flavour.label(op.name)
    raise TypeError(f"cannot print operand {op!r}")


def format_instruction(ins: Instruction, flavour: Flavour = ELF_X86_64) -> str:
    operands = ins.operands
    if operands and isinstance(operands[-1], Masked):     # on the destination: {%k1}{z}
        operands = list(operands)
        mask = operands.pop()
        texts = [format_operand(op, flavour) for op in operands]
        texts[0] += f"{{%{mask.reg.name()}}}" + ("{z}" if mask.zero else "")
        ops = ", ".join(reversed(texts))
    else:
        ops = ", ".join(format_operand(op, flavour) for op in reversed(operands))
    text = f"\t{ins.form.mnemonic}\t{ops}" if ops else f"\t{ins.form.mnemonic}"
    if ins.comment:
        text = f"{text:<48}# {ins.comment}"
    return text


def print_function(function: Function, flavour: Flavour = ELF_X86_64) -> str:
    sym = flavour.symbol(function.symbol)
    lines: list[str] = []
    if function.doc:
        lines += [f"# {line}".rstrip() for line in function.doc.splitlines()]
    lines += [f"# Requires: {', '.join(function.features) or 'baseline x86-64'}"]
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
            lines.append(f"\t# {item.text}")
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
