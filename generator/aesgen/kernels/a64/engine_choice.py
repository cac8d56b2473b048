"""Which round engine computes an AArch64 method's rounds: one place that knows them all,
so the engine modules need not import each other."""
from __future__ import annotations

from ..spec import KernelSpec
from .engines import A64Engine, CeEngine
from .neon_bitsliced import NeonBitslicedEngine
from .neon_tbl import NeonTblEngine


def engine_for(spec: KernelSpec) -> A64Engine:
    if spec.method == "armv8-ce":
        return CeEngine(spec)
    if spec.method == "neon-tbl":
        return NeonTblEngine(spec)
    if spec.method == "neon-bitsliced":
        return NeonBitslicedEngine(spec)
    raise ValueError(f"no AArch64 round engine for method {spec.method!r}")
