"""`aesgen doubling`: seed 001's comparison of GF(2^128) doubling methods, for the OTR
kernels of a preset: instructions a doubling, what the masks cost a block of the kernel's
steady loop (static count, llvm-mca on several models) and the kernel's measured seal speed
on this CPU with each method (kernels that differ in the doubling alone).

The methods are the doubling engines of gf128/x86_64/doubling.py: the constant-time ones
in every method's kernels, seed 001's table methods (Aoki-Iwata-Yasuda's MOVMSKPD and a
table, seed 001's batch method), which read memory at an index made of the mask's top bits
(a secret), in the table method's kernel alone (T-table AES; NOT constant time).
"""
from __future__ import annotations

import dataclasses
import statistics
import subprocess
import tempfile
from pathlib import Path

from ..emit.compile import compile_kernel
from ..emit.generate import GenerateRequest, plan_kernels, render_set, write_set
from ..gf128.x86_64.doubling import INSTRUCTIONS, instructions_per_doubling
from ..paths import ROOT
from .compare import loop_line, run_llvm_mca, steady_loop

# seed 001 ("A quest for fast doubling", "A new batch method for 8 doublings"): the
# instructions a doubling, as the talk counts them
QUOTED = (("Krovetz (seed 001)", "5 fast instructions", "built: krovetz"),
          ("Aoki-Iwata-Yasuda, MOVMSKPD + table (seed 001)", "3 instructions + 1 table lookup",
           "built: aoki, table method only (secret index: NOT constant time)"),
          ("seed 001 batch method (8 doublings)", "3 instructions + 2 table lookups a "
           "doubling, after two tables of 256 x 16 bytes", "built: batch-table (4 doublings "
           "a pair of lookups), table method only (NOT constant time)"))
MODE = "otr"
SIZES = (4096, 16384)
MAX_SIZE = 1 << 16          # harness/aead_measure.c's buffers


def variants(preset) -> list[tuple[str, object]]:
    """(method, spec) for each OTR kernel of the preset and each doubling engine the mode
    offers at its width."""
    from ..modes import features_for, hash_engines_of, mode

    desc = mode(MODE)
    req = GenerateRequest(preset, tuple(m.variant for m in preset.methods), ("none",),
                          (128,), "aesgen_", "aesgen doubling", (MODE,))
    out = []
    for spec in plan_kernels(req):
        have = set(preset.features_of(preset.method(spec.variant)))
        for engine in hash_engines_of(desc, spec.method):
            needs = features_for(desc, spec.width, engine)
            if needs is not None and set(needs) <= have:
                out.append((engine, dataclasses.replace(spec, hash_engine=engine)))
    return out


def static_rows(preset, mca_cpus: tuple[str, ...]) -> list[dict]:
    rows = []
    for engine, spec in variants(preset):
        ck = compile_kernel(spec)
        per_block = ck.stats()["steady_state"]["128"]["per_block"]
        loop = steady_loop(ck, 128)
        blocks = ck.interleave * spec.lanes
        text = [loop_line(ins, "x86_64") for ins in loop]
        step = INSTRUCTIONS[(engine, spec.encoding)]
        rows.append({
            "kernel": spec.name, "engine": engine, "width": spec.width,
            "encoding": spec.encoding,
            "instructions_a_step": step,
            # krovetz and aoki double once a step; clmul moves a register of lanes masks by
            # 2^lanes; batch-table shares its lookups among a batch
            "instructions_a_doubling": instructions_per_doubling(engine, spec.encoding,
                                                                 spec.lanes),
            "masks_a_block": per_block.get("masks", 0.0),
            "total_a_block": per_block["total"],
            "mca": {cpu: r.cycles_per_block for cpu, r in
                    ((c, run_llvm_mca(text, c, "x86_64", blocks)) for c in mca_cpus)},
        })
    return rows


def measure(preset, processes: int, sizes: tuple[int, ...] = SIZES,
            progress=None) -> dict[tuple[str, str], dict[int, list[float]]]:
    """(kernel, engine) -> size -> ticks/B of each process (aead_measure over a set of
    that engine's kernels)."""
    results: dict[tuple[str, str], dict[int, list[float]]] = {}
    engines = sorted({engine for engine, _ in variants(preset)})
    with tempfile.TemporaryDirectory(prefix="aesgen-doubling-") as tmp:
        for engine in engines:
            req = GenerateRequest(preset, tuple(m.variant for m in preset.methods), ("none",),
                                  (128,), "aesgen_", f"aesgen doubling ({engine})", (MODE,),
                                  hash_engine=engine)
            folder = Path(tmp) / engine
            write_set(render_set(req), folder)
            exe = folder / "aead_measure"
            cmd = ["gcc", "-O2", "-I", str(folder), "-o", str(exe),
                   str(ROOT / "harness" / "aead_measure.c"), str(folder / "aesgen_registry.c"),
                   *sorted(str(p) for p in folder.glob("*.S"))]
            subprocess.run(cmd, check=True, capture_output=True, text=True)
            for i in range(processes):
                if progress:
                    progress(f"measuring the {engine} kernels: process {i + 1} of "
                             f"{processes}")
                proc = subprocess.run([str(exe), ",".join(map(str, sizes))], check=True,
                                      capture_output=True, text=True)
                for line in proc.stdout.splitlines():
                    parts = line.split()
                    if len(parts) != 3:
                        continue                        # a skipped kernel
                    name, size, tpb = parts[0], int(parts[1]), float(parts[2])
                    results.setdefault((name, engine), {}).setdefault(size, []).append(tpb)
    return results


def render(rows: list[dict], measured: dict, mca_cpus: tuple[str, ...],
           sizes: tuple[int, ...] = SIZES) -> str:
    head = (f"{'kernel':<16}{'doubling':<10}{'instr/step':>11}{'instr/dbl':>10}"
            f"{'masks/blk':>10}{'total/blk':>10}"
            + "".join(f"{'mca ' + c:>22}" for c in mca_cpus)
            + "".join(f"{f'seal {s} B':>22}" for s in sizes))
    lines = ["GF(2^128) doubling in the OTR kernels (AES-128): instructions a step and a "
             "doubling; per 16-byte block of the steady loop: the masks' instructions, all "
             "instructions, llvm-mca cycles; measured seal ticks/byte (median "
             "[min..max] over processes)", head, "-" * len(head)]
    for r in rows:
        line = (f"{r['kernel']:<16}{r['engine']:<10}{r['instructions_a_step']:>11}"
                f"{r['instructions_a_doubling']:>10.2f}{r['masks_a_block']:>10.2f}"
                f"{r['total_a_block']:>10.2f}")
        for c in mca_cpus:
            v = r["mca"][c]
            line += f"{'n/a' if v is None else f'{v:.2f} c/blk':>22}"
        for s in sizes:
            got = measured.get((r["kernel"], r["engine"]), {}).get(s)
            cell = ("not run" if not got else
                    f"{statistics.median(got):.3f} [{min(got):.3f}..{max(got):.3f}]")
            line += f"{cell:>22}"
        lines.append(line)
    lines += ["", "seed 001's methods (instructions a doubling as the talk counts them):"]
    lines += [f"  {name}: {count} ({status})" for name, count, status in QUOTED]
    return "\n".join(lines) + "\n"
