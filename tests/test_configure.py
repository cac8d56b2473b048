"""`aesgen configure`: build.ninja.in renders one test binary and one standalone check per
x86-64 preset, the same text for the same input, and a file ninja accepts."""
from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from types import SimpleNamespace

import pytest

from aesgen.build.configure import (
    ConfigureError,
    CrossToolchain,
    Preset,
    Toolchain,
    discover_presets,
    host_arch,
    render_build_ninja,
    write_build_ninja,
)
from aesgen.paths import ROOT

FIXED = Toolchain(cc="gcc", cxx="g++", cflags="-O2 -Wall", cxxflags="-O2 -Wall", ldflags="",
                  libs="-lgtest -lgtest_main -lpthread -lcrypto")


def make_preset(root: Path, name: str, arch: str | None = "x86_64",
                files: tuple[str, ...] = ("aesgen_registry.c", "k_b.S", "k_a.S")) -> Path:
    d = root / "generated" / name
    d.mkdir(parents=True)
    for f in files:
        (d / f).write_text("/* empty */\n")
    (d / "aesgen.h").write_text("/* header */\n")
    if arch is not None:
        (d / "manifest.json").write_text(json.dumps({"preset": name, "arch": arch}))
    return d


@pytest.fixture
def root(tmp_path: Path) -> Path:
    """A repository root with the real template, empty harness files and four folders:
    two x86-64 presets, one AArch64 preset and one folder without a manifest."""
    r = tmp_path / "repo"
    r.mkdir()
    shutil.copy(ROOT / "build.ninja.in", r / "build.ninja.in")
    (r / "harness" / "bench").mkdir(parents=True)
    for f in ("ctr_tests.cc", "abi_check_x86_64.S", "abi_check_aarch64.S", "abi_check.h",
              "quick_measure.c", "bench/bench_main.cc", "bench/gcm_bench.cc",
              "bench/gcm_siv_bench.cc", "bench/ghash_bench.cc", "bench/bench_common.h"):
        (r / "harness" / f).write_text("\n")
    (r / "gtest" / "src").mkdir(parents=True)  # stands in for /usr/src/googletest/googletest
    for f in ("gtest-all.cc", "gtest_main.cc"):
        (r / "gtest" / "src" / f).write_text("\n")
    make_preset(r, "znver4")
    make_preset(r, "x86-64-v2")
    make_preset(r, "cortex-a76", arch="aarch64")
    make_preset(r, "scratch", arch=None)
    return r


def render(root: Path, presets, **kw) -> str:
    kw.setdefault("toolchain", FIXED)
    kw.setdefault("arch", "x86_64")
    return render_build_ninja(root, root / "build", presets, **kw)


def test_discovers_only_presets_for_the_architecture(root: Path) -> None:
    presets = discover_presets(root, "x86_64")
    assert [p.name for p in presets] == ["x86-64-v2", "znver4"]
    for p in presets:
        assert [s.name for s in p.sources] == ["aesgen_registry.c", "k_a.S", "k_b.S"]
        assert p.dir.is_absolute()
    assert [p.name for p in discover_presets(root, "aarch64")] == ["cortex-a76"]


def test_each_preset_gets_a_test_binary_and_a_standalone_check(root: Path) -> None:
    text = render(root, discover_presets(root, "x86_64"))
    b = root / "build"
    for name in ("x86-64-v2", "znver4"):
        d = root / "generated" / name
        assert f"build {b}/{name}/aesgen_tests: link " in text
        link = next(line for line in text.splitlines()
                    if line.startswith(f"build {b}/{name}/aesgen_tests: link "))
        for obj in ("gen/aesgen_registry.c.o", "gen/k_a.S.o", "gen/k_b.S.o",
                    "harness/ctr_tests.o", "harness/abi_check.o"):
            assert f"{b}/{name}/{obj}" in link
        assert f"build {b}/{name}/gen/k_a.S.o: cc {d}/k_a.S" in text
        assert f"build {b}/{name}/harness/ctr_tests.o: cxx {root}/harness/ctr_tests.cc" in text
        assert f"build {b}/{name}/standalone/k_a.S.o: standalone_cc {d}/k_a.S" in text
        assert f"build standalone-{name}: phony {b}/{name}/standalone.stamp" in text
        assert f"build tests-{name}: phony {b}/{name}/aesgen_tests standalone-{name}" in text
        assert f"build check-{name}: phony {b}/{name}/tests.passed" in text
    assert "cortex-a76" not in text and "scratch" not in text
    assert "build all: phony tests-x86-64-v2 tests-znver4" in text
    assert "default all" in text
    assert f"{root}/harness/abi_check_x86_64.S" in text


def test_each_x86_preset_gets_a_benchmark_binary(root: Path) -> None:
    text = render(root, discover_presets(root, "x86_64"))
    b = root / "build"
    assert "\nbench_libs = -lbenchmark -lpthread -lcrypto -lIPSec_MB -lgcrypt -ldl\n" in text
    for name in ("x86-64-v2", "znver4"):
        assert (f"build {b}/{name}/harness/bench_main.o: cxx "
                f"{root}/harness/bench/bench_main.cc") in text
        assert f"  defs = '-DAESGEN_BENCH_PRESET=\"{name}\"'" in text
        link = next(line for line in text.splitlines()
                    if line.startswith(f"build {b}/{name}/aesgen_bench: link_bench "))
        for obj in ("gen/aesgen_registry.c.o", "gen/k_a.S.o", "harness/bench_main.o"):
            assert f"{b}/{name}/{obj}" in link
        # every harness/bench/*.cc is compiled and linked, headers are not
        for unit in ("gcm_bench", "gcm_siv_bench", "ghash_bench"):
            assert (f"build {b}/{name}/harness/{unit}.o: cxx "
                    f"{root}/harness/bench/{unit}.cc") in text
            assert f"{b}/{name}/harness/{unit}.o" in link
        assert "bench_common" not in text
        phony = next(line for line in text.splitlines()
                     if line.startswith(f"build tests-{name}: phony "))
        assert f"{b}/{name}/aesgen_bench" in phony
    aarch64 = render(root, discover_presets(root, "aarch64"), arch="aarch64")
    assert "aesgen_bench" not in aarch64 and "bench_main" not in aarch64


def test_first_line_says_generated_and_not_to_edit(root: Path) -> None:
    first = render(root, discover_presets(root, "x86_64")).splitlines()[0]
    assert first.startswith("# Generated by `aesgen configure`")
    assert "DO NOT EDIT" in first


def test_standalone_compile_uses_only_the_preset_include(root: Path) -> None:
    text = render(root, discover_presets(root, "x86_64"))
    rule = text.split("rule standalone_cc\n", 1)[1].split("\n\n", 1)[0]
    command = next(line for line in rule.splitlines() if line.strip().startswith("command ="))
    assert "$cflags" not in command and "-I $incdir" in command
    assert f"  incdir = {root}/generated/znver4" in text


def test_toolchain_lands_in_variables(root: Path) -> None:
    tc = Toolchain(cc="clang", cxx="clang++", cflags="-O1 -DX=$Y", cxxflags="-O3",
                   ldflags="-fuse-ld=lld", libs="-lfoo")
    text = render(root, [], toolchain=tc)
    assert "\ncc = clang\n" in text and "\ncxx = clang++\n" in text
    assert "\ncflags = -O1 -DX=$$Y\n" in text  # $ escaped for ninja
    assert "\nldflags = -fuse-ld=lld\n" in text and "\nlibs = -lfoo\n" in text


def test_render_is_deterministic(root: Path) -> None:
    presets = discover_presets(root, "x86_64")
    a = render(root, presets)
    assert render(root, list(reversed(presets))) == a
    shuffled = [Preset(p.name, p.dir, tuple(reversed(p.sources)), p.arch) for p in presets]
    assert render(root, shuffled) == a


def test_accepts_any_preset_like_object(root: Path) -> None:
    d = root / "generated" / "znver4"
    like = SimpleNamespace(name="znver4", dir=d, sources=[str(d / "k_a.S")])
    text = render(root, [like])
    assert f"build {root}/build/znver4/gen/k_a.S.o: cc {d}/k_a.S" in text


def test_duplicate_preset_names_are_refused(root: Path) -> None:
    p = discover_presets(root, "x86_64")[0]
    with pytest.raises(ConfigureError):
        render(root, [p, p])


def test_paths_with_spaces_and_colons_are_escaped(tmp_path: Path) -> None:
    r = tmp_path / "my repo:1"
    r.mkdir()
    shutil.copy(ROOT / "build.ninja.in", r / "build.ninja.in")
    make_preset(r, "znver4")
    text = render(r, discover_presets(r, "x86_64"))
    esc = str(r).replace(" ", "$ ").replace(":", "$:")
    assert f"cc {esc}/generated/znver4/k_a.S" in text
    assert f"  incs = -I '{r}/generated/znver4'" in text  # shell-quoted in the variable


def test_write_is_atomic_and_byte_identical(root: Path) -> None:
    builddir = root / "build"
    out = write_build_ninja(root, builddir, "aesgen configure", toolchain=FIXED, arch="x86_64")
    assert out == builddir.resolve() / "build.ninja"
    first = out.read_bytes()
    out2 = write_build_ninja(root, builddir, "aesgen configure", toolchain=FIXED, arch="x86_64")
    assert out2.read_bytes() == first
    assert sorted(p.name for p in builddir.iterdir()) == ["build.ninja"]  # no temp file left
    text = first.decode()
    assert text.splitlines()[1] == "# Configured with: aesgen configure"
    assert "rule configure\n" in text and "build build.ninja: configure |" in text


def test_write_picks_presets_for_the_given_arch(root: Path) -> None:
    out = write_build_ninja(root, root / "b", "x", toolchain=FIXED, arch="aarch64")
    text = out.read_text()
    assert "tests-cortex-a76" in text and "znver4" not in text
    assert "abi_check_aarch64.S" in text


def test_host_arch_names() -> None:
    assert host_arch("x86_64") == "x86_64"
    assert host_arch("AMD64") == "x86_64"
    assert host_arch("arm64") == "aarch64"
    with pytest.raises(ConfigureError):
        host_arch("sparc64")


@pytest.mark.skipif(shutil.which("ninja") is None, reason="ninja is not installed")
def test_ninja_accepts_the_file(root: Path) -> None:
    builddir = root / "build"
    write_build_ninja(root, builddir, "aesgen configure", toolchain=FIXED, arch="x86_64",
                      cross=CrossToolchain(gtest_src=str(root / "gtest")))
    targets = subprocess.run(["ninja", "-C", str(builddir), "-t", "targets", "all"],
                             capture_output=True, text=True)
    assert targets.returncode == 0, targets.stderr
    assert f"{builddir}/znver4/aesgen_tests" in targets.stdout
    assert f"{builddir}/cortex-a76/aesgen_tests" in targets.stdout  # cross-built on x86-64
    dry = subprocess.run(["ninja", "-C", str(builddir), "-n", "all"],
                         capture_output=True, text=True)
    assert dry.returncode == 0, dry.stdout + dry.stderr
