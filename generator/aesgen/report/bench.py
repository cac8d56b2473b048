"""`aesgen bench`: run the Google Benchmark program beside the peers; tables, JSON, chart.

The program (harness/bench/, built per preset as build/<preset>/aesgen_bench) names every
benchmark ``IMPL/MODE/KEYBITS/SIZE`` and reports ``ticks_per_byte`` (TSC ticks, not core
cycles) and, for set-up, ``ticks``. MODE is a CTR mode (stream, msg_iv, fresh_iv, setup,
first), ``gcm_seal`` (one TLS-style AES-GCM record per iteration, beside OpenSSL, ipsec-mb,
libgcrypt and BoringSSL), ``gcm_siv_seal`` and ``gcm_siv_open`` (one AES-GCM-SIV record
sealed or opened per iteration, beside libgcrypt and BoringSSL; these also report
``ticks_per_message``, which at small sizes is GCM-SIV's per-nonce key derivation and set-up),
``otr_seal`` and ``otr_open`` (one AES-OTR record sealed or opened per iteration, beside
AES-OCB in libgcrypt and OpenSSL) with ``otr_ref`` (the same method's CTR and GCM kernels
without FACE, per record, for comparison), all three with ``ticks_per_message`` too, or
``ghash`` (one AAD-only AES-128-GCM message per iteration: GHASH alone, beside OpenSSL's
and two constant-time GHASHs in C without a carry-less multiplier).
This module runs it as it is (aesgen kernels and peers) and again with OpenSSL's AES-NI and
PCLMULQDQ masked (``OPENSSL_ia32cap``), which makes OpenSSL take its bitsliced AES and its
table GHASH; each of these N times, as separate processes, since timings on a shared VM
differ from process to process. Per benchmark it reports the median of all repetitions of
all processes and the spread of the per-process medians, and renders the results.
"""
from __future__ import annotations

import json
import math
import os
import re
import statistics
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

# clears CPUID.1:ECX.AES (bit 57 of word 0) and .PCLMULQDQ (bit 33): OpenSSL without either
OPENSSL_NO_AESNI = "~0x200000200000000"
STREAM_SIZES = (16, 1024, 4096, 20480, 40960)
# messages after a fresh key (mode `first`), for where FACE starts to pay
FIRST_SIZES = (256, 512, 1024, 2048, 4096, 6144, 8192, 12288, 16384, 32768, 65536)
QUICK_FIRST_SIZES = (512, 2048, 4096, 8192, 16384)
MODES = ("stream", "msg_iv", "fresh_iv")
MODE_TITLES = {"stream": "streaming (one IV, messages continue the counter)",
               "msg_iv": "per-message IV (set_iv before each message; IV bytes 0, 5, 10 kept)",
               "fresh_iv": "fresh IV per message (bytes 0, 5, 10 change: FACE tables rebuilt)",
               "gcm_seal": "GCM seal per record (new 12-byte TLS nonce, 13-byte AAD, 16-byte "
                           "tag)",
               "gcm_seal_fresh": "GCM seal per record under a fresh random 12-byte nonce "
                                 "(FACE's worst case: counter bytes 0, 5 and 10 change every "
                                 "record), 13-byte AAD, 16-byte tag; the set's kernels alone "
                                 "(a peer's cost does not depend on the nonce)",
               "gcm_siv_seal": "GCM-SIV seal per record (new 12-byte nonce, 13-byte AAD, "
                               "16-byte tag; the per-nonce key derivation included)",
               "gcm_siv_open": "GCM-SIV open per record (a valid record under its own nonce, "
                               "13-byte AAD, 16-byte tag; the per-nonce key derivation "
                               "included)",
               "otr_seal": "OTR seal per record (new 12-byte nonce, 13-byte AAD, 16-byte "
                           "tag; the peers are AES-OCB, RFC 7253)",
               "otr_open": "OTR open per record (a valid record under its own nonce, 13-byte "
                           "AAD, 16-byte tag; the peers are AES-OCB, RFC 7253)",
               "otr_ref": "for comparison, not OTR: the same method's CTR kernel without FACE "
                          "(a new IV, SIZE bytes of keystream XOR) and GCM kernel without FACE "
                          "(a record sealed), per record",
               "ghash": "GHASH alone (AAD only, AES-128: per message a new nonce, the bytes "
                        "as AAD, the 16-byte tag; ct-* hash the data and the length block, no "
                        "AES)"}
# What `--what` picks: the CTR benchmarks, the AES-GCM seal benchmarks, the AES-GCM-SIV seal
# and open ones, the AES-OTR seal and open ones (beside OCB, with their CTR and GCM
# comparison), GHASH alone; and what the program runs when not told.
WHAT = ("ctr", "gcm", "gcm-fresh", "gcm-siv", "otr", "ghash")
# GCM-SIV and OTR are in the default (their few implementations at six sizes are a small
# part of a default run); GHASH alone is asked for
DEFAULT_WHAT = ("ctr", "gcm", "gcm-siv", "otr")
AEAD_MODE = "gcm_seal"
AEAD_FRESH_MODE = "gcm_seal_fresh"           # --what gcm-fresh: the set's GCM kernels alone
GCM_SIV_MODES = ("gcm_siv_seal", "gcm_siv_open")
GCM_SIV_SIZES = (16, 64, 256, 1420, 4096, 16384)
OTR_MODES = ("otr_seal", "otr_open")
OTR_REF_MODE = "otr_ref"
OTR_SIZES = (16, 64, 256, 1420, 4096, 16384)
# the record sizes the OTR targets are stated at (1420 B: a TLS record on a 1500-byte MTU;
# 16 KiB: TLS's largest); the ratio lines are given at these where they ran
OTR_TARGET_SIZES = (1420, 16384)
# the modes of aesgen_aeads[] the program times as OTR (harness/bench/otr_bench.cc): v3.1
# and v2, with the AD parallel or serial
OTR_KERNEL_MODES = ("otr", "otr-v2", "otr-s", "otr-v2-s")
# the ticks-per-message table has the GCM-SIV sizes up to this: where the per-nonce set-up
# is most of a record's cost
PER_MESSAGE_MAX_SIZE = 256
GHASH_MODE = "ghash"
GHASH_KEY = 128  # the KEYBITS of every IMPL/ghash/KEYBITS/SIZE
AEAD_SIZES = (64, 256, 1420, 4096, 16384)
AEAD_KEYS = (128, 256)
AEAD_MAX_SIZE = 65536 - 16
# ct-: the constant-time GHASHs in C that the ghash table compares the set's hash with
PEER_PREFIXES = ("openssl", "ipsec-mb", "libgcrypt", "boringssl", "ct-")


@dataclass(frozen=True)
class BenchPlan:
    binary: Path
    sizes: tuple[int, ...]
    keys: tuple[int, ...]
    filter: str | None
    repetitions: int
    min_time: float
    warmup: float
    first_sizes: tuple[int, ...] = FIRST_SIZES
    what: tuple[str, ...] = DEFAULT_WHAT
    # None: each AEAD table's own sizes (gcm_seal and ghash AEAD_SIZES, GCM-SIV
    # GCM_SIV_SIZES, OTR OTR_SIZES); given, every AEAD table's
    aead_sizes: tuple[int, ...] | None = None


def _progress(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


def list_benchmarks(plan: BenchPlan, env: dict | None = None) -> list[str]:
    cmd = [str(plan.binary), "--aesgen_list", *_plan_flags(plan)]
    out = subprocess.run(cmd, capture_output=True, text=True, env=env, check=True).stdout
    return [line.strip() for line in out.splitlines() if line.count("/") == 3]


def _plan_flags(plan: BenchPlan) -> list[str]:
    flags = [f"--aesgen_sizes={','.join(map(str, plan.sizes))}",
             f"--aesgen_first_sizes={','.join(map(str, plan.first_sizes))}",
             f"--aesgen_keys={','.join(map(str, plan.keys))}",
             f"--aesgen_what={','.join(plan.what)}"]
    if plan.aead_sizes:
        flags.append(f"--aesgen_aead_sizes={','.join(map(str, plan.aead_sizes))}")
    if plan.filter:
        flags.append(f"--benchmark_filter={plan.filter}")
    return flags


class NothingToRun(ValueError):
    """The filter and sizes leave the program nothing to measure."""


def run_once(plan: BenchPlan, out_json: Path, label: str, env: dict | None = None,
             show_skips: bool = True) -> dict:
    """Run the program, showing which benchmark runs (i of n) and (with show_skips) which
    implementations it skips and why, and return its JSON, with the skips added as
    ``skipped`` (IMPL -> reason)."""
    names = list_benchmarks(plan, env)
    if plan.filter:
        names = [n for n in names if re.search(plan.filter, n)]
    total = len(names)
    if not total:
        raise NothingToRun(f"no benchmark of {plan.binary.name} ({label}) matches --filter "
                           f"{plan.filter!r} at these sizes and key sizes; names look like "
                           f"IMPL/MODE/KEYBITS/SIZE, e.g. gfni256-face-r2/stream/128/4096 "
                           f"(stream sizes 16, 1024, 4096, 20480, 40960)")
    cmd = [str(plan.binary), *_plan_flags(plan),
           f"--benchmark_repetitions={plan.repetitions}",
           f"--benchmark_min_time={plan.min_time}",
           f"--benchmark_min_warmup_time={plan.warmup}",
           "--benchmark_display_aggregates_only=true",
           # repetitions of all benchmarks in random order: drift in the machine's speed
           # (a shared VM) then spreads over every row instead of biasing some
           "--benchmark_enable_random_interleaving=true",
           f"--benchmark_out={out_json}", "--benchmark_out_format=json",
           "--benchmark_format=console", "--benchmark_color=false"]
    _progress(f"aesgen bench: {label}: {total} benchmarks x {plan.repetitions} repetitions")
    seen: set[str] = set()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            env=env)
    assert proc.stdout is not None
    log = []
    skipped: dict[str, str] = {}
    for line in proc.stdout:
        log.append(line)
        if line.startswith("skip ") and ": " in line:
            impl, why = line[5:].rstrip("\n").split(": ", 1)
            skipped[impl] = why
            if show_skips:
                _progress(f"  {line.rstrip()}")
            continue
        first = line.split(" ", 1)[0]
        base = first.rsplit("_", 1)[0] if first.endswith(("_median", "_mean", "_stddev",
                                                          "_cv")) else first
        if base.count("/") >= 3 and base not in seen:
            seen.add(base)
            _progress(f"  [{len(seen):>3}/{total}] {base}")
    if proc.wait() != 0:
        raise RuntimeError(f"{plan.binary} failed ({label}):\n" + "".join(log[-20:]))
    data = json.loads(out_json.read_text())
    data["skipped"] = skipped
    return data


def run_processes(plan: BenchPlan, out_dir: Path, stem: str, label: str, processes: int,
                  env: dict | None = None) -> list[dict]:
    """Run the program `processes` times, one process after the other (raw JSON in
    out_dir/raw-STEM-I.json); returns their JSON, one dict per process."""
    runs = []
    for i in range(1, processes + 1):
        tag = f"{label}, process {i}/{processes}" if processes > 1 else label
        runs.append(run_once(plan, out_dir / f"raw-{stem}-{i}.json", tag, env,
                             show_skips=(i == 1)))
    return runs


def skipped(*runs: dict) -> dict[str, str]:
    """IMPL -> why the program did not run it, over all runs."""
    out: dict[str, str] = {}
    for run in runs:
        out.update(run.get("skipped", {}))
    return dict(sorted(out.items()))


def _base_name(b: dict) -> str:
    return (b.get("run_name") or b["name"]).split("/repeats:")[0]


def summarize(*runs: dict) -> dict[str, dict]:
    """name -> {impl, mode, key_bits, size, median, min, max, spread, unit, ...} from the
    per-repetition entries of one or more runs, each run one process.

    median is over every repetition of every process; min and max likewise. Where the
    benchmark ran in two or more processes, ``process_medians`` lists each process's
    median and ``spread`` is (max - min) of those over the median (``spread_over``
    "processes"), since timings differ more from process to process than within one;
    otherwise it is the spread of the repetitions (``spread_over`` "repetitions").
    Benchmarks that report ``ticks_per_message`` (GCM-SIV, OTR) get it the same way, as
    ``ticks_per_message``, ``ticks_per_message_process_medians`` and
    ``ticks_per_message_spread``."""
    samples: dict[str, list[float]] = {}
    per_process: dict[str, list[list[float]]] = {}
    speeds: dict[str, list[float]] = {}
    units: dict[str, str] = {}
    for run in runs:
        seen_here: set[str] = set()
        for b in run.get("benchmarks", []):
            if b.get("run_type") != "iteration":
                continue
            name = _base_name(b)
            if "ticks_per_byte" in b and not name.split("/")[1] == "setup":
                value, unit = b["ticks_per_byte"], "ticks/B"
            elif "ticks" in b:
                value, unit = b["ticks"], "ticks"
            else:
                continue
            samples.setdefault(name, []).append(float(value))
            if name not in seen_here:
                per_process.setdefault(name, []).append([])
                seen_here.add(name)
            per_process[name][-1].append(float(value))
            if b.get("bytes_per_second"):
                speeds.setdefault(name, []).append(float(b["bytes_per_second"]))
            units[name] = unit
    out = {}
    for name, vals in samples.items():
        impl, mode, bits, size = name.split("/")
        med = statistics.median(vals)
        medians = [statistics.median(p) for p in per_process[name]]
        lo, hi = (min(medians), max(medians)) if len(medians) > 1 else (min(vals), max(vals))
        out[name] = {"impl": impl, "mode": mode, "key_bits": int(bits), "size": int(size),
                     "median": med, "min": min(vals), "max": max(vals),
                     "spread": (hi - lo) / med if med else 0.0,
                     "spread_over": "processes" if len(medians) > 1 else "repetitions",
                     "process_medians": medians, "processes": len(medians),
                     "repetitions": len(vals), "unit": units[name],
                     "gb_per_s": (statistics.median(speeds[name]) / 1e9
                                  if name in speeds else None)}
    if runs:
        for name, row in out.items():
            if row["mode"] == "first":
                ticks = [b.get("ticks") for run in runs for b in run.get("benchmarks", [])
                         if b.get("run_type") == "iteration" and _base_name(b) == name]
                ticks = [t for t in ticks if t is not None]
                if ticks:
                    row["ticks_per_message"] = statistics.median(ticks)
    for name, procs in _counter_by_process(runs, "ticks_per_message").items():
        if name in out:
            out[name].update(_per_message_cell(procs))
    return out


def _counter_by_process(runs: tuple[dict, ...], counter: str) -> dict[str, list[list[float]]]:
    """name -> the values of `counter` in the per-repetition entries, one list per process
    (run) that reported it."""
    out: dict[str, list[list[float]]] = {}
    for run in runs:
        here: dict[str, list[float]] = {}
        for b in run.get("benchmarks", []):
            if b.get("run_type") == "iteration" and b.get(counter) is not None:
                here.setdefault(_base_name(b), []).append(float(b[counter]))
        for name, vals in here.items():
            out.setdefault(name, []).append(vals)
    return out


def _per_message_cell(procs: list[list[float]]) -> dict:
    """ticks_per_message of one benchmark: the median of every repetition of every process,
    and its spread as summarize computes the main figure's."""
    vals = [v for p in procs for v in p]
    med = statistics.median(vals)
    medians = [statistics.median(p) for p in procs]
    lo, hi = (min(medians), max(medians)) if len(medians) > 1 else (min(vals), max(vals))
    return {"ticks_per_message": med, "ticks_per_message_process_medians": medians,
            "ticks_per_message_spread": (hi - lo) / med if med else 0.0}


def impl_order(summary: dict[str, dict]) -> list[str]:
    impls = sorted({r["impl"] for r in summary.values()})
    peers = [i for i in impls if i.startswith(PEER_PREFIXES)]
    return [i for i in impls if i not in peers] + sorted(peers)


def spread_note(summary: dict[str, dict]) -> str:
    """What the ± of the tables is half of."""
    n = max((r.get("processes", 1) for r in summary.values()), default=1)
    return "the spread of the per-process medians" if n > 1 else "the spread of the repetitions"


def table(summary: dict[str, dict], mode: str, bits: int, sizes: tuple[int, ...],
          markdown: bool = False) -> str:
    rows = [(impl, {r["size"]: r for r in summary.values()
                    if r["impl"] == impl and r["mode"] == mode and r["key_bits"] == bits})
            for impl in impl_order(summary)]
    rows = [(i, cells) for i, cells in rows if cells]
    if not rows:
        return ""
    if markdown:
        out = [f"**AES-{bits}, {MODE_TITLES[mode]}** — TSC ticks per byte, median, ± half "
               f"{spread_note(summary)}; GB/s (median)", "",
               "| implementation | " + " | ".join(f"{s} B" for s in sizes) + " |",
               "|---|" + "---:|" * len(sizes)]
        for impl, cells in rows:
            vals = [f"{cells[s]['median']:.3f} ±{cells[s]['spread'] * 50:.0f}%"
                    + (f", {cells[s]['gb_per_s']:.1f} GB/s" if cells[s].get('gb_per_s') else "")
                    if s in cells else "" for s in sizes]
            out.append(f"| {impl} | " + " | ".join(vals) + " |")
        return "\n".join(out) + "\n"
    head = f"{'AES-' + str(bits) + ' ' + mode:<22}" + "".join(f"{str(s) + ' B':>16}"
                                                               for s in sizes)
    out = [head, "-" * len(head)]
    for impl, cells in rows:
        line = f"{impl:<22}"
        for s in sizes:
            if s in cells:
                c = cells[s]
                line += f"{c['median']:>9.3f} ±{c['spread'] * 50:>3.0f}% "
            else:
                line += f"{'':>16}"
        out.append(line)
    return "\n".join(out) + "\n"


def aead_table(summary: dict[str, dict], bits: int, sizes: tuple[int, ...],
               markdown: bool = False, mode: str = AEAD_MODE) -> str:
    """AES-GCM seal (``mode`` AEAD_MODE, or AEAD_FRESH_MODE under fresh random nonces):
    rows implementations, columns record sizes, cells TSC ticks per byte (median) ± half
    the spread; in markdown also the lowest and highest per-process median. Empty when
    nothing ran at this key size."""
    label = "GCM seal" if mode == AEAD_MODE else "GCM seal, fresh nonces"
    return _size_table(summary, mode, bits, sizes, f"AES-{bits}-{label}",
                       f"AES-{bits}-GCM", markdown)


def ghash_table(summary: dict[str, dict], sizes: tuple[int, ...],
                markdown: bool = False) -> str:
    """GHASH alone: rows implementations, columns message (AAD) sizes, cells as in
    aead_table. Empty when no ghash benchmark ran."""
    return _size_table(summary, GHASH_MODE, GHASH_KEY, sizes, "GHASH",
                       f"AES-{GHASH_KEY}-GCM", markdown)


def gcm_siv_table(summary: dict[str, dict], mode: str, bits: int, sizes: tuple[int, ...],
                  markdown: bool = False) -> str:
    """AES-GCM-SIV seal or open (mode gcm_siv_seal or gcm_siv_open): rows implementations,
    columns record sizes, cells as in aead_table. Empty when nothing ran at this key size."""
    what = mode.removeprefix("gcm_siv_")
    return _size_table(summary, mode, bits, sizes, f"AES-{bits}-GCM-SIV {what}",
                       f"AES-{bits}-GCM-SIV", markdown)


def per_message_table(summary: dict[str, dict], bits: int, sizes: tuple[int, ...],
                      markdown: bool = False, modes: tuple[str, str] = GCM_SIV_MODES,
                      cipher: str = "GCM-SIV",
                      note: str = "mostly the per-nonce key derivation and set-up at 16 B"
                      ) -> str:
    """TSC ticks per record, seal and open (`modes`: GCM-SIV's by default, or OTR_MODES),
    at the sizes up to PER_MESSAGE_MAX_SIZE: rows implementations, columns seal and open at
    each size, cells the median ± half the spread (markdown also [lowest..highest
    per-process median]). At 16 bytes a GCM-SIV record's cost is mostly what it does once per
    nonce: derive the authentication and encryption keys, expand the latter, the POLYVAL
    key's powers. Empty when no such benchmark ran at this key size."""
    cols = [(mode, s) for s in sizes if s <= PER_MESSAGE_MAX_SIZE for mode in modes]
    rows = [(impl, {(r["mode"], r["size"]): r for r in summary.values()
                    if r["impl"] == impl and r["key_bits"] == bits
                    and r["mode"] in modes and "ticks_per_message" in r})
            for impl in impl_order(summary)]
    rows = [(i, cells) for i, cells in rows if any(c in cells for c in cols)]
    if not rows or not cols:
        return ""
    heads = [f"{mode.rsplit('_', 1)[1]} {s} B" for mode, s in cols]
    if markdown:
        out = [f"**AES-{bits}-{cipher}, TSC ticks per record** (seal and open; {note}) — "
               f"median of all repetitions, ± half {spread_note(summary)} "
               f"[lowest..highest per-process median]", "",
               "| implementation | " + " | ".join(heads) + " |", "|---|" + "---:|" * len(cols)]
        for impl, cells in rows:
            out.append(f"| {impl} | " + " | ".join(_per_message_md(cells.get(c))
                                                     for c in cols) + " |")
        return "\n".join(out) + "\n"
    head = f"{f'AES-{bits}-{cipher} ticks':<22}" + "".join(f"{h:>16}" for h in heads)
    out = [head, "-" * len(head)]
    for impl, cells in rows:
        out.append(f"{impl:<22}" + "".join(_per_message_text(cells.get(c)) for c in cols))
    return "\n".join(out) + "\n"


def _per_message_text(r: dict | None) -> str:
    """One 16-character console cell of per_message_table."""
    if r is None:
        return f"{'':>16}"
    return f"{r['ticks_per_message']:>9.0f} ±{r['ticks_per_message_spread'] * 50:>3.0f}% "


def _per_message_md(r: dict | None) -> str:
    """One markdown cell of per_message_table."""
    if r is None:
        return ""
    cell = f"{r['ticks_per_message']:.0f} ±{r['ticks_per_message_spread'] * 50:.0f}%"
    medians = r["ticks_per_message_process_medians"]
    if len(medians) > 1:
        cell += f" [{min(medians):.0f}..{max(medians):.0f}]"
    return cell


def gcm_siv_sections(summary: dict[str, dict], keys: tuple[int, ...],
                     sizes: tuple[int, ...]) -> list[tuple[str, str]]:
    """The AES-GCM-SIV part of the report, per key size: the seal table, the open table and
    the ticks-per-record table, each as (console text, markdown); none where nothing ran."""
    out = []
    for bits in keys:
        for mode in GCM_SIV_MODES:
            t = gcm_siv_table(summary, mode, bits, sizes)
            if t:
                out.append((f"\n{MODE_TITLES[mode]}\n{t}",
                            gcm_siv_table(summary, mode, bits, sizes, markdown=True)))
        t = per_message_table(summary, bits, sizes)
        if t:
            out.append((f"\nGCM-SIV TSC ticks per record, seal and open (at 16 B mostly the "
                        f"per-nonce key derivation and set-up)\n{t}",
                        per_message_table(summary, bits, sizes, markdown=True)))
    return out


def is_peer(impl: str) -> bool:
    """Whether an IMPL is a peer library (or a constant-time GHASH in C), not a kernel of
    the set."""
    return impl.startswith(PEER_PREFIXES)


def otr_kernels(summary: dict[str, dict], bits: int | None = None) -> list[str]:
    """The set's OTR kernels that ran (otr_seal or otr_open rows not of a peer), in
    impl_order; at one key size when `bits` is given."""
    ran = {r["impl"] for r in summary.values() if r["mode"] in OTR_MODES
           and not is_peer(r["impl"]) and (bits is None or r["key_bits"] == bits)}
    return [i for i in impl_order(summary) if i in ran]


def otr_method(impl: str) -> str:
    """The method of an OTR kernel's name: vaes512-otr, vaes256-otr-v2-s -> vaes512,
    vaes256."""
    return impl.split("-otr", 1)[0]


def otr_comparison_names(method: str) -> dict[str, str]:
    """The comparison kernels (otr_ref) of a method, by what they are: its CTR and its GCM
    kernel without FACE."""
    return {"CTR": f"{method}-face-none", "GCM": f"{method}-gcm-none"}


def otr_table(summary: dict[str, dict], mode: str, bits: int, sizes: tuple[int, ...],
              markdown: bool = False) -> str:
    """AES-OTR seal or open (mode otr_seal or otr_open): rows the OTR kernels and the OCB
    peers, columns record sizes, cells as in aead_table. The seal table ends with the
    comparison rows (otr_ref), labelled "IMPL (CTR)" or "IMPL (GCM)". Empty when no OTR or
    OCB row ran at this key size."""
    extra = []
    if mode == "otr_seal":
        for impl, cells in _size_rows(summary, OTR_REF_MODE, bits):
            what = "GCM" if "-gcm-" in impl else "CTR"
            extra.append((f"{impl} ({what})", cells))
    what = mode.removeprefix("otr_")
    return _size_table(summary, mode, bits, sizes, f"AES-{bits}-OTR {what}",
                       f"AES-{bits}-OTR", markdown, extra_rows=extra)


def _ratio(numerator: float | None, denominator: float | None) -> float | None:
    return numerator / denominator if numerator and denominator else None


def otr_ratios(summary: dict[str, dict], keys: tuple[int, ...],
               sizes: tuple[int, ...]) -> list[dict]:
    """What the OTR targets are stated as, per OTR kernel, key size and record size that ran:
    its seal and open ticks per byte; the speed-up over each OCB peer (the peer's ticks over
    the kernel's, seal against seal and open against open: > 1 is faster); its seal's
    ticks over its method's CTR kernel's and GCM kernel's without FACE (otr_ref: 1.15 is 15%
    slower than that CTR)."""
    out = []
    by_name = {(r["impl"], r["mode"], r["key_bits"], r["size"]): r["median"]
               for r in summary.values()}
    peers = sorted({r["impl"] for r in summary.values()
                    if r["mode"] in OTR_MODES and is_peer(r["impl"])})
    for bits in keys:
        for impl in otr_kernels(summary, bits):
            for size in sizes:
                seal = by_name.get((impl, "otr_seal", bits, size))
                opn = by_name.get((impl, "otr_open", bits, size))
                if seal is None and opn is None:
                    continue
                row = {"impl": impl, "key_bits": bits, "size": size, "seal": seal, "open": opn,
                       "speedup_seal": {}, "speedup_open": {}, "versus": {}}
                for peer in peers:
                    if (x := _ratio(by_name.get((peer, "otr_seal", bits, size)), seal)):
                        row["speedup_seal"][peer] = x
                    if (x := _ratio(by_name.get((peer, "otr_open", bits, size)), opn)):
                        row["speedup_open"][peer] = x
                for what, ref in otr_comparison_names(otr_method(impl)).items():
                    if (x := _ratio(seal, by_name.get((ref, OTR_REF_MODE, bits, size)))):
                        row["versus"][what] = {"impl": ref, "ratio": x}
                out.append(row)
    return out


def _ratio_text(r: dict) -> str:
    """One line of the OTR ratios, e.g. "vaes512-otr  AES-128 16384 B  seal 0.101 ticks/B:
    1.25x libgcrypt-ocb, 2.31x openssl-ocb; 1.12x the ticks of vaes512-face-none (CTR), ...;
    open 0.098 ticks/B: 1.30x libgcrypt-ocb, ..."."""
    parts = []
    for what in ("seal", "open"):
        if r[what] is None:
            continue
        bits = [f"{x:.2f}x {peer}" for peer, x in r[f"speedup_{what}"].items()]
        if what == "seal":
            bits += [f"{v['ratio']:.2f}x the ticks of {v['impl']} ({k})"
                     for k, v in r["versus"].items()]
        parts.append(f"{what} {r[what]:.3f} ticks/B" + (": " + ", ".join(bits) if bits else ""))
    return f"{r['impl']:<18} AES-{r['key_bits']} {r['size']:>5} B  " + "; ".join(parts)


OTR_RATIO_NOTE = ("speed-up over a peer = its ticks / the kernel's (seal against seal, open "
                  "against open; > 1 is faster); against CTR and GCM = the kernel's seal "
                  "ticks / theirs (1.15 is 15% slower)")


def otr_sections(summary: dict[str, dict], keys: tuple[int, ...], sizes: tuple[int, ...],
                 set_name: str = "this set") -> list[tuple[str, str]]:
    """The AES-OTR part of the report, per key size: the seal table (with the CTR and GCM
    comparison rows), the open table and the ticks-per-record table; then the OTR kernels
    against their targets (otr_ratios at OTR_TARGET_SIZES, or the largest size run, for
    AES-128 or the first key size run), or, when no OTR kernel ran, a line saying so. Each
    as (console text, markdown); nothing where no OTR benchmark ran."""
    out = []
    for bits in keys:
        for mode in OTR_MODES:
            t = otr_table(summary, mode, bits, sizes)
            if t:
                out.append((f"\n{MODE_TITLES[mode]}\n{t}",
                            otr_table(summary, mode, bits, sizes, markdown=True)))
        note = "at 16 B mostly the block-cipher calls once per nonce and for the tag"
        t = per_message_table(summary, bits, sizes, modes=OTR_MODES, cipher="OTR", note=note)
        if t:
            out.append((f"\nOTR and OCB TSC ticks per record, seal and open ({note})\n{t}",
                        per_message_table(summary, bits, sizes, markdown=True,
                                          modes=OTR_MODES, cipher="OTR", note=note)))
    if not out:
        return out
    if not otr_kernels(summary):
        line = (f"no AES-OTR kernel ran: {set_name} has none this CPU runs yet (modes "
                f"{', '.join(OTR_KERNEL_MODES)}); the OTR tables hold the OCB peers and the "
                f"comparison rows only")
        out.append((f"\n{line}", f"*{line[0].upper() + line[1:]}.*\n"))
        return out
    ran_keys = [b for b in keys if otr_kernels(summary, b)]
    text_keys = (128,) if 128 in ran_keys else tuple(ran_keys[:1])
    ran_sizes = sorted({r["size"] for r in summary.values() if r["mode"] in OTR_MODES})
    text_sizes = tuple(s for s in OTR_TARGET_SIZES if s in ran_sizes) or tuple(ran_sizes[-1:])
    rows = otr_ratios(summary, text_keys, text_sizes)
    if rows:
        head = f"OTR kernels against their targets ({OTR_RATIO_NOTE})"
        out.append(("\n" + head + "\n" + "\n".join("  " + _ratio_text(r) for r in rows) + "\n",
                    f"**{head[0].upper() + head[1:]}**\n\n"
                    + "\n".join(f"- {_ratio_text(r)}" for r in rows) + "\n"))
    return out


def _size_rows(summary: dict[str, dict], mode: str, bits: int) -> list[tuple[str, dict]]:
    """(implementation, {size: row}) of one mode and key size, in impl_order; only those
    that ran."""
    rows = [(impl, {r["size"]: r for r in summary.values()
                    if r["impl"] == impl and r["mode"] == mode and r["key_bits"] == bits})
            for impl in impl_order(summary)]
    return [(i, cells) for i, cells in rows if cells]


def _size_table(summary: dict[str, dict], mode: str, bits: int, sizes: tuple[int, ...],
                head_label: str, md_label: str, markdown: bool,
                extra_rows: list[tuple[str, dict]] | None = None) -> str:
    """The table of one mode and key size whose columns are sizes (gcm_seal, gcm_siv_seal,
    gcm_siv_open, otr_seal, otr_open, ghash); `extra_rows` (label, {size: row}) follow the
    mode's own (the OTR seal table's comparison rows). Empty when the mode has no row."""
    rows = _size_rows(summary, mode, bits)
    if not rows:
        return ""
    rows += extra_rows or []
    width = max(22, max(len(label) + 1 for label, _ in rows))
    if markdown:
        out = [f"**{md_label}, {MODE_TITLES[mode]}** — TSC ticks per byte, median "
               f"of all repetitions, ± half {spread_note(summary)} [lowest..highest "
               f"per-process median]", "",
               "| implementation | " + " | ".join(f"{s} B" for s in sizes) + " |",
               "|---|" + "---:|" * len(sizes)]
        for impl, cells in rows:
            vals = []
            for s in sizes:
                c = cells.get(s)
                if c is None:
                    vals.append("")
                    continue
                cell = f"{c['median']:.3f} ±{c['spread'] * 50:.0f}%"
                if c.get("processes", 1) > 1:
                    cell += (f" [{min(c['process_medians']):.3f}.."
                             f"{max(c['process_medians']):.3f}]")
                vals.append(cell)
            out.append(f"| {impl} | " + " | ".join(vals) + " |")
        return "\n".join(out) + "\n"
    head = f"{head_label:<{width}}" + "".join(f"{str(s) + ' B':>16}" for s in sizes)
    out = [head, "-" * len(head)]
    for impl, cells in rows:
        line = f"{impl:<{width}}"
        for s in sizes:
            c = cells.get(s)
            line += f"{c['median']:>9.3f} ±{c['spread'] * 50:>3.0f}% " if c else f"{'':>16}"
        out.append(line)
    return "\n".join(out) + "\n"


def setup_costs(summary: dict[str, dict]) -> list[dict]:
    return sorted(({"impl": r["impl"], "key_bits": r["key_bits"], "ticks": r["median"]}
                   for r in summary.values() if r["mode"] == "setup"),
                  key=lambda r: (r["impl"], r["key_bits"]))


def break_even(summary: dict[str, dict]) -> list[dict]:
    """For each FACE kernel, the smallest message (after a fresh key) from which on its whole
    cost, init and table filling included, is at most (within 2%) that of the same method's
    `none` kernel."""
    firsts = [r for r in summary.values() if r["mode"] == "first" and "ticks_per_message" in r]
    out = []
    for r in sorted({(x["impl"], x["key_bits"]) for x in firsts}):
        impl, bits = r
        if "-face-" not in impl or impl.endswith("-face-none"):
            continue
        base = impl.rsplit("-face-", 1)[0] + "-face-none"
        mine = {x["size"]: x["ticks_per_message"] for x in firsts
                if x["impl"] == impl and x["key_bits"] == bits}
        theirs = {x["size"]: x["ticks_per_message"] for x in firsts
                  if x["impl"] == base and x["key_bits"] == bits}
        common = sorted(set(mine) & set(theirs))
        # within 2% counts as even: the medians of a shared VM move by that much
        wins = [s for s in common
                if all(mine[t] <= theirs[t] * 1.02 for t in common if t >= s)]
        out.append({"impl": impl, "versus": base, "key_bits": bits,
                    "break_even_bytes": wins[0] if wins else None,
                    "largest_tested": common[-1] if common else None,
                    "ticks": {str(s): [round(mine[s]), round(theirs[s])] for s in common}})
    return out


FAMILY_COLOURS = {"aesni": "tab:blue", "vaes256": "tab:orange", "vaes512": "tab:red",
                  "gfni128": "tab:olive", "gfni256": "tab:green", "gfni512": "tab:purple"}
PEER_STYLES = {"openssl": ("black", "s"), "openssl-noaesni": ("dimgray", "v"),
               "openssl-noaesni-gcm": ("dimgray", "v"),
               "ct-1bit": ("indigo", "x"), "ct-holes": ("teal", "x"),
               "ipsec-mb-sse": ("tab:cyan", "^"), "ipsec-mb-avx2": ("tab:brown", "^"),
               "ipsec-mb-avx512": ("tab:pink", "^"), "libgcrypt": ("darkgoldenrod", "D"),
               "boringssl": ("slategray", "P")}
FACE_STYLES = {"none": ":", "r1": "--", "r2": "-"}


def _style(impl: str) -> dict:
    """Colour by method, line style by FACE level; peers grey-ish with their own markers
    (the same for a peer's CTR, GCM, GCM-SIV, OCB and GHASH rows: `openssl`, `openssl-gcm`,
    `libgcrypt-gcm-siv`, `openssl-ocb`, `openssl-ghash`)."""
    peer = (impl.removesuffix("-gcm-siv").removesuffix("-gcm").removesuffix("-ghash")
            .removesuffix("-ocb"))
    if peer in PEER_STYLES:
        colour, marker = PEER_STYLES[peer]
        return {"color": colour, "marker": marker, "linestyle": "-.", "linewidth": 1.5}
    if "-otr" in impl:  # OTR kernels: solid for v3.1, dashed for v2
        return {"color": FAMILY_COLOURS.get(otr_method(impl), "gray"), "marker": "o",
                "markersize": 3, "linestyle": "--" if "-otr-v2" in impl else "-",
                "linewidth": 1.5}
    family, _, face = impl.partition("-face-" if "-face-" in impl else "-gcm-")
    return {"color": FAMILY_COLOURS.get(family, "gray"), "marker": "o", "markersize": 3,
            "linestyle": FACE_STYLES.get(face, "-"), "linewidth": 1.8 if face == "r2" else 1.2}


def plot(summary: dict[str, dict], path: Path, bits: int, title: str) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    modes = [m for m in (*MODES, AEAD_MODE, *GCM_SIV_MODES, *OTR_MODES, GHASH_MODE)
             if any(r["mode"] == m and r["key_bits"] == bits for r in summary.values())]
    if not modes:
        return
    fig, axes = plt.subplots(1, len(modes), figsize=(5.5 * len(modes) + 2.5, 5.5),
                             squeeze=False)
    for ax, mode in zip(axes[0], modes):
        for impl in impl_order(summary):
            pts = sorted((r["size"], r["median"]) for r in summary.values()
                         if r["impl"] == impl and r["mode"] == mode and r["key_bits"] == bits)
            if pts:
                ax.plot([p[0] for p in pts], [p[1] for p in pts], label=impl, **_style(impl))
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_xlabel("message size (bytes)")
        ax.set_ylabel("TSC ticks per byte (lower is better)")
        cipher = (f"AES-{bits}-GCM-SIV" if mode in GCM_SIV_MODES
                  else f"AES-{bits}-OTR (OCB peers)" if mode in OTR_MODES
                  else f"AES-{bits}-GCM" if mode in (AEAD_MODE, GHASH_MODE) else f"AES-{bits}")
        ax.set_title(f"{cipher}: {MODE_TITLES[mode].split(' (')[0]}", fontsize=10)
        ax.grid(True, which="both", alpha=0.3)
    handles, labels = [], []
    for ax in axes[0]:  # every panel's lines: the GCM panel has peers of its own
        for h, label in zip(*ax.get_legend_handles_labels()):
            if label not in labels:
                handles.append(h)
                labels.append(label)
    fig.legend(handles, labels, loc="center right", fontsize=7,
               title="colour: method, line: FACE\n(dotted none, dashed r1, solid r2)",
               title_fontsize=7)
    fig.suptitle(title, fontsize=10)
    fig.tight_layout(rect=(0, 0, 1 - 2.3 / (5.5 * len(modes) + 2.5), 1))
    fig.savefig(path, dpi=110, metadata={"Software": None})
    plt.close(fig)


def default_repetitions(quick: bool, processes: int) -> int:
    """Repetitions per benchmark in each process: 9 in all (--quick: 3) shared among the
    processes, at least one each, so more processes cost little more time."""
    return max(1, math.ceil((3 if quick else 9) / processes))


def child_env() -> dict:
    env = dict(os.environ)
    env["OPENSSL_ia32cap"] = OPENSSL_NO_AESNI
    return env
