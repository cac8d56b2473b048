"""Register allocation: interference from liveness, then greedy colouring in id order.

Deterministic by construction: virtual registers are coloured in increasing id, candidate
registers are tried in the ABI's allocation order, and a copy's partner colour is tried
first (so `mov %rdi, v` usually disappears). The registers of an AArch64 register list
(``{v0.16b-v3.16b}`` of ld1/st1/ld4/st4/tbl) are coloured together, consecutively, when the
first of them comes up. There is no spilling: a kernel that needs more
registers than the target has is a lowering bug, reported with the register that failed.
"""
from __future__ import annotations

from collections import defaultdict
from dataclasses import replace

from ..dsl.ir import Function, Instruction
from ..dsl.operands import Mem, Reg, VIRTUAL_BASE, VList
from .abi import AbiSpec
from .liveness import RegKey, compute_liveness

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
    effects: dict[int, tuple[set, set]] = {}
    blocks = compute_liveness(function, abi, effects)
    entry_virtual = sorted(k for k in blocks[0].live_in if k[1] >= VIRTUAL_BASE)
    if entry_virtual:
        raise AllocationError(f"{function.symbol}: register(s) read before any write: "
                              f"{entry_virtual}")
    edges: dict[RegKey, set[RegKey]] = defaultdict(set)
    hints: dict[RegKey, list[RegKey]] = defaultdict(list)
    for b in blocks:
        live = set(b.live_out)
        for ins in reversed(b.instructions):
            uses, defs = effects[id(ins)]
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
    groups = _register_groups(function)

    def colour_of(key: RegKey) -> int | None:
        return key[1] if key[1] < VIRTUAL_BASE else colour.get(key)

    for key in virtuals:
        if key in colour:
            continue
        if key in groups:
            _colour_group(function, abi, groups[key], edges, colour, colour_of)
            continue
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

    bound: dict = {}                      # operand -> operand with colours (operands repeat)

    def bind(op):
        if op in bound:
            return bound[op]
        result = op
        if isinstance(op, Reg) and op.is_virtual:
            result = replace(op, id=colour[op.key])
        elif isinstance(op, VList):
            result = op.with_regs(tuple(bind(r) for r in op.regs))
        elif isinstance(op, Mem):
            base = bind(op.base) if op.base is not None else None
            index = bind(op.index) if op.index is not None else None
            result = op.with_registers(base, index)
        bound[op] = result
        return result

    body = [item.with_operands(tuple(bind(op) for op in item.operands))
            if isinstance(item, Instruction) else item for item in function.body]
    return replace(function, body=body)


def _register_groups(function: Function) -> dict[RegKey, tuple[RegKey, ...]]:
    """Each virtual register of a multi-register list -> the whole list (in order)."""
    groups: dict[RegKey, tuple[RegKey, ...]] = {}
    for ins in function.instructions():
        for op in ins.operands:
            if isinstance(op, VList) and len(op.regs) > 1:
                keys = tuple(r.key for r in op.regs)
                if any(r.is_virtual != op.regs[0].is_virtual for r in op.regs):
                    raise AllocationError(f"{function.symbol}: register list {keys} mixes "
                                          "physical and virtual registers")
                if not op.regs[0].is_virtual:
                    continue
                for k in keys:
                    if groups.get(k, keys) != keys:
                        raise AllocationError(f"{function.symbol}: v{k[1]} sits in two "
                                              "different register lists")
                    groups[k] = keys
    return groups


def _colour_group(function, abi, keys, edges, colour, colour_of) -> None:
    """Colour the registers of one list consecutively (mod 32, as A64 lists wrap)."""
    cls = keys[0][0]
    order = [r.id for r in abi.allocation_order[cls]]
    allowed = set(order)
    n = abi.vector_registers
    for first in order:
        ids = [(first + i) % n for i in range(len(keys))]
        if all(c in allowed and c not in {colour_of(x) for x in edges[k]} - {None}
               for c, k in zip(ids, keys)):
            for c, k in zip(ids, keys):
                colour[k] = c
            return
    raise AllocationError(f"{function.symbol}: no {len(keys)} consecutive free {cls} "
                          f"registers for the list {[f'v{k[1]}' for k in keys]}")
