"""The AES-GCM-SIV model (aesgen/model/gcm_siv.py) against RFC 8452: every Appendix C vector
(tests/data/rfc8452_vectors.json, with the intermediate keys and POLYVAL results), the
`cryptography` package's AESGCMSIV (its wheel's OpenSSL) on random keys, nonces, AAD and
lengths, and POLYVAL against the kernels' carry-less arithmetic (gf128/x86_64/clmul.dot)."""
from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from aesgen.gf128.x86_64 import clmul
from aesgen.model import gcm_siv

VECTORS = json.loads((Path(__file__).parent / "data" / "rfc8452_vectors.json").read_text())
CASES = [pytest.param(v, id=f"{v['section']}-{i}") for i, v in enumerate(VECTORS["vectors"])]


def test_all_the_appendix_is_there() -> None:
    sections = [v["section"] for v in VECTORS["vectors"]]
    assert (sections.count("C.1"), sections.count("C.2"), sections.count("C.3")) == (24, 24, 2)


@pytest.mark.parametrize("v", CASES)
def test_rfc8452_vector(v) -> None:
    h = bytes.fromhex
    key, nonce, aad, pt = h(v["key"]), h(v["nonce"]), h(v["aad"]), h(v["plaintext"])
    auth, enc = gcm_siv.derive_keys(key, nonce)
    assert (auth.hex(), enc.hex()) == (v["auth_key"], v["enc_key"])
    lengths = (8 * len(aad)).to_bytes(8, "little") + (8 * len(pt)).to_bytes(8, "little")
    pad = lambda d: d + bytes(-len(d) % 16)                      # noqa: E731
    assert gcm_siv.polyval(auth, pad(aad) + pad(pt) + lengths).hex() == v["polyval_result"]
    sealed = gcm_siv.seal(key, nonce, aad, pt)
    assert sealed.hex() == v["result"] and sealed[-16:].hex() == v["tag"]
    assert gcm_siv.open_(key, nonce, aad, sealed) == pt
    for i in (0, len(sealed) - 1):                               # a flipped bit is refused
        bad = bytearray(sealed)
        bad[i] ^= 1
        assert gcm_siv.open_(key, nonce, aad, bytes(bad)) is None


def test_against_cryptography_on_random_messages() -> None:
    from cryptography.hazmat.primitives.ciphers.aead import AESGCMSIV

    rng = random.Random(8452)
    for _ in range(300):
        key = rng.randbytes(rng.choice(gcm_siv.KEY_BYTES))
        nonce = rng.randbytes(12)
        aad = rng.randbytes(rng.choice([0, 1, 13, 16, 31, rng.randrange(200)]))
        pt = rng.randbytes(rng.choice([0, 1, 15, 16, 17, 64, rng.randrange(600)]))
        want = AESGCMSIV(key).encrypt(nonce, pt, aad or None)
        assert gcm_siv.seal(key, nonce, aad, pt) == want
        assert gcm_siv.open_(key, nonce, aad, want) == pt


def test_polyval_dot_is_the_kernels_carryless_dot() -> None:
    """clmul.dot (the x86 and AArch64 engines' arithmetic) on little-endian block integers
    is POLYVAL's dot: POLYVAL is GHASH's engine with another bit order, no new multiply."""
    rng = random.Random(121)
    for _ in range(300):
        a, b = rng.getrandbits(128), rng.getrandbits(128)
        assert clmul.dot(a, b) == gcm_siv.dot(a, b)


def test_refusals() -> None:
    with pytest.raises(ValueError, match="16 or 32"):
        gcm_siv.derive_keys(bytes(24), bytes(12))
    with pytest.raises(ValueError, match="12 bytes"):
        gcm_siv.derive_keys(bytes(16), bytes(8))
    with pytest.raises(ValueError, match="2\\^36"):
        gcm_siv.check_lengths(0, (1 << 36) + 1)
    assert gcm_siv.open_(bytes(16), bytes(12), b"", bytes(15)) is None
