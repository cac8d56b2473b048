"""Shared fixtures: the venv's `aesgen` command and generated sets built into shared libraries.

Repository paths come from ``aesgen.paths`` (ROOT, TARGETS, GENERATED), so tests import them
from there rather than from this file.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

# pytest runs its own workers on every CPU (-n): a set's kernels compile in one process, in
# pytest and in the `aesgen generate` it starts (tests that give -j say so themselves)
os.environ.setdefault("AESGEN_JOBS", "1")

# The console script installed beside the interpreter that runs pytest (the venv's).
AESGEN = Path(sys.executable).with_name("aesgen")


@pytest.fixture(scope="session")
def aesgen_exe() -> Path:
    if not AESGEN.exists():
        pytest.fail(f"{AESGEN} is missing: install the generator into the venv (pip install -e)")
    return AESGEN


def build_shared_library(src_dir: Path, out: Path) -> Path:
    """Link every .S of a generated set and its registry into ``out`` (a .so for ctypes).

    -Bsymbolic keeps each library's registry bound to its own kernels when several sets
    (with the same symbol names) are loaded into one process; --fatal-warnings turns a
    missing .note.GNU-stack (executable stack) into an error. The kernels' symbols, hidden
    by default, are exported (<PREFIX>EXPORT_KERNELS): tests call them by name.
    """
    prefix = json.loads((src_dir / "manifest.json").read_text())["prefix"]
    sources = sorted(str(p) for p in src_dir.glob("*.S")) + [str(src_dir / "aesgen_registry.c")]
    cmd = ["gcc", "-shared", "-fPIC", "-O1", "-I", str(src_dir), "-Wl,-Bsymbolic",
           f"-D{prefix.upper()}EXPORT_KERNELS",
           "-Wl,--fatal-warnings", "-o", str(out), *sources]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        pytest.fail(f"building {out.name} from {src_dir} failed:\n{proc.stderr}")
    return out


@pytest.fixture(scope="session")
def shared_library(tmp_path_factory):
    """``shared_library(src_dir)`` -> path of a .so built from that generated set (cached)."""
    built: dict[Path, Path] = {}

    def build(src_dir: Path) -> Path:
        src_dir = Path(src_dir).resolve()
        if src_dir not in built:
            out = tmp_path_factory.mktemp("so") / f"lib{src_dir.name}.so"
            built[src_dir] = build_shared_library(src_dir, out)
        return built[src_dir]

    return build


# --- how pytest-xdist hands out the work (`aesgen test`: -n <cores> --dist loadfile) -------
# loadfile sends a test file to one worker as a whole (its module fixtures and functools
# caches of rendered sets stay useful), the files with the most tests first. The slow files
# have few tests: left to that order they would start last and run alone at the end. So
# these go first, slowest first (measured; the order is a choice of schedule, nothing
# depends on it), and the cases of the tests named in SPREAD, each an `aesgen generate` of
# its own with no cache to share, go one by one to whichever worker is free.
SLOW_FIRST = (
    "test_regenerate.py",
    "test_ct_witness.py",
    "test_aarch64_backend.py",
    "test_assemble.py",
)
SPREAD = ("test_regenerate.py::test_recorded_command_regenerates_the_folder",)


def pytest_xdist_make_scheduler(config, log):
    if config.getoption("dist", None) != "loadfile":
        return None
    from xdist.scheduler import LoadFileScheduling

    class SlowFilesFirst(LoadFileScheduling):
        ordered = False

        def _split_scope(self, nodeid: str) -> str:
            if any(s in nodeid for s in SPREAD):
                return nodeid
            return super()._split_scope(nodeid)

        def _assign_work_unit(self, node) -> None:
            if not self.ordered:       # the queue is complete before the first unit goes
                self.ordered = True
                units = sorted(self.workqueue.items(), key=lambda unit: _rank(unit[0]))
                self.workqueue.clear()
                self.workqueue.update(units)
            super()._assign_work_unit(node)

    return SlowFilesFirst(config, log)


def _rank(scope: str) -> int:
    """Where a unit of work goes in the queue: the slow files first, in SLOW_FIRST's order;
    the others after them, as xdist orders them (sorted() keeps their order)."""
    file = Path(scope.split("::", 1)[0]).name
    return SLOW_FIRST.index(file) if file in SLOW_FIRST else len(SLOW_FIRST)
