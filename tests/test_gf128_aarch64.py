"""The AArch64 hash engines (gf128/aarch64/), run under qemu-aarch64 against the Python
model of the multiply they lower (gf128/x86_64/clmul.py: dot and hash_key, themselves
checked against GHASH's bit-by-bit definition in test_gcm_kernels.py), before a GCM kernel
trusts them: test functions built from each engine's operations are cross-assembled with a
small driver, and random keys and blocks (and the extremes) go through them in one qemu run.
The engine without the Crypto Extension (PMULL.8b, gf128/aarch64/pmull8.py) is checked
the same way, and its Python model (gf128/pmull8.py) against clmul's first.
"""
from __future__ import annotations

import random
import re
import subprocess

import pytest
from test_aarch64_backend import CC, QEMU, need

from aesgen.arch.aarch64.scalar import A64Scalar
from aesgen.dsl.builder import KernelBuilder
from aesgen.dsl.operands import Mem
from aesgen.emit.compile import PRINTERS
from aesgen.passes.abi import AAPCS64
from aesgen.gf128.aarch64.pmull import PmullHash
from aesgen.gf128.aarch64.pmull8 import Pmull8Hash
from aesgen.gf128.aarch64.pmull8 import fields as pmull8_fields
from aesgen.gf128.x86_64 import clmul
from aesgen.isa.table import load_table
from aesgen.kernels.a64.schedule import Latencies
from aesgen.kernels.fields import FieldLayout
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
    abi, print_function = AAPCS64, PRINTERS["aarch64"]
    isa = A64Scalar()
    b = KernelBuilder(load_table("aarch64"), name)
    isa.entry(b)
    out, hp, xp = isa.args(b, 3)
    g = PmullHash(b, None, 1, karatsuba)
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


NEON_METHODS = ("neon-tbl", "neon-bitsliced")


def test_committed_aarch64_sets_have_gcm_for_every_method() -> None:
    """Every committed AArch64 set lists GCM AEADs for each of its methods at every FACE
    level, constant time: armv8-ce hashed by PMULL (AESE and PMULL/PMULL2 in its files, EOR3
    where the preset has FEAT_SHA3),
    neon-tbl and neon-bitsliced by PMULL.8b with no feature beyond Advanced SIMD (and
    FEAT_SHA3 for the neon-sha3 encoding), so they run where their CTR kernels run."""
    import json

    from aesgen.paths import GENERATED
    from aesgen.targets import find_preset

    checked = set()
    for manifest in sorted(GENERATED.glob("*/manifest.json")):
        preset = find_preset(manifest.parent.name)
        if preset.arch != "aarch64":
            continue
        doc = json.loads(manifest.read_text())
        methods = [m.method for m in preset.methods]
        gcm = [a for a in doc["aeads"] if a["mode"] == "gcm"]
        assert [a["name"] for a in gcm] == [f"{m}-gcm-{f}" for m in methods
                                            for f in ("none", "r1", "r2")]
        ctr_features = {k["method"]: k["features"] for k in doc["kernels"]}
        for a in gcm:
            assert a["constant_time"] is True, a["name"]
            text = (manifest.parent / a["file"]).read_text()
            assert "// paciasp" in text and "// autiasp" in text, a["name"]
            if a["method"] == "armv8-ce":
                assert a["hash"] == "pmull"
                sha3 = "SHA3" in preset.features
                # with FEAT_SHA3 the last round key and the data go in one EOR3
                assert a["features"] == ["ASIMD", "AES", "PMULL"] + (["SHA3"] if sha3 else [])
                ops = ("aese", "aesmc", "pmull", "pmull2", "bl") + (("eor3",) if sha3 else ())
            else:
                assert a["hash"] == "pmull8", a["name"]
                assert a["features"] == ctr_features[a["method"]], a["name"]
                assert not {"AES", "PMULL"} & set(a["features"]), a["name"]
                ops = ("pmull", "pmull2", "bl")
            for op in ops:
                assert f"\t{op}\t" in text, (a["name"], op)
            checked.add(a["method"])
    assert checked == {"armv8-ce", *NEON_METHODS}, checked


def test_committed_aarch64_sets_have_gcm_siv_with_the_crypto_extension() -> None:
    """Every committed AArch64 set with armv8-ce lists armv8-ce-gcm-siv, POLYVAL by PMULL
    (AESE and PMULL/PMULL2 in its file), constant time; a set without the Crypto Extension
    has no GCM-SIV (no constant-time POLYVAL without a 64-bit carry-less multiply yet)."""
    import json

    from aesgen.paths import GENERATED
    from aesgen.targets import find_preset

    seen = 0
    for manifest in sorted(GENERATED.glob("*/manifest.json")):
        preset = find_preset(manifest.parent.name)
        if preset.arch != "aarch64":
            continue
        doc = json.loads(manifest.read_text())
        siv = [a for a in doc["aeads"] if a["mode"] == "gcm-siv"]
        if "armv8-ce" not in [m.method for m in preset.methods]:
            assert siv == [], manifest.parent.name
            continue
        (a,) = siv
        assert (a["name"], a["hash"], a["constant_time"]) == ("armv8-ce-gcm-siv", "pmull", True)
        assert sorted(a["instruction_counts"]["steady_state"]) == ["128", "256"]   # no 192
        assert (a["counter"], a["nonce_bytes"], a["tag_bytes"]) == ("le32", [12, 12], [16, 16])
        text = (manifest.parent / a["file"]).read_text()
        for op in ("aese", "aesmc", "pmull", "pmull2", "tbl"):
            assert f"\t{op}\t" in text, op
        seen += 1
    assert seen >= 2


def test_pmull_in_polyval_order_takes_blocks_and_h_as_they_are() -> None:
    """PmullHash(polyval=True) (RFC 8452's POLYVAL, for GCM-SIV): a block is one LDR, no
    byte reversal; the key is H itself (no H~ doubling); the multiply and reduction are the
    GHASH engine's (the GCM-SIV kernels' tests run them against RFC 8452)."""
    b = KernelBuilder(load_table("aarch64"), "t")
    g = PmullHash(b, None, 1, False, polyval=True)
    h, x = b.vec(128), b.vec(128)
    assert g.hash_key(h) is h and not b.function.body
    ptr = A64Scalar().args(b, 1)[0]
    before = len(b.function.body)
    g.load_block(x, Mem(128, base=ptr))
    assert [ins.name for ins in b.function.body[before:]] == ["ldr"]
    ghash = PmullHash(KernelBuilder(load_table("aarch64"), "u"), None, 1, False)
    assert ghash.hash_key(h) is not h


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


def test_pmull8_batch_arithmetic_is_ghash() -> None:
    """gf128/pmull8.py's batch, step for step as the lowering runs it (rotated keys, sums
    per rotation spread once, Karatsuba, the folds by shifts), is GHASH's aggregated Horner
    step: 600 random keys and batches of 1..8 blocks against clmul.dot block by block; and
    the spread by byte shifts is the lane split of clmul64."""
    from aesgen.gf128 import pmull8

    rng = random.Random(SEED + 2)
    for _ in range(600):
        ht = clmul.hash_key(rng.randbytes(16))
        n = rng.randint(1, 8)
        keys = [ht]
        for _ in range(n - 1):
            keys.append(clmul.dot(keys[-1], ht))
        x, blocks = rng.getrandbits(128), [rng.getrandbits(128) for _ in range(n)]
        want = x
        for blk in blocks:
            want = clmul.dot(want ^ blk, ht)
        assert pmull8.dot_sum(x, blocks, keys[::-1]) == want, (n, hex(ht))
    for _ in range(300):
        p, k = rng.getrandbits(128), rng.randint(1, 7)
        m = pmull8.low_lanes_mask(k)
        assert pmull8.spread(p, k) == ((p & m) << 8 * k) ^ ((p & ~m) >> (64 - 8 * k)), k


PMULL8_POWERS = 8
PMULL8_LAYOUT = FieldLayout.build(pmull8_fields(PMULL8_POWERS))
PMULL8_DRIVER = r"""
#include <stdint.h>
#include <stdio.h>
#include <string.h>
void t_setup(uint8_t *ctx, const uint8_t *h);
void t_absorb8(uint8_t *ctx, uint8_t *io);
void t_absorb3(uint8_t *ctx, uint8_t *io);
void t_absorb1(uint8_t *ctx, uint8_t *io);
void t_times_h(uint8_t *ctx, uint8_t *io);
static uint8_t ctx[CTX_SIZE] __attribute__((aligned(64)));
int main(void) {
  void (*runs[])(uint8_t *, uint8_t *) = {t_absorb8, t_absorb3, t_absorb1, t_times_h};
  uint8_t h[16], io[144], w[144];
  while (fread(h, 1, 16, stdin) == 16 && fread(io, 1, 144, stdin) == 144) {
    t_setup(ctx, h);
    fwrite(ctx, 1, sizeof ctx, stdout);
    for (int i = 0; i < 4; i++) {
      memcpy(w, io, sizeof w);
      runs[i](ctx, w);
      fwrite(w, 1, 16, stdout);
    }
  }
  return 0;
}
"""


def _pmull8_function(name: str, body) -> str:
    """name(ctx, p): body(b, engine, p) over a context holding the engine's fields."""
    abi, print_function = AAPCS64, PRINTERS["aarch64"]
    isa = A64Scalar()
    b = KernelBuilder(load_table("aarch64"), name)
    isa.entry(b)
    ctx, p = isa.args(b, 2)

    def field(n, extra=0, width=128):
        return Mem(width, base=ctx, disp=PMULL8_LAYOUT.offset(n) + extra)
    g = Pmull8Hash(b, field, PMULL8_POWERS, True, Latencies(6, 4, 1), 26)
    body(b, g, p)
    isa.ret(b)
    return print_function(compile_function(b.build(), abi))


def _pmull8_functions() -> str:
    def setup(b, g, p):
        h = b.vec(128)
        b.asm.ldr(h.q, Mem(128, base=p))
        g.setup(h)

    def absorb(n):
        def body(b, g, p):           # X at p (hash order), the blocks after it
            x = b.vec(128)
            b.asm.ldr(x.q, Mem(128, base=p))
            g.absorb(x, p, n, 16)
            b.asm.str(x.q, Mem(128, base=p))
        return body

    def times_h(b, g, p):
        y = b.vec(128)
        b.asm.ldr(y.q, Mem(128, base=p))
        b.asm.str(g.times_h(y).q, Mem(128, base=p))
    return (_pmull8_function("t_setup", setup) + _pmull8_function("t_absorb8", absorb(8))
            + _pmull8_function("t_absorb3", absorb(3)) + _pmull8_function("t_absorb1", absorb(1))
            + _pmull8_function("t_times_h", times_h))


def test_pmull8_engine_against_the_model(tmp_path) -> None:
    """The PMULL.8b engine under qemu: init's rotated keys of H~..H~^8 as the model has them
    (gf128/pmull8.py), and absorbing 8, 3 and 1 blocks and one multiply by H as clmul.dot
    block by block (GHASH's Horner step), for 600 random keys and blocks and the extremes."""
    need(CC, QEMU)
    (tmp_path / "k.S").write_text("\t.arch armv8-a\n" + _pmull8_functions())
    (tmp_path / "d.c").write_text(PMULL8_DRIVER.replace("CTX_SIZE", str(PMULL8_LAYOUT.size)))
    subprocess.run([CC, "-static", "-O1", "-o", str(tmp_path / "t"), str(tmp_path / "d.c"),
                    str(tmp_path / "k.S")], check=True, capture_output=True)
    from aesgen.gf128 import pmull8

    rng = random.Random(SEED + 3)
    cases = [(rng.randbytes(16), rng.randbytes(144)) for _ in range(600)]
    cases += [(bytes(16), bytes(144)), (b"\xff" * 16, b"\xff" * 144),
              (b"\x80" + bytes(15), b"\x01" * 144)]
    out = subprocess.run([QEMU, "-cpu", "max", str(tmp_path / "t")],
                         input=b"".join(h + io for h, io in cases), capture_output=True,
                         check=True).stdout
    size, rot, mid = (PMULL8_LAYOUT.size, PMULL8_LAYOUT.offset("H_ROTATIONS"),
                      PMULL8_LAYOUT.offset("H_MIDDLES"))
    rec = size + 64
    assert len(out) == rec * len(cases)
    for i, (h, io) in enumerate(cases):
        o = out[rec * i:rec * (i + 1)]
        ht = clmul.hash_key(h)
        power = ht
        for e in range(1, PMULL8_POWERS + 1):
            if e > 1:
                power = clmul.dot(power, ht)
            slot = PMULL8_POWERS - e
            for k, (kr, mr) in enumerate(zip(pmull8.key_rotations(power),
                                             pmull8.middle_rotations(power))):
                at = rot + 16 * (PMULL8_POWERS * k + slot)
                assert int.from_bytes(o[at:at + 16], "little") == kr, (h.hex(), e, k)
                at = mid + 8 * (PMULL8_POWERS * k + slot)
                assert int.from_bytes(o[at:at + 8], "little") == mr, (h.hex(), e, k)
        x = int.from_bytes(io[:16], "little")
        blocks = [int.from_bytes(io[16 + 16 * j:32 + 16 * j], "big") for j in range(8)]

        def horner(n: int) -> int:
            v = x
            for blk in blocks[:n]:
                v = clmul.dot(v ^ blk, ht)
            return v
        got = [int.from_bytes(o[size + 16 * q:size + 16 * q + 16], "little") for q in range(4)]
        assert got == [horner(8), horner(3), horner(1), clmul.dot(x, ht)], h.hex()


def test_pmull8_engine_needs_only_advanced_simd_and_no_branch() -> None:
    """Constant time by construction: no 64-bit PMULL (the Crypto Extension), no branch, no
    load or store whose address is not the context's or the data's base plus a constant."""
    text = _pmull8_functions()
    assert text.count("// Requires: ASIMD\n") == 5
    body = [line.split("//")[0].strip() for line in text.splitlines()
            if line.startswith("\t") and not line.startswith("\t.")]
    ops = [line.split()[0] for line in body if line]
    assert "pmull" in ops and "pmull2" in ops
    assert not [line for line in body if line.startswith("pmull") and ".1q" in line]
    assert not [op for op in ops if op in ("b", "bl", "br", "cbz", "cbnz", "tbz", "tbnz")
                or op.startswith("b.")]
    for line in body:
        for m in re.finditer(r"\[([^\]]*)\]", line):
            parts = [p.strip() for p in m.group(1).split(",")]
            assert len(parts) == 1 or parts[1].startswith("#"), line   # base + immediate
