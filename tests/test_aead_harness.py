"""harness/aead_tests.cc can fail: it is built with the real trampoline (harness/abi_check_<arch>.S)
against a mock set (tests/aead_mock/: an aesgen.h with the AEAD contract of DESIGN.md and
mock_gcm.c, AES-GCM over OpenSSL's AES with a GHASH of its own). The correct mock passes every
test; each mock broken on purpose (a compile-time switch of mock_gcm.c) fails the tests that
look at what it breaks:

- LEAVES_PLAINTEXT: open leaves the plaintext in out when the tag is wrong;
- ACCEPTS_WRONG_TAG: open and finish_open accept any tag;
- IGNORES_TAG_LEN: tags are always 16 bytes (written, compared), tag_len unchecked;
- WRITES_PAST_CTX: init writes one byte at ctx + ctx_size;
- INC128: the counter carries out of bytes 12..15 (only the inc32 wrap test can see it);
- AAD_AFTER_DATA: aad after data began is taken;
- WIPE_KEEPS_KEY: wipe leaves the key in the context.

The mock set has three kernels: one with method "table" and constant_time 0 (listed first, so
aesgen_best_aead must pass over it), a constant-time one, and one that needs a CPU feature no
CPU has (skipped, or a failure under AESGEN_TEST_EXPECT_ALL_KERNELS=1).

The harness is compiled once at -O0 (the time goes into compiling GoogleTest's templates, not
into running) and linked against each mock; the runs are at AESGEN_TEST_SCALE=0.2. Skipped,
naming what is missing, without g++, GoogleTest or OpenSSL's headers.
"""
from __future__ import annotations

import os
import platform
import shutil
import subprocess
import xml.etree.ElementTree as ET
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from aesgen.paths import ROOT

HARNESS = ROOT / "harness"
MOCK = ROOT / "tests" / "aead_mock"
ARCH = {"x86_64": "x86_64", "amd64": "x86_64", "aarch64": "aarch64",
        "arm64": "aarch64"}.get(platform.machine().lower())
SCALE = "0.2"

# variant -> tests (of the constant-time kernel, mock_gcm) that must fail
BROKEN = {
    "LEAVES_PLAINTEXT": {"Tampering", "InPlace", "EveryTagLength"},
    "ACCEPTS_WRONG_TAG": {"Tampering", "InPlace", "EveryTagLength", "GuardPagesEveryBuffer",
                          "NullPointersWhereLengthIsZero"},
    "IGNORES_TAG_LEN": {"RandomSealOpen", "EveryTagLength", "LengthsOutOfRange",
                        "GuardPagesEveryBuffer"},
    "WRITES_PAST_CTX": {"KeyLengths", "GcmSpecVectors", "RandomSealOpen", "Tampering",
                        "WipeZeroesContext"},
    "INC128": {"Inc32WrapInsideMessage"},
    "AAD_AFTER_DATA": {"StreamingAadAfterDataIsRefused"},
    "WIPE_KEEPS_KEY": {"WipeZeroesContext"},
}
# Variants whose only failures must be the ones listed: nothing else notices them.
EXACT = {"INC128", "AAD_AFTER_DATA", "WIPE_KEEPS_KEY"}


def _missing_tools() -> list[str]:
    missing = [t for t in ("gcc", "g++") if shutil.which(t) is None]
    if ARCH is None:
        missing.append(f"a trampoline for {platform.machine()}")
    if missing:
        return missing
    probe = subprocess.run(
        ["g++", "-std=c++17", "-x", "c++", "-", "-o", os.devnull, "-lgtest", "-lgtest_main",
         "-lpthread", "-lcrypto"],
        input="#include <gtest/gtest.h>\n#include <openssl/evp.h>\n"
              "TEST(P, Q) { EXPECT_NE(EVP_aes_128_gcm(), nullptr); }\n",
        capture_output=True, text=True)
    if probe.returncode != 0:
        missing.append("GoogleTest or OpenSSL development files (Debian: libgtest-dev "
                       "libssl-dev): " + probe.stderr.strip().splitlines()[0]
                       if probe.stderr.strip() else "libgtest-dev or libssl-dev")
    return missing


@dataclass
class Run:
    """One mock variant's GoogleTest run: test name -> "passed" / "failed" / "skipped"."""

    returncode: int
    results: dict[str, str] = field(default_factory=dict)
    log: str = ""

    def with_status(self, status: str) -> set[str]:
        return {name for name, s in self.results.items() if s == status}


def _check(cmd: list, cwd: Path) -> None:
    proc = subprocess.run([str(c) for c in cmd], cwd=cwd, capture_output=True, text=True)
    if proc.returncode != 0:
        pytest.fail(f"{' '.join(map(str, cmd))} exited {proc.returncode}:\n{proc.stderr}")


def _run(binary: Path, report: Path, extra_env: dict[str, str] | None = None,
         gtest_filter: str | None = None) -> Run:
    env = dict(os.environ, AESGEN_TEST_SCALE=SCALE)
    env.pop("AESGEN_TEST_EXPECT_ALL_KERNELS", None)
    env.update(extra_env or {})
    cmd = [str(binary), f"--gtest_output=xml:{report}"]
    if gtest_filter:
        cmd.append(f"--gtest_filter={gtest_filter}")
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=120)
    run = Run(proc.returncode, log=proc.stdout[-4000:] + proc.stderr[-2000:])
    if report.exists():
        for case in ET.parse(report).getroot().iter("testcase"):
            name = f"{case.get('classname')}.{case.get('name')}"
            if case.find("failure") is not None:
                run.results[name] = "failed"
            elif case.find("skipped") is not None or case.get("result") == "skipped":
                run.results[name] = "skipped"
            elif case.get("status") == "run":
                run.results[name] = "passed"
    return run


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> dict[str, Run]:
    """Build the harness once, link it against every mock variant, run each; keyed by
    variant ("" = the correct mock, "EXPECT_ALL" = it under AESGEN_TEST_EXPECT_ALL_KERNELS=1)."""
    missing = _missing_tools()
    if missing:
        pytest.skip(f"cannot build the AEAD harness: missing {'; '.join(missing)}")
    out = tmp_path_factory.mktemp("aead_harness")
    inc = ["-I", HARNESS, "-I", MOCK]
    warn = ["-Wall", "-Wextra", "-Werror"]
    harness_o, abi_o = out / "aead_tests.o", out / "abi_check.o"

    def compile_harness() -> None:
        _check(["g++", "-std=c++17", "-O0", *warn, *inc, "-c", HARNESS / "aead_tests.cc",
                "-o", harness_o], out)

    def compile_mock(variant: str) -> Path:
        obj = out / f"mock_{variant or 'ok'}.o"
        flags = [f"-DMOCK_BROKEN_{variant}"] if variant else []
        _check(["gcc", "-std=c11", "-O2", *warn, *flags, "-I", MOCK, "-c", MOCK / "mock_gcm.c",
                "-o", obj], out)
        return obj

    variants = [""] + list(BROKEN)
    with ThreadPoolExecutor(max_workers=max(2, os.cpu_count() or 2)) as pool:
        builds = [pool.submit(compile_harness),
                  pool.submit(_check, ["gcc", *warn, "-I", HARNESS, "-c",
                                       HARNESS / f"abi_check_{ARCH}.S", "-o", abi_o], out)]
        mocks = {v: pool.submit(compile_mock, v) for v in variants}
        for b in builds:
            b.result()
        binaries = {}
        for v in variants:
            binary = out / f"aead_tests_{v or 'ok'}"
            _check(["g++", "-o", binary, harness_o, mocks[v].result(), abi_o, "-lgtest",
                    "-lgtest_main", "-lpthread", "-lcrypto"], out)
            binaries[v] = binary
        jobs = {v: pool.submit(_run, binaries[v], out / f"report_{v or 'ok'}.xml")
                for v in variants}
        jobs["EXPECT_ALL"] = pool.submit(
            _run, binaries[""], out / "report_expect_all.xml",
            {"AESGEN_TEST_EXPECT_ALL_KERNELS": "1"}, "Aeads/Aead.KeyLengths/*")
        return {v: j.result() for v, j in jobs.items()}


def _kernel_tests(run: Run, status: str, kernel: str = "mock_gcm") -> set[str]:
    """The parameterized AEAD tests ("Tampering", ...) of one kernel with that status."""
    prefix, suffix = "Aeads/Aead.", "/" + kernel
    return {name[len(prefix):-len(suffix)] for name in run.with_status(status)
            if name.startswith(prefix) and name.endswith(suffix)}


def test_correct_mock_passes_everything(runs: dict[str, Run]) -> None:
    run = runs[""]
    assert run.returncode == 0 and not run.with_status("failed"), run.log
    passed = run.with_status("passed")
    # The AEAD suites ran for both kernels this CPU "runs", and the trampoline self-test too.
    for kernel in ("mock_gcm", "mock_table_gcm"):
        assert len(_kernel_tests(run, "passed", kernel)) >= 15, sorted(passed)
    assert {"AbiTrampoline10.DetectsEachViolation", "AeadRegistry.BestAeadRunsHere",
            "AeadHarnessSelfTest.OracleMatchesGcmSpecVectors",
            "AeadHarnessSelfTest.NoncesWithChosenJ0AndTheInc32Wrap"} <= passed
    # The kernel that needs a feature no CPU has is skipped, every test of it.
    skipped = _kernel_tests(run, "skipped", "mock_gcm_needs_mock_feature")
    assert skipped == _kernel_tests(run, "passed", "mock_gcm")


def test_missing_feature_fails_when_every_kernel_is_expected(runs: dict[str, Run]) -> None:
    run = runs["EXPECT_ALL"]
    assert run.results.get("Aeads/Aead.KeyLengths/mock_gcm_needs_mock_feature") == "failed", \
        run.log
    assert run.results.get("Aeads/Aead.KeyLengths/mock_gcm") == "passed", run.log


@pytest.mark.parametrize("variant", sorted(BROKEN))
def test_broken_mock_fails(runs: dict[str, Run], variant: str) -> None:
    run = runs[variant]
    assert run.returncode != 0, f"the suite passed a mock with {variant}:\n{run.log}"
    failed = _kernel_tests(run, "failed")
    assert BROKEN[variant] <= failed, \
        f"{variant}: expected {sorted(BROKEN[variant])} to fail, failed: {sorted(failed)}"
    if variant in EXACT:
        assert failed == BROKEN[variant], f"{variant}: also failed {sorted(failed - BROKEN[variant])}"
    # The harness's own tests do not depend on the mock.
    assert not {n for n in run.with_status("failed")
                if n.startswith(("AbiTrampoline10.", "AeadHarnessSelfTest."))}
