"""Control-flow graph and liveness of registers (virtual and physical) over a Function."""
from __future__ import annotations

from dataclasses import dataclass, field

from ..dsl.ir import Function, Instruction, LabelDef
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
    uses = {r.key for r in ins.registers_read()}
    regs = [op for op in ins.operands if hasattr(op, "key")]
    if ins.name in ZEROING_IDIOMS and len(regs) == len(ins.operands) and len(
            {r.key for r in regs}) == 1:
        uses = set()                 # xor x, x: writes zero, reads nothing
    defs = set()
    for r in ins.registers_written():
        defs.add(r.key)
        if r.cls == "gp" and r.width == 8:  # a byte write keeps bits 8..63: also a read
            uses.add(r.key)
    if ins.is_call:                  # reads the argument registers, may change any scratch one
        uses |= {r.key for r in abi.arguments}
        defs |= abi.clobbered_by_call()
    if ins.name == "ret" and function.returns_value:
        uses.add(abi.return_register.key)
    return uses, defs


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
                     effects: dict[int, tuple[set, set]] | None = None) -> list[Block]:
    """Live-in/out sets per block. ``effects`` (filled here when given) maps id(ins) to its
    (uses, defs), so a caller that walks the instructions again need not recompute them."""
    blocks = build_cfg(function)
    summary = []
    for b in blocks:
        use: set[RegKey] = set()
        kill: set[RegKey] = set()
        for ins in b.instructions:
            u, d = uses_and_defs(ins, function, abi)
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
