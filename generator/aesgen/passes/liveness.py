"""Control-flow graph and liveness of registers (virtual and physical) over a Function."""
from __future__ import annotations

from dataclasses import dataclass, field

from ..dsl.ir import Function, Instruction, LabelDef
from ..dsl.operands import Masked, Mem, Reg, VList
from .abi import AbiSpec

RegKey = tuple[str, int]
ZEROING_IDIOMS = ("xor", "pxor", "vpxor", "vpxorq", "vpxord", "eor")   # eor: AArch64


@dataclass
class Block:
    index: int
    labels: list[str] = field(default_factory=list)
    instructions: list[Instruction] = field(default_factory=list)
    successors: list[int] = field(default_factory=list)
    live_in: set[RegKey] = field(default_factory=set)
    live_out: set[RegKey] = field(default_factory=set)


def uses_and_defs(ins: Instruction, function: Function, abi: AbiSpec) -> tuple[set, set]:
    return _effects(ins, function, abi, None)


def _effects(ins: Instruction, function: Function, abi: AbiSpec,
             touched: set | None) -> tuple[set, set]:
    """uses_and_defs; with ``touched``, every register the instruction names as read or
    written is added to it. One walk over the operands (the table form says what each
    operand position reads and writes)."""
    uses: set = set()
    written: list = []
    for (reads, writes), op in zip(ins.form.access, ins.operands):
        t = type(op)
        if t is Reg:
            if reads:
                uses.add((op.cls, op.id))
            if writes:
                written.append(op)
        elif t is Mem:
            base = op.base
            if base is not None:
                uses.add((base.cls, base.id))
                if op.writeback:                  # AArch64 pre/post-index
                    written.append(base)
            if op.index is not None:
                uses.add((op.index.cls, op.index.id))
        elif t is VList:
            if reads:
                uses.update((r.cls, r.id) for r in op.regs)
            if writes:
                written.extend(op.regs)
        elif t is Masked:
            uses.add((op.reg.cls, op.reg.id))
    defs = {(r.cls, r.id) for r in written}
    if touched is not None:
        touched |= uses
        touched |= defs
    name = ins.form.base_name
    if name in ZEROING_IDIOMS:
        ops = ins.operands
        if all(type(op) is Reg for op in ops) and len({op.key for op in ops}) == 1:
            uses = set()             # xor x, x: writes zero, reads nothing
    for r in written:
        if r.width == 8 and r.cls == "gp":  # a byte write keeps bits 8..63: also a read
            uses.add((r.cls, r.id))
    if name in CALLS:                # reads the argument registers, may change any scratch one
        uses |= {r.key for r in abi.arguments}
        defs |= abi.clobbered_by_call()
    if name == "ret" and function.returns_value:
        uses.add(abi.return_register.key)
    return uses, defs


CALLS = ("call", "bl")           # the names Instruction.is_call knows


def build_cfg(function: Function) -> list[Block]:
    blocks: list[Block] = [Block(0)]
    for item in function.body:
        current = blocks[-1]
        if isinstance(item, LabelDef):
            if current.instructions:
                blocks.append(Block(len(blocks)))
            blocks[-1].labels.append(item.name)
        elif isinstance(item, Instruction):
            current.instructions.append(item)
            if item.is_jump or item.name == "ret":
                blocks.append(Block(len(blocks)))
    if not blocks[-1].instructions and not blocks[-1].labels:
        blocks.pop()
    by_label = {name: b.index for b in blocks for name in b.labels}
    for b in blocks:
        last = b.instructions[-1] if b.instructions else None
        if last is not None and last.is_jump:
            b.successors.append(by_label[last.label_target()])
        if (last is None or not last.is_unconditional) and b.index + 1 < len(blocks):
            b.successors.append(b.index + 1)
    return blocks


def compute_liveness(function: Function, abi: AbiSpec,
                     effects: dict[int, tuple[set, set]] | None = None,
                     touched: set[RegKey] | None = None) -> list[Block]:
    """Live-in/out sets per block. ``effects`` (filled here when given) maps id(ins) to its
    (uses, defs), so a caller that walks the instructions again need not recompute them;
    ``touched`` (likewise) gets every register an instruction names as read or written."""
    blocks = build_cfg(function)
    summary = []
    for b in blocks:
        use: set[RegKey] = set()
        kill: set[RegKey] = set()
        for ins in b.instructions:
            u, d = _effects(ins, function, abi, touched)
            if effects is not None:
                effects[id(ins)] = (u, d)
            use |= u - kill
            kill |= d
        summary.append((use, kill))
    changed = True
    while changed:
        changed = False
        for b in reversed(blocks):
            out: set[RegKey] = set()
            for s in b.successors:
                out |= blocks[s].live_in
            use, kill = summary[b.index]
            new_in = use | (out - kill)
            if out != b.live_out or new_in != b.live_in:
                b.live_out, b.live_in = out, new_in
                changed = True
    return blocks
