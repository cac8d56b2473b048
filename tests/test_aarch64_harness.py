"""The AArch64 half of the harness: the cross build that `aesgen configure` renders, the
AAPCS64 trampoline (harness/abi_check_aarch64.S) assembled and run under qemu-aarch64, and
checks of the AArch64 kernels from outside:

- the NEON kernels without the Crypto Extension (neon-tbl, bitsliced) contain no
  AESE/AESD/AESMC/AESIMC/PMULL, in the .S text and in the assembled object;
- every AArch64 kernel, run under `qemu-aarch64 -cpu max`, gives the keystream that the
  host's own OpenSSL (the x86-64 `openssl enc` command) gives: independent of the Python
  model and of the GoogleTest harness's oracle (OpenSSL built for arm64);
- every kernel entry point is a BTI landing pad: the kernels run in a binary whose BTI
  property qemu enforces.

The AArch64 presets are the targets/*.toml with arch = "aarch64"; each is taken from
generated/<preset>/ when committed, else generated into a temporary folder.

On an x86-64 host the cross toolchain and qemu are required (scripts/setup.sh --system
installs them): a missing tool fails these tests, it does not skip them.
"""
from __future__ import annotations

import json
import random
import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from aesgen.build.configure import (
    CrossToolchain,
    Toolchain,
    discover_presets,
    host_arch,
    render_build_ninja,
    write_build_ninja,
)
from aesgen.paths import GENERATED, ROOT, TARGETS

AESGEN = Path(sys.executable).with_name("aesgen")
CROSS = CrossToolchain()
CC = CROSS.cc
QEMU = CROSS.run.split()
HARNESS = ROOT / "harness"
FIXED = Toolchain(cc="gcc", cxx="g++", cflags="-O2 -Wall", cxxflags="-O2 -Wall", ldflags="",
                  libs="-lgtest -lgtest_main -lpthread -lcrypto")
# Mnemonics of the Crypto Extension's AES and polynomial-multiply instructions.
# the Crypto Extension's instructions; PMULL/PMULL2 on .8b/.16b (8x8-bit products) are base
# Advanced SIMD, and only their 64-bit form (.1q) is FEAT_PMULL's (crypto_operation)
CRYPTO = re.compile(r"^(aese|aesd|aesmc|aesimc|pmull2?\.1q)$")
# Methods that must not use them (they exist for CPUs without the Crypto Extension).
NO_CRYPTO_METHODS = {"neon-tbl", "bitsliced", "neon-bitsliced", "table"}
ON_X86 = host_arch() == "x86_64"


def require_cross() -> None:
    """Fail, naming what is missing, unless the cross compiler and qemu are here."""
    if not ON_X86:
        pytest.skip("the AArch64 cross build and qemu run are for an x86-64 host")
    missing = [t for t in (CROSS.cc, CROSS.cxx, "aarch64-linux-gnu-objdump",
                           "aarch64-linux-gnu-readelf", QEMU[0]) if shutil.which(t) is None]
    if missing:
        pytest.fail(f"missing {', '.join(missing)}: run scripts/setup.sh --system "
                    "(Debian: gcc-aarch64-linux-gnu g++-aarch64-linux-gnu qemu-user)")


def run(cmd: list[str], **kw) -> subprocess.CompletedProcess:
    kw.setdefault("capture_output", True)
    kw.setdefault("text", True)
    kw.setdefault("timeout", 300)
    return subprocess.run([str(c) for c in cmd], **kw)


def checked(cmd: list[str], **kw) -> subprocess.CompletedProcess:
    proc = run(cmd, **kw)
    assert proc.returncode == 0, f"{' '.join(map(str, cmd))} exited {proc.returncode}:\n" \
        f"{proc.stdout}\n{proc.stderr}"
    return proc


# ---- configure: the cross rules ----------------------------------------------------------

def make_preset(root: Path, name: str, arch: str) -> Path:
    d = root / "generated" / name
    d.mkdir(parents=True)
    for f in ("aesgen_registry.c", "k_a.S"):
        (d / f).write_text("/* empty */\n")
    (d / "aesgen.h").write_text("/* header */\n")
    (d / "manifest.json").write_text(json.dumps({"preset": name, "arch": arch}))
    return d


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    r = tmp_path / "repo"
    (r / "harness" / "bench").mkdir(parents=True)
    shutil.copy(ROOT / "build.ninja.in", r / "build.ninja.in")
    for f in ("ctr_tests.cc", "abi_check_x86_64.S", "abi_check_aarch64.S", "abi_check.h",
              "quick_measure.c", "bench/bench_main.cc"):
        (r / "harness" / f).write_text("\n")
    (r / "gtest" / "src").mkdir(parents=True)
    for f in ("gtest-all.cc", "gtest_main.cc"):
        (r / "gtest" / "src" / f).write_text("\n")
    make_preset(r, "x86-64-v2", "x86_64")
    make_preset(r, "cortex-a53", "aarch64")
    make_preset(r, "neoverse-n1", "aarch64")
    return r


def lines_starting(text: str, prefix: str) -> list[str]:
    return [line for line in text.splitlines() if line.startswith(prefix)]


def test_configure_renders_the_aarch64_build_on_x86(repo: Path) -> None:
    cross = CrossToolchain(gtest_src=str(repo / "gtest"))
    out = write_build_ninja(repo, repo / "build", "t", toolchain=FIXED, arch="x86_64",
                            cross=cross)
    text = out.read_text()
    b, g = repo / "build", repo / "gtest"
    assert "\ncross_cc = aarch64-linux-gnu-gcc\n" in text
    assert "\ncross_cxx = aarch64-linux-gnu-g++\n" in text
    assert "\ncross_run = qemu-aarch64 -cpu max\n" in text
    assert "\ncross_ldflags = -static" in text
    # GoogleTest from its sources, into the build folder
    assert f"build {b}/aarch64/gtest/gtest-all.o: cross_cxx {g}/src/gtest-all.cc" in text
    assert f"build {b}/aarch64/gtest/gtest_main.o: cross_cxx {g}/src/gtest_main.cc" in text
    assert f"build {b}/aarch64/gtest/libgtest.a: cross_ar {b}/aarch64/gtest/gtest-all.o" in text
    for name in ("cortex-a53", "neoverse-n1"):
        d = repo / "generated" / name
        (link,) = lines_starting(text, f"build {b}/{name}/aesgen_tests: ")
        assert link.startswith(f"build {b}/{name}/aesgen_tests: cross_link ")
        for obj in ("gen/aesgen_registry.c.o", "gen/k_a.S.o", "harness/ctr_tests.o",
                    "harness/abi_check.o"):
            assert f"{b}/{name}/{obj}" in link
        assert f"| {b}/aarch64/gtest/libgtest_main.a {b}/aarch64/gtest/libgtest.a" in link
        assert f"build {b}/{name}/gen/k_a.S.o: cross_cc {d}/k_a.S" in text
        assert (f"build {b}/{name}/harness/abi_check.o: cross_cc "
                f"{repo}/harness/abi_check_aarch64.S") in text
        assert f"build {b}/{name}/standalone/k_a.S.o: cross_standalone_cc {d}/k_a.S" in text
        assert (f"build {b}/{name}/tests.passed: cross_run_tests {b}/{name}/aesgen_tests"
                in text)
        assert f"{b}/{name}/aesgen_bench" not in text      # no benchmark under an emulator
        assert f"{b}/{name}/quick_measure" not in text
    assert lines_starting(text, "build all: phony ")[0].split()[3:] == [
        "tests-x86-64-v2", "tests-cortex-a53", "tests-neoverse-n1"]
    assert lines_starting(text, "build check: phony ")[0].split()[3:] == [
        "check-x86-64-v2", "check-cortex-a53", "check-neoverse-n1"]
    run_rule = text.split("rule cross_run_tests\n", 1)[1].split("\n\n", 1)[0]
    assert "command = $cross_run $in --gtest_brief=1 && touch $out" in run_rule


def test_x86_rules_do_not_change_when_aarch64_presets_join(repo: Path) -> None:
    x86 = discover_presets(repo, "x86_64")
    a64 = discover_presets(repo, "aarch64")
    alone = render_build_ninja(repo, repo / "build", x86, toolchain=FIXED, arch="x86_64")
    both = render_build_ninja(repo, repo / "build", x86, toolchain=FIXED, arch="x86_64",
                              cross_presets=a64)
    head = alone.split("\nbuild all: phony")[0].rstrip("\n")
    assert both.startswith(head + "\n\n# ---- aarch64, built cross")


def test_on_an_aarch64_host_its_presets_are_native(repo: Path) -> None:
    out = write_build_ninja(repo, repo / "build", "t", toolchain=FIXED, arch="aarch64")
    text = out.read_text()
    assert "cross_" not in text and "qemu" not in text and "x86-64-v2" not in text
    assert f"build {repo}/build/cortex-a53/aesgen_tests: link " in text


def test_cross_toolchain_from_env() -> None:
    tc = CrossToolchain.from_env({"AARCH64_CC": "clang --target=aarch64-linux-gnu",
                                  "AARCH64_RUN": "qemu-aarch64 -cpu cortex-a72",
                                  "GTEST_SRC": "/opt/gtest"})
    assert tc.cc == "clang --target=aarch64-linux-gnu" and tc.cxx == CrossToolchain.cxx
    assert tc.run == "qemu-aarch64 -cpu cortex-a72" and tc.gtest_src == "/opt/gtest"
    assert tc.tools() == ["clang", "aarch64-linux-gnu-g++", "aarch64-linux-gnu-ar",
                          "qemu-aarch64"]


@pytest.mark.skipif(shutil.which("ninja") is None, reason="ninja is not installed")
def test_ninja_accepts_the_cross_build(repo: Path) -> None:
    builddir = repo / "build"
    write_build_ninja(repo, builddir, "t", toolchain=FIXED, arch="x86_64",
                      cross=CrossToolchain(gtest_src=str(repo / "gtest")))
    dry = run(["ninja", "-C", builddir, "-n", "check-cortex-a53"])
    assert dry.returncode == 0, dry.stdout + dry.stderr
    assert "TEST[aarch64]" in dry.stdout and "LINK[aarch64]" in dry.stdout


# ---- the trampoline ----------------------------------------------------------------------

@pytest.fixture(scope="session")
def trampoline_object(tmp_path_factory) -> Path:
    require_cross()
    obj = tmp_path_factory.mktemp("abi") / "abi_check_aarch64.o"
    checked([CC, "-O2", "-Wall", "-Wextra", "-Werror", "-I", HARNESS, "-c",
             HARNESS / "abi_check_aarch64.S", "-o", obj])
    return obj


def global_functions(obj: Path) -> list[str]:
    syms = checked(["aarch64-linux-gnu-readelf", "-Ws", obj]).stdout
    return sorted(f[7] for f in (line.split() for line in syms.splitlines())
                  if len(f) >= 8 and f[3] == "FUNC" and f[4] == "GLOBAL" and f[6] != "UND")


def first_instructions(obj: Path) -> dict[str, str]:
    """symbol -> its first instruction, from objdump."""
    dis = checked(["aarch64-linux-gnu-objdump", "-d", "--no-show-raw-insn", obj]).stdout
    first: dict[str, str] = {}
    current = None
    for line in dis.splitlines():
        m = re.match(r"^[0-9a-f]+ <([^>]+)>:$", line)
        if m:
            current = m.group(1)
            continue
        m = re.match(r"^\s+[0-9a-f]+:\s+(.*)$", line)
        if m and current is not None and current not in first:
            first[current] = " ".join(m.group(1).split("//")[0].split())
    return first


def note_gnu_stack_ok(obj: Path) -> bool:
    """The object has a .note.GNU-stack section without the executable flag."""
    sections = checked(["aarch64-linux-gnu-readelf", "-SW", obj]).stdout
    for line in sections.splitlines():
        if ".note.GNU-stack " in line:
            # type, address, offset, size, entsize, [flags], link, info, align
            fields = line.split(".note.GNU-stack ", 1)[1].split()
            return "X" not in (fields[5] if len(fields) == 9 else "")
    return False


def test_trampoline_assembles_with_bti_landing_pads_and_notes(trampoline_object: Path) -> None:
    obj = trampoline_object
    notes = checked(["aarch64-linux-gnu-readelf", "-n", obj]).stdout
    assert "AArch64 feature: BTI" in notes
    assert note_gnu_stack_ok(obj)
    functions = global_functions(obj)
    assert "aesgen_abi_call4" in functions and "aesgen_abi_good_volatile" in functions
    assert len([f for f in functions if f.startswith("aesgen_abi_bad_")]) == 22
    first = first_instructions(obj)
    assert {f: first.get(f) for f in functions} == {f: "bti c" for f in functions}


# A caller (C) and callees (assembly) written here, apart from the harness: one callee keeps
# the rules, the others break one or two each; the trampoline must report exactly those.
CLOBBER_S = r"""
    .text
.macro fn name
    .globl \name
    .type \name, %function
    .p2align 2
\name:
    bti c
.endm
fn t_clobber_x21_d9
    mov x21, #0x1234
    fmov d9, xzr
    add x0, x0, #1
    ret
fn t_clobber_x28
    mov x28, sp
    ret
fn t_clobber_d15_only_low_half
    mov x9, #7
    mov v15.d[0], x9
    ret
fn t_polite_v
    mov v9.d[1], xzr        // only the upper half: allowed
    mov x0, #42
    ret
fn t_writes_callers_frame
    str xzr, [sp, #16]
    ret
    .section .note.GNU-stack,"",%progbits
"""

CALLER_C = r"""
#include <stdio.h>
#include "abi_check.h"
uint64_t t_clobber_x21_d9(uint64_t), t_clobber_x28(void), t_clobber_d15_only_low_half(void),
    t_polite_v(void), t_writes_callers_frame(void);
static void report(const char *name, const void *fn) {
    uint64_t ret = 0;
    uint64_t mask = aesgen_abi_call4(fn, 41, 0, 0, 0, &ret);
    printf("%s %#llx %llu\n", name, (unsigned long long)mask, (unsigned long long)ret);
}
int main(void) {
    report("clobber_x21_d9", (const void *)t_clobber_x21_d9);
    report("clobber_x28", (const void *)t_clobber_x28);
    report("clobber_d15", (const void *)t_clobber_d15_only_low_half);
    report("polite_v", (const void *)t_polite_v);
    report("frame", (const void *)t_writes_callers_frame);
    report("good_volatile", (const void *)aesgen_abi_good_volatile);
    printf("expect %#x %#x %#x %#x\n", AESGEN_ABI_X21 | AESGEN_ABI_D9, AESGEN_ABI_X28,
           AESGEN_ABI_D15, AESGEN_ABI_FRAME);
    return 0;
}
"""


def test_trampoline_catches_a_clobbering_function_under_qemu(tmp_path: Path,
                                                              trampoline_object: Path) -> None:
    (tmp_path / "callees.S").write_text(CLOBBER_S)
    (tmp_path / "caller.c").write_text(CALLER_C)
    exe = tmp_path / "abi_sanity"
    checked([CC, "-O1", "-static", "-I", HARNESS, tmp_path / "caller.c",
             tmp_path / "callees.S", trampoline_object, "-o", exe])
    out = checked([*QEMU, exe], timeout=60).stdout.split("\n")
    got = {f[0]: f[1:] for f in (line.split() for line in out) if f}
    x21_d9, x28, d15, frame = (int(v, 16) for v in got["expect"])
    assert got["clobber_x21_d9"] == [hex(x21_d9), "42"]       # caught, ret passed through
    assert int(got["clobber_x28"][0], 16) == x28
    assert int(got["clobber_d15"][0], 16) == d15
    assert got["polite_v"] == ["0", "42"]                      # upper half of v9: allowed
    assert int(got["frame"][0], 16) == frame
    assert got["good_volatile"][0] == "0"


def test_trampoline_is_accepted_where_qemu_enforces_bti(tmp_path: Path,
                                                         trampoline_object: Path) -> None:
    """A freestanding static binary whose every object is BTI-marked: qemu then enforces
    BTI, the trampoline and the harness's callees pass, and a callee without a landing pad
    is killed (so the enforcement is real)."""
    (tmp_path / "start.S").write_text(BTI_START_S + "\nfn no_pad_callee\n".replace(
        "fn no_pad_callee\n", NO_PAD_S))
    (tmp_path / "run.c").write_text(BTI_RUN_C)
    results = {}
    for variant, defs in (("ok", []), ("no_pad", ["-DCALL_NO_PAD"])):
        exe = tmp_path / f"bti_{variant}"
        checked([CC, *defs, *BTI_FLAGS, "-I", HARNESS, tmp_path / "start.S", tmp_path / "run.c",
                 trampoline_object, "-o", exe])
        assert "AArch64 feature: BTI" in checked(["aarch64-linux-gnu-readelf", "-n", exe]).stdout
        results[variant] = run([*QEMU, exe], timeout=60).returncode
    assert results["ok"] == 0, f"exit {results['ok']} (10: mask, 11: return value)"
    assert results["no_pad"] == -4, "a BLR to a function without `bti c` was not stopped: " \
        f"qemu did not enforce BTI (exit {results['no_pad']})"


BTI_FLAGS = ["-O1", "-ffreestanding", "-nostdlib", "-static", "-mbranch-protection=standard",
             "-Wl,-z,force-bti", "-Wl,--fatal-warnings"]

# _start sets up a thread pointer (the trampoline keeps sp in TLS), calls run(), exits with
# its result. Marked BTI, as every object of the link must be.
BTI_START_S = r"""
    .text
    .globl _start
    .type _start, %function
_start:
    adrp x0, tls_area
    add x0, x0, :lo12:tls_area
    msr tpidr_el0, x0
    bl run
    mov x8, #93             // exit
    svc #0
    .size _start, .-_start
    .bss
    .p2align 6
tls_area:
    .zero 4096
    .section .note.gnu.property,"a"
    .p2align 3
    .long 4, 16, 5
    .asciz "GNU"
    .long 0xc0000000, 4, 1, 0
    .section .note.GNU-stack,"",%progbits
"""

NO_PAD_S = r"""
    .text
    .globl no_pad_callee
    .type no_pad_callee, %function
no_pad_callee:
    nop                     // no `bti c`: a BLR here must trap under BTI
    ret
    .size no_pad_callee, .-no_pad_callee
"""

BTI_RUN_C = r"""
#include "abi_check.h"
void no_pad_callee(void);
int run(void) {
    uint64_t r = 0;
    if (aesgen_abi_call4((const void *)aesgen_abi_good_volatile, 1, 2, 3, 4, &r) != 0)
        return 10;
    if (r != (1 ^ (2ull << 8) ^ (3ull << 16) ^ (4ull << 24)))
        return 11;
    if (aesgen_abi_call4((const void *)aesgen_abi_bad_x19, 0, 0, 0, 0, 0) != AESGEN_ABI_X19)
        return 12;
#ifdef CALL_NO_PAD
    aesgen_abi_call4((const void *)no_pad_callee, 0, 0, 0, 0, 0);
    return 13;
#endif
    return 0;
}
"""


# ---- the AArch64 kernels -----------------------------------------------------------------

def aarch64_preset_names() -> list[str]:
    """targets/*.toml with arch = "aarch64" that list at least one method (a preset with
    none, like no-crypto until its NEON methods exist, has no kernel to test)."""
    names = []
    for path in sorted(TARGETS.glob("*.toml")):
        try:
            data = tomllib.loads(path.read_text())
        except (OSError, ValueError):
            continue
        if data.get("arch") == "aarch64" and isinstance(data.get("name"), str) \
                and data.get("methods"):
            names.append(data["name"])
    return names


AARCH64_PRESETS = aarch64_preset_names()


@pytest.fixture(scope="session")
def aarch64_set(tmp_path_factory):
    """set(name) -> (folder, manifest) of that AArch64 preset: generated/<name> when
    committed, else a fresh `aesgen generate --cpu <name> --mode ctr` (the committed sets
    hold GCM kernels of every AArch64 method and hash engine; every preset's GCM files are
    assembled by test_aarch64_backend.test_every_file_assembles)."""
    made: dict[str, tuple[Path, dict]] = {}

    def get(name: str) -> tuple[Path, dict]:
        if name not in made:
            folder = GENERATED / name
            if not (folder / "manifest.json").is_file():
                folder = tmp_path_factory.mktemp("a64") / name
                proc = run([AESGEN, "generate", "--cpu", name, "--mode", "ctr", "-o", folder],
                           cwd=ROOT)
                assert proc.returncode == 0, f"aesgen generate --cpu {name}:\n{proc.stderr}"
            manifest = json.loads((folder / "manifest.json").read_text())
            assert manifest.get("arch") == "aarch64", f"{folder}: arch {manifest.get('arch')}"
            made[name] = (folder, manifest)
        return made[name]

    return get


def needs_presets():
    return pytest.mark.skipif(not AARCH64_PRESETS,
                              reason="no AArch64 preset in targets/ (arch = \"aarch64\")")


def crypto_operation(stmt: str) -> str:
    """The instruction's mnemonic, with ".1q" added for PMULL/PMULL2 on 64-bit elements
    (the Crypto Extension's form; on bytes they are base Advanced SIMD)."""
    m = stmt.split()[0].lower()
    if m in ("pmull", "pmull2") and ".1q" in stmt.lower():
        return m + ".1q"
    return m


def instruction_mnemonics(text: str) -> list[tuple[int, str]]:
    """(line number, mnemonic) of each instruction in GNU assembler text for AArch64:
    comments, labels and directives dropped; PMULL's 64-bit form as crypto_operation
    names it."""
    text = re.sub(r"/\*.*?\*/", lambda m: "\n" * m.group(0).count("\n"), text, flags=re.S)
    out = []
    for no, line in enumerate(text.splitlines(), 1):
        line = line.split("//")[0]
        for stmt in line.split(";"):
            stmt = re.sub(r"^\s*([A-Za-z_.$][\w.$]*|\d+):", "", stmt).strip()
            if not stmt or stmt.startswith(".") or stmt.startswith("#"):
                continue
            out.append((no, crypto_operation(stmt)))
    return out


@needs_presets()
@pytest.mark.parametrize("preset", AARCH64_PRESETS)
def test_crypto_instructions_only_where_the_features_allow(preset: str, aarch64_set,
                                                          tmp_path: Path) -> None:
    """neon-tbl and bitsliced kernels, CTR and GCM (and any kernel that does not list
    AES/PMULL) hold no AESE/AESD/AESMC/AESIMC and no 64-bit PMULL: in the .S text, and in
    what the assembler made of it (which would also show an instruction hidden in .inst).
    Their GCM hashes with PMULL on bytes, which base Advanced SIMD has."""
    require_cross()
    folder, manifest = aarch64_set(preset)
    for k in manifest["kernels"] + manifest["aeads"]:
        feats = {f.upper() for f in k.get("features", [])}
        allowed = set()
        if "AES" in feats and k["method"] not in NO_CRYPTO_METHODS:
            allowed |= {"aese", "aesd", "aesmc", "aesimc"}
        if "PMULL" in feats and k["method"] not in NO_CRYPTO_METHODS:
            allowed |= {"pmull.1q", "pmull2.1q"}
        src = folder / k["file"]
        bad = [(no, m) for no, m in instruction_mnemonics(src.read_text())
               if CRYPTO.match(m) and m not in allowed]
        assert not bad, f"{preset}/{k['file']} ({k['method']}, features {sorted(feats)}) " \
            f"uses {sorted({m for _, m in bad})}, first at line {bad[0][0]}"
        obj = tmp_path / (k["file"] + ".o")
        checked([CC, "-c", "-I", folder, src, "-o", obj])
        dis = checked(["aarch64-linux-gnu-objdump", "-d", "--no-show-raw-insn", obj]).stdout
        used = {crypto_operation(m.group(1))
                for m in re.finditer(r"^\s+[0-9a-f]+:\s+([a-z0-9.]+[^\n]*)", dis, re.M)}
        hidden = {m for m in used if CRYPTO.match(m)} - allowed
        assert not hidden, f"{preset}/{k['file']}: the assembled object holds {sorted(hidden)}"


@needs_presets()
def test_neon_kernels_without_crypto_are_checked_somewhere(aarch64_set) -> None:
    """Says so (as a skip) while no AArch64 preset has a neon-tbl or bitsliced kernel yet,
    so the check above is not taken for more than it is."""
    methods = {k["method"] for name in AARCH64_PRESETS for k in aarch64_set(name)[1]["kernels"]}
    if not methods & NO_CRYPTO_METHODS:
        pytest.skip(f"no AArch64 kernel without the Crypto Extension yet (methods: "
                    f"{', '.join(sorted(methods))})")


@needs_presets()
@pytest.mark.parametrize("preset", AARCH64_PRESETS)
def test_kernel_objects_have_a_non_executable_stack_note(preset: str, aarch64_set,
                                                         tmp_path: Path) -> None:
    """The cross link runs with -Wl,--no-warnings (OpenSSL's static libcrypto always warns),
    so the missing-.note.GNU-stack warning is checked here instead."""
    require_cross()
    folder, manifest = aarch64_set(preset)
    for k in manifest["kernels"]:
        obj = tmp_path / (k["file"] + ".o")
        checked([CC, "-c", "-I", folder, folder / k["file"], "-o", obj])
        assert note_gnu_stack_ok(obj), f"{preset}/{k['file']}: no non-executable .note.GNU-stack"


# The outside differential check: a small driver (C, static, no OpenSSL) runs every kernel
# of a set under qemu; the host's openssl command computes the same keystreams.
DRIVER_C = r"""
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "aesgen.h"

static size_t unhex(const char *h, unsigned char *out) {
    size_t n = 0;
    for (; h[0] && h[1]; h += 2) {
        unsigned v;
        sscanf(h, "%2x", &v);
        out[n++] = (unsigned char)v;
    }
    return n;
}

/* stdin, one case a line: <kernel index> <key hex> then segments, each "iv=<hex>" (init for
 * the first, set_iv after) followed by the lengths of its xor_stream calls.  stdout, one
 * line a segment: "<kernel name> <segment> <keystream hex>" (input all zero). */
int main(void) {
    static char line[1 << 16];
    if (fgets(line, sizeof line, stdin) && strncmp(line, "list", 4) == 0) {
        for (size_t i = 0; i < aesgen_kernel_count; i++)
            printf("%zu %s %s %d\n", i, aesgen_kernels[i].name, aesgen_kernels[i].method,
                   (aesgen_kernels[i].features & ~aesgen_cpu_features()) == 0);
        fflush(stdout);
    }
    while (fgets(line, sizeof line, stdin)) {
        char *save = 0, *tok = strtok_r(line, " \n", &save);
        if (!tok) continue;
        const aesgen_kernel *k = &aesgen_kernels[strtoul(tok, 0, 10)];
        unsigned char key[32], iv[16];
        size_t key_len = unhex(strtok_r(0, " \n", &save), key);
        void *ctx = aligned_alloc(64, (k->ctx_size + 63) & ~(size_t)63);
        unsigned char *buf = 0, *zero = 0;
        size_t len = 0, cap = 0;
        int seg = -1;
        for (;;) {
            tok = strtok_r(0, " \n", &save);
            if (!tok || strncmp(tok, "iv=", 3) == 0) {
                if (seg >= 0) {
                    printf("%s %d ", k->name, seg);
                    for (size_t i = 0; i < len; i++) printf("%02x", buf[i]);
                    printf("\n");
                }
                if (!tok) break;
                unhex(tok + 3, iv);
                int r = seg < 0 ? k->init(ctx, key, key_len, iv) : k->set_iv(ctx, iv);
                if (r != 0) { printf("%s error %d\n", k->name, r); break; }
                seg++;
                len = 0;
                continue;
            }
            size_t n = strtoul(tok, 0, 10);
            if (len + n > cap) {
                cap = 2 * (len + n);
                buf = realloc(buf, cap);
                zero = realloc(zero, cap);
                memset(zero, 0, cap);
            }
            k->xor_stream(ctx, buf + len, zero + len, n);
            len += n;
        }
        k->wipe(ctx);
        free(ctx);
        free(buf);
        free(zero);
        fflush(stdout);
    }
    return 0;
}
"""


def openssl_keystream(key: bytes, iv: bytes, n: int) -> str:
    cipher = {16: "aes-128-ctr", 24: "aes-192-ctr", 32: "aes-256-ctr"}[len(key)]
    proc = subprocess.run(["openssl", "enc", f"-{cipher}", "-K", key.hex(), "-iv", iv.hex(),
                           "-nosalt", "-nopad"], input=bytes(n), capture_output=True,
                          timeout=60)
    assert proc.returncode == 0, proc.stderr.decode()
    assert len(proc.stdout) == n
    return proc.stdout.hex()


def edge_ivs(rng: random.Random) -> list[tuple[str, bytes]]:
    """IVs a few blocks before the carries FACE cares about, and plain random ones."""
    ivs = [("random", rng.randbytes(16))]
    window = bytearray(rng.randbytes(16))
    window[15] = 0xf3
    ivs.append(("window", bytes(window)))
    for name, ff in (("2^32", 4), ("2^40", 5), ("2^64", 8), ("2^128", 16)):
        # the last counter before the carry: the low ff bytes all 0xff, the next one not
        top = int.from_bytes(rng.randbytes(16), "big") | ((1 << (8 * ff)) - 1)
        if ff < 16:
            top = (top & ~(0xff << (8 * ff))) | (rng.randrange(0, 0xff) << (8 * ff))
        start = (top - rng.randrange(0, 300)) % (1 << 128)
        ivs.append((name, start.to_bytes(16, "big")))
    return ivs


def random_split(rng: random.Random, n: int) -> list[int]:
    cuts = sorted(rng.randrange(0, n + 1) for _ in range(rng.randrange(0, 5)))
    return [b - a for a, b in zip([0, *cuts], [*cuts, n])]


@needs_presets()
@pytest.mark.parametrize("preset", AARCH64_PRESETS)
def test_kernels_under_qemu_match_the_hosts_openssl(preset: str, aarch64_set,
                                                    tmp_path: Path) -> None:
    require_cross()
    if shutil.which("openssl") is None:
        pytest.fail("the openssl command is missing (Debian: openssl)")
    folder, manifest = aarch64_set(preset)
    (tmp_path / "driver.c").write_text(DRIVER_C)
    exe = tmp_path / "driver"
    sources = sorted(folder.glob("*.S")) + [folder / "aesgen_registry.c"]
    checked([CC, "-O1", "-static", "-I", folder, tmp_path / "driver.c", *sources, "-o", exe])

    rng = random.Random(f"aesgen-aarch64-{preset}")
    key_lens = [b // 8 for b in manifest.get("key_bits", [128, 192, 256])]
    cases = []  # (key, [(iv, [chunks])...])
    for key_len in key_lens:
        for _, iv in edge_ivs(rng):
            key = rng.randbytes(key_len)
            segments = [(iv, random_split(rng, rng.randrange(1, 3 * 4096 + 700)))]
            # set_iv keeping bytes 0, 5 and 10 (FACE tables stay), then one changing them
            keep = bytearray(rng.randbytes(16))
            for i in (0, 5, 10):
                keep[i] = iv[i]
            segments.append((bytes(keep), random_split(rng, rng.randrange(1, 2 * 4096))))
            segments.append((rng.randbytes(16), random_split(rng, rng.randrange(1, 4096))))
            cases.append((key, segments))

    listing = None
    lines = ["list"]
    count = len(manifest["kernels"])
    for idx in range(count):
        for key, segments in cases:
            words = [str(idx), key.hex()]
            for iv, chunks in segments:
                words += [f"iv={iv.hex()}", *map(str, chunks)]
            lines.append(" ".join(words))
    proc = checked([*QEMU, exe], input="\n".join(lines) + "\n", timeout=600)
    out = proc.stdout.splitlines()
    listing, results = out[:count], out[count:]
    runnable = {line.split()[1]: line.split()[3] == "1" for line in listing}
    assert all(runnable.values()), f"kernels that do not run under {CROSS.run}: " \
        f"{[n for n, ok in runnable.items() if not ok]}"
    names = [line.split()[1] for line in listing]
    assert sorted(names) == sorted(k["name"] for k in manifest["kernels"])

    want: dict[tuple[bytes, bytes, int], str] = {}
    it = iter(results)
    for name in names:
        for key, segments in cases:
            for seg, (iv, chunks) in enumerate(segments):
                line = next(it).split()
                assert line[:2] == [name, str(seg)], f"driver said {' '.join(line[:3])}"
                got = line[2] if len(line) > 2 else ""
                n = sum(chunks)
                if (key, iv, n) not in want:
                    want[(key, iv, n)] = openssl_keystream(key, iv, n)
                expect = want[(key, iv, n)]
                if got != expect:
                    first = next(i for i in range(0, len(expect), 2)
                                 if got[i:i + 2] != expect[i:i + 2]) // 2
                    pytest.fail(f"{preset} {name}: AES-{len(key) * 8} key {key.hex()} iv "
                                f"{iv.hex()} (segment {seg}, calls {chunks}): keystream differs "
                                f"from `openssl enc` from byte {first} (block {first // 16})")


# ---- the kernels under BTI enforcement ---------------------------------------------------

BTI_KERNEL_C = r"""
#include "abi_check.h"
#include <stdint.h>
#include <stddef.h>
%(decls)s
static unsigned char ctx[1 << 16] __attribute__((aligned(64)));
static unsigned char buf[4096 + 77];
static const unsigned char key[32] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16,
                                      17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30};
static const unsigned char iv[16] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
                                     0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xf0};
#define CALL(fn, a, b, c, d) \
    do { if (aesgen_abi_call4((const void *)(fn), (uint64_t)(a), (uint64_t)(b), (uint64_t)(c), \
                              (uint64_t)(d), 0) != 0) return 20 + step; step++; } while (0)
int run(void) {
    int step = 0;
%(calls)s
    return 0;
}
"""


@needs_presets()
@pytest.mark.parametrize("preset", AARCH64_PRESETS)
def test_kernel_entry_points_are_bti_landing_pads(preset: str, aarch64_set,
                                                  tmp_path: Path) -> None:
    """Every kernel's init, set_iv, xor_stream and wipe, reached by BLR from the trampoline in
    a binary where qemu enforces BTI (freestanding: no libc, whose objects carry no BTI note
    on Debian 12), and the callee-saved registers checked on the way."""
    require_cross()
    folder, manifest = aarch64_set(preset)
    decls, calls = [], []
    for k in manifest["kernels"]:
        s = k["symbols"]
        decls.append(f"void {s['init']}(void), {s['set_iv']}(void), {s['xor_stream']}(void), "
                     f"{s['wipe']}(void);")
        if k.get("ctx_size", 0) > 1 << 16:
            pytest.fail(f"{k['name']}: ctx_size {k['ctx_size']} > the test's 64 KiB")
        key_len = max(manifest.get("key_bits", [128])) // 8
        calls += [f"    CALL({s['init']}, ctx, key, {key_len}, iv);",
                  f"    CALL({s['xor_stream']}, ctx, buf, buf, sizeof buf);",
                  f"    CALL({s['set_iv']}, ctx, iv, 0, 0);",
                  f"    CALL({s['xor_stream']}, ctx, buf + 3, buf + 3, 1000);",
                  f"    CALL({s['wipe']}, ctx, 0, 0, 0);"]
    (tmp_path / "run.c").write_text(BTI_KERNEL_C % {"decls": "\n".join(decls),
                                                    "calls": "\n".join(calls)})
    (tmp_path / "start.S").write_text(BTI_START_S)
    exe = tmp_path / "bti_kernels"
    kernels = [folder / k["file"] for k in manifest["kernels"]]
    proc = run([CC, *BTI_FLAGS, "-I", HARNESS, "-I", folder, tmp_path / "start.S",
                tmp_path / "run.c", HARNESS / "abi_check_aarch64.S", *kernels, "-o", exe])
    assert proc.returncode == 0, "linking the kernels with -z force-bti --fatal-warnings " \
        f"failed (a .S without the BTI property note?):\n{proc.stderr}"
    code = run([*QEMU, exe], timeout=120).returncode
    assert code == 0, (f"exit {code}: " + ("SIGILL: a kernel entry is not a BTI landing pad"
                       if code == -4 else "an ABI check failed (20 + the call's number)"))


# ---- the runner's AArch64 part -----------------------------------------------------------

def test_runner_names_what_the_cross_part_lacks() -> None:
    from aesgen.testing.runner import _missing_cross_tools

    tc = CrossToolchain(cc="aesgen-no-such-gcc", run="aesgen-no-such-qemu -cpu max",
                        gtest_src="/nonexistent/googletest")
    missing = _missing_cross_tools(tc)
    assert "aesgen-no-such-gcc" in missing and "aesgen-no-such-qemu" in missing
    assert any("/nonexistent/googletest" in m for m in missing)
    if ON_X86 and shutil.which(CROSS.cc):
        assert _missing_cross_tools(CROSS) == [], "setup should have installed these"


FAKE_GTEST = r"""
import os, sys
shard = int(os.environ.get("GTEST_SHARD_INDEX", "0"))
report = next(a.split(":", 1)[1] for a in sys.argv if a.startswith("--gtest_output=xml:"))
cases = {0: '<testcase name="A" status="run" result="completed" classname="S"/>'
            '<testcase name="B" status="run" result="skipped" classname="S">'
            '<skipped message="needs SVE2"/></testcase>',
         1: '<testcase name="C" status="run" result="completed" classname="S">'
            '<failure message="wrong output at byte 7"/></testcase>'}[shard]
open(report, "w").write('<?xml version="1.0"?><testsuites><testsuite name="S">'
                        + cases + '</testsuite></testsuites>')
assert os.environ["AESGEN_TEST_SCALE"] == "@SCALE@"
assert os.environ["AESGEN_TEST_EXPECT_ALL_KERNELS"] == "1"
sys.exit(1 if shard == 1 else 0)
"""


def test_runner_runs_shards_side_by_side_and_adds_them_up(tmp_path: Path, capsys,
                                                          monkeypatch) -> None:
    from aesgen.testing.runner import EMULATED_SCALE, GtestSuite, run_gtest_suite

    monkeypatch.delenv("AESGEN_TEST_SCALE", raising=False)
    binary = tmp_path / "cortex-a53" / "aesgen_tests"
    binary.parent.mkdir()
    binary.write_text(FAKE_GTEST.replace("@SCALE@", EMULATED_SCALE))
    (binary.parent / "gtest-results.xml").write_text("stale")
    suite = GtestSuite(binary, label="aarch64 (qemu-aarch64 -cpu max)",
                       launcher=(sys.executable,),
                       env=(("AESGEN_TEST_EXPECT_ALL_KERNELS", "1"),),
                       default_scale=EMULATED_SCALE, shards=2)
    tally = run_gtest_suite(suite, None)
    assert (tally.passed, tally.failed, tally.skipped) == (1, 1, 1)
    assert "FAILED cortex-a53: S.C: wrong output at byte 7" in tally.notes
    assert "skipped cortex-a53: S.B: needs SVE2" in tally.notes
    out = capsys.readouterr().out
    assert "== cortex-a53/aesgen_tests  aarch64 (qemu-aarch64 -cpu max)" in out
    assert "1 passed, 1 failed, 1 skipped" in out
    assert not (binary.parent / "gtest-results.xml").exists()  # the stale one is gone
