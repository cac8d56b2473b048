"""Cycles per round of a two-operand S-box lowering, from a small out-of-order core model.

Why: on a core with three vector ALU ports, the legacy-SSE bit-sliced round loop
(``bitsliced128``) runs near its port bound, and what the instruction count does not see
decides the rest: a value stored to its spill slot and read back soon after puts
store-to-load forwarding (about 6 cycles) on the dependency chain, and register copies cost
nothing (move elimination). ``cycles_per_round`` estimates the steady-state cycles of a
round built around a lowering, so ``lower.py`` can choose among lowerings with the same
gates by time instead of by count.

What is modelled. The lowering's ``MI`` code is placed in a round (``RoundShape``): the
S-box, then the linear layer that follows it in the kernel, whose outputs feed the next
round's S-box. Several rounds are unrolled into one stream of micro-operations (uops), in
program order, and run on ``Core``:

- allocation (rename) of ``alloc_width`` fused uops a cycle, in order, stalling while the
  scheduler (``scheduler`` entries of ALU, shuffle and store-data uops not yet issued) or
  the reorder buffer (``rob`` uops not yet retired, ``retire_width`` a cycle) is full;
- each ALU or shuffle uop is bound to a port at allocation, the allowed port with the
  fewest uops bound and not yet issued (as Intel's allocator does); every cycle each port
  issues its oldest uop whose operands are ready;
- latencies: ``alu_latency`` for a logic op or PSHUFB, ``load_latency`` for a load (a
  reload, a memory source operand, a PSHUFB control or a round key: micro-fused with its
  ALU uop, so it takes no allocation slot of its own), at most ``loads_per_cycle`` loads
  and ``stores_per_cycle`` store-data uops a cycle;
- a load from a spill slot whose latest store is in the same round gets its value
  ``forward_latency`` cycles after that store's data uop ran (store-to-load forwarding),
  and not before its own ``load_latency``; a store's address is always known (the slots
  sit at fixed offsets from the context pointer), so a load never waits for one;
- a register copy is eliminated at rename: it takes an allocation slot and a reorder-buffer
  entry, no port and no latency; so do the round loop's counter and pointer updates.

Left out: the front end (the loop body, about 220 instructions, runs from the uop cache),
branch prediction, cache misses (the round keys, the shuffle controls and the spill slots
are a few KiB, always in L1), memory disambiguation (no store address is ever unknown),
bank conflicts, and moves that the renamer fails to eliminate. Port contention from the
loop's scalar uops is ignored (they have ports 6 and 10 of their own).

Where the figures come from: the preset's microarchitecture model (targets/uarch/, read
through ``core_from_model``). For Golden Cove (targets/uarch/golden-cove.toml): the port layout, widths and buffer sizes
are Intel's published figures for the Golden Cove performance core (12th-generation Core,
4th-generation Xeon; the optimization reference manual, 248966, and Intel's Architecture
Day 2021 disclosure): allocation 6 a cycle, vector logic on ports 0, 1 and 5, PSHUFB on
ports 1 and 5, 3 loads and 2 stores a cycle, a 512-entry reorder buffer retiring 8 a
cycle, 97 scheduler entries for the math ports. ``load_latency`` is the L1 hit latency
Intel gives (5); no load of the round is on the dependency chain except forwarded ones.
The other latencies were measured on this project's build machine (a Golden-Cove-class
Xeon) with dependency chains: 1 cycle for PXOR, and about 6 from a MOVDQU store to the
value of a load or a PXOR memory operand at the same address (a store-then-POR chain
takes 7 cycles a step).

How well it fits. The estimate was set against the round loop measured natively (the
kernel's loop body with each candidate S-box, TSC ticks a round, the median of interleaved
runs, reproducible to about 0.15 ticks) for 121 two-operand lowerings of bp113 spread from
the slowest to the fastest: Pearson 0.95, Spearman 0.91. It exaggerates differences about
twofold (one model cycle is about 0.4 measured ticks, 0.5 core cycles), which does not
matter for a choice. It separates the lowerings that stall on forwarding from those that
do not; among the fastest (estimates within about 2 cycles of each other, measured within
about 1 tick) it does not rank reliably.

The estimate is deterministic (integer cycles, ties broken by program order, nothing
depends on hash order) and takes about 6 ms for six rounds.
"""
from __future__ import annotations

import heapq
from dataclasses import dataclass, field
from functools import lru_cache

from ..uarch import model_for
from .lowering import ONES, Lowering, is_mem


@dataclass(frozen=True)
class Core:
    """An out-of-order x86 core, as much of it as the model uses (see the module text).
    Built from a microarchitecture model's facts (``core_from_model``), never typed here."""

    name: str
    alloc_width: int
    alu_ports: tuple[int, ...]
    shuffle_ports: tuple[int, ...]
    loads_per_cycle: int
    stores_per_cycle: int
    alu_latency: int
    load_latency: int
    forward_latency: int
    scheduler: int
    rob: int
    retire_width: int


@lru_cache(maxsize=None)
def reference_core() -> Core:
    """The core of the x86 reference model (uarch.REFERENCE_UARCH): what a lowering is timed
    on when no preset names one."""
    return core_from_model(model_for("", "x86_64"))


def core_from_model(model) -> Core:
    """The core of a microarchitecture model (uarch.py): its [core] facts and the latencies
    of PXOR and of a load. A model without one of them cannot time a lowering; the error
    names the model's file and the fact."""
    f = model.fact
    return Core(model.name, f("issue_width"), tuple(f("vector_alu_ports")),
                tuple(f("vector_shuffle_ports")), f("loads_per_cycle"), f("stores_per_cycle"),
                model.latency("vector_logic"), model.latency("load"),
                f("store_forward_latency"), f("scheduler"), f("rob"), f("retire_width"))


# --- the round around the S-box -------------------------------------------------------------

@dataclass(frozen=True)
class Uop:
    """One instruction of the round outside the S-box, over named values.

    ``kind``: ``alu`` (PXOR), ``shuffle`` (PSHUFB), ``copy`` (an eliminated register move)
    or ``other`` (a scalar uop: loop counter, pointer update). ``memory``: one more source
    is read from memory that no store of the round writes (a round key, a shuffle control).
    ``dst`` is redefined in place when it names a value that exists already.
    """

    kind: str
    dst: str = ""
    srcs: tuple[str, ...] = ()
    memory: bool = False


@dataclass(frozen=True)
class RoundShape:
    """A round: the S-box lowering, then ``after`` (the linear layer, the key, the loop).

    ``sbox_in[j]`` names the value S-box input j is taken from (a value of the previous
    round's ``after``); S-box output k is named ``sbox_out[k]`` for ``after``.
    """

    name: str
    sbox_in: tuple[str, ...]
    sbox_out: tuple[str, ...]
    after: tuple[Uop, ...] = ()


def bitsliced_sse_round() -> RoundShape:
    """The legacy-SSE bit-sliced round of ``kernels/bitsliced.py`` (``_mix_columns``).

    Slice i is S-box output 7 - i (output 0 is the most significant bit); S-box input j is
    slice 7 - j of the previous round. MixColumns as ``2t ^ rot1(a) ^ rot2(t)`` with
    ``t = a ^ rot1(a)``: 8 copies and 8 PSHUFB for rot1 (the control read from memory),
    8 XOR for t, 8 + 3 XOR for 2t, 8 PSHUFB and 8 XOR for rot2(t), 8 XOR with the round key
    from memory; then the 8 register moves that close the loop and its counter and two
    pointer updates. The order is the kernel's.
    """
    ops: list[Uop] = []
    for i in range(8):
        ops.append(Uop("copy", f"r{i}", (f"a{i}",)))
        ops.append(Uop("shuffle", f"r{i}", (f"r{i}",), memory=True))
    for i in range(8):
        ops.append(Uop("alu", f"a{i}", (f"a{i}", f"r{i}")))          # t, in place of a
    for i in range(8):
        ops.append(Uop("alu", f"r{i}", (f"r{i}", f"a{(i - 1) % 8}")))
    for i in (1, 3, 4):
        ops.append(Uop("alu", f"r{i}", (f"r{i}", "a7")))
    for i in range(8):
        ops.append(Uop("shuffle", f"a{i}", (f"a{i}",), memory=True))
        ops.append(Uop("alu", f"r{i}", (f"r{i}", f"a{i}")))
    for i in range(8):
        ops.append(Uop("alu", f"r{i}", (f"r{i}",), memory=True))
    for i in range(8):
        ops.append(Uop("copy", f"s{i}", (f"r{i}",)))
    ops.extend(Uop("other") for _ in range(3))
    return RoundShape("bitsliced128 round (SSE)",
                      sbox_in=tuple(f"s{7 - j}" for j in range(8)),
                      sbox_out=tuple(f"a{7 - k}" for k in range(8)),
                      after=tuple(ops))


SSE_ROUND = bitsliced_sse_round()


# --- the uop stream ---------------------------------------------------------------------------

ALU, SHUFFLE, LOAD, STORE, NOP = range(5)


@dataclass
class _Stream:
    """Uops in program order. Per uop: its kind, the uops whose results it reads (with an
    extra delay), whether it takes an allocation slot of its own."""

    kind: list[int] = field(default_factory=list)
    deps: list[list[tuple[int, int]]] = field(default_factory=list)
    slot: list[bool] = field(default_factory=list)
    round_of: list[int] = field(default_factory=list)

    def add(self, kind: int, deps, slot: bool, rnd: int) -> int:
        self.kind.append(kind)
        self.deps.append([d for d in deps if d[0] is not None])
        self.slot.append(slot)
        self.round_of.append(rnd)
        return len(self.kind) - 1


def _build_stream(low: Lowering, shape: RoundShape, core: Core, rounds: int) -> _Stream:
    st = _Stream()
    fwd_delay = core.forward_latency - core.load_latency   # after the store-data uop ran
    value: dict[str, int | None] = {name: None for name in shape.sbox_in}

    for rnd in range(rounds):
        reg: dict[int, int | None] = {r: value[name] for r, name in zip(low.inputs,
                                                                         shape.sbox_in)}
        store_of: dict[int, int] = {}

        def load(x, fused: bool) -> int:
            """A load uop for source x (a slot or the ones constant)."""
            deps = []
            if is_mem(x) and x[1] in store_of:
                deps.append((store_of[x[1]], fwd_delay))
            return st.add(LOAD, deps, not fused, rnd)

        for m in low.code:
            if m.kind == "store":
                store_of[m.dst[1]] = st.add(STORE, [(reg[m.srcs[0]], 0)], True, rnd)
            elif m.kind == "copy":
                reg[m.dst] = reg[m.srcs[0]]
                st.add(NOP, [], True, rnd)
            elif m.kind == "load":
                reg[m.dst] = load(m.srcs[0], fused=False)
            else:
                deps = []
                for s in m.srcs:
                    if isinstance(s, int):
                        deps.append((reg[s], 0))
                    elif is_mem(s) or s == ONES:
                        deps.append((load(s, fused=True), 0))
                    else:
                        raise ValueError(f"cannot time operand {s!r} of {m}")
                reg[m.dst] = st.add(ALU, deps, True, rnd)

        value = {name: reg[r] for name, r in zip(shape.sbox_out, low.outputs)}
        for u in shape.after:
            if u.kind == "copy":
                value[u.dst] = value[u.srcs[0]]
                st.add(NOP, [], True, rnd)
            elif u.kind == "other":
                st.add(NOP, [], True, rnd)
            else:
                deps = [(value[s], 0) for s in u.srcs]
                if u.memory:
                    deps.append((st.add(LOAD, [], False, rnd), 0))
                value[u.dst] = st.add(ALU if u.kind == "alu" else SHUFFLE, deps, True, rnd)
    return st


# --- the core -------------------------------------------------------------------------------

def _simulate(st: _Stream, core: Core) -> list[int]:
    """Run the stream; returns the cycle each uop's result is ready (for a store, the
    cycle its data was taken; for a NOP, the cycle it was allocated)."""
    n = len(st.kind)
    kind, deps, slot = st.kind, st.deps, st.slot
    latency = {ALU: core.alu_latency, SHUFFLE: core.alu_latency, LOAD: core.load_latency,
               STORE: 0, NOP: 0}
    succ: list[list[tuple[int, int]]] = [[] for _ in range(n)]
    waiting = [0] * n
    for i in range(n):
        for d, extra in deps[i]:
            succ[d].append((i, extra))
            waiting[i] += 1
    earliest = [0] * n             # earliest issue cycle, from the producers issued so far
    done = [-1] * n                # result ready (or executed, for stores and NOPs)
    allocated = [False] * n
    ports = sorted(set(core.alu_ports) | set(core.shuffle_ports))
    bound = {p: 0 for p in ports}  # uops bound to the port and not yet issued
    port_of = [-1] * n
    ready_heap: dict[int, list[int]] = {p: [] for p in ports}   # oldest first
    load_heap: list[int] = []
    store_heap: list[int] = []
    pending: list[tuple[int, int]] = []   # (earliest, uop): operands known, not yet ready

    def make_ready(i: int) -> None:
        heapq.heappush(pending, (earliest[i], i))

    cycle = 0
    next_alloc = 0
    retired = 0
    in_scheduler = 0
    while retired < n:
        # retire, in order
        k = 0
        while retired < next_alloc and k < core.retire_width and 0 <= done[retired] <= cycle:
            retired += 1
            k += 1
        # allocate, in order
        k = 0
        while next_alloc < n and k < core.alloc_width:
            i = next_alloc
            if next_alloc - retired >= core.rob:
                break
            if kind[i] in (ALU, SHUFFLE, STORE) and in_scheduler >= core.scheduler:
                break
            allocated[i] = True
            next_alloc += 1
            if slot[i]:
                k += 1
            if kind[i] == NOP:
                done[i] = cycle
                continue
            if kind[i] in (ALU, SHUFFLE):
                allowed = core.alu_ports if kind[i] == ALU else core.shuffle_ports
                p = min(allowed, key=lambda q: (bound[q], allowed.index(q)))
                port_of[i] = p
                bound[p] += 1
            if kind[i] != LOAD:
                in_scheduler += 1
            if waiting[i] == 0:
                make_ready(i)
        # operands ready by this cycle
        while pending and pending[0][0] <= cycle:
            _, i = heapq.heappop(pending)
            if kind[i] == LOAD:
                heapq.heappush(load_heap, i)
            elif kind[i] == STORE:
                heapq.heappush(store_heap, i)
            else:
                heapq.heappush(ready_heap[port_of[i]], i)
        # issue
        issued: list[int] = []
        for p in ports:
            if ready_heap[p]:
                i = heapq.heappop(ready_heap[p])
                bound[p] -= 1
                issued.append(i)
        for _ in range(core.loads_per_cycle):
            if not load_heap:
                break
            issued.append(heapq.heappop(load_heap))
        for _ in range(core.stores_per_cycle):
            if not store_heap:
                break
            issued.append(heapq.heappop(store_heap))
        for i in issued:
            if kind[i] != LOAD:
                in_scheduler -= 1
            t = cycle + latency[kind[i]]
            done[i] = t
            for j, extra in succ[i]:
                earliest[j] = max(earliest[j], t + extra)
                waiting[j] -= 1
                if waiting[j] == 0 and allocated[j]:
                    make_ready(j)
        cycle += 1
        if cycle > 100 * n + 1000:
            raise RuntimeError("timing model made no progress")
    return done


def cycles_per_round(low: Lowering, core: Core, shape: RoundShape = SSE_ROUND,
                     rounds: int = 6) -> float:
    """Steady-state cycles a round, for ``low`` (a two_operand lowering) in ``shape`` on
    ``core``: ``rounds`` rounds run back to back, and the time between the ends of the
    second and the last round, divided by the rounds in between."""
    if not low.two_operand:
        raise ValueError(f"{low.strategy}: the timing model covers two-operand code only")
    if rounds < 3:
        raise ValueError("need at least 3 rounds for a steady state")
    st = _build_stream(low, shape, core, rounds)
    done = _simulate(st, core)
    ends = [0] * rounds
    for i, r in enumerate(st.round_of):
        ends[r] = max(ends[r], done[i])
    return (ends[-1] - ends[1]) / (rounds - 2)
