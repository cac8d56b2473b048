"""GHASH without a carry-less multiply (gf128/bytesliced.py, gf128/x86_64/bytesliced.py): the
model's matrices against the field's multiply, its eight byte-sliced streams against GHASH's
definition (model/gf128.py) for random keys, data and piece sizes, and the committed
kernels that use it: no carry-less multiply, no AES instruction, constant time.
The kernels themselves run against the GCM model and OpenSSL with every other AEAD
(test_gcm_kernels.py, the harness)."""
from __future__ import annotations

import json
import random

import pytest

from aesgen.gf128 import bytesliced as bs
from aesgen.model import gf128
from aesgen.paths import GENERATED

SEED = 8452


def _streams(rng: random.Random) -> tuple[list[int], list[bytes]]:
    blocks = [rng.randbytes(16) for _ in range(bs.STREAMS)]
    return bs.transpose_rows(blocks), blocks


def test_affine_qword_is_gf2p8affineqb() -> None:
    """Bit i of each result byte is the parity of the matrix's byte 7 - i and the data byte
    (Intel SDM, GF2P8AFFINEQB): the identity matrix 0x0102040810204080 leaves bytes alone."""
    rng = random.Random(SEED)
    for _ in range(200):
        data = rng.getrandbits(64)
        assert bs.affine_qword(0x0102040810204080, data) == data
        assert bs.affine_qword(0, data) == 0
    assert bs.affine_byte(0x80, 0x80) == 0x80                   # byte 0: output bit 7
    assert bs.affine_byte(0x80 << 56, 0x80) == 0x01             # byte 7: output bit 0


def test_bit_transpose_exchanges_rows_and_columns() -> None:
    rng = random.Random(SEED + 1)
    for _ in range(200):
        q = rng.getrandbits(64)
        t = bs.bit_transpose(q)
        for r in range(8):
            for c in range(8):
                assert (t >> (8 * r + c)) & 1 == (q >> (8 * (7 - c) + 7 - r)) & 1
        assert bs.bit_transpose(t) == q


def test_matrices_multiply_every_stream_by_the_element() -> None:
    rng = random.Random(SEED + 2)
    for _ in range(40):
        p = rng.randbytes(16)
        state, blocks = _streams(rng)
        got = bs.multiply(state, bs.matrices(p))
        want = [gf128.to_block(gf128.gf_mul(gf128.from_block(x), gf128.from_block(p)))
                for x in blocks]
        assert got == bs.transpose_rows(want)


def test_streams_hash_like_ghash_for_random_keys_data_and_pieces() -> None:
    """2000 cases: 40 keys, 50 messages each of 0..40 blocks, hashed in random pieces of 1..8
    blocks (the engine's absorb calls as the GCM skeleton makes them)."""
    rng = random.Random(SEED + 3)
    cases = 0
    for _ in range(40):
        h = rng.randbytes(16)
        mats = {e: bs.matrices(gf128.to_block(bs._power(gf128.from_block(h), e)))
                for e in bs.POWERS}
        for _ in range(50):
            n = rng.choice((0, 1, 7, 8, 9, rng.randint(0, 40)))
            data = rng.randbytes(16 * n)
            state, hashed, left = [0] * 16, 0, n
            while left:
                k = min(left, rng.randint(1, 8))
                piece = [data[16 * (hashed + i):16 * (hashed + i + 1)] for i in range(k)]
                state = bs.absorb(state, hashed, piece, mats[8])
                hashed, left = hashed + k, left - k
            assert bs.finish(state, hashed, mats) == gf128.ghash(h, data), (h.hex(), n)
            cases += 1
    assert cases == 2000


def test_polyval_matrices_multiply_every_stream_by_polyval_dot() -> None:
    """POLYVAL as a bit order of the engine: the renumbered matrices of H' multiply each
    stream (bytes as in memory) by POLYVAL's dot (model/gcm_siv.py, from RFC 8452's
    definition alone)."""
    from aesgen.model import gcm_siv

    rng = random.Random(SEED + 4)
    for _ in range(40):
        p = rng.randbytes(16)
        state, blocks = _streams(rng)
        got = bs.multiply(state, bs.matrices(p, polyval=True))
        want = [gcm_siv.dot(int.from_bytes(x, "little"), int.from_bytes(p, "little"))
                .to_bytes(16, "little") for x in blocks]
        assert got == bs.transpose_rows(want)
    # the other bit order is another map: a renumbering bug could not pass both
    p = rng.randbytes(16)
    assert bs.matrices(p, polyval=True) != bs.matrices(p)


def test_streams_compute_polyval_for_random_keys_data_and_pieces() -> None:
    """600 cases against RFC 8452's POLYVAL: 20 keys, 30 messages each of 0..40 blocks in
    random pieces of 1..8 blocks."""
    from aesgen.model import gcm_siv

    rng = random.Random(SEED + 5)
    cases = 0
    for _ in range(20):
        h = rng.randbytes(16)
        for _ in range(30):
            n = rng.choice((0, 1, 7, 8, 9, rng.randint(0, 40)))
            data = rng.randbytes(16 * n)
            pieces, left = [], n
            while left:
                pieces.append(min(left, rng.randint(1, 8)))
                left -= pieces[-1]
            assert bs.polyval(h, data, pieces) == gcm_siv.polyval(h, data), (h.hex(), n)
            cases += 1
    assert cases == 600


def test_absorb_takes_one_to_eight_blocks() -> None:
    with pytest.raises(ValueError, match="1 to 8"):
        bs.absorb([0] * 16, 0, [], [0] * 256)
    with pytest.raises(ValueError, match="1 to 8"):
        bs.absorb([0] * 16, 0, [bytes(16)] * 9, [0] * 256)


def test_slot_mask_wraps_around_the_qword() -> None:
    assert bs.slot_mask(0, 8) == bs.MASK64
    assert bs.slot_mask(6, 3) == 0xFFFF0000000000FF
    assert bs.slot_mask(3, 1) == 0xFF000000


def test_presets_without_clmul_hash_gcm_on_bytesliced_streams() -> None:
    """Every committed x86 preset with GFNI and AVX2 but no PCLMULQDQ lists a GCM AEAD for
    each of its gfni and bit-sliced methods at every FACE level, hashed by the byte-sliced
    engine (manifest "hash"), constant time, whose file multiplies by GF2P8AFFINEQB and has
    no carry-less multiply and no AES instruction."""
    from test_methods import AES_INSTRUCTION
    from aesgen.targets import find_preset

    checked = 0
    for manifest in sorted(GENERATED.glob("*/manifest.json")):
        m = json.loads(manifest.read_text())
        preset = find_preset(manifest.parent.name)
        features = set(preset.features)
        if preset.arch != "x86_64" or "PCLMULQDQ" in features \
                or not {"GFNI", "AVX2"} <= features:
            continue
        aeads = {a["name"]: a for a in m.get("aeads", [])}
        for choice in preset.methods:
            if choice.method not in ("gfni", "bitsliced"):
                continue
            for face in ("none", "r1", "r2"):
                name = f"{choice.variant}-gcm-{face}"
                assert name in aeads, f"{manifest.parent.name} lacks {name}"
                a = aeads[name]
                assert a["hash"] == "bytesliced" and a["constant_time"] is True, name
                text = (manifest.parent / a["file"]).read_text().lower()
                assert "gf2p8affineqb" in text, name
                assert "pclmulqdq" not in text, f"{name} runs a carry-less multiply"
                assert not AES_INSTRUCTION.search(text), f"{name} runs an AES instruction"
                checked += 1
    assert checked >= 9, checked
