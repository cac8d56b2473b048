"""Real runs as the cost of `aesgen tune --cost measured` (the default for --cpu native): each
candidate's kernel generated under its own symbol prefix, all linked into one C program that
times them interleaved, run in several processes.

What is timed (AES-128): a CTR kernel on 4 KiB messages, a new IV per message that keeps
bytes 0, 5, 10 (the FACE tables stay valid, as with sequence-number IVs); a GCM kernel
sealing records with 13 bytes of AAD under TLS-style nonces, its sample the mean of its
ticks per byte on 1420-byte records (a TLS record, a QUIC packet: the end of a message
weighs) and on 16 KiB ones (the steady loop); `aesgen correlate`, which compares with a
model of the steady loop, times 16 KiB alone. Timings on these VMs
differ from process to process, so a candidate's cost is the median over processes of its
ticks per byte divided by the current value's in the same process, shown in ticks per byte
(times the current value's median).
"""
from __future__ import annotations

import json
import shutil
import statistics
import subprocess
import tempfile
from pathlib import Path
from typing import Callable, Sequence

from ..emit.generate import render_set
from ..passes.regalloc import AllocationError
from ..targets import Preset
from .space import FACE, Choice, Value, request

SIZE = {"ctr": 4096, "gcm": 16384}
MESSAGES = {"ctr": 64, "gcm": 16}     # a sample: this many messages back to back
# GCM record sizes a tune sample averages (ticks per byte), and records of each a sample
GCM_RECORDS = {1420: 64, 16384: 16}
REPEATS = 15                          # samples per candidate in each process


class MeasureError(RuntimeError):
    """No C compiler, a build that fails, or a program that does not run."""


def _candidate_c(i: int, mode: str, kernel: str, key_bits: int = 128,
                 records: dict[int, int] | None = None) -> str:
    """run_c<i>(): one sample of candidate i, ticks per byte (its kernel found by name,
    keyed with the first key_bits bits of the key); GCM: the mean over ``records`` (size ->
    records a sample, default 16 KiB) of the ticks per byte of each size."""
    p = f"aesgen_t{i}_"
    if mode == "ctr":
        find = (f"for (size_t j = 0; j < {p}kernel_count; j++)\n"
                f"        if (!strcmp({p}kernels[j].name, \"{kernel}\")) k = &{p}kernels[j];")
        kind, setup = f"{p}kernel", "k->init(ctx, key, " + str(key_bits // 8) + ", iv);"
        call = "next_iv(iv, m); k->set_iv(ctx, iv); k->xor_stream(ctx, out, in, {size});"
        records = {SIZE["ctr"]: MESSAGES["ctr"]}
    else:
        find = (f"for (size_t j = 0; j < {p}aead_count; j++)\n"
                f"        if (!strcmp({p}aeads[j].name, \"{kernel}\")) k = &{p}aeads[j];")
        kind, setup = f"{p}aead", "k->init(ctx, key, " + str(key_bits // 8) + ");"
        call = "next_iv(iv, m); k->seal(ctx, iv, 12, aad, 13, in, {size}, out, tag, 16);"
        records = records or {SIZE["gcm"]: MESSAGES["gcm"]}
    timed = "".join(f"""    t0 = ticks();
    for (int m = 0; m < {count}; m++) {{
        {call.format(size=size)}
    }}
    sum += (double)(ticks() - t0) / ({count}.0 * {size});
""" for size, count in records.items())
    return f"""
static const {kind} *k{i};
static void *ctx{i};
static int ready_c{i}(void) {{
    const {kind} *k = 0;
    {find}
    if (!k) return 0;
    if ((k->features & {p}cpu_features()) != k->features) return -1;
    void *ctx = aligned_alloc(64, (k->ctx_size + 63) / 64 * 64);
    {setup}
    k{i} = k; ctx{i} = ctx;
    return 1;
}}
static double run_c{i}(void) {{
    const {kind} *k = k{i}; void *ctx = ctx{i};
    double sum = 0;
    uint64_t t0;
{timed}    return sum / {len(records)};
}}
"""


def driver_c(mode: str, kernels: Sequence[str], key_bits: Sequence[int] | None = None,
             records: dict[int, int] | None = None) -> str:
    """The C program: candidate i is kernels[i] of the set in t<i>/, keyed with a
    key_bits[i]-bit key (default AES-128), GCM on ``records`` (size -> records a sample;
    default 16 KiB); prints two JSON lines, the median ticks per byte of each over
    REPEATS samples, interleaved, and the fastest sample of each."""
    n = len(kernels)
    includes = "".join(f'#include "t{i}/aesgen.h"\n' for i in range(n))
    bits = list(key_bits) if key_bits is not None else [128] * n
    parts = "".join(_candidate_c(i, mode, k, b, records)
                    for i, (k, b) in enumerate(zip(kernels, bits)))
    table = ", ".join(f"{{ready_c{i}, run_c{i}}}" for i in range(n))
    return f"""/* aesgen tune --cost measured: {n} candidates, interleaved. Generated; not for editing. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <x86intrin.h>
{includes}
#define SIZE {SIZE[mode]}
#define REPEATS {REPEATS}
static uint8_t in[SIZE] __attribute__((aligned(64))), out[SIZE] __attribute__((aligned(64)));
static uint8_t key[32] = {{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16,
                          17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32}};
static uint8_t iv[16], aad[13], tag[16];
static uint64_t ticks(void) {{ _mm_lfence(); uint64_t t = __rdtsc(); _mm_lfence(); return t; }}
/* bytes 1..4 and 11 change (bytes 0, 5, 10 stay: the FACE tag); 12..15 as set_iv wants */
static void next_iv(uint8_t *v, int m) {{
    static uint32_t n; n++;
    v[1] = n >> 24; v[2] = n >> 16; v[3] = n >> 8; v[4] = n; v[11] = (uint8_t)(n + m);
    v[12] = v[13] = v[14] = 0; v[15] = 1;
}}
static int cmp(const void *a, const void *b) {{
    double x = *(const double *)a, y = *(const double *)b; return (x > y) - (x < y);
}}
{parts}
struct cand {{ int (*ready)(void); double (*run)(void); }};
int main(void) {{
    struct cand c[{n}] = {{ {table} }};
    double v[{n}][REPEATS];
    int ok[{n}];
    for (int i = 0; i < {n}; i++) {{ ok[i] = c[i].ready(); if (ok[i] == 1) c[i].run(); }}
    for (int r = 0; r < REPEATS; r++)
        for (int i = 0; i < {n}; i++) if (ok[i] == 1) v[i][r] = c[i].run();
    for (int line = 0; line < 2; line++) {{     /* the medians, then the fastest samples */
        printf("[");
        for (int i = 0; i < {n}; i++) {{
            if (ok[i] == 1) {{ qsort(v[i], REPEATS, sizeof(double), cmp);
                              printf("%s%.5f", i ? ", " : "", v[i][line ? 0 : REPEATS / 2]); }}
            else printf("%s%s", i ? ", " : "", ok[i] ? "\\"cpu\\"" : "\\"missing\\"");
        }}
        printf("]\\n");
    }}
    return 0;
}}
"""


def build(choice: Choice, preset: Preset, values: Sequence[Value], workdir: Path
          ) -> tuple[Path | None, dict[Value, str], dict[Value, str]]:
    """The program timing ``values`` of ``choice`` (None when none builds); each value's
    kernel name, and why a value has none (a value no kernel can take)."""
    names, skipped, sets = {}, {}, []
    for value in values:
        try:
            applied = choice.applied(preset, value)
            spec = choice.kernel(applied)
            files = render_set(request(applied, (choice.variant,), choice.mode, FACE,
                                       f"aesgen_t{len(sets)}_", "aesgen tune --cost measured"))
        except (ValueError, AllocationError) as e:
            skipped[value] = f"skipped: {e}"
            continue
        names[value] = spec.name
        sets.append((files, spec.name, 128))
    if not names:
        return None, names, skipped
    return link(sets, choice.mode, workdir, f"the candidates of {choice.name}",
                GCM_RECORDS), names, skipped


def link(sets: Sequence[tuple[dict[str, str], str, int]], mode: str, workdir: Path,
         what: str, records: dict[int, int] | None = None) -> Path:
    """The timing program of ``sets`` in workdir; set i: its files, rendered with the
    symbol prefix aesgen_t<i>_, the name of its kernel to time and the key size; GCM on
    ``records`` (driver_c)."""
    objects = []
    for i, (files, _, _) in enumerate(sets):
        folder = workdir / f"t{i}"
        folder.mkdir()
        for name, text in files.items():
            (folder / name).write_text(text)
            if name.endswith((".S", ".c")):
                objects.append(str(folder / name))
    (workdir / "driver.c").write_text(driver_c(mode, [k for _, k, _ in sets],
                                                    [b for _, _, b in sets], records))
    cc = shutil.which("gcc") or shutil.which("cc")
    if cc is None:
        raise MeasureError("measuring kernels needs a C compiler (gcc or cc)")
    exe = workdir / "tune_bench"
    proc = subprocess.run([cc, "-O2", "-o", str(exe), str(workdir / "driver.c"), *objects,
                           f"-I{workdir}"], capture_output=True, text=True)
    if proc.returncode != 0:
        raise MeasureError(f"building {what} failed:\n" + proc.stderr[-2000:])
    return exe


def run(exe: Path, what: str, fastest: bool = False) -> list:
    """One process of a timing program: ticks per byte of each candidate (the median of its
    samples; with ``fastest``, its fastest sample), or "cpu" (a feature this CPU lacks) or
    "missing" (no such kernel in its set)."""
    proc = subprocess.run([str(exe)], capture_output=True, text=True)
    if proc.returncode != 0:
        raise MeasureError(f"{what} did not run (exit {proc.returncode}): "
                           f"{proc.stderr[-500:]}")
    medians, fastest_samples = proc.stdout.splitlines()[:2]
    return json.loads(fastest_samples if fastest else medians)


def costs(choice: Choice, preset: Preset, values: Sequence[Value], processes: int,
          progress: Callable[[str], None] = lambda _: None
          ) -> dict[Value, tuple[str, float | None, str]]:
    """value -> (kernel, cost in ticks per byte or None, note) for ``values`` of ``choice``,
    the others at their values in ``preset``."""
    current = choice.current(preset)
    with tempfile.TemporaryDirectory(prefix="aesgen-tune-") as tmp:
        exe, names, skipped = build(choice, preset, values, Path(tmp))
        out: dict[Value, tuple[str, float | None, str]] = {
            v: ("", None, note) for v, note in skipped.items()}
        if exe is None:
            return out
        runs = []
        for p in range(processes):
            progress(f"{choice.name}: process {p + 1} of {processes}")
            runs.append(dict(zip(names, run(exe, f"the candidates of {choice.name}"))))
    first = runs[0]
    base = current if isinstance(first.get(current), float) else None
    for value, kernel in names.items():
        mark = first[value]
        if mark == "cpu":
            out[value] = (kernel, None, "skipped: this CPU lacks a feature the kernel needs")
        elif mark == "missing":
            out[value] = (kernel, None, f"skipped: {kernel} is not in its registry")
        elif base is None:
            out[value] = (kernel, statistics.median(r[value] for r in runs),
                          "no current value to compare with in each process")
        else:
            ratio = statistics.median(r[value] / r[base] for r in runs)
            out[value] = (kernel, ratio * statistics.median(r[base] for r in runs), "")
    return out
