"""Gate netlists for bit-sliced S-boxes: data, evaluation, derivation, lowering, counts.

    format.py    Gate, Netlist, the .net text format (parse, print, structural check)
    evaluate.py  bit-sliced evaluation over all 256 inputs; check_sbox
    library/     S-box circuits as .net files (bp113: Boyar-Matthews-Peralta; tower: derived)
    derive.py    tower-field derivation and XOR sharing that produced library/tower.net
    schedule.py  orders that keep few values live / let gates overwrite dying operands
    cover.py     covers by 3-input cones (VPTERNLOGD, NEON BSL/EOR3/BCAX)
    lower.py     strategies two_operand, three_operand, ternary, neon, neon_sha3: machine
                 code over virtual registers with copies and spills, and its interpreter;
                 chosen by instruction count, or (two_operand) by the timing model
    timing.py    an out-of-order core model: cycles a round of the bit-sliced SSE loop
    emit.py      x86 strategies through the DSL and the real compile passes; an
                 interpreter of the compiled function
    isa.py       the AND/OR/AND-NOT instruction forms the shared table lacks
    report.py    netlist_report() rows and render_netlist_table()

Bit order everywhere: input wire 0 is the most significant bit of the S-box input byte,
output wire 0 the most significant bit of the output byte.
"""
