"""KernelBuilder: builds one Function over virtual registers, with an explicit context.

Every instruction goes through the ISA table, so a wrong operand kind fails when the kernel
is built, not when it is assembled. Usage::

    b = KernelBuilder(load_table("x86_64"), "aesgen_foo")
    x = b.xmm()
    b.asm.movdqu(x, Mem(128, base=ptr))
"""
from __future__ import annotations

import contextlib
from typing import Iterator

from ..isa.table import InstructionTable
from .ir import Comment, Function, Instruction, LabelDef
from .operands import A64_GP, A64_VEC, GP, VEC, VIRTUAL_BASE, Label, Mem, Operand, Reg, Sym


class _Asm:
    """``b.asm.NAME(*operands)`` emits instruction NAME; an attribute per table mnemonic."""

    __slots__ = ("_builder",)

    def __init__(self, builder: "KernelBuilder") -> None:
        self._builder = builder

    def __getattr__(self, name: str):
        builder = self._builder
        if not builder.table.has(name):
            raise AttributeError(f"{builder.table.isa} has no instruction {name!r}")

        def emit(*operands: Operand, comment: str = "") -> None:
            builder.emit(name, *operands, comment=comment)

        return emit


class KernelBuilder:
    def __init__(self, table: InstructionTable, symbol: str, *, doc: str = "") -> None:
        self.table = table
        self.function = Function(symbol, doc=doc)
        self._next_id = VIRTUAL_BASE
        self._labels: set[str] = set()
        self._phase = "other"
        self._phase_names: dict[str, str] = {}   # phase_names: an engine's phase -> the mode's
        self._region = ""
        self._weight = 1
        # table row suffixes to try first, e.g. ("evx", "evy", "z") for an EVEX kernel
        self.prefer: tuple[str, ...] = ()

    @property
    def asm(self) -> _Asm:
        # made on each use, not kept: a builder holding its _Asm (which holds the builder)
        # would be a reference cycle, and the whole function body with it would wait for
        # the cyclic garbage collector instead of going when the builder does
        return _Asm(self)

    # --- values ---------------------------------------------------------------------
    @property
    def a64(self) -> bool:
        return self.table.isa == "aarch64"

    def gp(self) -> Reg:
        """A fresh virtual 64-bit general-purpose register (an x register on AArch64)."""
        self._next_id += 1
        return Reg(A64_GP if self.a64 else GP, self._next_id, 64)

    def xmm(self) -> Reg:
        """A fresh virtual 128-bit vector register."""
        return self.vec(128)

    def vec(self, width: int) -> Reg:
        """A fresh virtual vector register used at ``width`` bits (128, 256 or 512)."""
        if width not in (128, 256, 512) or (self.a64 and width != 128):
            raise ValueError(f"vector width must be 128, 256 or 512 (128 on AArch64), "
                             f"not {width}")
        self._next_id += 1
        if self.a64:
            return Reg(A64_VEC, self._next_id, 128, "16b")
        return Reg(VEC, self._next_id, width)

    def const(self, name: str, data: bytes, align: int = 16) -> Mem:
        """A read-only constant, addressed RIP-relative; ``name`` must be unique per function."""
        label = f".L{self.function.symbol}_{name}"
        old = self.function.constants.get(label)
        if old is not None and old != (align, data):
            raise ValueError(f"constant {name} defined twice with different contents")
        self.function.constants[label] = (align, data)
        return Mem(8 * len(data), rip_label=label)

    def const_symbol(self, name: str, data: bytes, align: int = 16) -> Sym:
        """A read-only constant addressed through a register (AArch64: adrp + add :lo12:)."""
        mem = self.const(name, data, align)
        return Sym(mem.rip_label)

    # --- control flow ---------------------------------------------------------------
    def label(self, hint: str) -> Label:
        name = f".L{self.function.symbol}_{hint}"
        n = 1
        while name in self._labels:
            n += 1
            name = f".L{self.function.symbol}_{hint}_{n}"
        self._labels.add(name)
        return Label(name)

    def bind(self, label: Label) -> None:
        self.function.body.append(LabelDef(label.name))

    def comment(self, text: str) -> None:
        self.function.body.append(Comment(text))

    # --- annotation -----------------------------------------------------------------
    @contextlib.contextmanager
    def phase(self, name: str) -> Iterator[None]:
        """Instructions emitted inside count toward ``name`` in the per-phase reports."""
        old, self._phase = self._phase, self._phase_names.get(name, name)
        try:
            yield
        finally:
            self._phase = old

    @contextlib.contextmanager
    def phase_names(self, names: dict[str, str]) -> Iterator[None]:
        """Phases opened inside under a key of ``names`` count toward its value: a mode
        reports an engine's own phases in its own columns."""
        old = self._phase_names
        self._phase_names = {**old, **names}
        try:
            yield
        finally:
            self._phase_names = old

    @contextlib.contextmanager
    def repeat(self, times: int) -> Iterator[None]:
        """Instructions emitted inside form a loop body that runs ``times`` times each time
        its region runs (a counted loop with a static trip count); reports weight them."""
        old, self._weight = self._weight, self._weight * times
        try:
            yield
        finally:
            self._weight = old

    @contextlib.contextmanager
    def region(self, name: str) -> Iterator[None]:
        """Mark a stretch of code (e.g. the steady-state batch loop of one key size)."""
        old, self._region = self._region, name
        try:
            yield
        finally:
            self._region = old

    # --- stitching ------------------------------------------------------------------
    @contextlib.contextmanager
    def capture(self) -> Iterator[list]:
        """Collect what is emitted inside, instead of appending it: a straight-line stream
        (no labels) for ``emit_stitched``."""
        start = len(self.function.body)
        out: list = []
        try:
            yield out
        finally:
            out.extend(self.function.body[start:])
            del self.function.body[start:]
            if any(not isinstance(item, (Instruction, Comment)) for item in out):
                raise ValueError("a captured stream must be straight-line code (no labels)")

    def emit_stitched(self, main: list, other: list,
                      window: tuple[int, int] = (0, 100)) -> None:
        """Append two independent straight-line streams as one: ``other`` spread evenly
        through ``main``, each keeping its own order (e.g. the GHASH of one batch through
        the AES rounds of the next, so the two units work side by side); with ``window``
        (percent of ``main``) only through that part of it. The streams must share no
        register they write and no memory one writes and the other reads. An item of
        ``main`` may be a list: instructions kept together (nothing of ``other`` between
        them, e.g. an AESE and the AESMC the core fuses with it)."""
        n, m = len(main), len(other)
        lo, hi = window[0] * n, window[1] * n          # in hundredths of main's items
        taken = 0
        for i, item in enumerate(main):
            if isinstance(item, list):
                self.function.body.extend(item)
            else:
                self.function.body.append(item)
            done = min(max(100 * (i + 1) - lo, 0), hi - lo)
            due = done * m // (hi - lo) if n else m
            while taken < due:
                self.function.body.append(other[taken])
                taken += 1
        self.function.body.extend(other[taken:])

    # --- emission -------------------------------------------------------------------
    def emit(self, name: str, *operands: Operand, comment: str = "") -> None:
        form = self.table.match(name, tuple(operands), self.prefer)
        self.function.body.append(
            Instruction(form, tuple(operands), self._phase, self._region, comment,
                        self._weight))

    def build(self) -> Function:
        return self.function
