"""A steady-state loop's throughput bound from the CPU's model in targets/uarch: every
instruction is charged to the resources its class uses, and the loop takes as long as its
busiest resource needs. The facts are the preset's (measured where llvm-mca is wrong, e.g.
VAESENC on zmm at one a cycle on Zen 4), so this is the model `aesgen correlate` sets beside
llvm-mca's, and what a preset's choices can be ranked by without llvm-mca.

Resources (x86-64):
  issue      every instruction, issue_width a cycle
  aes, clmul AES rounds and carry-less multiplies at their class's rate for the width
             (one resource when the model says they share pipes: aes_clmul_shared)
  shuffle    byte and lane shuffles, extracts, inserts, broadcasts from a register (one
             resource with AES where the model says so: aes_shuffle_shared, Zen 5)
  vector     every vector instruction over the vector_alu_ports
  load       vector loads (memory operands read), loads_per_cycle
  store      vector stores, stores_per_cycle
A 512-bit operation counts twice against shuffle, vector, load and store where the model
says zmm runs as two halves (zmm_split), and runs on zmm_alu_ports where the model names
fewer ports for 512-bit operations (Intel's fused ports 0 and 1, and 5); the AES and CLMUL
classes have their own zmm rates.
Two latencies enter: the longest dependency path through a pass (a block's rounds), over
the passes the reorder buffer holds at once, which sets the time when few blocks are in
flight on a core with a small window (or an in-order one); and the
loop-carried recurrence: the longest path from a register's value at the loop's top to its
value at the bottom (GHASH's accumulator through its multiply and reduction), which no
number of passes in flight hides.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Sequence

from ..dsl.ir import Instruction
from ..dsl.operands import Mem, Reg
from ..uarch import UarchError, UarchModel

AES = re.compile(r"v?aes(enc|dec)(last)?$")
CLMUL = re.compile(r"v?pclmulqdq$")
SHUFFLE = re.compile(r"v?(pshuf[bdw]|pshufhw|pshuflw|palignr|p[sl][lr]dq|punpck\w+|"
                     r"perm\w*|shuf[if]\d+x\d+|extract[if]\d+x\d+|insert[if]\d+x\d+|"
                     r"broadcast[if]\d+x\d+|pbroadcast\w|align[dq]|extracti128|inserti128|"
                     r"pmovzx\w+|pmovsx\w+|pack\w+)$")
TERNARY = re.compile(r"vpternlog[dq]$")
GF2P8 = re.compile(r"vgf2p8\w+$")
MOVE = re.compile(r"v?mov(dq[au]\d*|ap[sd]|up[sd]|q|d)$|vbroadcasti32x4$|vbroadcasti64x[24]$")


@dataclass
class Bound:
    cycles: float                                    # of the whole loop
    busiest: str                                     # the resource that sets it
    resources: dict[str, float] = field(default_factory=dict)


def _vector_width(ins: Instruction) -> int:
    widths = [op.width for op in ins.operands
              if (isinstance(op, Reg) and op.cls == "vec") or isinstance(op, Mem)]
    return max(widths, default=0)


def _class(name: str) -> str | None:
    for cls, pattern in (("aes", AES), ("clmul", CLMUL), ("ternary_logic", TERNARY),
                         ("gf2p8affine", GF2P8), ("shuffle", SHUFFLE)):
        if pattern.match(name):
            return cls
    return None


def loop_bound(loop: Sequence[Instruction], model: UarchModel) -> Bound:
    """The cycles one pass through ``loop`` (straight-line x86-64 code) needs on ``model``."""
    split = bool(_fact(model, "zmm_split", False))
    ports = len(_fact(model, "vector_alu_ports", [0, 1, 2, 3]))
    zmm_ports = len(_fact(model, "zmm_alu_ports", _fact(model, "vector_alu_ports",
                                                        [0, 1, 2, 3])))
    res = {"issue": 0.0, "aes": 0.0, "clmul": 0.0, "shuffle": 0.0, "gf2p8affine": 0.0,
           "vector": 0.0, "load": 0.0, "store": 0.0}
    for ins in loop:
        res["issue"] += 1 / model.fact("issue_width")
        name = ins.name
        width = _vector_width(ins)
        halves = 2 if (width == 512 and split) else 1
        for spec, op in zip(ins.form.operands, ins.operands):
            if isinstance(op, Mem) and width and name != "lea":
                if "r" in spec.access:
                    res["load"] += halves / model.fact("loads_per_cycle")
                if "w" in spec.access:
                    res["store"] += halves / model.fact("stores_per_cycle")
        vec_regs = [op for op in ins.operands if isinstance(op, Reg) and op.cls == "vec"]
        if not vec_regs or (MOVE.match(name) and len(vec_regs) == 1):
            continue                     # scalar, or a vector load or store alone
        if MOVE.match(name):
            continue                     # a register copy: renamed away
        cls = _class(name)
        if cls in ("aes", "clmul"):
            suffix = {256: "_ymm", 512: "_zmm"}.get(width, "")
            res[cls] += 1 / model.timing(cls + suffix).per_cycle
        elif cls in ("shuffle", "gf2p8affine"):
            res[cls] += halves / model.timing(cls).per_cycle
        res["vector"] += halves / (zmm_ports if width == 512 and not split else ports)
    # pipes AES shares: one resource, its classes' times added (each class's rate is the
    # shared pipes' count, so the sum is their busy time)
    aes_pipes = ["aes"] + [cls for cls in ("clmul", "shuffle")
                           if _fact(model, f"aes_{cls}_shared", False)]
    if len(aes_pipes) > 1:
        res["+".join(aes_pipes)] = sum(res.pop(cls) for cls in aes_pipes)
    # passes in flight at once: as many as the reorder buffer holds (an in-order core: one)
    in_flight = max(1.0, _fact(model, "rob", 0) / max(1, len(loop)))
    res["critical path"] = critical_path(loop, model) / in_flight
    res["recurrence"] = recurrence(loop, model)
    busiest = max(res, key=lambda k: res[k])
    return Bound(res[busiest], busiest, res)


def critical_path(loop: Sequence[Instruction], model: UarchModel) -> float:
    """The longest dependency path through one pass (an AES block's rounds, a GFNI round's
    affine map, shuffles and XORs), registers' values at the top counted ready."""
    ready: dict = {}
    longest = 0.0
    for ins in loop:
        t = _ready(ins, model, lambda r: ready.get(r, 0.0))
        for w in ins.registers_written():
            ready[w.key] = t
        longest = max(longest, t)
    return longest


def _ready(ins: Instruction, model: UarchModel, when) -> float:
    """When ``ins``'s result is ready, its inputs ready at when(register key): a memory
    operand's load starts once its address registers are ready, and takes the load
    latency; the operation starts once its registers and its load are in."""
    regs, address = [], []
    for spec, op in zip(ins.form.operands, ins.operands):
        if isinstance(op, Reg) and "r" in spec.access:
            regs.append(op.key)
        elif isinstance(op, Mem) and "r" in spec.access and ins.name != "lea":
            address += [r.key for r in op.registers()]
            regs.append(("load",))
    if _zeroing(ins):
        return latency(ins, model)
    load_at = max((when(r) for r in address), default=0.0) + (model.timing("load").latency or 0)
    start = max((load_at if r == ("load",) else when(r) for r in regs), default=0.0)
    return start + latency(ins, model)


def _zeroing(ins: Instruction) -> bool:
    """vpxor x, x, x and the like: a zeroing idiom depends on nothing."""
    regs = [op for op in ins.operands if isinstance(op, Reg)]
    return (len(regs) >= 2 and len({r.key for r in regs}) == 1
            and ins.name.endswith(("xor", "xorq", "xord", "xorps")))


def latency(ins: Instruction, model: UarchModel) -> float:
    """Cycles from ``ins``'s inputs (a memory operand's bytes included) to its result, by
    its class in the model."""
    name = ins.name
    width = _vector_width(ins)
    cls = _class(name)
    if cls in ("aes", "clmul"):
        t = model.timing(cls + {256: "_ymm", 512: "_zmm"}.get(width, "")).latency
    elif cls is not None:
        t = model.timing(cls).latency
    elif width:
        t = model.timing("vector_logic").latency
    else:
        t = model.timing("gp_add").latency
    return t or 1


def recurrence(loop: Sequence[Instruction], model: UarchModel) -> float:
    """The longest dependency path from a register's value at the top of the loop to its
    value at the bottom (the GHASH accumulator's multiply and reduction, a counter's add):
    a pass cannot start that work before the last one ends it, however many are in
    flight."""
    none = float("-inf")
    dist: dict = {}          # source register -> {register: longest path from the source}
    written: set = set()
    for ins in loop:
        reads = set() if _zeroing(ins) else {r.key for r in ins.registers_read()}
        for r in reads:
            if r not in written:
                dist.setdefault(r, {r: 0.0})
        for w in ins.registers_written():
            for paths in dist.values():
                t = _ready(ins, model, lambda r: paths.get(r, none))
                if t == none:
                    paths.pop(w.key, None)
                else:
                    paths[w.key] = t
            written.add(w.key)
    return max((paths.get(src, 0.0) for src, paths in dist.items()), default=0.0)


def _fact(model: UarchModel, name: str, default):
    """A fact the model may leave out (a default stands in for it)."""
    try:
        return model.fact(name)
    except UarchError:
        return default
