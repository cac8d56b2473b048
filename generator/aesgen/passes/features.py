"""Collect the ISA extensions a compiled function needs, from its instruction forms."""
from __future__ import annotations

from dataclasses import replace

from ..dsl.ir import Function
from .abi import AbiSpec

# A stable order for reports and the `Requires:` comment.
FEATURE_ORDER = ("SSE2", "SSSE3", "SSE41", "AESNI", "PCLMULQDQ", "AVX", "AVX2", "BMI2",
                 "VAES", "VPCLMULQDQ", "GFNI", "AVX512F", "AVX512BW", "AVX512VL")


def required_features(function: Function, abi: AbiSpec) -> Function:
    found = {f for ins in function.instructions() for f in ins.form.features}
    unknown = found - set(FEATURE_ORDER)
    if unknown:
        raise ValueError(f"{function.symbol}: features missing from FEATURE_ORDER: {unknown}")
    return replace(function, features=tuple(f for f in FEATURE_ORDER if f in found))
