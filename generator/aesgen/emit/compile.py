"""Compile a KernelSpec: lower it, run the pass pipeline on each entry point, print it.

compile_kernel is memoised (a frozen spec compiles once a process): generate, compare and the
tests ask for the same kernels many times.
"""
from __future__ import annotations

import atexit
import contextlib
import functools
import gc
from dataclasses import dataclass, field, replace
from typing import Iterator

from ..dsl.ir import Function
from ..kernels.spec import METHODS, KernelSpec
from ..modes import build_kernel, mode
from ..passes import compile_function
from ..passes.abi import AAPCS64, SYSV_X86_64
from ..passes.features import FEATURE_ORDERS
from ..printer.gas_aarch64 import print_function as print_aarch64
from ..printer.gas_x86_64 import print_function as print_x86_64
from .stats import static_sizes, steady_state_counts

# AArch64 methods whose round engine does not exist yet (kernels/a64/engines.py)
NOT_YET_IMPLEMENTED: tuple[str, ...] = ()
IMPLEMENTED_METHODS = tuple(m for m in METHODS if m not in NOT_YET_IMPLEMENTED)

# instruction set -> (its default calling convention, its printer)
TARGETS = {"x86_64": (SYSV_X86_64, print_x86_64), "aarch64": (AAPCS64, print_aarch64)}


@dataclass(frozen=True)
class CompiledKernel:
    spec: KernelSpec
    functions: dict[str, Function]     # entry name -> compiled function
    texts: dict[str, str]              # entry name -> assembler text
    ctx_size: int
    # why the kernel is NOT constant time (its skeleton says so); None when it is
    timing_warning: str | None = None
    # (section, name, offset, size, doc) of a context built from declared fields
    context_fields: tuple = ()
    batch_registers: int | None = None     # the skeleton's own batch, when not the preset's
    # stats(), worked out beforehand (compiled_summary: the functions keep no instructions)
    precomputed_stats: dict | None = field(default=None, compare=False)

    @property
    def interleave(self) -> int:
        """Registers of blocks a batch in the kernel's loop."""
        return self.batch_registers or self.spec.interleave

    @property
    def constant_time(self) -> bool:
        return self.timing_warning is None

    @property
    def features(self) -> tuple[str, ...]:
        found = {f for fn in self.functions.values() for f in fn.features}
        return tuple(f for f in FEATURE_ORDERS[self.spec.arch] if f in found)

    def stats(self) -> dict:
        """Per-block counts of the mode's hot entry, by its report phases, per key size."""
        if self.precomputed_stats is not None:
            return self.precomputed_stats
        desc = mode(self.spec.mode)
        hot = self.functions[desc.hot_entry]
        blocks = self.interleave * self.spec.lanes
        return {
            "steady_state": {str(bits): steady_state_counts(hot, bits, blocks, desc.phases)
                             for bits in self.spec.key_bits},
            "static_instructions": static_sizes(self.functions),
        }


@contextlib.contextmanager
def cyclic_gc_paused() -> Iterator[None]:
    """No cyclic garbage collection inside (as it was before, after).

    Compiling a kernel allocates millions of small objects that live until its passes are
    done; the collector, triggered every few hundred allocations, would walk them (and
    every kernel compiled before, cached) again and again: about half the time of a
    compile. Nothing here needs it: what the compile leaves behind is freed by reference
    counting, and any cycle by the next collection after the pause."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


@functools.lru_cache(maxsize=None)
def compile_kernel(spec: KernelSpec) -> CompiledKernel:
    """Build ``spec``'s kernel with the skeleton its mode names for its instruction set and
    method (modes/), run the pass pipeline on every function under its calling convention,
    and print it. The same path for every mode, method and instruction set."""
    with cyclic_gc_paused():
        return _compile_kernel(spec)


# The kept kernels go when the interpreter exits: left in place, the collections at its
# finalization would walk their millions of objects (seconds a preset).
atexit.register(compile_kernel.cache_clear)


def compiled_summary(spec: KernelSpec) -> CompiledKernel:
    """compile_kernel(spec) as generating a set needs it, small enough to send from one
    process to another: the same texts, features, symbols and stats(), but functions
    without their instruction lists. Not memoised: for a process that compiles each
    kernel once (compile_all's workers)."""
    with cyclic_gc_paused():
        ck = _compile_kernel(spec)
    return replace(ck, functions={entry: replace(fn, body=[])
                                  for entry, fn in ck.functions.items()},
                   precomputed_stats=ck.stats())


def _compile_kernel(spec: KernelSpec) -> CompiledKernel:
    if spec.method not in METHODS:
        raise ValueError(f"method {spec.method!r} is not implemented; implemented: "
                         f"{', '.join(IMPLEMENTED_METHODS)}")
    if spec.method in NOT_YET_IMPLEMENTED:
        raise ValueError(f"method {spec.method} is not implemented yet")
    built = build_kernel(spec)
    if not spec.scrub:                          # --no-scrub: the frame pass zeroes nothing
        for fn in built.functions.values():
            fn.scrub_vectors = False
    default_abi, print_function = TARGETS[spec.arch]
    functions = _with_callee_features(
        {entry: compile_function(fn, built.abi.get(entry, default_abi))
         for entry, fn in built.functions.items()}, spec.arch)
    texts = {entry: print_function(fn) for entry, fn in functions.items()}
    return CompiledKernel(spec, functions, texts, built.ctx_size, built.timing_warning,
                          built.context_fields, built.interleave)


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
