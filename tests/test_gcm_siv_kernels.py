"""Every committed AES-GCM-SIV kernel run in-process (ctypes) against RFC 8452: all of
Appendix C (the counter-wrap vectors among them), the `cryptography` package's AESGCMSIV on
random keys, nonces, AAD and lengths, the contract's refusals (nonce and tag lengths, a
24-byte key, lengths past 2^36) and tampering, with the context's guard bytes checked."""
from __future__ import annotations

import ctypes
import json
import random
import re
from pathlib import Path

import pytest

from aesgen.model import gcm_siv as model
from test_gcm_kernels import Ctx, _buf, _committed_aeads, aead, open_, seal  # noqa: F401

VECTORS = json.loads((Path(__file__).parent / "data" / "rfc8452_vectors.json").read_text())


def with_siv(fn):
    return pytest.mark.parametrize("aead", _committed_aeads("gcm-siv"), indirect=True)(fn)


def test_committed_sets_have_gcm_siv() -> None:
    """Each committed x86 set with AES-NI and PCLMULQDQ lists aesni-gcm-siv."""
    assert len(_committed_aeads("gcm-siv")) >= 6


@with_siv
def test_descriptor(aead) -> None:
    assert aead.mode == b"gcm-siv" and aead.face == b"none" and aead.constant_time == 1
    assert (aead.nonce_min, aead.nonce_max, aead.tag_min, aead.tag_max) == (12, 12, 16, 16)
    for entry in ("start", "aad", "encrypt", "decrypt", "finish_seal", "finish_open"):
        assert not ctypes.cast(getattr(aead, entry), ctypes.c_void_p).value, entry


@with_siv
def test_rfc8452_appendix_c(aead) -> None:
    ctx = Ctx(aead.ctx_size)
    for v in VECTORS["vectors"]:
        h = bytes.fromhex
        key, nonce, aad, pt, res = (h(v["key"]), h(v["nonce"]), h(v["aad"]),
                                    h(v["plaintext"]), h(v["result"]))
        assert aead.init(ctx.addr, _buf(key), len(key)) == 0
        r, ct, tag = seal(aead, ctx, nonce, aad, pt)
        assert (r, ct + tag) == (0, res), v["section"]
        assert open_(aead, ctx, nonce, aad, res[:-16], res[-16:]) == (0, pt), v["section"]
    assert ctx.guards_intact()


@with_siv
def test_against_cryptography(aead) -> None:
    from cryptography.hazmat.primitives.ciphers.aead import AESGCMSIV

    rng = random.Random(8452)
    ctx = Ctx(aead.ctx_size)
    for case in range(60):
        key = rng.randbytes(rng.choice((16, 32)))
        nonce = rng.randbytes(12)
        aad = rng.randbytes(rng.choice((0, 13, 16, rng.randint(0, 300))))
        pt = rng.randbytes(rng.choice((0, 1, 16, 127, 128, 129, rng.randint(0, 2100))))
        want = AESGCMSIV(key).encrypt(nonce, pt, aad or None)
        assert aead.init(ctx.addr, _buf(key), len(key)) == 0
        r, ct, tag = seal(aead, ctx, nonce, aad, pt)
        assert (r, ct + tag) == (0, want), case
        assert open_(aead, ctx, nonce, aad, want[:-16], want[-16:]) == (0, pt), case
        for at in (0, len(want) - 1):                      # a flipped bit: refused, zeroed
            bad = bytearray(want)
            bad[at] ^= 0x10
            assert open_(aead, ctx, nonce, aad, bytes(bad[:-16]), bytes(bad[-16:])) == \
                (-1, bytes(len(pt))), case
        if aad:
            bad_aad = bytes([aad[0] ^ 1]) + aad[1:]
            assert open_(aead, ctx, nonce, bad_aad, want[:-16], want[-16:])[0] == -1
    assert ctx.guards_intact()


@with_siv
def test_every_block_count_through_the_ladders(aead) -> None:
    """Every count of whole blocks up to two zmm batches and more (64 + 8), with and
    without a partial block, in the plaintext and in the AAD: each takes its own path
    through the batch loop and the ladder's halves of POLYVAL and of CTR."""
    from cryptography.hazmat.primitives.ciphers.aead import AESGCMSIV

    rng = random.Random(4)
    ctx = Ctx(aead.ctx_size)
    key = rng.randbytes(16)
    assert aead.init(ctx.addr, _buf(key), 16) == 0
    for blocks in range(72):
        for extra in (0, 1 + blocks % 15):
            nonce = rng.randbytes(12)
            pt = rng.randbytes(16 * blocks + extra)
            aad = rng.randbytes(16 * ((blocks * 7) % 72) + (extra and 16 - extra))
            want = AESGCMSIV(key).encrypt(nonce, pt, aad or None)
            r, ct, tag = seal(aead, ctx, nonce, aad, pt)
            assert (r, ct + tag) == (0, want), (blocks, extra)
            assert open_(aead, ctx, nonce, aad, want[:-16], want[-16:]) == (0, pt)
    assert ctx.guards_intact()


@with_siv
def test_short_records_whichever_powers_they_need(aead) -> None:
    """A record short enough to need few powers of H has the others skipped (on zmm: AAD
    up to 64 bytes and plaintext up to 48); each length around those bounds."""
    from cryptography.hazmat.primitives.ciphers.aead import AESGCMSIV

    rng = random.Random(16)
    ctx = Ctx(aead.ctx_size)
    for key_len in (16, 32):
        key = rng.randbytes(key_len)
        assert aead.init(ctx.addr, _buf(key), key_len) == 0
        for aad_len in (0, 1, 16, 31, 32, 33, 47, 48, 63, 64, 65, 80):
            for pt_len in (0, 1, 15, 16, 17, 32, 47, 48, 49, 64, 65):
                nonce, aad, pt = rng.randbytes(12), rng.randbytes(aad_len), rng.randbytes(pt_len)
                want = AESGCMSIV(key).encrypt(nonce, pt, aad or None)
                r, ct, tag = seal(aead, ctx, nonce, aad, pt)
                assert (r, ct + tag) == (0, want), (key_len, aad_len, pt_len)
                assert open_(aead, ctx, nonce, aad, want[:-16], want[-16:]) == (0, pt)
    assert ctx.guards_intact()


@with_siv
def test_refusals(aead) -> None:
    ctx = Ctx(aead.ctx_size)
    assert aead.init(ctx.addr, _buf(bytes(24)), 24) == -1
    key = bytes(range(16))
    assert aead.init(ctx.addr, _buf(key), 16) == 0
    pt = b"plaintext of some length"
    for nonce_len, tag_len in ((11, 16), (13, 16), (0, 16), (12, 15), (12, 4), (12, 17)):
        out, tag = _buf(b"\x5a" * len(pt)), _buf(b"\x5a" * 17)
        r = aead.seal(ctx.addr, _buf(bytes(13)), nonce_len, None, 0, _buf(pt), len(pt), out,
                      tag, tag_len)
        assert r == -1 and out.raw[:len(pt)] == b"\x5a" * len(pt) and tag.raw[:17] == b"\x5a" * 17
        out = _buf(b"\x5a" * len(pt))
        r = aead.open(ctx.addr, _buf(bytes(13)), nonce_len, None, 0, _buf(pt), len(pt), out,
                      _buf(bytes(17)), tag_len)
        assert r == -1 and out.raw[:len(pt)] == bytes(len(pt))      # zeroed
    over = (1 << 36) + 1                                            # nothing is touched
    for aad_len, length in ((over, 0), (0, over)):
        assert aead.seal(ctx.addr, _buf(bytes(12)), 12, None, aad_len, None, length, None,
                         _buf(bytes(16)), 16) == -1
        assert aead.open(ctx.addr, _buf(bytes(12)), 12, None, aad_len, None, length, None,
                         _buf(bytes(16)), 16) == -1
    wiped = Ctx(aead.ctx_size)
    aead.wipe(wiped.addr)
    assert seal(aead, wiped, bytes(12), b"", b"x")[0] == -1            # no key: refused
    assert ctx.guards_intact() and wiped.guards_intact()


@with_siv
def test_in_place_and_rekey(aead) -> None:
    rng = random.Random(5)
    ctx = Ctx(aead.ctx_size)
    for key_len in (32, 16, 32):
        key, nonce = rng.randbytes(key_len), rng.randbytes(12)
        aad, pt = rng.randbytes(20), rng.randbytes(300)
        assert aead.init(ctx.addr, _buf(key), key_len) == 0       # over the old key
        buf, tag = _buf(pt), _buf(bytes(16))
        assert aead.seal(ctx.addr, _buf(nonce), 12, _buf(aad), len(aad), buf, len(pt), buf,
                         tag, 16) == 0
        assert buf.raw[:len(pt)] + tag.raw[:16] == model.seal(key, nonce, aad, pt)
        assert aead.open(ctx.addr, _buf(nonce), 12, _buf(aad), len(aad), buf, len(pt), buf,
                         tag, 16) == 0
        assert buf.raw[:len(pt)] == pt


def test_stats_reports_gcm_siv_by_phase(aesgen_exe) -> None:
    """`aesgen stats` gives the GCM-SIV kernels a table of their own, POLYVAL beside AES,
    each phase of the two passes counted once a block."""
    import subprocess

    r = subprocess.run([str(aesgen_exe), "stats", str(Path(__file__).parents[1] / "generated"
                                                       / "x86-64-v2")],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    table = r.stdout[r.stdout.index("AES-GCM-SIV (RFC 8452) kernels"):].splitlines()
    header = re.split(r"\s{2,}", table[1].strip())
    assert "POLYVAL mul" in header and "FACE" not in header
    rows = {tuple(line.split()[:2]): line.split() for line in table[3:5]}
    for bits in ("128", "256"):
        cells = dict(zip(header[2:], map(float, rows[("aesni-gcm-siv", bits)][2:])))
        # AES-128 runs 10 rounds a block (9 AESENC, 1 AESENCLAST, and key loads beside)
        assert cells["AES"] >= (10 if bits == "128" else 14)
        assert 4 <= cells["POLYVAL mul"] <= 12 and cells["counter"] > 0


def test_gfni_methods_have_a_gcm_siv_without_carry_less_multiply() -> None:
    """The constant-time form without a carry-less multiply: every committed x86 set lists,
    for each of its gfni methods, a GCM-SIV kernel hashed by the byte-sliced engine in
    POLYVAL's bit order (manifest "hash"), constant time, whose file multiplies by
    GF2P8AFFINEQB and has no carry-less multiply and no AES instruction. (The kernels
    themselves run every test above with the others.)"""
    from test_methods import AES_INSTRUCTION
    from aesgen.paths import GENERATED
    from aesgen.targets import find_preset

    checked = 0
    for manifest in sorted(GENERATED.glob("*/manifest.json")):
        preset = find_preset(manifest.parent.name)
        if preset.arch != "x86_64":
            continue
        aeads = {a["name"]: a for a in json.loads(manifest.read_text()).get("aeads", [])}
        for choice in preset.methods:
            if choice.method != "gfni":
                continue
            name = f"{choice.variant}-gcm-siv"
            assert name in aeads, f"{manifest.parent.name} lacks {name}"
            a = aeads[name]
            assert a["hash"] == "bytesliced" and a["constant_time"] is True, name
            text = (manifest.parent / a["file"]).read_text().lower()
            assert "gf2p8affineqb" in text, name
            assert "pclmulqdq" not in text, f"{name} runs a carry-less multiply"
            assert not AES_INSTRUCTION.search(text), f"{name} runs an AES instruction"
            checked += 1
    assert checked >= 10, checked
