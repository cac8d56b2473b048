"""Every committed AES-OTR kernel (v3.1 "otr", v2 "otr-v2"; AD in parallel, and serial:
"otr-s", "otr-v2-s") run in-process
(ctypes) against specs/aes-otr.md: the Appendix A vectors of its version and AD mode, the
Python model (aesgen.model.otr, written from the spec) for every length class of the last
pair, every nonce and tag length, AAD empty and not; the contract's refusals and tampering,
with the context's guard bytes checked. The doubling engines are checked on their own."""
from __future__ import annotations

import ctypes
import json
import random
from pathlib import Path

import pytest

from aesgen.dsl.builder import KernelBuilder
from aesgen.gf128.x86_64.doubling import (BATCH_LOOKUP_INSTRUCTIONS, BATCH_TABLE_SPAN,
                                          INSTRUCTIONS, Doubling)
from aesgen.isa.table import load_table
from aesgen.kernels.vector_ops import VectorOps
from aesgen.model import otr as model
from test_gcm_kernels import Ctx, _buf, _committed_aeads, aead, open_, seal  # noqa: F401

VECTORS = json.loads((Path(__file__).parent / "data" / "otr_vectors.json").read_text())
OTR_MODES = ("otr", "otr-v2", "otr-s", "otr-v2-s")


def with_otr(fn):
    params = [p for m in OTR_MODES for p in _committed_aeads(m)]
    return pytest.mark.parametrize("aead", params, indirect=True)(fn)


def _mode(aead) -> str:
    return aead.mode.decode()


def test_committed_sets_have_otr() -> None:
    """Each committed x86 set with AES-NI lists an aesni kernel of each variant (and the
    VAES ones where it has VAES)."""
    for m in OTR_MODES:
        assert len(_committed_aeads(m)) >= 6, m


@with_otr
def test_descriptor(aead) -> None:
    # the table method's kernel (T-table AES, seed 001's table doublings) alone is not
    assert _mode(aead) in OTR_MODES and aead.face == b"none"
    assert aead.constant_time == (aead.method != b"table")
    assert (aead.nonce_min, aead.nonce_max, aead.tag_min, aead.tag_max) == (1, 15, 1, 16)
    for entry in ("start", "aad", "encrypt", "decrypt", "finish_seal", "finish_open"):
        assert not ctypes.cast(getattr(aead, entry), ctypes.c_void_p).value, entry


@with_otr
def test_specification_vectors(aead) -> None:
    """Appendix A's vectors of the kernel's version and AD mode (v3.1 p: A.1, A.2, A.5,
    A.7; v3.1 s: A.3, A.4, A.6, A.8; v2 p: A.9; v2 s: A.10), seal and open."""
    version, ad = model.MODES[_mode(aead)]
    ctx = Ctx(aead.ctx_size)
    ran = 0
    for v in VECTORS["vectors"]:
        if (v["version"], v["ad"]) != (version, ad):
            continue
        key, nonce = bytes.fromhex(v["key"]), bytes.fromhex(v["nonce"])
        aad = bytes(range(v["aad_len"]))
        msg = bytes(0x40 + i for i in range(v["msg_len"]))
        want = (bytes.fromhex(v["ciphertext"]), bytes.fromhex(v["tag"]))
        assert aead.init(ctx.addr, _buf(key), len(key)) == 0
        assert seal(aead, ctx, nonce, aad, msg, v["tag_len"]) == (0, *want), v["section"]
        assert open_(aead, ctx, nonce, aad, *want) == (0, msg), v["section"]
        ran += 1
    assert ran >= 1
    assert ctx.guards_intact()


# the last pair's length classes (section 8.1): empty, partial, one block, a block and a
# partial one, two blocks; after 0, 1 and many pairs, and around every batch of the ladders
# (xmm 8 pairs, ymm 8, zmm 32: each half of them once)
LENGTHS = sorted(set(range(0, 100)) | {32 * p + r for p in (3, 4, 7, 8, 15, 16, 31, 32, 33,
                                                             47, 63, 64, 65)
                                       for r in (0, 1, 15, 16, 17, 31)} | {1420, 4096 + 13})


@with_otr
def test_every_length_class_against_the_model(aead) -> None:
    mode = _mode(aead)
    rng = random.Random(7253)
    ctx = Ctx(aead.ctx_size)
    for n in LENGTHS:
        key = rng.randbytes(rng.choice((16, 32)))
        nonce = rng.randbytes(12)
        aad = rng.randbytes(rng.choice((0, 13, rng.randint(0, 70))))
        pt = rng.randbytes(n)
        want = model.seal_mode(mode, key, nonce, aad, pt)
        assert aead.init(ctx.addr, _buf(key), len(key)) == 0
        assert seal(aead, ctx, nonce, aad, pt) == (0, *want), (n, len(aad))
        assert open_(aead, ctx, nonce, aad, *want) == (0, pt), (n, len(aad))
    assert ctx.guards_intact()


@with_otr
def test_every_nonce_tag_and_aad_length(aead) -> None:
    """Nonces of 1..15 bytes (Format, the general path and the 12-byte one), tags of
    1..16 bytes, AAD of 0..70 bytes (the AD's last block partial or full, after 0..3
    batches of the AD's ladder) and long AAD."""
    mode = _mode(aead)
    rng = random.Random(1)
    ctx = Ctx(aead.ctx_size)
    cases = ([(nl, 16, 13) for nl in range(1, 16)] + [(12, tl, 0) for tl in range(1, 17)]
             + [(12, 16, al) for al in list(range(0, 71)) + [127, 128, 129, 511, 512, 1000]])
    for nl, tl, al in cases:
        key = rng.randbytes(rng.choice((16, 32)))
        nonce, aad, pt = rng.randbytes(nl), rng.randbytes(al), rng.randbytes(rng.randint(0, 80))
        want = model.seal_mode(mode, key, nonce, aad, pt, tl)
        assert aead.init(ctx.addr, _buf(key), len(key)) == 0
        assert seal(aead, ctx, nonce, aad, pt, tl) == (0, *want), (nl, tl, al)
        assert open_(aead, ctx, nonce, aad, *want) == (0, pt), (nl, tl, al)
    assert ctx.guards_intact()


@with_otr
def test_refusals_and_tampering(aead) -> None:
    """A 24-byte key, nonces of 0 or 16 bytes and tags of 0 or 17 bytes are refused (seal
    writes nothing, open zeroes out); a flipped bit of the ciphertext, tag, AAD or nonce
    makes open return -1 with out zeroed."""
    mode = _mode(aead)
    ctx = Ctx(aead.ctx_size)
    key = bytes(range(16))
    assert aead.init(ctx.addr, _buf(bytes(24)), 24) == -1
    assert aead.init(ctx.addr, _buf(key), 16) == 0
    nonce, aad, pt = bytes(12), b"header", bytes(range(50))
    ct, tag = model.seal_mode(mode, key, nonce, aad, pt)
    for nl, tl in ((0, 16), (16, 16), (12, 0), (12, 17)):
        out, t = _buf(b"\x5a" * 50), _buf(b"\x5a" * 17)
        r = aead.seal(ctx.addr, _buf(bytes(16)), nl, _buf(aad), len(aad), _buf(pt), 50, out,
                      t, tl)
        assert r == -1 and out.raw[:50] == b"\x5a" * 50 and t.raw[:17] == b"\x5a" * 17
        out = _buf(b"\x5a" * 50)
        r = aead.open(ctx.addr, _buf(bytes(16)), nl, _buf(aad), len(aad), _buf(ct), 50, out,
                      _buf(tag + bytes(1)), tl)
        assert r == -1 and out.raw[:50] == bytes(50), (nl, tl)
    for at in (0, 17, 49):
        bad = bytearray(ct)
        bad[at] ^= 4
        assert open_(aead, ctx, nonce, aad, bytes(bad), tag) == (-1, bytes(50))
    assert open_(aead, ctx, nonce, aad, ct, tag[:-1] + bytes([tag[-1] ^ 1])) == (-1, bytes(50))
    assert open_(aead, ctx, nonce, b"headeR", ct, tag) == (-1, bytes(50))
    assert open_(aead, ctx, bytes(11) + b"\x01", aad, ct, tag) == (-1, bytes(50))
    assert open_(aead, ctx, nonce, aad, ct, tag) == (0, pt)
    assert ctx.guards_intact()


@with_otr
def test_in_place_and_a_new_key_forgets_the_old(aead) -> None:
    mode = _mode(aead)
    ctx = Ctx(aead.ctx_size)
    rng = random.Random(3)
    for n in (0, 31, 32, 33, 1000):
        key, nonce, aad, pt = rng.randbytes(32), rng.randbytes(9), rng.randbytes(5), rng.randbytes(n)
        assert aead.init(ctx.addr, _buf(rng.randbytes(16)), 16) == 0
        assert aead.init(ctx.addr, _buf(key), 32) == 0
        buf, tag = _buf(pt), _buf(bytes(16))
        assert aead.seal(ctx.addr, _buf(nonce), 9, _buf(aad), 5, buf, n, buf, tag, 16) == 0
        want = model.seal_mode(mode, key, nonce, aad, pt)
        assert (buf.raw[:n], tag.raw[:16]) == want
        assert aead.open(ctx.addr, _buf(nonce), 9, _buf(aad), 5, buf, n, buf, tag, 16) == 0
        assert buf.raw[:n] == pt
    assert ctx.guards_intact()


# --- the doubling engines -------------------------------------------------------------------
@pytest.mark.parametrize("method, encoding, width", [
    ("krovetz", "sse", 128), ("krovetz", "avx", 128), ("krovetz", "evex", 128),
    ("clmul", "sse", 128), ("clmul", "avx", 128), ("clmul", "avx", 256),
    ("clmul", "evex", 512), ("aoki", "sse", 128), ("aoki", "avx", 128),
    ("batch-table", "sse", 128), ("batch-table", "avx", 128)])
def test_doubling_instruction_counts(method, encoding, width) -> None:
    """One step of each engine emits the instructions the reports quote (INSTRUCTIONS), and
    the clmul step's count does not grow with k; batch-table's 2^1 .. 2^4 X share one pair
    of lookups (BATCH_LOOKUP_INSTRUCTIONS)."""
    counts = []
    for k in (1, 4, 33) if method == "clmul" else (1,):
        b = KernelBuilder(load_table("x86_64"), "t")
        v = VectorOps(b, encoding)
        x = b.vec(width)
        before = len(b.function.body)
        if method == "batch-table":
            Doubling(b, v, method).times_powers(x, [1, 2, 3, 4])
        else:
            Doubling(b, v, method).times_power(x, k)
        counts.append(sum(1 for i in b.function.body[before:] if hasattr(i, "name")))
    want = INSTRUCTIONS[(method, encoding)]
    if method == "batch-table":
        want = BATCH_LOOKUP_INSTRUCTIONS + BATCH_TABLE_SPAN * want
    assert set(counts) == {want}, counts


def test_doubling_report_builds_each_method_per_width() -> None:
    """`aesgen doubling`'s rows: on xmm both constant-time engines (the kernels differ in
    the doubling alone), on ymm and zmm the clmul step, in the table method's kernel seed
    001's two table methods; instructions a doubling as INSTRUCTIONS says, the masks a
    measurable part of the steady loop."""
    from aesgen.report.doubling import static_rows
    from aesgen.targets import find_preset

    rows = {(r["kernel"], r["engine"]): r for r in static_rows(find_preset("znver4"), ())}
    assert set(rows) == {("aesni-otr", "krovetz"), ("aesni-otr", "clmul"),
                         ("vaes256-otr", "clmul"), ("vaes512-otr", "clmul"),
                         ("table-otr", "aoki"), ("table-otr", "batch-table")}
    assert rows[("aesni-otr", "krovetz")]["instructions_a_doubling"] == 5
    assert rows[("vaes512-otr", "clmul")]["instructions_a_doubling"] == 5 / 4
    assert rows[("table-otr", "aoki")]["instructions_a_doubling"] == 6           # SSE
    assert rows[("table-otr", "batch-table")]["instructions_a_doubling"] == 5 + 8 / 4
    for r in rows.values():
        assert 0 < r["masks_a_block"] < r["total_a_block"]


def test_doubling_command_refuses_bad_input(aesgen_exe, tmp_path) -> None:
    import subprocess

    for args, message in ((["--cpu", "apple-m1"], "x86-64 doubling engines"),
                          (["--sizes", "70000"], "up to 65536 bytes")):
        proc = subprocess.run([str(aesgen_exe), "doubling", *args], cwd=tmp_path,
                              capture_output=True, text=True)
        assert proc.returncode == 2 and message in proc.stderr, proc.stderr
        assert not list(tmp_path.iterdir())


@pytest.mark.parametrize("doubling", ["aoki", "batch-table"])
def test_table_doublings_in_the_table_kernel(doubling, tmp_path) -> None:
    """Seed 001's table doublings, each in the table method's OTR kernel (the only kernel
    that may take them): built here with that doubling, sealed and opened against the
    model for lengths that end inside, on and past every batch of masks, keys of 16 and
    32 bytes; the kernel says it is not constant time."""
    from aesgen.emit.generate import GenerateRequest, render_set, write_set
    from aesgen.targets import find_preset
    from conftest import build_shared_library
    from test_gcm_kernels import Aead, SZ

    req = GenerateRequest(find_preset("x86-64-v2"), ("table",), ("none",), (128, 256),
                          "aesgen_", "test", ("otr",), hash_engine=doubling)
    write_set(render_set(req), tmp_path / "set")
    text = (tmp_path / "set" / "table_otr.S").read_text()
    assert ("movmskpd" if doubling == "aoki" else "pextrb") in text
    lib = ctypes.CDLL(str(build_shared_library(tmp_path / "set", tmp_path / "lib.so")))
    (a,) = (Aead * SZ.in_dll(lib, "aesgen_aead_count").value).in_dll(lib, "aesgen_aeads")
    assert a.name == b"table-otr" and a.constant_time == 0
    rng = random.Random(doubling)
    ctx = Ctx(a.ctx_size)
    for n in (0, 15, 16, 32, 33, 127, 128, 129, 160, 256, 300, 1000):
        key = rng.randbytes(rng.choice((16, 32)))
        assert a.init(ctx.addr, _buf(key), len(key)) == 0
        nonce, aad, pt = rng.randbytes(12), rng.randbytes(n % 40), rng.randbytes(n)
        out, tag = ctypes.create_string_buffer(n + 1), ctypes.create_string_buffer(16)
        assert a.seal(ctx.addr, _buf(nonce), 12, _buf(aad), len(aad), _buf(pt), n, out, tag,
                      16) == 0
        assert (out.raw[:n], tag.raw) == model.seal(key, nonce, aad, pt), (doubling, n)
        back = ctypes.create_string_buffer(n + 1)
        assert a.open(ctx.addr, _buf(nonce), 12, _buf(aad), len(aad), out, n, back, tag,
                      16) == 0 and back.raw[:n] == pt
    assert ctx.guards_intact()


@pytest.mark.parametrize("round_keys", ["resident", "loaded"])
def test_zmm_loop_keeps_round_keys_resident_as_the_method_says(round_keys, tmp_path) -> None:
    """The vaes512 kernel's pipelined loop keeps its last RESIDENT_KEYS round keys in
    registers where the method's round_keys is resident (loaded: every key read where used,
    as memory operands); either way seal and open match the model for lengths that run the
    loop once, twice and with tails, AES-128 and AES-256 (whose resident keys are other
    rounds)."""
    from dataclasses import replace

    from aesgen.dsl.operands import Mem
    from aesgen.emit.compile import compile_kernel
    from aesgen.emit.generate import GenerateRequest, plan_kernels, render_set, write_set
    from aesgen.modes.otr.x86_64 import RESIDENT_KEYS
    from aesgen.report.compare import steady_loop
    from aesgen.targets import find_preset
    from conftest import build_shared_library
    from test_gcm_kernels import SZ, Aead, missing_features

    preset = find_preset("znver5")
    preset = replace(preset, methods=tuple(
        replace(m, round_keys=round_keys) if m.variant == "vaes512" else m
        for m in preset.methods))
    req = GenerateRequest(preset, ("vaes512",), ("none",), (128, 256), "aesgen_", "test",
                          ("otr",))
    (spec,) = plan_kernels(req)
    ck = compile_kernel(spec)
    for bits, rounds in ((128, 10), (256, 14)):
        aes = [ins for ins in steady_loop(ck, bits) if ins.name.startswith("vaesenc")]
        in_regs = sum(1 for ins in aes if not any(isinstance(op, Mem) for op in ins.operands))
        keys = RESIDENT_KEYS[512] if round_keys == "resident" else 0
        # 8 registers of blocks a round: the resident keys' rounds (the last ones) read no
        # memory
        assert len(aes) == 8 * rounds and in_regs == 8 * keys, (bits, len(aes), in_regs)
    missing = missing_features(ck.features)
    if missing:
        pytest.skip(f"this CPU lacks {', '.join(missing)}: the kernels were built, not run")
    write_set(render_set(req), tmp_path / "set")
    lib = ctypes.CDLL(str(build_shared_library(tmp_path / "set", tmp_path / "lib.so")))
    (a,) = (Aead * SZ.in_dll(lib, "aesgen_aead_count").value).in_dll(lib, "aesgen_aeads")
    assert a.name == b"vaes512-otr"
    rng = random.Random(round_keys)
    ctx = Ctx(a.ctx_size)
    for n in (512, 544, 1023, 1024, 1056, 1600, 2048, 3000):
        for key_len in (16, 32):
            key = rng.randbytes(key_len)
            assert a.init(ctx.addr, _buf(key), key_len) == 0
            nonce, aad, pt = rng.randbytes(12), rng.randbytes(13), rng.randbytes(n)
            out, tag = ctypes.create_string_buffer(n + 1), ctypes.create_string_buffer(16)
            assert a.seal(ctx.addr, _buf(nonce), 12, _buf(aad), 13, _buf(pt), n, out, tag,
                          16) == 0
            assert (out.raw[:n], tag.raw) == model.seal(key, nonce, aad, pt), (n, key_len)
            back = ctypes.create_string_buffer(n + 1)
            assert a.open(ctx.addr, _buf(nonce), 12, _buf(aad), 13, out, n, back, tag,
                          16) == 0 and back.raw[:n] == pt
    assert ctx.guards_intact()
