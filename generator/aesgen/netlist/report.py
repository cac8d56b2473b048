"""Instruction counts of every library netlist under every lowering strategy.

``netlist_report()`` returns one row a (netlist, strategy)::

    netlist       library name
    gates         {op: count} of the netlist
    strategy      two_operand | three_operand | ternary | neon | neon_sha3
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
                  into the round keys, as bit-sliced AES does): the same strategy on the
                  netlist with its constant-carrying XNORs made XOR (transform.py)
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
from .lower import STRATEGIES, check_lowering, lower
from .transform import strip_output_constant

SEED_004 = {"gates": 117, "instructions": 163, "copies": 35, "strategy": "two_operand",
            "source": "Kasper, Schwabe, CHES 2009 (seed 004): 93 xor + 35 and/or + 35 mov"}


def netlist_row(netlist, strategy: str, *, compile: bool = True) -> dict:
    low = lower(netlist, strategy)
    verified = bool(check_lowering(low))
    compiled = None
    if compile and strategy in ENCODING:
        c = compile_lowering(low)
        if c.ok:
            compiled = c.count("sbox")
            verified = verified and bool(check_compiled(c))
        else:
            compiled = False
    return {
        "netlist": netlist.name,
        "gates": netlist.gate_counts(),
        "strategy": strategy,
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
        "no_constant": lower(strip_output_constant(netlist)[0], strategy).instructions,
        "registers": low.registers,
        "fits": low.fits,
        "compiled": compiled,
        "verified": verified,
    }


def netlist_report(netlists=None, strategies=None, *, compile: bool = True) -> list[dict]:
    netlists = all_netlists() if netlists is None else netlists
    strategies = list(STRATEGIES) if strategies is None else strategies
    return [netlist_row(n, s, compile=compile) for n in netlists for s in strategies]


def _gates_text(gates: dict) -> str:
    return f"{sum(gates.values())} (" + " ".join(f"{k}{op}" for op, k in gates.items()) + ")"


def render_netlist_table(rows: list[dict]) -> str:
    head = ["netlist", "gates", "strategy", "ops", "instr", "copies", "spills", "reloads",
            "nots", "max_live", "regs", "compiled", "ok", "no_0x63"]
    table = [head]
    for r in rows:
        c = r["compiled"]
        compiled = "-" if c is None else "FAILED" if c is False else str(c)
        table.append([r["netlist"], _gates_text(r["gates"]), r["strategy"],
                      str(r["operations"]), str(r["instructions"]), str(r["copies"]),
                      str(r["spills"]), str(r["reloads"]), str(r["nots"]),
                      str(r["max_live"]), str(r["registers"]), compiled,
                      "yes" if r["verified"] else "NO", str(r["no_constant"])])
    widths = [max(len(row[i]) for row in table) for i in range(len(head))]
    lines = []
    for k, row in enumerate(table):
        lines.append("  ".join(cell.ljust(w) if i < 3 else cell.rjust(w)
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
    return "\n".join(lines)


if __name__ == "__main__":
    print(render_netlist_table(netlist_report()))
