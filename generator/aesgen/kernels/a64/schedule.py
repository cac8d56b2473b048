"""A latency-aware list scheduler for straight-line stretches of A64 code on virtual registers.

Why: the bit-sliced engine's code comes out in the order the netlist lowering chose for
register count, where consecutive instructions often depend on each other. An in-order
core (Cortex-A53: llvm-mca's model gives every 128-bit Advanced SIMD instruction a
latency of 6 and one issue a cycle) then stalls on nearly every instruction. The
scheduler reorders a stretch emitted through the DSL before register allocation:

* dependences: read-after-write (with the writer's latency), write-after-read and
  write-after-write on every register (vector and general, including post-index bases);
  memory operations keep their order when the stretch stores anything;
* a simple in-order machine: one instruction a cycle, an instruction issues when its
  inputs are ready, with the latencies of the preset's microarchitecture model (a vector
  result, a load, an integer result: ``Latencies``, from targets/uarch/); among the instructions whose predecessors are placed it takes the one
  that can issue first, then the longest latency path to the end;
* a window: only the first ``window`` instructions not yet placed (in emission order)
  compete, which keeps the register pressure near that of the emitted order;
* register pressure: it counts live vector values (live-in values until their last read,
  results until their last read; ``keep`` registers' last values stay live) and does not
  let them exceed ``budget`` while an instruction that does not add one exists. There is no
  spilling after it (the allocator fails loudly), so the budget leaves room for what the
  caller keeps live across the stretch.

Nothing moves across labels or branches: the caller marks a stretch with no control flow.
"""
from __future__ import annotations

import contextlib
from collections import defaultdict
from dataclasses import dataclass, replace

from ...dsl.builder import KernelBuilder
from ...dsl.ir import Instruction
from ...dsl.operands import A64_VEC, Mem, Reg, VList

@dataclass(frozen=True)
class Latencies:
    """Cycles until a result can be used, by what produces it."""
    vector: int     # an Advanced SIMD result (EOR, TBL, ...)
    load: int       # a load
    gp: int         # an integer result


def latencies_of(model) -> Latencies:
    """A microarchitecture model's (uarch.py) latencies of EOR, LD1 and ADD."""
    return Latencies(model.latency("vector_logic"), model.latency("load"),
                     model.latency("gp_add"))


def _latency(ins: Instruction, lat: Latencies) -> int:
    if any(isinstance(op, Mem) for op in ins.operands):
        return lat.load
    if any(r.cls == A64_VEC for r in ins.registers_written()):
        return lat.vector
    return lat.gp


def _writes_memory(ins: Instruction) -> bool:
    return any(isinstance(op, Mem) and "w" in spec.access
               for spec, op in zip(ins.form.operands, ins.operands))


WINDOW = 32


def schedule(code: list[Instruction], budget: int, latencies: Latencies,
             keep: set = frozenset(), window: int | None = None) -> list[Instruction]:
    window = WINDOW if window is None else window
    n = len(code)
    if n < 3:
        return list(code)
    preds: list[dict[int, int]] = [dict() for _ in range(n)]   # pred -> latency
    last_write: dict = {}
    readers: dict = defaultdict(list)
    memory_order = any(_writes_memory(i) for i in code)
    last_mem = None
    # values: (key, index of the writing instruction or -1 for live-in)
    value_reads: dict = defaultdict(int)
    reads_of: list[list] = [[] for _ in range(n)]
    defs_of: list[list] = [[] for _ in range(n)]
    for i, ins in enumerate(code):
        rd = {r.key for r in ins.registers_read()}
        wr = {r.key for r in ins.registers_written()}
        for k in rd:
            if k in last_write:
                w = last_write[k]
                preds[i][w] = max(preds[i].get(w, 0), _latency(code[w], latencies))
            v = (k, last_write.get(k, -1))
            if k[0] == A64_VEC:
                value_reads[v] += 1
                reads_of[i].append(v)
        for k in wr:
            for r in readers[k]:
                if r != i:
                    preds[i].setdefault(r, 0)
            if k in last_write:
                preds[i].setdefault(last_write[k], 0)
        for k in rd:
            readers[k].append(i)
        for k in wr:
            last_write[k] = i
            readers[k] = []
            if k[0] == A64_VEC:
                defs_of[i].append((k, i))
        if memory_order and any(isinstance(op, Mem) for op in ins.operands):
            if last_mem is not None:
                preds[i].setdefault(last_mem, 0)
            last_mem = i
    live_out = {(k, w) for k, w in last_write.items() if k in keep}
    succs: list[list[int]] = [[] for _ in range(n)]
    for i in range(n):
        for p in preds[i]:
            succs[p].append(i)
    height = [0] * n
    for i in reversed(range(n)):
        height[i] = _latency(code[i], latencies) + max((height[s] for s in succs[i]), default=0)

    remaining = dict(value_reads)
    live = {v for v in value_reads if v[1] == -1}
    npred = [len(p) for p in preds]
    ready_at = [0] * n
    avail = [i for i in range(n) if npred[i] == 0]
    placed: list[int] = []
    issue = [0] * n
    now = 0
    placed_flag = [False] * n + [False]
    first_open = 0

    def delta(i: int) -> int:
        d = sum(1 for v in defs_of[i] if value_reads.get(v, 0) or v in live_out)
        seen = set()
        for v in reads_of[i]:
            if v in seen:
                continue
            seen.add(v)
            uses = reads_of[i].count(v)
            if remaining[v] == uses and v not in live_out and v in live:
                d -= 1
        return d

    while avail:
        pressure = len(live)
        best = None
        while placed_flag[first_open]:
            first_open += 1
        for i in avail:
            if i >= first_open + window:
                continue
            d = delta(i)
            if d > 0 and pressure + d > budget:
                key = (1, d, i, 0)         # over budget: the fewest new values, in order
            else:
                key = (0, max(ready_at[i], now), -height[i], i)
            if best is None or key < best[0]:
                best = (key, i)
        i = best[1]
        avail.remove(i)
        placed_flag[i] = True
        t = max(now, ready_at[i])
        issue[i] = t
        now = t + 1
        placed.append(i)
        for v in reads_of[i]:
            remaining[v] -= 1
            if remaining[v] == 0 and v not in live_out:
                live.discard(v)
        for v in defs_of[i]:
            if value_reads.get(v, 0) or v in live_out:
                live.add(v)
        for s in succs[i]:
            ready_at[s] = max(ready_at[s], t + preds[s][i])
            npred[s] -= 1
            if npred[s] == 0:
                avail.append(s)
    if len(placed) != n:
        raise RuntimeError("scheduler: dependence cycle")
    return [code[i] for i in placed]


@contextlib.contextmanager
def scheduled(b: KernelBuilder, budget: int, latencies: Latencies, keep=()):
    """Reorder the instructions emitted inside (no labels or branches allowed)."""
    start = len(b.function.body)
    yield
    items = b.function.body[start:]
    if not all(isinstance(x, Instruction) and not x.is_jump for x in items):
        raise ValueError("scheduled(): a label or branch inside the stretch")
    keys = {r.key for r in keep}
    b.function.body[start:] = _rename(b, schedule(items, budget, latencies, keys), keys)


def _rename(b: KernelBuilder, code: list[Instruction], keep: set) -> list[Instruction]:
    """Give the vector registers that live only inside the stretch new ids in the order of
    their first definition: the allocator colours in id order, which for straight-line
    code is then the order of the live ranges' starts (optimal for interval graphs)."""
    seen_read_first, new_ids = set(), {}
    written = set()
    for ins in code:
        for r in ins.registers_read():
            if r.cls == A64_VEC and r.key not in written:
                seen_read_first.add(r.key)
        for r in ins.registers_written():
            written.add(r.key)
    for ins in code:
        for r in ins.registers_written():
            k = r.key
            if (r.cls == A64_VEC and k not in keep and k not in seen_read_first
                    and k not in new_ids):
                new_ids[k] = b.vec(128).id

    def swap(op):
        if isinstance(op, Reg) and op.key in new_ids:
            return replace(op, id=new_ids[op.key])
        if isinstance(op, VList):
            return op.with_regs(tuple(swap(r) for r in op.regs))
        return op

    return [ins.with_operands(tuple(swap(op) for op in ins.operands)) for ins in code]
