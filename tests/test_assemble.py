"""Every rendered set assembles and compiles; generated files carry their headers.

The real assembler and compilers are the judges: gcc -c for each .S, gcc and g++ with
warnings as errors for the header and registry, nm for the exported symbols.
"""
from __future__ import annotations

import functools
import json
import re
import subprocess
from pathlib import Path

import pytest

from aesgen.emit.generate import GenerateRequest, kernel_file_name, render_set
from aesgen.kernels.spec import FACE_LEVELS
from aesgen.paths import GENERATED
from aesgen.targets import all_presets

# x86-64 sets, assembled by the host gcc (AArch64 sets: tests/test_aarch64_backend.py)
PRESETS = {n: p for n, p in all_presets().items() if p.arch == "x86_64"}

# (FACE levels, key sizes, prefix, modes): each key-size subset, every FACE level, custom
# prefixes. The GCM kernels (the slowest to compile) come with every preset's full set and
# the custom prefix (on every method at FACE none: the prefix does not depend on the
# level), and with one key-size subset (the key-size dispatch with 2 sizes).
ALL_MODES = ("ctr", "gcm", "gcm-siv", "otr", "otr-v2", "otr-s", "otr-v2-s")
CONFIGS = {
    "k128": (FACE_LEVELS, (128,), "aesgen_", ("ctr",)),
    "k192-256": (FACE_LEVELS, (192, 256), "aesgen_", ALL_MODES),
    "kall": (FACE_LEVELS, (128, 192, 256), "aesgen_", ALL_MODES),
    "kall-MyLib_": (("none",), (128, 192, 256), "MyLib_", ALL_MODES),
    "r1-k128-256-x": (("r1",), (128, 256), "x", ("ctr",)),
}


@functools.cache
def rendered(preset: str, config: str) -> tuple[GenerateRequest, dict[str, str]]:
    """The set of a preset in a configuration. "kall" is what `aesgen generate --cpu P`
    writes, so for a preset with a committed folder its files are read from there:
    tests/test_regenerate.py proves the folder is byte for byte what rendering gives (and
    rendering every preset twice would cost minutes of the test run)."""
    faces, keys, prefix, modes = CONFIGS[config]
    p = PRESETS[preset]
    command = (f"aesgen generate --cpu {preset} --face {','.join(faces)} "
               f"--keys {','.join(map(str, keys))} --prefix {prefix} "
               f"--mode {','.join(modes)} -o out/{config}")
    committed = GENERATED / preset / "manifest.json"
    if config == "kall" and committed.exists():
        manifest = json.loads(committed.read_text())
        if manifest["command"] == f"aesgen generate --cpu {preset} -o generated/{preset}":
            req = GenerateRequest(p, tuple(m.variant for m in p.methods), faces, keys, prefix,
                                  manifest["command"], modes)
            return req, {name: (committed.parent / name).read_text()
                         for name in manifest["files"]}
    req = GenerateRequest(p, tuple(m.variant for m in p.methods), faces, keys, prefix, command,
                          modes)
    return req, render_set(req)


# every preset with all key sizes; the other configurations on presets that differ in
# encoding (legacy SSE, VEX with ymm, EVEX with zmm)
SUBSET_PRESETS = ("x86-64-v2", "alderlake", "sapphirerapids")
CASES = [pytest.param(p, c, id=f"{p}-{c}") for p in PRESETS for c in CONFIGS
         if c == "kall" or p in SUBSET_PRESETS]


def run(cmd: list[str], cwd: Path) -> None:
    proc = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True)
    assert proc.returncode == 0, f"{' '.join(cmd)} failed:\n{proc.stdout}{proc.stderr}"
    assert not proc.stderr.strip(), f"{' '.join(cmd)} warned:\n{proc.stderr}"


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """``built(preset, config)`` -> (request, files, folder with files and objects); cached."""
    cache = {}

    def build(preset: str, config: str):
        if (preset, config) not in cache:
            req, files = rendered(preset, config)
            d = tmp_path_factory.mktemp(f"{preset}-{config}")
            for name, text in files.items():
                (d / name).write_text(text)
            # every .S by one gcc: each to its <name>.o here, as `gcc -c -o <name>.o <name>.S`
            run(["gcc", "-c", *(name for name in files if name.endswith(".S"))], d)
            run(["gcc", "-std=c99", "-Wall", "-Wextra", "-Werror", "-pedantic", "-c",
                 "-o", "aesgen_registry.o", "aesgen_registry.c"], d)
            cache[(preset, config)] = (req, files, d)
        return cache[(preset, config)]

    return build


def nm(objs: list[Path], *flags: str) -> dict[str, list[tuple[str, str]]]:
    """Object file name -> its (type, name) rows: one nm for objects of one folder (a
    process an object cost seconds a set), each line prefixed with its file (-A)."""
    names = [obj.name for obj in objs]
    rows: dict[str, list[tuple[str, str]]] = {name: [] for name in names}
    if not names:
        return rows
    out = subprocess.run(["nm", "-A", *flags, *names], cwd=objs[0].parent,
                         capture_output=True, text=True, check=True)
    for line in out.stdout.splitlines():
        name, _, row = line.partition(":")
        parts = row.split()
        rows[name].append((parts[-2], parts[-1]))    # (type, name); undefined rows lack a value
    return rows


@pytest.mark.parametrize("preset, config", CASES)
def test_every_file_assembles_and_compiles(preset, config, built):
    req, files, d = built(preset, config)
    faces, keys, _, modes = CONFIGS[config]
    p = PRESETS[preset]
    from aesgen.modes import GCM, GCM_SIV, MODES, hash_engine_for

    def aead(desc, levels, stem):
        """The files of an AEAD mode: a method it takes, with a hash engine of its width on
        the preset, at each FACE level given it has (a mode without FACE: its one), where
        the set's key sizes include one the mode takes."""
        if desc.name not in modes or not set(keys) & set(desc.key_bits):
            return []
        return [f"{m.variant}_{stem(f)}.S" for m in p.methods for f in levels
                if m.method in desc.methods and f in desc.faces
                and hash_engine_for(desc, m.width, p.features_of(m), m.method) is not None]
    otr = [MODES[name] for name in ("otr", "otr-v2", "otr-s", "otr-v2-s")]
    want = ([f"{m.variant}_face_{f}.S" for m in p.methods for f in faces]
            + aead(GCM, faces, lambda f: f"gcm_{f}")
            + aead(GCM_SIV, GCM_SIV.faces, lambda f: "gcm_siv")
            + [name for desc in otr for name in aead(
                desc, desc.faces, lambda f, desc=desc: desc.name.replace("-", "_"))])
    assert sorted(n for n in files if n.endswith(".S")) == sorted(want)
    for name in files:
        if name.endswith(".S"):
            assert (d / (name[:-2] + ".o")).stat().st_size > 0
    assert (d / "aesgen_registry.o").exists()


@pytest.mark.parametrize("preset, config", CASES)
def test_header_compiles_as_cxx(preset, config, built):
    req, files, d = built(preset, config)
    prefix = req.prefix
    manifest = json.loads(files["manifest.json"])
    uses = "\n".join(f"    (void)&{k['symbols']['xor_stream']};" for k in manifest["kernels"])
    (d / "use.cpp").write_text(f"""#include "aesgen.h"
#include "aesgen.h"
int main() {{
    const {prefix}kernel *k = &{prefix}kernels[0];
    (void)k;
    (void){prefix}kernel_count;
    (void){prefix}key_bits_supported;
{uses}
    return {prefix}cpu_feature_name({req.prefix.upper()}CPU_AESNI) == nullptr;
}}
""")
    run(["g++", "-std=c++17", "-Wall", "-Wextra", "-Werror", "-c", "-o", "use.o", "use.cpp"], d)
    # and the registry itself, compiled as C++
    run(["g++", "-std=c++17", "-Wall", "-Werror", "-x", "c++", "-c", "-o", "registry_cxx.o",
         "aesgen_registry.c"], d)


@pytest.mark.parametrize("preset, config", CASES)
def test_exported_symbols_start_with_prefix(preset, config, built):
    req, files, d = built(preset, config)
    manifest = json.loads(files["manifest.json"])
    want = {s for k in manifest["kernels"] + manifest["aeads"] for s in k["symbols"].values()}
    got = set()
    objs = [obj for obj in sorted(d.glob("*.o")) if obj.name not in ("use.o", "registry_cxx.o")]
    kernels = [obj for obj in objs if obj.stem != "aesgen_registry"]
    defined, undefined = nm(objs, "-g", "--defined-only"), nm(kernels, "-u")
    for obj in objs:
        for kind, name in defined[obj.name]:
            assert name.startswith(req.prefix), f"{obj.name} exports {name} ({kind})"
            got.add(name)
        if obj in kernels:
            assert undefined[obj.name] == [], f"{obj.name} needs symbols from elsewhere"
    p = req.prefix
    assert got == want | {f"{p}kernels", f"{p}kernel_count", f"{p}key_bits_supported",
                          f"{p}cpu_features", f"{p}cpu_feature_name", f"{p}best_kernel",
                          f"{p}aeads", f"{p}aead_count", f"{p}best_aead"}


def _functions(text: str) -> dict[str, list[str]]:
    """Global symbol -> the lines of the .S from the end of the previous function up to and
    including its .size directive."""
    out, chunk = {}, []
    for line in text.splitlines():
        chunk.append(line)
        m = re.match(r"\t\.size\t(\w+), \.-(\w+)$", line)
        if m:
            out[m.group(1)] = chunk
            chunk = []
    return out


@pytest.mark.parametrize("preset, config", CASES)
def test_kernel_text_structure(preset, config):
    req, files = rendered(preset, config)
    manifest = json.loads(files["manifest.json"])
    p = PRESETS[preset]
    for k in manifest["kernels"]:
        # what a CPU of the preset has when it runs this kernel's variant (its optional
        # features, e.g. no-aesni's AVX-512 for gfni512, only where the variant needs them)
        preset_features = set(p.features_of(p.method(k["variant"])))
        text = files[k["file"]]
        assert '\t.section\t.note.GNU-stack,"",@progbits' in text, k["file"]
        globls = re.findall(r"^\t\.globl\t(\S+)$", text, re.M)
        assert sorted(globls) == sorted(k["symbols"].values())
        functions = _functions(text)
        assert sorted(functions) == sorted(globls)
        for sym, lines in functions.items():
            assert f"\t.type\t{sym}, @function" in lines
            start = lines.index(f"{sym}:")
            body = [ln.strip() for ln in lines[start + 1:]
                    if ln.startswith("\t") and not ln.startswith(("\t.", "\t#"))]
            assert body[0] == "endbr64", f"{sym} starts with {body[0]!r}"
            requires = [ln for ln in lines[:start] if ln.startswith("# Requires: ")]
            assert len(requires) == 1, f"{sym}: {len(requires)} '# Requires:' lines"
            named = requires[0][len("# Requires: "):]
            feats = set() if named == "baseline x86-64" else set(named.split(", "))
            assert feats <= preset_features, f"{sym} requires {feats - preset_features}"
            assert feats <= set(k["features"])


CALLEE_SAVED = ("%rbx", "%rbp", "%r12", "%r13", "%r14", "%r15")


@pytest.mark.parametrize("preset", PRESETS)
def test_frames_save_callee_saved_and_scrub_vectors(preset):
    """Every callee-saved register a function writes is pushed after endbr64 and popped in
    reverse before each ret; init and xor_stream zero the vector registers they used."""
    req, files = rendered(preset, "kall")
    for k in json.loads(files["manifest.json"])["kernels"]:
        functions = _functions(files[k["file"]])
        for entry, sym in k["symbols"].items():
            lines = functions[sym]
            start = lines.index(f"{sym}:")
            body = [ln.split("#", 1)[0].strip() for ln in lines[start + 1:]
                    if ln.startswith("\t") and not ln.startswith(("\t.", "\t#"))]
            text = "\n".join(body)
            used = [r for r in CALLEE_SAVED if re.search(rf"{re.escape(r)}\b", text)]
            pushed = [ln.split()[1] for ln in body if ln.startswith("pushq")]
            assert sorted(pushed) == sorted(used), sym
            assert body[1:1 + len(pushed)] == [f"pushq\t{r}" for r in pushed], sym
            vectors = sorted(set(re.findall(r"%xmm\d+", text)))
            rets = [i for i, ln in enumerate(body) if ln == "ret"]
            assert rets, sym
            for i in rets:
                n = len(pushed)
                assert body[i - n:i] == [f"popq\t{r}" for r in reversed(pushed)], sym
                if entry in ("init", "xor_stream"):
                    before = body[:i - n]
                    if before[-1] == "vzeroall":
                        continue
                    if not vectors:      # a scalar kernel (table) holds no vector state
                        continue
                    zeroed = {ln.split()[1].split(",")[0] for ln in before[-len(vectors):]
                              if re.fullmatch(r"pxor\t(%xmm\d+), \1", ln)}
                    assert zeroed == set(vectors), f"{sym} returns with vectors not cleared"


@pytest.mark.parametrize("preset, config", CASES)
def test_first_line_names_the_command(preset, config):
    req, files = rendered(preset, config)
    for name, text in files.items():
        first = text.splitlines()[0]
        if name == "manifest.json":
            data = json.loads(text)
            assert next(iter(data)) == "_comment"
            first = data["_comment"]
            assert data["command"] == req.command
        assert req.command in first, f"{name}: {first}"
        assert "DO NOT EDIT" in first, f"{name}: {first}"
    manifest = json.loads(files["manifest.json"])
    assert manifest["files"] == sorted(files)
    entries = manifest["kernels"] + manifest["aeads"]
    assert {k["file"] for k in entries} == {kernel_file_name_for(k) for k in entries}


def kernel_file_name_for(k: dict) -> str:
    from aesgen.kernels.spec import KernelSpec

    from aesgen.modes import mode

    m = mode(k.get("mode", "ctr"))
    return kernel_file_name(KernelSpec(k["method"], k["face"], m.key_bits, width=k["width"],
                                       encoding=k["encoding"], mode=m.name))
