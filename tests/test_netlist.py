"""Gate netlists: the text format, the bit-sliced evaluator, the S-box library, mutations."""
from __future__ import annotations

import pytest

from aesgen.model.aes import INV_SBOX, SBOX
from aesgen.netlist import derive, library
from aesgen.netlist.evaluate import (ALL, INPUTS, apply_op, check_sbox, evaluate,
                                     sbox_output_vectors, truth_table)
from aesgen.netlist.format import (Gate, Netlist, NetlistError, check_structure, dead_gates,
                                   format_netlist, parse_netlist)
from aesgen.netlist.transform import strip_output_constant

SMALL = """\
# a comment line
name: small            # trailing comment
source: made up for the tests
source: a second source line
inputs: a0 .. a2
outputs: o n
t = XOR a0 a1
u = AND t a2
o = XNOR u a0
n = NOT a1
"""


# --- format --------------------------------------------------------------------------------
def test_parse_small():
    n = parse_netlist(SMALL)
    assert n.name == "small"
    assert n.inputs == ("a0", "a1", "a2")
    assert n.outputs == ("o", "n")
    assert n.source == "made up for the tests\na second source line"
    assert n.gates == (Gate("XOR", "t", "a0", "a1"), Gate("AND", "u", "t", "a2"),
                       Gate("XNOR", "o", "u", "a0"), Gate("NOT", "n", "a1"))
    assert n.gate_counts() == {"XOR": 1, "XNOR": 1, "AND": 1, "NOT": 1}
    assert n.depth() == 3
    check_structure(n)


def test_print_parse_round_trip():
    n = parse_netlist(SMALL)
    text = format_netlist(n)
    assert parse_netlist(text) == n
    assert format_netlist(parse_netlist(text)) == text      # the printed form is canonical


@pytest.mark.parametrize("name", library.names())
def test_library_round_trip(name):
    n = library.load(name)
    assert parse_netlist(format_netlist(n)) == n


BAD = [
    ("undefined wire", "name: x\ninputs: a b\noutputs: t\nt = XOR a c\n",
     "<netlist>:4: undefined wire 'c'"),
    ("used before defined", "name: x\ninputs: a b\noutputs: u\nt = XOR a u\nu = AND a b\n",
     "undefined wire 'u'"),
    ("assigned twice", "name: x\ninputs: a b\noutputs: t\nt = XOR a b\nt = AND a b\n",
     "<netlist>:5: wire 't' assigned twice (it is assigned on line 4)"),
    ("assigns an input", "name: x\ninputs: a b\noutputs: a\na = XOR a b\n",
     "wire 'a' assigned twice (it is an input)"),
    ("unknown op", "name: x\ninputs: a b\noutputs: t\nt = NAND a b\n",
     "<netlist>:4: unknown op 'NAND'"),
    ("arity", "name: x\ninputs: a b\noutputs: t\nt = NOT a b\n", "NOT takes 1 operand(s)"),
    ("arity 2", "name: x\ninputs: a b\noutputs: t\nt = AND a\n", "AND takes 2 operand(s)"),
    ("no name", "inputs: a b\noutputs: t\nt = AND a b\n", "missing header 'name'"),
    ("undefined output", "name: x\ninputs: a b\noutputs: t z\nt = AND a b\n",
     "output 'z' is never assigned"),
    ("bad range", "name: x\ninputs: a3 .. b1\noutputs: a3\n", "bad range a3 .. b1"),
    ("unknown header", "name: x\ninput: a\n", "unknown header 'input'"),
    ("garbage", "name: x\ninputs: a\noutputs: a\nthis is not a gate\n", "expected 'wire = OP"),
    ("duplicate input", "name: x\ninputs: a a\noutputs: a\n", "input a listed twice"),
]


@pytest.mark.parametrize("text,message", [(t, m) for _, t, m in BAD], ids=[b[0] for b in BAD])
def test_parse_errors(text, message):
    with pytest.raises(NetlistError) as err:
        parse_netlist(text)
    assert message in str(err.value)


def test_structure_checks():
    n = Netlist("x", ("a", "b"), ("t",), (Gate("XOR", "t", "a", "b"),
                                          Gate("AND", "dead", "a", "b")))
    assert dead_gates(n) == ["dead"]
    with pytest.raises(NetlistError, match="reaches no output: dead"):
        check_structure(n)
    check_structure(n, allow_dead=True)
    with pytest.raises(NetlistError, match="unknown op"):
        check_structure(Netlist("x", ("a",), ("t",), (Gate("BUF", "t", "a"),)))
    with pytest.raises(NetlistError, match="used before it is defined"):
        check_structure(Netlist("x", ("a",), ("t",), (Gate("NOT", "t", "u"),
                                                      Gate("NOT", "u", "a"))))


# --- evaluation ----------------------------------------------------------------------------
def test_bit_order_is_msb_first():
    # s_i = NOT x_i maps byte k to ~k: both sides read x0/s0 as the most significant bit
    n = Netlist("inv", tuple(f"x{i}" for i in range(8)), tuple(f"s{i}" for i in range(8)),
                tuple(Gate("NOT", f"s{i}", f"x{i}") for i in range(8)))
    assert truth_table(n) == tuple(k ^ 0xFF for k in range(256))
    # an output that is an input wire: s = (x7, x6, ..., x0) reverses the bits
    rev = Netlist("rev", tuple(f"x{i}" for i in range(8)), tuple(f"x{7 - i}" for i in range(8)),
                  ())
    assert truth_table(rev)[0x01] == 0x80
    assert INPUTS[0] >> 0x80 & 1 and not INPUTS[0] >> 0x7F & 1


def test_evaluate_lanes():
    n = parse_netlist(SMALL)
    a0, a1, a2 = 0b1100, 0b1010, 0b0110
    v = evaluate(n, [a0, a1, a2], mask=0xF)
    assert v["t"] == a0 ^ a1 and v["u"] == (a0 ^ a1) & a2
    assert v["o"] == ~(v["u"] ^ a0) & 0xF and v["n"] == ~a1 & 0xF


def test_sbox_output_vectors():
    vecs = sbox_output_vectors()
    for k in (0, 1, 0x53, 0xFF):
        assert sum(((vecs[i] >> k) & 1) << (7 - i) for i in range(8)) == SBOX[k]


# --- the library ---------------------------------------------------------------------------
EXPECTED = {
    "bp113": {"XOR": 77, "XNOR": 4, "AND": 32},
    "tower": {"XOR": 81, "XNOR": 4, "AND": 36},
}


def test_library_contents():
    assert set(library.names()) >= set(EXPECTED)
    assert len([n for n in library.all_netlists() if check_sbox(n)]) >= 2


@pytest.mark.parametrize("name", library.names())
def test_library_netlist_is_the_sbox(name):
    n = library.load(name)
    check_structure(n)                        # no dead gates either
    result = check_sbox(n)
    assert result, result.describe()
    assert not check_sbox(n, forward=False)   # and it is not the inverse
    assert len(n.inputs) == len(n.outputs) == 8
    assert n.source, "every library netlist names its source"


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_gate_counts(name):
    n = library.load(name)
    assert n.gate_counts() == EXPECTED[name]
    assert n.size == sum(EXPECTED[name].values())


def test_bp113_layers():
    # the published structure: 23 XOR on top, 32 AND, 28 gates at the bottom
    n = library.load("bp113")
    gates = list(n.gates)
    assert all(g.op == "XOR" for g in gates[:23])
    assert sum(g.op == "AND" for g in gates) == 32
    assert all(g.op in ("XOR", "XNOR") for g in gates[-28:])
    assert "Logic Minimization Techniques" in n.source


def test_derived_file_is_reproducible():
    """library/tower.net is exactly what derive.py writes (regenerate, compare text)."""
    for name in derive.DERIVED:
        assert library.path(name).read_text() == derive.derived_text(name)


def test_derivation_works_for_other_towers():
    # a handful of other basis choices give correct circuits too (the search relies on it)
    towers = derive.all_towers()
    assert len(towers) == 432
    for t in towers[::97]:
        for method in ("paar", "slp"):
            n = derive.build_netlist(t, method=method, materialize=True)
            check_structure(n)
            assert check_sbox(n), (t, method)


def test_search_keeps_the_smallest():
    towers = derive.all_towers()[:2]
    best, params = derive.search(seeds=1, towers=towers)
    assert check_sbox(best)
    assert params["tower"] in towers
    for t in towers:
        assert best.size <= derive.build_netlist(t, materialize=True).size


@pytest.mark.parametrize("name", library.names())
def test_strip_output_constant(name):
    n = library.load(name)
    stripped, constant = strip_output_constant(n)
    assert constant == 0x63 == SBOX[0]
    assert "XNOR" not in stripped.gate_counts() and stripped.size == n.size
    table = truth_table(stripped)
    assert all(table[x] ^ constant == SBOX[x] for x in range(256))


def test_check_reports_mismatches():
    n = library.load("bp113")
    g = n.gates[-1]
    broken = n.with_gates(n.gates[:-1] + (Gate("XNOR", g.out, g.a, g.b),))
    result = check_sbox(broken)
    assert not result
    assert "differ from the AES S-box" in result.describe()
    x, got, want = result.mismatches[0]
    assert want == SBOX[x] and got != want and INV_SBOX[want] == x


# --- mutations: every single-gate change breaks the S-box ------------------------------------
def _mutations(n: Netlist):
    """(description, index, mutated gate) for every gate.

    Op changes: each binary op becomes each other binary op. Operand replacement: each
    operand becomes the latest wire defined before this gate that is not one of its
    operands. Operand order: swapped.
    """
    defined = list(n.inputs)
    for i, g in enumerate(n.gates):
        if g.b is not None:
            for op in ("XOR", "XNOR", "AND", "OR"):
                if op != g.op:
                    yield f"{g} -> {op}", i, Gate(op, g.out, g.a, g.b)
            yield f"{g} swapped", i, Gate(g.op, g.out, g.b, g.a)
        for pos, w in enumerate(g.operands):
            other = next(x for x in reversed(defined) if x not in g.operands)
            ops = list(g.operands)
            ops[pos] = other
            yield f"{g}: operand {w} -> {other}", i, Gate(g.op, g.out, *ops)
        defined.append(g.out)


@pytest.mark.parametrize("name", library.names())
def test_every_gate_mutation_breaks_the_sbox(name):
    """Every mutation fails the exhaustive check, except the equivalent ones.

    A mutation is equivalent when the mutated gate still computes the same value on all
    256 inputs, and then the S-box cannot change. Three kinds occur: swapping the
    operands (every binary op here is commutative); XOR <-> OR on two wires that are never
    1 together (a AND b = 0 on every input, e.g. bp113's t37 = t36 XOR t34, which the
    algebra of the GF(16) inverter makes disjoint); and an AND operand replaced by a wire
    that equals it wherever the other operand is 1 (tower's p12 = AND l20 l32 with p11 for
    l20). Each mutation is classified by evaluating that one gate; an equivalence of any
    other kind fails the test.
    """
    n = library.load(name)
    values = evaluate(n)
    equivalent = []
    count = 0
    for what, i, gate in _mutations(n):
        mutated = n.with_gates(n.gates[:i] + (gate,) + n.gates[i + 1:])
        b = None if gate.b is None else values[gate.b]
        same = apply_op(gate.op, values[gate.a], b) == values[gate.out]
        assert bool(check_sbox(mutated)) == same, what
        count += 1
        if same:
            old = n.gates[i]
            swapped = gate.operands == tuple(reversed(old.operands)) and gate.op == old.op
            disjoint = ({gate.op, old.op} == {"XOR", "OR"}
                        and values[old.a] & values[old.b] == 0)
            masked = gate.op == old.op == "AND" and len(set(gate.operands) & set(
                old.operands)) == 1
            assert swapped or disjoint or masked, f"unexplained equivalent mutation: {what}"
            if not swapped:
                equivalent.append(what)
    assert count >= 5 * n.size
    assert len(equivalent) <= 3, equivalent


def test_lane_constant():
    assert ALL == (1 << 256) - 1
