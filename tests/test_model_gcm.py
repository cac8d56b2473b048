"""Known-answer and property tests for the GF(2^128) (GHASH, POLYVAL) and AES-GCM models."""

from __future__ import annotations

import random
from collections.abc import Iterator

import pytest

from aesgen.model.aes import encrypt_block, expand_key, xor_bytes
from aesgen.model.face import (
    TABLE_TAG_POSITIONS,
    finish_rounds,
    rd1_cache,
    rd1_state,
    rd1plus_table,
    rd2_cache,
    rd2_state,
    rd2plus_table,
    round_states,
    table_tag,
    window_base_block,
)
from aesgen.model.gcm import (
    MAX_AAD_BYTES,
    MAX_NONCE_BYTES,
    MAX_PLAINTEXT_BYTES,
    check_lengths,
    gctr,
    ghash_input,
    hash_subkey,
    inc32,
    inc32_sequence,
    j0,
    keystream_counters,
    seal,
)
from aesgen.model.gcm import open as gcm_open
from aesgen.model.gf128 import (
    GHASH_ONE,
    GHASH_R,
    GHASH_X,
    byte_reverse,
    double,
    double_le,
    from_block,
    gf_mul,
    ghash,
    h_powers,
    mulx_ghash,
    mulx_polyval,
    polyval,
    polyval_dot,
    polyval_mul,
    polyval_via_ghash,
    to_block,
)

H = bytes.fromhex
SEED = 2026
KEY_SIZES = (16, 24, 32)

# ---------------------------------------------------------------------------
# McGrew and Viega, "The Galois/Counter Mode of Operation (GCM)", revised
# submission to NIST (2005), Appendix B "AES Test Vectors", test cases 1-18.
# K, P, A, IV, H, C and T as printed there.
# ---------------------------------------------------------------------------

SPEC_K_ZERO_128 = bytes(16)
SPEC_K_ZERO_192 = bytes(24)
SPEC_K_ZERO_256 = bytes(32)
SPEC_K_128 = H("feffe9928665731c6d6a8f9467308308")
SPEC_K_192 = H("feffe9928665731c6d6a8f9467308308" "feffe9928665731c")
SPEC_K_256 = H("feffe9928665731c6d6a8f9467308308" "feffe9928665731c6d6a8f9467308308")
SPEC_IV_ZERO = bytes(12)
SPEC_IV_96 = H("cafebabefacedbaddecaf888")
SPEC_IV_64 = H("cafebabefacedbad")
SPEC_IV_480 = H(
    "9313225df88406e555909c5aff5269aa"
    "6a7a9538534f7da1e4c303d2a318a728"
    "c3c0c95156809539fcf0e2429a6b5254"
    "16aedbf5a0de6a57a637b39b"
)
SPEC_P_64 = H(
    "d9313225f88406e5a55909c5aff5269a"
    "86a7a9531534f7da2e4c303d8a318a72"
    "1c3c0c95956809532fcf0e2449a6b525"
    "b16aedf5aa0de657ba637b391aafd255"
)
SPEC_P_60 = H(
    "d9313225f88406e5a55909c5aff5269a"
    "86a7a9531534f7da2e4c303d8a318a72"
    "1c3c0c95956809532fcf0e2449a6b525"
    "b16aedf5aa0de657ba637b39"
)
SPEC_A_20 = H("feedfacedeadbeeffeedfacedeadbeef" "abaddad2")
SPEC_H_ZERO_128 = H("66e94bd4ef8a2c3b884cfa59ca342b2e")
SPEC_H_128 = H("b83b533708bf535d0aa6e52980d53b78")
SPEC_H_ZERO_192 = H("aae06992acbf52a3e8f4a96ec9300bd7")
SPEC_H_192 = H("466923ec9ae682214f2c082badb39249")
SPEC_H_ZERO_256 = H("dc95c078a2408989ad48a21492842087")
SPEC_H_256 = H("acbef20579b4b8ebce889bac8732dad7")

# (key, IV, A, P, H, C, T)
GCM_SPEC_CASES = [
    pytest.param(
        SPEC_K_ZERO_128, SPEC_IV_ZERO, b"", b"", SPEC_H_ZERO_128,
        b"",
        H("58e2fccefa7e3061367f1d57a4e7455a"),
        id="case01-aes128",
    ),
    pytest.param(
        SPEC_K_ZERO_128, SPEC_IV_ZERO, b"", bytes(16), SPEC_H_ZERO_128,
        H("0388dace60b6a392f328c2b971b2fe78"),
        H("ab6e47d42cec13bdf53a67b21257bddf"),
        id="case02-aes128",
    ),
    pytest.param(
        SPEC_K_128, SPEC_IV_96, b"", SPEC_P_64, SPEC_H_128,
        H(
            "42831ec2217774244b7221b784d0d49c"
            "e3aa212f2c02a4e035c17e2329aca12e"
            "21d514b25466931c7d8f6a5aac84aa05"
            "1ba30b396a0aac973d58e091473f5985"
        ),
        H("4d5c2af327cd64a62cf35abd2ba6fab4"),
        id="case03-aes128",
    ),
    pytest.param(
        SPEC_K_128, SPEC_IV_96, SPEC_A_20, SPEC_P_60, SPEC_H_128,
        H(
            "42831ec2217774244b7221b784d0d49c"
            "e3aa212f2c02a4e035c17e2329aca12e"
            "21d514b25466931c7d8f6a5aac84aa05"
            "1ba30b396a0aac973d58e091"
        ),
        H("5bc94fbc3221a5db94fae95ae7121a47"),
        id="case04-aes128",
    ),
    pytest.param(
        SPEC_K_128, SPEC_IV_64, SPEC_A_20, SPEC_P_60, SPEC_H_128,
        H(
            "61353b4c2806934a777ff51fa22a4755"
            "699b2a714fcdc6f83766e5f97b6c7423"
            "73806900e49f24b22b097544d4896b42"
            "4989b5e1ebac0f07c23f4598"
        ),
        H("3612d2e79e3b0785561be14aaca2fccb"),
        id="case05-aes128-iv64",
    ),
    pytest.param(
        SPEC_K_128, SPEC_IV_480, SPEC_A_20, SPEC_P_60, SPEC_H_128,
        H(
            "8ce24998625615b603a033aca13fb894"
            "be9112a5c3a211a8ba262a3cca7e2ca7"
            "01e4a9a4fba43c90ccdcb281d48c7c6f"
            "d62875d2aca417034c34aee5"
        ),
        H("619cc5aefffe0bfa462af43c1699d050"),
        id="case06-aes128-iv480",
    ),
    pytest.param(
        SPEC_K_ZERO_192, SPEC_IV_ZERO, b"", b"", SPEC_H_ZERO_192,
        b"",
        H("cd33b28ac773f74ba00ed1f312572435"),
        id="case07-aes192",
    ),
    pytest.param(
        SPEC_K_ZERO_192, SPEC_IV_ZERO, b"", bytes(16), SPEC_H_ZERO_192,
        H("98e7247c07f0fe411c267e4384b0f600"),
        H("2ff58d80033927ab8ef4d4587514f0fb"),
        id="case08-aes192",
    ),
    pytest.param(
        SPEC_K_192, SPEC_IV_96, b"", SPEC_P_64, SPEC_H_192,
        H(
            "3980ca0b3c00e841eb06fac4872a2757"
            "859e1ceaa6efd984628593b40ca1e19c"
            "7d773d00c144c525ac619d18c84a3f47"
            "18e2448b2fe324d9ccda2710acade256"
        ),
        H("9924a7c8587336bfb118024db8674a14"),
        id="case09-aes192",
    ),
    pytest.param(
        SPEC_K_192, SPEC_IV_96, SPEC_A_20, SPEC_P_60, SPEC_H_192,
        H(
            "3980ca0b3c00e841eb06fac4872a2757"
            "859e1ceaa6efd984628593b40ca1e19c"
            "7d773d00c144c525ac619d18c84a3f47"
            "18e2448b2fe324d9ccda2710"
        ),
        H("2519498e80f1478f37ba55bd6d27618c"),
        id="case10-aes192",
    ),
    pytest.param(
        SPEC_K_192, SPEC_IV_64, SPEC_A_20, SPEC_P_60, SPEC_H_192,
        H(
            "0f10f599ae14a154ed24b36e25324db8"
            "c566632ef2bbb34f8347280fc4507057"
            "fddc29df9a471f75c66541d4d4dad1c9"
            "e93a19a58e8b473fa0f062f7"
        ),
        H("65dcc57fcf623a24094fcca40d3533f8"),
        id="case11-aes192-iv64",
    ),
    pytest.param(
        SPEC_K_192, SPEC_IV_480, SPEC_A_20, SPEC_P_60, SPEC_H_192,
        H(
            "d27e88681ce3243c4830165a8fdcf9ff"
            "1de9a1d8e6b447ef6ef7b79828666e45"
            "81e79012af34ddd9e2f037589b292db3"
            "e67c036745fa22e7e9b7373b"
        ),
        H("dcf566ff291c25bbb8568fc3d376a6d9"),
        id="case12-aes192-iv480",
    ),
    pytest.param(
        SPEC_K_ZERO_256, SPEC_IV_ZERO, b"", b"", SPEC_H_ZERO_256,
        b"",
        H("530f8afbc74536b9a963b4f1c4cb738b"),
        id="case13-aes256",
    ),
    pytest.param(
        SPEC_K_ZERO_256, SPEC_IV_ZERO, b"", bytes(16), SPEC_H_ZERO_256,
        H("cea7403d4d606b6e074ec5d3baf39d18"),
        H("d0d1c8a799996bf0265b98b5d48ab919"),
        id="case14-aes256",
    ),
    pytest.param(
        SPEC_K_256, SPEC_IV_96, b"", SPEC_P_64, SPEC_H_256,
        H(
            "522dc1f099567d07f47f37a32a84427d"
            "643a8cdcbfe5c0c97598a2bd2555d1aa"
            "8cb08e48590dbb3da7b08b1056828838"
            "c5f61e6393ba7a0abcc9f662898015ad"
        ),
        H("b094dac5d93471bdec1a502270e3cc6c"),
        id="case15-aes256",
    ),
    pytest.param(
        SPEC_K_256, SPEC_IV_96, SPEC_A_20, SPEC_P_60, SPEC_H_256,
        H(
            "522dc1f099567d07f47f37a32a84427d"
            "643a8cdcbfe5c0c97598a2bd2555d1aa"
            "8cb08e48590dbb3da7b08b1056828838"
            "c5f61e6393ba7a0abcc9f662"
        ),
        H("76fc6ece0f4e1768cddf8853bb2d551b"),
        id="case16-aes256",
    ),
    pytest.param(
        SPEC_K_256, SPEC_IV_64, SPEC_A_20, SPEC_P_60, SPEC_H_256,
        H(
            "c3762df1ca787d32ae47c13bf19844cb"
            "af1ae14d0b976afac52ff7d79bba9de0"
            "feb582d33934a4f0954cc2363bc73f78"
            "62ac430e64abe499f47c9b1f"
        ),
        H("3a337dbf46a792c45e454913fe2ea8f2"),
        id="case17-aes256-iv64",
    ),
    pytest.param(
        SPEC_K_256, SPEC_IV_480, SPEC_A_20, SPEC_P_60, SPEC_H_256,
        H(
            "5a8def2f0c9e53f1f75d7853659e2a20"
            "eeb2b22aafde6419a058ab4f6f746bf4"
            "0fc0c3b780f244452da3ebf1c5d82cde"
            "a2418997200ef82e44ae7e3f"
        ),
        H("a44a8266ee1c8eb0c8b5d4cf5ae9f19a"),
        id="case18-aes256-iv480",
    ),
]

# Intermediate values printed with the same test cases: Y_0 (= J_0) for the IVs
# that are not 96 bits, and GHASH(H, A, C).
SPEC_Y0 = [
    pytest.param(SPEC_K_128, SPEC_IV_64, H("c43a83c4c4badec4354ca984db252f7d"), id="case05"),
    pytest.param(SPEC_K_128, SPEC_IV_480, H("3bab75780a31c059f83d2a44752f9864"), id="case06"),
    pytest.param(SPEC_K_256, SPEC_IV_480, H("0cd953e2140a5976079f8e2406bc8eb4"), id="case18"),
]
SPEC_GHASH = [
    pytest.param(
        SPEC_H_ZERO_128, b"", H("0388dace60b6a392f328c2b971b2fe78"),
        H("f38cbb1ad69223dcc3457ae5b6b0f885"), id="case02",
    ),
    pytest.param(
        SPEC_H_ZERO_256, b"", H("cea7403d4d606b6e074ec5d3baf39d18"),
        H("83de425c5edc5d498f382c441041ca92"), id="case14",
    ),
    pytest.param(
        SPEC_H_256, b"",
        H(
            "522dc1f099567d07f47f37a32a84427d"
            "643a8cdcbfe5c0c97598a2bd2555d1aa"
            "8cb08e48590dbb3da7b08b1056828838"
            "c5f61e6393ba7a0abcc9f662898015ad"
        ),
        H("4db870d37cb75fcb46097c36230d1612"), id="case15",
    ),
    pytest.param(
        SPEC_H_256, SPEC_A_20,
        H(
            "5a8def2f0c9e53f1f75d7853659e2a20"
            "eeb2b22aafde6419a058ab4f6f746bf4"
            "0fc0c3b780f244452da3ebf1c5d82cde"
            "a2418997200ef82e44ae7e3f"
        ),
        H("d5ffcf6fc5ac4d69722187421a7f170b"), id="case18",
    ),
]

# ---------------------------------------------------------------------------
# NIST CAVP GCM vectors (gcmtestvectors.zip, gcmEncryptExtIV128/256.rsp) with
# truncated tags: (key, IV, A, P, C, T); Tlen is len(T).
# ---------------------------------------------------------------------------

CAVP_TRUNCATED = [
    pytest.param(
        H("99e8e1861e55cf4e853a910c70901f2d"),
        H("437b73e624906652956bd2fb"),
        H(
            "41e328808d081b677d8f51bdaedf0aa7b42e4de88c1a9004"
            "196d7ca5e0e4f9aab3a78f26cf01d60deec62dad8f9fd62b"
        ),
        H("fd239ba3aeef41608fc7013c472b581d"),
        H("8ccc27bca436f983c761d5c5ef28138a"),
        H("a2f11ce5"),
        id="aes128-tag32",
    ),
    pytest.param(
        H("857fc7d0670744d02407b6ff7330c59d1727fa371ba0ea02a39e7d059640f11f"),
        H("1bf14482b7b5afe3dade8dd1"),
        H("d9fe058ded673b1976e3322c35f73e08"),
        H("5b7ef3281a816c4a0a95acdf3e166d6d"),
        H("10db57cdffb1e43b27cc568e5fed98d6"),
        H("d9c68cd2"),
        id="aes256-tag32",
    ),
    pytest.param(
        H("90e625f18f04122c3e0657a2dfe0e1b8"),
        H("d9"),  # IVlen = 8: a one-byte nonce, J_0 through GHASH.
        H("a7f88b0e07672401f86f515404fe5af3e53edcca"),
        H("e2d381298318a2135ca6d01a24d0dfab"),
        H("87cbfc064d5584ac1c2b385adc02fde5"),
        H("f0260a089fdaaa12"),
        id="aes128-iv8-tag64",
    ),
    pytest.param(
        H("f00fdd018c02e03576008b516ea971ad"),
        H("3b3e276f9e98b1ecb7ce6d28"),
        b"",
        H("2853e66b7b1b3e1fa3d1f37279ac82be"),
        H("55d2da7a3fb773b8a073db499e24bf62"),
        H("cba06bb4f6e097199250b0d1"),
        id="aes128-tag96",
    ),
    pytest.param(
        H("70fb02388301f16c4193b0fc70683f3f"),
        H("aec612be7c1ddb659a4b315c"),
        H("3859b3c9d0b42d45c43e8ebd4c8cbde1b6eb2106"),
        H("68e6bc0b08b8adbdc00005ae44723c8e"),
        H("a7c52a23b09062a1fb77d47ff83a114f"),
        H("79f91fa572220432ee3a6495"),
        id="aes128-aad160-tag96",
    ),
    pytest.param(
        H("da0b615656135194ba6d3c851099bc48"),
        H("d39d4b4d3cc927885090e6c3"),
        H("e7e5e6f8dac913036cb2ff29e8625e0e"),
        b"",
        b"",
        H("ab967711a5770461724460b07237e2"),
        id="aes128-pt0-tag120",
    ),
]

# RFC 8452 Appendix A: POLYVAL(H, X_1, X_2) and the same value through GHASH.
RFC8452_H = H("25629347589242761d31f826ba4b757b")
RFC8452_X1 = H("4f4f95668c83dfb6401762bb2d01a262")
RFC8452_X2 = H("d1a24ddd2721d006bbe45f20d3c9f362")
RFC8452_POLYVAL = H("f7a3b47b846119fae5b7866cf5e5b77e")
RFC8452_GHASH_KEY = H("dcbaa5dd137c188ebb21492c23c9b112")  # mulX_GHASH(ByteReverse(H))
RFC8452_GHASH = H("7eb7e5f56c86b7e5fa1961847bb4a3f7")  # ByteReverse(POLYVAL result)


# ---------------------------------------------------------------------------
# Helpers
# ---------------------------------------------------------------------------

def _flip_bit(data: bytes, bit: int) -> bytes:
    """``data`` with bit ``bit`` (0 = the most significant bit of byte 0) inverted."""
    index, shift = divmod(bit, 8)
    return data[:index] + bytes((data[index] ^ (0x80 >> shift),)) + data[index + 1:]


def _reflect128(v: int) -> int:
    """Reverse the 128 bits of ``v``: GHASH order <-> conventional order (bit i = x^i)."""
    return int(f"{v:0128b}"[::-1], 2)


def _gf2_mul_mod(a: int, b: int, modulus: int) -> int:
    """Schoolbook GF(2)[x] product of a and b, reduced by ``modulus`` (bit i = x^i)."""
    product = 0
    for i in range(b.bit_length()):
        if (b >> i) & 1:
            product ^= a << i
    degree = modulus.bit_length() - 1
    for i in range(product.bit_length() - 1, degree - 1, -1):
        if (product >> i) & 1:
            product ^= modulus << (i - degree)
    return product


GHASH_MODULUS_CONVENTIONAL = (1 << 128) | 0x87  # x^128 + x^7 + x^2 + x + 1


def _random_blocks(rng: random.Random, count: int) -> list[bytes]:
    return [rng.randbytes(16) for _ in range(count)]


# ---------------------------------------------------------------------------
# GF(2^128) in GHASH order (SP 800-38D section 6.3)
# ---------------------------------------------------------------------------

def test_ghash_order_constants() -> None:
    # In GHASH order the block 80 00..00 is 1 and 40 00..00 is x (section 6.3).
    assert from_block(H("80" + "00" * 15)) == GHASH_ONE
    assert from_block(H("40" + "00" * 15)) == GHASH_X
    assert to_block(GHASH_ONE) == H("80" + "00" * 15)
    # x^127 * x = x^128 = 1 + x + x^2 + x^7, which is R (section 6.3).
    x127 = from_block(H("00" * 15 + "01"))
    assert gf_mul(x127, GHASH_X) == GHASH_R
    assert to_block(GHASH_R) == H("e1" + "00" * 15)


def test_gf_mul_identity_and_zero() -> None:
    rng = random.Random(SEED)
    for _ in range(20):
        a = rng.getrandbits(128)
        assert gf_mul(a, GHASH_ONE) == a
        assert gf_mul(GHASH_ONE, a) == a
        assert gf_mul(a, 0) == 0 == gf_mul(0, a)


def test_gf_mul_commutative_associative_distributive() -> None:
    rng = random.Random(SEED + 1)
    for _ in range(20):
        a, b, c = (rng.getrandbits(128) for _ in range(3))
        assert gf_mul(a, b) == gf_mul(b, a)
        assert gf_mul(gf_mul(a, b), c) == gf_mul(a, gf_mul(b, c))
        assert gf_mul(a, b ^ c) == gf_mul(a, b) ^ gf_mul(a, c)


def test_gf_mul_matches_polynomial_definition() -> None:
    # Algorithm 1 against the plain definition: reflect to bit i = x^i, multiply the
    # polynomials, reduce by x^128 + x^7 + x^2 + x + 1, reflect back.
    rng = random.Random(SEED + 2)
    for _ in range(20):
        a, b = rng.getrandbits(128), rng.getrandbits(128)
        expected = _gf2_mul_mod(_reflect128(a), _reflect128(b), GHASH_MODULUS_CONVENTIONAL)
        assert gf_mul(a, b) == _reflect128(expected)


def test_gf_multiplicative_group_order() -> None:
    # Every non-zero element satisfies a^(2^128 - 1) = 1: the ring is a field.
    rng = random.Random(SEED + 3)
    a = rng.getrandbits(128) | 1
    power, square = GHASH_ONE, a
    for _ in range(128):  # 2^128 - 1 has 128 one bits
        power = gf_mul(power, square)
        square = gf_mul(square, square)
    assert power == GHASH_ONE


def test_gf_mul_by_x_is_mulx_ghash() -> None:
    rng = random.Random(SEED + 4)
    for block in _random_blocks(rng, 20):
        assert to_block(gf_mul(from_block(block), GHASH_X)) == mulx_ghash(block)


def test_gf_mul_rejects_wide_values() -> None:
    with pytest.raises(ValueError):
        gf_mul(1 << 128, 1)
    with pytest.raises(ValueError):
        gf_mul(1, -1)
    with pytest.raises(ValueError):
        from_block(bytes(15))


def test_h_powers_match_repeated_multiplication() -> None:
    rng = random.Random(SEED + 5)
    h = rng.randbytes(16)
    powers = h_powers(h, 8)
    assert h_powers(h, 0) == []
    assert len(powers) == 8 and powers[0] == h
    acc = GHASH_ONE
    for power in powers:
        acc = gf_mul(acc, from_block(h))
        assert power == to_block(acc)
    # H^i * H^j == H^(i+j)
    assert to_block(gf_mul(from_block(powers[2]), from_block(powers[4]))) == powers[7]


def test_ghash_is_horner_and_aggregated_form() -> None:
    # SP 800-38D section 6.4: Y_m = X_1*H^m ^ X_2*H^(m-1) ^ .. ^ X_m*H, the sum a
    # many-block kernel computes with the table from h_powers.
    rng = random.Random(SEED + 6)
    h = rng.randbytes(16)
    assert ghash(h, b"") == bytes(16)
    for m in (1, 2, 5, 8):
        blocks = _random_blocks(rng, m)
        powers = h_powers(h, m)
        expected = 0
        for i, block in enumerate(blocks):
            expected ^= gf_mul(from_block(block), from_block(powers[m - 1 - i]))
        assert ghash(h, b"".join(blocks)) == to_block(expected)


def test_ghash_is_linear_in_data() -> None:
    rng = random.Random(SEED + 7)
    h = rng.randbytes(16)
    a, b = rng.randbytes(48), rng.randbytes(48)
    assert ghash(h, xor_bytes(a, b)) == xor_bytes(ghash(h, a), ghash(h, b))


def test_ghash_rejects_partial_blocks() -> None:
    with pytest.raises(ValueError):
        ghash(bytes(16), bytes(17))
    with pytest.raises(ValueError):
        ghash(bytes(15), bytes(16))


@pytest.mark.parametrize(("h", "aad", "ciphertext", "expected"), SPEC_GHASH)
def test_ghash_spec_values(h: bytes, aad: bytes, ciphertext: bytes, expected: bytes) -> None:
    assert ghash(h, ghash_input(aad, ciphertext)) == expected


# ---------------------------------------------------------------------------
# POLYVAL (RFC 8452 section 3) and its link to GHASH (Appendix A)
# ---------------------------------------------------------------------------

def test_polyval_rfc8452_appendix_a_worked_example() -> None:
    data = RFC8452_X1 + RFC8452_X2
    assert polyval(RFC8452_H, data) == RFC8452_POLYVAL
    # The same computation with GHASH, step by step as Appendix A gives it.
    assert mulx_ghash(byte_reverse(RFC8452_H)) == RFC8452_GHASH_KEY
    reversed_data = byte_reverse(RFC8452_X1) + byte_reverse(RFC8452_X2)
    assert ghash(RFC8452_GHASH_KEY, reversed_data) == RFC8452_GHASH
    assert byte_reverse(RFC8452_GHASH) == RFC8452_POLYVAL
    assert polyval_via_ghash(RFC8452_H, data) == RFC8452_POLYVAL


def test_polyval_rfc8452_field_examples() -> None:
    # RFC 8452 section 7 ("Field Operation Examples").
    a = H("66e94bd4ef8a2c3b884cfa59ca342b2e")
    b = H("ff000000000000000000000000000000")
    assert polyval_mul(a, b) == H("37856175e9dc9df26ebc6d6171aa0ae9")
    assert polyval_dot(a, b) == H("ebe563401e7e91ea3ad6426b8140c394")


def test_mulx_rfc8452_appendix_a_examples() -> None:
    one = H("01000000000000000000000000000000")
    assert mulx_ghash(one) == H("00800000000000000000000000000000")
    assert mulx_polyval(one) == H("02000000000000000000000000000000")
    assert mulx_ghash(H("9c98c04df9387ded828175a92ba652d8")) == H(
        "4e4c6026fc9c3ef6c140bad495d3296c"
    )
    # Appendix A also prints mulX_POLYVAL of this input as ...574ca5f2; the product by x
    # in the POLYVAL field ends ...574ca572 (the byte that carries into x^128 is d8, and
    # 0xb0 ^ 0xc2 = 0x72).  The identity test below checks the value without the RFC.
    assert mulx_polyval(H("9c98c04df9387ded828175a92ba652d8")) == H(
        "3931819bf271fada0503eb52574ca572"
    )


def test_polyval_equals_ghash_identity_random() -> None:
    rng = random.Random(SEED + 8)
    for nblocks in (0, 1, 2, 3, 5):
        h = rng.randbytes(16)
        data = rng.randbytes(16 * nblocks)
        assert polyval(h, data) == polyval_via_ghash(h, data)


def test_polyval_field_is_ghash_field_in_another_bit_order() -> None:
    # psi(a) = mulX_GHASH(ByteReverse(a)) carries (POLYVAL, dot) onto (GHASH, *).
    rng = random.Random(SEED + 9)

    def psi(block: bytes) -> int:
        return from_block(mulx_ghash(byte_reverse(block)))

    for _ in range(10):
        a, b = rng.randbytes(16), rng.randbytes(16)
        assert psi(polyval_dot(a, b)) == gf_mul(psi(a), psi(b))
        # ByteReverse(a * x) is ByteReverse(a) / x in GHASH order.
        assert mulx_ghash(byte_reverse(mulx_polyval(a))) == byte_reverse(a)
        # dot(a, b) * x^128 == a * b: the x^-128 of the definition.
        dot = polyval_dot(a, b)
        for _ in range(128):
            dot = mulx_polyval(dot)
        assert dot == polyval_mul(a, b)


# ---------------------------------------------------------------------------
# Doubling (OCB/OTR/CMAC big-endian; XTS little-endian)
# ---------------------------------------------------------------------------

def test_double_known_values() -> None:
    assert double(H("00" * 15 + "01")) == H("00" * 15 + "02")
    assert double(H("80" + "00" * 15)) == H("00" * 15 + "87")
    # SP 800-38B / RFC 4493 section 4 subkeys: L = AES-128(K, 0), K1 = 2L, K2 = 4L.
    key = H("2b7e151628aed2a6abf7158809cf4f3c")
    l_value = encrypt_block(key, bytes(16))
    assert l_value == H("7df76b0c1ab899b33e42f047b91b546f")
    assert double(l_value) == H("fbeed618357133667c85e08f7236a8de")
    assert double(double(l_value)) == H("f7ddac306ae266ccf90bc11ee46d513b")


def test_double_is_reflected_ghash_mulx() -> None:
    # The same field as GHASH, conventional bit order: double == reflect . (* x) . reflect.
    rng = random.Random(SEED + 10)
    for block in _random_blocks(rng, 20):
        v = int.from_bytes(block, "big")
        expected = _reflect128(gf_mul(_reflect128(v), GHASH_X))
        assert double(block) == expected.to_bytes(16, "big")


def test_double_le_is_xts_alpha_multiplication() -> None:
    # IEEE 1619-2007 section 5.2, byte by byte: each byte shifts left taking the top
    # bit of the byte before; the top bit of byte 15 folds 0x87 into byte 0.
    rng = random.Random(SEED + 11)
    for block in _random_blocks(rng, 20) + [H("00" * 15 + "80")]:
        out = bytearray(16)
        for j in range(16):
            carry_in = block[j - 1] >> 7 if j else 0
            out[j] = ((block[j] << 1) & 0xFF) | carry_in
        if block[15] >> 7:
            out[0] ^= 0x87
        assert double_le(block) == bytes(out)


# ---------------------------------------------------------------------------
# AES-GCM known answers (McGrew and Viega, Appendix B; NIST CAVP)
# ---------------------------------------------------------------------------

@pytest.mark.parametrize(
    ("key", "nonce", "aad", "plaintext", "h", "ciphertext", "tag"), GCM_SPEC_CASES
)
def test_gcm_spec_case(key: bytes, nonce: bytes, aad: bytes, plaintext: bytes,
                       h: bytes, ciphertext: bytes, tag: bytes) -> None:
    assert len(ciphertext) == len(plaintext) and len(tag) == 16
    assert hash_subkey(key) == h
    assert seal(key, nonce, aad, plaintext) == (ciphertext, tag)
    assert gcm_open(key, nonce, aad, ciphertext, tag) == plaintext


@pytest.mark.parametrize(
    ("key", "nonce", "aad", "plaintext", "h", "ciphertext", "tag"), GCM_SPEC_CASES
)
def test_gcm_spec_case_rejects_one_flipped_bit(key: bytes, nonce: bytes, aad: bytes,
                                               plaintext: bytes, h: bytes,
                                               ciphertext: bytes, tag: bytes) -> None:
    del plaintext, h
    rng = random.Random(SEED + len(key) + len(nonce) + len(aad) + len(ciphertext))
    round_keys = expand_key(key)
    fields = {"nonce": nonce, "aad": aad, "ciphertext": ciphertext, "tag": tag}
    for name, value in fields.items():
        if not value:
            continue  # cases 1, 2, 7, 8, 13, 14 have no AAD; 1, 7, 13 no ciphertext
        bad = dict(fields, **{name: _flip_bit(value, rng.randrange(8 * len(value)))})
        assert gcm_open(round_keys, bad["nonce"], bad["aad"], bad["ciphertext"],
                        bad["tag"]) is None, name


@pytest.mark.parametrize(("key", "nonce", "expected"), SPEC_Y0)
def test_j0_for_other_iv_lengths(key: bytes, nonce: bytes, expected: bytes) -> None:
    assert j0(hash_subkey(key), nonce) == expected


def test_j0_for_96_bit_iv() -> None:
    rng = random.Random(SEED + 12)
    nonce = rng.randbytes(12)
    assert j0(rng.randbytes(16), nonce) == nonce + H("00000001")


@pytest.mark.parametrize(
    ("key", "nonce", "aad", "plaintext", "ciphertext", "tag"), CAVP_TRUNCATED
)
def test_gcm_cavp_truncated_tag(key: bytes, nonce: bytes, aad: bytes, plaintext: bytes,
                                ciphertext: bytes, tag: bytes) -> None:
    assert seal(key, nonce, aad, plaintext, tag_len=len(tag)) == (ciphertext, tag)
    # Truncation keeps the leftmost bytes of the full tag (SP 800-38D section 7.1, MSB_t).
    full_ciphertext, full_tag = seal(key, nonce, aad, plaintext)
    assert full_ciphertext == ciphertext and full_tag[:len(tag)] == tag
    assert gcm_open(key, nonce, aad, ciphertext, tag) == plaintext
    assert gcm_open(key, nonce, aad, ciphertext, _flip_bit(tag, 8 * len(tag) - 1)) is None
    # A longer tag that extends the right one with a wrong byte is still wrong.
    wrong_extension = tag + bytes((full_tag[len(tag)] ^ 1,))
    assert gcm_open(key, nonce, aad, ciphertext, wrong_extension) is None


def test_truncated_tags_are_prefixes_for_every_length() -> None:
    rng = random.Random(SEED + 13)
    for size in KEY_SIZES:
        key, nonce = rng.randbytes(size), rng.randbytes(12)
        aad, plaintext = rng.randbytes(rng.randrange(40)), rng.randbytes(rng.randrange(40))
        ciphertext, full_tag = seal(key, nonce, aad, plaintext)
        for tag_len in range(4, 17):
            assert seal(key, nonce, aad, plaintext, tag_len) == (ciphertext, full_tag[:tag_len])
            assert gcm_open(key, nonce, aad, ciphertext, full_tag[:tag_len]) == plaintext


def test_tag_length_limits() -> None:
    key, nonce = bytes(16), bytes(12)
    for tag_len in (0, 3, 17):
        with pytest.raises(ValueError):
            seal(key, nonce, b"", b"", tag_len)
        with pytest.raises(ValueError):
            gcm_open(key, nonce, b"", b"", bytes(tag_len))


class _Sized:
    """Stands in for a buffer of ``length`` bytes without allocating it."""

    def __init__(self, length: int) -> None:
        self.length = length

    def __len__(self) -> int:
        return self.length


def test_length_limits() -> None:
    # SP 800-38D section 5.2.1.1, checked on lengths alone.
    check_lengths(1, 0, 0)
    check_lengths(MAX_NONCE_BYTES, MAX_AAD_BYTES, MAX_PLAINTEXT_BYTES)
    assert MAX_PLAINTEXT_BYTES == 2**36 - 32 and MAX_AAD_BYTES == 2**61 - 1
    for lengths in ((0, 0, 0), (MAX_NONCE_BYTES + 1, 0, 0), (12, MAX_AAD_BYTES + 1, 0),
                    (12, 0, MAX_PLAINTEXT_BYTES + 1), (12, -1, 0)):
        with pytest.raises(ValueError):
            check_lengths(*lengths)
    key = bytes(16)
    with pytest.raises(ValueError):
        seal(key, b"", b"", b"")
    with pytest.raises(ValueError):
        gcm_open(key, b"", b"", b"", bytes(16))
    # seal/open reject oversized inputs before reading them: nothing is allocated.
    huge_text = _Sized(MAX_PLAINTEXT_BYTES + 1)
    huge_aad = _Sized(MAX_AAD_BYTES + 1)
    with pytest.raises(ValueError):
        seal(key, bytes(12), b"", huge_text)  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        seal(key, bytes(12), huge_aad, b"")  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        gcm_open(key, bytes(12), b"", huge_text, bytes(16))  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        seal(key, _Sized(MAX_NONCE_BYTES + 1), b"", b"")  # type: ignore[arg-type]


def test_seal_open_round_trip_for_nonce_lengths() -> None:
    rng = random.Random(SEED + 14)
    for nonce_len in (1, 8, 12, 13, 16, 60):
        key = rng.randbytes(rng.choice(KEY_SIZES))
        nonce = rng.randbytes(nonce_len)
        aad, plaintext = rng.randbytes(rng.randrange(33)), rng.randbytes(rng.randrange(50))
        ciphertext, tag = seal(key, nonce, aad, plaintext)
        assert gcm_open(key, nonce, aad, ciphertext, tag) == plaintext
        # The ciphertext is the plaintext XOR E_K(J_0+1), E_K(J_0+2), ..
        counters = keystream_counters(key, nonce, -(-len(plaintext) // 16))
        stream = b"".join(encrypt_block(key, cb) for cb in counters)
        assert ciphertext == xor_bytes(plaintext, stream[:len(plaintext)])


# ---------------------------------------------------------------------------
# The counter: inc32 (SP 800-38D section 6.2), and FACE on GCM's counter blocks
# ---------------------------------------------------------------------------

def test_inc32_wraps_low_32_bits_only() -> None:
    prefix = H("a0a1a2a3a4a5a6a7a8a9aaab")
    assert inc32(prefix + H("00000001")) == prefix + H("00000002")
    assert inc32(prefix + H("000000ff")) == prefix + H("00000100")
    assert inc32(prefix + H("ffffffff")) == prefix + H("00000000")
    sequence = inc32_sequence(prefix + H("fffffffe"), 4)
    assert [cb[12:] for cb in sequence] == [H(x) for x in
                                            ("fffffffe", "ffffffff", "00000000", "00000001")]
    assert all(cb[:12] == prefix for cb in sequence)


def test_gctr_counter_wraps_without_carry_into_byte_11() -> None:
    key = expand_key(bytes(range(16)))
    icb = H("00112233445566778899aabb" "ffffffff")
    stream = gctr(key, icb, bytes(32))
    assert stream[:16] == encrypt_block(key, icb)
    assert stream[16:] == encrypt_block(key, icb[:12] + bytes(4))


def _face_cases() -> Iterator[tuple[bytes, bytes]]:
    """(key, nonce): a random 12-byte nonce per key size, then two other nonce lengths."""
    rng = random.Random(SEED + 15)
    for size in KEY_SIZES:
        yield rng.randbytes(size), rng.randbytes(12)
    yield rng.randbytes(16), rng.randbytes(20)
    yield rng.randbytes(32), rng.randbytes(8)


FACE_CASES = list(_face_cases())
FACE_CASE_IDS = [f"aes{len(k) * 8}-nonce{len(n)}" for k, n in FACE_CASES]
FACE_BLOCKS = 300
"""More than one 256-block window, so every case crosses a carry into byte 14."""


@pytest.mark.parametrize(("key", "nonce"), FACE_CASES, ids=FACE_CASE_IDS)
def test_gcm_counters_share_bytes_0_to_14_within_a_window(key: bytes, nonce: bytes) -> None:
    round_keys = expand_key(key)
    pre_counter = j0(hash_subkey(round_keys), nonce)
    counters = keystream_counters(round_keys, nonce, FACE_BLOCKS)
    assert counters[0] == inc32(pre_counter)
    wraps = 0
    for prev, cur in zip(counters, counters[1:]):
        assert cur[:12] == prev[:12] == pre_counter[:12]
        assert int.from_bytes(cur[12:], "big") == (int.from_bytes(prev[12:], "big") + 1) % 2**32
        if prev[15] == 0xFF:
            wraps += 1
            assert cur[15] == 0 and cur[:15] != prev[:15]  # inc32 carries into byte 14
        else:
            assert cur[:15] == prev[:15]
    # The blocks fall into wraps + 1 FACE windows of at most 256 consecutive counters.
    windows = [window_base_block(cb) for cb in counters]
    assert 1 <= wraps <= 2 and len(set(windows)) == wraps + 1
    assert all(windows.count(w) <= 256 for w in set(windows))
    # Counter bytes 0, 5, 10 never change within a message (inc32 never reaches them);
    # for a 96-bit nonce they are nonce bytes 0, 5 and 10.
    tags = {table_tag(cb) for cb in counters}
    assert tags == {table_tag(pre_counter)}
    if len(nonce) == 12:
        assert tags == {bytes(nonce[i] for i in TABLE_TAG_POSITIONS)}
        assert all(cb[:12] == nonce for cb in counters)


@pytest.mark.parametrize(("key", "nonce"), FACE_CASES, ids=FACE_CASE_IDS)
def test_face_r1_r2_rebuild_gcm_counter_states(key: bytes, nonce: bytes) -> None:
    round_keys = expand_key(key)
    counters = keystream_counters(round_keys, nonce, FACE_BLOCKS)
    # The rd1+/rd2+ tables are built once, from the first counter block; they are keyed
    # by counter bytes 0, 5, 10 only, which GCM's counter never changes.
    t1 = rd1plus_table(round_keys, counters[0])
    t2 = rd2plus_table(round_keys, counters[0])
    last = counters[-1]
    assert rd1plus_table(round_keys, last) == t1 and rd2plus_table(round_keys, last) == t2
    caches: dict[bytes, tuple[bytes, bytes]] = {}
    for block in counters:
        base = window_base_block(block)
        if base not in caches:  # refreshed once per 256-block window
            caches[base] = (rd1_cache(round_keys, block), rd2_cache(round_keys, block))
        c1, c2 = caches[base]
        _, s1, s2 = round_states(round_keys, block, 2)
        assert rd1_state(c1, t1, block[15]) == s1, block.hex()
        assert rd2_state(c2, t2, block[15]) == s2, block.hex()


@pytest.mark.parametrize(
    ("key", "nonce"), [FACE_CASES[0], FACE_CASES[3]], ids=[FACE_CASE_IDS[0], FACE_CASE_IDS[3]]
)
def test_face_keystream_reproduces_gcm_ciphertext(key: bytes, nonce: bytes) -> None:
    rng = random.Random(SEED + 16)
    round_keys = expand_key(key)
    plaintext = rng.randbytes(16 * 260 - 5)
    aad = rng.randbytes(20)
    nblocks = -(-len(plaintext) // 16)
    counters = keystream_counters(round_keys, nonce, nblocks)
    t2 = rd2plus_table(round_keys, counters[0])
    stream = bytearray()
    for block in counters:
        c2 = rd2_cache(round_keys, block)
        stream += finish_rounds(round_keys, rd2_state(c2, t2, block[15]), 2)
    ciphertext, tag = seal(round_keys, nonce, aad, plaintext)
    assert ciphertext == xor_bytes(plaintext, bytes(stream[:len(plaintext)]))
    assert gcm_open(round_keys, nonce, aad, ciphertext, tag) == plaintext


# ---------------------------------------------------------------------------
# Differential check against the `cryptography` package, when it is installed
# ---------------------------------------------------------------------------

def test_against_cryptography_aesgcm() -> None:
    aead = pytest.importorskip(
        "cryptography.hazmat.primitives.ciphers.aead",
        reason="the 'cryptography' package is not installed",
    )
    rng = random.Random(SEED + 17)
    for length in range(101):
        key = rng.randbytes(KEY_SIZES[length % 3])
        nonce = rng.randbytes(12)
        aad = rng.randbytes(rng.randrange(40))
        plaintext = rng.randbytes(length)
        reference = aead.AESGCM(key)
        ciphertext, tag = seal(key, nonce, aad, plaintext)
        assert ciphertext + tag == reference.encrypt(nonce, plaintext, aad), length
        assert reference.decrypt(nonce, ciphertext + tag, aad) == plaintext
        assert gcm_open(key, nonce, aad, ciphertext, tag) == plaintext
