"""Netlist rewrites that keep a circuit's function up to a known constant.

``strip_output_constant``: a bit-sliced AES can add the S-box's affine constant (0x63)
into the round keys instead of computing it (seed 004's count lists no NOT), so a lowering
may drop the XNORs that only carry that constant. The rewrite turns every XNOR into XOR and
checks, over all 256 inputs, that each output then differs from the original by a constant
(XORs carry an inversion linearly to the outputs; an inversion that reaches an AND or OR
would not be constant, and such an XNOR is left alone).
"""
from __future__ import annotations

from .evaluate import ALL, output_vectors
from .format import Gate, Netlist


def strip_output_constant(netlist: Netlist) -> tuple[Netlist, int]:
    """(netlist without constant-carrying XNORs, the byte to XOR into its outputs).

    ``outputs(original) == outputs(stripped) ^ constant`` on every input, with output 0 as
    the most significant bit of the constant.
    """
    want = output_vectors(netlist)
    gates = list(netlist.gates)
    for i, g in enumerate(netlist.gates):
        if g.op != "XNOR":
            continue
        trial = gates[:i] + [Gate("XOR", g.out, g.a, g.b)] + gates[i + 1:]
        got = output_vectors(netlist.with_gates(trial))
        if all(w ^ v in (0, ALL) for w, v in zip(want, got)):
            gates = trial
    stripped = netlist.with_gates(gates)
    diff = [w ^ v for w, v in zip(want, output_vectors(stripped))]
    n = len(diff)
    constant = sum((1 << (n - 1 - i)) for i, d in enumerate(diff) if d == ALL)
    return stripped, constant
