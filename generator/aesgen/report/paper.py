"""`aesgen paper`: seed 000's comparisons, reproduced on this machine, its figures beside ours.

1. Instructions up to round 2, base vs FACE, per method (seed 000 sections 1 and 5.1).
2. Table 3 style cycles/byte (TSC ticks here) at 1024/4096/20480/40960 bytes for 128/192/256
   bit keys, from a bench.json, beside Table 3's AES-NI "4 x 1" rows.
3. Table 4 style set-up cost beside the paper's.
"""
from __future__ import annotations

from ..emit.compile import CompiledKernel
from . import seed000 as S


def round2_table(kernels: list[CompiledKernel]) -> str:
    by_method: dict[str, dict[str, CompiledKernel]] = {}
    for ck in kernels:
        by_method.setdefault(ck.spec.method, {})[ck.spec.face] = ck
    lines = ["Instructions up to round 2 for one block (seed 000 sections 1 and 5.1)",
             f"{'method':<12}{'ours: none':>12}{'ours: r2':>10}{'8-way loop none':>17}"
             f"{'8-way r2':>10}   seed 000 (base vs FACE)",
             "-" * 90]
    for method, faces in sorted(by_method.items()):
        if "none" not in faces or "r2" not in faces:
            continue
        base = faces["none"].stats()["steady_state"]["128"]
        face = faces["r2"].stats()["steady_state"]["128"]
        paper = S.UP_TO_ROUND_2.get(method)
        quoted = (f"{paper['base']} vs {paper['face']} ({paper['base_source']})"
                  if paper else "-")
        lines.append(f"{method:<12}{base['rounds_0_2_one_block']:>12}"
                     f"{face['rounds_0_2_one_block']:>10}"
                     f"{base['per_block']['rounds_0_2']:>17.2f}"
                     f"{face['per_block']['rounds_0_2']:>10.2f}   {quoted}")
    lines.append("ours, one block: the one-block path, round keys loaded for that block "
                 "(the paper's 1 x 1 count); 8-way: per block in the batch loop, key loads "
                 "shared by the batch")
    return "\n".join(lines) + "\n"


def table3(results: dict[str, dict], method: str, cpu: str) -> str:
    """Our stream-mode medians beside the paper's Table 3 AES-NI 4 x 1 rows."""
    def ours(face: str, size: int, bits: int):
        r = results.get(f"{method}-{face}/stream/{bits}/{size}")
        return r["median"] if r else None

    head = f"{'':<28}" + "".join(f"{s:>8} B, 128/192/256 bits".rjust(27) for s in S.SIZES)
    lines = [f"Table 3 style: cycles per byte, AES-CTR, {method}",
             f"ours: {cpu}, TSC ticks per byte (streaming, median)",
             f"seed 000: {S.TEST_ENV_3}, core cycles per byte (quoted)", head,
             "-" * len(head)]
    for row, face in S.OUR_ROW.items():
        cells = ""
        for size in S.SIZES:
            vals = [ours(face, size, b) for b in (128, 192, 256)]
            cells += "".join(f"{v:>9.3f}" if v is not None else f"{'-':>9}" for v in vals)
        lines.append(f"{'ours ' + method + '-' + face:<28}{cells}")
        cells = "".join(f"{v:>9.3f}" for size in S.SIZES
                        for v in S.TABLE3_AESNI_4X1[row][size])
        lines.append(f"{'seed 000 ' + row:<28}{cells}")
    return "\n".join(lines) + "\n"


def table4(setup: list[dict], method: str) -> str:
    lines = ["Table 4 style: set-up cycles (ours: init, TSC ticks; FACE tables are filled "
             "during the first window, so init is the whole set-up)",
             f"{'':<28}{'128':>8}{'192':>8}{'256':>8}"]
    mine = {(r["impl"], r["key_bits"]): r["ticks"] for r in setup}
    for row, face in S.OUR_ROW.items():
        name = f"{method}-{face}"
        vals = [mine.get((name, b)) for b in (128, 192, 256)]
        lines.append(f"{'ours ' + name:<28}" + "".join(
            f"{v:>8.0f}" if v is not None else f"{'-':>8}" for v in vals))
        lines.append(f"{'seed 000 ' + row:<28}" + "".join(
            f"{v:>8}" for v in S.TABLE4_AESNI_SETUP[row]))
    return "\n".join(lines) + "\n"
