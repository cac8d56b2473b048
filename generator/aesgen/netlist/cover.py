"""Cover a netlist with multi-input instructions: cones of gates with at most 3 leaves.

A *cone* is a gate (its root) together with some gates below it, cut off at up to three
*leaves*; one instruction computes the root from the leaves when the cone's function is in
the target's library (VPTERNLOGD takes every function of 3 inputs; NEON takes EOR, AND,
ORR, BIC, ORN, MVN, the BSL family and, with SHA3, EOR3 and BCAX).

The function of a cone is its 8-bit truth table: evaluate the cone with the leaves set to
0xF0, 0xCC, 0xAA (leaf 0, 1, 2). Bit i of the result is the value where leaf 0 is bit 2
of i, leaf 1 bit 1 and leaf 2 bit 0: exactly VPTERNLOGD's immediate when leaf 0 is the
destination (A), leaf 1 is B and leaf 2 is C.

Covering (area, i.e. instruction count):
1. every cut of every gate with at most 3 leaves is enumerated;
2. a tree cover: each output and each gate read by more than one gate is a root; a root
   absorbs single-use gates below it, choosing cuts by dynamic programming;
3. local search: a materialized gate is dropped when every other materialized gate can
   switch to a cut that does not need it (which may recompute it inside several cones),
   as long as the total cost falls.
"""
from __future__ import annotations

from dataclasses import dataclass
from itertools import permutations
from typing import Callable

from .evaluate import apply_op
from .format import Gate, Netlist

LEAF_VECTORS = (0xF0, 0xCC, 0xAA)
MASK8 = 0xFF


@dataclass(frozen=True)
class Cone:
    out: str
    leaves: tuple[str, ...]
    gates: tuple[Gate, ...]      # internal gates, topological; the last computes ``out``

    @property
    def table(self) -> int:
        return cone_table(self.leaves, self.gates)


@dataclass(frozen=True)
class Match:
    """How one instruction (or a fixed macro) computes a cone."""

    form: str                 # library form name
    cost: int                 # instructions
    operands: tuple[int, ...]  # leaf index for each operand position of the form


def cone_table(leaves: tuple[str, ...], gates: tuple[Gate, ...]) -> int:
    values = {w: LEAF_VECTORS[i] for i, w in enumerate(leaves)}
    for g in gates:
        values[g.out] = apply_op(g.op, values[g.a], None if g.b is None else values[g.b], MASK8)
    return values[gates[-1].out]


def depends_on(table: int, position: int) -> bool:
    """Whether the truth table depends on leaf ``position`` (0, 1, 2)."""
    shift = 4 >> position
    for i in range(8):
        if not i & shift and ((table >> i) & 1) != ((table >> (i | shift)) & 1):
            return True
    return False


# ------------------------------------------------------------------------------------------
# libraries: which truth tables one instruction computes
# ------------------------------------------------------------------------------------------

Library = Callable[[int, int], "Match | None"]    # (table, number of leaves) -> match


def ternlog_library(table: int, k: int) -> Match | None:
    """AVX-512: every function of up to 3 inputs is one VPTERNLOGD (or a VEX/EVEX op)."""
    if table in (0, MASK8):
        return None
    if k == 2:
        for name, fn in (("xor", lambda a, b: a ^ b), ("and", lambda a, b: a & b),
                         ("or", lambda a, b: a | b), ("andn", lambda a, b: ~a & b & MASK8)):
            for order in ((0, 1), (1, 0)):
                v = (LEAF_VECTORS[0], LEAF_VECTORS[1])
                if fn(v[order[0]], v[order[1]]) == table:
                    return Match(name, 1, order)
    if k == 1 and table == (~LEAF_VECTORS[0]) & MASK8:
        return Match("not", 1, (0,))
    return Match("ternlog", 1, tuple(range(k)))


NEON_FORMS: dict[str, tuple[int, Callable[..., int], bool]] = {
    # name: (arity, function, needs SHA3)
    "eor": (2, lambda a, b: a ^ b, False),
    "and": (2, lambda a, b: a & b, False),
    "orr": (2, lambda a, b: a | b, False),
    "bic": (2, lambda a, b: a & ~b & MASK8, False),
    "orn": (2, lambda a, b: (a | ~b) & MASK8, False),
    "mvn": (1, lambda a: ~a & MASK8, False),
    "bsl": (3, lambda m, a, b: ((m & a) | (~m & b)) & MASK8, False),   # m ? a : b
    "eor3": (3, lambda a, b, c: a ^ b ^ c, True),
    "bcax": (3, lambda a, b, c: a ^ (b & ~c & MASK8), True),
}


def neon_library(sha3: bool) -> Library:
    """NEON forms; XNOR costs EOR + MVN, or one BCAX against an all-ones register with SHA3."""
    cache: dict[tuple[int, int], Match | None] = {}

    def match(table: int, k: int) -> Match | None:
        key = (table, k)
        if key not in cache:
            cache[key] = _neon_match(table, k, sha3)
        return cache[key]

    return match


def _neon_match(table: int, k: int, sha3: bool) -> Match | None:
    if table in (0, MASK8):
        return None
    for name, (arity, fn, needs_sha3) in NEON_FORMS.items():
        if arity != k or (needs_sha3 and not sha3):
            continue
        for order in permutations(range(k)):
            if fn(*(LEAF_VECTORS[i] for i in order)) == table:
                return Match(name, 1, order)
    if k == 2 and table == (~(LEAF_VECTORS[0] ^ LEAF_VECTORS[1])) & MASK8:
        return Match("xnor_bcax" if sha3 else "xnor_eor_mvn", 1 if sha3 else 2, (0, 1))
    return None


# ------------------------------------------------------------------------------------------
# cuts and covering
# ------------------------------------------------------------------------------------------

def enumerate_cuts(netlist: Netlist, k: int = 3) -> dict[str, list[frozenset[str]]]:
    """Non-trivial cuts (leaf sets of size <= k) of every gate output."""
    cuts: dict[str, list[frozenset[str]]] = {w: [] for w in netlist.inputs}
    for g in netlist.gates:
        options: set[frozenset[str]] = set()
        sides = [[frozenset([w])] + cuts[w] for w in g.operands]
        if len(sides) == 1:
            options.update(sides[0])
        else:
            for a in sides[0]:
                for b in sides[1]:
                    u = a | b
                    if len(u) <= k:
                        options.add(u)
        cuts[g.out] = sorted(options, key=lambda c: (len(c), sorted(c)))
    return cuts


def cone_gates(producers: dict[str, Gate], root: str, leaves: frozenset[str]) -> tuple[Gate, ...]:
    """The gates between ``leaves`` and ``root``, in topological (netlist) order."""
    inside: dict[str, Gate] = {}
    stack = [root]
    while stack:
        w = stack.pop()
        if w in inside or (w in leaves and w != root):
            continue
        g = producers[w]
        inside[w] = g
        stack.extend(g.operands)
    order = {g.out: i for i, g in enumerate(producers.values())}
    return tuple(sorted(inside.values(), key=lambda g: order[g.out]))


@dataclass(frozen=True)
class Cover:
    netlist: Netlist
    cones: tuple[Cone, ...]              # in netlist order of their roots
    matches: tuple[Match, ...]

    @property
    def cost(self) -> int:
        return sum(m.cost for m in self.matches)


def cover(netlist: Netlist, library: Library, *, local_search: bool = True) -> Cover:
    producers = netlist.producers()
    cuts = enumerate_cuts(netlist)
    fanout = netlist.fanout()
    outputs = set(netlist.outputs)
    gate_order = [g.out for g in netlist.gates]
    position = {w: i for i, w in enumerate(gate_order)}

    match_cache: dict[tuple[str, frozenset[str]], tuple[tuple[str, ...], Match | None]] = {}

    def match(root: str, cut: frozenset[str]) -> tuple[tuple[str, ...], Match | None]:
        key = (root, cut)
        if key not in match_cache:
            leaves = tuple(sorted(cut, key=lambda w: (w not in netlist.inputs,
                                                      position.get(w, -1), w)))
            table = cone_table(leaves, cone_gates(producers, root, cut))
            used = tuple(w for i, w in enumerate(leaves) if depends_on(table, i))
            if used != leaves:      # a leaf that cancels out: not a cut worth keeping
                match_cache[key] = (leaves, None)
            else:
                match_cache[key] = (leaves, library(table, len(leaves)))
        return match_cache[key]

    # --- tree cover by dynamic programming ---------------------------------------------
    def absorbable(w: str) -> bool:
        return w in producers and fanout[w] == 1 and w not in outputs

    best: dict[str, tuple[int, frozenset[str]]] = {}
    for root in gate_order:
        options = []
        for cut in cuts[root]:
            inner = cone_gates(producers, root, cut)
            if any(not absorbable(g.out) for g in inner[:-1]):
                continue
            _, m = match(root, cut)
            if m is None:
                continue
            cost = m.cost + sum(best[w][0] for w in cut if absorbable(w))
            options.append((cost, len(cut), sorted(cut), cut))
        if not options:
            raise ValueError(f"{netlist.name}: the library cannot compute gate {root}")
        c, _, _, cut = min(options)
        best[root] = (c, cut)

    chosen: dict[str, frozenset[str]] = {}

    def take(w: str) -> None:
        if w in chosen or w not in producers:
            return
        chosen[w] = best[w][1]
        for leaf in chosen[w]:
            take(leaf)

    for w in gate_order:
        if w in outputs or fanout[w] > 1:
            take(w)

    # --- area recovery, then local search ------------------------------------------------
    if local_search:
        sel = {w: best[w][1] for w in gate_order}
        for _ in range(3):
            chosen = _exact_area(sel, cuts, match, outputs, gate_order, producers)
        _improve(chosen, cuts, match, outputs, gate_order, netlist.inputs)

    roots = [w for w in gate_order if w in chosen]
    cones, matches = [], []
    for w in roots:
        leaves, m = match(w, chosen[w])
        cones.append(Cone(w, leaves, cone_gates(producers, w, chosen[w])))
        matches.append(m)
    return Cover(netlist, tuple(cones), tuple(matches))


def _exact_area(sel, cuts, match, outputs, gate_order, producers) -> dict:
    """One pass of exact-area recovery (reference counting over the current mapping).

    Each gate in turn takes the cut that adds the fewest instructions given what the rest
    of the mapping already computes: a leaf already materialized is free, a leaf that is
    not costs its own cone, recursively (the "exact area" of LUT mappers such as ABC).
    """
    refs: dict[str, int] = {}

    def cost(w: str) -> int:
        return match(w, sel[w])[1].cost

    def ref(w: str) -> int:
        area = cost(w)
        for leaf in sel[w]:
            if leaf in producers:
                refs[leaf] = refs.get(leaf, 0) + 1
                if refs[leaf] == 1:
                    area += ref(leaf)
        return area

    def deref(w: str) -> int:
        area = cost(w)
        for leaf in sel[w]:
            if leaf in producers:
                refs[leaf] -= 1
                if refs[leaf] == 0:
                    area += deref(leaf)
        return area

    for w in gate_order:
        if w in outputs:
            refs[w] = refs.get(w, 0) + 1
            if refs[w] == 1:
                ref(w)
    for w in gate_order:
        live = refs.get(w, 0) > 0
        if live:
            deref(w)
        options = []
        for cut in cuts[w]:
            if match(w, cut)[1] is None:
                continue
            sel[w] = cut
            area = ref(w)
            deref(w)
            options.append((area, len(cut), sorted(cut), cut))
        sel[w] = min(options)[3]
        if live:
            ref(w)
    return {w: sel[w] for w in gate_order if refs.get(w, 0) > 0}


def _improve(chosen, cuts, match, outputs, gate_order, inputs) -> None:
    inputs = set(inputs)

    def cheapest(root: str, allowed: set[str]) -> tuple[int, frozenset[str]] | None:
        found = None
        for cut in cuts[root]:
            if not cut <= allowed:
                continue
            _, m = match(root, cut)
            if m is not None and (found is None or m.cost < found[0]):
                found = (m.cost, cut)
        return found

    changed = True
    while changed:
        changed = False
        for victim in reversed(gate_order):
            if victim not in chosen or victim in outputs:
                continue
            allowed = (set(chosen) - {victim}) | inputs
            old = sum(match(w, c)[1].cost for w, c in chosen.items())
            trial = {}
            for w in chosen:
                if w == victim:
                    continue
                cur = chosen[w]
                if cur <= allowed:
                    trial[w] = cur
                    continue
                alt = cheapest(w, allowed)
                if alt is None:
                    trial = None
                    break
                trial[w] = alt[1]
            if trial is None:
                continue
            _prune(trial, outputs)
            new = sum(match(w, c)[1].cost for w, c in trial.items())
            if new < old:
                chosen.clear()
                chosen.update(trial)
                changed = True


def _prune(chosen: dict, outputs: set[str]) -> None:
    """Drop materialized gates that no output reaches any more."""
    needed: set[str] = set()
    stack = [w for w in outputs if w in chosen]
    while stack:
        w = stack.pop()
        if w in needed:
            continue
        needed.add(w)
        stack.extend(leaf for leaf in chosen[w] if leaf in chosen)
    for w in list(chosen):
        if w not in needed:
            del chosen[w]
