"""`aesgen correlate`: how well the model `aesgen tune` ranks candidates by (llvm-mca's
cycles per block of the steady-state loop) predicts real runs on this machine.

The variants are the search space of `aesgen tune` (tune/space.py) spread wider: every
searched choice at each of its values (interleaves 1..8 instead of the tune's 4, 6, 8), at
each FACE level, each kernel timed with each asked key size. Every variant is generated as
`generate` would write it with that value in the preset, predicted by llvm-mca and timed
here (tune/measured.py: candidates interleaved in one program, several processes). Beside
llvm-mca stands the throughput bound of the preset's own uarch model (report/throughput.py,
facts measured by `aesgen calibrate` where llvm-mca is wrong). The report is Pearson's r
and Spearman's rank correlation of each with the runs, over all variants, per mode and per
method; ranking is what the tuner needs from its model, so Spearman is the figure to read
first.
"""
from __future__ import annotations

import hashlib
import math
import statistics
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Sequence

from ..emit.compile import compile_kernel
from ..emit.generate import render_set
from ..passes.regalloc import AllocationError
from ..report.compare import loop_line, steady_loop
from ..report.throughput import loop_bound
from ..targets import Preset
from ..uarch import model_for
from . import measured
from .search import Cache, predicted
from .space import Choice, Value, choices_for, request

FACES = ("none", "r1", "r2")
# wider than the tune's own candidates: the correlation wants spread, not a decision
SPREAD = {"interleave": tuple(range(1, 9))}


@dataclass
class Point:
    """One variant: a choice at a value, a FACE level and a key size, with its figures."""
    choice: Choice
    value: Value
    face: str
    key_bits: int
    kernel: str = ""
    predicted: float | None = None       # llvm-mca cycles per block
    bound: float | None = None           # report/throughput.py's cycles per block
    measured: float | None = None        # ticks per byte (fastest sample, median over processes)
    note: str = ""

    @property
    def setting(self) -> str:
        return f"{self.choice.name}={self.value}"


@dataclass
class Correlation:
    """Pearson's r and Spearman's rho over ``n`` variants with both figures: of llvm-mca's
    prediction, and of the preset's uarch model's throughput bound, with the runs."""
    n: int
    pearson: float | None
    spearman: float | None
    bound_pearson: float | None = None
    bound_spearman: float | None = None


@dataclass
class Report:
    preset: str
    mca_cpu: str
    processes: int
    points: list[Point] = field(default_factory=list)
    uarch: str = ""                      # the model the bound comes from

    def correlation(self, mode: str | None = None, variant: str | None = None) -> Correlation:
        """Over all variants with both figures, or those of one mode, or of one mode's
        method (what one tune choice ranks: its values, FACE levels and key sizes)."""
        pts = [p for p in self.points if p.predicted is not None and p.measured is not None
               and (mode is None or p.choice.mode == mode)
               and (variant is None or p.choice.variant == variant)]
        xs, ys = [p.predicted for p in pts], [p.measured for p in pts]
        c = Correlation(len(pts), pearson(xs, ys), pearson(ranks(xs), ranks(ys)))
        if pts and all(p.bound is not None for p in pts):
            bs = [p.bound for p in pts]
            c.bound_pearson, c.bound_spearman = pearson(bs, ys), pearson(ranks(bs), ranks(ys))
        return c


def pearson(xs: Sequence[float], ys: Sequence[float]) -> float | None:
    """Pearson's correlation coefficient; None for fewer than 3 pairs or no spread."""
    if len(xs) != len(ys):
        raise ValueError("pearson: the two series differ in length")
    if len(xs) < 3:
        return None
    mx, my = statistics.fmean(xs), statistics.fmean(ys)
    sxy = sum((x - mx) * (y - my) for x, y in zip(xs, ys))
    sxx = sum((x - mx) ** 2 for x in xs)
    syy = sum((y - my) ** 2 for y in ys)
    if sxx == 0 or syy == 0:
        return None
    return sxy / math.sqrt(sxx * syy)


def ranks(xs: Sequence[float]) -> list[float]:
    """1-based ranks, ties given the mean of the ranks they span (Spearman's convention)."""
    order = sorted(range(len(xs)), key=lambda i: xs[i])
    out = [0.0] * len(xs)
    i = 0
    while i < len(order):
        j = i
        while j + 1 < len(order) and xs[order[j + 1]] == xs[order[i]]:
            j += 1
        for k in range(i, j + 1):
            out[order[k]] = (i + j) / 2 + 1
        i = j + 1
    return out


def variants(preset: Preset, choices: Sequence[Choice], key_bits: Sequence[int],
             faces: Sequence[str] = FACES) -> list[Point]:
    """Every choice at every value of its spread, FACE level and key size."""
    out = []
    for choice in choices:
        values = SPREAD.get(choice.key, choice.values)
        now = choice.current(preset)
        if now not in values:
            values = values + (now,)
        for value in values:
            for face in faces:
                for bits in key_bits:
                    out.append(Point(choice, value, face, bits))
    return out


def correlate(preset: Preset, mca_cpu: str, mca_version: str, cache: Cache,
              key_bits: Sequence[int], processes: int, choices: Sequence[Choice] | None = None,
              progress: Callable[[str], None] = lambda _: None) -> Report:
    """Predict and time every variant of ``choices`` (default: all of the preset's)."""
    choices = list(choices) if choices is not None else choices_for(preset)
    report = Report(preset.name, mca_cpu, processes)
    model = model_for(preset.uarch, preset.arch) if preset.uarch else None
    report.uarch = model.name if model is not None else ""
    points = variants(preset, choices, key_bits)
    rendered: dict[tuple, tuple[dict[str, str], str] | str] = {}
    seen: dict[tuple, Point] = {}
    for n, p in enumerate(points, 1):
        kernel_key = (p.choice.name, p.value, p.face)
        applied = p.choice.applied(preset, p.value)
        if kernel_key not in rendered:
            progress(f"[{n}/{len(points)}] {p.setting} FACE {p.face}: generating")
            try:
                spec = p.choice.kernel(applied, p.face)
                ck = compile_kernel(spec)
                files = render_set(request(applied, (p.choice.variant,), p.choice.mode,
                                           p.face, "aesgen_tN_", "aesgen correlate"))
                rendered[kernel_key] = (files, spec.name, ck)
            except (ValueError, AllocationError) as e:
                rendered[kernel_key] = f"skipped: {e}"
        got = rendered[kernel_key]
        if isinstance(got, str):
            p.note = got
            continue
        files, p.kernel, ck = got
        steady = steady_loop(ck, p.key_bits)
        loop = [loop_line(ins, ck.spec.arch) for ins in steady]
        if not loop:
            p.note = f"no steady-state loop for AES-{p.key_bits}"
            continue
        digest = hashlib.sha256("\n".join(loop).encode()).hexdigest()[:20]
        same = (p.choice.mode, p.key_bits, digest)
        if same in seen:                       # the same loop under another setting
            p.note = f"same loop as {seen[same].setting} FACE {seen[same].face}"
            continue
        seen[same] = p
        blocks = ck.interleave * ck.spec.lanes
        p.predicted, p.note, _ = predicted(loop, ck.spec.arch, blocks, mca_cpu, mca_version,
                                           cache, ("correlate",))
        if model is not None and ck.spec.arch == "x86_64":
            p.bound = loop_bound(steady, model).cycles / blocks
    report.points = points
    _time(report, rendered, processes, progress)
    return report


def _time(report: Report, rendered: dict, processes: int,
          progress: Callable[[str], None]) -> None:
    """Measure the predicted points: one program a mode and method, its variants (each key
    size a candidate of its own) interleaved in it, in ``processes`` processes. These VMs
    run a process (or a stretch of one) now and then a third slower, so a point's figure
    is the median over processes of its fastest sample in each, and the variants one
    correlation compares run close together in time."""
    groups: dict[tuple[str, str], list[Point]] = {}
    for p in report.points:
        if p.predicted is not None:
            groups.setdefault((p.choice.mode, p.choice.variant), []).append(p)
    for (mode, variant), pts in sorted(groups.items()):
        what = f"{len(pts)} {mode} variants of {variant}"
        progress(f"building {what}")
        sets = []
        for i, p in enumerate(pts):
            files, kernel, _ = rendered[(p.choice.name, p.value, p.face)]
            sets.append(({name: text.replace("aesgen_tN_", f"aesgen_t{i}_")
                                .replace("AESGEN_TN_", f"AESGEN_T{i}_")
                          for name, text in files.items()}, kernel, p.key_bits))
        with tempfile.TemporaryDirectory(prefix="aesgen-correlate-") as tmp:
            exe = measured.link(sets, mode, Path(tmp), what)
            runs = []
            for n in range(processes):
                progress(f"timing {what}: process {n + 1} of {processes}")
                runs.append(measured.run(exe, what, fastest=True))
        for i, p in enumerate(pts):
            marks = [r[i] for r in runs]
            if all(isinstance(m, float) for m in marks):
                p.measured = statistics.median(marks)
            else:
                p.predicted, p.note = None, (
                    "skipped: this CPU lacks a feature the kernel needs" if "cpu" in marks
                    else f"{p.kernel} is not in its registry")


def render(report: Report) -> list[str]:
    """The report as text: every variant, then the correlations."""
    lines = [f"aesgen correlate: preset {report.preset}, llvm-mca -mcpu={report.mca_cpu} "
             f"against runs here ({report.processes} processes, median)",
             f"{'kernel':<22}{'setting':<34}{'FACE':<6}{'key':>4}{'mca cyc/blk':>13}"
             f"{'bound':>8}{'ticks/B':>10}  note"]
    for p in report.points:
        pred = f"{p.predicted:.2f}" if p.predicted is not None else "-"
        bound = f"{p.bound:.2f}" if p.bound is not None else "-"
        meas = f"{p.measured:.3f}" if p.measured is not None else "-"
        lines.append(f"{p.kernel or '-':<22}{p.setting:<34}{p.face:<6}{p.key_bits:>4}"
                     f"{pred:>13}{bound:>8}{meas:>10}  {p.note}")
    lines.append("")
    lines.append(f"bound: the throughput bound of targets/uarch/{report.uarch}.toml "
                 "(report/throughput.py)" if report.uarch else "bound: no uarch model")
    fmt = (lambda v: f"{v:+.3f}" if v is not None else "n/a")
    for label, c in groups(report):
        lines.append(f"{label:<12} {c.n:>4} variants: llvm-mca Pearson r {fmt(c.pearson)}, "
                     f"Spearman rho {fmt(c.spearman)}; bound r {fmt(c.bound_pearson)}, "
                     f"rho {fmt(c.bound_spearman)}")
    return lines


def groups(report: Report) -> list[tuple[str, Correlation]]:
    """The correlations worth printing: over all variants, per mode, per mode and method."""
    out = [("all", report.correlation())]
    for mode in ("ctr", "gcm"):
        out.append((mode, report.correlation(mode)))
        for variant in sorted({p.choice.variant for p in report.points
                               if p.choice.mode == mode}):
            out.append((f"{mode} {variant}", report.correlation(mode, variant)))
    return [(label, c) for label, c in out if c.n]


def as_json(report: Report) -> dict:
    return {
        "preset": report.preset, "mca_cpu": report.mca_cpu, "uarch": report.uarch,
        "processes": report.processes,
        "points": [{"kernel": p.kernel, "mode": p.choice.mode, "choice": p.choice.name,
                    "value": p.value, "face": p.face, "key_bits": p.key_bits,
                    "mca_cycles_per_block": p.predicted,
                    "bound_cycles_per_block": p.bound, "ticks_per_byte": p.measured,
                    "note": p.note} for p in report.points],
        "correlation": {label: vars(c) for label, c in groups(report)},
    }
