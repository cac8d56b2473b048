"""The preset's per-method choices that `aesgen tune` searches beside the interleave: round
keys resident in registers or loaded every round (EVEX methods), GFNI's doubling
(GF2P8MULB or GF2P8AFFINEQB), and the bit-sliced S-box's netlist (bp113 or tower). A
preset file refuses a value that cannot be (naming it); each value changes the generated
code the way it says; and the variant that is not the default still computes AES-CTR (run
here, against the model)."""
from __future__ import annotations

import ctypes
import dataclasses
import random
import shutil
from pathlib import Path

import pytest

from aesgen.emit.generate import GenerateRequest, plan_kernels, render_set
from aesgen.paths import TARGETS
from aesgen.targets import TargetError, find_preset, load_preset
from conftest import build_shared_library
from test_kernels_run import Ctx, expected, init, missing_features, registry, run_stream


def preset_file(folder: Path, extra: dict[str, str]) -> Path:
    """targets/znver4.toml copied into folder, each table of ``extra`` given its line (any
    line of the file setting the same key in that table dropped)."""
    for name in ("x86_64_features.toml", "kernel_priority.toml"):
        shutil.copyfile(TARGETS / name, folder / name)
    out, table = [], None
    for ln in (TARGETS / "znver4.toml").read_text().splitlines():
        if ln.startswith("["):
            table = ln.split("]")[0][1:].strip()
        elif table in extra and ln.split("=")[0].strip() == extra[table].split("=")[0].strip():
            continue
        out.append(ln)
        if ln.startswith("[") and table in extra:
            out.append(extra[table])
    path = folder / "znver4.toml"
    path.write_text("\n".join(out) + "\n")
    return path


@pytest.mark.parametrize("table, line, named", [
    ("methods.vaes512", 'round_keys = "kept"', "round_keys must be resident or loaded"),
    ("methods.aesni", 'round_keys = "resident"', "needs the evex encoding"),
    ("methods.gfni256", 'doubling = "square"', "doubling must be mulb or affine"),
    ("methods.vaes256", 'doubling = "mulb"', "doubling is a GFNI choice"),
    ("methods.bitsliced512", 'sbox = "lut"', "sbox must be one of bp113, tower"),
    ("methods.gfni512", 'sbox = "tower"', "sbox is a choice of the bit-sliced methods"),
    ("gcm", 'stitch = "70-20"', "stitch must be \"start-end\""),
    ("gcm", 'stitch = "0-101"', "0 <= start < end <= 100"),
])
def test_a_preset_refuses_a_choice_that_cannot_be(tmp_path, table, line, named):
    path = preset_file(tmp_path, {table: line})
    with pytest.raises(TargetError) as e:
        load_preset(path)
    assert named in str(e.value) and "znver4.toml" in str(e.value)


def variant(preset: str = "znver4", **fields) -> object:
    """``preset`` (znver4) with every EVEX ladder method's round keys, every GFNI doubling
    and every bit-sliced S-box netlist set."""
    p = find_preset(preset)
    methods = []
    for m in p.methods:
        change = {}
        if "round_keys" in fields and m.encoding == "evex" and m.method != "bitsliced":
            change["round_keys"] = fields["round_keys"]
        if "doubling" in fields and m.method == "gfni":
            change["doubling"] = fields["doubling"]
        if "sbox" in fields and m.method == "bitsliced":
            change["sbox"] = fields["sbox"]
        methods.append(dataclasses.replace(m, **change))
    return dataclasses.replace(p, methods=tuple(methods))


def loop_text(preset, method: str) -> str:
    files = render_set(GenerateRequest(preset, (method,), ("r2",), (128,), "aesgen_",
                                       "test", ("ctr",)))
    (text,) = [t for n, t in files.items() if n.endswith(".S")]
    return text


def test_each_value_changes_the_code_as_it_says():
    base, loaded, affine = variant(), variant(round_keys="loaded"), variant(doubling="affine")
    assert {s.round_keys for s in plan_kernels(GenerateRequest(
        base, ("vaes512",), ("r2",), (128,), "aesgen_", "test", ("ctr",)))} == {"resident"}
    # loaded keys are broadcast from the context every round of every batch
    assert (loop_text(loaded, "vaes512").count("vbroadcasti32x4")
            > 4 * loop_text(base, "vaes512").count("vbroadcasti32x4"))
    # the doubling: GF2P8MULB by 2, or GF2P8AFFINEQB by the doubling matrix
    mulb, aff = loop_text(base, "gfni512"), loop_text(affine, "gfni512")
    assert "vgf2p8mulb" in mulb and "vgf2p8affineqb" not in mulb
    assert "vgf2p8mulb" not in aff and "vgf2p8affineqb" in aff


@pytest.mark.parametrize("preset, method", [("znver4", "bitsliced512"),
                                            ("x86-64-v2", "bitsliced128")])
def test_the_sbox_netlist_is_the_one_lowered(preset, method):
    """The preset's netlist reaches the kernel spec, and the two netlists lower to
    different S-box programs and so to different kernels."""
    from aesgen.kernels.bitsliced import BitslicedEngine, sbox_lowering
    texts, ops = {}, {}
    for netlist in ("bp113", "tower"):
        p = variant(preset, sbox=netlist)
        (spec,) = [s for s in plan_kernels(GenerateRequest(p, (method,), ("r2",), (128,),
                                                             "aesgen_", "test", ("ctr",)))]
        assert spec.sbox == netlist
        lowering, _ = sbox_lowering(BitslicedEngine(spec).strategy, spec.uarch, netlist)
        ops[netlist] = len(lowering.code)
        texts[netlist] = loop_text(p, method)
    assert ops["bp113"] != ops["tower"] and texts["bp113"] != texts["tower"]


@pytest.mark.parametrize("fields", [{"round_keys": "loaded"}, {"doubling": "affine"},
                                    {"sbox": "bp113"}],
                         ids=["loaded-keys", "affine-doubling", "bp113-sbox"])
def test_the_other_values_still_compute_aes_ctr(tmp_path, fields):
    (name, value), = fields.items()
    methods = {"round_keys": ("vaes512", "gfni128", "gfni512"),
               "doubling": ("gfni128", "gfni256", "gfni512"),
               "sbox": ("bitsliced512",)}[name]
    assert value not in {getattr(m, name) for m in find_preset("znver4").methods
                         if m.variant in methods}, \
        f"znver4 records {name} = {value} now: test the other value"
    preset = variant(**fields)
    files = render_set(GenerateRequest(preset, methods, ("none", "r1", "r2"), (128, 192, 256),
                                       "aesgen_", "test", ("ctr",)))
    src = tmp_path / "set"
    src.mkdir()
    for name, text in files.items():
        (src / name).write_text(text)
    lib = ctypes.CDLL(str(build_shared_library(src, tmp_path / "lib.so")))
    rng = random.Random(7)
    ran = 0
    for name, k in registry(lib).items():
        spec = next(s for s in plan_kernels(GenerateRequest(
            preset, methods, ("none", "r1", "r2"), (128,), "aesgen_", "test", ("ctr",)))
            if s.name == name)
        feats = {"vaes512": ["AVX512F", "VAES"], "gfni128": ["GFNI", "AVX512F"],
                 "gfni256": ["GFNI", "AVX512F"], "gfni512": ["GFNI", "AVX512F"],
                 "bitsliced512": ["AVX512F", "AVX512BW"]}[spec.variant]
        if missing_features(feats):
            continue
        for key_len in (16, 24, 32):
            key, iv = rng.randbytes(key_len), rng.randbytes(12) + b"\xff\xff\xff\xf0"
            data = rng.randbytes(rng.randrange(600, 1500))
            ctx = Ctx(k.ctx_size)
            assert init(k, ctx, key, iv) == 0
            got = run_stream(k, ctx, data, sorted(rng.sample(range(len(data)), 2)))
            assert got == expected(key, iv, data), f"{name}, AES-{8 * key_len}"
            ctx.check_guards()
        ran += 1
    if not ran:
        pytest.skip("this CPU lacks GFNI or AVX-512 (the kernels of these choices)")
    assert ran == 3 * len(methods)
