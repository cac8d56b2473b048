"""Run pytest and every preset's GoogleTest binary; print real counts and one total line.

The total line has the shape CI reads: ``total: N passed, N failed, N skipped``. A skipped
GoogleTest case is listed with the reason the harness gave (e.g. a missing CPU feature).
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from pathlib import Path


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
    cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
           f"--junitxml={report}", str(root / "tests")]
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


def run_gtest_binary(binary: Path, gtest_filter: str | None) -> Tally:
    report = binary.with_name("gtest-results.xml")
    log = binary.with_name("gtest.log")
    report.unlink(missing_ok=True)
    cmd = [str(binary), f"--gtest_output=xml:{report}"]
    if gtest_filter:
        cmd.append(f"--gtest_filter={gtest_filter}")
    _say(f"== {binary.parent.name}/{binary.name}  (log: {log})")
    env = dict(os.environ)
    env.setdefault("AESGEN_TEST_SCALE", "3")      # 3 x the harness's random case counts
    with log.open("w") as out:
        proc = subprocess.run(cmd, stdout=out, stderr=subprocess.STDOUT, env=env)
    tally = Tally()
    if not report.exists():
        tally.failed += 1
        tally.notes.append(f"{binary}: no report (exit {proc.returncode}); see {log}")
        return tally
    for case in ET.parse(report).getroot().iter("testcase"):
        name = f"{binary.parent.name}: {case.get('classname')}.{case.get('name')}"
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
    if proc.returncode != 0 and tally.failed == 0:
        tally.failed += 1
        tally.notes.append(f"{binary} exited {proc.returncode}; see {log}")
    _say(f"   {tally.line()}")
    return tally


def run_harness(root: Path, builddir: Path, gtest_filter: str | None) -> Tally:
    from ..build.configure import write_build_ninja

    path = write_build_ninja(root, builddir, "aesgen test")
    _say(f"== ninja -f {path.relative_to(root)}")
    proc = subprocess.run(["ninja", "-C", str(builddir)], cwd=root)
    if proc.returncode != 0:
        return Tally(failed=1, notes=["the harness did not build (ninja failed)"])
    from ..build.configure import discover_presets

    tally = Tally()
    # the presets build.ninja was written for, not whatever an older build left behind
    binaries = [builddir / p.name / "aesgen_tests" for p in discover_presets(root)]
    binaries = [b for b in binaries if b.exists()]
    if not binaries:
        return Tally(failed=1, notes=["no GoogleTest binary was built"])
    for binary in binaries:
        tally.add(run_gtest_binary(binary, gtest_filter))
    return tally


def run_all(root: Path, *, pytest: bool, harness: bool, gtest_filter: str | None) -> int:
    builddir = root / "build"
    total = Tally()
    parts = []
    if pytest:
        t = run_pytest(root, builddir)
        parts.append(("pytest", t))
        total.add(t)
    if harness:
        t = run_harness(root, builddir, gtest_filter)
        parts.append(("googletest", t))
        total.add(t)
    _say("== summary")
    for name, t in parts:
        _say(f"   {name}: {t.line()}")
    for note in total.notes:
        _say(f"   {note}")
    _say(f"total: {total.line()}")
    return 0 if total.failed == 0 and total.passed > 0 else 1
