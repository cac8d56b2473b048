"""Gate netlists as data: a frozen representation, a small text format, a structural check.

A netlist is a straight-line circuit of two-input gates (XOR, XNOR, AND, OR) and NOT over
named wires. The ``.net`` text format, one item a line::

    # comments run from '#' to the end of the line
    name: bp113
    source: Boyar, Matthews, Peralta, J. Cryptology 26(2), 2013     (repeatable)
    inputs: x0 .. x7          # a range: the same prefix, numbers counting up
    outputs: s0 s1 s2 s3 s4 s5 s6 s7
    y14 = XOR x3 x5
    t2 = AND y12 y15
    s7 = XNOR z12 tc18
    n = NOT a

Bit order, for every S-box netlist in this package: ``inputs[0]`` is the most significant
bit of the S-box input byte (x0 = bit 7 ... x7 = bit 0) and ``outputs[0]`` the most
significant bit of the output byte. Gates appear in an order where every operand is an
input or an earlier gate's output (a topological order); a wire is assigned exactly once.

``parse_netlist`` reports the first problem with its line number; ``format_netlist`` writes
the canonical text, and ``parse_netlist(format_netlist(n)) == n`` for every valid netlist.
"""
from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

BINARY_OPS = ("XOR", "XNOR", "AND", "OR")
UNARY_OPS = ("NOT",)
OPS = BINARY_OPS + UNARY_OPS
COMMUTATIVE = frozenset(BINARY_OPS)      # every binary op here is commutative

_WIRE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
_RANGE = re.compile(r"([A-Za-z_][A-Za-z0-9_]*?)(\d+)\Z")


class NetlistError(ValueError):
    """A netlist that breaks a structural rule (also raised by the parser, with a line)."""


@dataclass(frozen=True)
class Gate:
    """``out = op(a, b)``; ``b`` is None for NOT."""

    op: str
    out: str
    a: str
    b: str | None = None

    @property
    def operands(self) -> tuple[str, ...]:
        return (self.a,) if self.b is None else (self.a, self.b)

    def __str__(self) -> str:
        return f"{self.out} = {self.op} {' '.join(self.operands)}"


@dataclass(frozen=True)
class Netlist:
    name: str
    inputs: tuple[str, ...]
    outputs: tuple[str, ...]
    gates: tuple[Gate, ...]
    source: str = ""

    def __post_init__(self) -> None:
        # accept lists for convenience; keep tuples so the dataclass stays hashable
        object.__setattr__(self, "inputs", tuple(self.inputs))
        object.__setattr__(self, "outputs", tuple(self.outputs))
        object.__setattr__(self, "gates", tuple(self.gates))

    # --- derived facts -----------------------------------------------------------------
    def gate_counts(self) -> dict[str, int]:
        """Gates by op, in the order of OPS, ops with no gate left out."""
        c = Counter(g.op for g in self.gates)
        return {op: c[op] for op in OPS if c[op]}

    @property
    def size(self) -> int:
        return len(self.gates)

    def producers(self) -> dict[str, Gate]:
        return {g.out: g for g in self.gates}

    def fanout(self) -> dict[str, int]:
        """Uses of every wire by gates, plus one for each time it is listed as an output."""
        uses = Counter()
        for g in self.gates:
            uses.update(g.operands)
        uses.update(self.outputs)
        return {w: uses[w] for w in (*self.inputs, *(g.out for g in self.gates))}

    def depth(self) -> int:
        """Longest input-to-output path, in gates (NOT counts as a gate)."""
        level = {w: 0 for w in self.inputs}
        for g in self.gates:
            level[g.out] = 1 + max(level[w] for w in g.operands)
        return max((level[w] for w in self.outputs), default=0)

    def with_gates(self, gates) -> "Netlist":
        return Netlist(self.name, self.inputs, self.outputs, tuple(gates), self.source)


# --- structural check ----------------------------------------------------------------------
def check_structure(netlist: Netlist, *, allow_dead: bool = False) -> None:
    """Raise NetlistError unless the netlist is well formed.

    Rules: wire names are identifiers; inputs are distinct; ops are known and have their
    arity; every operand is defined earlier (an input or an earlier gate); no wire is
    assigned twice and no gate assigns an input; outputs are distinct defined wires; and,
    unless ``allow_dead``, every gate's result reaches an output.
    """
    defined: set[str] = set()
    for w in netlist.inputs:
        if not _WIRE.match(w):
            raise NetlistError(f"{netlist.name}: bad input name {w!r}")
        if w in defined:
            raise NetlistError(f"{netlist.name}: input {w} listed twice")
        defined.add(w)
    for n, g in enumerate(netlist.gates, 1):
        where = f"{netlist.name}: gate {n} ({g})"
        if g.op not in OPS:
            raise NetlistError(f"{where}: unknown op {g.op!r} (known: {', '.join(OPS)})")
        if (g.op in UNARY_OPS) != (g.b is None):
            raise NetlistError(f"{where}: {g.op} takes {1 if g.op in UNARY_OPS else 2} "
                               "operand(s)")
        if not _WIRE.match(g.out):
            raise NetlistError(f"{where}: bad wire name {g.out!r}")
        for w in g.operands:
            if w not in defined:
                raise NetlistError(f"{where}: wire {w} is used before it is defined")
        if g.out in defined:
            what = "an input" if g.out in netlist.inputs else "assigned twice"
            raise NetlistError(f"{where}: wire {g.out} is {what}")
        defined.add(g.out)
    seen: set[str] = set()
    for w in netlist.outputs:
        if w not in defined:
            raise NetlistError(f"{netlist.name}: output {w} is never defined")
        if w in seen:
            raise NetlistError(f"{netlist.name}: output {w} listed twice")
        seen.add(w)
    if not allow_dead:
        dead = dead_gates(netlist)
        if dead:
            raise NetlistError(f"{netlist.name}: gate(s) whose result reaches no output: "
                               f"{', '.join(dead)}")


def dead_gates(netlist: Netlist) -> list[str]:
    """Outputs of gates that no output depends on, in gate order."""
    needed = set(netlist.outputs)
    for g in reversed(netlist.gates):
        if g.out in needed:
            needed.update(g.operands)
    return [g.out for g in netlist.gates if g.out not in needed]


# --- text format ---------------------------------------------------------------------------
def _expand_wires(words: list[str], where: str) -> list[str]:
    """Expand ``x0 .. x7`` ranges; other words are wire names."""
    out: list[str] = []
    i = 0
    while i < len(words):
        if i + 2 < len(words) and words[i + 1] == "..":
            lo, hi = _RANGE.match(words[i]), _RANGE.match(words[i + 2])
            if not lo or not hi or lo.group(1) != hi.group(1) or int(hi.group(2)) < int(
                    lo.group(2)):
                raise NetlistError(f"{where}: bad range {words[i]} .. {words[i + 2]}")
            out.extend(f"{lo.group(1)}{k}" for k in range(int(lo.group(2)),
                                                          int(hi.group(2)) + 1))
            i += 3
            continue
        if words[i] == "..":
            raise NetlistError(f"{where}: '..' needs a wire on each side")
        out.append(words[i])
        i += 1
    return out


def parse_netlist(text: str, filename: str = "<netlist>") -> Netlist:
    """Parse the ``.net`` format; NetlistError names the file, the line and the problem."""
    header: dict[str, object] = {}
    sources: list[str] = []
    gates: list[Gate] = []
    defined: dict[str, int] = {}     # wire -> line where it was defined
    used: dict[str, int] = {}        # wire -> first line that reads it

    for lineno, raw in enumerate(text.splitlines(), 1):
        where = f"{filename}:{lineno}"
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        key, colon, rest = line.partition(":")
        if colon and "=" not in key:
            key = key.strip()
            if key == "source":
                sources.append(rest.strip())
                continue
            if key not in ("name", "inputs", "outputs"):
                raise NetlistError(f"{where}: unknown header {key!r} "
                                   "(known: name, source, inputs, outputs)")
            if key in header:
                raise NetlistError(f"{where}: header {key!r} given twice")
            if key == "name":
                header[key] = rest.strip()
                continue
            if gates:
                raise NetlistError(f"{where}: {key} must come before the first gate")
            wires = _expand_wires(rest.split(), where)
            for w in wires:
                if not _WIRE.match(w):
                    raise NetlistError(f"{where}: bad wire name {w!r}")
            header[key] = tuple(wires)
            if key == "inputs":
                for w in wires:
                    if w in defined:
                        raise NetlistError(f"{where}: input {w} listed twice")
                    defined[w] = lineno
            continue
        out, eq, rhs = line.partition("=")
        if not eq:
            raise NetlistError(f"{where}: expected 'wire = OP a [b]' or a header, got {line!r}")
        if "inputs" not in header:
            raise NetlistError(f"{where}: the inputs: header must come before the gates")
        out = out.strip()
        words = rhs.split()
        if not words:
            raise NetlistError(f"{where}: missing op after '='")
        op, operands = words[0], words[1:]
        if op not in OPS:
            raise NetlistError(f"{where}: unknown op {op!r} (known: {', '.join(OPS)})")
        arity = 1 if op in UNARY_OPS else 2
        if len(operands) != arity:
            raise NetlistError(f"{where}: {op} takes {arity} operand(s), got {len(operands)}")
        if not _WIRE.match(out):
            raise NetlistError(f"{where}: bad wire name {out!r}")
        for w in operands:
            if not _WIRE.match(w):
                raise NetlistError(f"{where}: bad wire name {w!r}")
            if w not in defined:
                raise NetlistError(f"{where}: undefined wire {w!r} (not an input and not "
                                   "assigned on an earlier line)")
            used.setdefault(w, lineno)
        if out in defined:
            first = defined[out]
            what = "an input" if out in header["inputs"] else f"assigned on line {first}"
            raise NetlistError(f"{where}: wire {out!r} assigned twice (it is {what})")
        defined[out] = lineno
        gates.append(Gate(op, out, *operands))

    for key in ("name", "inputs", "outputs"):
        if key not in header:
            raise NetlistError(f"{filename}: missing header {key!r}")
    for w in header["outputs"]:
        if w not in defined:
            raise NetlistError(f"{filename}: output {w!r} is never assigned")
    netlist = Netlist(str(header["name"]), header["inputs"], header["outputs"], tuple(gates),
                      "\n".join(sources))
    try:
        check_structure(netlist, allow_dead=True)
    except NetlistError as e:
        raise NetlistError(f"{filename}: {e}") from None
    return netlist


def load_netlist(path: str | Path) -> Netlist:
    path = Path(path)
    return parse_netlist(path.read_text(), str(path))


def format_netlist(netlist: Netlist, *, comments: dict[str, str] | None = None) -> str:
    """The canonical text of ``netlist``; ``comments`` maps a wire to a line put before it."""
    lines = [f"name: {netlist.name}"]
    for s in netlist.source.split("\n") if netlist.source else ():
        lines.append(f"source: {s}".rstrip())
    lines.append(f"inputs: {' '.join(netlist.inputs)}")
    lines.append(f"outputs: {' '.join(netlist.outputs)}")
    for g in netlist.gates:
        if comments and g.out in comments:
            lines.append(f"# {comments[g.out]}")
        lines.append(str(g))
    return "\n".join(lines) + "\n"
