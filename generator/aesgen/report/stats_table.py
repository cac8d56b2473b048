"""`aesgen stats`: per-block instruction counts of each kernel, read from manifest.json."""
from __future__ import annotations

import json
from pathlib import Path

from ..emit.stats import PHASES
from ..modes import mode

HEADINGS = {"aes": "AES", "face": "FACE", "ghash_multiply": "GHASH mul", "reduction": "reduction",
            "polyval_multiply": "POLYVAL mul", "derive": "derive",
            "load_store": "load/store", "tail": "tail", "masks": "masks",
            "counter": "counter", "transpose": "transpose", "rounds_0_2": "rounds 0-2", "rounds_3_nr": "rounds 3..Nr",
            "load_xor_store": "load/xor/store", "loop": "loop", "total": "total"}


def load_counts(directory: Path) -> list[dict]:
    manifest = json.loads((directory / "manifest.json").read_text())
    rows = []
    for k in manifest["kernels"]:
        for bits, c in k["instruction_counts"]["steady_state"].items():
            rows.append({"kernel": k["name"], "key_bits": int(bits),
                         "interleave": k["interleave"], **c["per_block"],
                         "rounds_0_2_one_block": c["rounds_0_2_one_block"],
                         "refresh_per_window": c["refresh_per_window"],
                         "refresh_per_block": c["refresh_per_block"]})
    return rows


def load_aead_counts(directory: Path) -> list[dict]:
    """The AEAD kernels' steady-state loop (the hot entry: encrypt) per block, by phase."""
    manifest = json.loads((directory / "manifest.json").read_text())
    rows = []
    for k in manifest.get("aeads", []):
        for bits, c in k["instruction_counts"]["steady_state"].items():
            rows.append({"kernel": k["name"], "mode": k["mode"], "key_bits": int(bits),
                         "interleave": k["interleave"], **c["per_block"]})
    return rows


def render_aead_table(rows: list[dict]) -> str:
    """One table a mode, its columns the mode's report phases (GCM: the encrypt loop;
    GCM-SIV: seal's POLYVAL and CTR loops together, one block's worth of each)."""
    lines = []
    for name in dict.fromkeys(r["mode"] for r in rows):
        desc = mode(name)
        cols = [c for c in desc.phases if c != "derive"] + ["total"]
        head = f"{'kernel':<23}{'key':>5} " + "".join(f"{HEADINGS[c]:>13}" for c in cols)
        lines += [f"{desc.title} kernels: instructions per 16-byte block of the steady-state "
                  f"loop ({desc.hot_entry}; tail = the partial-block path, 0 in the loop)",
                  head, "-" * len(head)]
        for r in rows:
            if r["mode"] == name:
                lines.append(f"{r['kernel']:<23}{r['key_bits']:>5} "
                             + "".join(f"{r.get(c, 0):>13.2f}" for c in cols))
    return "\n".join(lines) + "\n"


def render_table(rows: list[dict]) -> str:
    cols = list(PHASES) + ["total"]
    head = f"{'kernel':<23}{'key':>5} " + "".join(f"{HEADINGS[c]:>15}" for c in cols)
    head += f"{'refresh/window':>16}{'(per block)':>13}{'rounds 0-2, 1 block':>21}"
    lines = ["instructions per 16-byte block, steady-state loop (static count / blocks an iteration);",
             "last column: rounds 0-2 on the one-block path (seed 000 counts 6 for AES-NI, "
             "3 for FACE r2)",
             head, "-" * len(head)]
    for r in rows:
        line = f"{r['kernel']:<23}{r['key_bits']:>5} "
        line += "".join(f"{r.get(c, 0):>15.2f}" for c in cols)
        line += f"{r['refresh_per_window']:>16}{r['refresh_per_block']:>13.2f}"
        line += f"{r['rounds_0_2_one_block']:>21}"
        lines.append(line)
    return "\n".join(lines) + "\n"
