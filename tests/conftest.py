"""Shared fixtures: the venv's `aesgen` command and generated sets built into shared libraries.

Repository paths come from ``aesgen.paths`` (ROOT, TARGETS, GENERATED), so tests import them
from there rather than from this file.
"""
from __future__ import annotations

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
    missing .note.GNU-stack (executable stack) into an error.
    """
    sources = sorted(str(p) for p in src_dir.glob("*.S")) + [str(src_dir / "aesgen_registry.c")]
    cmd = ["gcc", "-shared", "-fPIC", "-O1", "-I", str(src_dir), "-Wl,-Bsymbolic",
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
