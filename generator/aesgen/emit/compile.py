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
from ..passes.abi import calling_convention
from ..passes.secrets import check_functions
from ..passes.features import FEATURE_ORDERS
from ..printer.flavours import flavour as flavour_named
from ..printer.gas_aarch64 import print_function as print_aarch64
from ..printer.gas_x86_64 import print_function as print_x86_64
from .stats import static_sizes, steady_state_counts

# AArch64 methods whose round engine does not exist yet (kernels/a64/engines.py)
NOT_YET_IMPLEMENTED: tuple[str, ...] = ()
IMPLEMENTED_METHODS = tuple(m for m in METHODS if m not in NOT_YET_IMPLEMENTED)

# instruction set -> its printer
PRINTERS = {"x86_64": print_x86_64, "aarch64": print_aarch64}


@dataclass(frozen=True)
class CompiledKernel:
    spec: KernelSpec
    functions: dict[str, Function]     # entry name -> compiled function
    texts: dict[str, str]              # entry name -> assembler text (its ABI's first flavour)
    ctx_size: int
    # why the kernel is NOT constant time (its skeleton says so); None when it is
    timing_warning: str | None = None
    # (section, name, offset, size, doc) of a context built from declared fields
    context_fields: tuple = ()
    batch_registers: int | None = None     # the skeleton's own batch, when not the preset's
    record_chunk: int = 0                  # the one-shot record path's chunk (BuiltKernel's)
    # stats(), worked out beforehand (compiled_summary: the functions keep no instructions)
    precomputed_stats: dict | None = field(default=None, compare=False)
    # the constant-time pass's report (passes/secrets.py): its findings, as text, and the
    # count of them per entry point, every entry listed
    timing_findings: tuple[str, ...] = ()
    public_fields: frozenset = frozenset()      # the context fields declared public
    timing_entries: tuple[tuple[str, int], ...] = ()
    # flavour name -> entry name -> text, printed beforehand (compiled_summary)
    flavour_texts: dict = field(default_factory=dict, compare=False)

    def texts_for(self, flavour: str) -> dict[str, str]:
        """entry name -> assembler text in output flavour ``flavour`` (printers/flavours.py),
        which must be one of the kernel's calling convention."""
        if flavour in self.flavour_texts:
            return self.flavour_texts[flavour]
        if flavour == primary_flavour(self.spec):
            return self.texts
        f = flavour_named(self.spec.arch, flavour)
        if f.abi != self.spec.abi:
            raise ValueError(f"{self.spec.name}: the {flavour} flavour needs kernels compiled "
                             f"for the {f.abi or 'default'} calling convention, not "
                             f"{self.spec.abi or 'the default'}")
        if any(not fn.body for fn in self.functions.values()):
            raise ValueError(f"{self.spec.name}: no instructions kept to print {flavour} "
                             f"(compiled_summary prints only the flavours asked of it)")
        return {entry: PRINTERS[self.spec.arch](fn, f) for entry, fn in self.functions.items()}

    @property
    def interleave(self) -> int:
        """Registers of blocks a batch in the kernel's loop."""
        return self.batch_registers or self.spec.interleave

    @property
    def constant_time(self) -> bool:
        """The data-flow pass's verdict: no secret value reaches an address, a branch or
        an instruction of variable time (compile_kernel has checked that it agrees with
        what the skeleton declares)."""
        return not self.timing_findings

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


def compiled_summary(spec: KernelSpec, flavours: tuple[str, ...] = ()) -> CompiledKernel:
    """compile_kernel(spec) as generating a set needs it, small enough to send from one
    process to another: the same texts, features, symbols and stats(), the texts of
    ``flavours`` (those of the spec's calling convention), but functions without their
    instruction lists. Not memoised: for a process that compiles each kernel once
    (compile_all's workers)."""
    with cyclic_gc_paused():
        ck = _compile_kernel(spec)
        printed = {f: ck.texts_for(f) for f in flavours
                   if flavour_named(spec.arch, f).abi == spec.abi}
    return replace(ck, functions={entry: replace(fn, body=[])
                                  for entry, fn in ck.functions.items()},
                   precomputed_stats=ck.stats(), flavour_texts=printed)


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
    default_abi = calling_convention(spec.arch, spec.abi)
    print_function = PRINTERS[spec.arch]
    functions = _with_callee_features(
        {entry: compile_function(fn, built.abi.get(entry, default_abi))
         for entry, fn in built.functions.items()}, spec.arch)
    texts = {entry: print_function(fn, flavour_named(spec.arch, primary_flavour(spec)))
             for entry, fn in functions.items()}
    findings, entries = _prove_constant_time(spec, functions, built, default_abi)
    return CompiledKernel(spec, functions, texts, built.ctx_size, built.timing_warning,
                          built.context_fields, built.interleave,
                          record_chunk=built.record_chunk, timing_findings=findings,
                          timing_entries=entries,
                          public_fields=built.public_fields)


def primary_flavour(spec: KernelSpec) -> str:
    """The flavour CompiledKernel.texts is printed in: win64 for the Win64 convention,
    else elf."""
    return "win64" if spec.abi == "win64" else "elf"


class TimingError(ValueError):
    """The constant-time pass and the kernel's declaration disagree."""


def _prove_constant_time(spec: KernelSpec, functions: dict[str, Function], built,
                         default_abi) -> tuple[tuple[str, ...], tuple[tuple[str, int], ...]]:
    """Run the data-flow pass (passes/secrets.py) on every function: a kernel that does not
    declare itself NOT constant time (the table method) must come out without findings,
    and one that declares it must come out with some; either way is an error naming the
    kernel and what the pass saw."""
    findings = check_functions(spec, functions, built.context_fields,
                               lambda entry: built.abi.get(entry, default_abi),
                               built.public_fields)
    entries = tuple((entry, sum(1 for f in findings if f.function == fn.symbol))
                    for entry, fn in functions.items())
    if findings and built.timing_warning is None:
        shown = "\n  ".join(str(f) for f in findings[:5])
        more = f"\n  ... {len(findings) - 5} more" if len(findings) > 5 else ""
        raise TimingError(f"kernel {spec.name} is not constant time: the data-flow pass finds "
                          f"{len(findings)} secret-dependent address(es), branch(es) or "
                          f"store(s):\n  {shown}{more}")
    if not findings and built.timing_warning is not None:
        raise TimingError(f"kernel {spec.name} declares itself NOT constant time "
                          f"({built.timing_warning}) but the data-flow pass finds nothing: "
                          f"the declaration or the pass is wrong")
    return tuple(str(f) for f in findings), entries


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
