"""Coordinate-wise search over a preset's choices: compile each candidate kernel, cost it as
llvm-mca's predicted cycles per block of its steady loop, keep the cheapest (ties: the preset's).

Costs come from report/compare.py (steady_loop, run_llvm_mca), the same figures `aesgen
compare` prints. A JSON cache keyed by preset, choice, value, model, llvm-mca version and a
hash of the loop text spares llvm-mca on re-runs; only `aesgen tune` reads it, never
generation. A prediction for which the model dropped instructions it cannot read is no cost:
it would compare kernels with different parts left out.
"""
from __future__ import annotations

import hashlib
import json
import os
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Sequence

from ..emit.compile import compile_kernel
from ..passes.regalloc import AllocationError
from ..report.compare import loop_line, run_llvm_mca, steady_loop
from ..report.throughput import loop_bound
from ..targets import Preset
from ..uarch import UarchModel
from .space import KEY, Choice, Value

DEFAULT_CACHE = Path("out/tune/cache.json")
DIGITS = 2             # llvm-mca's cycles a block are compared, shown and recorded at this
MEASURED_DIGITS = 3    # precision, measured ticks a byte (0.09 or so for GCM) at this one


def digits(unit: str) -> int:
    """Decimals a cost in ``unit`` is compared, shown and recorded at."""
    return DIGITS if unit == "cycles/block" else MEASURED_DIGITS


@dataclass
class Candidate:
    value: Value
    kernel: str = ""                  # the measured kernel's name
    cost: float | None = None         # llvm-mca cycles per block, or measured ticks per
                                      # byte (Outcome.unit); None: no comparable cost
    note: str = ""                    # why there is no cost (invalid value, model gaps)
    cached: bool = False


@dataclass
class Outcome:
    choice: Choice
    before: Value
    after: Value
    candidates: list[Candidate] = field(default_factory=list)
    unit: str = "cycles/block"        # of the candidates' costs

    @property
    def decided(self) -> bool:
        """Whether the preset's own value has a cost to compare the others with."""
        return any(c.value == self.before and c.cost is not None for c in self.candidates)

    def ranked(self) -> list[Candidate]:
        """Candidates with a cost, cheapest first; on equal figures the preset's value first,
        then the order of the choice's values."""
        costed = [c for c in self.candidates if c.cost is not None]
        d = digits(self.unit)
        return sorted(costed, key=lambda c: (round(c.cost, d), c.value != self.before,
                                             self.candidates.index(c)))

    def runner_up(self) -> Candidate | None:
        ranked = self.ranked()
        return ranked[1] if len(ranked) > 1 else None


# a candidate replaces the preset's value only when predicted at least this much faster: a
# model's differences of a percent or so are within what it gets wrong, and a preset should
# not flip on them
MARGIN = 0.02


def pick(costs: Sequence[tuple[Value, float | None]], current: Value,
         places: int = DIGITS) -> Value:
    """The value with the lowest cost (at ``places`` decimals) when it beats ``current`` by
    MARGIN (unrounded: 0.059 against 0.060 may be 1.7%); ties, smaller wins and a current
    value without a cost keep ``current``; among other ties the first listed wins."""
    known = {v: c for v, c in costs if c is not None}
    if current not in known:
        return current
    order = [v for v, _ in costs]
    best = min(known, key=lambda v: (round(known[v], places), v != current, order.index(v)))
    if known[best] > known[current] * (1 - MARGIN):     # the margin on the figures themselves
        return current
    return best


class Cache:
    """llvm-mca results by key, in one JSON file; unreadable files count as empty."""

    def __init__(self, path: Path | None) -> None:
        self.path = path
        self.entries: dict[str, dict] = {}
        self.dirty = False
        if path is not None:
            try:
                data = json.loads(path.read_text())
                self.entries = dict(data.get("entries", {}))
            except (OSError, ValueError, AttributeError):
                self.entries = {}

    def get(self, key: str) -> dict | None:
        return self.entries.get(key) if self.path is not None else None

    def put(self, key: str, result: dict) -> None:
        if self.path is not None:
            self.entries[key] = result
            self.dirty = True

    def save(self) -> None:
        """Write the file (through a rename) if anything was added; OSError if it cannot."""
        if self.path is None or not self.dirty:
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=self.path.parent, prefix=f".{self.path.name}.")
        try:
            with os.fdopen(fd, "w") as f:
                json.dump({"comment": "aesgen tune's llvm-mca results; generation never "
                           "reads this file", "entries": self.entries}, f, indent=1,
                          sort_keys=True)
                f.write("\n")
            os.replace(tmp, self.path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
        self.dirty = False


def measure(choice: Choice, preset: Preset, value: Value, mca_cpu: str, mca_version: str,
            cache: Cache) -> Candidate:
    """The cost of ``choice`` at ``value``, the rest of ``preset`` as it is."""
    try:
        spec = choice.kernel(choice.applied(preset, value))
        ck = compile_kernel(spec)
    except (ValueError, AllocationError) as e:
        return Candidate(value, note=f"skipped: {e}")
    cand = Candidate(value, spec.name)
    loop = [loop_line(ins, spec.arch) for ins in steady_loop(ck, KEY)]
    if not loop:
        cand.note = f"skipped: {spec.name} has no steady-state loop for AES-{KEY}"
        return cand
    cand.cost, cand.note, cand.cached = predicted(
        loop, spec.arch, ck.interleave * spec.lanes, mca_cpu, mca_version, cache,
        (preset.name, choice.name, str(value)))
    return cand


def predicted(loop: list[str], arch: str, blocks: int, mca_cpu: str, mca_version: str,
              cache: Cache, tag: tuple[str, ...]) -> tuple[float | None, str, bool]:
    """llvm-mca's cycles per block of ``loop`` (None, with the reason, when the model gives
    none or cannot read every instruction), and whether it came from the cache, whose key
    is ``tag`` with the model, its version and a hash of the loop."""
    digest = hashlib.sha256(f"{arch} {blocks}\n".encode()
                            + "\n".join(loop).encode()).hexdigest()[:20]
    key = "|".join(tag + (mca_cpu, mca_version, digest))
    result = cache.get(key)
    cached = result is not None
    if result is None:
        r = run_llvm_mca(loop, mca_cpu, arch, blocks)
        result = {"cycles_per_block": r.cycles_per_block, "note": r.note,
                  "dropped": r.dropped}
        if r.cycles_per_block is not None:       # failures (no tool, no model) are not kept
            cache.put(key, result)
    if result["cycles_per_block"] is None:
        return None, result["note"] or "llvm-mca gave no prediction", cached
    if result["dropped"]:
        return None, (f"llvm-mca {mca_cpu} cannot read {', '.join(result['dropped'])} "
                      f"(predicted {result['cycles_per_block']:.{DIGITS}f} without them)"), cached
    return result["cycles_per_block"], "", cached


def bound_cost(choice: Choice, preset: Preset, value: Value, model: UarchModel) -> Candidate:
    """The cost of ``choice`` at ``value`` by the preset's uarch model: the throughput bound
    of the AES-128 steady loop (report/throughput.py), cycles per block."""
    try:
        spec = choice.kernel(choice.applied(preset, value))
        ck = compile_kernel(spec)
    except (ValueError, AllocationError) as e:
        return Candidate(value, note=f"skipped: {e}")
    loop = steady_loop(ck, KEY)
    if not loop:
        return Candidate(value, spec.name, note=f"skipped: {spec.name} has no steady-state "
                                                f"loop for AES-{KEY}")
    return Candidate(value, spec.name,
                     loop_bound(loop, model).cycles / (ck.interleave * spec.lanes))


def search(preset: Preset, choices: Sequence[Choice], mca_cpu: str, mca_version: str,
           cache: Cache, progress: Callable[[str], None] = lambda _: None,
           processes: int = 0, model: UarchModel | None = None
           ) -> tuple[list[Outcome], Preset]:
    """One pass over ``choices`` in their order, each with the others at their current
    values (the preset's, or the ones chosen before it in this pass); the outcomes and the
    preset with every chosen value. ``processes`` > 0: the cost is real runs on this machine
    in that many processes (tune/measured.py) instead of llvm-mca; ``model``: the
    throughput bound of that uarch model (report/throughput.py)."""
    from . import measured
    outcomes = []
    for choice in choices:
        before = choice.current(preset)
        cands = []
        if processes:
            values = choice.candidates(preset)
            for value, (kernel, cost, note) in measured.costs(choice, preset, values,
                                                              processes, progress).items():
                cands.append(Candidate(value, kernel, cost, note))
            cands.sort(key=lambda c: values.index(c.value))
        else:
            for value in choice.candidates(preset):
                cands.append(bound_cost(choice, preset, value, model) if model is not None
                             else measure(choice, preset, value, mca_cpu, mca_version, cache))
                c = cands[-1]
                progress(f"{choice.name} = {value}: {c.kernel or '-'} "
                         + (f"{c.cost:.{DIGITS}f} cycles/block" if c.cost is not None
                            else "no cost" if c.kernel else c.note)
                         + (" (cached)" if c.cached else ""))
        unit = "ticks/B" if processes else "cycles/block"
        after = pick([(c.value, c.cost) for c in cands], before, digits(unit))
        outcomes.append(Outcome(choice, before, after, cands, unit))
        preset = choice.applied(preset, after)
    return outcomes, preset


def render(outcome: Outcome) -> list[str]:
    """The report of one choice: candidates with their cost, chosen and runner-up marked."""
    ch = outcome.choice
    kernels = sorted({c.kernel for c in outcome.candidates if c.kernel})
    lines = [f"{ch.name}: [{ch.table}] {ch.key}, measured on "
             f"{'/'.join(kernels) or ch.variant} ({ch.why}), AES-{KEY}",
             f"  {'value':<12}{outcome.unit:>13}"]
    ranked = outcome.ranked()
    runner = outcome.runner_up()
    for c in outcome.candidates:
        marks = []
        if c.value == outcome.after and outcome.decided:
            marks.append("chosen")
        if runner is not None and c is runner and outcome.decided:
            marks.append("runner-up")
        if c.value == outcome.before:
            marks.append("current")
        cost = f"{c.cost:.{digits(outcome.unit)}f}" \
            if c.cost is not None else "n/a"
        lines.append(f"  {'*' if 'chosen' in marks else ' '} {str(c.value):<10}{cost:>13}"
                     + (f"   {', '.join(marks)}" if marks else "")
                     + (f"   {c.note}" if c.note else ""))
    if not outcome.decided:
        lines.append(f"  {outcome.before} kept: the current value has no comparable cost"
                     + ("" if ranked else " (no candidate has one)"))
    elif outcome.after == outcome.before:
        lines.append(f"  {outcome.before} -> {outcome.after} (unchanged)")
    else:
        lines.append(f"  {outcome.before} -> {outcome.after}")
    return lines
