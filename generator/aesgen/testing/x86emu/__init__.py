"""A test-only x86-64 interpreter of the GNU assembler text (AT&T syntax) aesgen prints.

It runs the committed ``.S`` kernels on machines that lack the instructions they use (the
zmm, GFNI and VAES kernels on a CPU without AVX-512 or GFNI), so their outputs can be
checked against the Python model anywhere. It reads the assembly *text*, not machine code:

    prog = Program.parse(Path("generated/znver4/vaes512_face_none.S").read_text())
    m = Machine(prog)
    ctx = m.alloc(384)                      # 64-byte aligned region
    key = m.alloc(b"\\x00" * 16)
    assert m.call("aesgen_vaes512_face_none_init", ctx, key, 16, iv) == 0

Memory is made of explicitly allocated regions with unmapped gaps between them: every
access outside a region (a read past a buffer, a write into read-only data) raises
:class:`MemoryFault` naming the instruction, its source line and the address. EVEX masked
loads and stores touch only the bytes of their enabled elements (fault suppression), so a
masked tail that reads past the end of a buffer is legal only when the mask covers it.

Semantics kept exactly: AT&T operand order (sources first, destination last); VEX and
EVEX forms zero the destination above the operand width (to bit 511), legacy SSE forms
keep those bits; merging ``{%kN}`` and zeroing ``{%kN}{z}`` masks with the element size of
the mnemonic; per-128-bit-lane shuffles, AES rounds, carry-less multiplies; lazily
computed rflags (CF, ZF, SF, OF, PF) for jcc, cmov, setcc, adc and sbb. Instructions are
decoded once into Python closures (on first execution, or all at once by
:meth:`Program.decode_all`); anything not implemented raises
:class:`UnsupportedInstruction` rather than being skipped.

Sources for the instruction semantics: Intel SDM vol. 2 (the per-instruction
"Operation" sections), as summarised at felixcloutier.com/x86.

The parts, each importing at run time only those listed before it (``errors`` and
``decoder`` name :class:`Insn` and :class:`Program` in type hints only):

- ``errors``: the exceptions;
- ``layout``: the address-space layout;
- ``semantics``: pure functions on ints (flags, AES, carry-less multiply, GF(2^8),
  shuffles, masks);
- ``operands``: registers, operand parsing, :class:`Insn`;
- ``decoder``: the decode-time context (operand readers and writers);
- ``scalar`` and ``vector``: the handlers of the general-purpose and the vector instructions;
- ``program``: :class:`Program`, the text read, its instructions decoded on first use;
- ``machine``: :class:`Machine`, registers, memory, call and run.
"""
from . import semantics
from .errors import (EmulatorError, ExecutionError, MemoryFault, ParseError,
                     UnsupportedInstruction)
from .machine import Machine
from .operands import Insn
from .program import Program

__all__ = ["EmulatorError", "ParseError", "UnsupportedInstruction", "MemoryFault",
           "ExecutionError", "Program", "Machine", "Insn"]

# the reference carry-less product, which tests import from here (not in __all__, as before)
clmul_reference = semantics.clmul_reference
