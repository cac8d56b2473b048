"""Instruction counts of every library netlist under every lowering strategy.

``netlist_report()`` returns one row a (netlist, strategy, objective): two_operand has a
row for the lowering with the fewest instructions and one for the lowering the timing model
chose (the one the kernels use); the other strategies are chosen by count only::

    netlist       library name
    gates         {op: count} of the netlist
    strategy      two_operand | three_operand | ternary | neon | neon_sha3
    objective     "instructions" (the fewest) or "cycles" (the timing model's choice)
    default       whether lower() returns this one when not told an objective
    cycles        two_operand: the timing model's cycles a round of the bit-sliced SSE
                  loop (timing.py), for either objective; None for the other strategies
    keep_near     the Machine setting the lowering was made with (0: none)
    target        what the strategy models (ISA, registers)
    operations    gates, or the cones (fused instructions) of a ternary/NEON cover
    instructions  total, as below
    logic         gate or cone instructions
    copies        register copies (two-operand overwrite, VPTERNLOGD/BSL destination)
    spills        stores to the scratch area
    reloads       loads back from it (x86 reads most spilled values as memory operands)
    nots          XOR with all-ones / MVN for XNOR, NOT and the affine constant
    consts        set-up of a constant register (NEON ones, with SHA3)
    max_live      peak live values of the chosen order with unbounded registers
    no_constant   instructions when the affine constant 0x63 is left to the caller (added
                  into the round keys, as bit-sliced AES does): the same strategy and
                  objective on the netlist with its constant-carrying XNORs made XOR
                  (transform.py); no_constant_cycles its timing estimate (two_operand)
    registers     registers the target has
    fits          max_live <= registers: the order needs no spill at all
    compiled      x86: the count after the DSL's real passes (register allocation),
                  None where there is no emitter (NEON), False if allocation failed
    verified      the S-box check through the lowered code (and the compiled code)

``render_netlist_table(rows)`` prints them as a plain-text table, with seed 004's
reference figure (Kasper-Schwabe, CHES 2009: 163 SSE instructions from 117 gates).
"""
from __future__ import annotations

from .emit import ENCODING, check_compiled, compile_lowering
from .library import all_netlists
from .lower import DEFAULT_OBJECTIVE, STRATEGIES, check_lowering, lower
from .timing import cycles_per_round, reference_core
from .transform import strip_output_constant

SEED_004 = {"gates": 117, "instructions": 163, "copies": 35, "strategy": "two_operand",
            "source": "Kasper, Schwabe, CHES 2009 (seed 004): 93 xor + 35 and/or + 35 mov"}


def objectives(strategy: str) -> list[str]:
    """The objectives the report shows for a strategy: both where a timing model exists."""
    return ["instructions", "cycles"] if strategy in DEFAULT_OBJECTIVE else ["instructions"]


def netlist_row(netlist, strategy: str, objective: str = "instructions", *,
                compile: bool = True) -> dict:
    low = lower(netlist, strategy, objective)
    verified = bool(check_lowering(low))
    compiled = None
    if compile and strategy in ENCODING:
        c = compile_lowering(low)
        if c.ok:
            compiled = c.count("sbox")
            verified = verified and bool(check_compiled(c))
        else:
            compiled = False
    timed = low.two_operand
    stripped = lower(strip_output_constant(netlist)[0], strategy, objective)
    return {
        "netlist": netlist.name,
        "gates": netlist.gate_counts(),
        "strategy": strategy,
        "objective": objective,
        "default": objective == DEFAULT_OBJECTIVE.get(strategy, "instructions"),
        "cycles": cycles_per_round(low, reference_core()) if timed else None,
        "keep_near": low.keep_near,
        "target": STRATEGIES[strategy][0],
        "operations": low.operations,
        "instructions": low.instructions,
        "logic": low.count("logic"),
        "copies": low.copies,
        "spills": low.spills,
        "reloads": low.reloads,
        "nots": low.nots,
        "consts": low.count("const"),
        "max_live": low.max_live,
        "no_constant": stripped.instructions,
        "no_constant_cycles": cycles_per_round(stripped, reference_core()) if timed else None,
        "registers": low.registers,
        "fits": low.fits,
        "compiled": compiled,
        "verified": verified,
    }


def netlist_report(netlists=None, strategies=None, *, compile: bool = True) -> list[dict]:
    netlists = all_netlists() if netlists is None else netlists
    strategies = list(STRATEGIES) if strategies is None else strategies
    return [netlist_row(n, s, o, compile=compile) for n in netlists for s in strategies
            for o in objectives(s)]


def _gates_text(gates: dict) -> str:
    return f"{sum(gates.values())} (" + " ".join(f"{k}{op}" for op, k in gates.items()) + ")"


def _cycles_text(c) -> str:
    return "-" if c is None else f"{c:.1f}"


def render_netlist_table(rows: list[dict]) -> str:
    head = ["netlist", "gates", "strategy", "by", "ops", "instr", "copies", "spills",
            "reloads", "nots", "max_live", "regs", "compiled", "ok", "no_0x63", "cycles"]
    table = [head]
    for r in rows:
        c = r["compiled"]
        compiled = "-" if c is None else "FAILED" if c is False else str(c)
        by = ("time" if r["objective"] == "cycles" else "count") + ("*" if r["default"] else "")
        cycles = "-" if r["no_constant_cycles"] is None else \
            f"{_cycles_text(r['cycles'])} / {_cycles_text(r['no_constant_cycles'])}"
        table.append([r["netlist"], _gates_text(r["gates"]), r["strategy"], by,
                      str(r["operations"]), str(r["instructions"]), str(r["copies"]),
                      str(r["spills"]), str(r["reloads"]), str(r["nots"]),
                      str(r["max_live"]), str(r["registers"]), compiled,
                      "yes" if r["verified"] else "NO", str(r["no_constant"]), cycles])
    widths = [max(len(row[i]) for row in table) for i in range(len(head))]
    lines = []
    for k, row in enumerate(table):
        lines.append("  ".join(cell.ljust(w) if i < 4 else cell.rjust(w)
                               for i, (cell, w) in enumerate(zip(row, widths))).rstrip())
        if k == 0:
            lines.append("  ".join("-" * w for w in widths))
    lines.append("")
    lines.append(f"reference: {SEED_004['instructions']} instructions from "
                 f"{SEED_004['gates']} gates, two-operand SSE ({SEED_004['source']}).")
    lines.append("ops = gates, or fused cones (ternary, neon); instr = ops' instructions + "
                 "copies + spills + reloads + nots + consts; inputs start and outputs end in "
                 "registers;")
    lines.append("compiled = the count after the DSL's register allocation; no_0x63 = instr "
                 "with the affine constant left to the round keys.")
    lines.append("by = what chose the lowering: count (fewest instructions) or time (the "
                 "timing model); * = what lower() and the kernels use.")
    lines.append("cycles = the timing model's cycles a round of the bitsliced128 loop "
                 "(timing.py), with / without 0x63; the kernels use the netlist without it.")
    return "\n".join(lines)


if __name__ == "__main__":
    print(render_netlist_table(netlist_report()))
