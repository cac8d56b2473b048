"""Compile a KernelSpec: lower it, run the pass pipeline on each entry point, print it."""
from __future__ import annotations

from dataclasses import dataclass

from ..dsl.ir import Function
from ..kernels import ctr_kernel
from ..kernels.spec import METHODS, KernelSpec
from ..passes import compile_function
from ..passes.abi import SYSV_X86_64, sysv_with_vectors
from ..passes.features import FEATURE_ORDER
from ..printer.gas_x86_64 import print_function
from .stats import static_sizes, steady_state_counts

IMPLEMENTED_METHODS = tuple(METHODS)


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
            "steady_state": {str(bits): steady_state_counts(
                xs, bits, self.spec.interleave * self.spec.lanes)
                             for bits in self.spec.key_bits},
            "static_instructions": static_sizes(self.functions),
        }


def compile_kernel(spec: KernelSpec) -> CompiledKernel:
    """Lower, compile (the pass pipeline) and print the four entry points of ``spec``.

    xor_stream of an EVEX kernel may use all 32 vector registers: every vector instruction
    it contains has an EVEX form. The other entry points keep to 16 (they use VEX-only
    instructions such as AESKEYGENASSIST).
    """
    if spec.method not in METHODS:
        raise ValueError(f"method {spec.method!r} is not implemented; implemented: "
                         f"{', '.join(IMPLEMENTED_METHODS)}")
    kernel = ctr_kernel.Kernel(spec)
    built = ctr_kernel.build_all(kernel)
    wide = sysv_with_vectors(32) if spec.encoding == "evex" else SYSV_X86_64
    functions = {entry: compile_function(fn, wide if entry == "xor_stream" else SYSV_X86_64)
                 for entry, fn in built.items()}
    texts = {entry: print_function(fn) for entry, fn in functions.items()}
    return CompiledKernel(spec, functions, texts, kernel.layout.size, constant_time=True)
