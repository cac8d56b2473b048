"""neon-bitsliced (kernels/a64/neon_bitsliced.py): AArch64 AES-CTR on 8 bit-sliced blocks.

Static checks (no AES/PMULL instruction, the layout algebra and the 4-instruction SWAPMOVE
network in Python, the bit-sliced round keys) run everywhere; the run tests cross-build a set
of the six neon-bitsliced kernels of one encoding (neon from cortex-a53, neon-sha3 from
apple-m1: FACE none/r1/r2, AES-128/192/256) with tests/aarch64_driver.c and feed it
tests/test_aarch64_backend.py's script (mid-window starts, window crossings, 2^32/2^40/2^64
carries, the 2^128 wrap, zero length, partial blocks, split streams, set_iv keeping and
invalidating the tables, re-key, a refused key length, wipe) under qemu-aarch64 -cpu max,
against aesgen.model.
"""
from __future__ import annotations

import functools
import random
import re
import struct
import subprocess

import pytest
from test_aarch64_backend import A64_PRESETS, CC, HERE, QEMU, check_dump, need, script

from aesgen.emit.compile import compile_kernel
from aesgen.emit.generate import GenerateRequest, render_set
from aesgen.kernels import ctx_layout as L
from aesgen.kernels import slice_layout as S
from aesgen.kernels.a64 import neon_bitsliced as N
from aesgen.kernels.spec import KernelSpec
from aesgen.model.aes import encrypt_block, expand_key, sub_bytes, xtime

FACES = ("none", "r1", "r2")
FORBIDDEN = re.compile(r"^\s*(aese|aesmc|aesd|aesimc|pmull2?)\b", re.M)
SHA3 = re.compile(r"^\s*(eor3|bcax)\b", re.M)


@functools.cache
def kernel(face: str, encoding: str):
    return compile_kernel(KernelSpec("neon-bitsliced", face, (128, 192, 256), 8, encoding))


@pytest.mark.parametrize("encoding", ["neon", "neon-sha3"])
@pytest.mark.parametrize("face", FACES)
def test_no_aes_instruction(face, encoding):
    ck = kernel(face, encoding)
    assert ck.constant_time
    assert ck.features == (("ASIMD", "SHA3") if encoding == "neon-sha3" else ("ASIMD",))
    for entry, text in ck.texts.items():
        assert not FORBIDDEN.search(text), f"{entry}: {FORBIDDEN.search(text).group(0)}"
        assert "+crypto" not in text or encoding == "neon-sha3"
        assert bool(SHA3.search(text)) == (encoding == "neon-sha3" and
                                           entry in ("init", "xor_stream")), entry
    # secret data never forms an address: vector loads only from ctx/constants/pointers
    assert not re.search(r"\bldrb?\tw\d+, \[x\d+, w", ck.texts["xor_stream"])


def test_layout_algebra_matches_aes():
    """Rounds on bytes in the drifting layouts pi_r (no ShiftRows, TBL rotations, keys in
    their round's layout) give FIPS-197 AES for every origin: the FACE levels (NEON) and
    the last round (x86)."""
    rng = random.Random(5)
    for bits in (128, 192, 256):
        for level in (0, 1, 2, "last"):
            key = bytes(rng.randrange(256) for _ in range(bits // 8))
            rk = expand_key(key)
            nr = len(rk) - 1
            origin = nr if level == "last" else level
            block = bytes(rng.randrange(256) for _ in range(16))
            p = S.apply(S.layout(0, origin), [x ^ y for x, y in zip(block, rk[0])])
            for r in range(1, nr + 1):
                pi = S.layout(r, origin)
                p = list(sub_bytes(bytes(p)))
                if r < nr:
                    ra = S.apply(S.rotation(S.ROT1, pi), p)
                    t = [x ^ y for x, y in zip(p, ra)]
                    rt = S.apply(S.rotation(S.ROT2, pi), t)
                    p = [xtime(t[q]) ^ ra[q] ^ rt[q] for q in range(16)]
                p = [x ^ y for x, y in zip(p, S.apply(pi, list(rk[r])))]
            assert bytes(S.apply(S.inverse(S.layout(nr, origin)), p)) == \
                encrypt_block(key, block)


def test_swapmove_network_transposes():
    rng = random.Random(6)
    regs = [[rng.randrange(256) for _ in range(16)] for _ in range(8)]
    orig = [r[:] for r in regs]
    for n, mask, pairs in S.SWAPMOVES:
        for hi, lo in pairs:
            a, c = regs[hi], regs[lo]
            t1, t2 = [v >> n for v in c], [(v << n) & 255 for v in a]
            regs[hi] = [(x & ~mask & 255) | (t & mask) for x, t in zip(a, t1)]   # BIT
            regs[lo] = [(x & mask) | (t & ~mask & 255) for x, t in zip(c, t2)]   # BIF
    for i in range(8):
        for q in range(16):
            for j in range(8):
                assert (regs[i][q] >> j) & 1 == (orig[j][q] >> i) & 1


def _key_slices(rk: list[bytes], origin: int, constant: int) -> bytes:
    out = bytearray()
    for r in range(1, len(rk)):
        k = S.apply(S.layout(r, origin), list(rk[r]))
        for i in range(8):
            out += bytes(0xFF if (k[q] >> i ^ constant >> i) & 1 else 0 for q in range(16))
    return bytes(out)


def check_context(ctx: bytes, face: str, check, key: bytes, iv: bytes, offset: int) -> None:
    """FIPS round keys, the bit-sliced ones in the extra area, the counter, and the FACE state
    in this engine's domain D_r = s_r (caches equal the x86 ones)."""
    rk = expand_key(key)
    assert ctx[:16 * len(rk)] == b"".join(rk), "round keys differ from FIPS-197"
    extra = L.layout_for(face).size
    want = _key_slices(rk, N.ORIGIN[face], 0x63)
    got = ctx[extra + 128:extra + 128 + len(want)]
    assert got == want, "bit-sliced round keys"
    check_dump(ctx, face, check, key, iv, offset, ce_domain=False)


@pytest.mark.parametrize("preset, encoding", [("cortex-a53", "neon"),
                                              ("apple-m1", "neon-sha3")])
def test_kernels_run_under_qemu(preset, encoding, tmp_path):
    need(CC, QEMU)
    p = A64_PRESETS[preset]
    assert p.method("neon-bitsliced").encoding == encoding
    prefix = "nbs_"
    files = render_set(GenerateRequest(p, ("neon-bitsliced",), FACES, (128, 192, 256), prefix,
                                       f"aesgen generate --cpu {preset}"))
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    exe = tmp_path / "driver"
    sources = [n for n in files if n.endswith((".S", ".c"))]
    proc = subprocess.run([CC, "-static", "-O1", f"-DPREFIX={prefix}", "-I", str(tmp_path),
                           "-o", str(exe), str(HERE / "aarch64_driver.c"), *sources],
                          cwd=tmp_path, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    sc = script()
    run = subprocess.run(["qemu-aarch64", "-cpu", "max", str(exe)], input=sc.end(),
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
                try:
                    check_context(ctx, face, *extra)
                except AssertionError as e:
                    raise AssertionError(f"{where}: {e}") from None
    assert names == [f"neon-bitsliced-face-{f}" for f in FACES]
    assert names[best] == "neon-bitsliced-face-r2"
