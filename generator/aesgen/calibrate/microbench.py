"""Microbenchmarks of one x86-64 core: writes a C file of GNU inline-asm loops, compiles it,
runs it in several processes and turns its TSC ticks into core cycles.

The loops: per instruction class a dependent chain (latency) and independent streams
(throughput), built from uarch_mca.CLASS_ASM; and special ones for a load's latency, store
forwarding, stores a cycle, and AESENC interleaved with PCLMULQDQ and with PSHUFB (do they
share pipes?). The VMs this runs on have no core cycle counter, only the TSC, which ticks at
a fixed rate unrelated to the core clock; so a chain of 64-bit ADDs (one cycle each on every
x86-64 core) is timed right before every measurement, and a loop's cycles are its ticks over
the ADD chain's ticks per ADD. An IMUL chain (three cycles on every x86-64 core) is
converted the same way, as a check.
"""
from __future__ import annotations

import json
import os
import re
import shutil
import statistics
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from ..uarch import INSTRUCTION_CLASSES
from ..uarch_mca import CLASS_ASM

ARCH = "x86_64"
# /proc/cpuinfo flags an instruction class needs (besides x86-64's SSE2)
NEEDS: dict[str, tuple[str, ...]] = {
    "vector_logic": (),
    "shuffle": ("ssse3",),
    "load": (),
    "aes": ("aes",),
    "aes_ymm": ("vaes", "avx"),
    "aes_zmm": ("vaes", "avx512f"),
    "clmul": ("pclmulqdq",),
    "clmul_ymm": ("vpclmulqdq", "avx"),
    "clmul_zmm": ("vpclmulqdq", "avx512f"),
    "ternary_logic": ("avx512f",),
    "gf2p8affine": ("gfni",),
    "gp_add": (),
}
CHAIN = 32             # instructions of a dependent chain in one loop iteration
STREAMS = 12           # independent streams (vector registers 0..11; 14 and 15 hold sources)
STREAM_BODY = 48       # instructions of a streams loop iteration (streams x rounds)
# 64-bit registers for GP streams: every one but rcx (loop count), rdi (buffer), rsi
# (the constant source), rsp and rbp
GP_STREAMS = ("%rax", "%rdx", "%r8", "%r9", "%r10", "%r11", "%r12", "%r13", "%r14", "%r15",
              "%rbx")
# the mixes: 8 AESENC streams on xmm0-7 beside 2, 4 or 6 streams of another class on
# xmm8-13 (PCLMULQDQ; PSHUFB), interleaved and apart: do the two share pipes?
MIX_AES = 8
MIX_CLMUL = (2, 4, 6)
MIX_SHUFFLE = (4, 6)
MIX_ROUNDS = 4


@dataclass(frozen=True)
class Mix:
    """AESENC streams beside ``counts`` streams of class ``other`` (the report names its
    instruction); benches "mix.<other><m>" (alone) and "mix.<other>_both<m>" (interleaved),
    the pipe fact "aes_<other>_shared"."""
    other: str
    counts: tuple[int, ...]
    instruction: str

    @property
    def fact(self) -> str:
        return f"aes_{self.other}"


MIXES = (Mix("clmul", MIX_CLMUL, "PCLMULQDQ"), Mix("shuffle", MIX_SHUFFLE, "PSHUFB"))
# instructions a measurement aims at (about as many cycles); repetitions per process
TARGET_OPS = {"full": 150_000, "quick": 50_000}
REPETITIONS = {"full": 60, "quick": 9}
CHECK_IMUL = "imulq %rsi, %rax"          # 3 cycles on every x86-64 core


class CalibrateError(RuntimeError):
    """The host cannot be measured (no compiler, the program failed); the message says why."""


# --- the host ------------------------------------------------------------------------------
@dataclass(frozen=True)
class HostCpu:
    vendor: str
    family: int
    model: int
    name: str
    flags: frozenset[str]

    def describe(self) -> str:
        return f"{self.vendor} family {self.family} model {self.model} ({self.name})"


def read_host_cpu(text: str | None = None) -> HostCpu:
    """The first processor of /proc/cpuinfo (or of ``text``)."""
    if text is None:
        try:
            text = Path("/proc/cpuinfo").read_text()
        except OSError as e:
            raise CalibrateError(f"cannot read /proc/cpuinfo: {e.strerror}") from None
    fields: dict[str, str] = {}
    for line in text.splitlines():
        if not line.strip():
            if fields:
                break
            continue
        if ":" in line:
            key, value = line.split(":", 1)
            fields.setdefault(key.strip(), value.strip())

    def number(key: str) -> int:
        try:
            return int(fields.get(key, "-1"))
        except ValueError:
            return -1
    return HostCpu(fields.get("vendor_id", "unknown vendor"), number("cpu family"),
                   number("model"), fields.get("model name", "unknown CPU"),
                   frozenset(fields.get("flags", "").split()))


def find_compiler() -> str | None:
    """$CC, else gcc, else cc: the first that is on PATH."""
    for cc in (os.environ.get("CC"), "gcc", "cc"):
        if cc and shutil.which(cc):
            return shutil.which(cc)
    return None


# --- loop bodies ---------------------------------------------------------------------------
def split_asm(line: str) -> tuple[str, list[str]]:
    """``"vaesenc %ymm1, %ymm2, %ymm0"`` -> ("vaesenc", ["%ymm1", "%ymm2", "%ymm0"]); commas
    inside a memory operand's parentheses do not split."""
    mnemonic, _, rest = line.strip().partition(" ")
    ops, depth, cur = [], 0, ""
    for ch in rest:
        if ch == "," and depth == 0:
            ops.append(cur.strip())
            cur = ""
            continue
        depth += (ch == "(") - (ch == ")")
        cur += ch
    if cur.strip():
        ops.append(cur.strip())
    return mnemonic, ops


def join_asm(mnemonic: str, ops: list[str]) -> str:
    return f"{mnemonic} {', '.join(ops)}" if ops else mnemonic


def chain_form(line: str) -> str:
    """The instruction rewritten so its destination is also its first source (AT&T: the last
    operand is written; in a three-register VEX/EVEX form the one before it is source 1),
    so that a run of it is a dependent chain. Two-operand forms already read their
    destination."""
    mnemonic, ops = split_asm(line)
    regs = [i for i, op in enumerate(ops[:-1]) if op.startswith("%")]
    if len(regs) >= 2:
        ops[regs[-1]] = ops[-1]
    return join_asm(mnemonic, ops)


VEC = re.compile(r"^%([xyz]mm)(\d+)$")


def instance(line: str, stream: int) -> str:
    """The chain form of ``line`` writing stream ``stream``'s register (xmm/ymm/zmm<stream>,
    or the stream-th of GP_STREAMS); its other vector registers become the constant sources
    xmm15 and xmm14 (register 1 -> 15, 2 -> 14) so no stream reads another."""
    mnemonic, ops = split_asm(chain_form(line))
    dest = ops[-1]
    out = []
    for op in ops:
        vec = VEC.match(op)
        if op == dest:
            out.append(f"%{vec.group(1)}{stream}" if vec else GP_STREAMS[stream])
        elif vec:
            out.append(f"%{vec.group(1)}{16 - int(vec.group(2))}")
        else:
            out.append(op)
    return join_asm(mnemonic, out)


def loop_body(line: str, streams: int, length: int) -> list[str]:
    """One loop iteration of ``length`` instances of ``line`` spread round-robin over
    ``streams`` independent dependency chains (streams=1: one dependent chain)."""
    return [instance(line, i % streams) for i in range(length)]


@dataclass(frozen=True)
class Bench:
    """One timed loop: ``body`` (AT&T lines) runs ``iterations`` times; ``ops`` is what one
    iteration counts as (instructions, or 1 for a whole mix)."""
    name: str
    body: tuple[str, ...]
    ops: int
    setup: tuple[str, ...] = ()

    @property
    def wide(self) -> bool:
        """Uses ymm/zmm: ends with VZEROUPPER so the SSE loops after it pay no transition."""
        return any(re.search(r"%[yz]mm", ln) for ln in self.body)


@dataclass
class Plan:
    benches: list[Bench]
    skipped: dict[str, str] = field(default_factory=dict)   # class -> "skipped: needs <flag>"
    classes: list[str] = field(default_factory=list)         # classes measured


def class_benches(cls: str) -> list[Bench]:
    """``<cls>.latency`` (a chain) and ``<cls>.streams`` (independent streams) from the
    class's instruction in CLASS_ASM; the load's chain is the special one in plan()."""
    line = CLASS_ASM[ARCH][cls]
    streams = len(GP_STREAMS) if cls == "gp_add" else STREAMS
    length = STREAM_BODY // streams * streams            # whole rounds of every stream
    out = [Bench(f"{cls}.streams", tuple(loop_body(line, streams, length)), length)]
    if cls != "load":
        out.insert(0, Bench(f"{cls}.latency", tuple(loop_body(line, 1, CHAIN)), CHAIN))
    return out


def plan(flags: set[str] | frozenset[str]) -> Plan:
    """The benchmarks for a CPU with these /proc/cpuinfo flags; a class it lacks a flag for
    is listed in ``skipped`` with the flag, never dropped silently."""
    p = Plan([Bench("add_chain", tuple(loop_body(CLASS_ASM[ARCH]["gp_add"], 1, CHAIN)),
                    CHAIN),
              Bench("check.imul", tuple(loop_body(CHECK_IMUL, 1, CHAIN)), CHAIN)])
    for cls in INSTRUCTION_CLASSES[ARCH]:
        missing = [f for f in NEEDS.get(cls, ()) if f not in flags]
        if cls not in CLASS_ASM[ARCH]:
            p.skipped[cls] = "skipped: no instruction spelled for it in uarch_mca.CLASS_ASM"
            continue
        if missing:
            p.skipped[cls] = f"skipped: needs {' and '.join(missing)}"
            continue
        p.classes.append(cls)
        p.benches += class_benches(cls)
    load = CLASS_ASM[ARCH]["load"].replace("(%rdi)", "(%rax)")
    # a load whose address is the value it loads (buf[0] holds buf's address), through a
    # MOVQ back to a GP register (derive() takes one cycle off for it); the MOVQ round trip
    # and a GP pointer chase are timed for the report
    p.benches += [
        Bench("load.chain", tuple(ln for _ in range(CHAIN // 2)
                                  for ln in (instance(load, 0), "movq %xmm0, %rax")),
              CHAIN // 2, ("movq %rdi, %rax",)),
        Bench("movq.roundtrip", tuple(ln for _ in range(CHAIN // 2)
                                      for ln in ("movq %rax, %xmm0", "movq %xmm0, %rax")),
              CHAIN // 2),
        Bench("gp_load.chain", tuple(["movq (%rax), %rax"] * CHAIN), CHAIN,
              ("movq %rdi, %rax",)),
        # a store, then a load of it that feeds the next store (stores stay clear of
        # buf[0], the pointer the chains above chase)
        Bench("store_forward", tuple(ln for _ in range(CHAIN // 2)
                                     for ln in ("movdqu %xmm0, 2048(%rdi)",
                                                "movdqu 2048(%rdi), %xmm0")), CHAIN // 2),
        Bench("store.streams", tuple(f"movdqu %xmm{i % STREAMS}, {1024 + 16 * (i % STREAMS)}"
                                     "(%rdi)" for i in range(STREAM_BODY)), STREAM_BODY),
    ]
    a = [instance(CLASS_ASM[ARCH]["aes"], i) for i in range(MIX_AES)]
    for mix in MIXES:
        if "aes" not in p.classes or mix.other not in p.classes:
            needs = ["aes", *NEEDS[mix.other]]
            p.skipped[f"{mix.fact}_shared"] = f"skipped: needs {' and '.join(needs)}"
            continue
        if "mix.aes" not in {b.name for b in p.benches}:
            p.benches.append(Bench("mix.aes", tuple(a * MIX_ROUNDS), 1))
        for m in mix.counts:
            c = [instance(CLASS_ASM[ARCH][mix.other], MIX_AES + i) for i in range(m)]
            both = [x for pair in zip(a, c + [""] * (MIX_AES - m)) for x in pair if x]
            p.benches += [Bench(f"mix.{mix.other}{m}", tuple(c * MIX_ROUNDS), 1),
                          Bench(f"mix.{mix.other}_both{m}", tuple(both * MIX_ROUNDS), 1)]
    return p


# --- the C program -------------------------------------------------------------------------
C_HEAD = r"""/* generated by aesgen calibrate (calibrate/microbench.py): timed asm loops */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

static unsigned char buf[4096] __attribute__((aligned(64)));

static inline uint64_t ticks(void)
{
    uint32_t lo, hi;
    __asm__ volatile("lfence\n\trdtsc\n\tlfence" : "=a"(lo), "=d"(hi) : : "memory");
    return ((uint64_t)hi << 32) | lo;
}

typedef uint64_t (*bench_fn)(uint64_t);
struct bench { const char *name; bench_fn fn; uint64_t iterations, ops; };
"""

C_MAIN = r"""
#define NBENCH (sizeof benches / sizeof benches[0])
static uint64_t t[NBENCH][64], a[NBENCH][64];

/* Repetition r of every benchmark, then r + 1 of every one: a slow stretch of a shared VM
   then costs one repetition of many benchmarks instead of all of one. Each benchmark's
   ADD chain is timed right before it, at the same clock. */
int main(int argc, char **argv)
{
    int reps = argc > 1 ? atoi(argv[1]) : 5;
    if (reps < 1 || reps > 64)
        return 2;
    *(void **)buf = buf;                        /* buf[0] points at buf: a pointer chase */
    const struct bench *add = &benches[0];
    for (int i = 0; i < 200; i++)               /* some 20 ms of ADDs: the clock ramps up */
        add->fn(add->iterations);
    for (size_t i = 0; i < NBENCH; i++)         /* warm up every loop once */
        benches[i].fn(benches[i].iterations);
    for (int r = 0; r < reps; r++)
        for (size_t i = 0; i < NBENCH; i++) {
            a[i][r] = add->fn(add->iterations);
            t[i][r] = benches[i].fn(benches[i].iterations);
        }
    for (size_t i = 0; i < NBENCH; i++) {
        const struct bench *b = &benches[i];
        printf("{\"bench\": \"%s\", \"ops\": %llu, \"adds\": %llu, \"ticks\": [",
               b->name, (unsigned long long)(b->iterations * b->ops),
               (unsigned long long)(add->iterations * add->ops));
        for (int r = 0; r < reps; r++)
            printf("%s%llu", r ? ", " : "", (unsigned long long)t[i][r]);
        printf("], \"add_ticks\": [");
        for (int r = 0; r < reps; r++)
            printf("%s%llu", r ? ", " : "", (unsigned long long)a[i][r]);
        printf("]}\n");
    }
    return 0;
}
"""

GP_REG = re.compile(r"%(r[a-z0-9]+)\b")
VEC_REG = re.compile(r"%[xyz]mm(\d+)\b")


def c_function(index: int, bench: Bench) -> str:
    """``static uint64_t bench_<index>(uint64_t n)``: ticks of n iterations of the body."""
    text = " ".join(bench.setup + bench.body)
    gp = sorted(set(GP_REG.findall(text)) - {"rcx", "rdi", "rsi"})
    vec = sorted({int(n) for n in VEC_REG.findall(text)})
    clobbers = [f'"{r}"' for r in gp] + [f'"xmm{n}"' for n in vec] + ['"cc"', '"memory"']

    def asm(line: str) -> str:
        return '        "' + line.replace("%", "%%") + '\\n\\t"'
    lines = ([asm(ln) for ln in bench.setup] + ['        ".p2align 6\\n"', '        "1:\\n\\t"']
             + [asm(ln) for ln in bench.body] + [asm("dec %rcx"), asm("jnz 1b")]
             + ([asm("vzeroupper")] if bench.wide else []))
    return (f"/* {bench.name} */\n"
            f"static __attribute__((noinline)) uint64_t bench_{index}(uint64_t n)\n"
            "{\n"
            "    void *p = buf;\n"
            "    uint64_t t0 = ticks();\n"
            "    __asm__ volatile(\n" + "\n".join(lines) + "\n"
            '        : "+c"(n), "+D"(p)\n'
            '        : "S"((uint64_t)1)\n'
            f"        : {', '.join(clobbers)});\n"
            "    return ticks() - t0;\n"
            "}\n")


def c_source(benches: list[Bench], target_ops: int) -> str:
    """The whole program: one function per benchmark (benches[0] must be the ADD chain, the
    reference every other one is timed beside), a table, and main."""
    if benches[0].name != "add_chain":
        raise ValueError("the first benchmark must be the ADD chain")
    # iterations: about target_ops instructions a measurement
    table = ",\n".join(f'    {{"{b.name}", bench_{i}, {max(1, target_ops // len(b.body))}, '
                       f'{b.ops}}}' for i, b in enumerate(benches))
    return (C_HEAD + "\n" + "\n".join(c_function(i, b) for i, b in enumerate(benches))
            + "\nstatic const struct bench benches[] = {\n" + table + "\n};\n" + C_MAIN)


def compile_program(source: str, folder: Path, cc: str | None = None) -> Path:
    """calibrate.c -> calibrate in ``folder``; CalibrateError with the compiler's words."""
    cc = cc or find_compiler()
    if cc is None:
        raise CalibrateError("no C compiler: aesgen calibrate needs gcc or cc on PATH "
                             "(or $CC)")
    src, exe = folder / "calibrate.c", folder / "calibrate"
    src.write_text(source)
    proc = subprocess.run([cc, "-O2", "-o", str(exe), str(src)], capture_output=True,
                          text=True)
    if proc.returncode != 0:
        said = [ln.strip() for ln in proc.stderr.splitlines() if "rror" in ln]
        raise CalibrateError(f"compiling the microbenchmarks with {cc} failed: "
                             f"{(said or proc.stderr.strip().splitlines() or ['?'])[0]}")
    return exe


@dataclass(frozen=True)
class Raw:
    """One benchmark of one process: its ticks per repetition, and the ADD chain's."""
    ops: int
    adds: int
    ticks: tuple[int, ...]
    add_ticks: tuple[int, ...]

    def ticks_per_add(self) -> float:
        return min(self.add_ticks) / self.adds

    def cycles_per_op(self) -> float:
        """Fastest repetition's ticks per op, over the fastest ADD chain's ticks per ADD
        (each minimum drops the repetitions an interrupt or a descheduled vCPU slowed)."""
        return min(self.ticks) / self.ops / self.ticks_per_add()


def parse_output(text: str) -> dict[str, Raw]:
    out = {}
    for line in text.splitlines():
        if line.startswith("{"):
            d = json.loads(line)
            out[d["bench"]] = Raw(d["ops"], d["adds"], tuple(d["ticks"]),
                                  tuple(d["add_ticks"]))
    return out


def run_process(exe: Path, repetitions: int) -> dict[str, Raw]:
    proc = subprocess.run([str(exe), str(repetitions)], capture_output=True, text=True,
                          timeout=300)
    if proc.returncode != 0:
        said = f": {proc.stderr.strip()}" if proc.stderr.strip() else ""
        raise CalibrateError(f"the microbenchmark program {exe} failed (exit status "
                             f"{proc.returncode}){said}")
    return parse_output(proc.stdout)


# --- from ticks to the facts ---------------------------------------------------------------
@dataclass(frozen=True)
class Stat:
    """One quantity over the processes: the per-process values, their median and spread."""
    values: tuple[float, ...]

    @property
    def median(self) -> float:
        return statistics.median(self.values)

    @property
    def spread(self) -> float:
        return max(self.values) - min(self.values)


@dataclass
class Calibration:
    """What the processes measured: every Stat in core cycles (per_cycle: instructions a
    cycle) except ticks_per_cycle, and mix ratios."""
    cpu: HostCpu
    processes: int
    repetitions: int
    ticks_per_cycle: Stat
    latency: dict[str, Stat]
    per_cycle: dict[str, Stat]
    facts: dict[str, Stat]
    checks: dict[str, Stat]
    skipped: dict[str, str]
    # streams of the other class in the mix each pipe decision reads: {"clmul": 2, ...}
    mixed: dict[str, int] = field(default_factory=dict)


def derive(raw: dict[str, Raw], classes: list[str]) -> dict[str, float]:
    """One process's figures, by key: "<cls>.latency", "<cls>.per_cycle", facts, checks."""
    c = {name: r.cycles_per_op() for name, r in raw.items()}
    out = {"ticks_per_cycle": raw["add_chain"].ticks_per_add(),
           "check.imul": c["check.imul"], "check.gp_load": c["gp_load.chain"],
           "movq_roundtrip": c["movq.roundtrip"],
           "store_forward_latency": c["store_forward"],
           "stores_per_cycle": 1 / c["store.streams"]}
    for cls in classes:
        if f"{cls}.latency" in c:
            out[f"{cls}.latency"] = c[f"{cls}.latency"]
        out[f"{cls}.per_cycle"] = 1 / c[f"{cls}.streams"]
    # the load's own latency, an upper bound: the chain's load + MOVQ xmm->GP, less one
    # cycle for the MOVQ (how the xmm <-> GP round trip splits between its two MOVQs is
    # not measurable; uops.info gives such latencies as bounds too)
    out["load.latency"] = c["load.chain"] - 1
    if "load" in classes:
        out["loads_per_cycle"] = out["load.per_cycle"]
    for mix in MIXES:
        if f"mix.{mix.other}{mix.counts[0]}" not in c:
            continue
        ta, key = c["mix.aes"], f"mix.{mix.other}_"
        for m in mix.counts:
            tc, both = c[f"mix.{mix.other}{m}"], c[f"{key}both{m}"]
            out[f"{key}{m}.balance"] = abs(ta - tc) / (ta + tc)
            out[f"{key}{m}.ratio"] = both / (ta + tc)          # 1: shared, max/sum: apart
            out[f"{key}{m}.overlap"] = (ta + tc - both) / min(ta, tc)    # 0: shared
    return out


def measure(flags: set[str] | frozenset[str] | None = None, processes: int = 3,
            quick: bool = False, progress: Callable[[str], None] = lambda s: None,
            cpu: HostCpu | None = None, keep: Path | None = None) -> Calibration:
    """Plan, compile, run ``processes`` times, and summarise: the whole measurement."""
    cpu = cpu or read_host_cpu()
    flags = cpu.flags if flags is None else frozenset(flags)
    cpu = HostCpu(cpu.vendor, cpu.family, cpu.model, cpu.name, frozenset(flags))
    p = plan(flags)
    speed = "quick" if quick else "full"
    reps = REPETITIONS[speed]
    with tempfile.TemporaryDirectory(prefix="aesgen-calibrate-") as tmp:
        folder = keep or Path(tmp)
        progress(f"compiling {len(p.benches)} microbenchmarks ({len(p.classes)} instruction "
                 f"classes) in {folder}")
        exe = compile_program(c_source(p.benches, TARGET_OPS[speed]), folder)
        runs = []
        for i in range(processes):
            progress(f"process {i + 1}/{processes}: {reps} repetitions of each")
            runs.append(derive(run_process(exe, reps), p.classes))
    keys = runs[0].keys()
    stats = {k: Stat(tuple(r[k] for r in runs)) for k in keys}
    facts = {k: stats[k] for k in ("store_forward_latency", "stores_per_cycle",
                                   "loads_per_cycle") if k in stats}
    mixed: dict[str, int] = {}
    for mix in MIXES:
        key = f"mix.{mix.other}_"
        if f"{key}{mix.counts[0]}.balance" not in stats:
            continue
        # the mix whose two halves take the most equal time alone: there a shared pipe
        # shows most clearly (the sum against the larger half)
        m = min(mix.counts, key=lambda n: stats[f"{key}{n}.balance"].median)
        mixed[mix.other] = m
        for what in ("ratio", "overlap", "balance"):
            facts[f"{mix.fact}_{what}"] = stats[f"{key}{m}.{what}"]
    return Calibration(
        cpu, processes, reps, stats["ticks_per_cycle"],
        {c: stats[f"{c}.latency"] for c in p.classes if f"{c}.latency" in stats},
        {c: stats[f"{c}.per_cycle"] for c in p.classes},
        facts, {"imul": stats["check.imul"], "gp_load": stats["check.gp_load"],
                "movq_roundtrip": stats["movq_roundtrip"]},
        dict(p.skipped), mixed)
