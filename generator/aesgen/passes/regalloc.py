"""Register allocation: interference from liveness, then greedy colouring in id order.

Deterministic by construction: virtual registers are coloured in increasing id, candidate
registers are tried in the ABI's allocation order, and a copy's partner colour is tried
first (so `mov %rdi, v` usually disappears). There is no spilling: a kernel that needs more
registers than the target has is a lowering bug, reported with the register that failed.
"""
from __future__ import annotations

from collections import defaultdict
from dataclasses import replace

from ..dsl.ir import Function, Instruction
from ..dsl.operands import Mem, Reg, VIRTUAL_BASE
from .abi import AbiSpec
from .liveness import RegKey, compute_liveness, uses_and_defs

COPY_NAMES = ("mov", "movdqa", "vmovdqa")


class AllocationError(RuntimeError):
    pass


def _copy_pair(ins: Instruction) -> tuple[RegKey, RegKey] | None:
    if ins.name in COPY_NAMES and len(ins.operands) == 2 and all(
            isinstance(op, Reg) for op in ins.operands):
        dst, src = ins.operands
        if dst.width == src.width:
            return dst.key, src.key
    return None


def interference(function: Function, abi: AbiSpec):
    blocks = compute_liveness(function, abi)
    entry_virtual = sorted(k for k in blocks[0].live_in if k[1] >= VIRTUAL_BASE)
    if entry_virtual:
        raise AllocationError(f"{function.symbol}: register(s) read before any write: "
                              f"{entry_virtual}")
    edges: dict[RegKey, set[RegKey]] = defaultdict(set)
    hints: dict[RegKey, list[RegKey]] = defaultdict(list)
    for b in blocks:
        live = set(b.live_out)
        for ins in reversed(b.instructions):
            uses, defs = uses_and_defs(ins, function, abi)
            pair = _copy_pair(ins)
            for d in defs:
                for other in live:
                    if other == d or (pair and pair == (d, other)):
                        continue
                    if other[0] == d[0]:
                        edges[d].add(other)
                        edges[other].add(d)
            if pair:
                hints[pair[0]].append(pair[1])
                hints[pair[1]].append(pair[0])
            live = (live - defs) | uses
    return edges, hints


def allocate_registers(function: Function, abi: AbiSpec) -> Function:
    edges, hints = interference(function, abi)
    virtuals = sorted({r.key for ins in function.instructions()
                       for r in ins.registers_read() + ins.registers_written()
                       if r.is_virtual})
    colour: dict[RegKey, int] = {}

    def colour_of(key: RegKey) -> int | None:
        return key[1] if key[1] < VIRTUAL_BASE else colour.get(key)

    for key in virtuals:
        cls = key[0]
        taken = {colour_of(n) for n in edges[key]} - {None}
        order = [r.id for r in abi.allocation_order[cls]]
        preferred = [colour_of(h) for h in hints[key] if colour_of(h) is not None]
        choice = next((c for c in preferred + order if c in order and c not in taken), None)
        if choice is None:
            raise AllocationError(
                f"{function.symbol}: out of {cls} registers for v{key[1]} "
                f"({len(taken)} of {len(order)} busy); the lowering must use fewer")
        colour[key] = choice

    def bind(op):
        if isinstance(op, Reg) and op.is_virtual:
            return Reg(op.cls, colour[op.key], op.width)
        if isinstance(op, Mem):
            base = bind(op.base) if op.base is not None else None
            index = bind(op.index) if op.index is not None else None
            return op.with_registers(base, index)
        return op

    body = [item.with_operands(tuple(bind(op) for op in item.operands))
            if isinstance(item, Instruction) else item for item in function.body]
    return replace(function, body=body)
