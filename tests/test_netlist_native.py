"""Assemble the compiled S-box functions with gcc and run them on this CPU (ctypes).

Each x86 lowering of each library netlist (two_operand both by count and by the timing
model) is printed by the project's GNU-as printer, linked into a shared library and called
on bit-sliced buffers holding all 256 input bytes; its outputs are compared with the AES
S-box. A strategy whose ISA this CPU lacks is skipped with the feature named.
"""
from __future__ import annotations

import ctypes
import functools
import shutil
import subprocess
from pathlib import Path

import pytest

from aesgen.printer.flavours import ELF_X86_64_NOTES as ELF_NOTES
from aesgen.netlist import library
from aesgen.netlist.emit import ENCODING, compile_lowering, symbol_for
from aesgen.netlist.evaluate import INPUTS, check_outputs
from aesgen.netlist.lower import lower
from aesgen.netlist.report import objectives
from aesgen.printer.gas_x86_64 import print_function

CPU_FLAG = {"two_operand": "sse2", "three_operand": "avx2", "ternary": "avx512f"}


@functools.cache
def cpu_flags() -> frozenset[str]:
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("flags"):
            return frozenset(line.split(":", 1)[1].split())
    return frozenset()


def aligned(size: int) -> tuple[ctypes.Array, int]:
    buf = ctypes.create_string_buffer(size + 64)
    return buf, (ctypes.addressof(buf) + 63) & ~63


@pytest.mark.parametrize("strategy,objective", [(s, o) for s in ENCODING for o in objectives(s)])
@pytest.mark.parametrize("name", library.names())
def test_native_sbox(name, strategy, objective, tmp_path):
    if CPU_FLAG[strategy] not in cpu_flags():
        pytest.skip(f"this CPU has no {CPU_FLAG[strategy]}")
    if shutil.which("gcc") is None:
        pytest.skip("gcc is not installed")
    low = lower(library.load(name), strategy, objective)
    compiled = compile_lowering(low)
    assert compiled.ok, compiled.error
    src = tmp_path / "sbox.S"
    src.write_text(print_function(compiled.function) + ELF_NOTES)
    so = tmp_path / "libsbox.so"
    proc = subprocess.run(["gcc", "-shared", "-fPIC", "-o", str(so), str(src)],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    fn = getattr(ctypes.CDLL(str(so)), symbol_for(low))
    fn.restype = None
    fn.argtypes = [ctypes.c_void_p] * 3

    width = ENCODING[strategy][1]
    nbytes = width // 8
    lanes = (1 << width) - 1
    outputs = [0] * 8
    # a register holds `width` lanes: run the 256 inputs through in chunks of that many
    for start in range(0, 256, min(width, 256)):
        chunk = min(width, 256)
        buf_in, p_in = aligned(8 * nbytes)
        buf_out, p_out = aligned(8 * nbytes)
        buf_scratch, p_scratch = aligned(max(1, low.scratch_slots) * nbytes)
        for i, vec in enumerate(INPUTS):
            lane = (vec >> start) & ((1 << chunk) - 1)
            ctypes.memmove(p_in + i * nbytes, (lane & lanes).to_bytes(nbytes, "little"), nbytes)
        fn(p_in, p_out, p_scratch)
        for i in range(8):
            got = int.from_bytes(ctypes.string_at(p_out + i * nbytes, nbytes), "little")
            outputs[i] |= (got & ((1 << chunk) - 1)) << start
    result = check_outputs(f"{name}/{strategy}/{objective}/native", outputs)
    assert result, result.describe()
