"""`aesgen correlate`: the statistics are right, the variants are the tune's space spread
wide (a few hundred on a zmm preset), and a small run predicts and times every variant
here and writes what it printed; bad input exits 2 naming it."""
from __future__ import annotations

import json
import platform
import re
import subprocess
from dataclasses import replace
from pathlib import Path

import pytest

from aesgen.emit.compile import compile_kernel
from aesgen.emit.generate import GenerateRequest, plan_kernels
from aesgen.report.compare import mca_tool, steady_loop
from aesgen.report.throughput import loop_bound
from aesgen.targets import find_preset
from aesgen.tune import correlate as TC
from aesgen.tune.space import choices_for
from aesgen.uarch import model_for


def aesgen(exe: Path, *args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([str(exe), "correlate", *args], cwd=cwd, capture_output=True,
                          text=True, timeout=600)


def test_pearson_and_spearman_on_known_series():
    assert TC.pearson([1, 2, 3, 4], [10, 20, 30, 40]) == pytest.approx(1.0)
    assert TC.pearson([1, 2, 3, 4], [4, 3, 2, 1]) == pytest.approx(-1.0)
    # by hand: deviations (-1.5, -.5, .5, 1.5) and (-.5, -1.5, 1.5, .5): 3 / 5
    assert TC.pearson([1, 2, 3, 4], [2, 1, 4, 3]) == pytest.approx(0.6)
    assert TC.pearson([1, 2], [3, 4]) is None                 # too few pairs
    assert TC.pearson([1, 1, 1], [1, 2, 3]) is None           # no spread
    with pytest.raises(ValueError):
        TC.pearson([1, 2, 3], [1, 2])
    assert TC.ranks([30, 10, 20, 10]) == [4, 1.5, 3, 1.5]      # ties share their mean rank
    # monotone but not linear: Spearman 1, Pearson below it
    xs, ys = [1, 2, 3, 4, 5], [1, 2, 4, 8, 100]
    assert TC.pearson(TC.ranks(xs), TC.ranks(ys)) == pytest.approx(1.0)
    assert TC.pearson(xs, ys) < 0.9


def test_variants_spread_the_tune_space_over_face_and_key():
    preset = find_preset("znver4")
    pts = TC.variants(preset, choices_for(preset), (128, 256))
    assert len(pts) >= 300
    ladder = [p for p in pts if p.choice.name == "methods.vaes512.interleave"]
    assert sorted({p.value for p in ladder}) == list(range(1, 9))
    assert {p.face for p in ladder} == {"none", "r1", "r2"}
    assert {p.key_bits for p in ladder} == {128, 256}
    assert len({(p.setting, p.face, p.key_bits) for p in pts}) == len(pts)


def test_the_bound_reads_the_uarch_model():
    """On Zen 4 (AES and CLMUL share pipes) schoolbook's extra multiply a block sets the
    bound of the zmm GCM loop above Karatsuba's; halve the model's VPCLMULQDQ zmm rate
    and the bound grows by the multiplies' time, double VAESENC zmm's and it shrinks."""
    preset = find_preset("znver4")
    model = model_for(preset.uarch, preset.arch)
    (choice,) = [c for c in choices_for(preset) if c.name == "gcm.multiply"]
    loops = {}
    for value in ("schoolbook", "karatsuba"):
        ck = compile_kernel(choice.kernel(choice.applied(preset, value)))
        loops[value] = (steady_loop(ck, 128), ck.interleave * ck.spec.lanes)

    def per_block(value, m):
        loop, blocks = loops[value]
        return loop_bound(loop, m).cycles / blocks

    assert per_block("schoolbook", model) > per_block("karatsuba", model)
    b = loop_bound(*loops["karatsuba"][:1], model)
    assert b.busiest == "aes+clmul"

    def scaled(cls, factor):
        return replace(model, instructions=tuple(
            (k, replace(t, per_cycle=t.per_cycle * factor) if k == cls else t)
            for k, t in model.instructions))

    clmuls = sum(1 for ins in loops["karatsuba"][0] if ins.name == "vpclmulqdq"
                 and ins.operands[0].width == 512)
    slower = loop_bound(loops["karatsuba"][0], scaled("clmul_zmm", 0.5))
    rate = model.timing("clmul_zmm").per_cycle
    assert slower.cycles == pytest.approx(b.cycles + clmuls / rate)
    assert loop_bound(loops["karatsuba"][0], scaled("aes_zmm", 2)).cycles < b.cycles


def test_shuffles_take_aes_slots_where_the_model_says_so():
    """Zen 5 (aes_shuffle_shared, measured by aesgen calibrate): the OTR loop's lane deals,
    mask shifts and byte reversals are charged to the pipes its VAESENC runs on; a model
    without the fact keeps them apart, and its AES pipes are less busy by exactly that."""
    preset = find_preset("znver5")
    model = model_for(preset.uarch, preset.arch)
    assert model.fact("aes_shuffle_shared") is True
    req = GenerateRequest(preset, ("vaes512",), ("none",), (128,), "aesgen", "t",
                          modes=("otr",))
    (spec,) = [sp for sp in plan_kernels(req) if sp.name == "vaes512-otr"]
    loop = steady_loop(compile_kernel(spec), 128)
    shared = loop_bound(loop, model)
    apart = loop_bound(loop, replace(model, pipes=tuple(
        (k, replace(f, value=False) if k == "aes_shuffle_shared" else f)
        for k, f in model.pipes)))
    assert "aes" not in shared.resources and "shuffle" not in shared.resources
    assert apart.resources["shuffle"] > 0
    assert shared.resources["aes+shuffle"] == pytest.approx(
        apart.resources["aes"] + apart.resources["shuffle"])
    assert shared.cycles >= apart.cycles


@pytest.mark.skipif(mca_tool() is None, reason="llvm-mca is not installed")
@pytest.mark.skipif(platform.machine() not in ("x86_64", "AMD64"), reason="x86-64 host only")
def test_a_small_run_predicts_and_times_each_variant(aesgen_exe, tmp_path):
    flags = Path("/proc/cpuinfo").read_text().split()
    if not all(f in flags for f in ("aes", "pclmulqdq", "avx")):
        pytest.skip("this CPU lacks aes, pclmulqdq or avx (aesni-gcm on x86-64-v3)")
    r = aesgen(aesgen_exe, "--cpu", "x86-64-v3", "--choices", "gcm.multiply", "--keys", "128",
               "--processes", "1", "--cache", str(tmp_path / "cache.json"), "-o",
               str(tmp_path / "corr"), cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    rows = re.findall(r"^(aesni-gcm-\S+)\s+gcm\.multiply=(\w+)\s+(none|r1|r2)\s+128\s+"
                      r"([0-9.]+)\s+([0-9.]+)\s+([0-9.]+)", r.stdout, re.M)
    assert len(rows) == 6, r.stdout                    # 2 multiplies x 3 FACE levels
    assert {(m, f) for _, m, f, *_ in rows} == {
        (m, f) for m in ("schoolbook", "karatsuba") for f in ("none", "r1", "r2")}
    assert all(0 < float(c) < 100 and 0 < float(b) < 100 and 0 < float(t) < 50
               for *_, c, b, t in rows)
    assert re.search(r"^all\s+6 variants: llvm-mca Pearson r [+-]\d\.\d{3}, Spearman rho "
                     r"[+-]\d\.\d{3}; bound r [+-]\d\.\d{3}, rho [+-]\d\.\d{3}$",
                     r.stdout, re.M), r.stdout
    data = json.loads((tmp_path / "corr" / "x86-64-v3.json").read_text())
    assert len(data["points"]) == 6 and data["correlation"]["gcm"]["n"] == 6
    assert (tmp_path / "corr" / "x86-64-v3.txt").read_text() == r.stdout
    assert json.loads((tmp_path / "cache.json").read_text())       # llvm-mca results kept


@pytest.mark.parametrize("args, named", [
    (("--cpu", "no-such-cpu"), "no-such-cpu"),
    (("--cpu", "x86-64-v3", "--choices", "gcm.bogus"), "gcm.bogus"),
    (("--cpu", "x86-64-v3", "--keys", "100"), "100"),
    (("--cpu", "apple-m1" if platform.machine() in ("x86_64", "AMD64") else "znver4"),
     "runs the kernels here"),
])
def test_bad_input_exits_2_naming_it(aesgen_exe, tmp_path, args, named):
    r = aesgen(aesgen_exe, *args, cwd=tmp_path)
    assert r.returncode == 2, (r.returncode, r.stdout, r.stderr)
    lines = r.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("aesgen: error: "), r.stderr
    assert named in lines[0] and "Traceback" not in r.stderr
    assert r.stdout == "" and not (tmp_path / "out").exists()


def test_tune_by_the_bound_needs_no_llvm_mca(aesgen_exe, tmp_path):
    """`aesgen tune --cost bound` ranks candidates by the uarch model alone: on znver4 the
    zmm GCM batch's figures fall as batches grow (one reduction a batch) and the preset's
    8 stays."""
    r = subprocess.run([str(aesgen_exe), "tune", "--cpu", "znver4", "--choices", "gcm.zmm_batch",
                        "--cost", "bound", "--no-cache"], cwd=tmp_path, capture_output=True,
                       text=True, timeout=600)
    assert r.returncode == 0, r.stderr
    assert "bound of targets/uarch/zen4.toml" in r.stdout
    figures = {int(m.group(1)): float(m.group(2)) for m in
               re.finditer(r"^\s+\*?\s*(\d)\s+([0-9.]+)", r.stdout, re.M)}
    assert sorted(figures) == list(range(1, 9)), r.stdout
    assert all(figures[n] >= figures[n + 1] for n in range(1, 8)) and figures[1] > 1.5 * figures[8]
    assert "8 -> 8 (unchanged)" in r.stdout


def test_the_bound_runs_zmm_on_the_ports_the_model_names():
    """Golden Cove runs 512-bit vector ops on ports 0 (0 and 1 fused) and 5, not on all
    three of its 256-bit ports: its model says so (zmm_alu_ports), and the bound of
    sapphirerapids' gfni512 loop, limited by vector ops, is 3/2 what it would be on three."""
    preset = find_preset("sapphirerapids")
    model = model_for(preset.uarch, preset.arch)
    assert list(model.fact("zmm_alu_ports")) == [0, 5]
    assert list(model.fact("vector_alu_ports")) == [0, 1, 5]
    ck = compile_kernel(next(s for s in plan_kernels(GenerateRequest(
        preset, ("gfni512",), ("r2",), (128,), "aesgen_", "test", ("ctr",)))))
    loop = steady_loop(ck, 128)
    two = loop_bound(loop, model)
    three = loop_bound(loop, replace(model, core=tuple(
        (k, replace(f, value=[0, 1, 5]) if k == "zmm_alu_ports" else f)
        for k, f in model.core)))
    assert two.busiest == "vector" and two.cycles == pytest.approx(1.5 * three.cycles)
