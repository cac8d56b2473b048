"""GCM: the hash engine's algebra against the bit-by-bit model, the context layout builder,
and every committed GCM kernel run in-process (ctypes) against the Python GCM model
(model/gcm.py, from SP 800-38D's definitions) and the `cryptography` wheel's OpenSSL:
the specification's test cases, random key sizes, nonce lengths, AAD and message lengths,
streaming splits with empty and one-byte pieces, tag lengths, tampering and the limits.
"""
from __future__ import annotations

import ctypes
import json
import random

import pytest

from aesgen.gf128.x86_64 import clmul
from aesgen.kernels.fields import Field, FieldLayout
from aesgen.model import gcm as model
from aesgen.model import gf128
from aesgen.paths import GENERATED
from test_kernels_run import _host_manifests, missing_features
from test_model_gcm import GCM_SPEC_CASES

SEED = 2611


# --- the hash engine's arithmetic ----------------------------------------------------------
def test_clmul_dot_with_hash_key_is_the_ghash_multiply() -> None:
    rng = random.Random(SEED)
    for _ in range(300):
        h, x = rng.randbytes(16), rng.randbytes(16)
        want = gf128.to_block(gf128.gf_mul(gf128.from_block(x), gf128.from_block(h)))
        got = clmul.dot(int.from_bytes(x, "big"), clmul.hash_key(h)).to_bytes(16, "big")
        assert got == want


def test_clmul_powers_stay_in_hash_key_form() -> None:
    rng = random.Random(SEED + 1)
    for _ in range(20):
        h = rng.randbytes(16)
        powers = gf128.h_powers(h, 8)
        ht = clmul.hash_key(h)
        p = ht
        for i in range(1, 8):
            p = clmul.dot(p, ht)
            assert p == clmul.hash_key(powers[i]), f"H~^{i + 1}"


def test_clmul_aggregated_reduction_equals_horner() -> None:
    """Summing n unreduced products and reducing once (what one loop does) is GHASH."""
    rng = random.Random(SEED + 2)
    h = rng.randbytes(16)
    blocks = [rng.randbytes(16) for _ in range(8)]
    ht = clmul.hash_key(h)
    pw = [ht]
    for _ in range(7):
        pw.append(clmul.dot(pw[-1], ht))
    acc = 0
    for j, blk in enumerate(blocks):
        # dot is linear in its first argument, so the sum of dots is the dot of the sum
        acc ^= clmul.dot(int.from_bytes(blk, "big"), pw[7 - j])
    assert acc.to_bytes(16, "big") == gf128.ghash(h, b"".join(blocks))


# --- declared-field layouts -------------------------------------------------------------------
def test_field_layout_aligns_and_rounds_to_64() -> None:
    lay = FieldLayout.build([Field("cipher", "A", 4, 4), Field("hash", "B", 16, 16),
                             Field("mode", "C", 8, 8)])
    assert (lay.A, lay.B, lay.C, lay.size) == (0, 16, 32, 64)
    with pytest.raises(ValueError, match="declared twice"):
        FieldLayout.build([Field("mode", "A", 4), Field("mode", "A", 4)])
    with pytest.raises(KeyError):
        lay.offset("MISSING")


# --- the kernels --------------------------------------------------------------------------------
VP, SZ = ctypes.c_void_p, ctypes.c_size_t
INIT = ctypes.CFUNCTYPE(ctypes.c_int, VP, VP, SZ)
SEAL = ctypes.CFUNCTYPE(ctypes.c_int, VP, VP, SZ, VP, SZ, VP, SZ, VP, VP, SZ)
START = ctypes.CFUNCTYPE(ctypes.c_int, VP, VP, SZ)
PIECE = ctypes.CFUNCTYPE(ctypes.c_int, VP, VP, SZ)
CRYPT = ctypes.CFUNCTYPE(ctypes.c_int, VP, VP, SZ, VP)
FINISH = ctypes.CFUNCTYPE(ctypes.c_int, VP, VP, SZ)
WIPE = ctypes.CFUNCTYPE(None, VP)


class Aead(ctypes.Structure):
    _fields_ = [("name", ctypes.c_char_p), ("mode", ctypes.c_char_p),
                ("method", ctypes.c_char_p), ("face", ctypes.c_char_p),
                ("constant_time", ctypes.c_int), ("features", ctypes.c_uint64),
                ("ctx_size", SZ), ("nonce_min", SZ), ("nonce_max", SZ), ("tag_min", SZ),
                ("tag_max", SZ), ("init", INIT), ("seal", SEAL), ("open", SEAL),
                ("start", START), ("aad", PIECE), ("encrypt", CRYPT), ("decrypt", CRYPT),
                ("finish_seal", FINISH), ("finish_open", FINISH), ("wipe", WIPE)]


def _committed_aeads(mode: str = "gcm"):
    params = []
    for manifest in _host_manifests():
        for k in json.loads(manifest.read_text()).get("aeads", []):
            if k["mode"] == mode:
                params.append(pytest.param((manifest.parent, k),
                                           id=f"{manifest.parent.name}:{k['name']}"))
    return params


@pytest.fixture
def aead(request, shared_library):
    set_dir, info = request.param
    missing = missing_features(info["features"])
    if missing:
        pytest.skip(f"this CPU lacks {', '.join(missing)} (needed by {set_dir.name}/"
                    f"{info['name']})")
    lib = ctypes.CDLL(str(shared_library(set_dir)))
    count = SZ.in_dll(lib, "aesgen_aead_count").value
    table = (Aead * count).in_dll(lib, "aesgen_aeads")
    found = {a.name.decode(): a for a in table}
    assert info["name"] in found, f"registry of {set_dir.name} lacks {info['name']}"
    a = found[info["name"]]
    a._lib = lib
    return a


def with_aeads(fn):
    return pytest.mark.parametrize("aead", _committed_aeads(), indirect=True)(fn)


class Ctx:
    """A 64-byte aligned context with guard bytes on both sides."""

    def __init__(self, size: int) -> None:
        self.size = size
        self.raw = ctypes.create_string_buffer(random.Random(size).randbytes(size * 2 + 192),
                                               size * 2 + 192)
        self.addr = (ctypes.addressof(self.raw) + 64 + 63) & ~63
        self.pristine = self.raw.raw
        self.off = self.addr - ctypes.addressof(self.raw)

    def guards_intact(self) -> bool:
        now = self.raw.raw
        end = self.off + self.size
        return now[:self.off] == self.pristine[:self.off] and now[end:] == self.pristine[end:]


def _buf(data: bytes):
    return ctypes.create_string_buffer(bytes(data), max(len(data), 1))


def seal(a, ctx, nonce, aad, pt, tag_len=16):
    out, tag = _buf(bytes(len(pt))), _buf(bytes(16))
    r = a.seal(ctx.addr, _buf(nonce), len(nonce), _buf(aad), len(aad), _buf(pt), len(pt),
               out, tag, tag_len)
    return r, out.raw[:len(pt)], tag.raw[:tag_len]


def open_(a, ctx, nonce, aad, ct, tag):
    out = _buf(b"\xa5" * len(ct))
    r = a.open(ctx.addr, _buf(nonce), len(nonce), _buf(aad), len(aad), _buf(ct), len(ct),
               out, _buf(tag), len(tag))
    return r, out.raw[:len(ct)]


@with_aeads
@pytest.mark.parametrize("key, iv, aad, pt, h, ct, tag", GCM_SPEC_CASES)
def test_gcm_specification_cases(aead, key, iv, aad, pt, h, ct, tag) -> None:
    ctx = Ctx(aead.ctx_size)
    assert aead.init(ctx.addr, _buf(key), len(key)) == 0
    r, got_ct, got_tag = seal(aead, ctx, iv, aad, pt, len(tag))
    assert (r, got_ct, got_tag) == (0, ct, tag)
    assert open_(aead, ctx, iv, aad, ct, tag) == (0, pt)
    assert ctx.guards_intact()


def _split(rng: random.Random, n: int) -> list[int]:
    """Piece lengths summing to n, with empty and one-byte pieces among them."""
    pieces = []
    while n > 0:
        p = rng.choice([0, 1, 1, 15, 16, 17, rng.randint(0, n)])
        p = min(p, n)
        pieces.append(p)
        n -= p
    return pieces + [0]


@with_aeads
def test_gcm_random_against_the_model(aead) -> None:
    """Random key sizes, nonce lengths 1..40, AAD 0..70, messages 0..300 bytes, every tag
    length, seal and open in one call and in random pieces, against model/gcm.py."""
    rng = random.Random(SEED + 10)
    ctx = Ctx(aead.ctx_size)
    for case in range(40):
        key = rng.randbytes(rng.choice((16, 24, 32)))
        nonce = rng.randbytes(rng.choice((12, 12, rng.randint(1, 40))))
        aad = rng.randbytes(rng.choice((0, 13, rng.randint(0, 70))))
        pt = rng.randbytes(rng.choice((0, 64, rng.randint(0, 300))))
        tag_len = rng.randint(4, 16)
        want_ct, want_tag = model.seal(key, nonce, aad, pt, tag_len)
        assert aead.init(ctx.addr, _buf(key), len(key)) == 0
        assert seal(aead, ctx, nonce, aad, pt, tag_len) == (0, want_ct, want_tag), case
        assert open_(aead, ctx, nonce, aad, want_ct, want_tag) == (0, pt), case
        # streaming
        assert aead.start(ctx.addr, _buf(nonce), len(nonce)) == 0
        pos = 0
        for n in _split(rng, len(aad)):
            assert aead.aad(ctx.addr, _buf(aad[pos:pos + n]), n) == 0
            pos += n
        ct, pos = b"", 0
        for n in _split(rng, len(pt)):
            out = _buf(bytes(n))
            assert aead.encrypt(ctx.addr, _buf(pt[pos:pos + n]), n, out) == 0
            ct += out.raw[:n]
            pos += n
        tag = _buf(bytes(16))
        assert aead.finish_seal(ctx.addr, tag, tag_len) == 0
        assert (ct, tag.raw[:tag_len]) == (want_ct, want_tag), case
        assert aead.aad(ctx.addr, _buf(b"x"), 1) == -1        # AAD after data
        assert ctx.guards_intact()


@with_aeads
def test_gcm_short_records_every_length(aead) -> None:
    """The one-shot path of short records (modes/gcm/short_record.py: 12-byte nonce, AAD
    of at most 16 bytes, at most SHORT_BYTES of message) at every message length up to
    past its limit and every AAD length up to past 16: seal, open, open in place, and a
    flipped bit in the ciphertext's last byte or the tag rejected with out zeroed."""
    from aesgen.modes.gcm.short_record import SHORT_BYTES
    rng = random.Random(SEED + 13)
    ctx = Ctx(aead.ctx_size)
    keys = {n: rng.randbytes(n) for n in (16, 24, 32)}
    for n, key in keys.items():
        assert aead.init(ctx.addr, _buf(key), n) == 0
        for length in range(SHORT_BYTES + 18):
            aad = rng.randbytes(length % 18 if n == 16 else rng.randint(0, 17))
            nonce, pt = rng.randbytes(12), rng.randbytes(length)
            tag_len = rng.randint(4, 16)
            want_ct, want_tag = model.seal(key, nonce, aad, pt, tag_len)
            case = f"key {n}, len {length}, aad {len(aad)}, tag {tag_len}"
            assert seal(aead, ctx, nonce, aad, pt, tag_len) == (0, want_ct, want_tag), case
            assert open_(aead, ctx, nonce, aad, want_ct, want_tag) == (0, pt), case
            same = _buf(want_ct)
            r = aead.open(ctx.addr, _buf(nonce), 12, _buf(aad), len(aad), same, length, same,
                          _buf(want_tag), tag_len)
            assert (r, same.raw[:length]) == (0, pt), f"in place: {case}"
            bad_tag = bytes([want_tag[0] ^ 0x10]) + want_tag[1:]
            assert open_(aead, ctx, nonce, aad, want_ct, bad_tag) == (-1, bytes(length)), case
            if length:
                bad_ct = want_ct[:-1] + bytes([want_ct[-1] ^ 0x80])
                assert open_(aead, ctx, nonce, aad, bad_ct, want_tag) == (-1, bytes(length)), \
                    case
    assert ctx.guards_intact()


@with_aeads
def test_gcm_long_messages_against_openssl(aead) -> None:
    """Messages up to 20 KiB with 12- and 16-byte nonces against the cryptography wheel."""
    aesgcm = pytest.importorskip("cryptography.hazmat.primitives.ciphers.aead")
    rng = random.Random(SEED + 11)
    ctx = Ctx(aead.ctx_size)
    for case in range(30):
        key = rng.randbytes(rng.choice((16, 24, 32)))
        nonce = rng.randbytes(rng.choice((12, 16)))
        aad = rng.randbytes(rng.randint(0, 300))
        pt = rng.randbytes(rng.choice((1420, 4096, 16384, rng.randint(0, 20000))))
        want = aesgcm.AESGCM(key).encrypt(nonce, pt, aad)
        assert aead.init(ctx.addr, _buf(key), len(key)) == 0
        r, ct, tag = seal(aead, ctx, nonce, aad, pt)
        assert (r, ct + tag) == (0, want), case
        assert open_(aead, ctx, nonce, aad, ct, tag) == (0, pt), case


@with_aeads
def test_gcm_rejects_forgeries_and_bad_lengths(aead) -> None:
    rng = random.Random(SEED + 12)
    ctx = Ctx(aead.ctx_size)
    key, nonce, aad, pt = rng.randbytes(16), rng.randbytes(12), b"hdr", rng.randbytes(100)
    assert aead.init(ctx.addr, _buf(key), len(key)) == 0
    _, ct, tag = seal(aead, ctx, nonce, aad, pt)
    for what, args in {
        "ciphertext": (nonce, aad, bytes([ct[0] ^ 1]) + ct[1:], tag),
        "aad": (nonce, b"hdR", ct, tag),
        "tag": (nonce, aad, ct, tag[:15] + bytes([tag[15] ^ 0x80])),
        "nonce": (bytes([nonce[0] ^ 1]) + nonce[1:], aad, ct, tag),
        "short tag": (nonce, aad, ct, tag[:3]),
    }.items():
        r, out = open_(aead, ctx, *args)
        assert (r, out) == (-1, bytes(len(ct))), f"{what}: open must fail and zero out"
    for bad in (0, 3, 17):
        r, out, _ = seal(aead, ctx, nonce, aad, pt, bad)
        assert r == -1 and out == bytes(len(pt)), f"tag_len {bad}"
    r, _, _ = seal(aead, ctx, b"", aad, pt)
    assert r == -1, "empty nonce"
    assert aead.init(ctx.addr, _buf(bytes(20)), 20) == -1
    assert ctx.guards_intact()
    aead.wipe(ctx.addr)
    assert ctx.raw.raw[ctx.off:ctx.off + ctx.size] == bytes(ctx.size)


# --- stitching, preset choices, the CLI ---------------------------------------------------------
def test_gcm_without_aes_instructions_wherever_the_preset_has_clmul() -> None:
    """Every committed x86 preset with PCLMULQDQ lists a GCM AEAD for each of its gfni and
    bit-sliced methods (zmm: with VPCLMULQDQ) at every FACE level, marked constant
    time, whose file runs that engine's rounds (GF2P8AFFINEINVQB; the bit-sliced round
    loop) and no AES instruction."""
    from test_methods import AES_INSTRUCTION
    from aesgen.targets import find_preset

    sbox = {"gfni": "gf2p8affineinvqb", "bitsliced": "_bs_round"}
    checked = {"gfni": 0, "bitsliced": 0}
    for manifest in sorted(GENERATED.glob("*/manifest.json")):
        m = json.loads(manifest.read_text())
        preset = find_preset(manifest.parent.name)
        if preset.arch != "x86_64":
            continue
        aeads = {a["name"]: a for a in m.get("aeads", [])}
        for choice in preset.methods:
            # ymm: VPCLMULQDQ, or PCLMULQDQ on xmm beside the ymm cipher ("clmul-xmm")
            wide = {512: {"VPCLMULQDQ", "BMI2"}}.get(choice.width, set())
            if choice.method not in sbox or not {"PCLMULQDQ"} | wide <= set(preset.features):
                continue
            for face in ("none", "r1", "r2"):
                name = f"{choice.variant}-gcm-{face}"
                assert name in aeads, f"{manifest.parent.name} lacks {name}"
                assert aeads[name]["constant_time"] is True, name
                text = (manifest.parent / aeads[name]["file"]).read_text()
                assert sbox[choice.method] in text and "pclmulqdq" in text, name
                assert not AES_INSTRUCTION.search(text), f"{name} runs an AES instruction"
                checked[choice.method] += 1
    assert checked["gfni"] >= 9 and checked["bitsliced"] >= 9, checked


def _two_streams():
    """A builder and two captured straight-line streams: 10 PXOR, then 5 POR."""
    from aesgen.dsl.builder import KernelBuilder
    from aesgen.isa.table import load_table

    b = KernelBuilder(load_table("x86_64"), "t")
    x = [b.xmm() for _ in range(3)]
    with b.capture() as first:
        for _ in range(10):
            b.emit("pxor", x[0], x[1])
    with b.capture() as second:
        for _ in range(5):
            b.emit("por", x[2], x[2])
    return b, first, second


def test_emit_stitched_keeps_each_stream_in_order_and_spreads_the_second() -> None:
    b, first, second = _two_streams()
    assert b.function.body == []
    b.emit_stitched(first, second)
    names = [ins.name for ins in b.function.body]
    assert names.count("pxor") == 10 and names.count("por") == 5
    gaps = [i for i, n in enumerate(names) if n == "por"]
    assert gaps == [2, 5, 8, 11, 14], "the second stream is spread evenly, not bunched"
    with pytest.raises(ValueError, match="straight-line"):
        with b.capture():
            b.bind(b.label("x"))


@pytest.mark.parametrize("window, at", [((0, 100), [2, 5, 8, 11, 14]),
                                        ((20, 70), [3, 5, 7, 9, 11]),
                                        ((0, 50), [1, 3, 5, 7, 9])])
def test_emit_stitched_spreads_the_second_stream_through_a_window(window, at) -> None:
    """A preset's [gcm] stitch (KernelSpec.stitch): the hash goes through that part of the
    rounds only, so its result is ready before the rounds end (aesgen tune picks it)."""
    b, first, second = _two_streams()
    b.emit_stitched(first, second, window)
    names = [ins.name for ins in b.function.body]
    assert [i for i, n in enumerate(names) if n == "por"] == at
    assert names.count("pxor") == 10


def test_the_stitch_window_reaches_the_kernel() -> None:
    """cortex-a72's recorded window changes its armv8-ce GCM loop and nothing else: the
    same kernel with the window of all the rounds differs, the CTR kernels do not take it,
    and a window that cannot be is refused by name."""
    import dataclasses

    from aesgen.emit.compile import compile_kernel
    from aesgen.emit.generate import GenerateRequest, plan_kernels
    from aesgen.kernels.spec import KernelSpec
    from aesgen.targets import find_preset

    preset = find_preset("cortex-a72")
    assert preset.gcm_stitch != "0-100"
    req = GenerateRequest(preset, ("armv8-ce",), ("r2",), (128,), "aesgen_", "t")
    specs = {s.mode: s for s in plan_kernels(req)}
    assert specs["gcm"].stitch == preset.gcm_stitch and specs["ctr"].stitch == ""
    whole = dataclasses.replace(specs["gcm"], stitch="0-100")
    assert compile_kernel(whole).texts["encrypt_data"] != \
        compile_kernel(specs["gcm"]).texts["encrypt_data"]
    with pytest.raises(ValueError, match="stitch must be"):
        KernelSpec("armv8-ce", "r2", (128,), 8, "neon", mode="gcm", stitch="50-50")


def test_preset_gcm_multiply_is_validated(tmp_path) -> None:
    from aesgen.paths import TARGETS
    from aesgen.targets import TargetError, load_preset

    text = (TARGETS / "znver3.toml").read_text().replace('multiply = "karatsuba"',
                                                         'multiply = "fast"')
    for name in ("x86_64_features.toml", "kernel_priority.toml"):
        (tmp_path / name).write_text((TARGETS / name).read_text())
    (tmp_path / "znver3.toml").write_text(text)
    with pytest.raises(TargetError, match="schoolbook or karatsuba"):
        load_preset(tmp_path / "znver3.toml")


def test_preset_gcm_zmm_batch_sets_the_zmm_kernels_batch(tmp_path) -> None:
    """[gcm] zmm_batch is validated, and is the batch (registers, powers) of the zmm GCM
    kernels built for the preset."""
    from aesgen.emit.compile import compile_kernel
    from aesgen.emit.generate import GenerateRequest, plan_kernels
    from aesgen.paths import TARGETS
    from aesgen.targets import TargetError, load_preset

    for name in ("x86_64_features.toml", "kernel_priority.toml"):
        (tmp_path / name).write_text((TARGETS / name).read_text())
    import re

    base = (TARGETS / "znver4.toml").read_text()
    assert re.search(r"^zmm_batch = \d+$", base, re.M)

    def with_batch(n: int) -> str:
        return re.sub(r"^zmm_batch = \d+$", f"zmm_batch = {n}", base, flags=re.M)

    (tmp_path / "znver4.toml").write_text(with_batch(17))
    with pytest.raises(TargetError, match="zmm_batch must be 1..16"):
        load_preset(tmp_path / "znver4.toml")
    (tmp_path / "znver4.toml").write_text(with_batch(2))
    preset = load_preset(tmp_path / "znver4.toml")
    req = GenerateRequest(preset, ("vaes512",), ("none",), (128,), "aesgen_", "test", ("gcm",))
    (spec,) = plan_kernels(req)
    ck = compile_kernel(spec)
    assert ck.interleave == 2
    powers = next(f for f in ck.context_fields if f[1] == "H_POWERS")
    # the loop's 8 powers, as many again and one more for the end of a one-shot message
    # (its last batch, tail and length block in one reduction), and the 4 zero slots
    assert powers[3] == 16 * (2 * 2 * 4 + 1 + 4)


def test_preset_gcm_record_chunk_builds_the_record_path(tmp_path) -> None:
    """[gcm] record_chunk is validated (0..16 registers) and reaches the zmm GCM kernels:
    with a chunk smaller than the batch their encrypt data path has the chunk loop and the
    manifest entry says record_chunk; with 0, or a chunk of the batch (12) or more (the
    masked tail before the chunks takes up to a chunk), neither. Other modes' kernels do
    not take it."""
    import re

    from aesgen.emit.compile import compile_kernel
    from aesgen.emit.generate import GenerateRequest, plan_kernels
    from aesgen.paths import TARGETS
    from aesgen.targets import TargetError, load_preset

    for name in ("x86_64_features.toml", "kernel_priority.toml"):
        (tmp_path / name).write_text((TARGETS / name).read_text())
    base = (TARGETS / "znver5.toml").read_text()
    assert re.search(r"^record_chunk = \d+$", base, re.M)

    def preset_with(text: str):
        (tmp_path / "znver5.toml").write_text(
            re.sub(r"^record_chunk = \d+$", text, base, flags=re.M))
        return load_preset(tmp_path / "znver5.toml")

    for bad in ("record_chunk = 17", "record_chunk = -1", 'record_chunk = "8"',
                "record_chunk = true"):
        with pytest.raises(TargetError, match="record_chunk must be 0..16"):
            preset_with(bad)
    for chunk, built in ((0, 0), (6, 6), (11, 11), (12, 0), (16, 0)):
        preset = preset_with(f"record_chunk = {chunk}")
        req = GenerateRequest(preset, ("vaes512",), ("none",), (128,), "aesgen_", "test",
                              ("gcm", "otr"))
        specs = plan_kernels(req)
        assert [s.record_chunk for s in specs if s.mode != "gcm"] == [0] * (len(specs) - 1)
        ck = compile_kernel(next(s for s in specs if s.mode == "gcm"))
        assert ck.record_chunk == built, chunk
        text = ck.texts["encrypt_data"]
        assert ("chunk_top128" in text) == bool(built), chunk


def test_generate_mode_gcm_only_and_bad_mode(aesgen_exe, tmp_path) -> None:
    import subprocess

    out = tmp_path / "gcm"
    r = subprocess.run([str(aesgen_exe), "generate", "--cpu", "znver3", "--mode", "gcm",
                        "--face", "none", "-o", str(out)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["kernels"] == []
    assert [a["name"] for a in manifest["aeads"]] == ["aesni-gcm-none", "vaes256-gcm-none",
                                                      "table-gcm-none",
                                                      "bitsliced256-gcm-none"]
    r = subprocess.run([str(aesgen_exe), "generate", "--cpu", "x86-64-v2", "--mode", "gcm",
                        "--keys", "128", "-o", str(tmp_path / "faces")],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    names = [a["name"] for a in json.loads((tmp_path / "faces" / "manifest.json").read_text())["aeads"]]
    assert names == [f"{m}-gcm-{f}" for m in ("aesni", "table", "bitsliced128")
                     for f in ("none", "r1", "r2")]
    assert all(a["mode"] == "gcm" for a in manifest["aeads"])
    r = subprocess.run(["gcc", "-c", "-Wall", "-Werror", "-o", str(tmp_path / "r.o"),
                        str(out / "aesgen_registry.c")], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    r = subprocess.run([str(aesgen_exe), "generate", "--cpu", "znver3", "--mode", "xts",
                        "-o", str(tmp_path / "bad")], capture_output=True, text=True)
    assert r.returncode == 2 and "bad mode 'xts'" in r.stderr
    assert not (tmp_path / "bad").exists()
    # AArch64 without the Crypto Extension: GCM on both NEON methods, hashed by PMULL.8b
    r = subprocess.run([str(aesgen_exe), "generate", "--cpu", "no-crypto", "--mode", "gcm",
                        "--face", "none", "--keys", "128", "-o", str(tmp_path / "neon")],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    aeads = json.loads((tmp_path / "neon" / "manifest.json").read_text())["aeads"]
    assert [(a["name"], a["hash"]) for a in aeads] == [("neon-tbl-gcm-none", "pmull8"),
                                                      ("neon-bitsliced-gcm-none", "pmull8")]


# --- FACE on the GCM counter ----------------------------------------------------------------
def _face_aeads():
    return [p for p in _committed_aeads() if p.values[0][1]["face"] != "none"]


def _fields(info) -> dict[str, int]:
    return {f["name"]: f["offset"] for f in info["context_fields"]}


def _tls_nonce(static_iv: bytes, seq: int) -> bytes:
    """RFC 8446 section 5.3: the static IV XOR the 64-bit sequence number, right-aligned."""
    return bytes(a ^ b for a, b in zip(static_iv, bytes(4) + seq.to_bytes(8, "big")))


@pytest.mark.parametrize("aead", _face_aeads(), indirect=True)
def test_gcm_face_table_serves_the_next_record(aead, request) -> None:
    """Records under TLS-style nonces keep counter bytes 0, 5 and 10: the entries the first
    records filled are the context's run of filled entries (kernels/face_fill.py, as in the
    CTR kernels: the first record under a nonce prefix fills one batch, the second the
    rest of its 128 blocks), stay so for the next record,
    and are read by it (an entry corrupted in the context changes that record's output);
    a nonce that changes byte 10 empties the table, so the corruption is gone."""
    aesgcm = pytest.importorskip("cryptography.hazmat.primitives.ciphers.aead")
    info = request.node.callspec.params["aead"][1]
    off = _fields(info)
    ctx = Ctx(aead.ctx_size)
    rng = random.Random(SEED + 20)
    key, static_iv, aad = rng.randbytes(16), rng.randbytes(12), rng.randbytes(13)
    assert aead.init(ctx.addr, _buf(key), 16) == 0

    # 2 KiB records: a one-shot seal of at most 1536 bytes may take the zmm kernels' record
    # path, which runs without FACE (test_gcm_record_path_leaves_face_alone)
    def record(seq: int, n: int = 2048) -> tuple[bytes, bytes]:
        nonce = _tls_nonce(static_iv, seq)
        pt = rng.randbytes(n)
        r, ct, tag = seal(aead, ctx, nonce, aad, pt)
        assert r == 0
        return ct + tag, aesgcm.AESGCM(key).encrypt(nonce, pt, aad)

    def run() -> tuple[int, int]:
        """The run of filled entries (kernels/face_fill.py): FILL_START, FILL_COUNT."""
        raw = ctx.raw.raw
        return tuple(int.from_bytes(raw[ctx.off + off[f]:ctx.off + off[f] + 8], "little")
                     for f in ("FILL_START", "FILL_COUNT"))

    first = info["interleave"] * info["width"] // 128   # one batch: its registers of blocks
    got, want = record(1)
    assert got == want
    # a 12-byte nonce starts the data at in15 = 2; a nonce prefix seen for the first time
    # fills one batch (admission on second sight, kernels/face_fill.py)
    assert run() == (2, first), run()
    got, want = record(2)
    # the whole batches of its 128 blocks (the masked tail after them runs every round)
    batches = 128 // first * first
    assert got == want and run() == (2, batches), "the second record keeps the entries, fills on"
    # corrupt the entry of in15 = 40 (block 38 of the next record): the record reads it
    entry = ctx.off + off["FACE_TABLE"] + 16 * 40
    raw = bytearray(ctx.raw.raw[entry:entry + 16])
    raw[0] ^= 0x01
    ctypes.memmove(ctx.addr - ctx.off + entry, bytes(raw), 16)
    got, want = record(3)
    bad = [i for i in range(0, 2048, 16) if got[i:i + 16] != want[i:i + 16]]
    assert bad == [16 * 38], f"blocks that differ: {bad}"
    assert run() == (2, batches), "the third record only reads the table"
    got, want = record(256)          # byte 10 of the nonce changes: the table is refilled
    assert got == want and run() == (2, first), run()
    assert ctx.guards_intact()


class FaceRecords:
    """A context keyed for the FACE tests: records sealed into it (each checked against the
    cryptography package's AES-GCM) and its FACE fields read back."""

    def __init__(self, aead, info, seed: int) -> None:
        self.aesgcm = pytest.importorskip("cryptography.hazmat.primitives.ciphers.aead")
        self.aead, self.off = aead, _fields(info)
        self.ctx = Ctx(aead.ctx_size)
        self.rng = random.Random(seed)
        self.key, self.static_iv = self.rng.randbytes(16), self.rng.randbytes(12)
        self.aad = self.rng.randbytes(13)
        assert aead.init(self.ctx.addr, _buf(self.key), 16) == 0

    def tls(self, seq: int) -> bytes:
        return _tls_nonce(self.static_iv, seq)

    def record(self, nonce: bytes, n: int) -> None:
        pt = self.rng.randbytes(n)
        r, ct, tag = seal(self.aead, self.ctx, nonce, self.aad, pt)
        want = self.aesgcm.AESGCM(self.key).encrypt(nonce, pt, self.aad)
        assert r == 0 and ct + tag == want, (len(nonce), n)

    def u64(self, name: str) -> int:
        at = self.ctx.off + self.off[name]
        return int.from_bytes(self.ctx.raw.raw[at:at + 8], "little")

    def face_state(self, budget: bool = True) -> bytes:
        """The table, its tag and its run of filled entries; with ``budget`` the fill
        budget too."""
        at = self.ctx.off + self.off["FACE_TABLE"]
        fields = ("FACE_TAG_LO", "FACE_TAG_HI", "FILL_START", "FILL_COUNT", "FILL_BUDGET")
        return self.ctx.raw.raw[at:at + 256 * 16] + b"".join(
            self.u64(f).to_bytes(8, "little") for f in fields[:5 if budget else 4])


@pytest.mark.parametrize("aead", _face_aeads(), indirect=True)
def test_gcm_face_never_meets_a_counter_from_ghash(aead, request) -> None:
    """A nonce of other than 12 bytes gives J0 = GHASH_H(nonce, its length), linear in H:
    a table index or a branch on that counter would leak bits of H, a message at a time.
    Such a message sets COUNTER_SECRET and runs every batch in full: the FACE table and its
    run of filled entries (filled by 12-byte-nonce records before) are left exactly as they
    were, byte for byte, however long the message; the next 12-byte nonce clears the flag
    and finds its table again."""
    f = FaceRecords(aead, request.node.callspec.params["aead"][1], SEED + 22)
    f.record(f.tls(1), 2048)
    f.record(f.tls(2), 2048)
    assert f.u64("COUNTER_SECRET") == 0 and f.u64("FILL_COUNT") > 0
    before = f.face_state()
    for n_len in (16, 13, 8, 60):
        f.record(f.rng.randbytes(n_len), f.rng.choice((1024, 4096, 4100)))
        assert f.u64("COUNTER_SECRET") == 1, n_len
        assert f.face_state() == before, f"a {n_len}-byte nonce's message touched FACE's state"
    f.record(f.tls(3), 2048)
    assert f.u64("COUNTER_SECRET") == 0
    assert f.ctx.guards_intact()


def _record_path_aeads():
    """The GCM kernels with a one-shot record path (the manifest's record_chunk: zmm)."""
    return [p for p in _committed_aeads() if p.values[0][1].get("record_chunk")]


def _record_limit(info) -> int:
    """The longest record the record path takes: every block and the length block within
    the 8 x zmm_batch + 1 powers of H a zmm kernel keeps."""
    return 16 * 8 * info["interleave"]


def test_the_zmm_presets_take_the_record_path() -> None:
    """znver5's vaes512 GCM kernels have it (its [gcm] record_chunk), so the tests below
    are not empty on the presets that set it."""
    names = {(p.values[0][0].name, p.values[0][1]["name"]) for p in _record_path_aeads()}
    assert {("znver5", f"vaes512-gcm-{f}") for f in ("none", "r1", "r2")} <= names


@pytest.mark.parametrize("aead", _record_path_aeads(), indirect=True)
def test_gcm_record_path_every_chunk_shape(aead, request) -> None:
    """One-shot seals of more than a chunk (record_chunk registers of 4 blocks) up to the
    powers of H kept run as a pipeline of chunks with one reduction: lengths at and around
    every chunk boundary, each count of registers in the tail after the first chunk and
    after a pass of the loop, the limit and one
    past it (the batch loop), with 16-, 24- and 32-byte keys; AAD of 0..40 bytes and
    nonces of 12 and other lengths (entering through the short-record start or the general
    one); sealed in place too. Against the cryptography package's AES-GCM; each record
    opened back, and a flipped ciphertext bit rejected with out zeroed."""
    aesgcm = pytest.importorskip("cryptography.hazmat.primitives.ciphers.aead")
    info = request.node.callspec.params["aead"][1]
    chunk, limit = 64 * info["record_chunk"], _record_limit(info)
    lengths = sorted({n for k in range(1, limit // chunk + 2) for n in
                      (k * chunk - 1, k * chunk, k * chunk + 1, k * chunk + 15, k * chunk + 17)}
                     | {chunk + 64 * j + 5 for j in range(info["record_chunk"] + 1)}
                     | {2 * chunk + 64 * j + 5 for j in range(info["record_chunk"])}
                     | {limit - 16, limit - 1, limit, limit + 1, 1420})
    rng = random.Random(SEED + 30)
    ctx = Ctx(aead.ctx_size)
    for n, length in enumerate(lengths):
        key = rng.randbytes((16, 24, 32)[n % 3])
        assert aead.init(ctx.addr, _buf(key), len(key)) == 0
        nonce = rng.randbytes(12 if n % 4 else rng.choice((8, 16, 60)))
        aad, pt = rng.randbytes(rng.choice((0, 5, 13, 16, 17, 40))), rng.randbytes(length)
        want = aesgcm.AESGCM(key).encrypt(nonce, pt, aad)
        what = f"AES-{8 * len(key)}, {length} bytes, {len(nonce)}-byte nonce, AAD {len(aad)}"
        r, ct, tag = seal(aead, ctx, nonce, aad, pt)
        assert r == 0 and ct + tag == want, what
        if n % 2:                                       # in place
            buf, tag_buf = _buf(pt), _buf(bytes(16))
            assert aead.seal(ctx.addr, _buf(nonce), len(nonce), _buf(aad), len(aad), buf,
                             length, buf, tag_buf, 16) == 0
            assert buf.raw[:length] + tag_buf.raw[:16] == want, f"{what}, in place"
        assert open_(aead, ctx, nonce, aad, ct, tag) == (0, pt), what
        bad = bytearray(ct)
        bad[rng.randrange(length)] ^= 0x04
        assert open_(aead, ctx, nonce, aad, bytes(bad), tag) == (-1, bytes(length)), what
    assert ctx.guards_intact()


@pytest.mark.parametrize("aead", [p for p in _record_path_aeads()
                                  if p.values[0][1]["face"] != "none"], indirect=True)
def test_gcm_records_up_to_a_chunk_leave_face_alone(aead, request) -> None:
    """A one-shot record of at most a chunk (the masked tail alone, every round computed)
    skips FACE's step: from 65 bytes (the shortest that starts as a record does) to a
    chunk, under the prefix the table was filled for and under others, it leaves the
    table, its tag and its run of filled entries as they were, byte for byte, and sets
    COUNTER_SECRET (no batch of its message may read the table)."""
    info = request.node.callspec.params["aead"][1]
    f = FaceRecords(aead, info, SEED + 31)
    limit = _record_limit(info)
    f.record(f.tls(1), limit + 512)
    f.record(f.tls(2), limit + 512)
    before = f.face_state()
    assert f.u64("FILL_COUNT") > 0, "the two long records filled nothing"
    chunk = 64 * info["record_chunk"]
    for seq, n in enumerate((65, f.rng.randrange(66, chunk), chunk), start=3):
        prefix_changes = seq % 2 == 0                  # byte 10 of the nonce differs
        f.record(f.tls(seq + (256 if prefix_changes else 0)), n)
        assert f.face_state() == before, f"a record of {n} bytes touched FACE's state"
        assert f.u64("COUNTER_SECRET") == 1, n
    assert f.ctx.guards_intact()


@pytest.mark.parametrize("aead", [p for p in _record_path_aeads()
                                  if p.values[0][1]["face"] != "none"], indirect=True)
def test_gcm_records_on_the_record_path_take_face_on_second_sight(aead, request) -> None:
    """A one-shot record past a chunk up to the record path's limit takes FACE's step
    (COUNTER_SECRET clear). Under a prefix the table does not hold it empties the table
    and fills nothing: the prefix is seen once, and fresh nonces never come back to read
    what a record would store. The next record under that prefix fills the entries of its
    registers and runs from them; later records the run covers store nothing, and a longer
    one grows the run. A record one byte past the limit (the batch loop) finds the entries
    too."""
    info = request.node.callspec.params["aead"][1]
    f = FaceRecords(aead, info, SEED + 32)
    limit, chunk = _record_limit(info), 64 * info["record_chunk"]
    f.record(f.tls(1), limit + 512)                     # a table under the prefix
    f.record(f.tls(2), limit + 512)
    assert f.u64("FILL_COUNT") > 0
    short = f.rng.randrange(chunk + 1, limit - 200)
    regs = -(-short // 64)
    f.record(f.tls(3 + 256), short)                     # another prefix: emptied, none filled
    assert f.u64("COUNTER_SECRET") == 0
    assert (f.u64("FILL_START"), f.u64("FILL_COUNT")) == (0, 0)
    seen = f.face_state()
    f.record(f.rng.randbytes(12), short)                # fresh nonces: never a fill
    f.record(f.rng.randbytes(12), limit)
    assert f.u64("FILL_COUNT") == 0
    f.record(f.tls(3 + 256), short)                     # that prefix's first record again
    assert f.face_state() == seen, "a first record under a prefix stored entries"
    f.record(f.tls(4 + 256), short)                     # seen twice: its registers filled
    assert (f.u64("FILL_START"), f.u64("FILL_COUNT")) == (2, 4 * regs)
    filled = f.face_state()
    f.record(f.tls(5 + 256), short - 1)                 # covered: nothing stored
    assert f.face_state(budget=False) == filled[:-8]
    f.record(f.tls(6 + 256), limit)                     # longer: overlaps, so the run grows
    assert (f.u64("FILL_START"), f.u64("FILL_COUNT")) == (2, 4 * (limit // 64))
    grown = f.face_state(budget=False)
    f.record(f.tls(7 + 256), limit + 1)                 # the batch loop finds them
    assert f.u64("COUNTER_SECRET") == 0
    assert f.face_state(budget=False)[:16 * (2 + 4 * (limit // 64))] == \
        grown[:16 * (2 + 4 * (limit // 64))]
    assert f.ctx.guards_intact()


@pytest.mark.parametrize("aead", _face_aeads(), indirect=True)
def test_gcm_face_zero_prefix_is_a_new_tag(aead, request) -> None:
    """A freshly keyed context holds no table: a nonce whose bytes 0, 5 and 10 are zero
    (as in a zeroed context's tag fields) is a prefix seen for the first time, so its first
    record fills one batch and its second record the rest, as for any other prefix."""
    info = request.node.callspec.params["aead"][1]
    off = _fields(info)
    ctx = Ctx(aead.ctx_size)
    assert aead.init(ctx.addr, _buf(bytes(range(16))), 16) == 0

    def run() -> tuple[int, int]:
        raw = ctx.raw.raw
        return tuple(int.from_bytes(raw[ctx.off + off[f]:ctx.off + off[f] + 8], "little")
                     for f in ("FILL_START", "FILL_COUNT"))

    first = info["interleave"] * info["width"] // 128
    for seq, want in ((1, (2, first)), (2, (2, 128 // first * first))):
        nonce = bytes(11) + bytes([seq])
        r, _, _ = seal(aead, ctx, nonce, b"", bytes(2048))
        assert r == 0 and run() == want, (seq, run())
    assert ctx.guards_intact()


def test_stats_reports_gcm_kernels_by_phase(aesgen_exe) -> None:
    import subprocess

    for preset in ("znver3", "x86-64-v2"):
        r = subprocess.run([str(aesgen_exe), "stats", str(GENERATED / preset)],
                           capture_output=True, text=True)
        assert r.returncode == 0, r.stderr
        table = r.stdout[r.stdout.index("AES-GCM (NIST SP 800-38D) kernels"):].splitlines()
        assert "GHASH mul" in table[1] and "reduction" in table[1] and "FACE" in table[1]
        rows = {tuple(line.split()[:2]) for line in table[3:] if line.strip()}
        assert ("aesni-gcm-r2", "128") in rows and ("aesni-gcm-none", "256") in rows


def test_compare_counts_the_gcm_loops_own_batch() -> None:
    """The xmm/ymm GCM skeleton runs 8 blocks a batch whatever the method's interleave: the
    per-block figures of `aesgen compare` divide by the loop's own batch."""
    from aesgen.emit.compile import compile_kernel
    from aesgen.kernels.spec import KernelSpec
    from aesgen.report.compare import compare_kernels

    ck = compile_kernel(KernelSpec("aesni", "r2", (128,), 4, "avx", mode="gcm"))
    assert ck.interleave != ck.spec.interleave
    rows = compare_kernels([ck], (128,), ())
    assert [r["blocks_per_iteration"] for r in rows] == [ck.interleave * ck.spec.lanes]


def test_steady_state_counts_one_batch_of_each_gcm_kernel() -> None:
    """The reports count one batch of the steady loop: every GCM kernel of a preset hashes
    the same instructions a block whatever its FACE level (FACE changes the AES side only),
    so FACE none, whose zmm loop has a second batch body for the rare batch whose byte 15
    carries, must not count that one too (it is a region of its own)."""
    checked = 0
    for manifest in sorted(GENERATED.glob("*/manifest.json")):
        m = json.loads(manifest.read_text())
        by_variant: dict[str, dict[str, float]] = {}
        for a in m.get("aeads", []):
            if a["mode"] != "gcm":
                continue
            per = a["instruction_counts"]["steady_state"]["128"]["per_block"]
            by_variant.setdefault(a["variant"], {})[a["face"]] = (per["ghash_multiply"]
                                                                  + per["reduction"])
        for variant, faces in by_variant.items():
            assert len(set(faces.values())) == 1, (manifest.parent.name, variant, faces)
            checked += 1
    assert checked >= 20, checked
