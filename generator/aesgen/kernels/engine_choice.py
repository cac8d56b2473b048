"""Which round engine computes a method's rounds (x86-64): one place that knows them all,
so the engine modules need not import each other."""
from __future__ import annotations

from .bitsliced import BitslicedEngine
from .engines import AesEngine, GfniEngine, RoundEngine
from .spec import KernelSpec
from .table_engine import TableEngine


def engine_for(spec: KernelSpec, byte_order_through: int = 0) -> RoundEngine:
    """The engine of spec's method; with byte_order_through r, one whose state after
    rounds 1..r is in FIPS-197 byte order (only GfniEngine keeps it otherwise)."""
    if spec.method in ("aesni", "vaes256", "vaes512"):
        return AesEngine(spec)
    if spec.method == "gfni":
        return GfniEngine(spec, byte_order_through)
    if spec.method == "bitsliced":
        return BitslicedEngine(spec)
    if spec.method == "table":
        return TableEngine(spec)
    raise ValueError(f"no round engine for method {spec.method!r}")
