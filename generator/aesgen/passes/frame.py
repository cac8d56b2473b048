"""Function frame: keep the callee-saved registers the allocator used, scrub vectors at exit."""
from __future__ import annotations

from dataclasses import replace

from ..dsl.ir import Function, Instruction
from ..dsl.operands import VEC, Reg
from ..isa.table import load_table
from .abi import AbiSpec


def _make(abi: AbiSpec, name: str, *operands, phase: str = "frame") -> Instruction:
    table = load_table(abi.isa)
    return Instruction(table.match(name, operands), operands, phase, "frame")


def insert_frame(function: Function, abi: AbiSpec) -> Function:
    """Push used callee-saved registers after the entry's endbr64, pop them before each ret.

    With ``scrub_vectors`` every vector register the function touched is zeroed before
    each return, so no round key or keystream outlives the call in a register.
    """
    used_keys = {r.key for ins in function.instructions()
                 for r in ins.registers_read() + ins.registers_written()}
    saved = tuple(r for r in abi.callee_saved if r.key in used_keys)
    vectors = sorted(k[1] for k in used_keys if k[0] == VEC)
    uses_vex = any(ins.name.startswith("v") for ins in function.instructions())

    body = []
    for n, item in enumerate(function.body):
        is_ins = isinstance(item, Instruction)
        if is_ins and item.name == "ret":
            if function.scrub_vectors and vectors:
                if uses_vex:
                    for v in vectors:        # vzeroall leaves zmm16-31 alone
                        if v >= 16:
                            x = Reg(VEC, v, 128)
                            body.append(_make(abi, "vpxorq", x, x, x))
                    body.append(_make(abi, "vzeroall"))
                else:
                    for v in vectors:
                        x = Reg(VEC, v, 128)
                        body.append(_make(abi, "pxor", x, x))
            elif uses_vex:
                body.append(_make(abi, "vzeroupper"))   # leave no dirty upper state behind
            body.extend(_make(abi, "pop", r) for r in reversed(saved))
        body.append(item)
        if n == 0:
            if not (is_ins and item.name == "endbr64"):
                raise ValueError(f"{function.symbol}: entry must start with endbr64")
            body.extend(_make(abi, "push", r) for r in saved)
    return replace(function, body=body, saved_registers=saved)


def drop_self_moves(function: Function, abi: AbiSpec) -> Function:
    def is_self_move(item) -> bool:
        return (isinstance(item, Instruction) and item.name in ("mov", "movdqa", "vmovdqa")
                and len(item.operands) == 2 and item.operands[0] == item.operands[1])
    return replace(function, body=[it for it in function.body if not is_self_move(it)])
