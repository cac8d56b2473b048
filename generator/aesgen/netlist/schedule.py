"""Order the operations of a netlist (or of a cover's cones) to keep few values live.

An operation reads some values and defines one. A value is *live* from its definition (or
from the start, for an input) to its last read; an output stays live to the end. The
number of live values bounds the registers a lowering needs, and on a two-operand machine
an operation that is the last reader of one of its operands can overwrite it instead of
copying first.

``list_schedule`` is a greedy list scheduler: among the ready operations it takes the one
whose operands die there in the largest number (so it frees registers and, on two-operand
machines, needs no copy), then the one whose operands were defined most recently (depth
first, so values die soon after they are made), then the earliest in the source order. A
seeded random perturbation of those scores gives the alternative orders
(``candidate_orders``) that ``best_schedule`` tries against a cost function (a lowering's
instruction count) and that lower.py's timed choice lowers and times.
"""
from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Callable, Iterable, Sequence

from .format import Netlist


@dataclass(frozen=True)
class Op:
    """One operation to schedule: defines ``out`` from ``reads``; ``payload`` is opaque."""

    out: str
    reads: tuple[str, ...]
    payload: object = None


def gate_ops(netlist: Netlist) -> list[Op]:
    return [Op(g.out, g.operands, g) for g in netlist.gates]


def check_order(order: Sequence[Op], inputs: Iterable[str]) -> None:
    """Raise ValueError unless every operation reads values defined before it."""
    have = set(inputs)
    for op in order:
        for w in op.reads:
            if w not in have:
                raise ValueError(f"{op.out} reads {w} before it is defined")
        have.add(op.out)


def live_counts(order: Sequence[Op], inputs: Sequence[str], outputs: Iterable[str]
                ) -> list[int]:
    """Live values at the start and after each operation (outputs live to the end)."""
    outputs = set(outputs)
    last: dict[str, int] = {}
    for i, op in enumerate(order):
        for w in op.reads:
            last[w] = i
    end = len(order)
    for w in outputs:
        last[w] = end
    live = {w for w in inputs if w in last}
    counts = [len(live)]
    for i, op in enumerate(order):
        live.add(op.out)
        live = {w for w in live if last.get(w, -1) > i}
        counts.append(len(live))
    return counts


def max_live(order: Sequence[Op], inputs: Sequence[str], outputs: Iterable[str]) -> int:
    return max(live_counts(order, inputs, outputs))


def list_schedule(ops: Sequence[Op], inputs: Sequence[str], outputs: Iterable[str],
                  rng: random.Random | None = None, noise: float = 0.0,
                  after: dict[int, set[int]] | None = None) -> list[Op]:
    """A greedy order of ``ops`` (see the module text); ``rng`` and ``noise`` perturb it.

    ``after`` adds precedence constraints: ``after[j]`` are ops that must come before j.
    """
    outputs = set(outputs)
    readers: dict[str, list[int]] = {}
    for i, op in enumerate(ops):
        for w in set(op.reads):
            readers.setdefault(w, []).append(i)
    remaining = {w: len(r) for w, r in readers.items()}
    waiting = [len(set(op.reads) - set(inputs)) for op in ops]
    successors: dict[int, list[int]] = {}
    for j, before in (after or {}).items():
        for i in before:
            successors.setdefault(i, []).append(j)
            waiting[j] += 1
    born: dict[str, int] = {w: -1 for w in inputs}
    ready = {i for i, n in enumerate(waiting) if n == 0}
    order: list[Op] = []
    step = 0
    while ready:
        best, best_key = None, None
        for i in ready:
            op = ops[i]
            frees = sum(1 for w in set(op.reads) if remaining[w] == 1 and w not in outputs)
            recent = max((born[w] for w in op.reads), default=-1)
            key = (frees + (rng.random() * noise if rng else 0.0), recent, -i)
            if best_key is None or key > best_key:
                best, best_key = i, key
        ready.discard(best)
        op = ops[best]
        order.append(op)
        born[op.out] = step
        step += 1
        for w in set(op.reads):
            remaining[w] -= 1
        for j in readers.get(op.out, []) + successors.get(best, []):
            waiting[j] -= 1
            if waiting[j] == 0:
                ready.add(j)
    if len(order) != len(ops):
        missing = [op.out for op in ops if op not in order][:5]
        raise ValueError(f"cannot schedule {missing}: operands never defined")
    return order


def in_place_plan(ops: Sequence[Op], outputs: Iterable[str],
                  rng: random.Random | None = None) -> dict[int, set[int]]:
    """Precedence constraints that let many operations overwrite an operand in place.

    An operation can overwrite operand w only if it is w's last reader. Greedily (in a
    seeded random order) each operation picks an operand w, not an output and not picked
    by another, and every other reader of w is ordered before it, unless that would make
    a cycle. Returns ``after`` for ``list_schedule``.
    """
    outputs = set(outputs)
    producer = {op.out: i for i, op in enumerate(ops)}
    readers: dict[str, set[int]] = {}
    for i, op in enumerate(ops):
        for w in op.reads:
            readers.setdefault(w, set()).add(i)
    succ: dict[int, set[int]] = {i: set() for i in range(len(ops))}
    for j, op in enumerate(ops):
        for w in op.reads:
            if w in producer:
                succ[producer[w]].add(j)
    after: dict[int, set[int]] = {}
    taken: set[str] = set()

    def reaches(src: int, targets: set[int]) -> bool:
        seen, stack = set(), [src]
        while stack:
            x = stack.pop()
            if x in targets:
                return True
            if x in seen:
                continue
            seen.add(x)
            stack.extend(succ[x])
        return False

    idx = list(range(len(ops)))
    if rng is not None:
        rng.shuffle(idx)
    # a maximum matching of operations to operands they could overwrite (Kuhn's
    # augmenting paths), then its pairs in turn, each kept unless it closes a cycle
    options = {j: [w for w in dict.fromkeys(ops[j].reads) if w not in outputs] for j in idx}
    if rng is not None:
        for j in idx:
            rng.shuffle(options[j])
    owner: dict[str, int] = {}

    def augment(j: int, seen: set[str]) -> bool:
        for w in options[j]:
            if w in seen:
                continue
            seen.add(w)
            if w not in owner or augment(owner[w], seen):
                owner[w] = j
                return True
        return False

    for j in idx:
        augment(j, set())
    wanted = {j: w for w, j in owner.items()}
    done: set[int] = set()

    def commit(j: int, w: str) -> bool:
        others = readers[w] - {j}
        if others and reaches(j, others):
            return False
        taken.add(w)
        done.add(j)
        for i in others:
            succ[i].add(j)
            after.setdefault(j, set()).add(i)
        return True

    for j in idx:
        if j in wanted:
            commit(j, wanted[j])
    for j in idx:
        if j in done:
            continue
        for w in sorted((w for w in options[j] if w not in taken),
                        key=lambda w: len(readers[w])):
            if commit(j, w):
                break
    return after


def candidate_orders(ops: Sequence[Op], inputs: Sequence[str], outputs: Iterable[str],
                     tries: int = 64, seed: int = 1, plans: int = 0) -> list[list[Op]]:
    """The orders ``best_schedule`` chooses from, in this order: the source order, the
    greedy order, ``tries`` perturbed greedy orders, then ``plans`` orders list-scheduled
    under an ``in_place_plan`` (deterministic for a given ``seed``)."""
    outputs = list(outputs)
    candidates = [list(ops), list_schedule(ops, inputs, outputs)]
    rng = random.Random(seed)
    for k in range(tries):
        candidates.append(list_schedule(ops, inputs, outputs, rng, noise=0.5 + 2.0 * (k % 4)))
    for k in range(plans):
        after = in_place_plan(ops, outputs, rng)
        candidates.append(list_schedule(ops, inputs, outputs, rng, noise=0.5 * (k % 3),
                                        after=after))
    return candidates


def best_schedule(ops: Sequence[Op], inputs: Sequence[str], outputs: Iterable[str],
                  cost: Callable[[list[Op]], tuple], tries: int = 64, seed: int = 1,
                  plans: int = 0) -> tuple[list[Op], tuple]:
    """The cheapest order by ``cost`` among ``candidate_orders`` (the first of equals)."""
    best = None
    for order in candidate_orders(ops, inputs, outputs, tries, seed, plans):
        c = cost(order)
        if best is None or c < best[1]:
            best = (order, c)
    return best
