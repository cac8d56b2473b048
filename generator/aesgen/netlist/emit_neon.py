"""Emit a lowered netlist (strategies ``neon`` and ``neon_sha3``) as A64 Advanced SIMD.

The NEON twin of ``emit.py``'s ``emit_lowering`` (which stays the x86 emitter): every
``MI`` of a Lowering becomes one instruction of the A64 table (``isa/aarch64.isa``) on
virtual ``.16b`` registers, so the DSL's register allocator assigns them. The neon
strategies never spill with 32 registers (lower.py), so a Lowering with a memory operand
is refused rather than given a scratch area.

    MI op      A64                      semantics (lower.SEMANTICS)
    xor        eor   d, a, b            a ^ b
    and        and   d, a, b            a & b
    or         orr   d, a, b            a | b
    bic        bic   d, a, b            a & ~b
    orn        orn   d, a, b            a | ~b
    not        mvn   d, a               ~a
    copy       mov   d, a
    bsl        bsl   d(=mask), then, else
    bit        bit   d(=else), then, mask
    bif        bif   d(=then), else, mask
    eor3       eor3  d, a, b, c         a ^ b ^ c            (FEAT_SHA3)
    bcax       bcax  d, a, b, c         a ^ (b & ~c)         (FEAT_SHA3)
    movi       movi  d.2d, #-1          all ones (the XNOR/BCAX constant)
"""
from __future__ import annotations

from ..dsl.builder import KernelBuilder
from ..dsl.operands import Imm, Reg
from .lower import DESTRUCTIVE, Lowering, is_mem

BINARY = {"xor": "eor", "and": "and", "or": "orr", "bic": "bic", "orn": "orn"}
TERNARY = {"eor3": "eor3", "bcax": "bcax"}
SELECT = ("bsl", "bit", "bif")


def emit_lowering_neon(b: KernelBuilder, lowering: Lowering, inputs: list[Reg],
                       preserve_inputs: bool = False) -> list[Reg]:
    """Emit ``lowering`` into ``b`` (an A64 builder) with S-box input i in ``inputs[i]``
    (virtual vector registers the code may overwrite); returns the output registers.

    ``preserve_inputs``: a BSL/BIT/BIF that would overwrite an input register works on a
    copy instead (one MOV), so no output or temporary lives in an input register and the
    caller may write over the inputs as soon as the S-box is done."""
    if not lowering.strategy.startswith("neon"):
        raise ValueError(f"no NEON emitter for strategy {lowering.strategy!r}")
    a = b.asm
    vregs: dict[int, Reg] = dict(zip(lowering.inputs, inputs))
    originals = {r.key for r in inputs} if preserve_inputs else set()

    def src(x) -> Reg:
        if isinstance(x, int) and x in vregs:
            return vregs[x].b16
        raise ValueError(f"{lowering.netlist}/{lowering.strategy}: operand {x!r} is not a "
                         "register written before (spills are not expected on NEON)")

    def dst(x) -> Reg:
        if is_mem(x) or not isinstance(x, int):
            raise ValueError(f"{lowering.strategy}: unexpected destination {x!r}")
        if x not in vregs:
            vregs[x] = b.vec(128)
        return vregs[x].b16

    for ins in lowering.code:
        op = ins.op
        if op in DESTRUCTIVE:
            if ins.srcs[0] != ins.dst:
                raise ValueError(f"{ins}: {op} overwrites its first source")
            d = src(ins.dst)
            if d.key in originals:
                fresh = b.vec(128)
                b.emit("mov.v", fresh.b16, d)
                vregs[ins.dst] = fresh
                d = fresh.b16
            getattr(a, op)(d, src(ins.srcs[1]), src(ins.srcs[2]))
        elif op in BINARY:
            srcs = [src(s) for s in ins.srcs]
            getattr(a, BINARY[op])(dst(ins.dst), *srcs)
        elif op in TERNARY:
            srcs = [src(s) for s in ins.srcs]
            getattr(a, TERNARY[op])(dst(ins.dst), *srcs)
        elif op == "not":
            s = src(ins.srcs[0])
            a.mvn(dst(ins.dst), s)
        elif op == "copy":
            s = src(ins.srcs[0])
            b.emit("mov.v", dst(ins.dst), s)
        elif op == "movi":
            d = vregs.setdefault(ins.dst, b.vec(128))
            a.movi(d.d2, Imm((1 << 64) - 1 if ins.imm else 0))
        else:
            raise ValueError(f"no NEON instruction for netlist op {op!r} ({ins})")
    return [vregs[x] for x in lowering.outputs]
