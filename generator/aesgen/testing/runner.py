"""Run pytest and every preset's GoogleTest binary; print real counts and one total line.

The total line has the shape CI reads: ``total: N passed, N failed, N skipped``. A skipped
GoogleTest case is listed with the reason the harness gave (e.g. a missing CPU feature).

Each binary runs split into GoogleTest shards side by side, one a core (up to 4). On an
x86-64 host the AArch64 presets' binaries (cross-built by the same build.ninja) run under
``qemu-aarch64 -cpu max``, with AESGEN_TEST_EXPECT_ALL_KERNELS=1: that CPU model has every
feature, so a kernel that would be skipped there is a failure. A missing cross toolchain
or emulator is a failure too, named, never a silent skip.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from pathlib import Path

# AESGEN_TEST_SCALE (a multiplier of the harness's random case counts) when the caller did
# not set one: natively 2 (8000 random streams a kernel); under the emulator 0.3 (1200),
# since there AES instructions cost microseconds and TBL-based kernels run at a few MB/s.
# These keep the whole test command (pytest, the harness's build and every preset's
# binary, qemu and wine included) under 30 minutes on two cores. Every test runs either
# way; the exhaustive ones (every split byte, every in15 start, every carry) are not scaled.
NATIVE_SCALE = "2"
EMULATED_SCALE = "0.3"


@dataclass
class Tally:
    passed: int = 0
    failed: int = 0
    skipped: int = 0
    notes: list[str] = field(default_factory=list)

    def add(self, other: "Tally") -> None:
        self.passed += other.passed
        self.failed += other.failed
        self.skipped += other.skipped
        self.notes += other.notes

    def line(self) -> str:
        return f"{self.passed} passed, {self.failed} failed, {self.skipped} skipped"


def _say(text: str) -> None:
    print(text, flush=True)


def run_pytest(root: Path, builddir: Path) -> Tally:
    builddir.mkdir(parents=True, exist_ok=True)
    report = builddir / "pytest-results.xml"
    report.unlink(missing_ok=True)
    # one worker a core (pytest-xdist); a test file stays on one worker, so the per-file
    # caches of rendered sets and built libraries are reused
    workers = str(max(1, min(os.cpu_count() or 1, 4)))
    cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-n", workers,
           "--dist", "loadfile", f"--junitxml={report}", str(root / "tests")]
    _say(f"== pytest: {' '.join(cmd[2:])}")
    proc = subprocess.run(cmd, cwd=root)
    tally = Tally()
    if not report.exists():
        tally.failed += 1
        tally.notes.append(f"pytest produced no report (exit {proc.returncode})")
        return tally
    for suite in ET.parse(report).getroot().iter("testsuite"):
        tests = int(suite.get("tests", 0))
        bad = int(suite.get("failures", 0)) + int(suite.get("errors", 0))
        skipped = int(suite.get("skipped", 0))
        tally.passed += tests - bad - skipped
        tally.failed += bad
        tally.skipped += skipped
    if proc.returncode not in (0, 1) and tally.failed == 0:
        tally.failed += 1
        tally.notes.append(f"pytest exited {proc.returncode}")
    return tally


@dataclass(frozen=True)
class GtestSuite:
    """One GoogleTest binary and how to run it."""

    binary: Path
    label: str                       # what the per-suite line says it runs on
    launcher: tuple[str, ...] = ()   # e.g. ("qemu-aarch64", "-cpu", "max")
    env: tuple[tuple[str, str], ...] = ()
    default_scale: str = NATIVE_SCALE
    shards: int = 1                  # GoogleTest shards run side by side


def _parse_gtest_report(report: Path, preset: str, log: Path, tally: Tally) -> None:
    for case in ET.parse(report).getroot().iter("testcase"):
        name = f"{preset}: {case.get('classname')}.{case.get('name')}"
        failure = case.find("failure")
        skipped = case.find("skipped")
        if failure is not None:
            tally.failed += 1
            msg = (failure.get("message") or "").splitlines()
            tally.notes.append(f"FAILED {name}: {' | '.join(msg[:3])}")
        elif skipped is not None or case.get("result") == "skipped":
            tally.skipped += 1
            text = (skipped.get("message") if skipped is not None else "") or ""
            tally.notes.append(f"skipped {name}: {text.strip() or 'see ' + str(log)}")
        elif case.get("status") == "run":
            tally.passed += 1


def run_gtest_suite(suite: GtestSuite, gtest_filter: str | None) -> Tally:
    binary = suite.binary
    preset = binary.parent.name
    shards = max(1, suite.shards)
    names = [""] if shards == 1 else [f"-{i}" for i in range(shards)]
    reports = [binary.with_name(f"gtest-results{n}.xml") for n in names]
    logs = [binary.with_name(f"gtest{n}.log") for n in names]
    for old in binary.parent.glob("gtest-results*.xml"):
        old.unlink()
    shown = logs[0] if shards == 1 else binary.with_name("gtest-*.log")
    _say(f"== {preset}/{binary.name}  {suite.label}  (log: {shown})")
    env = dict(os.environ)
    env.setdefault("AESGEN_TEST_SCALE", suite.default_scale)
    env.update(dict(suite.env))
    started = time.monotonic()
    procs = []
    for i, (report, log) in enumerate(zip(reports, logs)):
        cmd = [*suite.launcher, str(binary), f"--gtest_output=xml:{report}"]
        if gtest_filter:
            cmd.append(f"--gtest_filter={gtest_filter}")
        shard_env = dict(env)
        if shards > 1:
            shard_env.update(GTEST_TOTAL_SHARDS=str(shards), GTEST_SHARD_INDEX=str(i))
        out = log.open("w")
        procs.append((subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, env=shard_env),
                      out))
    codes = []
    for proc, out in procs:
        codes.append(proc.wait())
        out.close()
    tally = Tally()
    for code, report, log in zip(codes, reports, logs):
        what = f"{binary}" + (f" (shard {report.stem.rsplit('-', 1)[1]})" if shards > 1 else "")
        if not report.exists():
            tally.failed += 1
            tally.notes.append(f"{what}: no report (exit {code}); see {log}")
            continue
        before = tally.failed
        _parse_gtest_report(report, preset, log, tally)
        if code != 0 and tally.failed == before:
            tally.failed += 1
            tally.notes.append(f"{what} exited {code}; see {log}")
    _say(f"   {tally.line()}  ({time.monotonic() - started:.0f} s)")
    return tally


def _missing_cross_tools(cross) -> list[str]:
    """What the cross build and its emulator need that this machine lacks."""
    missing = [tool for tool in cross.tools() if shutil.which(tool) is None]
    if not (Path(cross.gtest_src) / "src" / "gtest-all.cc").is_file():
        missing.append(f"GoogleTest sources in {cross.gtest_src} (Debian: googletest)")
    if shutil.which(cross.cc.split()[0]) is not None:
        found = subprocess.run([*cross.cc.split(), "-print-file-name=libcrypto.a"],
                               capture_output=True, text=True).stdout.strip()
        if not os.path.isabs(found):
            missing.append(f"OpenSSL's libcrypto.a for {cross.arch} (Debian: libssl-dev:arm64)")
    return missing


def _ninja(builddir: Path, root: Path, targets: list[str]) -> bool:
    return subprocess.run(["ninja", "-C", str(builddir), *targets], cwd=root).returncode == 0


def run_harness(root: Path, builddir: Path, gtest_filter: str | None) -> list[tuple[str, Tally]]:
    """Build and run every GoogleTest binary: the host's presets natively, then (on x86-64)
    the AArch64 presets under the emulator. One (name, tally) per part."""
    from ..build.configure import (CrossToolchain, cross_arch, discover_presets, host_arch,
                                   write_build_ninja)

    arch = host_arch()
    cross = CrossToolchain.from_env(os.environ)
    xarch = cross_arch(arch)
    host_presets = discover_presets(root)
    cross_presets = discover_presets(root, xarch) if xarch == cross.arch else []
    path = write_build_ninja(root, builddir, "aesgen test", cross=cross)
    parts: list[tuple[str, Tally]] = []
    # a binary's tests split over the cores (GoogleTest sharding): each test runs once
    shards = max(1, min(4, os.cpu_count() or 1))

    # The host's presets (build/<preset>/...), then the cross ones: a cross toolchain
    # problem fails the cross part without hiding the host's results.
    _say(f"== ninja -f {path.relative_to(root)}  ({arch} presets)")
    host = Tally()
    if not host_presets:
        host = Tally(failed=1, notes=[f"no generated {arch} preset: no GoogleTest binary to run"])
    elif not _ninja(builddir, root, [f"tests-{p.name}" for p in host_presets]):
        host = Tally(failed=1, notes=["the harness did not build (ninja failed)"])
    else:
        # the presets build.ninja was written for, not whatever an older build left behind
        binaries = [builddir / p.name / "aesgen_tests" for p in host_presets]
        binaries = [b for b in binaries if b.exists()]
        if not binaries:
            host = Tally(failed=1, notes=["no GoogleTest binary was built"])
        for binary in binaries:
            host.add(run_gtest_suite(GtestSuite(binary, label=f"{arch} (native)",
                                                shards=shards), gtest_filter))
    parts.append((f"googletest {arch}", host))

    if xarch is None:
        return parts
    label = f"{cross.arch} ({cross.run})"
    emulated = Tally()
    if not cross_presets:
        _say(f"== {cross.arch}: no generated {cross.arch} preset (generated/*/manifest.json "
             f"with \"arch\": \"{cross.arch}\"): nothing to run under {cross.run}")
        return parts
    missing = _missing_cross_tools(cross)
    if missing:
        msg = (f"the {cross.arch} harness cannot be built or run: missing "
               f"{'; '.join(missing)} (scripts/setup.sh --system installs them)")
        _say(f"== {cross.arch}: ERROR: {msg}")
        parts.append((f"googletest {label}", Tally(failed=1, notes=[msg])))
        return parts
    _say(f"== ninja -f {path.relative_to(root)}  ({cross.arch} presets, cross-built)")
    if not _ninja(builddir, root, [f"tests-{p.name}" for p in cross_presets]):
        parts.append((f"googletest {label}", Tally(
            failed=1, notes=[f"the {cross.arch} harness did not build (ninja failed)"])))
        return parts
    launcher = tuple(cross.run.split())
    # `-cpu max` has every feature: there a kernel that would be skipped is a failure.
    every_feature = any(a == "-cpu" and b == "max" for a, b in zip(launcher, launcher[1:]))
    env = (("AESGEN_TEST_EXPECT_ALL_KERNELS", "1"),) if every_feature else ()
    for p in cross_presets:
        suite = GtestSuite(builddir / p.name / "aesgen_tests", label=label, launcher=launcher,
                           env=env, default_scale=EMULATED_SCALE, shards=shards)
        emulated.add(run_gtest_suite(suite, gtest_filter))
    parts.append((f"googletest {label}", emulated))
    return parts


def run_all(root: Path, *, pytest: bool, harness: bool, gtest_filter: str | None) -> int:
    builddir = root / "build"
    total = Tally()
    parts = []
    if pytest:
        t = run_pytest(root, builddir)
        parts.append(("pytest", t))
        total.add(t)
    if harness:
        for name, t in run_harness(root, builddir, gtest_filter):
            parts.append((name, t))
            total.add(t)
    _say("== summary")
    for name, t in parts:
        _say(f"   {name}: {t.line()}")
    for note in total.notes:
        _say(f"   {note}")
    _say(f"total: {total.line()}")
    return 0 if total.failed == 0 and total.passed > 0 else 1
