"""The vector and GFNI methods: their algebra, their instructions, and how a CPU picks them."""
from __future__ import annotations

import random
import re
from pathlib import Path

import pytest

from aesgen.emit.compile import compile_kernel
from aesgen.kernels import engines
from aesgen.kernels.spec import KernelSpec
from aesgen.model import aes
from aesgen.paths import GENERATED
from aesgen.targets import all_presets, choose_native_preset, fastest_variant, load_priority

AES_INSTRUCTION = re.compile(r"^\s*v?aes(enc|enclast|dec|declast|imc|keygenassist)\b", re.M)


# --- GF(2^8) helpers that follow the Intel SDM's definitions, not our kernels -----------
def affine_byte(matrix: int, x: int, constant: int) -> int:
    """GF2P8AFFINEQB on one byte: result bit i = parity(matrix byte (7-i) & x) ^ c_i."""
    out = 0
    for i in range(8):
        row = (matrix >> (8 * (7 - i))) & 0xFF
        out |= (bin(row & x).count("1") & 1) << i
    return out ^ constant


def gf_inverse(x: int) -> int:
    return 0 if x == 0 else next(y for y in range(1, 256) if aes.gf_mul(x, y) == 1)


def test_sbox_matrix_gives_the_aes_sbox():
    for x in range(256):
        assert affine_byte(engines.SBOX_MATRIX, gf_inverse(x), engines.SBOX_CONSTANT) == \
            aes.SBOX[x]


def test_shuffle_maps_are_shift_rows_and_column_rotations():
    rng = random.Random(7)
    for _ in range(50):
        state = bytes(rng.randrange(256) for _ in range(16))
        shuffled = bytes(state[i] for i in engines.shift_rows_map())
        assert shuffled == aes.shift_rows(state)


def test_mix_columns_from_two_rotations():
    """MixColumns(a) = 2u ^ rot1(a) ^ rot2(u), u = a ^ rot1(a): the GFNI round's identity."""
    rng = random.Random(8)
    rot1, rot2 = engines.rotate_columns_map(1), engines.rotate_columns_map(2)
    for _ in range(200):
        a = bytes(rng.randrange(256) for _ in range(16))
        r1 = bytes(a[i] for i in rot1)
        u = bytes(x ^ y for x, y in zip(a, r1))
        r2u = bytes(u[i] for i in rot2)
        got = bytes(aes.xtime(x) ^ y ^ z for x, y, z in zip(u, r1, r2u))
        assert got == aes.mix_columns(a)


def test_rot1_after_shift_rows_is_one_shuffle():
    rng = random.Random(9)
    fused = engines.compose(engines.shift_rows_map(), engines.rotate_columns_map(1))
    rot1 = engines.rotate_columns_map(1)
    for _ in range(50):
        y = bytes(rng.randrange(256) for _ in range(16))
        sr = aes.shift_rows(y)
        assert bytes(y[i] for i in fused) == bytes(sr[i] for i in rot1)


@pytest.mark.parametrize("through", [0, 1])
@pytest.mark.parametrize("key_len", [16, 24, 32])
def test_gfni_rounds_in_shift_rows_layouts_give_aes(key_len, through):
    """The GFNI engine's round as data: the state in layout L_r, its shuffles (into place,
    rot1, rot2, back to byte order) from GfniEngine, round keys as expand_key stores them;
    byte operations from the model. Must equal FIPS-197 AES."""
    eng = engines.GfniEngine(KernelSpec("gfni", "none", width=128, encoding="avx"), through)
    ident = list(range(16))

    def shuffle(x, m):
        return bytes(x[i] for i in m)

    rng = random.Random(key_len + through)
    for _ in range(20):
        key, block = rng.randbytes(key_len), rng.randbytes(16)
        rks = aes.expand_key(key)
        nr = len(rks) - 1
        stored = [rk if r in (0, nr) else shuffle(rk, engines.gather(ident, eng.layout(r)))
                  for r, rk in enumerate(rks)]
        x = aes.xor_bytes(block, stored[0])
        for r in range(1, nr + 1):
            y = aes.sub_bytes(x)
            natural, target = eng.natural(r), eng.layout(r)
            if r == nr:
                x = aes.xor_bytes(shuffle(y, engines.gather(natural, ident)), stored[r])
                break
            q = shuffle(y, engines.gather(natural, target, engines.rotate_columns_map(1)))
            if natural != target:
                y = shuffle(y, engines.gather(natural, target))
            u = aes.xor_bytes(y, q)
            e = shuffle(u, engines.gather(target, target, engines.rotate_columns_map(2)))
            x = bytes(aes.xtime(a) ^ b ^ c ^ k for a, b, c, k in zip(u, q, e, stored[r]))
            if r <= through:
                assert target == ident, f"round {r} must end in byte order"
        assert x == aes.encrypt_block(key, block)


# --- instructions -------------------------------------------------------------------------
GFNI_SPECS = [KernelSpec("gfni", face, width=w, encoding=enc)
              for face in ("none", "r2") for w, enc in ((128, "avx"), (256, "avx"),
                                                         (128, "evex"), (512, "evex"))]


@pytest.mark.parametrize("spec", GFNI_SPECS, ids=lambda s: f"{s.name}-{s.encoding}")
def test_gfni_kernels_compile_without_aes_instructions(spec):
    ck = compile_kernel(spec)
    assert "AESNI" not in ck.features and "VAES" not in ck.features
    assert "GFNI" in ck.features
    for entry, text in ck.texts.items():
        assert not AES_INSTRUCTION.search(text), f"{spec.name} {entry} uses an AES instruction"


def gfni_files() -> list[Path]:
    return sorted(GENERATED.glob("*/gfni*.S"))


def test_committed_gfni_files_have_no_aes_instruction():
    files = gfni_files()
    assert files, "no committed gfni kernel to check"
    for path in files:
        text = path.read_text()
        assert "gf2p8affineinvqb" in text
        assert not AES_INSTRUCTION.search(text), f"{path} contains an AES instruction"


@pytest.mark.parametrize("width,reg", [(256, "ymm"), (512, "zmm")])
def test_vaes_kernels_run_aes_on_wide_registers(width, reg):
    ck = compile_kernel(KernelSpec(f"vaes{width}", "r2", width=width, encoding="evex"))
    assert "VAES" in ck.features
    assert re.search(rf"vaesenc\s+%{reg}\d+, %{reg}\d+, %{reg}\d+", ck.texts["xor_stream"])


def test_vaes512_r2_loads_four_table_entries_at_once():
    """With FACE r2 four consecutive in15 index four consecutive rd2+ entries: one
    64-byte XOR with memory a register of 4 blocks, in the steady-state loop."""
    ck = compile_kernel(KernelSpec("vaes512", "r2", width=512, encoding="evex"))
    steady = [i for i in ck.functions["xor_stream"].instructions()
              if i.region == "steady-128" and i.phase == "rounds_0_2"]
    xors = [i for i in steady if i.name == "vpxorq"]
    assert len(xors) == 8 and all(any(getattr(op, "width", 0) == 512 and hasattr(op, "disp")
                                      for op in i.operands) for i in xors)


# --- presets, native choice, runtime priority ---------------------------------------------
ALL = set(all_presets()["sapphirerapids"].features)


@pytest.mark.parametrize("cpu,features,expected", [
    (("GenuineIntel", 6, 143), ALL, "sapphirerapids"),
    (("GenuineIntel", 6, 106), ALL, "icelake-server"),
    (("AuthenticAMD", 25, 0x11), ALL, "znver4"),
    (("AuthenticAMD", 25, 0x21), set(all_presets()["znver3"].features), "znver3"),
    (("GenuineIntel", 6, 158), set(all_presets()["skylake"].features), "skylake"),
    (("GenuineIntel", 6, 60), set(all_presets()["x86-64-v3"].features), "x86-64-v3"),
    (("GenuineIntel", 6, 44), {"SSE2", "SSSE3", "SSE41", "AESNI", "PCLMULQDQ"}, "x86-64-v2"),
    (("GenuineIntel", 6, 167), ALL, "sapphirerapids"),   # unnamed model: richest, no zmm cost
    (("GenuineIntel", 6, 190), set(all_presets()["no-aesni"].features), "no-aesni"),
])
def test_native_preset_choice(cpu, features, expected):
    preset, why = choose_native_preset(set(features), cpu=cpu)
    assert preset.name == expected, why


def test_native_choice_refuses_a_cpu_without_aes_or_gfni():
    from aesgen.targets import TargetError
    with pytest.raises(TargetError, match="no preset fits"):
        choose_native_preset({"SSE2", "SSSE3"}, cpu=("GenuineIntel", 6, 23))


@pytest.mark.parametrize("preset,cpu,expected", [
    ("sapphirerapids", ("GenuineIntel", 6, 143), "vaes512-face-r2"),
    ("icelake-server", ("GenuineIntel", 6, 106), "vaes256-face-r2"),   # zmm lowers the clock
    ("znver4", ("GenuineIntel", 6, 85), "vaes256-face-r2"),            # zmm_slow list
    ("alderlake", None, "vaes256-face-r2"),
    ("x86-64-v2", None, "aesni-face-r2"),
    ("no-aesni", None, "gfni512-face-r2"),
])
def test_fastest_kernel_by_priority(preset, cpu, expected):
    kernel, _ = fastest_variant(all_presets()[preset], cpu)
    assert kernel == expected


def test_a_preset_fits_without_its_optional_features():
    """no-aesni's AVX-512 is optional: a GFNI and AVX2 CPU without AES-NI still gets the
    preset, and its fastest kernel is one it can run (gfni256, not gfni512)."""
    p = all_presets()["no-aesni"]
    host = set(p.features)
    assert p.optional_features and not set(p.optional_features) <= host
    preset, why = choose_native_preset(host, cpu=("GenuineIntel", 6, 190))
    assert preset.name == "no-aesni", why
    assert fastest_variant(preset, None, host=host)[0] == "gfni256-face-r2"
    assert fastest_variant(preset, None, host=host | set(p.optional_features))[0] == \
        "gfni512-face-r2"


def test_priority_list_names_every_kernel_a_preset_can_have():
    order = set(load_priority().order)
    for preset in all_presets().values():
        for m in preset.methods:
            for face in ("none", "r1", "r2"):
                assert f"{m.variant}-face-{face}" in order, (preset.name, m.variant)


def test_cpuid_reading_agrees_with_the_kernel():
    """Our CPUID+XGETBV reading and Linux's /proc/cpuinfo flags name the same features."""
    from aesgen import cpuid
    from aesgen.targets import host_features_from_cpuinfo, load_features
    assert cpuid.features(load_features()) == host_features_from_cpuinfo(
        Path("/proc/cpuinfo").read_text())
    ident = cpuid.identity()
    assert ident.vendor in ("GenuineIntel", "AuthenticAMD") and ident.family > 0
