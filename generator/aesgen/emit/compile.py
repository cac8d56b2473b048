"""Compile a KernelSpec: lower it, run the pass pipeline on each entry point, print it.

compile_kernel is memoised (a frozen spec compiles once a process): generate, compare and the
tests ask for the same kernels many times.
"""
from __future__ import annotations

import functools
from dataclasses import dataclass, replace

from ..dsl.ir import Function
from ..kernels import ctr_kernel
from ..kernels.spec import METHODS, KernelSpec
from ..modes import build_kernel, mode
from ..passes import compile_function
from ..passes.abi import SYSV_X86_64, sysv_with_vectors
from ..passes.features import FEATURE_ORDERS
from ..printer.gas_x86_64 import print_function
from .stats import static_sizes, steady_state_counts

# AArch64 methods whose round engine does not exist yet (kernels/a64/engines.py)
NOT_YET_IMPLEMENTED: tuple[str, ...] = ()
IMPLEMENTED_METHODS = tuple(m for m in METHODS if m not in NOT_YET_IMPLEMENTED)


@dataclass(frozen=True)
class CompiledKernel:
    spec: KernelSpec
    functions: dict[str, Function]     # entry name -> compiled function
    texts: dict[str, str]              # entry name -> assembler text
    ctx_size: int
    constant_time: bool
    # (section, name, offset, size, doc) of a context built from declared fields
    context_fields: tuple = ()

    @property
    def features(self) -> tuple[str, ...]:
        found = {f for fn in self.functions.values() for f in fn.features}
        return tuple(f for f in FEATURE_ORDERS[self.spec.arch] if f in found)

    def stats(self) -> dict:
        desc = mode(self.spec.mode)
        if desc.aead:
            hot = self.functions[desc.hot_entry]
            return {
                "steady_state": {str(bits): steady_state_counts(
                    hot, bits, self.spec.interleave * self.spec.lanes, desc.phases)
                                 for bits in self.spec.key_bits},
                "static_instructions": static_sizes(self.functions),
            }
        xs = self.functions["xor_stream"]
        return {
            "steady_state": {str(bits): steady_state_counts(
                xs, bits, self.spec.interleave * self.spec.lanes)
                             for bits in self.spec.key_bits},
            "static_instructions": static_sizes(self.functions),
        }


@functools.lru_cache(maxsize=None)
def compile_kernel(spec: KernelSpec) -> CompiledKernel:
    """Lower, compile (the pass pipeline) and print the four entry points of ``spec``.

    xor_stream of an EVEX kernel may use all 32 vector registers: every vector instruction
    it contains has an EVEX form. The other entry points keep to 16 (they use VEX-only
    instructions such as AESKEYGENASSIST).
    """
    if spec.method not in METHODS:
        raise ValueError(f"method {spec.method!r} is not implemented; implemented: "
                         f"{', '.join(IMPLEMENTED_METHODS)}")
    if mode(spec.mode).aead:
        return compile_aead(spec)
    if spec.method == "table":
        # scalar T-table lookups indexed by secret state: NOT constant time
        from ..kernels import table_kernel
        tk = table_kernel.TableKernel(spec)
        functions = {entry: compile_function(fn, SYSV_X86_64)
                     for entry, fn in table_kernel.build_all(tk).items()}
        texts = {entry: print_function(fn) for entry, fn in functions.items()}
        return CompiledKernel(spec, functions, texts, tk.layout.size, constant_time=False)
    if spec.arch == "aarch64":
        return compile_kernel_aarch64(spec)
    kernel = ctr_kernel.Kernel(spec)
    built = ctr_kernel.build_all(kernel)
    wide = sysv_with_vectors(32) if spec.encoding == "evex" else SYSV_X86_64
    functions = {entry: compile_function(fn, wide if entry == "xor_stream" else SYSV_X86_64)
                 for entry, fn in built.items()}
    texts = {entry: print_function(fn) for entry, fn in functions.items()}
    return CompiledKernel(spec, functions, texts, kernel.layout.size, constant_time=True)


def compile_kernel_aarch64(spec: KernelSpec) -> CompiledKernel:
    """An AArch64 kernel: the A64 skeleton (kernels/a64), AAPCS64, the A64 printer."""
    from ..kernels.a64 import ctr_kernel as a64_kernel
    from ..passes.abi import AAPCS64
    from ..printer.gas_aarch64 import print_function as print_a64

    if spec.method in NOT_YET_IMPLEMENTED:
        raise ValueError(f"method {spec.method} is not implemented yet (AArch64 engines: "
                         f"armv8-ce, neon-tbl, neon-bitsliced)")
    kernel = a64_kernel.Kernel(spec)
    functions = {entry: compile_function(fn, AAPCS64)
                 for entry, fn in a64_kernel.build_all(kernel).items()}
    texts = {entry: print_a64(fn) for entry, fn in functions.items()}
    return CompiledKernel(spec, functions, texts, kernel.layout.size, constant_time=True)


def _with_callee_features(functions: dict[str, Function], arch: str) -> dict[str, Function]:
    """A function needs what the local functions it calls need (encrypt runs the AES-NI
    of encrypt_data): each function's features, with its callees' added."""
    by_symbol = {fn.symbol: fn for fn in functions.values()}
    out = {}
    for entry, fn in functions.items():
        found = set(fn.features)
        for ins in fn.instructions():
            if ins.is_call and ins.label_target() in by_symbol:
                found |= set(by_symbol[ins.label_target()].features)
        ordered = tuple(f for f in FEATURE_ORDERS[arch] if f in found)
        out[entry] = fn if ordered == fn.features else replace(fn, features=ordered)
    return out


def compile_aead(spec: KernelSpec) -> CompiledKernel:
    """An AEAD kernel from its mode's skeleton (modes/), SysV, the x86-64 printer."""
    built, layout = build_kernel(spec)
    functions = _with_callee_features(
        {entry: compile_function(fn, SYSV_X86_64) for entry, fn in built.items()}, spec.arch)
    texts = {entry: print_function(fn) for entry, fn in functions.items()}
    return CompiledKernel(spec, functions, texts, layout.size, constant_time=True,
                          context_fields=tuple(layout.table()))
