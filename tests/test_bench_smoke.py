"""aesgen_bench (harness/bench/) smoke test.

Each x86-64 preset's benchmark binary is built once per session, in a temporary build
directory (aesgen.build.configure.write_build_ninja + ninja), then run once over every
benchmark it registers at the smallest sizes. Every implementation this CPU runs must be
there (the preset's kernels whose features /proc/cpuinfo lists, OpenSSL, and each ipsec-mb
manager the CPU supports), each with finite positive TSC figures; so must every AES-GCM
peer (gcm_seal: OpenSSL, each ipsec-mb manager, libgcrypt, and BoringSSL where its library
is installed), and what is not there must be named on stderr with the reason; so must every
AES-GCM-SIV implementation, sealing and opening (gcm_siv_seal, gcm_siv_open: the set's GCM-SIV
kernels, libgcrypt, BoringSSL), each with ticks per record besides ticks per byte, and a short
`--what gcm-siv` run goes through the report's tables; so must every AES-OTR implementation
(otr_seal, otr_open: the set's OTR kernels, AES-OCB in libgcrypt and OpenSSL) and the CTR and
GCM kernels it is compared with (otr_ref), what cannot run named with its reason, and a short
`--what otr` run goes through the report's tables. Until a generated set has OTR kernels, a
mock set (tests/bench_otr_mock/mock_otr.c, AES-OTR in C, linked into x86-64-v2's program in
place of its AEAD table) shows the OTR kernels' path: they are checked and timed, an unknown
OTR mode and a missing CPU feature are named as skipped, and each of seven faults makes the
program refuse the kernel before timing it; and, asked for, every GHASH-alone
implementation (the set's GCM kernels, OpenSSL, ct-1bit-ghash, ct-holes-ghash), each checked
by the program against OpenSSL's tags first. A second run with OPENSSL_ia32cap masking AES-NI
must register OpenSSL's CTR alone, as `openssl-noaesni`. No time is ever asserted. The report
module's arithmetic (median of all processes, spread of the per-process medians) is checked on
made-up runs.
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

from aesgen.build.configure import (ConfigureError, discover_bench_units, discover_presets,
                                    host_arch, write_build_ninja)
from aesgen.paths import ROOT
from aesgen.report import bench as B

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
AEAD_SIZES = "--aesgen_aead_sizes=64"  # the smallest gcm_seal record of the tables
MESSAGE_MODES = ("stream", "msg_iv", "fresh_iv")
AEAD_MODES = ("gcm_seal", "gcm_siv_seal", "gcm_siv_open", "otr_seal", "otr_open", "otr_ref")
GCM_KEY_BITS = (128, 256)
GCM_SIV_MODES = ("gcm_siv_seal", "gcm_siv_open")
OTR_MODES = ("otr_seal", "otr_open")
OTR_KERNEL_MODES = ("otr", "otr-v2", "otr-s", "otr-v2-s")  # what otr_bench.cc times as OTR
OTR_REF_METHODS = ("aesni", "vaes512")  # compared with OTR whether or not an OTR kernel has them
OTR_PEERS = ("libgcrypt-ocb", "openssl-ocb")
NOAESNI = "~0x200000200000000"        # clears bits 57 (AES-NI), 33 (PCLMULQDQ) of word 0
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
                  "intel-ipsec-mb.h": "libipsec-mb-dev", "openssl/evp.h": "libssl-dev",
                  "gcrypt.h": "libgcrypt20-dev"}
# Where the program looks for BoringSSL (harness/bench/gcm_bench.cc: what Debian's
# android-libboringssl installs, unless AESGEN_BORINGSSL_LIB says otherwise).
BORINGSSL_LIB = Path(os.environ.get("AESGEN_BORINGSSL_LIB")
                     or "/usr/lib/x86_64-linux-gnu/android/libcrypto.so.0")


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
    cmd = [str(binary), SIZES, AEAD_SIZES, "--benchmark_min_time=0.001",
           f"--benchmark_out={out}", "--benchmark_out_format=json", *args]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=RUN_TIMEOUT,
                          env={**os.environ, **(env or {})})
    assert proc.returncode == 0, f"{' '.join(cmd)} exited {proc.returncode}:\n{proc.stderr}"
    return json.loads(out.read_text()), proc.stderr


def listed_names(binary: Path, env: dict | None = None, *args: str) -> list[str]:
    proc = subprocess.run([str(binary), SIZES, AEAD_SIZES, "--aesgen_list", *args],
                          capture_output=True, text=True, timeout=RUN_TIMEOUT,
                          env={**os.environ, **(env or {})})
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
    if mode in GCM_SIV_MODES or mode in OTR_MODES or mode == "otr_ref":
        wanted.append("ticks_per_message")
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
    ctr_runs = {n: r for n, r in runs.items() if n.split("/")[1] not in AEAD_MODES}
    got_impls = {name.split("/")[0] for name in ctr_runs}
    assert got_impls == set(impls), f"implementations: got {sorted(got_impls)}, want {impls}"
    assert expected <= set(ctr_runs), f"missing: {sorted(expected - set(ctr_runs))}"
    assert set(runs) == set(listed_names(binary)), "--aesgen_list differs from what ran"
    for run in runs.values():
        check_figures(run)

    context = data["context"]
    assert context["aesgen_preset"] == preset.name
    assert context["tsc_note"].startswith("ticks are TSC ticks")
    assert context["openssl_version"].startswith("OpenSSL")
    assert context["ipsec_mb_version"] and context["cpu_model"]


def expected_gcm_impls(m: dict, flags: set[str]) -> tuple[dict, list[str]]:
    """IMPL -> key sizes of every gcm_seal implementation this machine should run; and
    the ones it cannot, each of which must be on stderr as "skip IMPL: why"."""
    want: dict[str, tuple[int, ...]] = {}
    skipped = []
    # the set's own GCM kernels, once the generator declares them in the manifest
    aesgen_bits = tuple(b for b in m["key_bits"] if b in GCM_KEY_BITS)
    for aead in m.get("aeads", []):
        if aead.get("mode") != "gcm":
            continue
        if all(CPUINFO_FLAG.get(f, f.lower()) in flags for f in aead.get("features", [])):
            want[aead["name"]] = aesgen_bits
        else:
            skipped.append(aead["name"])
    want["openssl-gcm"] = GCM_KEY_BITS
    for impl, needs in IPSEC_MB_NEEDS.items():
        if needs <= flags:
            want[f"{impl}-gcm"] = GCM_KEY_BITS
        else:
            skipped.append(f"{impl}-gcm")
    want["libgcrypt-gcm"] = GCM_KEY_BITS
    if BORINGSSL_LIB.exists():
        want["boringssl-gcm"] = GCM_KEY_BITS
    else:
        skipped.append("boringssl-gcm")
    return want, skipped


@pytest.mark.parametrize("preset", PRESETS, ids=lambda p: p.name)
def test_every_gcm_peer_seals_with_positive_figures(preset, bench_binaries, tmp_path):
    binary = bench_binaries[preset.name]
    data, stderr = run_bench(binary, tmp_path, "--aesgen_what=gcm")
    want, skipped = expected_gcm_impls(manifest(preset), cpu_flags())
    for impl in skipped:
        assert re.search(rf"^skip {re.escape(impl)}: \S", stderr, re.M), \
            f"{impl} is neither run nor reported as skipped:\n{stderr}"

    runs = {r["name"]: r for r in data["benchmarks"]}
    assert all(name.split("/")[1] == "gcm_seal" for name in runs), sorted(runs)
    got = {name.split("/")[0] for name in runs}
    assert got == set(want), f"gcm_seal implementations: got {sorted(got)}, want {sorted(want)}"
    expected = {f"{impl}/gcm_seal/{bits}/64" for impl, bits_list in want.items()
                for bits in bits_list}
    assert set(runs) == expected, f"missing {sorted(expected - set(runs))}, " \
                                  f"extra {sorted(set(runs) - expected)}"
    assert set(runs) == set(listed_names(binary, None, "--aesgen_what=gcm"))
    for run in runs.values():
        check_figures(run)

    context = data["context"]
    assert context["libgcrypt_version"]
    if "boringssl-gcm" in want:
        assert context["boringssl"].startswith(str(BORINGSSL_LIB)), context["boringssl"]
    else:
        assert context["boringssl"].startswith("not loaded: ")


def expected_gcm_siv_impls(m: dict, flags: set[str]) -> tuple[dict, list[str]]:
    """IMPL -> key sizes of every GCM-SIV implementation this machine should run (the set's
    GCM-SIV kernels take 16- and 32-byte keys whatever key sizes the set was generated for);
    and the ones it cannot, each of which must be on stderr as "skip IMPL: why"."""
    want: dict[str, tuple[int, ...]] = {}
    skipped = []
    for aead in m.get("aeads", []):
        if aead.get("mode") != "gcm-siv":
            continue
        if all(CPUINFO_FLAG.get(f, f.lower()) in flags for f in aead.get("features", [])):
            want[aead["name"]] = GCM_KEY_BITS
        else:
            skipped.append(aead["name"])
    want["libgcrypt-gcm-siv"] = GCM_KEY_BITS  # libgcrypt 1.10 or later: scripts/setup.sh
    if BORINGSSL_LIB.exists():
        want["boringssl-gcm-siv"] = GCM_KEY_BITS
    else:
        skipped.append("boringssl-gcm-siv")
    return want, skipped


@pytest.mark.parametrize("preset", PRESETS, ids=lambda p: p.name)
def test_every_gcm_siv_implementation_seals_and_opens_with_positive_figures(preset,
                                                                           bench_binaries,
                                                                           tmp_path):
    binary = bench_binaries[preset.name]
    data, stderr = run_bench(binary, tmp_path, "--aesgen_what=gcm-siv")
    want, skipped = expected_gcm_siv_impls(manifest(preset), cpu_flags())
    for impl in skipped:
        assert re.search(rf"^skip {re.escape(impl)}: \S", stderr, re.M), \
            f"{impl} is neither run nor reported as skipped:\n{stderr}"
    runs = {r["name"]: r for r in data["benchmarks"]}
    expected = {f"{impl}/{mode}/{bits}/64" for impl, bits_list in want.items()
                for bits in bits_list for mode in GCM_SIV_MODES}
    assert set(runs) == expected, f"missing {sorted(expected - set(runs))}, " \
                                  f"extra {sorted(set(runs) - expected)}"
    assert set(runs) == set(listed_names(binary, None, "--aesgen_what=gcm-siv"))
    for run in runs.values():
        check_figures(run)
    assert data["context"]["libgcrypt_version"]


@pytest.mark.parametrize("preset", [p for p in PRESETS if p.name == "x86-64-v2"],
                         ids=lambda p: p.name)
def test_gcm_siv_run_gives_the_report_its_tables(preset, bench_binaries, tmp_path):
    """`aesgen bench --what gcm-siv` in small: two processes of the program, each benchmark
    once, summarized and rendered as the command does."""
    want, _ = expected_gcm_siv_impls(manifest(preset), cpu_flags())
    if "aesni-gcm-siv" not in want:
        pytest.skip("this CPU does not run aesni-gcm-siv")
    plan = B.BenchPlan(bench_binaries[preset.name], sizes=(16,), keys=(128,), filter=None,
                       repetitions=1, min_time=0.001, warmup=0.0, what=("gcm-siv",),
                       aead_sizes=(16, 1420))
    runs = B.run_processes(plan, tmp_path, "main", "gcm-siv smoke", 2)
    summary = B.summarize(*runs)
    assert {r["mode"] for r in summary.values()} == set(GCM_SIV_MODES)
    for row in summary.values():
        assert row["median"] > 0 and row["ticks_per_message"] > 0, row
        assert row["processes"] == 2 and len(row["ticks_per_message_process_medians"]) == 2
    sections = B.gcm_siv_sections(summary, (128,), (16, 1420))
    assert len(sections) == 3  # seal, open, ticks per record
    for (text, md), head in zip(sections, ("AES-128-GCM-SIV seal", "AES-128-GCM-SIV open",
                                           "AES-128-GCM-SIV ticks")):
        lines = text.strip().splitlines()
        table = lines[lines.index(next(ln for ln in lines if ln.startswith(head))):]
        rows = {ln.split()[0]: ln.split()[1:] for ln in table[2:]}
        assert "aesni-gcm-siv" in rows and set(rows) & {"libgcrypt-gcm-siv",
                                                         "boringssl-gcm-siv"}, text
        for impl, cells in rows.items():
            figures = [float(c) for c in cells if re.fullmatch(r"[0-9.]+", c)]
            assert len(figures) == 2 and all(f > 0 for f in figures), (impl, cells)
        assert "| aesni-gcm-siv |" in md
    assert "seal 16 B" in sections[2][0] and "open 16 B" in sections[2][0]
    assert "1420 B" not in sections[2][0]  # ticks per record: small records only


def expected_otr_impls(m: dict, flags: set[str], stderr: str) -> tuple[dict, list[str]]:
    """IMPL -> (mode, key sizes) of every OTR implementation and comparison kernel this machine
    should run: the set's OTR kernels (16- and 32-byte keys), each OCB peer that is not named
    on `stderr` as skipped, and the CTR and GCM kernels without FACE of aesni, vaes512 and
    the OTR kernels' methods (the set's key sizes of 128 and 256); and the ones it cannot run,
    each of which must be on stderr as "skip IMPL: why"."""
    want: dict[str, tuple[str, tuple[int, ...]]] = {}
    skipped = []

    def runs_here(entry: dict) -> bool:
        return all(CPUINFO_FLAG.get(f, f.lower()) in flags for f in entry.get("features", []))

    methods = list(OTR_REF_METHODS)
    for aead in m.get("aeads", []):
        if not aead.get("mode", "").startswith("otr"):
            continue
        if aead["mode"] in OTR_KERNEL_MODES and runs_here(aead):
            want[aead["name"]] = ("otr", GCM_KEY_BITS)
            methods.append(aead["method"])
        else:
            skipped.append(aead["name"])
    for peer in OTR_PEERS:
        # a peer library without OCB is allowed, as long as the program says so
        if not re.search(rf"^skip {re.escape(peer)}: \S", stderr, re.M):
            want[peer] = ("otr", GCM_KEY_BITS)
    ref_bits = tuple(b for b in m["key_bits"] if b in GCM_KEY_BITS)
    for method in dict.fromkeys(methods):
        refs = [k for k in m["kernels"] if k["name"] == f"{method}-face-none"]
        refs += [a for a in m.get("aeads", []) if a["name"] == f"{method}-gcm-none"]
        for ref in refs:
            if runs_here(ref):
                want[ref["name"]] = ("otr_ref", ref_bits)
            else:
                skipped.append(ref["name"])
    return want, skipped


def check_otr_run(data: dict, stderr: str, want: dict, skipped: list[str]) -> dict:
    """The names of an --aesgen_what=otr run at --aesgen_aead_sizes=64 are exactly `want`'s,
    with their figures; `skipped` are named on stderr. Returns the runs by name."""
    for impl in skipped:
        assert re.search(rf"^skip {re.escape(impl)}: \S", stderr, re.M), \
            f"{impl} is neither run nor reported as skipped:\n{stderr}"
    runs = {r["name"]: r for r in data["benchmarks"]}
    expected = set()
    for impl, (kind, bits_list) in want.items():
        modes = OTR_MODES if kind == "otr" else ("otr_ref",)
        expected |= {f"{impl}/{mode}/{bits}/64" for bits in bits_list for mode in modes}
    assert set(runs) == expected, f"missing {sorted(expected - set(runs))}, " \
                                  f"extra {sorted(set(runs) - expected)}"
    for run in runs.values():
        check_figures(run)
    return runs


@pytest.mark.parametrize("preset", PRESETS, ids=lambda p: p.name)
def test_every_otr_implementation_seals_and_opens_with_positive_figures(preset, bench_binaries,
                                                                       tmp_path):
    binary = bench_binaries[preset.name]
    data, stderr = run_bench(binary, tmp_path, "--aesgen_what=otr")
    want, skipped = expected_otr_impls(manifest(preset), cpu_flags(), stderr)
    check_otr_run(data, stderr, want, skipped)
    # OCB is in libgcrypt since 1.7 and in OpenSSL unless built without it: Debian has both
    assert set(OTR_PEERS) <= set(want), stderr
    assert data["context"]["libgcrypt_version"]
    assert sorted(r["name"] for r in data["benchmarks"]) == \
        sorted(listed_names(binary, None, "--aesgen_what=otr"))


def _otr_report(binary: Path, tmp_path: Path, sizes=(16, 1420)) -> tuple[dict, list]:
    """`aesgen bench --what otr` in small: two processes of the program, each benchmark once,
    summarized and rendered as the command does (AES-128)."""
    plan = B.BenchPlan(binary, sizes=(16,), keys=(128,), filter=None, repetitions=1,
                       min_time=0.001, warmup=0.0, what=("otr",), aead_sizes=sizes)
    runs = B.run_processes(plan, tmp_path, "main", "otr smoke", 2)
    summary = B.summarize(*runs)
    return summary, B.otr_sections(summary, (128,), sizes, "the set")


def _table_rows(text: str, head: str) -> dict[str, list[str]]:
    """label -> cells of the console table under the line starting with `head`; a label may
    hold one space ("aesni-face-none (CTR)")."""
    lines = text.strip().splitlines()
    start = next(i for i, ln in enumerate(lines) if ln.startswith(head))
    rows = {}
    for ln in lines[start + 2:]:
        if not ln.strip():
            break
        m = re.match(r"(\S+(?: \((?:CTR|GCM)\))?)\s+(.*)$", ln)
        rows[m.group(1)] = m.group(2).split()
    return rows


@pytest.mark.parametrize("preset", [p for p in PRESETS if p.name == "x86-64-v2"],
                         ids=lambda p: p.name)
def test_otr_run_gives_the_report_its_tables(preset, bench_binaries, tmp_path):
    summary, sections = _otr_report(bench_binaries[preset.name], tmp_path)
    assert {r["mode"] for r in summary.values()} == {*OTR_MODES, "otr_ref"}
    for row in summary.values():
        assert row["median"] > 0 and row["ticks_per_message"] > 0, row
        assert row["processes"] == 2
    texts = [t for t, _ in sections]
    seal = _table_rows(texts[0], "AES-128-OTR seal")
    assert set(OTR_PEERS) <= set(seal) and "aesni-face-none (CTR)" in seal, texts[0]
    assert "aesni-gcm-none (GCM)" in seal, texts[0]
    for label, cells in seal.items():
        figures = [float(c) for c in cells if re.fullmatch(r"[0-9.]+", c)]
        assert len(figures) == 2 and all(f > 0 for f in figures), (label, cells)
    opened = _table_rows(texts[1], "AES-128-OTR open")
    assert set(OTR_PEERS) <= set(opened)
    assert not any("(" in label for label in opened)  # the comparison is in the seal table
    assert "seal 16 B" in texts[2] and "open 16 B" in texts[2] and "1420 B" not in texts[2]
    assert "| libgcrypt-ocb |" in sections[0][1] and "| aesni-face-none (CTR) |" in sections[0][1]
    want, _ = expected_otr_impls(manifest(preset), cpu_flags(), "")
    kernels = [n for n in want if want[n][0] == "otr" and n not in OTR_PEERS]
    if not kernels:
        assert texts[-1].strip().startswith("no AES-OTR kernel ran: the set has none"), texts
        return
    assert set(kernels) <= set(seal) and set(kernels) <= set(opened), texts[:2]
    targets = texts[-1].strip().splitlines()
    assert targets[0].startswith("OTR kernels against their targets"), texts[-1]
    for kernel in kernels:  # e.g. aesni-otr against libgcrypt's OCB and aesni-face-none
        line = next(ln for ln in targets if ln.split()[0] == kernel)
        assert "1420 B" in line and "x libgcrypt-ocb" in line, line
        assert f"the ticks of {kernel.split('-otr')[0]}-face-none (CTR)" in line, line


@pytest.fixture(scope="session")
def otr_mock_bench(bench_binaries, tmp_path_factory) -> Path:
    """x86-64-v2's aesgen_bench relinked with tests/bench_otr_mock/mock_otr.c's aesgen_aeads[]
    in place of the set's (whose registry is compiled again with that table renamed): the
    same harness objects, CTR kernels and libraries."""
    if "x86-64-v2" not in bench_binaries:
        pytest.skip("no x86-64-v2 set to build the mock OTR program from")
    binary = bench_binaries["x86-64-v2"]
    objdir, builddir = binary.parent, binary.parent.parent
    pdir = ROOT / "generated" / "x86-64-v2"
    work = tmp_path_factory.mktemp("otr-mock")
    libs = next(line.split("=", 1)[1].split() for line in
                (builddir / "build.ninja").read_text().splitlines()
                if line.startswith("bench_libs ="))
    units = [objdir / "harness" / f"{u}.o" for u in discover_bench_units(ROOT)]
    kernels = [o for o in sorted((objdir / "gen").glob("*.o"))
               if o.name != "aesgen_registry.c.o"]
    steps = [
        ["gcc", "-c", "-O1", "-I", str(pdir), "-Daesgen_aeads=aesgen_set_aeads",
         "-Daesgen_aead_count=aesgen_set_aead_count", str(pdir / "aesgen_registry.c"),
         "-o", str(work / "registry.o")],
        ["gcc", "-c", "-O1", "-Wall", "-Wextra", "-Werror", "-I", str(pdir),
         str(ROOT / "tests" / "bench_otr_mock" / "mock_otr.c"), "-o", str(work / "mock_otr.o")],
        ["g++", "-o", str(work / "aesgen_bench"), *map(str, kernels), *map(str, units),
         str(work / "registry.o"), str(work / "mock_otr.o"), *libs],
    ]
    for cmd in steps:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
        assert proc.returncode == 0, f"{' '.join(cmd)}:\n{proc.stderr}"
    return work / "aesgen_bench"


MOCK_OTR = {"mock-otr": "otr", "mock-otr-v2": "otr-v2", "mock-otr-v1": "otr-v1",
            "mock-otr-missing": "otr"}


def test_otr_kernels_are_checked_and_timed_beside_the_peers(otr_mock_bench, tmp_path):
    data, stderr = run_bench(otr_mock_bench, tmp_path, "--aesgen_what=otr")
    assert re.search(r'^skip mock-otr-v1: mode "otr-v1" is not one this program checks', stderr,
                     re.M), stderr
    assert re.search(r"^skip mock-otr-missing: needs bit62$", stderr, re.M), stderr
    m = manifest(next(p for p in PRESETS if p.name == "x86-64-v2"))
    m = {**m, "aeads": [{"name": n, "mode": mode, "method": "mock",
                         "features": ["NOSUCHFEATURE"] if n.endswith("missing") else []}
                        for n, mode in MOCK_OTR.items()]}
    want, skipped = expected_otr_impls(m, cpu_flags(), stderr)
    assert {"mock-otr", "mock-otr-v2"} <= set(want) and "mock-otr-v1" in skipped
    check_otr_run(data, stderr, want, skipped)
    # and through the report: the kernels are rows, with their speed-ups over the peers
    summary, sections = _otr_report(otr_mock_bench, tmp_path)
    seal = _table_rows(sections[0][0], "AES-128-OTR seal")
    assert list(seal)[:2] == ["mock-otr", "mock-otr-v2"], seal
    targets = sections[-1][0]
    assert targets.strip().startswith("OTR kernels against their targets"), targets
    line = next(ln for ln in targets.splitlines() if ln.strip().startswith("mock-otr "))
    assert "AES-128  1420 B" in line and "x libgcrypt-ocb" in line and "x openssl-ocb" in line
    rows = B.otr_ratios(summary, (128,), (1420,))
    assert {r["impl"] for r in rows} == {"mock-otr", "mock-otr-v2"}
    for r in rows:
        peer = summary["libgcrypt-ocb/otr_seal/128/1420"]["median"]
        assert r["speedup_seal"]["libgcrypt-ocb"] == pytest.approx(peer / r["seal"])
        assert r["versus"] == {}  # no mock-face-none or mock-gcm-none to compare with


@pytest.mark.parametrize("fault, messages", [
    ("tag", ["FATAL: mock-otr/128 ", "its tag differs from the reference's (v3.1-p)"]),
    ("v2-masks", ["FATAL: mock-otr-v2/128 ",  # the v3.1 kernel passes
                  "seal's ciphertext differs from the reference's (v2-p)"]),
    ("tau", ["1-byte tag: seal's ciphertext differs"]),
    ("aad", ["13 bytes of AAD", "its tag differs from the reference's"]),
    ("past-end", ["(seal's ciphertext): wrote past its output"]),
    ("any-tag", ["open accepted a changed tag"]),
    ("no-zero", ["open refused a changed tag but left its output not all zero"]),
], ids=lambda v: v if isinstance(v, str) else None)
def test_a_wrong_otr_kernel_is_refused_before_timing(otr_mock_bench, fault, messages):
    cmd = [str(otr_mock_bench), "--aesgen_what=otr", "--aesgen_keys=128", AEAD_SIZES,
           "--benchmark_min_time=0.001"]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=RUN_TIMEOUT,
                          env={**os.environ, "AESGEN_MOCK_OTR_FAULT": fault})
    assert proc.returncode != 0, proc.stderr
    fatal = [ln for ln in proc.stderr.splitlines() if "FATAL" in ln]
    assert len(fatal) == 1 and "FATAL: mock-otr" in fatal[0], proc.stderr
    for message in messages:
        assert message in fatal[0], fatal[0]
    assert "refusing to benchmark it" in fatal[0]
    assert "otr_seal" not in proc.stdout  # nothing was timed


GHASH_PEERS = ("openssl-ghash", "ct-1bit-ghash", "ct-holes-ghash")


@pytest.mark.parametrize("preset", PRESETS, ids=lambda p: p.name)
def test_every_ghash_implementation_hashes_with_positive_figures(preset, bench_binaries,
                                                                  tmp_path):
    binary = bench_binaries[preset.name]
    m = manifest(preset)
    want, skipped = expected_gcm_impls(m, cpu_flags())
    # the set's GCM kernels (an AES-128 hash key) as in gcm_seal, and the ghash peers
    ours = {a["name"] for a in m.get("aeads", [])} if 128 in m["key_bits"] else set()
    impls = (set(want) & ours) | set(GHASH_PEERS)
    data, stderr = run_bench(binary, tmp_path, "--aesgen_what=ghash")
    runs = {r["name"]: r for r in data["benchmarks"]}
    expected = {f"{impl}/ghash/128/64" for impl in impls}
    assert set(runs) == expected, f"missing {sorted(expected - set(runs))}, " \
                                  f"extra {sorted(set(runs) - expected)}"
    for impl in set(skipped) & ours:
        assert re.search(rf"^skip {re.escape(impl)}: \S", stderr, re.M), stderr
    for run in runs.values():
        check_figures(run)


@pytest.mark.parametrize("preset", PRESETS[:1], ids=lambda p: p.name)
def test_ghash_is_asked_for_and_masked_openssl_runs_alone(preset, bench_binaries):
    binary = bench_binaries[preset.name]
    assert not any("/ghash/" in n for n in listed_names(binary)), "ghash is not a default"
    env = {"OPENSSL_ia32cap": NOAESNI}
    assert listed_names(binary, env, "--aesgen_what=ghash") == \
        ["openssl-noaesni-ghash/ghash/128/64"]
    assert listed_names(binary, None, "--aesgen_what=ghash", "--aesgen_keys=256") == []
    assert listed_names(binary, env, "--aesgen_what=gcm-siv") == []  # OpenSSL 3.0: no GCM-SIV
    assert listed_names(binary, env, "--aesgen_what=otr") == []  # no OTR table in the child
    # only AES-NI masked: OpenSSL would still hash with PCLMULQDQ, which the program refuses
    proc = subprocess.run([str(binary), "--aesgen_what=ghash", "--aesgen_list"],
                          capture_output=True, text=True, timeout=RUN_TIMEOUT,
                          env={**os.environ, "OPENSSL_ia32cap": "~0x200000000000000"})
    assert proc.returncode != 0 and "does not mask PCLMULQDQ" in proc.stderr, proc.stderr


@pytest.mark.parametrize("preset", PRESETS[:1], ids=lambda p: p.name)
def test_aesgen_what_picks_the_tables(preset, bench_binaries):
    binary = bench_binaries[preset.name]
    ctr = listed_names(binary, None, "--aesgen_what=ctr")
    gcm = listed_names(binary, None, "--aesgen_what=gcm")
    siv = listed_names(binary, None, "--aesgen_what=gcm-siv")
    otr = listed_names(binary, None, "--aesgen_what=otr")
    default = listed_names(binary)
    assert ctr and gcm and siv and otr
    assert not any(n.split("/")[1] in AEAD_MODES for n in ctr)
    assert all("/gcm_seal/" in n for n in gcm)  # gcm is GCM alone
    assert all(n.split("/")[1] in GCM_SIV_MODES for n in siv)
    assert all(n.split("/")[1] in (*OTR_MODES, "otr_ref") for n in otr)
    assert sorted(default) == sorted(ctr + gcm + siv + otr)
    assert sorted(listed_names(binary, None, "--aesgen_what=otr,gcm")) == sorted(gcm + otr)
    # gcm-fresh: the set's GCM kernels alone, the same records under fresh random nonces
    fresh = listed_names(binary, None, "--aesgen_what=gcm-fresh")
    gcm_names = {a["name"] for a in manifest(preset).get("aeads", []) if a["mode"] == "gcm"}
    kernels = {n.split("/")[0] for n in gcm if n.split("/")[0] in gcm_names}
    assert kernels and {n.split("/")[0] for n in fresh} == kernels
    assert {n.replace("/gcm_seal_fresh/", "/gcm_seal/") for n in fresh} == \
        {n for n in gcm if n.split("/")[0] in kernels}
    assert sorted(listed_names(binary, None, "--aesgen_what=gcm,gcm-fresh")) == \
        sorted(gcm + fresh)
    assert not any("/gcm_seal_fresh/" in n for n in default)
    # sizes and keys apply to gcm_seal, the GCM-SIV and the OTR benchmarks too
    for what in ("gcm", "gcm-siv", "otr"):
        names = listed_names(binary, None, f"--aesgen_what={what}", "--aesgen_aead_sizes=17,1420",
                             "--aesgen_keys=256")
        assert {n.split("/", 2)[2] for n in names} == {"256/17", "256/1420"}, what
    for bad in ("--aesgen_what=ocb", "--aesgen_aead_sizes=0", "--aesgen_aead_sizes=65521"):
        proc = subprocess.run([str(binary), bad, "--aesgen_list"], capture_output=True,
                              text=True, timeout=RUN_TIMEOUT)
        assert proc.returncode == 2 and "aesgen_bench: error:" in proc.stderr, bad


@pytest.mark.parametrize("preset", PRESETS[:1], ids=lambda p: p.name)
def test_missing_boringssl_is_named_and_the_rest_runs(preset, bench_binaries, tmp_path):
    binary = bench_binaries[preset.name]
    env = {"AESGEN_BORINGSSL_LIB": str(tmp_path / "no-such-libcrypto.so")}
    data, stderr = run_bench(binary, tmp_path, "--aesgen_what=gcm", "--aesgen_keys=128",
                             env=env)
    assert re.search(r"^skip boringssl-gcm: cannot load .*no-such-libcrypto\.so", stderr,
                     re.M), stderr
    impls = {r["name"].split("/")[0] for r in data["benchmarks"]}
    assert "boringssl-gcm" not in impls and {"openssl-gcm", "libgcrypt-gcm"} <= impls
    # GCM-SIV likewise: libgcrypt's is the reference, and runs
    data, stderr = run_bench(binary, tmp_path, "--aesgen_what=gcm-siv", "--aesgen_keys=128",
                             env=env)
    assert re.search(r"^skip boringssl-gcm-siv: cannot load .*no-such-libcrypto\.so", stderr,
                     re.M), stderr
    impls = {r["name"].split("/")[0] for r in data["benchmarks"]}
    assert "boringssl-gcm-siv" not in impls and "libgcrypt-gcm-siv" in impls


@pytest.mark.parametrize("preset", PRESETS[:1], ids=lambda p: p.name)
def test_openssl_ia32cap_runs_openssl_without_aesni_alone(preset, bench_binaries, tmp_path):
    binary = bench_binaries[preset.name]
    env = {"OPENSSL_ia32cap": NOAESNI}
    data, _ = run_bench(binary, tmp_path, env=env)
    runs = {r["name"]: r for r in data["benchmarks"]}
    assert {name.split("/")[0] for name in runs} == {"openssl-noaesni",
                                                     "openssl-noaesni-gcm"}, sorted(runs)
    assert expected_names("openssl-noaesni", (128, 192, 256)) <= set(runs)
    assert {n for n in runs if n.startswith("openssl-noaesni-gcm/gcm_seal/128/")}, sorted(runs)
    assert set(runs) == set(listed_names(binary, env))
    for run in runs.values():
        check_figures(run)
    assert "env:" + NOAESNI in data["context"]["openssl_cpu_settings"]


def _fake_run(values: dict[str, list[float]]) -> dict:
    """One process's Google Benchmark JSON: per name, one iteration entry per value."""
    return {"benchmarks": [
        {"name": f"{name}/repeats:{len(vals)}", "run_name": name, "run_type": "iteration",
         "ticks_per_byte": v, "bytes_per_second": 1e9, "iterations": 10}
        for name, vals in values.items() for v in vals]}


def test_summary_is_the_median_of_all_processes_with_their_spread():
    name = "openssl-gcm/gcm_seal/128/64"
    runs = [_fake_run({name: [10.0, 11.0, 12.0]}), _fake_run({name: [20.0, 21.0, 22.0]}),
            _fake_run({name: [13.0, 14.0, 30.0]})]
    row = B.summarize(*runs)[name]
    assert row["median"] == 14.0                          # of all nine repetitions
    assert row["process_medians"] == [11.0, 21.0, 14.0]
    assert row["spread_over"] == "processes" and row["processes"] == 3
    assert row["spread"] == (21.0 - 11.0) / 14.0          # per-process medians, not reps
    assert (row["min"], row["max"], row["repetitions"]) == (10.0, 30.0, 9)
    # one process: the spread of its repetitions, as before
    one = B.summarize(runs[2])[name]
    assert one["spread_over"] == "repetitions" and one["spread"] == (30.0 - 13.0) / 14.0


def test_aead_table_rows_are_implementations_and_columns_sizes():
    gcm64, gcm1420 = "openssl-gcm/gcm_seal/128/64", "openssl-gcm/gcm_seal/128/1420"
    runs = [_fake_run({gcm64: [12.0], gcm1420: [1.2], "libgcrypt-gcm/gcm_seal/128/64": [5.0],
                       "openssl/stream/128/16": [1.0]}),   # a CTR row: not in the table
            _fake_run({gcm64: [14.0], gcm1420: [1.2], "libgcrypt-gcm/gcm_seal/128/64": [5.0]})]
    summary = B.summarize(*runs)
    text = B.aead_table(summary, 128, (64, 1420))
    lines = text.splitlines()
    assert lines[0].startswith("AES-128-GCM seal")
    assert "64 B" in lines[0] and "1420 B" in lines[0]
    assert [ln.split()[0] for ln in lines[2:]] == ["libgcrypt-gcm", "openssl-gcm"]
    assert "13.000 ±  8%" in lines[3]                     # (14 - 12) / 13, halved
    md = B.aead_table(summary, 128, (64, 1420), markdown=True)
    assert "| openssl-gcm | 13.000 ±8% [12.000..14.000] | 1.200 ±0% [1.200..1.200] |" in md
    assert B.aead_table(summary, 256, (64,)) == ""


def test_fresh_nonce_gcm_table_is_its_own():
    runs = [_fake_run({"vaes512-gcm-r2/gcm_seal/128/1420": [0.12],
                       "vaes512-gcm-r2/gcm_seal_fresh/128/1420": [0.13],
                       "vaes512-gcm-none/gcm_seal_fresh/128/1420": [0.125],
                       "ipsec-mb-avx512-gcm/gcm_seal/128/1420": [0.16]})]
    summary = B.summarize(*runs)
    tls = B.aead_table(summary, 128, (1420,))
    fresh = B.aead_table(summary, 128, (1420,), mode=B.AEAD_FRESH_MODE)
    assert "0.120" in tls and "0.130" not in tls and "ipsec-mb" in tls
    assert "fresh nonces" in fresh and "0.130" in fresh and "0.125" in fresh
    assert "ipsec-mb" not in fresh and "0.120" not in fresh
    assert "fresh random" in B.MODE_TITLES[B.AEAD_FRESH_MODE]


def test_ghash_table_rows_are_implementations_and_columns_sizes():
    runs = [_fake_run({"gfni256-gcm-r2/ghash/128/1024": [0.6], "ct-holes-ghash/ghash/128/1024":
                       [7.0], "ct-holes-ghash/ghash/128/16384": [7.2],
                       "openssl-gcm/gcm_seal/128/1024": [1.0]})]   # a GCM row: not in it
    summary = B.summarize(*runs)
    lines = B.ghash_table(summary, (1024, 16384)).splitlines()
    assert lines[0].startswith("GHASH") and "16384 B" in lines[0]
    assert [ln.split()[0] for ln in lines[2:]] == ["gfni256-gcm-r2", "ct-holes-ghash"]
    assert "7.200" in lines[3] and "7.200" not in lines[2]
    md = B.ghash_table(summary, (1024,), markdown=True)
    assert md.startswith("**AES-128-GCM, GHASH alone (AAD only")
    assert "| ct-holes-ghash | 7.000 ±0% |" in md
    assert B.ghash_table(B.summarize(runs[0] | {"benchmarks": []}), (1024,)) == ""


def test_gcm_siv_tables_have_ticks_per_byte_and_per_record():
    seal16, open16 = "aesni-gcm-siv/gcm_siv_seal/128/16", "aesni-gcm-siv/gcm_siv_open/128/16"
    peer16 = "libgcrypt-gcm-siv/gcm_siv_seal/128/16"

    def run(per_byte: dict[str, float], per_message: dict[str, float]) -> dict:
        data = _fake_run({name: [v] for name, v in per_byte.items()})
        for b in data["benchmarks"]:
            b["ticks_per_message"] = per_message[b["run_name"]]
        return data

    summary = B.summarize(run({seal16: 18.0, open16: 12.0, peer16: 41.0},
                              {seal16: 288.0, open16: 192.0, peer16: 656.0}),
                          run({seal16: 20.0, open16: 12.0, peer16: 41.0},
                              {seal16: 320.0, open16: 192.0, peer16: 656.0}))
    row = summary[seal16]
    assert row["ticks_per_message"] == 304.0
    assert row["ticks_per_message_process_medians"] == [288.0, 320.0]
    assert row["ticks_per_message_spread"] == (320.0 - 288.0) / 304.0
    seal = B.gcm_siv_table(summary, "gcm_siv_seal", 128, (16,)).splitlines()
    assert seal[0].startswith("AES-128-GCM-SIV seal")
    assert [ln.split()[0] for ln in seal[2:]] == ["aesni-gcm-siv", "libgcrypt-gcm-siv"]
    assert "19.000 ±  5%" in seal[2]
    lines = B.per_message_table(summary, 128, (16, 1420)).splitlines()
    assert "seal 16 B" in lines[0] and "open 16 B" in lines[0]
    assert "1420" not in lines[0]
    assert "304 ±  5%" in lines[2] and "192 ±  0%" in lines[2]
    assert lines[3].split()[0] == "libgcrypt-gcm-siv" and "656" in lines[3]
    md = B.per_message_table(summary, 128, (16,), markdown=True)
    assert "| aesni-gcm-siv | 304 ±5% [288..320] | 192 ±0% [192..192] |" in md
    assert "| libgcrypt-gcm-siv | 656 ±0% [656..656] |  |" in md  # it has no open row here
    assert B.per_message_table(summary, 256, (16,)) == ""
    assert B.per_message_table(summary, 128, (1420,)) == ""  # no small size asked for


def test_otr_tables_and_ratios_from_made_up_runs():
    def run(values: dict[str, float]) -> dict:
        data = _fake_run({name: [v] for name, v in values.items()})
        for b in data["benchmarks"]:
            b["ticks_per_message"] = b["ticks_per_byte"] * int(b["run_name"].rsplit("/", 1)[1])
        return data

    figures = {"vaes512-otr/otr_seal/128/16384": 0.100, "vaes512-otr/otr_open/128/16384": 0.110,
               "vaes512-otr/otr_seal/128/16": 8.0, "vaes512-otr/otr_open/128/16": 9.0,
               "aesni-otr-v2/otr_seal/128/16384": 0.400,
               "libgcrypt-ocb/otr_seal/128/16384": 0.125, "libgcrypt-ocb/otr_open/128/16384": 0.132,
               "openssl-ocb/otr_seal/128/16384": 0.250, "libgcrypt-ocb/otr_seal/128/16": 13.0,
               "vaes512-face-none/otr_ref/128/16384": 0.080,
               "vaes512-gcm-none/otr_ref/128/16384": 0.125,
               "aesni-face-none/otr_ref/128/16384": 0.200,
               "vaes512-face-none/stream/128/16384": 0.05,  # a CTR table's row: not OTR's
               "libgcrypt-gcm-siv/gcm_siv_seal/128/16384": 0.4}
    summary = B.summarize(run(figures), run(figures))
    assert B.otr_kernels(summary) == ["aesni-otr-v2", "vaes512-otr"]
    seal = B.otr_table(summary, "otr_seal", 128, (16, 16384))
    lines = seal.splitlines()
    assert lines[0].startswith("AES-128-OTR seal") and "16384 B" in lines[0]
    labels = [re.split(r"\s{2,}", ln)[0] for ln in lines[2:]]
    assert labels == ["aesni-otr-v2", "vaes512-otr", "libgcrypt-ocb", "openssl-ocb",
                      "aesni-face-none (CTR)", "vaes512-face-none (CTR)",
                      "vaes512-gcm-none (GCM)"], labels
    assert "libgcrypt-gcm-siv" not in seal and "0.050" not in seal
    opened = B.otr_table(summary, "otr_open", 128, (16384,)).splitlines()
    assert [ln.split()[0] for ln in opened[2:]] == ["vaes512-otr", "libgcrypt-ocb"]
    md = B.otr_table(summary, "otr_seal", 128, (16384,), markdown=True)
    assert "| vaes512-gcm-none (GCM) | 0.125 ±0% [0.125..0.125] |" in md
    per_record = B.per_message_table(summary, 128, (16, 16384), modes=B.OTR_MODES,
                                     cipher="OTR").splitlines()
    assert "seal 16 B" in per_record[0] and "open 16 B" in per_record[0]
    # rows with a record of at most 256 bytes only (aesni-otr-v2 ran at 16384 B alone)
    assert [ln.split()[0] for ln in per_record[2:]] == ["vaes512-otr", "libgcrypt-ocb"]
    assert per_record[2].split()[1:3] == ["128", "±"]  # 8.0 ticks/B x 16 B
    assert B.otr_table(summary, "otr_seal", 256, (16384,)) == ""

    (row,) = B.otr_ratios(summary, (128,), (16384,))[1:]
    assert row["impl"] == "vaes512-otr" and row["seal"] == 0.100 and row["open"] == 0.110
    assert row["speedup_seal"] == {"libgcrypt-ocb": pytest.approx(1.25),
                                   "openssl-ocb": pytest.approx(2.5)}
    assert row["speedup_open"] == {"libgcrypt-ocb": pytest.approx(1.2)}
    assert row["versus"]["CTR"] == {"impl": "vaes512-face-none", "ratio": pytest.approx(1.25)}
    assert row["versus"]["GCM"] == {"impl": "vaes512-gcm-none", "ratio": pytest.approx(0.8)}
    aesni = B.otr_ratios(summary, (128,), (16384,))[0]
    assert aesni["impl"] == "aesni-otr-v2" and aesni["open"] is None
    assert aesni["versus"] == {"CTR": {"impl": "aesni-face-none", "ratio": pytest.approx(2.0)}}

    sections = B.otr_sections(summary, (128,), (16, 16384))
    targets = sections[-1][0]
    assert "OTR kernels against their targets" in targets
    vaes = next(ln for ln in targets.splitlines() if "vaes512-otr" in ln)
    assert "16384 B" in vaes and "1.25x libgcrypt-ocb, 2.50x openssl-ocb" in vaes
    assert "1.25x the ticks of vaes512-face-none (CTR)" in vaes
    assert "0.80x the ticks of vaes512-gcm-none (GCM)" in vaes
    assert "open 0.110 ticks/B: 1.20x libgcrypt-ocb" in vaes
    assert " 16 B" not in targets  # at the target sizes (16384 here), not every size

    # without an OTR kernel: the peers and the comparison, and a line saying why
    peers_only = {n: v for n, v in figures.items() if "-otr" not in n}
    summary = B.summarize(run(peers_only))
    sections = B.otr_sections(summary, (128,), (16384,), "generated/x")
    assert sections[-1][0].strip() == (
        "no AES-OTR kernel ran: generated/x has none this CPU runs yet (modes otr, otr-v2, "
        "otr-s, otr-v2-s); "
        "the OTR tables hold the OCB peers and the comparison rows only")
    assert B.otr_ratios(summary, (128,), (16384,)) == []
    assert B.otr_sections(B.summarize(run({"openssl/stream/128/16": 1.0})), (128,), (16,)) == []


def test_bench_refuses_gcm_siv_without_its_key_sizes(aesgen_exe):
    proc = subprocess.run([str(aesgen_exe), "bench", "--cpu", "x86-64-v2", "--what", "gcm-siv",
                           "--keys", "192"], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2, proc.stderr
    assert "no GCM-SIV table for key sizes 192" in proc.stderr, proc.stderr


def test_bench_refuses_otr_without_its_key_sizes(aesgen_exe):
    proc = subprocess.run([str(aesgen_exe), "bench", "--cpu", "x86-64-v2", "--what", "otr",
                           "--keys", "192"], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2, proc.stderr
    assert "no OTR table for key sizes 192" in proc.stderr, proc.stderr
