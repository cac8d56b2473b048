"""`aesgen configure`: render build.ninja.in into <builddir>/build.ninja.

The template lives at the repository root; its header comment lists the variables it takes.
Presets are the folders under generated/ whose manifest.json names the host architecture;
each gets a GoogleTest binary (its kernels + every harness/*_tests.cc suite + the trampoline)
and a standalone-compile check, and on
x86-64 a Google Benchmark binary (its kernels + harness/bench/) beside OpenSSL and ipsec-mb.

On an x86-64 host the AArch64 presets are built too, cross (CrossToolchain: the Debian
aarch64-linux-gnu-* compilers, OpenSSL's arm64 libcrypto.a from multiarch, GoogleTest
compiled from /usr/src/googletest into the build folder, linked -static), and run under
`qemu-aarch64 -cpu max`: the same GoogleTest suites, no benchmark.

Output is a pure function of the inputs: presets and their sources are sorted, nothing is
read from the clock, and the file is replaced atomically (temp file + rename) so a reader
never sees half of it.

Run as a module, this file re-renders in place; the regeneration edge of build.ninja uses
that (python -m aesgen.build.configure ROOT BUILDDIR --command-line "...").
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import shlex
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Mapping, Protocol, Sequence

import jinja2

TEMPLATE_NAME = "build.ninja.in"
OUTPUT_NAME = "build.ninja"
SOURCE_SUFFIXES = (".S", ".c")
# The GoogleTest suite every aesgen_tests binary has; any other harness/*_tests.cc is linked in
# beside it (aead_tests.cc, ...).
MAIN_SUITE = "ctr_tests"
# The benchmark program's main(); every other harness/bench/*.cc is linked in beside it
# (gcm_bench.cc, gcm_siv_bench.cc, ...).
BENCH_MAIN = "bench_main"

# Architecture names as manifest.json spells them, by what platform.machine() says.
_MACHINE_TO_ARCH = {
    "x86_64": "x86_64",
    "amd64": "x86_64",
    "aarch64": "aarch64",
    "arm64": "aarch64",
}


class PresetLike(Protocol):
    """What the template reads from a preset."""

    name: str
    dir: Path
    sources: Sequence[Path]


@dataclass(frozen=True)
class Preset:
    """One generated/<name>/ folder: its name, absolute path and .S/.c files (sorted)."""

    name: str
    dir: Path
    sources: tuple[Path, ...]
    arch: str = "x86_64"


@dataclass(frozen=True)
class Toolchain:
    """Compilers, flags and libraries for the harness build."""

    cc: str = "cc"
    cxx: str = "c++"
    cflags: str = "-O2 -g -Wall -Wextra -Werror"
    cxxflags: str = "-std=c++17 -O2 -g -Wall -Wextra -Werror"
    ldflags: str = ""
    libs: str = "-lgtest -lgtest_main -lpthread -lcrypto"
    bench_libs: str = "-lbenchmark -lpthread -lcrypto -lIPSec_MB -lgcrypt -ldl"
    # The libFuzzer targets (harness/fuzz/, `aesgen fuzz`): clang with ASan and UBSan.
    fuzz_cc: str = "clang-19"
    fuzz_cxx: str = "clang++-19"
    fuzz_flags: str = ("-O1 -g -fno-omit-frame-pointer -fsanitize=address,undefined "
                       "-fno-sanitize-recover=undefined")

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> "Toolchain":
        """The defaults, with CC, CXX, CFLAGS, CXXFLAGS, LDFLAGS, LIBS, BENCH_LIBS, FUZZ_CC,
        FUZZ_CXX and FUZZ_FLAGS taken from env."""
        base = cls()
        return cls(
            cc=env.get("CC") or base.cc,
            cxx=env.get("CXX") or base.cxx,
            cflags=env.get("CFLAGS", base.cflags),
            cxxflags=env.get("CXXFLAGS", base.cxxflags),
            ldflags=env.get("LDFLAGS", base.ldflags),
            libs=env.get("LIBS", base.libs),
            bench_libs=env.get("BENCH_LIBS", base.bench_libs),
            fuzz_cc=env.get("FUZZ_CC") or base.fuzz_cc,
            fuzz_cxx=env.get("FUZZ_CXX") or base.fuzz_cxx,
            fuzz_flags=env.get("FUZZ_FLAGS", base.fuzz_flags),
        )


@dataclass(frozen=True)
class CrossToolchain:
    """The AArch64 build on an x86-64 host: cross compilers, flags, libraries and the
    emulator that runs the result. GoogleTest is compiled from gtest_src (Debian's
    googletest package) into <builddir>/<arch>/gtest/; everything is linked -static, so
    qemu needs no sysroot."""

    arch: str = "aarch64"
    cc: str = "aarch64-linux-gnu-gcc"
    cxx: str = "aarch64-linux-gnu-g++"
    ar: str = "aarch64-linux-gnu-ar"
    cflags: str = "-O2 -g -Wall -Wextra -Werror"
    # No -g for the C++: it makes the harness's compile half again as long, once a preset.
    cxxflags: str = "-std=c++17 -O2 -Wall -Wextra -Werror"
    # OpenSSL's libcrypto.a pulls in getaddrinfo/dlopen, for which a static link always
    # warns; -Wl,--no-warnings keeps those off every link line. tests/test_aarch64_harness.py
    # checks the .note.GNU-stack of every aarch64 object instead.
    ldflags: str = "-static -Wl,--no-warnings"
    libs: str = "-lcrypto -lpthread"
    gtest_src: str = "/usr/src/googletest/googletest"
    run: str = "qemu-aarch64 -cpu max"

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> "CrossToolchain":
        """The defaults, with AARCH64_CC, AARCH64_CXX, AARCH64_AR, AARCH64_CFLAGS,
        AARCH64_CXXFLAGS, AARCH64_LDFLAGS, AARCH64_LIBS, GTEST_SRC and AARCH64_RUN from env."""
        base = cls()
        return cls(
            cc=env.get("AARCH64_CC") or base.cc,
            cxx=env.get("AARCH64_CXX") or base.cxx,
            ar=env.get("AARCH64_AR") or base.ar,
            cflags=env.get("AARCH64_CFLAGS", base.cflags),
            cxxflags=env.get("AARCH64_CXXFLAGS", base.cxxflags),
            ldflags=env.get("AARCH64_LDFLAGS", base.ldflags),
            libs=env.get("AARCH64_LIBS", base.libs),
            gtest_src=env.get("GTEST_SRC") or base.gtest_src,
            run=env.get("AARCH64_RUN") or base.run,
        )

    def tools(self) -> list[str]:
        """The programs this toolchain runs (first word of each command)."""
        return [shlex.split(c)[0] for c in (self.cc, self.cxx, self.ar, self.run)]


class ConfigureError(Exception):
    """A generated folder or the template is not usable."""


def host_arch(machine: str | None = None) -> str:
    """The host architecture as manifest.json spells it ("x86_64", "aarch64")."""
    m = (machine if machine is not None else platform.machine()).lower()
    try:
        return _MACHINE_TO_ARCH[m]
    except KeyError:
        raise ConfigureError(f"unsupported host architecture {m!r}") from None


def cross_arch(host: str | None = None) -> str | None:
    """The architecture built cross and run under emulation on this host, or None:
    "aarch64" on an x86-64 host."""
    return "aarch64" if (host or host_arch()) == "x86_64" else None


def _preset_arch(folder: Path) -> str | None:
    manifest = folder / "manifest.json"
    try:
        data = json.loads(manifest.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as e:
        raise ConfigureError(f"{manifest}: {e}") from e
    arch = data.get("arch") if isinstance(data, dict) else None
    return arch if isinstance(arch, str) else None


def discover_presets(root: Path, arch: str | None = None) -> list[Preset]:
    """Folders generated/*/ whose manifest.json has "arch" == arch (default: the host's),
    sorted by name. Folders without a manifest or for another architecture are skipped."""
    arch = arch or host_arch()
    generated = Path(root).resolve() / "generated"
    presets = []
    if not generated.is_dir():
        return presets
    for folder in sorted(p for p in generated.iterdir() if p.is_dir()):
        if _preset_arch(folder) != arch:
            continue
        sources = tuple(sorted((f for f in folder.iterdir()
                                if f.is_file() and f.suffix in SOURCE_SUFFIXES),
                               key=lambda f: f.name))
        if not sources:
            raise ConfigureError(f"{folder}: manifest.json but no .S or .c file")
        presets.append(Preset(name=folder.name, dir=folder, sources=sources, arch=arch))
    return presets


def discover_harness_suites(root: Path) -> list[str]:
    """The GoogleTest suites linked into each aesgen_tests binary: the stems of
    harness/*_tests.cc, ctr_tests first (whether or not the file is there yet), then the
    others by name."""
    harness = Path(root) / "harness"
    others = sorted(p.stem for p in harness.glob("*_tests.cc") if p.stem != MAIN_SUITE) \
        if harness.is_dir() else []
    return [MAIN_SUITE, *others]


def discover_bench_units(root: Path) -> list[str]:
    """The translation units of each aesgen_bench binary: the stems of harness/bench/*.cc,
    bench_main first (whether or not the file is there yet), then the others by name."""
    bench = Path(root) / "harness" / "bench"
    others = sorted(p.stem for p in bench.glob("*.cc") if p.stem != BENCH_MAIN) \
        if bench.is_dir() else []
    return [BENCH_MAIN, *others]


# ---- Jinja filters -------------------------------------------------------------------------

def discover_fuzz_targets(root: Path) -> list[str]:
    """Stems of the libFuzzer targets, harness/fuzz/fuzz_*.cc, sorted ([] without any)."""
    return sorted(p.stem for p in (Path(root) / "harness" / "fuzz").glob("fuzz_*.cc"))


def _ninja_path(value: object) -> str:
    """Escape a path for a ninja build line: $ -> $$, space -> '$ ', colon -> '$:'."""
    s = str(value)
    if "\n" in s:
        raise ConfigureError(f"newline in path {s!r}")
    return s.replace("$", "$$").replace(" ", "$ ").replace(":", "$:")


def _ninja_var(value: object) -> str:
    """Escape a value for a ninja variable line ($ -> $$)."""
    s = str(value)
    if "\n" in s:
        raise ConfigureError(f"newline in value {s!r}")
    return s.replace("$", "$$")


def _basename(value: object) -> str:
    return Path(str(value)).name


def _environment(root: Path) -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(root)),
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=True,
    )
    env.filters["ninja_path"] = _ninja_path
    env.filters["ninja_var"] = _ninja_var
    env.filters["shell"] = lambda v: shlex.quote(str(v))
    env.filters["basename"] = _basename
    return env


def _sorted_presets(presets: Iterable[PresetLike]) -> list[PresetLike]:
    out = sorted(presets, key=lambda p: p.name)
    names = [p.name for p in out]
    dupes = sorted({n for n in names if names.count(n) > 1})
    if dupes:
        raise ConfigureError(f"two presets named {', '.join(dupes)}")
    return out


@dataclass(frozen=True)
class _PresetView:
    """A preset as the template sees it: absolute paths as strings, sources sorted."""

    name: str
    dir: str
    sources: list[str] = field(default_factory=list)


def render_build_ninja(
    root: Path,
    builddir: Path,
    presets: Iterable[PresetLike],
    *,
    command_line: str = "",
    regen_command: str = "",
    toolchain: Toolchain | None = None,
    arch: str | None = None,
    cross_presets: Iterable[PresetLike] = (),
    cross: CrossToolchain | None = None,
) -> str:
    """Render build.ninja.in (from root) for these presets; returns the text.

    command_line: shown on line 2 as the command that configured the build.
    regen_command: when given, a generator edge re-runs it whenever the template, a
        preset folder or a manifest changes (ninja must then be run as `ninja -C builddir`).
    cross_presets: presets of cross.arch, built with the cross toolchain and run under its
        emulator (on an x86-64 host: the AArch64 presets).
    """
    root = Path(root)
    builddir = Path(builddir)
    toolchain = toolchain or Toolchain()
    cross = cross or CrossToolchain()
    arch = arch or host_arch()

    def view(p: PresetLike) -> _PresetView:
        return _PresetView(name=p.name, dir=str(p.dir),
                           sources=sorted((str(s) for s in p.sources),
                                          key=lambda s: (Path(s).name, s)))

    presets = list(presets)
    cross_presets = list(cross_presets)
    views = [view(p) for p in _sorted_presets(presets)]
    cross_views = [view(p) for p in _sorted_presets(cross_presets)]
    _sorted_presets(presets + cross_presets)  # one name space: build/<name>/ for both
    regen_inputs = [str(root / "generated")]
    if (root / "harness").is_dir():
        regen_inputs.append(str(root / "harness"))  # a new harness/*_tests.cc re-renders
    if (root / "harness" / "bench").is_dir():
        regen_inputs.append(str(root / "harness" / "bench"))  # and a new bench/*.cc
    if (root / "harness" / "fuzz").is_dir():
        regen_inputs.append(str(root / "harness" / "fuzz"))  # and a new fuzz/fuzz_*.cc
    for v in views + cross_views:
        regen_inputs += [v.dir, str(Path(v.dir) / "manifest.json")]
    try:
        template = _environment(root).get_template(TEMPLATE_NAME)
    except jinja2.TemplateNotFound:
        raise ConfigureError(f"{root / TEMPLATE_NAME} not found") from None
    return template.render(
        command_line=command_line,
        regen_command=regen_command,
        arch=arch,
        root=str(root),
        builddir=str(builddir),
        cc=toolchain.cc,
        cxx=toolchain.cxx,
        cflags=toolchain.cflags,
        cxxflags=toolchain.cxxflags,
        ldflags=toolchain.ldflags,
        libs=toolchain.libs,
        bench_libs=toolchain.bench_libs,
        fuzz_cc=toolchain.fuzz_cc,
        fuzz_cxx=toolchain.fuzz_cxx,
        fuzz_flags=toolchain.fuzz_flags,
        fuzz_targets=discover_fuzz_targets(root),
        regen_inputs=regen_inputs,
        presets=views,
        harness_suites=discover_harness_suites(root),
        bench_units=discover_bench_units(root),
        cross=cross,
        cross_presets=cross_views,
    )


def _atomic_write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        os.fchmod(fd, 0o644)
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as f:
            f.write(text)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise


def write_build_ninja(
    root: Path,
    builddir: Path,
    command_line: str,
    *,
    toolchain: Toolchain | None = None,
    arch: str | None = None,
    cross: CrossToolchain | None = None,
) -> Path:
    """Discover the host's presets under root/generated (and, on x86-64, the AArch64
    ones, built cross), render, and write builddir/build.ninja atomically. Returns the
    path written.

    toolchain defaults to Toolchain.from_env(os.environ) (CC, CXX, CFLAGS, ...), cross to
    CrossToolchain.from_env(os.environ) (AARCH64_CC, ...)."""
    root = Path(root).resolve()
    builddir = Path(builddir).resolve()
    arch = arch or host_arch()
    toolchain = toolchain or Toolchain.from_env(os.environ)
    cross = cross or CrossToolchain.from_env(os.environ)
    presets = discover_presets(root, arch)
    xarch = cross_arch(arch)
    cross_presets = discover_presets(root, xarch) if xarch == cross.arch else []
    regen = "cd {} && {} -m aesgen.build.configure {} {} --command-line {}".format(
        shlex.quote(str(root / "generator")), shlex.quote(sys.executable),
        shlex.quote(str(root)), shlex.quote(str(builddir)), shlex.quote(command_line))
    text = render_build_ninja(root, builddir, presets, command_line=command_line,
                              regen_command=regen, toolchain=toolchain, arch=arch,
                              cross_presets=cross_presets, cross=cross)
    out = builddir / OUTPUT_NAME
    _atomic_write(out, text)
    return out


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m aesgen.build.configure",
                                 description="Write BUILDDIR/build.ninja from ROOT/build.ninja.in.")
    ap.add_argument("root", type=Path)
    ap.add_argument("builddir", type=Path)
    ap.add_argument("--command-line", default="aesgen configure",
                    help="the command to name on line 2 of build.ninja")
    args = ap.parse_args(argv)
    try:
        path = write_build_ninja(args.root, args.builddir, args.command_line)
    except ConfigureError as e:
        print(f"aesgen configure: error: {e}", file=sys.stderr)
        return 2
    print(f"aesgen configure: wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
