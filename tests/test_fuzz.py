"""The libFuzzer targets (harness/fuzz/, `aesgen fuzz`): they run, and they can fail.

- `aesgen fuzz` on this CPU's preset runs both targets for a few seconds from the committed
  seed corpus (every kernel this CPU runs, the rest named as skipped) and finds nothing.
- The targets linked against C mocks instead of a generated set: the correct mocks run
  clean for a fixed number of inputs, and each mock broken on purpose (tests/fuzz_mock/
  mock_ctr.c, tests/aead_mock/'s switches) is found within a bounded number of inputs,
  its finding named.
- The log reader gets executions, coverage and the finding out of libFuzzer's output.

Needs clang-19 with libFuzzer (scripts/setup.sh --system installs it).
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from aesgen.paths import ROOT
from aesgen.testing import fuzz as F

CLANG = os.environ.get("FUZZ_CC", "clang-19")
CLANGXX = os.environ.get("FUZZ_CXX", "clang++-19")
FLAGS = ["-O1", "-g", "-fsanitize=address,undefined", "-fno-sanitize-recover=undefined"]
HARNESS = ROOT / "harness"
# a generated x86-64 set whose aesgen.h the CTR mock compiles against (struct, declarations)
CTR_HEADER_SET = ROOT / "generated" / "x86-64-v2"
AEAD_MOCK = ROOT / "tests" / "aead_mock"
CTR_MOCK = ROOT / "tests" / "fuzz_mock" / "mock_ctr.c"

pytestmark = pytest.mark.skipif(shutil.which(CLANGXX) is None,
                                reason=f"{CLANGXX} not installed (scripts/setup.sh --system)")


def _run(cmd, **kw):
    proc = subprocess.run(cmd, capture_output=True, text=True, **kw)
    assert proc.returncode == 0, f"{' '.join(map(str, cmd))}\n{proc.stdout}\n{proc.stderr}"
    return proc


@pytest.fixture(scope="module")
def mock_build(tmp_path_factory):
    """build(target, mock sources, defines, include dir) -> a fuzz binary linked with them."""
    out = tmp_path_factory.mktemp("fuzzmock")
    cache = {}

    def build(target: str, sources: list[Path], defines: tuple[str, ...], incdir: Path) -> Path:
        key = (target, tuple(sources), defines)
        if key in cache:
            return cache[key]
        name = f"{target}-{len(cache)}"
        objs = []
        tobj = out / f"{target}-{incdir.name}.o"
        if not tobj.exists():
            _run([CLANGXX, "-std=c++17", *FLAGS, "-fsanitize=fuzzer-no-link", "-I", str(HARNESS),
                  "-I", str(HARNESS / "fuzz"), "-I", str(incdir), "-c",
                  str(HARNESS / "fuzz" / f"{target}.cc"), "-o", str(tobj)])
        for i, src in enumerate(sources):
            obj = out / f"{name}-{i}.o"
            # the mocks memcpy 0 bytes from NULL (legal for a caller of the contract)
            _run([CLANG, *FLAGS, "-fno-sanitize=nonnull-attribute",
                  *(f"-D{d}" for d in defines), "-I", str(incdir), "-c",
                  str(src), "-o", str(obj)])
            objs.append(str(obj))
        exe = out / name
        _run([CLANGXX, *FLAGS, "-fsanitize=fuzzer", "-o", str(exe), str(tobj), *objs, "-lcrypto"])
        cache[key] = exe
        return exe

    return build


def _fuzz(exe: Path, work: Path, runs: int, target: str) -> F.FuzzResult:
    work.mkdir(parents=True, exist_ok=True)
    # not from the seed corpus: its inputs are for the generated sets' kernel lists
    return F.run_target(exe, target, 120, work, runs=runs, extra=("-seed=1",), seeds=False)


AEAD_SOURCES = [AEAD_MOCK / "mock_gcm.c", AEAD_MOCK / "mock_gcm_siv.c", AEAD_MOCK / "mock_otr.c"]

# switch -> what the finding must say (words of it; a tuple: one of them)
AEAD_BROKEN = {
    "MOCK_BROKEN_LEAVES_PLAINTEXT": "left non-zero bytes in out",
    "MOCK_BROKEN_ACCEPTS_WRONG_TAG": "accepted a forgery",
    "MOCK_BROKEN_IGNORES_TAG_LEN": "tag",
    "MOCK_BROKEN_WIPE_KEEPS_KEY": "wipe left",
    "MOCK_BROKEN_SIV_CTR_BE": "differs from the reference",
    # it reads on past the guard page, or answers 0
    "MOCK_BROKEN_SIV_NO_LENGTH_LIMIT": ("SEGV", "over the limit"),
    "MOCK_BROKEN_OTR_TAU_NOT_IN_FORMAT": "tag differs",
}
CTR_BROKEN = {
    "MOCK_CTR_CARRY64": "keystream differs",
    "MOCK_CTR_OVERREAD": "SEGV",
    "MOCK_CTR_WIPE_KEEPS": "wipe left",
    "MOCK_CTR_TAKES_20": "init took a key length",
}


def _words(said) -> tuple:
    return said if isinstance(said, tuple) else (said,)


def test_correct_mocks_run_clean(mock_build, tmp_path):
    exe = mock_build("fuzz_aead", AEAD_SOURCES, (), AEAD_MOCK)
    r = _fuzz(exe, tmp_path / "aead", 20000, "aead")
    assert r.finding is None, open(r.log).read()[-3000:]
    assert r.executions >= 20000 and r.kernels == 7
    assert any("MOCK" in s for s in r.skipped), "the mock kernel needing MOCK is not named"
    exe = mock_build("fuzz_ctr", [CTR_MOCK], (), CTR_HEADER_SET)
    r = _fuzz(exe, tmp_path / "ctr", 20000, "ctr")
    assert r.finding is None, open(r.log).read()[-3000:]
    assert r.executions >= 20000 and r.kernels == 1


@pytest.mark.parametrize("switch", sorted(AEAD_BROKEN))
def test_aead_target_finds_broken_mock(mock_build, tmp_path, switch):
    exe = mock_build("fuzz_aead", AEAD_SOURCES, (switch,), AEAD_MOCK)
    r = _fuzz(exe, tmp_path, 300000, "aead")
    assert r.finding, f"{switch}: no finding in {r.executions} inputs"
    said = _words(AEAD_BROKEN[switch])
    assert any(w in r.finding for w in said), f"{switch}: found {r.finding!r}"
    assert r.reproducer and Path(r.reproducer).exists()
    # the saved input reproduces it
    again = F.reproduce(exe, Path(r.reproducer))
    assert again.returncode != 0 and any(w in again.stdout for w in said)


@pytest.mark.parametrize("switch", sorted(CTR_BROKEN))
def test_ctr_target_finds_broken_mock(mock_build, tmp_path, switch):
    exe = mock_build("fuzz_ctr", [CTR_MOCK], (switch,), CTR_HEADER_SET)
    r = _fuzz(exe, tmp_path, 300000, "ctr")
    assert r.finding, f"{switch}: no finding in {r.executions} inputs"
    assert any(w in r.finding for w in _words(CTR_BROKEN[switch])), f"{switch}: found {r.finding!r}"


def test_aesgen_fuzz_runs_this_cpus_preset(aesgen_exe, tmp_path):
    """Both targets over every kernel of the native preset, a few seconds each."""
    proc = subprocess.run([str(aesgen_exe), "fuzz", "--minutes", "0.25", "--jobs", "2",
                           "-o", str(tmp_path)], capture_output=True, text=True, cwd=ROOT)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    summary = json.loads(next(tmp_path.glob("*/summary.json")).read_text())
    preset = summary["preset"]
    manifest = json.loads((ROOT / "generated" / preset / "manifest.json").read_text())
    by_target = {r["target"]: r for r in summary["results"]}
    assert set(by_target) == {"ctr", "aead"}
    for t, r in by_target.items():
        assert r["finding"] is None, f"{t}: {r['finding']} (log {r['log']})"
        assert r["executions"] > 1000, f"{t}: only {r['executions']} inputs"
        assert r["coverage_edges"] > 100
        # every kernel of the set is fuzzed or named as skipped with its missing feature
        listed = manifest["kernels"] if t == "ctr" else manifest.get("aeads", [])
        assert r["kernels"] + len(r["skipped"]) == len(listed), (t, r["kernels"], r["skipped"])
        assert all("lacks" in s or "no reference" in s for s in r["skipped"])
    assert "executions" in proc.stdout and "fuzz_aead" in proc.stdout
    # the fuzzer's first finding, kept in the seed corpus: GCM open with AAD over 2^61 - 1
    # bytes zeroed out (it must write nothing); found on aesni-gcm-none, whose kernel index
    # it names with the list narrowed to that kernel
    if not any(a["name"] == "aesni-gcm-none" for a in manifest.get("aeads", [])):
        return
    binary = F.target_binary(ROOT / "build", preset, "aead")
    replay = subprocess.run([str(binary), str(F.SEED_CORPUS / "aead" /
                                               "regress-gcm-open-aad-over-limit")],
                            capture_output=True, text=True,
                            env={**os.environ, "AESGEN_FUZZ_KERNELS": "aesni-gcm-none"})
    assert replay.returncode == 0 and "aesni-gcm-none" in replay.stderr, replay.stderr[-2000:]


def test_parse_log_reads_libfuzzer_output():
    log = """==aesgen fuzz== fuzz_aead: 3 kernels: a b c
==aesgen fuzz== skipped vaes512-gcm-none: this CPU lacks VAES
#2\tINITED cov: 812 ft: 900 corp: 1/1b exec/s: 0 rss: 40Mb
#4096\tpulse  cov: 1500 ft: 2600 corp: 40/900b lim: 43 exec/s: 2048 rss: 60Mb
==aesgen fuzz== FINDING: tag differs from the reference (got 00, want 01)
==aesgen fuzz== while: a: init(...)
artifact_prefix='/x/'; Test unit written to /x/crash-0123
stat::number_of_executed_units: 4100
stat::average_exec_per_sec:     2050
stat::new_units_added:          39
"""
    r = F.parse_log(log, F.FuzzResult(target="aead", seconds=2))
    assert (r.kernels, r.coverage_edges, r.features, r.corpus_units) == (3, 1500, 2600, 40)
    assert (r.executions, r.exec_per_second, r.new_units) == (4100, 2050, 39)
    assert r.finding.startswith("tag differs") and r.reproducer == "/x/crash-0123"
    assert r.skipped == ["vaes512-gcm-none: this CPU lacks VAES"]
    clean = F.parse_log("stat::number_of_executed_units: 10\n", F.FuzzResult("ctr", 1))
    assert clean.finding is None and clean.executions == 10
