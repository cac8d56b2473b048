"""Structural checks before allocation: every label defined once and every jump lands."""
from __future__ import annotations

from ..dsl.ir import Function, Instruction, LabelDef
from ..dsl.operands import Reg
from .abi import AbiSpec


class StructureError(ValueError):
    pass


def verify_structure(function: Function, abi: AbiSpec) -> Function:
    defined: set[str] = set()
    instructions = []
    for item in function.body:
        if isinstance(item, LabelDef):
            if item.name in defined:
                raise StructureError(f"{function.symbol}: label {item.name} defined twice")
            defined.add(item.name)
        elif isinstance(item, Instruction):
            instructions.append(item)
    names_rsp = None                     # the first instruction naming rsp
    for ins in instructions:
        target = ins.label_target()
        if target is not None and not ins.is_call and target not in defined:
            raise StructureError(f"{function.symbol}: jump to undefined label {target}")
        if names_rsp is None:
            for op in ins.operands:
                if type(op) is Reg and op.cls == "gp" and op.id == 4:
                    names_rsp = ins
                    break
    last = instructions[-1] if instructions else None
    if last is None or not last.is_unconditional:
        raise StructureError(f"{function.symbol}: the body must end in ret or jmp")
    if names_rsp is not None:
        raise StructureError(f"{function.symbol}: {names_rsp.name} names rsp directly")
    if abi.isa == "aarch64":
        _verify_a64(function, instructions)
    return function


def _verify_a64(function: Function, instructions: list[Instruction]) -> None:
    """x18 (platform register), x29 (frame pointer), x30 (link register) and sp stay out of
    the lowering: the frame pass alone changes sp and keeps lr; the one use of sp allowed is
    as the base of a load of a stack argument (the frame pass moves its offset)."""
    from ..dsl.operands import A64_GP, A64_SP, Mem

    for ins in instructions:
        regs = ins.registers_read() + ins.registers_written()
        if ins.name == "ldr" and any(isinstance(op, Mem) and op.base is not None
                                     and op.base.id == A64_SP and op.base.cls == A64_GP
                                     and not op.writeback for op in ins.operands):
            regs = [r for r in regs if not (r.cls == A64_GP and r.id == A64_SP)]
        for r in regs:
            if r.cls == A64_GP and r.id in (18, 29, 30, A64_SP):
                name = {18: "x18 (platform register)", 29: "x29 (frame pointer)",
                        30: "x30 (link register)", A64_SP: "sp"}[r.id]
                raise StructureError(f"{function.symbol}: {ins.name} uses {name}")
