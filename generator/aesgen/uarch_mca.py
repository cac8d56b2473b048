"""What llvm-mca's scheduling model of a CPU says about the instruction classes of a
microarchitecture model (uarch.py): latency and instructions a cycle, read from
``llvm-mca -instruction-info``. One of the three sources a model's facts may cite (the
others: measured here by ``aesgen calibrate``, or a published table)."""
from __future__ import annotations

import re
import subprocess
import tempfile

from .report.compare import mca_tool
from .uarch import Timing

# one instruction per class, as the kernels write it
CLASS_ASM: dict[str, dict[str, str]] = {
    "x86_64": {
        "vector_logic": "pxor %xmm1, %xmm0",
        "shuffle": "pshufb %xmm1, %xmm0",
        "load": "movdqu (%rdi), %xmm0",
        "aes": "aesenc %xmm1, %xmm0",
        "aes_ymm": "vaesenc %ymm1, %ymm2, %ymm0",
        "aes_zmm": "vaesenc %zmm1, %zmm2, %zmm0",
        "clmul": "pclmulqdq $0, %xmm1, %xmm0",
        "clmul_ymm": "vpclmulqdq $0, %ymm1, %ymm2, %ymm0",
        "clmul_zmm": "vpclmulqdq $0, %zmm1, %zmm2, %zmm0",
        "ternary_logic": "vpternlogd $0x96, %zmm1, %zmm2, %zmm0",
        "gf2p8affine": "gf2p8affineqb $0, %xmm1, %xmm0",
        "gp_add": "addq %rsi, %rax",
    },
    "aarch64": {
        "vector_logic": "eor v0.16b, v1.16b, v2.16b",
        "shuffle": "tbl v0.16b, {v1.16b}, v2.16b",
        "load": "ld1 {v0.16b}, [x0]",
        "aes": "aese v0.16b, v1.16b",
        "clmul": "pmull v0.1q, v1.1d, v2.1d",
        "gp_add": "add x0, x1, x2",
    },
}
TRIPLE = {"x86_64": "x86_64-unknown-linux-gnu", "aarch64": "aarch64-unknown-linux-gnu"}
ROW = re.compile(r"^\s*(\d+)\s+(\d+)\s+([0-9.]+)\s")


def mca_version() -> str:
    tool = mca_tool()
    if tool is None:
        return "llvm-mca (not installed)"
    out = subprocess.run([tool, "--version"], capture_output=True, text=True).stdout
    m = re.search(r"LLVM version ([0-9.]+)", out)
    return f"llvm-mca {m.group(1) if m else '?'}"


def mca_timings(mca_model: str, arch: str, source: str = "mca") -> dict[str, Timing]:
    """{class: Timing} for every class the model can read (the others are left out)."""
    tool = mca_tool()
    if tool is None:
        return {}
    out: dict[str, Timing] = {}
    for cls, line in CLASS_ASM[arch].items():
        with tempfile.NamedTemporaryFile("w", suffix=".s") as f:
            f.write(line + "\n")
            f.flush()
            proc = subprocess.run([tool, f"-mtriple={TRIPLE[arch]}", f"-mcpu={mca_model}",
                                   "-instruction-info", "-summary-view=false",
                                   "-resource-pressure=false", f.name],
                                  capture_output=True, text=True)
        if proc.returncode != 0:
            continue
        rows = [ROW.match(ln) for ln in proc.stdout.splitlines()]
        rows = [m for m in rows if m]
        if not rows:
            continue
        latency, rthroughput = int(rows[0].group(2)), float(rows[0].group(3))
        per_cycle = None
        if rthroughput > 0:
            per_cycle = round(1 / rthroughput, 2)       # 0.33 -> 3.03 -> 3
            if abs(per_cycle - round(per_cycle)) < 0.05:
                per_cycle = int(round(per_cycle))
        out[cls] = Timing(latency, per_cycle, source)
    return out
