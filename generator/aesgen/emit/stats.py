"""Static instruction counts of a compiled xor_stream, per 16-byte block and per phase.

The steady state is the batch path of one key size (region ``steady-<bits>``): the loop head,
the batch of ``blocks`` blocks and the step to the next batch. Its counts divided by the
blocks are the per-block figures seed 000 (section 5.1) compares. The window refresh of
FACE kernels runs once per 256 blocks and is reported on its own, and amortised.
``rounds_0_2_one_block`` counts rounds 0-2 on the one-block path, where every round key is
loaded for that block alone: the "1 x 1" shape in which seed 000 counts 6 instructions for
plain AES-NI (3 AES instructions, 3 key loads) and 3 for FACE r2.
"""
from __future__ import annotations

from collections import Counter

from ..dsl.ir import Function

PHASES = ("counter", "transpose", "rounds_0_2", "rounds_3_nr", "load_xor_store", "loop")


def steady_state_counts(xor_stream: Function, key_bits: int, blocks: int,
                        phases: tuple[str, ...] = PHASES) -> dict:
    """Per-block counts of the steady-state loop, which handles ``blocks`` blocks; the
    columns are the mode's report phases (CTR's by default)."""
    steady: Counter = Counter()
    for ins in xor_stream.instructions():
        if ins.region == f"steady-{key_bits}":
            steady[ins.phase] += ins.weight          # a counted loop body, times its trips
    refresh = sum(ins.weight for ins in xor_stream.instructions()
                  if ins.region == f"refresh-{key_bits}")
    unknown = set(steady) - set(phases)
    if unknown:
        raise ValueError(f"steady-state code in phases without a report column: {unknown}")
    per_block = {p: round(steady[p] / blocks, 3) for p in phases}
    per_block["total"] = round(sum(steady.values()) / blocks, 3)
    one_block = sum(ins.weight for ins in xor_stream.instructions()
                    if ins.region == f"single-{key_bits}" and ins.phase == "rounds_0_2")
    return {
        "per_block": per_block,
        "rounds_0_2_one_block": one_block,
        "refresh_per_window": refresh,
        "refresh_per_block": round(refresh / 256, 3),
    }


def static_sizes(functions: dict[str, Function]) -> dict[str, int]:
    return {entry: len(fn.instructions()) for entry, fn in functions.items()}
