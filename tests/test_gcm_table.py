"""The table method's GCM: GHASH by seed 004's 8 KiB of lookup tables (gf128/table.py,
gf128/x86_64/table.py) and the T-table rounds on xmm blocks (kernels/table_engine.py).
The model's tables against the field's multiply and GHASH's definition, then the committed
kernels: every x86 preset with the table method has its GCM AEADs, hashed by tables, marked
NOT constant time in the manifest, the header and every entry point, never what
best_aead() returns, and without an AES instruction or a carry-less multiply. The kernels
run against the GCM model and OpenSSL with every other AEAD (test_gcm_kernels.py, the
harness)."""
from __future__ import annotations

import json
import random

import pytest

from aesgen.gf128 import table
from aesgen.kernels.spec import KernelSpec
from aesgen.model import gf128
from aesgen.modes import GCM, hash_engine_for, hash_engines_of
from aesgen.paths import GENERATED

SEED = 4004


def test_tables_multiply_by_h() -> None:
    """2000 products: 100 keys, 20 random elements each, and the single bits."""
    rng = random.Random(SEED)
    for _ in range(100):
        h = rng.randbytes(16)
        t = table.tables(h)
        hv = gf128.from_block(h)
        for _ in range(20):
            x = rng.getrandbits(128)
            assert table.multiply(x, t) == gf128.gf_mul(x, hv)
        for k in range(0, 128, 9):
            assert table.multiply(1 << k, t) == gf128.gf_mul(1 << k, hv), k


def test_table_entries_are_the_nibbles_times_h() -> None:
    rng = random.Random(SEED + 1)
    h = rng.randbytes(16)
    t = table.tables(h)
    for q in range(table.POSITIONS):
        assert t[q][0] == 0
        for n in range(table.ENTRIES):
            assert t[q][n] == gf128.gf_mul(n << (4 * q), gf128.from_block(h)), (q, n)
    assert table.entry_offset(31, 15) + 16 == table.TABLE_BYTES == 8192


def test_table_ghash_is_ghash() -> None:
    rng = random.Random(SEED + 2)
    for _ in range(300):
        h = rng.randbytes(16)
        data = rng.randbytes(16 * rng.choice((0, 1, 2, rng.randint(0, 20))))
        assert gf128.to_block(table.ghash(h, data)) == gf128.ghash(h, data)


def test_the_table_hash_is_the_table_methods_alone() -> None:
    """The table method takes the lookup-table GHASH and nothing else; no other method
    takes it, even on a CPU without a carry-less multiply."""
    assert hash_engines_of(GCM, "table") == ("table",)
    for method in ("aesni", "vaes512", "gfni", "bitsliced"):
        assert "table" not in hash_engines_of(GCM, method)
    sse = ("SSE2", "SSSE3", "SSE41")
    assert hash_engine_for(GCM, 128, sse + ("PCLMULQDQ",), "table") == "table"
    assert hash_engine_for(GCM, 128, sse, "bitsliced") is None
    assert hash_engine_for(GCM, 128, ("SSE2",), "table") is None
    assert KernelSpec("table", "none", mode="gcm").hash == "table"
    with pytest.raises(ValueError, match="not 'clmul'"):
        KernelSpec("table", "none", mode="gcm", hash_engine="clmul")
    with pytest.raises(ValueError, match="not 'table'"):
        KernelSpec("aesni", "none", mode="gcm", hash_engine="table")


def test_presets_with_the_table_method_have_table_gcm_marked_not_constant_time() -> None:
    from test_methods import AES_INSTRUCTION
    from aesgen.targets import find_preset

    checked = 0
    for manifest in sorted(GENERATED.glob("*/manifest.json")):
        m = json.loads(manifest.read_text())
        preset = find_preset(manifest.parent.name)
        if preset.method("table") is None:
            continue
        aeads = {a["name"]: a for a in m.get("aeads", [])}
        registry = (manifest.parent / "aesgen_registry.c").read_text()
        for face in ("none", "r1", "r2"):
            name = f"table-gcm-{face}"
            assert name in aeads, f"{manifest.parent.name} lacks {name}"
            a = aeads[name]
            assert a["hash"] == "table" and a["constant_time"] is False, name
            assert a["warning"].startswith("NOT CONSTANT TIME"), name
            text = (manifest.parent / a["file"]).read_text()
            assert "Constant time: NO." in text.split("*/")[0], name
            # every entry point's comment says so
            assert text.count("NOT CONSTANT TIME") >= len(a["symbols"]), name
            low = text.lower()
            assert "pclmulqdq" not in low, f"{name} runs a carry-less multiply"
            assert not AES_INSTRUCTION.search(low), f"{name} runs an AES instruction"
            assert f'{{"{name}", "gcm", "table", "{face}", 0,' in registry, name
            checked += 1
    assert checked >= 3 * 8, checked
