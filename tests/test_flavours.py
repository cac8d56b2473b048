"""Output flavours: the ELF and Mach-O files of a set hold the same instructions.

No macOS machine runs here, so the Mach-O flavour is judged by clang's assembler for
x86_64-apple-macos and arm64-apple-macos: every file assembles; its __text bytes equal the
ELF file's (both assembled by clang), except where the ELF object leaves a relocation's
field for the linker; its exported symbols are the manifest's with Mach-O's leading
underscore, and nothing without the prefix is exported; it carries unwind information
(__eh_frame / __compact_unwind from its CFI). Every file's text sits behind its flavour's
preprocessor guard: assembled for another target it is empty.

The win64 flavour runs under wine (tests/test_win64.py); the ELF one everywhere else.
"""
from __future__ import annotations

import functools
import json
import re
import subprocess
from pathlib import Path

import pytest

from aesgen.emit.generate import GenerateRequest, render_set
from aesgen.targets import all_presets

LLVM = Path("/usr/lib/llvm-19/bin")
CLANG = "clang-19"
# preset -> (clang's ELF target, clang's Mach-O target)
PRESETS = {"x86-64-v2": ("x86_64-linux-gnu", "x86_64-apple-macos11"),
           "sapphirerapids": ("x86_64-linux-gnu", "x86_64-apple-macos11"),
           "apple-m1": ("aarch64-linux-gnu", "arm64-apple-macos11")}
MODES = ("ctr", "gcm", "gcm-siv", "otr", "otr-v2", "otr-s", "otr-v2-s")


@functools.cache
def rendered(preset: str) -> dict[str, str]:
    """Every method and mode of a preset at FACE r2 (the level with most code), 128- and
    256-bit keys, in both flavours."""
    p = all_presets()[preset]
    req = GenerateRequest(p, tuple(m.variant for m in p.methods), ("r2",), (128, 256),
                          "aesgen_", f"aesgen generate --cpu {preset} --flavour elf,macho",
                          MODES, flavours=("elf", "macho"))
    return render_set(req)


def _run(cmd: list) -> str:
    proc = subprocess.run([str(c) for c in cmd], capture_output=True, text=True)
    assert proc.returncode == 0, f"{' '.join(map(str, cmd))} failed:\n{proc.stderr[-3000:]}"
    return proc.stdout


def _assemble(src: Path, target: str) -> Path:
    obj = src.with_name(f"{src.stem}.{target}.o")
    _run([CLANG, f"--target={target}", "-c", src, "-o", obj])
    return obj


def _text(obj: Path, macho: bool) -> bytes:
    out = obj.with_suffix(".text")
    section = "__TEXT,__text" if macho else ".text"
    _run([LLVM / "llvm-objcopy", "--dump-section", f"{section}={out}", obj])
    return out.read_bytes()


def _relocated_fields(obj: Path) -> set[int]:
    """Byte offsets in the text that a relocation fills in (4 bytes at each): ELF leaves the
    constants' RIP-relative displacements to the linker, Mach-O the calls of a local
    function (a symbol of its own there)."""
    return {at + i for at, _, _ in _relocations(obj) for i in range(4)}


# the relocations a Mach-O kernel may carry: calls of a local function and RIP-relative
# loads of its constants (SIGNED, SIGNED_n when n immediate bytes follow the displacement)
# on x86-64; the ADRP/ADD pair of a constant's address on arm64
MACHO_RELOCATIONS = {"x86_64": {"X86_64_RELOC_BRANCH", "X86_64_RELOC_SIGNED",
                                "X86_64_RELOC_SIGNED_1", "X86_64_RELOC_SIGNED_4"},
                     "aarch64": {"ARM64_RELOC_PAGE21", "ARM64_RELOC_PAGEOFF12",
                                 "ARM64_RELOC_ADDEND"}}


def _relocations(obj: Path) -> list[tuple[int, str, str]]:
    """(offset, type, target) of every relocation of the text section."""
    out, section = [], None
    for line in _run([LLVM / "llvm-objdump", "-r", obj]).splitlines():
        if line.startswith("RELOCATION RECORDS FOR"):
            section = line.split("[")[1].rstrip("]:")
        elif section in (".text", "__text") and re.match(r"^[0-9a-f]{16} ", line):
            parts = line.split()
            out.append((int(parts[0], 16), parts[1], parts[2] if len(parts) > 2 else ""))
    return out


def _exported(obj: Path) -> set[str]:
    """Defined external symbols (llvm-nm: an upper-case type letter other than U)."""
    names = set()
    for line in _run([LLVM / "llvm-nm", obj]).splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[1].isupper() and parts[1] != "U":
            names.add(parts[2])
    return names


@pytest.mark.parametrize("preset", PRESETS)
def test_macho_holds_the_elf_instructions(preset, tmp_path):
    files = rendered(preset)
    manifest = json.loads(files["manifest.json"])
    elf_target, macho_target = PRESETS[preset]
    kernels = manifest["kernels"] + manifest["aeads"]
    assert kernels
    for k in kernels:
        assert set(k["flavour_files"]) == {"elf", "macho"}, k["name"]
        elf_src = tmp_path / k["flavour_files"]["elf"]
        macho_src = tmp_path / k["flavour_files"]["macho"]
        elf_src.write_text(files[elf_src.name])
        macho_src.write_text(files[macho_src.name])
        elf_obj, macho_obj = _assemble(elf_src, elf_target), _assemble(macho_src, macho_target)
        elf_text, macho_text = _text(elf_obj, False), _text(macho_obj, True)
        assert len(elf_text) == len(macho_text), \
            f"{k['name']}: {len(macho_text)} bytes of Mach-O text against {len(elf_text)} of ELF"
        fields = _relocated_fields(elf_obj) | _relocated_fields(macho_obj)
        differ = [i for i, (a, b) in enumerate(zip(elf_text, macho_text))
                  if a != b and i not in fields]
        assert not differ, f"{k['name']}: Mach-O text differs from ELF at {differ[:5]}"
        symbols = set(k["symbols"].values())
        for obj in (elf_obj, macho_obj):        # nothing left for the linker to find
            assert not _run([LLVM / "llvm-nm", "-u", obj]).strip(), f"{obj.name}: undefined"
        arch = "aarch64" if "arm64" in macho_target else "x86_64"
        kinds = {kind for _, kind, _ in _relocations(macho_obj)}
        assert kinds <= MACHO_RELOCATIONS[arch], f"{k['name']}: Mach-O relocations {kinds}"
        local_calls = [t for _, kind, t in _relocations(macho_obj) if kind.endswith("BRANCH")]
        assert all(t.startswith("_aesgen_") and t.endswith("_data") for t in local_calls), \
            f"{k['name']}: calls {set(local_calls)}"
        assert _exported(elf_obj) == symbols, k["name"]
        assert _exported(macho_obj) == {"_" + s for s in symbols}, k["name"]
        assert all(s.startswith("_aesgen_") for s in _exported(macho_obj))
        sections = _run([LLVM / "llvm-objdump", "-h", macho_obj])
        assert "__eh_frame" in sections or "__compact_unwind" in sections, \
            f"{k['name']}: no unwind information in the Mach-O object"
        assert ".eh_frame" in _run([LLVM / "llvm-objdump", "-h", elf_obj]), k["name"]


@pytest.mark.parametrize("preset", ["x86-64-v2", "apple-m1"])
def test_a_flavour_is_empty_on_another_target(preset, tmp_path):
    """The guards: the ELF file assembled for macOS, and the Mach-O one for Linux, hold no
    instruction and no symbol, so a build may pass every flavour to the compiler."""
    files = rendered(preset)
    elf_target, macho_target = PRESETS[preset]
    name = next(n for n in files if n.endswith("_gcm_r2.S"))
    for src_name, target in ((name, macho_target),
                             (name.replace(".S", "-macho.S"), elf_target)):
        src = tmp_path / src_name
        src.write_text(files[src_name])
        assert re.search(r"^#if defined\(__(x86_64|aarch64)__\) && defined\(__(ELF|APPLE)__\)$",
                         files[src_name], re.M), src_name
        obj = _assemble(src, target)
        assert not _exported(obj), f"{src_name} for {target} exports symbols"
        macho = "apple" in target
        try:
            text = _text(obj, macho)
        except AssertionError:
            text = b""                        # no text section at all
        assert text == b"", f"{src_name} for {target}: {len(text)} bytes of code"


def test_flavour_option_errors(aesgen_exe, tmp_path):
    out = tmp_path / "out"
    proc = subprocess.run([aesgen_exe, "generate", "--cpu", "apple-m1", "--flavour", "win64",
                           "-o", out], capture_output=True, text=True)
    assert proc.returncode == 2 and "apple-m1 is aarch64" in proc.stderr, proc.stderr
    assert "elf, macho" in proc.stderr and not out.exists()
    proc = subprocess.run([aesgen_exe, "generate", "--cpu", "x86-64-v2", "--flavour", "coff",
                           "-o", out], capture_output=True, text=True)
    assert proc.returncode == 2 and "bad flavour 'coff'" in proc.stderr, proc.stderr
    assert not out.exists()


@pytest.mark.parametrize("preset", ["x86-64-v2", "apple-m1"])
def test_the_registry_compiles_for_macos(preset, tmp_path):
    """aesgen_registry.c for a Mach-O target (no macOS SDK here: freestanding, so only the
    compiler's own headers): CPUID on x86-64, sysctlbyname on arm64."""
    files = rendered(preset)
    _, macho_target = PRESETS[preset]
    for name in ("aesgen.h", "aesgen_registry.c"):
        (tmp_path / name).write_text(files[name])
    obj = tmp_path / "registry.o"
    _run([CLANG, f"--target={macho_target}", "-ffreestanding", "-Wall", "-Wextra", "-Werror",
          "-c", tmp_path / "aesgen_registry.c", "-o", obj])
    names = _run([LLVM / "llvm-nm", obj])
    assert "_aesgen_cpu_features" in names
    if preset == "apple-m1":
        assert "_sysctlbyname" in names, "the arm64 registry asks macOS for its features"


@pytest.mark.parametrize("visibility", ["hidden", "default"])
def test_visibility_of_the_kernels(visibility, tmp_path):
    """--visibility hidden (the default) keeps every kernel symbol out of a shared library's
    dynamic symbols and leaves the registry's; default exports the kernels too. Either way
    every exported symbol has the set's prefix."""
    p = all_presets()["x86-64-v2"]
    req = GenerateRequest(p, ("aesni", "table"), ("none",), (128,), "vis_",
                          "aesgen generate --cpu x86-64-v2", ("ctr", "gcm"),
                          flavours=("elf", "macho"), visibility=visibility)
    files = render_set(req)
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    lib = tmp_path / "libvis.so"
    _run(["gcc", "-shared", "-fPIC", "-I", tmp_path, "-o", lib,
          *sorted(tmp_path.glob("*.S")), tmp_path / "aesgen_registry.c"])
    dynamic = {line.split()[-1] for line in _run(["nm", "-D", "--defined-only", lib]).splitlines()}
    manifest = json.loads(files["manifest.json"])
    kernel_symbols = {s for k in manifest["kernels"] + manifest["aeads"]
                      for s in k["symbols"].values()}
    assert manifest["visibility"] == visibility
    assert all(s.startswith("vis_") for s in dynamic), sorted(dynamic)
    assert {"vis_cpu_features", "vis_best_kernel", "vis_kernels"} <= dynamic
    if visibility == "hidden":
        assert not dynamic & kernel_symbols, sorted(dynamic & kernel_symbols)[:5]
        macho = files["aesni_face_none-macho.S"]
        assert "\t.private_extern\t_vis_aesni_face_none_init" in macho
        # -DVIS_EXPORT_KERNELS when assembling exports them after all
        exported = tmp_path / "libexported.so"
        _run(["gcc", "-shared", "-fPIC", "-DVIS_EXPORT_KERNELS", "-I", tmp_path, "-o", exported,
              *sorted(tmp_path.glob("*.S")), tmp_path / "aesgen_registry.c"])
        names = _run(["nm", "-D", "--defined-only", exported])
        assert all(s in names for s in kernel_symbols)
    else:
        assert kernel_symbols <= dynamic
