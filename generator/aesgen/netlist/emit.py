"""Emit a lowered netlist through the DSL, compile it with the real passes, and run it.

``build_function`` turns a Lowering (two_operand, three_operand or ternary) into a
Function over virtual registers::

    void sym(const vec in[8], vec out[8], vec scratch[])   # SysV: rdi, rsi, rdx

where ``vec`` is an xmm (two_operand, SSE), ymm (three_operand, AVX2) or zmm (ternary,
AVX-512) of bit-sliced state, in[0] the most significant S-box input bit. The loads and
stores of in/out are in phases "load"/"store"; the S-box itself is phase "sbox", so its
instruction count can be read off the compiled function. ``scratch`` holds spills; it and
``in``/``out`` should be 64-byte aligned (legacy SSE memory operands need 16).

``compile_lowering`` runs ``aesgen.passes.compile_function`` (SysV x86-64, 16 vector
registers, 32 for AVX-512): the DSL's register allocator assigns the registers; the
netlist layer only chose the order and where values live. ``run_function`` interprets the
compiled instructions (physical registers, memory, VPTERNLOGD immediates) over 256-lane
ints, so a test can check the S-box through what would be assembled.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

from ..dsl.builder import KernelBuilder
from ..dsl.ir import Function
from ..dsl.operands import VEC, Imm, Mem, Reg, gp
from ..kernels.vector_ops import VectorOps
from ..passes import compile_function
from ..passes.abi import SYSV_X86_64, sysv_with_vectors
from ..passes.regalloc import AllocationError
from .evaluate import ALL, INPUTS, check_outputs
from ..isa.table import load_table
from .lower import ONES, Lowering, SEMANTICS, is_mem, lower

ENCODING = {"two_operand": ("sse", 128), "three_operand": ("avx", 256), "ternary": ("evex", 512)}
ABI = {"sse": SYSV_X86_64, "avx": SYSV_X86_64, "evex": sysv_with_vectors(32)}

# DSL names of the logic instructions by encoding (xor goes through VectorOps.xor)
LOGIC = {
    "sse": {"and": "pand", "or": "por", "andn": "pandn"},
    "avx": {"and": "vpand", "or": "vpor", "andn": "vpandn"},
    "evex": {"and": "vpandq", "or": "vporq", "andn": "vpandnq"},
}


def symbol_for(lowering: Lowering) -> str:
    safe = "".join(ch if ch.isalnum() else "_" for ch in lowering.netlist)
    return f"aesgen_sbox_{safe}_{lowering.strategy}"


def build_function(lowering: Lowering, symbol: str | None = None) -> Function:
    if lowering.strategy not in ENCODING:
        raise ValueError(f"no x86 emitter for strategy {lowering.strategy!r}")
    encoding, width = ENCODING[lowering.strategy]
    nbytes = width // 8
    b = KernelBuilder(load_table("x86_64"), symbol or symbol_for(lowering),
                      doc=f"S-box netlist {lowering.netlist}, {lowering.strategy} "
                          f"({lowering.instructions} instructions)")
    v = VectorOps(b, encoding)
    b.asm.endbr64()
    p_in, p_out, p_scratch = b.gp(), b.gp(), b.gp()
    b.asm.mov(p_in, gp("rdi"))
    b.asm.mov(p_out, gp("rsi"))
    b.asm.mov(p_scratch, gp("rdx"))
    inputs = [b.vec(width) for _ in lowering.inputs]
    with b.phase("load"):
        for i, x in enumerate(inputs):
            v.load(x, Mem(width, base=p_in, disp=i * nbytes), aligned=False)
    with b.phase("sbox"):
        outputs = emit_lowering(b, v, lowering, inputs,
                                lambda slot: Mem(width, base=p_scratch, disp=slot * nbytes))
    with b.phase("store"):
        for i, x in enumerate(outputs):
            v.store(Mem(width, base=p_out, disp=i * nbytes), x, aligned=False)
    b.asm.ret()
    return b.build()


def emit_lowering(b: KernelBuilder, v: VectorOps, lowering: Lowering, inputs: list[Reg],
                  slot) -> list[Reg]:
    """Emit ``lowering`` into ``b`` with S-box input i in ``inputs[i]`` (virtual registers of
    one width, which the code may overwrite); returns the registers holding the outputs.
    ``slot(n)`` is the memory operand of spill slot n. The encoding is ``v``'s."""
    encoding = v.encoding
    width = inputs[0].width
    nbytes = width // 8
    vregs: dict[int, Reg] = dict(zip(lowering.inputs, inputs))

    def reg(x: int) -> Reg:
        if x not in vregs:
            vregs[x] = b.vec(width)
        return vregs[x]

    def operand(x):
        if isinstance(x, int):
            return vregs[x]
        if is_mem(x):
            return slot(x[1])
        if x == ONES:
            return b.const(f"ones{width}", b"\xff" * nbytes, align=min(64, nbytes))
        raise ValueError(f"bad operand {x!r}")

    for ins in lowering.code:
        srcs = [operand(s) for s in ins.srcs]
        if ins.op == "store":
            v.store(operand(ins.dst), srcs[0], aligned=False)
            continue
        dst = reg(ins.dst)
        if ins.op == "copy":
            v.copy(dst, srcs[0])
        elif ins.op == "load":
            v.load(dst, srcs[0], aligned=False)
        elif ins.op == "xor":
            v.xor(dst, *srcs)
        elif ins.op in LOGIC[encoding]:
            name = LOGIC[encoding][ins.op]
            if encoding == "sse":
                if dst != srcs[0]:
                    raise ValueError(f"{ins}: two-operand form must overwrite its source")
                b.emit(name, dst, srcs[1])
            else:
                b.emit(name, dst, *srcs)
        elif ins.op == "ternlog":
            if dst != srcs[0]:
                raise ValueError(f"{ins}: VPTERNLOGD overwrites its first source")
            v.ternary(dst, srcs[1], srcs[2], ins.imm)
        else:
            raise ValueError(f"no {encoding} instruction for {ins.op}")
    return [vregs[x] for x in lowering.outputs]


@dataclass(frozen=True)
class Compiled:
    lowering: Lowering
    function: Function | None          # None when allocation failed
    error: str = ""

    @property
    def ok(self) -> bool:
        return self.function is not None

    def count(self, phase: str = "sbox") -> int:
        if self.function is None:
            return 0
        return sum(1 for ins in self.function.instructions() if ins.phase == phase)

    @property
    def registers_used(self) -> int:
        if self.function is None:
            return 0
        return len({op.id for ins in self.function.instructions() for op in ins.operands
                    if isinstance(op, Reg) and op.cls == VEC})


@lru_cache(maxsize=None)
def compile_lowering(lowering: Lowering) -> Compiled:
    encoding, _ = ENCODING[lowering.strategy]
    fn = build_function(lowering)
    try:
        return Compiled(lowering, compile_function(fn, ABI[encoding]))
    except AllocationError as e:
        return Compiled(lowering, None, str(e))


def compile_netlist(netlist, strategy: str) -> Compiled:
    return compile_lowering(lower(netlist, strategy))


# ------------------------------------------------------------------------------------------
# an interpreter for the compiled (physical-register) function
# ------------------------------------------------------------------------------------------

MOVES = {"movdqa", "movdqu", "vmovdqa", "vmovdqu", "vmovdqa64", "vmovdqu64"}
TWO_OPERAND = {"pxor": "xor", "pand": "and", "por": "or", "pandn": "andn"}
THREE_OPERAND = {"vpxor": "xor", "vpand": "and", "vpor": "or", "vpandn": "andn",
                 "vpxorq": "xor", "vpandq": "and", "vporq": "or", "vpandnq": "andn"}
IGNORED = {"endbr64", "vzeroupper", "push", "pop"}


def run_function(function: Function, inputs=INPUTS, mask: int = ALL,
                 width: int | None = None) -> list[int]:
    """Interpret a compiled netlist function; returns the 8 output lane vectors."""
    if width is None:
        width = max(op.width for ins in function.instructions() for op in ins.operands
                    if isinstance(op, Reg) and op.cls == VEC)
    nbytes = width // 8
    gpr: dict[int, tuple[str, int]] = {gp("rdi").id: ("in", 0), gp("rsi").id: ("out", 0),
                                       gp("rdx").id: ("scratch", 0)}
    vec: dict[int, int] = {}
    memory: dict[tuple[str, int], int] = {("in", i * nbytes): x for i, x in enumerate(inputs)}

    def address(m: Mem) -> tuple[str, int]:
        if m.rip_label is not None:
            return ("const", m.rip_label)
        if m.index is not None:
            raise ValueError("indexed addressing is not expected here")
        name, off = gpr[m.base.id]
        return (name, off + m.disp)

    def read(op) -> int:
        if isinstance(op, Reg):
            if op.id not in vec:
                raise RuntimeError(f"{op!r} read before it is written")
            return vec[op.id]
        if isinstance(op, Mem):
            where = address(op)
            if where[0] == "const":
                data = function.constants[where[1]][1]
                if data == b"\xff" * len(data):
                    return mask
                raise ValueError(f"unexpected constant {where[1]}")
            if where not in memory:
                raise RuntimeError(f"memory {where} read before it is written")
            return memory[where]
        raise TypeError(op)

    def write(op, value: int) -> None:
        if isinstance(op, Reg):
            vec[op.id] = value
        else:
            memory[address(op)] = value

    for ins in function.instructions():
        name, ops = ins.name, ins.operands
        if name in IGNORED:
            continue
        if name == "ret":
            break
        if name == "mov":
            gpr[ops[0].id] = gpr[ops[1].id]
        elif name in MOVES:
            write(ops[0], read(ops[1]))
        elif name in TWO_OPERAND:
            write(ops[0], SEMANTICS[TWO_OPERAND[name]]([read(ops[0]), read(ops[1])], mask, None))
        elif name in THREE_OPERAND:
            write(ops[0], SEMANTICS[THREE_OPERAND[name]]([read(ops[1]), read(ops[2])], mask,
                                                         None))
        elif name == "vpternlogd":
            imm = ops[3].value if isinstance(ops[3], Imm) else None
            write(ops[0], SEMANTICS["ternlog"]([read(ops[0]), read(ops[1]), read(ops[2])],
                                               mask, imm))
        elif name == "vzeroall":
            vec.clear()
        else:
            raise NotImplementedError(f"interpreter: {name}")
    return [memory[("out", i * nbytes)] for i in range(8)]


def check_compiled(compiled: Compiled, forward: bool = True):
    if compiled.function is None:
        raise ValueError(f"{compiled.lowering.netlist}/{compiled.lowering.strategy} did not "
                         f"compile: {compiled.error}")
    name = f"{compiled.lowering.netlist}/{compiled.lowering.strategy}/compiled"
    return check_outputs(name, run_function(compiled.function), forward)
