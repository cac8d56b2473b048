"""Compile a KernelSpec: lower it, run the pass pipeline on each entry point, print it."""
from __future__ import annotations

from dataclasses import dataclass

from ..dsl.ir import Function
from ..kernels import aesni_ctr
from ..kernels.ctx_layout import layout_for
from ..kernels.spec import KernelSpec
from ..passes import compile_function
from ..passes.abi import SYSV_X86_64
from ..passes.features import FEATURE_ORDER
from ..printer.gas_x86_64 import print_function
from .stats import static_sizes, steady_state_counts

LOWERINGS = {"aesni": aesni_ctr.build_kernel}
IMPLEMENTED_METHODS = tuple(LOWERINGS)


@dataclass(frozen=True)
class CompiledKernel:
    spec: KernelSpec
    functions: dict[str, Function]     # entry name -> compiled function
    texts: dict[str, str]              # entry name -> assembler text
    ctx_size: int
    constant_time: bool

    @property
    def features(self) -> tuple[str, ...]:
        found = {f for fn in self.functions.values() for f in fn.features}
        return tuple(f for f in FEATURE_ORDER if f in found)

    def stats(self) -> dict:
        xs = self.functions["xor_stream"]
        return {
            "steady_state": {str(bits): steady_state_counts(xs, bits, self.spec.interleave)
                             for bits in self.spec.key_bits},
            "static_instructions": static_sizes(self.functions),
        }


def compile_kernel(spec: KernelSpec) -> CompiledKernel:
    if spec.method not in LOWERINGS:
        raise ValueError(f"method {spec.method!r} is not implemented; implemented: "
                         f"{', '.join(IMPLEMENTED_METHODS)}")
    built = LOWERINGS[spec.method](spec)
    functions = {entry: compile_function(fn, SYSV_X86_64) for entry, fn in built.items()}
    texts = {entry: print_function(fn) for entry, fn in functions.items()}
    return CompiledKernel(spec, functions, texts, layout_for(spec.face).size,
                          constant_time=True)
