"""`aesgen vendor`: the folder builds in a consumer's project from the folder alone.

The vendored folder is copied into a fresh project beside a small program
(tests/data/vendor_consumer/app.c: every kernel this CPU runs against the SP 800-38A CTR
vector and GCM Test Case 2), which is built with CMake, Meson and Make from Debian's
packages and run; the Make build is repeated with mingw-w64 gcc and run under wine (the
fragment picks the win64 flavour from the compiler), and for an AArch64 folder with the
cross compiler and run under qemu-aarch64.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from aesgen.paths import ROOT

APP = ROOT / "tests" / "data" / "vendor_consumer" / "app.c"


def _run(cmd, cwd: Path | None = None, env=None, timeout=600) -> str:
    proc = subprocess.run([str(c) for c in cmd], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=timeout)
    assert proc.returncode == 0, f"{' '.join(map(str, cmd))} failed ({proc.returncode}):\n" \
                                 f"{proc.stdout[-3000:]}{proc.stderr[-3000:]}"
    return proc.stdout


@pytest.fixture(scope="module")
def vendored(tmp_path_factory, aesgen_exe):
    """``vendored(preset)`` -> a vendored folder (CTR and GCM, FACE none, 128/256-bit keys)."""
    made: dict[str, Path] = {}

    def make(preset: str) -> Path:
        if preset not in made:
            out = tmp_path_factory.mktemp(f"vendor-{preset}") / "aes"
            _run([aesgen_exe, "vendor", out, "--cpu", preset, "--mode", "ctr,gcm",
                  "--face", "none", "--keys", "128,256"])
            made[preset] = out
        return made[preset]

    return make


def _project(tmp_path: Path, folder: Path, build_file: str, text: str) -> Path:
    project = tmp_path / "project"
    shutil.copytree(folder, project / "vendor")
    shutil.copy(APP, project / "app.c")
    (project / build_file).write_text(text)
    return project


def test_vendored_folder_lists_every_flavour(vendored):
    folder = vendored("x86-64-v3")
    manifest = json.loads((folder / "manifest.json").read_text())
    assert manifest["flavours"] == ["elf", "macho", "win64"]
    for k in manifest["kernels"] + manifest["aeads"]:
        for f, name in k["flavour_files"].items():
            assert (folder / name).is_file(), f"{k['name']}: {f} file {name} missing"
    for name in ("README.md", "CMakeLists.txt", "meson.build", "aesgen.mk", "aesgen.h",
                 "aesgen_registry.c"):
        text = (folder / name).read_text()
        assert "DO NOT EDIT" in text.splitlines()[0], name
        assert name in manifest["files"]
    assert set(manifest["files"]) == {p.name for p in folder.iterdir()}


def test_cmake_consumer(vendored, tmp_path):
    project = _project(tmp_path, vendored("x86-64-v3"), "CMakeLists.txt", """\
cmake_minimum_required(VERSION 3.13)
project(consumer C)
add_subdirectory(vendor)
add_executable(app app.c)
target_link_libraries(app PRIVATE aesgen_kernels)
""")
    _run(["cmake", "-S", project, "-B", project / "build", "-G", "Ninja"])
    _run(["cmake", "--build", project / "build"])
    assert _run([project / "build" / "app"]).startswith("ok ")


def test_meson_consumer(vendored, tmp_path):
    project = _project(tmp_path, vendored("x86-64-v3"), "meson.build", """\
project('consumer', 'c')
subdir('vendor')
executable('app', 'app.c', dependencies: aesgen_kernels_dep)
""")
    _run(["meson", "setup", project / "build", project])
    _run(["meson", "compile", "-C", project / "build"])
    assert _run([project / "build" / "app"]).startswith("ok ")


MAKEFILE = """\
include vendor/aesgen.mk
app$(EXE): app.o $(AESGEN_KERNELS_LIB)
\t$(CC) -o $@ app.o $(AESGEN_KERNELS_LIB)
app.o: app.c
\t$(CC) -c -O2 -I$(AESGEN_KERNELS_DIR) -o $@ $<
"""


def test_make_consumer_native_and_win64(vendored, tmp_path):
    project = _project(tmp_path, vendored("x86-64-v3"), "Makefile", MAKEFILE)
    _run(["make", "-C", project, "-j2"])
    assert _run([project / "app"]).startswith("ok ")
    if shutil.which("x86_64-w64-mingw32-gcc") is None or shutil.which("wine") is None:
        pytest.fail("mingw-w64 gcc and wine are needed (./aesgen test installs them)")
    (project / "app.o").unlink()                 # the object of the native build
    _run(["make", "-C", project, "-j2", "CC=x86_64-w64-mingw32-gcc",
          "AR=x86_64-w64-mingw32-ar", "EXE=.exe", "AESGEN_KERNELS_BUILD=build-win64"])
    env = dict(os.environ, WINEPREFIX=str(tmp_path / "wineprefix"), WINEDEBUG="-all",
               WINEDLLOVERRIDES="mscoree,mshtml=")
    assert _run(["wine", project / "app.exe"], env=env).startswith("ok ")
    objects = {p.name for p in (project / "build-win64").glob("*.o")}
    assert objects and not any(n.endswith("-macho.o") for n in objects)
    assert all(n.endswith("-win64.o") or n == "aesgen_registry.o" for n in objects), objects


def test_make_consumer_aarch64(vendored, tmp_path):
    for tool in ("aarch64-linux-gnu-gcc", "qemu-aarch64"):
        if shutil.which(tool) is None:
            pytest.fail(f"{tool} is needed (./aesgen test installs it)")
    project = _project(tmp_path, vendored("apple-m1"), "Makefile", MAKEFILE)
    _run(["make", "-C", project, "-j2", "CC=aarch64-linux-gnu-gcc -static",
          "AR=aarch64-linux-gnu-ar"])
    assert _run(["qemu-aarch64", "-cpu", "max", project / "app"]).startswith("ok ")


def test_make_refuses_another_instruction_set(vendored, tmp_path):
    project = _project(tmp_path, vendored("apple-m1"), "Makefile", MAKEFILE)
    proc = subprocess.run(["make", "-C", project], capture_output=True, text=True)
    assert proc.returncode != 0
    assert "these kernels are for AArch64 (arm64)" in proc.stderr, proc.stderr
