"""neon-tbl (kernels/a64/neon_tbl.py): AArch64 AES-CTR without the Crypto Extension.

Static checks (no AES/PMULL instruction, the constants, the transposed layout in Python) run
everywhere; the run test cross-builds the no-crypto set (neon-tbl at FACE none/r1/r2, AES-128/
192/256) with tests/aarch64_driver.c and feeds it tests/test_aarch64_backend.py's script (edge
counters: mid-window starts, window crossings, 2^32/2^40/2^64 carries, the 2^128 wrap, zero
length, partial blocks, split streams, set_iv keeping/invalidating the tables, re-key, a
refused key length, wipe) under qemu-aarch64, against aesgen.model.
"""
from __future__ import annotations

import re
import struct
import subprocess

import pytest
from test_aarch64_backend import A64_PRESETS, CC, HERE, QEMU, check_dump, need, script

from aesgen.emit.compile import compile_kernel
from aesgen.emit.generate import GenerateRequest, render_set
from aesgen.kernels.a64.neon_tbl import (KEY_ROWS, ROW_BYTES, ROW_INDEX, SR_INDEX,
                                         NeonTblEngine)
from aesgen.kernels.spec import KernelSpec
from aesgen.model.aes import SBOX, expand_key, shift_rows

FACES = ("none", "r1", "r2")
FORBIDDEN = re.compile(r"^\s*(aese|aesmc|aesd|aesimc|pmull2?|eor3|bcax)\b", re.M)


@pytest.mark.parametrize("face", FACES)
def test_no_crypto_instruction_and_tbl_sbox(face):
    ck = compile_kernel(KernelSpec("neon-tbl", face, (128, 192, 256), 4, "neon"))
    assert ck.features == ("ASIMD",)
    assert ck.constant_time
    for entry, text in ck.texts.items():
        assert not FORBIDDEN.search(text), f"{entry}: {FORBIDDEN.search(text).group(0)}"
        assert "armv8-a+crypto" not in text
    xs = ck.texts["xor_stream"]
    # S-box: 1 tbl + 3 tbx (4-register tables) per register, never in the general registers
    assert len(re.findall(r"\btbx\t", xs)) == 3 * len(re.findall(
        r"\btbl\tv\d+\.16b, \{v\d+\.16b, v\d+\.16b, v\d+\.16b, v\d+\.16b\}", xs))
    assert not re.search(r"\bldrb\tw\d+, \[x\d+, w", xs)
    assert len(ck.texts["init"].split("tbx")) > 1      # SubWord by TBL/TBX too


def test_constants():
    state = bytes(range(16))
    assert bytes(state[i] for i in SR_INDEX) == shift_rows(state)
    rk = bytes(range(100, 116))
    rows = bytes(rk[i] for i in ROW_INDEX)
    for r in range(4):
        for c in range(4):
            for blk in range(4):
                assert rows[16 * r + 4 * c + blk] == rk[4 * c + r]
    assert KEY_ROWS == 15 * ROW_BYTES


def _transposed_rows(rk: bytes, combined: bool) -> bytes:
    """Round key rows for lanes 4c + b; rounds 1..nr-1 store K0, K0^K1, K2, K2^K3."""
    rows = [bytes(rk[4 * c + r] for c in range(4) for _ in range(4)) for r in range(4)]
    if combined:
        rows[1] = bytes(x ^ y for x, y in zip(rows[0], rows[1]))
        rows[3] = bytes(x ^ y for x, y in zip(rows[2], rows[3]))
    return b"".join(rows)


def check_context(ctx: bytes, face: str, check, key: bytes, iv: bytes, offset: int) -> None:
    """The shared layout (FIPS round keys, counter), neon-tbl's rows area, and the FACE state
    in this engine's domain D_r = s_r: caches equal the x86 ones."""
    rk = expand_key(key)
    assert ctx[:16 * len(rk)] == b"".join(rk), "round keys differ from FIPS-197"
    extra = len(ctx) - KEY_ROWS
    want_rows = b"".join(_transposed_rows(k, 0 < i < len(rk) - 1) for i, k in enumerate(rk))
    assert ctx[extra:extra + len(want_rows)] == want_rows, "transposed key rows"
    check_dump(ctx, face, check, key, iv, offset, ce_domain=False)


@pytest.mark.parametrize("shortcuts", [True, False])
def test_kernels_run_under_qemu(tmp_path, monkeypatch, shortcuts):
    """With the engine's in-register hand-overs between calls (rows kept for a continuing
    call, the keystream for last_round) and without them (every call transposes, the last
    round per pair in byte order)."""
    need(CC, QEMU)
    if not shortcuts:
        monkeypatch.setattr(NeonTblEngine, "_take", staticmethod(lambda *args: None))
    prefix = "ntbl_"
    preset = A64_PRESETS["no-crypto"]
    files = render_set(GenerateRequest(preset, ("neon-tbl",), FACES, (128, 192, 256), prefix,
                                       f"test_neon_tbl shortcuts={shortcuts}"))
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    exe = tmp_path / "driver"
    sources = [n for n in files if n.endswith((".S", ".c"))]
    proc = subprocess.run([CC, "-static", "-O1", f"-DPREFIX={prefix}", "-I", str(tmp_path),
                           "-o", str(exe), str(HERE / "aarch64_driver.c"), *sources],
                          cwd=tmp_path, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    sc = script()
    run = subprocess.run([QEMU, "-cpu", "max", str(exe)], input=sc.end(),
                         capture_output=True, timeout=180)
    assert run.returncode == 0, run.stderr.decode()
    out = memoryview(run.stdout)
    _, best = struct.unpack_from("<QI", out, 0)
    pos, names = 12, []
    while pos < len(out):
        (n,) = struct.unpack_from("<I", out, pos)
        name = bytes(out[pos + 4:pos + 4 + n]).decode()
        pos += 4 + n
        names.append(name)
        face = name.rsplit("-", 1)[1]
        ours = name.startswith("neon-tbl-")     # other methods of the set: parsed, not checked
        for i, (op, expected, extra) in enumerate(sc.steps):
            where = f"{name} step {i} ({op})"
            if op in ("init", "set_iv"):
                (rc,) = struct.unpack_from("<i", out, pos)
                pos += 4
                assert rc == expected, where
            elif op == "xor":
                got = bytes(out[pos:pos + len(expected)])
                pos += len(expected)
                assert got == expected, f"{where}: first bad byte " + str(next(
                    j for j in range(len(got)) if got[j] != expected[j]))
                assert out[pos] == 1, f"{where}: bytes outside the buffers changed"
                pos += 1
            elif op == "wipe":
                assert out[pos] == 1, f"{where}: context not zeroed"
                pos += 1
            elif op == "dump":
                (size,) = struct.unpack_from("<I", out, pos)
                ctx = bytes(out[pos + 4:pos + 4 + size])
                pos += 4 + size
                if not ours:
                    continue
                try:
                    check_context(ctx, face, *extra)
                except AssertionError as e:
                    raise AssertionError(f"{where}: {e}") from None
    assert names == [f"neon-tbl-face-{f}" for f in FACES]
    assert names[best] == "neon-tbl-face-r2"


def test_sbox_table_is_the_fips_one():
    ck = compile_kernel(KernelSpec("neon-tbl", "none", (128,), 4, "neon"))
    text = ck.texts["xor_stream"]
    m = re.search(r"_sbox:\n((?:\t\.byte\t.*\n){16})", text)
    assert m, "S-box constant"
    got = bytes(int(x, 16) for line in m.group(1).splitlines()
                for x in line.split("\t")[-1].split(", "))
    assert got == bytes(SBOX)
