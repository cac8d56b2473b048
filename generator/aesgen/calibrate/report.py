"""What ``aesgen calibrate`` makes of its measurements: the table beside a model and llvm-mca,
and a model file (values rounded once, here; unmeasured facts copied from a base model).
"""
from __future__ import annotations

import os
import tempfile
from pathlib import Path

from ..paths import ROOT
from ..uarch import (CORE_FACTS, INSTRUCTION_CLASSES, PIPE_FACTS, Fact, Timing, UarchModel,
                     parse_uarch)
from .microbench import ARCH, MIX_AES, MIXES, Calibration, Stat

SOURCE = "measured"
# the mix shares pipes when running both saves less than this part of the smaller half's
# time (separate pipes: about all of it; one pipe set: none of it)
SHARED_BELOW = 0.75
INT_FACTS = ("store_forward_latency", "loads_per_cycle", "stores_per_cycle")


def snap(x: float) -> int | float:
    """A measured figure as the model holds it: the whole number when within 0.1 of one
    (3.97 cycles is 4: the loop's own instructions and timer cost the rest), else two
    decimals (0.5 PCLMULQDQ a cycle stays 0.5)."""
    if round(x) >= 1 and abs(x - round(x)) <= 0.1:
        return int(round(x))
    return max(0.01, round(x, 2))                 # a model's figures are positive


def measured_timings(cal: Calibration) -> dict[str, Timing]:
    """{class: Timing} of every class measured, source "measured"."""
    out = {}
    for cls in INSTRUCTION_CLASSES[ARCH]:
        if cls in cal.per_cycle:
            lat = cal.latency.get(cls)
            out[cls] = Timing(snap(lat.median) if lat else None,
                              snap(cal.per_cycle[cls].median), SOURCE)
    return out


def shared_pipes(cal: Calibration, fact: str) -> bool | None:
    """Whether AES and the other class of the mix ``fact`` ("aes_clmul", "aes_shuffle")
    share pipes; None when that mix was not measured."""
    overlap = cal.facts.get(f"{fact}_overlap")
    return None if overlap is None else overlap.median < SHARED_BELOW


def measured_facts(cal: Calibration) -> tuple[dict[str, int], dict[str, bool]]:
    """The core facts (whole numbers, at least 1) and pipe facts measured."""
    core = {k: max(1, int(round(cal.facts[k].median))) for k in INT_FACTS if k in cal.facts}
    pipes = {f"{mix.fact}_shared": shared_pipes(cal, mix.fact) for mix in MIXES}
    return core, {k: v for k, v in pipes.items() if v is not None}


# --- the model file ------------------------------------------------------------------------
def source_text(cal: Calibration, date: str) -> str:
    return (f"aesgen calibrate on {cal.cpu.describe()}, {date}, {cal.processes} processes, "
            "median; the load latency is an upper bound (a load feeding its own address "
            "through MOVQ xmm->GP, less one cycle for the MOVQ)")


def build_model(cal: Calibration, name: str, date: str, base: UarchModel | None = None,
                mca_model: str = "", command: str = "aesgen calibrate"
                ) -> tuple[UarchModel, str]:
    """The model of this host and the header of its file: measured facts cite "measured",
    the others are the base model's with their sources (a base source itself named
    "measured" is renamed <base>_measured, so the citation stays true)."""
    timings = measured_timings(cal)
    core, pipes = measured_facts(cal)
    sources: dict[str, str] = {SOURCE: source_text(cal, date)}
    renamed: dict[str, str] = {}

    def cite(key: str) -> str:
        """The key a copied fact cites in the new file, its source copied along."""
        if key not in renamed:
            new = key
            if key == SOURCE:
                new = f"{base.name}_{SOURCE}".replace(".", "_")
                while new in sources:
                    new += "_"
            renamed[key] = new
            sources[new] = dict(base.sources)[key]
        return renamed[key]

    instructions: list[tuple[str, Timing]] = []
    copied: list[str] = []
    base_timings = dict(base.instructions) if base else {}

    def facts(known, measured: dict, base_facts) -> list[tuple[str, Fact]]:
        """Measured facts cite this run; the others come from the base model."""
        base_facts, out = dict(base_facts), []
        for key in known:
            if key in measured:
                out.append((key, Fact(measured[key], SOURCE)))
            elif key in base_facts:
                out.append((key, Fact(base_facts[key].value, cite(base_facts[key].source))))
                copied.append(key)
        return out

    core_facts = facts(CORE_FACTS, core, base.core if base else ())
    for cls in INSTRUCTION_CLASSES[ARCH]:
        if cls in timings:
            instructions.append((cls, timings[cls]))
        elif cls in base_timings:
            t = base_timings[cls]
            instructions.append((cls, Timing(t.latency, t.per_cycle, cite(t.source))))
            copied.append(cls)
    pipe_facts = facts(PIPE_FACTS, pipes, base.pipes if base else ())
    description = f"{cal.cpu.name} ({cal.cpu.vendor} family {cal.cpu.family} model " \
                  f"{cal.cpu.model}), measured by aesgen calibrate"
    if base:
        description += f"; facts it does not measure from {base.name}"
    model = UarchModel(name, ARCH, description, base.execution if base else "out-of-order",
                       base.mca_model if base else mca_model, tuple(sources.items()),
                       tuple(core_facts), tuple(instructions), tuple(pipe_facts))
    header = [f"{cal.cpu.describe()}: written by `{command}`, {date}.",
              f"Facts citing {SOURCE!r} were measured here ({cal.processes} processes, the "
              "median of each process's fastest repetition);"]
    if base:
        where = base.name if base.path is None else display_path(base.path)
        header.append(f"the others ({', '.join(copied) or 'none'}) are copied with their "
                      f"sources from {where}.")
    else:
        header.append("no base model: facts it does not measure are left out.")
    return model, "\n".join(header)


def model_text(model: UarchModel, header: str) -> str:
    """The file's text, read back through parse_uarch first (a model that would not load
    is a bug here, not a file to write)."""
    text = model.to_toml(header=header)
    back = parse_uarch(text)
    if back.instructions != model.instructions or back.core != model.core:
        raise AssertionError("the model file does not read back as written")
    return text


def write_atomically(path: Path, text: str) -> None:
    """``text`` to ``path`` through a temporary file in its folder and a rename: a reader
    sees the old file or the whole new one, and a failure leaves no part of it."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w") as f:
            f.write(text)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def display_path(path: Path) -> str:
    """A path inside the checkout as targets/uarch/x.toml, any other as given."""
    try:
        return str(path.resolve().relative_to(ROOT))
    except ValueError:
        return str(path)


# --- the table -----------------------------------------------------------------------------
def _num(v) -> str:
    if v is None:
        return "-"
    if isinstance(v, float):
        return f"{v:.2f}".rstrip("0").rstrip(".")
    return str(v)


def _stat(s: Stat | None, prefix: str = "") -> str:
    """median ± half the spread over processes."""
    if s is None:
        return "-"
    return f"{prefix}{s.median:.2f} ±{s.spread / 2:.2f}"


def render_table(cal: Calibration, base: UarchModel | None, mca: dict[str, Timing],
                 context: list[str]) -> str:
    """One row per instruction class (measured, the model's, llvm-mca's), then the core and
    pipe facts, then the checks of the cycle conversion. ``context`` lines go on top."""
    show_model, show_mca = base is not None, bool(mca)
    base_t = dict(base.instructions) if base else {}
    lines = [f"aesgen calibrate: {cal.cpu.describe()}"] + [f"  {c}" for c in context]
    lines += [f"  {cal.processes} process{'es' if cal.processes > 1 else ''} x "
              f"{cal.repetitions} repetitions: figures are medians over the processes of "
              "each one's",
              "  fastest repetition, ± half the spread over the processes",
              f"  TSC ticks per core cycle: {_stat(cal.ticks_per_cycle)} (64-bit ADD chain "
              "timed beside every loop)", ""]

    def cols(lat: str, lat_m: str, lat_x: str, per: str, per_m: str, per_x: str) -> str:
        s = f"{lat:<14}"
        s += f"{lat_m:>6}" if show_model else ""
        s += f"{lat_x:>6}" if show_mca else ""
        s += f"   {per:<14}"
        s += f"{per_m:>6}" if show_model else ""
        s += f"{per_x:>6}" if show_mca else ""
        return s.rstrip()

    width = 14 + 6 * show_model + 6 * show_mca
    head = f"{'class':<15}{'instruction':<24}"
    lines.append(head + f"{'latency (cycles)':<{width}}   instructions a cycle")
    lines.append(f"{'':<39}" + cols("measured", "model", "mca", "measured", "model", "mca"))
    for cls, what in INSTRUCTION_CLASSES[ARCH].items():
        row = f"{cls:<15}{what.split(' (')[0]:<24}"
        if cls in cal.skipped:
            lines.append(row + cal.skipped[cls])
            continue
        if cls not in cal.per_cycle:
            continue
        m, x = base_t.get(cls), mca.get(cls)
        lat = cal.latency.get(cls)
        lat_text = ("1 (reference)" if cls == "gp_add"
                    else _stat(lat, "≤" if cls == "load" else ""))
        lines.append(row + cols(lat_text, _num(m.latency) if m else "-",
                                _num(x.latency) if x else "-", _stat(cal.per_cycle[cls]),
                                _num(m.per_cycle) if m else "-",
                                _num(x.per_cycle) if x else "-"))
    core, pipes = measured_facts(cal)
    lines += ["", f"{'fact':<24}{'measured':<39}" + ("model" if show_model else "")]
    for key in INT_FACTS:
        if key not in cal.facts:
            continue
        mv = _model_fact(base, key)
        lines.append(f"{key:<24}{f'{core[key]}  ({_stat(cal.facts[key])})':<39}{mv}".rstrip())
    for mix in MIXES:
        key = f"{mix.fact}_shared"
        if key in pipes:
            ratio, overlap = cal.facts[f"{mix.fact}_ratio"], cal.facts[f"{mix.fact}_overlap"]
            verdict = "yes" if pipes[key] else "no"
            lines.append(f"{key:<24}{verdict + f'  (mix/sum {_stat(ratio)})':<39}"
                         f"{_model_fact(base, key)}".rstrip())
            lines += [f"{'':<26}{MIX_AES} AESENC + {cal.mixed[mix.other]} "
                      f"{mix.instruction} streams interleaved vs. apart: the mix hides "
                      f"{overlap.median:.0%}".replace("-0%", "0%"),    # a rounded -0.1%
                      f"{'':<26}of the smaller part's time; shared below {SHARED_BELOW:.0%} "
                      "(separate pipes hide ~100%)"]
        elif key in cal.skipped:
            lines.append(f"{key:<24}{cal.skipped[key]}")
    lines += ["", "checks (not written to a model):",
              f"  IMUL r64 chain {_stat(cal.checks['imul'])} cycles (3 on every x86-64 "
              "core: the ADD conversion is right if so)",
              f"  GP load pointer chase {_stat(cal.checks['gp_load'])} cycles; MOVQ "
              f"xmm->GP->xmm round trip {_stat(cal.checks['movq_roundtrip'])} cycles",
              "  load latency (≤): a load feeding its own address through MOVQ xmm->GP, "
              "less 1 cycle", "  for the MOVQ: an upper bound"]
    return "\n".join(lines) + "\n"


def _model_fact(base: UarchModel | None, key: str) -> str:
    if base is None:
        return ""
    for k, f in base.core + base.pipes:
        if k == key:
            return ("yes" if f.value else "no") if isinstance(f.value, bool) else _num(f.value)
    return "-"
