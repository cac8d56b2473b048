"""`aesgen compare`: static counts, instruction mix and llvm-mca predictions per kernel.

The kernels are compiled in memory from a preset (the same code `generate` writes). For each
kernel and key size the steady-state loop (region ``steady-<bits>``: one batch of
``interleave`` blocks) is classified by instruction kind and given to llvm-mca for each
requested CPU model; cycles per iteration / blocks per iteration = predicted cycles a block.
llvm-mca models the loop body as straight-line code with warm caches: it is a throughput
bound for the steady state, not a measurement.
"""
from __future__ import annotations

import re
import shutil
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from ..dsl.ir import Instruction
from ..dsl.operands import A64_GP, A64_VEC, Mem, Reg, VList
from ..emit.compile import CompiledKernel
from ..printer.gas_x86_64 import format_instruction

MIX = ("aes", "shuffle", "logic", "load", "store", "other")
SHUFFLE = re.compile(r"^(pshuf|punpck|perm|insert|extract|broadcast|shuf|palignr|pblend|"
                     r"pbroadcast|movddup|alignr)")
LOGIC = re.compile(r"^(pxor|pand|por|pandn|pternlog|xorp|andp|orp)")
MOVES = re.compile(r"^(mov|vmov|movzx|movd|movq)")
# A64 (the operands tell an A64 instruction apart: its registers are A64_GP/A64_VEC)
A64_SHUFFLE = re.compile(r"^(tbl|tbx|ext|rev32|rev64|trn[12]|zip[12]|uzp[12]|dup|ins|umov|"
                         r"fmov)$")
A64_LOGIC = re.compile(r"^(eor|and|orr|orn|bic|bsl|bit|bif|mvn|eor3|bcax)$")
AARCH64_MODELS = re.compile(r"^(cortex|neoverse|apple|exynos|kryo|thunderx|a64fx|carmel|"
                            r"ampere|tsv110|falkor|saphira)")


def _is_a64(ins: Instruction) -> bool:
    regs = [r for op in ins.operands
            for r in (op.regs if isinstance(op, VList) else [op] if isinstance(op, Reg)
                      else op.registers() if isinstance(op, Mem) else [])]
    return any(r.cls in (A64_GP, A64_VEC) for r in regs)


def classify_a64(ins: Instruction) -> str:
    """One of MIX for an A64 instruction: logic and shuffles count only on vectors."""
    name = ins.name
    if name.startswith("aes"):
        return "aes"
    if any(isinstance(op, Mem) and "w" in spec.access
           for spec, op in zip(ins.form.operands, ins.operands)):
        return "store"
    if any(isinstance(op, Mem) for op in ins.operands):
        return "load"
    vector = any(isinstance(op, (Reg, VList)) and (
        op.cls == A64_VEC if isinstance(op, Reg) else True) for op in ins.operands)
    if vector and A64_LOGIC.match(name):
        return "logic"
    if vector and A64_SHUFFLE.match(name):
        return "shuffle"
    return "other"


def classify(ins: Instruction) -> str:
    """One of MIX for an instruction (VEX/EVEX 'v' prefixes are ignored)."""
    if _is_a64(ins):
        return classify_a64(ins)
    name = ins.name
    bare = name[1:] if name.startswith("v") and not name.startswith("vzero") else name
    if bare.startswith("aes"):
        return "aes"
    writes_memory = any(isinstance(op, Mem) and "w" in spec.access
                        for spec, op in zip(ins.form.operands, ins.operands))
    if writes_memory and name != "lea":
        return "store"
    if SHUFFLE.match(bare):
        return "shuffle"
    if LOGIC.match(bare):
        return "logic"
    reads_memory = any(isinstance(op, Mem) for op in ins.operands)
    if MOVES.match(bare) and reads_memory:
        return "load"
    return "other"


@dataclass
class McaResult:
    cpu: str
    cycles_per_block: float | None = None
    note: str = ""
    dropped: list[str] = field(default_factory=list)


def steady_loop(ck: CompiledKernel, bits: int) -> list[Instruction]:
    """The steady-state batch as straight-line code: a counted loop inside it (a run of
    instructions with weight w > 1, e.g. the bit-sliced round loop) appears w times."""
    from ..modes import mode
    hot = ck.functions[mode(ck.spec.mode).hot_entry]
    loop = [ins for ins in hot.instructions() if ins.region == f"steady-{bits}"]
    out: list[Instruction] = []
    i = 0
    while i < len(loop):
        j = i
        while j < len(loop) and loop[j].weight == loop[i].weight:
            j += 1
        out += loop[i:j] * loop[i].weight
        i = j
    return out


def mca_tool() -> str | None:
    """llvm-19's llvm-mca where installed (it models znver4 and sapphirerapids), else the
    default one."""
    return (shutil.which("llvm-mca-19") or shutil.which("/usr/lib/llvm-19/bin/llvm-mca")
            or shutil.which("llvm-mca"))


def mca_arch(cpu: str) -> str:
    return "aarch64" if AARCH64_MODELS.match(cpu) else "x86_64"


def run_llvm_mca(lines: list[str], cpu: str, arch: str, blocks: int,
                 iterations: int = 200) -> McaResult:
    """Predicted cycles per block; instructions the model cannot read are dropped, named."""
    result = McaResult(cpu)
    tool = mca_tool()
    if tool is None:
        result.note = "llvm-mca not installed"
        return result
    if mca_arch(cpu) != arch:
        result.note = f"model is {mca_arch(cpu)}, kernel is {arch}"
        return result
    triple = "x86_64-unknown-linux-gnu" if arch == "x86_64" else "aarch64-unknown-linux-gnu"
    body = list(lines)
    for _ in range(64):
        with tempfile.NamedTemporaryFile("w", suffix=".s", delete=False) as f:
            f.write("\n".join(body) + "\n")
            path = f.name
        proc = subprocess.run([tool, f"-mtriple={triple}", f"-mcpu={cpu}",
                               f"-iterations={iterations}", "-summary-view",
                               "-instruction-info=false", "-resource-pressure=false", path],
                              capture_output=True, text=True)
        Path(path).unlink(missing_ok=True)
        if "is not a recognized processor" in proc.stderr:
            result.note = f"llvm-mca has no model named {cpu}"
            return result
        bad = re.findall(r":(\d+):\d+: error:", proc.stderr)
        if proc.returncode != 0 and bad:
            line_no = int(bad[0]) - 1
            if 0 <= line_no < len(body):
                result.dropped.append(body[line_no].strip())
                body = body[:line_no] + body[line_no + 1:]
                continue
        unsupported = re.findall(r"note: instruction:\s*(.+)", proc.stderr)
        if proc.returncode != 0 and unsupported:
            mnemonic = unsupported[0].split()[0]
            keep = [ln for ln in body if (ln.split() or [""])[0] != mnemonic]
            if len(keep) < len(body):
                result.dropped.append(f"{mnemonic} x{len(body) - len(keep)}")
                body = keep
                continue
        if proc.returncode != 0:
            result.note = (proc.stderr.strip().splitlines() or ["llvm-mca failed"])[0]
            return result
        cycles = re.search(r"Total Cycles:\s+(\d+)", proc.stdout)
        iters = re.search(r"Iterations:\s+(\d+)", proc.stdout)
        if not (cycles and iters):
            result.note = "could not read llvm-mca's summary"
            return result
        result.cycles_per_block = int(cycles.group(1)) / int(iters.group(1)) / blocks
        if result.dropped:
            result.note = "model cannot read some instructions; predicted without them"
        return result
    result.note = "too many instructions the model cannot read"
    return result


def loop_line(ins: Instruction, arch: str) -> str:
    """One instruction as llvm-mca reads it (the assembler syntax of ``arch``)."""
    if arch == "aarch64":
        from ..printer.gas_aarch64 import format_instruction as format_a64
        return format_a64(ins)
    return format_instruction(ins)


def compare_kernels(kernels: list[CompiledKernel], key_bits: tuple[int, ...],
                    mca_cpus: tuple[str, ...], arch: str = "x86_64") -> list[dict]:
    rows = []
    for ck in kernels:
        stats = ck.stats()["steady_state"]
        for bits in key_bits:
            if bits not in ck.spec.key_bits:
                continue
            loop = steady_loop(ck, bits)
            n = ck.interleave * ck.spec.lanes      # blocks an iteration (the skeleton's own batch)
            mix = {m: 0 for m in MIX}
            for ins in loop:
                mix[classify(ins)] += 1
            text = [loop_line(ins, arch) for ins in loop]
            mca = [run_llvm_mca(text, cpu, arch, n) for cpu in mca_cpus]
            rows.append({
                "kernel": ck.spec.name, "mode": ck.spec.mode, "key_bits": bits,
                "blocks_per_iteration": n,
                "per_block": stats[str(bits)]["per_block"],
                "rounds_0_2_one_block": stats[str(bits)]["rounds_0_2_one_block"],
                "mix_per_block": {m: round(c / n, 3) for m, c in mix.items()},
                "mca": {r.cpu: {"cycles_per_block": None if r.cycles_per_block is None
                                else round(r.cycles_per_block, 3),
                                "cycles_per_byte": None if r.cycles_per_block is None
                                else round(r.cycles_per_block / 16, 4),
                                "note": r.note, "dropped": r.dropped} for r in mca},
            })
    return rows


def render_compare(rows: list[dict], mca_cpus: tuple[str, ...]) -> str:
    head = (f"{'kernel':<26}{'key':>5}{'instr/blk':>10}{'r0-2':>6}{'r3-Nr':>7}{'ctr':>6}"
            + "".join(f"{m:>8}" for m in MIX)
            + "".join(f"{('mca ' + c)[:16]:>17}" for c in mca_cpus))
    lines = ["static instructions per 16-byte block (steady-state loop) and their mix; "
             "llvm-mca predicted cycles per block (cycles/byte)", head, "-" * len(head)]
    notes = []
    for r in rows:
        pb = r["per_block"]
        line = (f"{r['kernel']:<26}{r['key_bits']:>5}{pb['total']:>10.2f}"
                f"{pb.get('rounds_0_2', 0):>6.2f}"
                f"{pb.get('rounds_3_nr', pb.get('aes', 0)):>7.2f}{pb.get('counter', 0):>6.2f}")
        line += "".join(f"{r['mix_per_block'][m]:>8.2f}" for m in MIX)
        for c in mca_cpus:
            m = r["mca"][c]
            if m["cycles_per_block"] is None:
                line += f"{'n/a':>17}"
                notes.append(f"{r['kernel']} {r['key_bits']} on {c}: {m['note']}")
            else:
                cell = f"{m['cycles_per_block']:.2f} ({m['cycles_per_byte']:.3f})"
                line += f"{cell:>17}"
                if m["note"]:
                    notes.append(f"{r['kernel']} {r['key_bits']} on {c}: {m['note']}: "
                                 + "; ".join(m["dropped"]))
        lines.append(line)
    lines += sorted(set(notes))
    from ..modes import mode
    for name in dict.fromkeys(r["mode"] for r in rows if r.get("mode", "ctr") != "ctr"):
        desc = mode(name)
        phases = [p for p in desc.phases if p != "derive"]
        lines += ["", f"{desc.title} kernels, steady-state loop ({desc.hot_entry}) per block "
                  "by phase (r3-Nr above = all AES rounds for them):",
                  f"{'kernel':<26}{'key':>5}" + "".join(f"{p:>16}" for p in phases)]
        for r in rows:
            if r.get("mode") == name:
                lines.append(f"{r['kernel']:<26}{r['key_bits']:>5}"
                             + "".join(f"{r['per_block'].get(p, 0):>16.2f}" for p in phases))
    return "\n".join(lines) + "\n"


def render_markdown(rows: list[dict], mca_cpus: tuple[str, ...]) -> str:
    head = ["kernel", "key", "instr/block", "rounds 0-2", "rounds 3..Nr"] + list(MIX) + [
        f"llvm-mca {c} (cycles/block)" for c in mca_cpus]
    out = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in rows:
        pb = r["per_block"]
        cells = [r["kernel"], str(r["key_bits"]), f"{pb['total']:.2f}",
                 f"{pb.get('rounds_0_2', 0):.2f}", f"{pb.get('rounds_3_nr', pb.get('aes', 0)):.2f}"]
        cells += [f"{r['mix_per_block'][m]:.2f}" for m in MIX]
        for c in mca_cpus:
            v = r["mca"][c]["cycles_per_block"]
            cells.append("n/a" if v is None else f"{v:.2f}")
        out.append("| " + " | ".join(cells) + " |")
    return "\n".join(out) + "\n"


def plot_compare(rows: list[dict], mca_cpus: tuple[str, ...], path: Path, title: str) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    labels = [f"{r['kernel']}\n{r['key_bits']}" for r in rows]
    fig, axes = plt.subplots(2, 1, figsize=(max(8, 0.9 * len(rows) + 3), 8), sharex=True)
    xs = range(len(rows))
    bottom = [0.0] * len(rows)
    for m in MIX:
        vals = [r["mix_per_block"][m] for r in rows]
        axes[0].bar(xs, vals, bottom=bottom, label=m)
        bottom = [b + v for b, v in zip(bottom, vals)]
    axes[0].set_ylabel("instructions per block")
    axes[0].legend(ncol=len(MIX), fontsize=8)
    axes[0].set_title(title)
    width = 0.8 / max(1, len(mca_cpus))
    for i, cpu in enumerate(mca_cpus):
        vals = [r["mca"][cpu]["cycles_per_block"] or 0 for r in rows]
        axes[1].bar([x + (i - (len(mca_cpus) - 1) / 2) * width for x in xs], vals, width,
                    label=cpu)
    axes[1].set_ylabel("llvm-mca cycles per block")
    axes[1].legend(fontsize=8)
    axes[1].set_xticks(list(xs))
    axes[1].set_xticklabels(labels, fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110, metadata={"Software": None})
    plt.close(fig)
