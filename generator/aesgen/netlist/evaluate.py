"""Evaluate a netlist on all 256 input bytes at once, bit-sliced over Python ints.

A *lane vector* is an int of 256 bits: bit k holds a wire's value when the circuit's input
byte is k. Input wire i (i = 0 is the most significant bit, see format.py) is therefore the
vector whose bit k is bit (7 - i) of k. One pass over the gates evaluates the circuit on
every input byte; ``table`` turns the output vectors back into 256 output bytes.
"""
from __future__ import annotations

from dataclasses import dataclass

from ..model.aes import INV_SBOX, SBOX
from .format import Netlist

LANES = 256
ALL = (1 << LANES) - 1


def input_vectors(width: int = 8) -> list[int]:
    """The lane vectors of an 8-bit input, most significant bit first."""
    vecs = []
    for i in range(width):
        bit = width - 1 - i
        vecs.append(sum(1 << k for k in range(1 << width) if (k >> bit) & 1))
    return vecs


INPUTS = tuple(input_vectors())


def apply_op(op: str, a: int, b: int | None = None, mask: int = ALL) -> int:
    if op == "XOR":
        return a ^ b
    if op == "XNOR":
        return (a ^ b) ^ mask
    if op == "AND":
        return a & b
    if op == "OR":
        return a | b
    if op == "NOT":
        return a ^ mask
    raise ValueError(f"unknown op {op!r}")


def evaluate(netlist: Netlist, inputs: list[int] | tuple[int, ...] = INPUTS,
             mask: int = ALL) -> dict[str, int]:
    """Every wire's lane vector, given the input wires' vectors (default: all 256 bytes)."""
    if len(inputs) != len(netlist.inputs):
        raise ValueError(f"{netlist.name}: {len(netlist.inputs)} inputs, got "
                         f"{len(inputs)} vectors")
    values = dict(zip(netlist.inputs, inputs))
    for g in netlist.gates:
        values[g.out] = apply_op(g.op, values[g.a],
                                 None if g.b is None else values[g.b], mask)
    return values


def output_vectors(netlist: Netlist) -> list[int]:
    values = evaluate(netlist)
    return [values[w] for w in netlist.outputs]


def table(outputs: list[int]) -> tuple[int, ...]:
    """The byte each of the 256 inputs maps to, from output lane vectors (MSB first)."""
    n = len(outputs)
    return tuple(sum(((outputs[i] >> k) & 1) << (n - 1 - i) for i in range(n))
                 for k in range(LANES))


def truth_table(netlist: Netlist) -> tuple[int, ...]:
    return table(output_vectors(netlist))


@dataclass(frozen=True)
class SboxCheck:
    """The outcome of ``check_sbox``: true when every input byte maps right."""

    netlist: str
    forward: bool
    mismatches: tuple[tuple[int, int, int], ...]   # (input, got, want)

    def __bool__(self) -> bool:
        return not self.mismatches

    def describe(self) -> str:
        which = "S-box" if self.forward else "inverse S-box"
        if not self.mismatches:
            return f"{self.netlist}: matches the AES {which} on all 256 inputs"
        x, got, want = self.mismatches[0]
        return (f"{self.netlist}: {len(self.mismatches)} of 256 inputs differ from the AES "
                f"{which}; first: {x:#04x} -> {got:#04x}, want {want:#04x}")


def sbox_expected(forward: bool = True) -> tuple[int, ...]:
    return SBOX if forward else INV_SBOX


def check_outputs(name: str, outputs: list[int], forward: bool = True) -> SboxCheck:
    """Compare 8 output lane vectors (MSB first) with the S-box."""
    want = sbox_expected(forward)
    got = table(outputs)
    bad = tuple((x, got[x], want[x]) for x in range(LANES) if got[x] != want[x])
    return SboxCheck(name, forward, bad)


def check_sbox(netlist: Netlist, forward: bool = True) -> SboxCheck:
    """Exhaustive check of an 8-in, 8-out netlist against the AES S-box (or its inverse)."""
    if len(netlist.inputs) != 8 or len(netlist.outputs) != 8:
        raise ValueError(f"{netlist.name}: an S-box netlist has 8 inputs and 8 outputs")
    return check_outputs(netlist.name, output_vectors(netlist), forward)


def sbox_output_vectors(forward: bool = True) -> tuple[int, ...]:
    """The lane vectors an S-box circuit's 8 outputs must carry (MSB first)."""
    want = sbox_expected(forward)
    return tuple(sum(1 << k for k in range(LANES) if (want[k] >> (7 - i)) & 1)
                 for i in range(8))
