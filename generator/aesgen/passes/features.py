"""Collect the ISA extensions a compiled function needs, from its instruction forms."""
from __future__ import annotations

from dataclasses import replace

from ..dsl.ir import Function
from .abi import AbiSpec

# A stable order for reports and the `Requires:` comment.
FEATURE_ORDER = ("SSE2", "SSSE3", "SSE41", "AESNI", "PCLMULQDQ", "AVX", "AVX2", "BMI2",
                 "VAES", "VPCLMULQDQ", "GFNI", "AVX512F", "AVX512BW", "AVX512VL")
# AArch64 (targets/aarch64_features.toml)
A64_FEATURE_ORDER = ("ASIMD", "AES", "PMULL", "SHA3")
FEATURE_ORDERS = {"x86_64": FEATURE_ORDER, "aarch64": A64_FEATURE_ORDER}


def required_features(function: Function, abi: AbiSpec) -> Function:
    order = FEATURE_ORDERS[abi.isa]
    found = {f for ins in function.instructions() for f in ins.form.features}
    unknown = found - set(order)
    if unknown:
        raise ValueError(f"{function.symbol}: features missing from FEATURE_ORDER: {unknown}")
    return replace(function, features=tuple(f for f in order if f in found))
