"""The compile pipeline: an ordered list of passes over a Function, read top to bottom.

COMPILE = [verify_structure, allocate_registers, insert_frame, drop_self_moves,
           required_features]
Each pass takes a Function and an AbiSpec and returns a new Function (or the same one).
"""
from __future__ import annotations

from ..dsl.ir import Function
from .abi import AbiSpec
from .features import required_features
from .frame import drop_self_moves, insert_frame
from .regalloc import allocate_registers
from .verify import verify_structure

COMPILE = [
    verify_structure,     # labels defined once, jumps land, no fall-off at the end
    allocate_registers,   # liveness over the CFG, interference, deterministic colouring
    insert_frame,         # save/restore callee-saved registers, scrub vectors at exits
    drop_self_moves,      # `mov %rax, %rax` left by coalescing
    required_features,    # ISA extensions the final instruction list needs
]


def compile_function(function: Function, abi: AbiSpec) -> Function:
    for compile_pass in COMPILE:
        function = compile_pass(function, abi)
    return function
