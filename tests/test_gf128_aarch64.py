"""The AArch64 hash engines (gf128/aarch64/), run under qemu-aarch64 against the Python
model of the multiply they lower (gf128/x86_64/clmul.py: dot and hash_key, themselves
checked against GHASH's bit-by-bit definition in test_gcm_kernels.py), before a GCM kernel
trusts them: test functions built from each engine's operations are cross-assembled with a
small driver, and random keys and blocks (and the extremes) go through them in one qemu run.
"""
from __future__ import annotations

import random
import subprocess

import pytest
from test_aarch64_backend import CC, QEMU, need

from aesgen.arch.aarch64.scalar import A64Scalar
from aesgen.dsl.builder import KernelBuilder
from aesgen.dsl.operands import Mem
from aesgen.emit.compile import TARGETS
from aesgen.gf128.aarch64.pmull import PmullHash
from aesgen.gf128.x86_64 import clmul
from aesgen.isa.table import load_table
from aesgen.passes import compile_function

SEED = 8452
DRIVER = r"""
#include <stdint.h>
#include <stdio.h>
void t_dot(uint8_t *out, const uint8_t *h, const uint8_t *x);
void t_dot_karatsuba(uint8_t *out, const uint8_t *h, const uint8_t *x);
int main(void) {
  uint8_t h[16], x[16], out[32];
  while (fread(h, 1, 16, stdin) == 16 && fread(x, 1, 16, stdin) == 16) {
    t_dot(out, h, x);
    fwrite(out, 1, 32, stdout);
    t_dot_karatsuba(out, h, x);
    fwrite(out, 1, 32, stdout);
  }
  return 0;
}
"""


def _pmull_function(name: str, karatsuba: bool) -> str:
    """name(out, h, x): out[16..32) = H~ of the block h, out[0..16) = dot(x, H~) for x in
    hash order, schoolbook or Karatsuba."""
    abi, print_function = TARGETS["aarch64"]
    isa = A64Scalar()
    b = KernelBuilder(load_table("aarch64"), name)
    isa.entry(b)
    out, hp, xp = isa.args(b, 3)
    g = PmullHash(b)
    h, x = b.vec(128), b.vec(128)
    b.asm.ldr(h.q, Mem(128, base=hp))
    ht = g.hash_key(h)
    b.asm.str(ht.q, Mem(128, base=out, disp=16))
    b.asm.ldr(x.q, Mem(128, base=xp))
    r = g.dot(x, ht, g.karatsuba_key(ht) if karatsuba else None)
    b.asm.str(r.q, Mem(128, base=out))
    isa.ret(b)
    return print_function(compile_function(b.build(), abi))


def test_pmull_engine_against_the_model(tmp_path) -> None:
    need(CC, QEMU)
    text = _pmull_function("t_dot", False) + _pmull_function("t_dot_karatsuba", True)
    assert "pmull2\tv" in text and "pmull\tv" in text
    (tmp_path / "k.S").write_text("\t.arch armv8-a+crypto\n" + text)
    (tmp_path / "d.c").write_text(DRIVER)
    subprocess.run([CC, "-static", "-O1", "-o", str(tmp_path / "t"), str(tmp_path / "d.c"),
                    str(tmp_path / "k.S")], check=True, capture_output=True)
    rng = random.Random(SEED)
    cases = [(rng.randbytes(16), rng.randbytes(16)) for _ in range(2000)]
    cases += [(bytes(16), bytes(16)), (b"\xff" * 16, b"\xff" * 16),
              (b"\x01" + bytes(15), bytes(15) + b"\x80"), (b"\x80" + bytes(15), b"\x01" * 16)]
    out = subprocess.run([QEMU, "-cpu", "max", str(tmp_path / "t")],
                         input=b"".join(h + x for h, x in cases), capture_output=True,
                         check=True).stdout
    assert len(out) == 64 * len(cases)
    for i, (h, x) in enumerate(cases):
        ht = clmul.hash_key(h)
        want = clmul.dot(int.from_bytes(x, "little"), ht)
        for j, form in enumerate(("schoolbook", "karatsuba")):
            rec = out[64 * i + 32 * j:64 * i + 32 * j + 32]
            assert int.from_bytes(rec[16:], "little") == ht, (form, h.hex())
            assert int.from_bytes(rec[:16], "little") == want, (form, h.hex(), x.hex())


@pytest.mark.parametrize("karatsuba", [False, True])
def test_pmull_engine_needs_pmull_and_no_branch(karatsuba) -> None:
    text = _pmull_function("t", karatsuba)
    assert "// Requires: ASIMD, PMULL" in text
    body = [line.split()[0] for line in text.splitlines()
            if line.startswith("\t") and not line.startswith("\t.")]
    assert not [op for op in body if op.startswith(("b", "cb", "tb")) and op != "bic"]


def test_committed_aarch64_sets_have_armv8_ce_gcm_on_pmull() -> None:
    """Every committed AArch64 set whose preset has armv8-ce lists its GCM AEADs at every
    FACE level, hashed by PMULL, constant time, with AESE and PMULL/PMULL2 in their files;
    a set without the Crypto Extension lists none (its constant-time GHASH is to come)."""
    import json

    from aesgen.paths import GENERATED
    from aesgen.targets import find_preset

    checked = 0
    for manifest in sorted(GENERATED.glob("*/manifest.json")):
        preset = find_preset(manifest.parent.name)
        if preset.arch != "aarch64":
            continue
        aeads = json.loads(manifest.read_text())["aeads"]
        if preset.method("armv8-ce") is None:
            assert aeads == [], manifest.parent.name
            continue
        assert [a["name"] for a in aeads] == [f"armv8-ce-gcm-{f}" for f in ("none", "r1", "r2")]
        for a in aeads:
            assert a["hash"] == "pmull" and a["constant_time"] is True
            assert a["features"] == ["ASIMD", "AES", "PMULL"]
            text = (manifest.parent / a["file"]).read_text()
            for op in ("aese", "aesmc", "pmull", "pmull2", "bl"):
                assert f"\t{op}\t" in text, (a["name"], op)
            assert "// paciasp" in text and "// autiasp" in text, a["name"]
            checked += 1
    assert checked >= 2, checked


def test_pmull8_model_is_the_carryless_multiply() -> None:
    """The constant-time multiply for NEON without the Crypto Extension (gf128/pmull8.py):
    eight PMULL.8b of byte rotations make the 64x64 carry-less product, and the reduction's
    constant is three shifts: 3000 random pairs and the extremes against clmul's model."""
    from aesgen.gf128 import pmull8

    def clmul(x: int, y: int) -> int:
        r = 0
        for i in range(64):
            if y >> i & 1:
                r ^= x << i
        return r

    rng = random.Random(SEED + 1)
    pairs = [(rng.getrandbits(64), rng.getrandbits(64)) for _ in range(3000)]
    pairs += [(0, 0), (2**64 - 1, 2**64 - 1), (1, 2**63), (0x80 << 56, 0xFF)]
    for a, b in pairs:
        assert pmull8.clmul64(a, b) == clmul(a, b), (hex(a), hex(b))
        assert pmull8.times_reduction_constant(a) == clmul(a, 0xC2 << 56), hex(a)
    assert pmull8.pmull8(0xFF, 0xFF) == 0x5555       # (x^7 + .. + 1)^2 = sum of even powers
