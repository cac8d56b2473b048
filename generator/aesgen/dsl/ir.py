"""The kernel IR: instructions (a table form plus operands), label definitions, functions.

A function body is a flat list of items in program order. Each instruction carries the
*phase* it belongs to (counter, rounds_0_2, ...) and the *region* of code it sits in, so
that reports can count instructions per phase of the steady-state loop.
"""
from __future__ import annotations

from dataclasses import dataclass, field, fields

from ..isa.table import Form
from .operands import Label, Masked, Mem, Operand, Reg, VList


@dataclass(frozen=True)
class Instruction:
    form: Form
    operands: tuple[Operand, ...]
    phase: str = "other"
    region: str = ""
    comment: str = ""
    weight: int = 1       # times it runs per pass through its region (a counted loop body)

    @property
    def name(self) -> str:
        return self.form.base_name

    def registers_read(self) -> list[Reg]:
        regs: list[Reg] = []
        for (reads, _), op in zip(self.form.access, self.operands):
            t = type(op)
            if t is Reg:
                if reads:
                    regs.append(op)
            elif t is Mem:
                if op.base is not None:
                    regs.append(op.base)
                if op.index is not None:
                    regs.append(op.index)
            elif t is VList:
                if reads:
                    regs.extend(op.regs)
            elif t is Masked:
                regs.append(op.reg)
        return regs

    def registers_written(self) -> list[Reg]:
        out = []
        for (_, writes), op in zip(self.form.access, self.operands):
            t = type(op)
            if t is Reg:
                if writes:
                    out.append(op)
            elif t is VList:
                if writes:
                    out.extend(op.regs)
            elif t is Mem:
                if op.writeback and op.base is not None:     # AArch64 pre/post-index
                    out.append(op.base)
        return out

    def label_target(self) -> str | None:
        for op in self.operands:
            if isinstance(op, Label):
                return op.name
        return None

    @property
    def is_call(self) -> bool:
        """A call of another function of the same file (its label is that function's symbol)."""
        return self.name in ("call", "bl")

    @property
    def is_jump(self) -> bool:
        return self.label_target() is not None and not self.is_call

    @property
    def is_unconditional(self) -> bool:
        return self.name in ("jmp", "ret", "b")

    def with_operands(self, operands: tuple[Operand, ...]) -> "Instruction":
        # replace(self, operands=operands) without its cost (passes rewrite every
        # instruction): every field but the operands, as they are
        return Instruction(self.form, operands, self.phase, self.region, self.comment,
                           self.weight)


# with_operands names every field
assert [f.name for f in fields(Instruction)] == ["form", "operands", "phase", "region",
                                                 "comment", "weight"]


@dataclass(frozen=True)
class LabelDef:
    name: str


@dataclass(frozen=True)
class Comment:
    text: str


# what a FrameStep says the instruction before it did
FRAME_STEPS = (
    "push",          # pushed ``reg`` (x86-64): the stack pointer 8 lower, reg saved there
    "alloc",         # lowered the stack pointer by ``offset`` bytes
    "save",          # stored ``reg`` at ``offset`` bytes above the stack pointer
    "prologue_end",  # the frame is complete (no instruction: it follows the last step)
    "sign_return",   # signed the return address (AArch64 PACIASP)
    "epilogue",      # an epilogue begins (no instruction: before its first)
    "restore",       # loaded ``reg`` back from its slot
    "free",          # raised the stack pointer by ``offset`` bytes
    "pop",           # popped ``reg`` (x86-64)
    "auth_return",   # authenticated the return address (AArch64 AUTIASP)
    "epilogue_end",  # after the return: the frame as it was before the epilogue
)


@dataclass(frozen=True)
class FrameStep:
    """A fact of the frame pass for the printer: what the instruction just before it did to
    the stack or the saved registers. Each output flavour turns the steps into its unwind
    information (DWARF CFI, Win64 SEH), so none is written by hand."""
    kind: str
    reg: "Reg | None" = None
    offset: int = 0

    def __post_init__(self) -> None:
        if self.kind not in FRAME_STEPS:
            raise ValueError(f"unknown frame step {self.kind!r}")


Item = Instruction | LabelDef | Comment | FrameStep


@dataclass
class Function:
    """A function being built or compiled: its symbol, body, ABI facts and pass results."""

    symbol: str
    body: list[Item] = field(default_factory=list)
    returns_value: bool = False
    doc: str = ""
    # filled by passes
    features: tuple[str, ...] = ()
    saved_registers: tuple[Reg, ...] = ()
    constants: dict[str, tuple[int, bytes]] = field(default_factory=dict)
    scrub_vectors: bool = False
    exported: bool = True     # False: a helper only this file's functions call (no .globl)

    def instructions(self) -> list[Instruction]:
        return [it for it in self.body if isinstance(it, Instruction)]
