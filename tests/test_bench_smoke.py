"""aesgen_bench (harness/bench/bench_main.cc) smoke test.

Each x86-64 preset's benchmark binary is built once per session, in a temporary build
directory (aesgen.build.configure.write_build_ninja + ninja), then run once over every
benchmark it registers at the smallest sizes. Every implementation this CPU runs must be
there (the preset's kernels whose features /proc/cpuinfo lists, OpenSSL, and each ipsec-mb
manager the CPU supports), each with finite positive TSC figures. A second run with
OPENSSL_ia32cap masking AES-NI must register OpenSSL alone, as `openssl-noaesni`.
"""
from __future__ import annotations

import json
import math
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from aesgen.build.configure import ConfigureError, discover_presets, host_arch, write_build_ninja
from aesgen.paths import ROOT

try:
    _ARCH = host_arch()
except ConfigureError:
    _ARCH = None

PRESETS = discover_presets(ROOT, "x86_64") if _ARCH == "x86_64" else []

pytestmark = [
    pytest.mark.skipif(_ARCH != "x86_64", reason="aesgen_bench is built on x86-64 hosts only"),
    pytest.mark.skipif(shutil.which("ninja") is None, reason="ninja is not installed"),
]

SIZES = "--aesgen_sizes=16,256"       # 16 for stream/msg_iv/fresh_iv, 256 for first
MESSAGE_MODES = ("stream", "msg_iv", "fresh_iv")
NOAESNI = "~0x200000000000000"        # clears bit 57 (AES-NI) of OpenSSL's first word
RUN_TIMEOUT = 120

# aesgen feature names (manifest.json) -> /proc/cpuinfo flags.
CPUINFO_FLAG = {
    "SSE2": "sse2", "SSSE3": "ssse3", "SSE41": "sse4_1", "AESNI": "aes",
    "PCLMULQDQ": "pclmulqdq", "AVX": "avx", "AVX2": "avx2", "BMI2": "bmi2", "VAES": "vaes",
    "VPCLMULQDQ": "vpclmulqdq", "GFNI": "gfni", "AVX512F": "avx512f", "AVX512BW": "avx512bw",
    "AVX512VL": "avx512vl",
}
# What each ipsec-mb manager needs (IMB_CPUFLAGS_SSE / _AVX2 / _AVX512), as cpuinfo flags.
_MB_SSE = {"aes", "pclmulqdq", "sse4_2", "cmov"}
_MB_AVX2 = _MB_SSE | {"avx", "avx2", "bmi2"}
_MB_AVX512 = _MB_AVX2 | {"avx512f", "avx512dq", "avx512cd", "avx512bw", "avx512vl"}
IPSEC_MB_NEEDS = {"ipsec-mb-sse": _MB_SSE, "ipsec-mb-avx2": _MB_AVX2,
                  "ipsec-mb-avx512": _MB_AVX512}
# A header the build needs -> the Debian package that has it.
HEADER_PACKAGE = {"benchmark/benchmark.h": "libbenchmark-dev",
                  "intel-ipsec-mb.h": "libipsec-mb-dev", "openssl/evp.h": "libssl-dev"}


def cpu_flags() -> set[str]:
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("flags"):
            return set(line.split(":", 1)[1].split())
    return set()


def manifest(preset) -> dict:
    return json.loads((preset.dir / "manifest.json").read_text())


@pytest.fixture(scope="session")
def bench_binaries(tmp_path_factory) -> dict[str, Path]:
    """Every x86-64 preset's aesgen_bench, built once into a temporary build directory."""
    builddir = write_build_ninja(ROOT, tmp_path_factory.mktemp("bench-build"), "pytest").parent
    binaries = {p.name: builddir / p.name / "aesgen_bench" for p in PRESETS}
    proc = subprocess.run(["ninja", "-C", str(builddir), *map(str, binaries.values())],
                          capture_output=True, text=True, timeout=600)
    if proc.returncode != 0:
        log = proc.stdout + proc.stderr
        for header, package in HEADER_PACKAGE.items():
            if re.search(re.escape(header) + r": No such file", log):
                pytest.skip(f"cannot build aesgen_bench: {header} is missing "
                            f"(install {package}, or run scripts/setup.sh --system)")
        pytest.fail(f"ninja failed to build {', '.join(map(str, binaries.values()))}:\n{log}")
    return binaries


def run_bench(binary: Path, tmp_path: Path, *args: str, env: dict | None = None):
    """Runs every registered benchmark once (min_time 0.001 s); returns (json, stderr)."""
    out = tmp_path / "bench.json"
    cmd = [str(binary), SIZES, "--benchmark_min_time=0.001",
           f"--benchmark_out={out}", "--benchmark_out_format=json", *args]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=RUN_TIMEOUT,
                          env={**os.environ, **(env or {})})
    assert proc.returncode == 0, f"{' '.join(cmd)} exited {proc.returncode}:\n{proc.stderr}"
    return json.loads(out.read_text()), proc.stderr


def listed_names(binary: Path, env: dict | None = None) -> list[str]:
    proc = subprocess.run([str(binary), SIZES, "--aesgen_list"], capture_output=True, text=True,
                          timeout=RUN_TIMEOUT, env={**os.environ, **(env or {})})
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.split()


def expected_names(impl: str, key_bits) -> set[str]:
    names = set()
    for bits in key_bits:
        names |= {f"{impl}/{mode}/{bits}/16" for mode in MESSAGE_MODES}
        names |= {f"{impl}/setup/{bits}/0", f"{impl}/first/{bits}/256"}
    return names


def check_figures(run: dict) -> None:
    name = run["name"]
    mode = name.split("/")[1]
    wanted = ["ticks"] if mode == "setup" else ["ticks_per_byte"]
    if mode == "first":
        wanted.append("ticks")
    for counter in wanted:
        value = run.get(counter)
        assert isinstance(value, (int, float)) and math.isfinite(value) and value > 0, \
            f"{name}: {counter} = {value!r}"
    assert run["iterations"] >= 1, name
    if mode != "setup":
        assert run.get("bytes_per_second", 0) > 0, f"{name}: no bytes_per_second"


@pytest.mark.parametrize("preset", PRESETS, ids=lambda p: p.name)
def test_every_implementation_runs_with_positive_figures(preset, bench_binaries, tmp_path):
    binary = bench_binaries[preset.name]
    data, stderr = run_bench(binary, tmp_path)
    flags = cpu_flags()
    m = manifest(preset)

    expected: set[str] = set()
    impls = []
    for kernel in m["kernels"]:
        missing = [f for f in kernel["features"] if CPUINFO_FLAG.get(f, f.lower()) not in flags]
        if missing:
            assert f"skip {kernel['name']}: needs" in stderr, stderr
        else:
            impls.append(kernel["name"])
            expected |= expected_names(kernel["name"], m["key_bits"])
    impls.append("openssl")
    expected |= expected_names("openssl", (128, 192, 256))
    for impl, needs in IPSEC_MB_NEEDS.items():
        if needs <= flags:
            impls.append(impl)
            expected |= expected_names(impl, (128, 192, 256))
        else:
            assert f"skip {impl}:" in stderr, stderr

    runs = {r["name"]: r for r in data["benchmarks"]}
    got_impls = {name.split("/")[0] for name in runs}
    assert got_impls == set(impls), f"implementations: got {sorted(got_impls)}, want {impls}"
    assert expected <= set(runs), f"missing: {sorted(expected - set(runs))}"
    assert set(runs) == set(listed_names(binary)), "--aesgen_list differs from what ran"
    for run in runs.values():
        check_figures(run)

    context = data["context"]
    assert context["aesgen_preset"] == preset.name
    assert context["tsc_note"].startswith("ticks are TSC ticks")
    assert context["openssl_version"].startswith("OpenSSL")
    assert context["ipsec_mb_version"] and context["cpu_model"]


@pytest.mark.parametrize("preset", PRESETS[:1], ids=lambda p: p.name)
def test_openssl_ia32cap_runs_openssl_without_aesni_alone(preset, bench_binaries, tmp_path):
    binary = bench_binaries[preset.name]
    env = {"OPENSSL_ia32cap": NOAESNI}
    data, _ = run_bench(binary, tmp_path, env=env)
    runs = {r["name"]: r for r in data["benchmarks"]}
    assert {name.split("/")[0] for name in runs} == {"openssl-noaesni"}, sorted(runs)
    assert expected_names("openssl-noaesni", (128, 192, 256)) <= set(runs)
    assert set(runs) == set(listed_names(binary, env))
    for run in runs.values():
        check_figures(run)
    assert "env:" + NOAESNI in data["context"]["openssl_cpu_settings"]
