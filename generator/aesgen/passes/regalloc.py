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


def interference(function: Function, abi: AbiSpec, touched: set[RegKey] | None = None):
    """Interference edges (RegKey -> the keys of its class live where it is defined, and
    the other way round) and copy hints (RegKey -> the partners of its copies, in order);
    ``touched`` gets every register the instructions read or write."""
    effects: dict[int, tuple[set, set]] = {}
    blocks = compute_liveness(function, abi, effects, touched)
    entry_virtual = sorted(k for k in blocks[0].live_in if k[1] >= VIRTUAL_BASE)
    if entry_virtual:
        raise AllocationError(f"{function.symbol}: register(s) read before any write: "
                              f"{entry_virtual}")
    edges: dict[RegKey, set[RegKey]] = defaultdict(set)
    hints: dict[RegKey, list[RegKey]] = defaultdict(list)
    for b in blocks:
        # what is live after each instruction, a set a register class: a definition
        # interferes with the live registers of its own class only
        live: dict[str, set[RegKey]] = defaultdict(set)
        for k in b.live_out:
            live[k[0]].add(k)
        for ins in reversed(b.instructions):
            uses, defs = effects[id(ins)]
            pair = _copy_pair(ins) if ins.name in COPY_NAMES else None
            for d in defs:
                others = live[d[0]]
                # not with itself, nor a copy's destination with its source (same value)
                source = pair[1] if pair is not None and pair[0] == d else d
                if d in others or source in others:
                    others = others - {d, source}
                if not others:
                    continue
                edges[d] |= others
                for other in others:
                    edges[other].add(d)
            if pair:
                hints[pair[0]].append(pair[1])
                hints[pair[1]].append(pair[0])
            for k in defs:
                live[k[0]].discard(k)
            for k in uses:
                live[k[0]].add(k)
    return edges, hints


def allocate_registers(function: Function, abi: AbiSpec) -> Function:
    touched: set[RegKey] = set()
    edges, hints = interference(function, abi, touched)
    virtuals = sorted(k for k in touched if k[1] >= VIRTUAL_BASE)
    # the colour of every register key: physical ones are their own; virtual ones as
    # they are coloured (in id order)
    colour: dict[RegKey, int] = {k: k[1] for k in edges if k[1] < VIRTUAL_BASE}
    groups = _register_groups(function)
    orders = {cls: [r.id for r in regs] for cls, regs in abi.allocation_order.items()}
    allowed = {cls: set(order) for cls, order in orders.items()}
    no_hints: list[RegKey] = []

    for key in virtuals:
        if key in colour:
            continue
        if key in groups:
            _colour_group(function, abi, groups[key], edges, colour)
            continue
        cls = key[0]
        order, ok = orders[cls], allowed[cls]
        taken = set(map(colour.get, edges[key])) if key in edges else set()
        choice = None
        for h in hints.get(key, no_hints):       # a copy's partner's colour first
            c = h[1] if h[1] < VIRTUAL_BASE else colour.get(h)
            if c is not None and c in ok and c not in taken:
                choice = c
                break
        else:
            for c in order:
                if c not in taken:
                    choice = c
                    break
        if choice is None:
            taken.discard(None)
            raise AllocationError(
                f"{function.symbol}: out of {cls} registers for v{key[1]} "
                f"({len(taken)} of {len(order)} busy); the lowering must use fewer")
        colour[key] = choice

    body = _bind(function.body, colour)
    return replace(function, body=body)


def _bind(body: list, colour: dict[RegKey, int]) -> list:
    """The body with every virtual register replaced by its colour."""
    bound: dict[int, object] = {}          # id(operand) -> with colours (operands repeat)
    out = []
    append = out.append
    for item in body:
        if type(item) is Instruction:
            new = []
            changed = False
            for op in item.operands:
                got = bound.get(id(op))
                if got is None:
                    got = bound[id(op)] = _bind_operand(op, colour)
                if got is not op:
                    changed = True
                new.append(got)
            if changed:
                item = item.with_operands(tuple(new))
        append(item)
    return out


def _bind_operand(op, colour: dict[RegKey, int]):
    t = type(op)
    if t is Reg:
        if op.id < VIRTUAL_BASE:
            return op
        return Reg(op.cls, colour[op.cls, op.id], op.width, op.arr, op.lane)
    if t is Mem:
        base, index = op.base, op.index
        if (base is None or base.id < VIRTUAL_BASE) and (
                index is None or index.id < VIRTUAL_BASE):
            return op
        return op.with_registers(_bind_operand(base, colour) if base is not None else None,
                                 _bind_operand(index, colour) if index is not None else None)
    if t is VList:
        return op.with_regs(tuple(_bind_operand(r, colour) for r in op.regs))
    return op


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


def _colour_of(key: RegKey, colour: dict[RegKey, int]) -> int | None:
    return key[1] if key[1] < VIRTUAL_BASE else colour.get(key)


def _colour_group(function, abi, keys, edges, colour) -> None:
    """Colour the registers of one list consecutively (mod 32, as A64 lists wrap)."""
    cls = keys[0][0]
    order = [r.id for r in abi.allocation_order[cls]]
    allowed = set(order)
    n = abi.vector_registers
    # the colours each register's neighbours have (none changes while the list is placed)
    taken = [{_colour_of(x, colour) for x in edges[k]} - {None} for k in keys]
    for first in order:
        ids = [(first + i) % n for i in range(len(keys))]
        if all(c in allowed and c not in busy for c, busy in zip(ids, taken)):
            for c, k in zip(ids, keys):
                colour[k] = c
            return
    raise AllocationError(f"{function.symbol}: no {len(keys)} consecutive free {cls} "
                          f"registers for the list {[f'v{k[1]}' for k in keys]}")
