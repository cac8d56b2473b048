"""Function frame: keep the callee-saved registers the allocator used, scrub vectors at exit,
and say what the frame did (FrameStep) for the printer's unwind information."""
from __future__ import annotations

from dataclasses import replace

from ..dsl.ir import FrameStep, Function, Instruction
from ..dsl.operands import A64_GP, A64_VEC, GP, SP, VEC, Imm, Masked, Mem, Reg, VList, gp, xreg
from ..isa.table import load_table
from .abi import AbiSpec


def _make(abi: AbiSpec, name: str, *operands, phase: str = "frame",
          comment: str = "") -> Instruction:
    table = load_table(abi.isa)
    return Instruction(table.match(name, operands), operands, phase, "frame", comment)


def _used_keys(instructions: list[Instruction]) -> set:
    """The keys of every register the instructions read or write: every register an
    operand names (each operand position of a table form is read, written or both)."""
    keys = set()
    add = keys.add
    for ins in instructions:
        for op in ins.operands:
            t = type(op)
            if t is Reg:
                add((op.cls, op.id))
            elif t is Mem:
                if op.base is not None:
                    add((op.base.cls, op.base.id))
                if op.index is not None:
                    add((op.index.cls, op.index.id))
            elif t is VList:
                keys.update((r.cls, r.id) for r in op.regs)
            elif t is Masked:
                add((op.reg.cls, op.reg.id))
    return keys


def insert_frame(function: Function, abi: AbiSpec) -> Function:
    """Keep the callee-saved registers the function uses, after the entry's endbr64: push
    the general-purpose ones; where the convention keeps vector registers (Win64: xmm6-15)
    lower the stack pointer and store them, then restore them before each ret. A function
    that stores vectors or calls another of its file under such a convention keeps the
    stack 16-byte aligned (its callee's slots are then aligned too).

    With ``scrub_vectors`` every vector register the function touched is zeroed before
    each return (before the kept ones are loaded back), so no round key or keystream
    outlives the call in a register. Memory operands based on %rsp are written as at entry
    (stack arguments at 8(%rsp), 16(%rsp), ... under SysV); the frame moves them by its
    size. Each step of the frame is followed by a FrameStep, from which the printer writes
    the flavour's unwind information. AArch64 functions get their own frame
    (``insert_frame_a64``).
    """
    if abi.isa == "aarch64":
        return insert_frame_a64(function, abi)
    instructions = function.instructions()
    used_keys = _used_keys(instructions)
    saved = tuple(r for r in abi.callee_saved if r.cls == GP and r.key in used_keys)
    kept_vectors = tuple(r for r in abi.callee_saved if r.cls == VEC and r.key in used_keys)
    calls = any(ins.is_call for ins in instructions)
    vectors = sorted(k[1] for k in used_keys if k[0] == VEC)
    uses_vex = any(ins.name.startswith("v") for ins in instructions)
    keeps_vectors = any(r.cls == VEC for r in abi.callee_saved)     # Win64: xmm6-15
    alloc = 0
    if kept_vectors or (calls and keeps_vectors):
        alloc = 16 * len(kept_vectors)
        alloc += (8 + 8 * len(saved) + alloc) % 16        # 16-aligned below the frame
    shift = 8 * len(saved) + alloc
    rsp = gp("rsp")
    move = "vmovdqu" if uses_vex else "movdqu"

    def rebase(item):
        if not shift or not isinstance(item, Instruction) or not any(
                type(op) is Mem and op.base is not None and op.base.id == rsp.id
                and op.base == rsp for op in item.operands):
            return item
        ops = tuple(replace(op, disp=op.disp + shift)
                    if isinstance(op, Mem) and op.base == rsp else op for op in item.operands)
        return item if ops == item.operands else replace(item, operands=ops)

    prologue: list = []
    for r in saved:
        prologue += [_make(abi, "push", r), FrameStep("push", r)]
    if alloc:
        prologue += [_make(abi, "sub", rsp, Imm(alloc)), FrameStep("alloc", offset=alloc)]
    for i, r in enumerate(kept_vectors):
        prologue += [_make(abi, move, Mem(128, base=rsp, disp=16 * i), r),
                     FrameStep("save", r, 16 * i)]
    prologue.append(FrameStep("prologue_end"))

    def epilogue() -> list:
        """The steps before one ret (made anew for each: no instruction twice in a body)."""
        steps: list = [FrameStep("epilogue")]
        if function.scrub_vectors and vectors:
            if uses_vex and keeps_vectors:
                # vzeroall would clear xmm6-15 the function did not save: each used one
                # instead (VEX.128 clears its upper bits too), then the other upper halves
                for v in vectors:
                    x = Reg(VEC, v, 128)
                    steps.append(_make(abi, "vpxorq" if v >= 16 else "vpxor", x, x, x))
                steps.append(_make(abi, "vzeroupper"))
            elif uses_vex:
                for v in vectors:        # vzeroall leaves zmm16-31 alone
                    if v >= 16:
                        x = Reg(VEC, v, 128)
                        steps.append(_make(abi, "vpxorq", x, x, x))
                steps.append(_make(abi, "vzeroall"))
            else:
                for v in vectors:
                    x = Reg(VEC, v, 128)
                    steps.append(_make(abi, "pxor", x, x))
        elif uses_vex:
            steps.append(_make(abi, "vzeroupper"))   # leave no dirty upper state behind
        for i, r in enumerate(kept_vectors):
            steps += [_make(abi, move, r, Mem(128, base=rsp, disp=16 * i)),
                      FrameStep("restore", r, 16 * i)]
        if alloc:
            steps += [_make(abi, "add", rsp, Imm(alloc)), FrameStep("free", offset=alloc)]
        for r in reversed(saved):
            steps += [_make(abi, "pop", r), FrameStep("pop", r)]
        return steps

    body = []
    for n, item in enumerate(function.body):
        item = rebase(item)
        is_ins = isinstance(item, Instruction)
        if n == 0 and not (is_ins and item.name == "endbr64"):
            raise ValueError(f"{function.symbol}: entry must start with endbr64")
        if is_ins and item.name == "ret":
            body.extend(epilogue())
            body.append(item)
            body.append(FrameStep("epilogue_end"))
            continue
        body.append(item)
        if n == 0:
            body.extend(prologue)
    return replace(function, body=body, saved_registers=saved + kept_vectors)


def drop_self_moves(function: Function, abi: AbiSpec) -> Function:
    def is_self_move(item) -> bool:
        return (isinstance(item, Instruction) and item.name in ("mov", "movdqa", "vmovdqa")
                and len(item.operands) == 2 and item.operands[0] == item.operands[1])
    return replace(function, body=[it for it in function.body if not is_self_move(it)])


BTI_C = 34     # `bti c` is `hint #34`: a valid target of an indirect call (BLR)
PACIASP = 25   # `paciasp`: sign x30 with the A key and sp as the modifier
AUTIASP = 29   # `autiasp`: authenticate it (a fault when the stored address was changed)


def insert_frame_a64(function: Function, abi: AbiSpec) -> Function:
    """AAPCS64 frame: after the entry's `bti c`, sp drops by a multiple of 16 and the used
    callee-saved registers are stored (x19-x28 with stp/str, the low halves d8-d15 of v8-v15
    likewise); before each ret they are loaded back and sp restored. A leaf never touches
    lr (x30) or x29. A function that calls another of its file (bl: GCM's entry points call
    their data path) keeps x29 and x30 in the frame too, the return address signed before
    it is stored (PACIASP) and authenticated after it is loaded back (AUTIASP). Memory
    operands based on sp are written as at entry (the stack arguments at [sp], [sp, #8]);
    the frame moves them by its size.

    With ``scrub_vectors`` every vector register the function used is zeroed (`eor v, v, v`)
    before each return, d8-d15 before their caller's values are reloaded.
    """
    instructions = function.instructions()
    used_keys = _used_keys(instructions)
    saved = tuple(r for r in abi.callee_saved if r.key in used_keys)
    gps = [r.x for r in saved if r.cls == A64_GP]
    calls = any(ins.is_call for ins in instructions)
    if calls:
        gps = [xreg(29), xreg(30)] + gps        # a call (bl) overwrites the return address
    vecs = [r.d for r in saved if r.cls == A64_VEC]
    size = (8 * (len(gps) + len(vecs)) + 15) // 16 * 16
    vectors = sorted(k[1] for k in used_keys if k[0] == A64_VEC)

    def slots(regs: list[Reg], first: int, store: bool) -> list:
        out = []
        for i in range(0, len(regs), 2):
            off = 8 * (first + i)
            pair = regs[i:i + 2]
            if len(pair) == 2:
                out.append(_make(abi, "stp" if store else "ldp", *pair, Mem(128, base=SP, disp=off)))
            else:
                out.append(_make(abi, "str" if store else "ldr", pair[0], Mem(64, base=SP, disp=off)))
            out += [FrameStep("save" if store else "restore", r, off + 8 * j)
                    for j, r in enumerate(pair)]
        return out

    prologue: list = []
    if calls:
        prologue += [_make(abi, "hint", Imm(PACIASP), comment="paciasp"),
                     FrameStep("sign_return")]
    if size:
        prologue += [_make(abi, "sub", SP, SP, Imm(size)), FrameStep("alloc", offset=size)]
        prologue += slots(gps, 0, True) + slots(vecs, len(gps), True)
    prologue.append(FrameStep("prologue_end"))

    def epilogue() -> list:
        """The steps before one ret (made anew for each: no instruction twice in a body)."""
        steps: list = [FrameStep("epilogue")]
        if function.scrub_vectors:
            for v in vectors:
                x = Reg(A64_VEC, v, 128, "16b")
                steps.append(_make(abi, "eor", x, x, x))
        if size:
            steps += slots(gps, 0, False) + slots(vecs, len(gps), False)
            steps += [_make(abi, "add", SP, SP, Imm(size)), FrameStep("free", offset=size)]
        if calls:
            steps += [_make(abi, "hint", Imm(AUTIASP), comment="autiasp"),
                      FrameStep("auth_return")]
        return steps

    body = []
    for n, item in enumerate(function.body):
        is_ins = isinstance(item, Instruction)
        if is_ins and size and any(type(op) is Mem and op.base is not None
                                   and op.base.id == SP.id and op.base == SP
                                   for op in item.operands):
            # written as at entry (stack arguments at [sp], [sp, #8]): the frame moves them
            item = replace(item, operands=tuple(
                replace(op, disp=op.disp + size) if isinstance(op, Mem) and op.base == SP
                else op for op in item.operands))
        if n == 0 and not (is_ins and item.name == "hint" and item.operands == (Imm(BTI_C),)):
            raise ValueError(f"{function.symbol}: entry must start with bti c (hint #34)")
        if is_ins and item.name == "ret":
            body.extend(epilogue())
            body.append(item)
            body.append(FrameStep("epilogue_end"))
            continue
        body.append(item)
        if n == 0:
            body.extend(prologue)
    return replace(function, body=body, saved_registers=saved)
