"""Per-method detail for `aesgen compare`: what FACE saves up to round 2, and, for bit-sliced
kernels, where the instructions of a round go (S-box netlist, MixColumns, transposes).

Seed 000 (Park and Lee, TCHES, section 5 and appendix A) counts the instructions "up to
round 2": 128 against 12 for T-tables (one block), 618 against 74 for bit-slicing (8 blocks),
6 against 3 for AES-NI. Ours are read off the compiled steady-state loop (phases counter and
rounds_0_2); the bit-sliced transposes are counted apart since every FACE level pays them.
"""
from __future__ import annotations

from ..dsl.builder import KernelBuilder
from ..emit.compile import CompiledKernel
from ..isa.table import load_table
from ..kernels.spec import ROUNDS, KernelSpec
from ..kernels.vector_ops import VectorOps

SEED_000_UP_TO_ROUND_2 = {
    "table": {"blocks": 1, "none": 128, "r2": 12},
    "bitsliced": {"blocks": 8, "none": 618, "r2": 74},
    "aesni": {"blocks": 1, "none": 6, "r2": 3},
}
SEED_004 = {"sbox": 163, "mix_columns": 43, "gates": 117}


def face_savings(kernels: list[CompiledKernel], bits: int = 128) -> list[dict]:
    """Instructions up to round 2 (counter + rounds 0-2) per block of the steady state, for
    each variant and FACE level, with seed 000's figure for the method where it gives one."""
    rows = []
    for ck in kernels:
        if bits not in ck.spec.key_bits:
            continue
        per_block = ck.stats()["steady_state"][str(bits)]["per_block"]
        up_to_2 = per_block["counter"] + per_block["rounds_0_2"]
        seed = SEED_000_UP_TO_ROUND_2.get(ck.spec.method, {})
        rows.append({"variant": ck.spec.variant, "face": ck.spec.face,
                     "up_to_round_2_per_block": round(up_to_2, 2),
                     "transpose_per_block": per_block.get("transpose", 0),
                     "seed_000": (None if ck.spec.face not in seed
                                  else round(seed[ck.spec.face] / seed["blocks"], 2))})
    return rows


def bitsliced_breakdown(spec: KernelSpec) -> dict:
    """Instruction counts of one bit-sliced round's parts for ``spec``'s encoding."""
    from ..kernels.bitsliced import BitslicedEngine, sbox_lowering
    engine = BitslicedEngine(spec)
    lowering, constant = sbox_lowering(engine.strategy, spec.uarch, spec.sbox)

    def count(build, copies: bool = False) -> int:
        b = KernelBuilder(load_table("x86_64"), "count")
        v = VectorOps(b, spec.encoding)
        regs = [b.vec(spec.width) for _ in range(8)]
        build(b, v, regs)
        return sum(1 for ins in b.function.instructions()
                   if copies == ins.name.startswith(("movdqa", "vmovdqa")))

    from ..dsl.operands import Mem
    key_base = None

    def mix(b, v, regs):
        nonlocal key_base
        key_base = b.gp()
        engine._mix_columns(b, v, regs, lambda i: Mem(spec.width, base=key_base,
                                                       disp=i * spec.width // 8),
                            *engine._rotations(b, 1, spec.width, ROUNDS[128]))
    return {
        "netlist": lowering.netlist, "strategy": lowering.strategy,
        "sbox": lowering.instructions, "sbox_constant": constant,
        "shift_rows": 0,                       # a change of layout (see kernels/bitsliced.py)
        "mix_columns_and_key": count(mix),
        "mix_columns_copies": count(mix, copies=True),
        "transpose_one_way": count(lambda b, v, regs: engine._bit_transpose(b, v, regs)) + 8,
        "transpose_copies": count(lambda b, v, regs: engine._bit_transpose(b, v, regs),
                                  copies=True),
        "seed_004": SEED_004,
    }


def render_details(kernels: list[CompiledKernel], bits: int = 128) -> str:
    lines = [f"instructions up to round 2 per block (counter + rounds 0-2, AES-{bits}, "
             "steady state) beside seed 000's figures:"]
    lines.append(f"  {'variant':<14}{'FACE':<6}{'ours':>8}{'seed 000':>10}"
                 f"{'transposes':>12}")
    for r in face_savings(kernels, bits):
        seed = "-" if r["seed_000"] is None else f"{r['seed_000']:.2f}"
        tr = f"{r['transpose_per_block']:.2f}" if r["transpose_per_block"] else "-"
        lines.append(f"  {r['variant']:<14}{r['face']:<6}{r['up_to_round_2_per_block']:>8.2f}"
                     f"{seed:>10}{tr:>12}")
    seen = set()
    for ck in kernels:
        if ck.spec.method != "bitsliced" or ck.spec.variant in seen:
            continue
        seen.add(ck.spec.variant)
        d = bitsliced_breakdown(ck.spec)
        lines.append(
            f"{ck.spec.variant} ({ck.spec.encoding}), one round of 8 registers: S-box "
            f"{d['sbox']} ({d['netlist']}, {d['strategy']}, 0x{d['sbox_constant']:02x} in the "
            f"round keys; seed 004: {SEED_004['sbox']} from {SEED_004['gates']} gates), "
            f"ShiftRows 0 (a change of byte layout), MixColumns + AddRoundKey "
            f"{d['mix_columns_and_key']} + {d['mix_columns_copies']} copies (seed 004: "
            f"MixColumns {SEED_004['mix_columns']}, ShiftRows 8); transpose "
            f"{d['transpose_one_way']} + {d['transpose_copies']} copies each way a batch")
    return "\n".join(lines) + "\n"


# Quoted, not measured here: OpenSSL's own headers for its AArch64 NEON AES (no Crypto
# Extension), Cortex-A53 cycles per byte; and what seed 003 (Kwon, Raspberry Pi 3B, Cortex-A53
# at 1.2 GHz, AES-128 CTR on 4 KiB messages) states in its text (its figures are graphs).
QUOTED_AARCH64 = [
    ("OpenSSL vpaes-armv8", "cortex-a53", 18.1),
    ("OpenSSL bsaes-armv8", "cortex-a53", 17.5),
]
SEED_003_NOTES = ("seed 003 (Kwon, Cortex-A53): SubBytes by TBL/TBX is about 66% of the AES "
                  "time; its transposed MixColumns is about 42.47% faster than the compared "
                  "implementation, its AddRoundKey and transposes slower (the slides give "
                  "graphs, no absolute cycles per byte)")


# Quoted, not measured here: what OpenSSL's, BoringSSL's and Linux's AArch64 AES-GCM
# sources state, cycles per byte (AES-128 where a key size applies). GCM there is CTR and
# GHASH in separate passes, so a GCM figure is the sum of the two on the same core.
QUOTED_AARCH64_GCM = [
    # (what, core, cycles per byte, where it is stated)
    ("AES-128-CTR, Crypto Extension", "cortex-a53", 1.36, "OpenSSL aesv8-armx.pl"),
    ("AES-128-CTR, Crypto Extension", "cortex-a57", 0.89, "OpenSSL aesv8-armx.pl"),
    ("AES-128-CTR, Crypto Extension", "cortex-a72", 0.92, "OpenSSL aesv8-armx.pl"),
    ("GHASH, PMULL", "cortex-a53", 1.01, "OpenSSL and BoringSSL ghashv8-armx.pl"),
    ("GHASH, PMULL", "cortex-a57", 1.17, "OpenSSL and BoringSSL ghashv8-armx.pl"),
    ("GHASH, 32-bit NEON vmull.p8 (no Crypto Extension)", "cortex-a53", 8.39,
     "OpenSSL and BoringSSL ghashv8-armx.pl"),
    ("GHASH, 32-bit NEON vmull.p8 (no Crypto Extension)", "cortex-a57", 7.61,
     "OpenSSL and BoringSSL ghashv8-armx.pl"),
    ("AES-GCM, bit-sliced NEON CTR + PMULL.8b GHASH (constant time)", "cortex-a53", 29.0,
     "Linux, 'crypto: arm64/ghash - add NEON accelerated fallback for 64-bit PMULL' (2017)"),
]


def _predicted_lines(rows: list[dict], mode: str, cpus: tuple[str, ...]) -> list[str]:
    out = []
    for r in rows:
        if r["key_bits"] != 128 or r["mode"] != mode:
            continue
        cells = []
        for cpu in cpus:
            m = r["mca"].get(cpu)
            if m and m.get("cycles_per_byte") is not None:
                cells.append(f"{cpu} {m['cycles_per_byte']:.2f}")
        if cells:
            out.append(f"  {r['kernel']:<26}{', '.join(cells)}")
    return out


def render_aarch64_references(rows: list[dict], cpus: tuple[str, ...]) -> str:
    """Our llvm-mca predictions beside the quoted AArch64 figures (marked as quoted): CTR
    beside OpenSSL's NEON AES on the Cortex-A53 model, GCM beside OpenSSL's, BoringSSL's
    and Linux's AArch64 GCM figures."""
    lines = []
    ctr = _predicted_lines(rows, "ctr", ("cortex-a53",))
    if ctr and "cortex-a53" in cpus:
        lines.append("AES-128 cycles per byte on the Cortex-A53 model beside published figures:")
        lines += [ln + "  (llvm-mca, steady state; predicted, not measured)" for ln in ctr]
        for name, cpu, cpb in QUOTED_AARCH64:
            lines.append(f"  {name:<26}{cpu} {cpb:.2f}  (quoted from OpenSSL's file header, "
                         "not measured here)")
        lines.append("  " + SEED_003_NOTES)
    gcm = _predicted_lines(rows, "gcm", cpus)
    if gcm:
        lines.append("AES-128-GCM cycles per byte, llvm-mca's models (steady-state encrypt "
                     "loop; predicted, not measured), beside published figures (quoted, "
                     "not measured here; their GCM runs CTR and GHASH apart, so its cost is "
                     "the sum of both on one core):")
        lines += gcm
        for what, cpu, cpb, where in QUOTED_AARCH64_GCM:
            lines.append(f"  quoted: {what}, {cpu} {cpb:.2f}  ({where})")
        sums = {}
        for what, cpu, cpb, _ in QUOTED_AARCH64_GCM:
            if what in ("AES-128-CTR, Crypto Extension", "GHASH, PMULL"):
                sums.setdefault(cpu, []).append(cpb)
        for cpu, parts in sums.items():
            if len(parts) == 2:
                lines.append(f"  quoted sum: OpenSSL AES-128-GCM with the Crypto Extension, "
                             f"{cpu} {sum(parts):.2f}  (CTR + GHASH above)")
    return "\n".join(lines) + "\n" if lines else ""
