"""Load an ISA's instruction table (a committed data file) and match operands to its forms."""
from __future__ import annotations

from dataclasses import dataclass
from functools import cache, cached_property
from pathlib import Path

from ..dsl.operands import A64_GP, A64_ZR, Imm, Mem, Operand, kind_matches

HERE = Path(__file__).parent


@dataclass(frozen=True)
class OperandSpec:
    kinds: tuple[str, ...]
    access: str  # "r", "w" or "rw"

    def accepts(self, operand: Operand) -> bool:
        if operand.kind.startswith("m") and "m" in self.kinds:
            return True
        return any(kind_matches(operand, k) for k in self.kinds)


@dataclass(frozen=True)
class Form:
    """One row of the table: a DSL name, the printed mnemonic, operand specs, features."""

    name: str
    mnemonic: str
    operands: tuple[OperandSpec, ...]
    features: tuple[str, ...]

    @cached_property
    def base_name(self) -> str:
        return self.name.split(".")[0]

    @cached_property
    def access(self) -> tuple[tuple[bool, bool], ...]:
        """(reads, writes) of each operand position: what the passes ask of every
        instruction, worked out once a form."""
        return tuple(("r" in s.access, "w" in s.access) for s in self.operands)

    def accepts(self, operands: tuple[Operand, ...]) -> bool:
        return len(operands) == len(self.operands) and all(
            spec.accepts(op) for spec, op in zip(self.operands, operands))

    def signature(self) -> str:
        return " ".join("/".join(s.kinds) for s in self.operands)


@dataclass(frozen=True)
class InstructionTable:
    isa: str
    forms: tuple[Form, ...]

    @cached_property
    def _by_name(self) -> dict[str, list[Form]]:
        index: dict[str, list[Form]] = {}
        for f in self.forms:
            index.setdefault(f.base_name, []).append(f)
        return index

    @cached_property
    def _matched(self) -> dict:
        return {}

    def forms_named(self, name: str) -> list[Form]:
        return list(self._by_name.get(name, ()))

    def has(self, name: str) -> bool:
        return name in self._by_name

    def match(self, name: str, operands: tuple[Operand, ...],
              prefer: tuple[str, ...] = ()) -> Form:
        """The first form called ``name`` whose operand kinds accept ``operands``.

        ``prefer`` lists row suffixes (e.g. ``("evx", "z")``) tried before the others: how
        a kernel that needs EVEX encodings picks them over the VEX rows of a mnemonic.
        Memoised by what a form's acceptance depends on (match_key), so a kernel's
        million instructions search the table a few thousand times.
        """
        key = (name, prefer, *map(match_key, operands))
        form = self._matched.get(key)
        if form is None:
            form = self._matched[key] = self._search(name, operands, prefer)
        return form

    def _search(self, name: str, operands: tuple[Operand, ...],
                prefer: tuple[str, ...]) -> Form:
        candidates = self.forms_named(name)
        if not candidates:
            raise KeyError(f"{self.isa}: no instruction {name!r} in the table")
        if prefer:
            first = [f for f in candidates if f.name.partition(".")[2] in prefer]
            candidates = first + [f for f in candidates if f not in first]
        for form in candidates:
            if form.accepts(operands):
                return form
        given = " ".join(op.kind for op in operands)
        known = "; ".join(f.signature() for f in candidates)
        raise TypeError(f"{self.isa}: {name} does not take ({given}); forms: {known}")


def match_key(op: Operand):
    """What decides whether a table operand spec accepts ``op`` (OperandSpec.accepts,
    kind_matches): an immediate's value (A64 immediates are checked by value), an AArch64
    memory operand's addressing mode and offset, and otherwise the operand's kind."""
    t = type(op)
    if t is Imm:
        return ("#", op.value)
    if t is Mem and op.base is not None and op.base.cls == A64_GP:
        return ("[", op.width, op.base.id == A64_ZR, op.index is None, op.scale, op.disp,
                op.writeback)
    return op.kind


def parse_table(isa: str, text: str) -> InstructionTable:
    forms = []
    for lineno, raw in enumerate(text.splitlines(), 1):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        head, _, feat = line.partition("[")
        if not feat.endswith("]"):
            raise ValueError(f"{isa}.isa:{lineno}: features must close with ']'")
        words = head.split()
        if len(words) < 2:
            raise ValueError(f"{isa}.isa:{lineno}: need a name and a mnemonic")
        specs = []
        for word in words[2:]:
            kinds, _, access = word.partition(":")
            if access not in ("r", "w", "rw"):
                raise ValueError(f"{isa}.isa:{lineno}: bad access {access!r} in {word!r}")
            specs.append(OperandSpec(tuple(kinds.split("/")), access))
        forms.append(Form(words[0], words[1], tuple(specs), tuple(feat[:-1].split())))
    return InstructionTable(isa, tuple(forms))


@cache
def load_table(isa: str) -> InstructionTable:
    return parse_table(isa, (HERE / f"{isa}.isa").read_text())
