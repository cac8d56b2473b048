"""Known-answer and property tests for the AES / CTR reference model."""

from __future__ import annotations

import random

import pytest

from aesgen.model.aes import (
    INV_SBOX,
    SBOX,
    add_round_key,
    aes_final_round,
    aes_round,
    counter_block,
    ctr_keystream,
    ctr_xor,
    encrypt_block,
    expand_key,
    gf_mul,
    mix_columns,
    shift_rows,
    sub_bytes,
    xtime,
)

H = bytes.fromhex

# FIPS-197 Appendix C: key 000102..., plaintext 00112233...
FIPS197_PLAINTEXT = H("00112233445566778899aabbccddeeff")
FIPS197_APPENDIX_C = [
    pytest.param(bytes(range(16)), H("69c4e0d86a7b0430d8cdb78070b4c55a"), id="C.1-AES128"),
    pytest.param(bytes(range(24)), H("dda97ca4864cdfe06eaf70a0ec0d7191"), id="C.2-AES192"),
    pytest.param(bytes(range(32)), H("8ea2b7ca516745bfeafc49904b496089"), id="C.3-AES256"),
]

# The keys shared by FIPS-197 Appendix A and SP 800-38A Appendix F.
KEY_128 = H("2b7e151628aed2a6abf7158809cf4f3c")
KEY_192 = H("8e73b0f7da0e6452c810f32b809079e562f8ead2522c6b7b")
KEY_256 = H("603deb1015ca71be2b73aef0857d77811f352c073b6108d72d9810a30914dff4")

# FIPS-197 Appendix A: the last four expanded words w[4*Nr .. 4*Nr+3].
FIPS197_APPENDIX_A = [
    pytest.param(KEY_128, 11, H("d014f9a8c9ee2589e13f0cc8b6630ca6"), id="A.1-AES128"),
    pytest.param(KEY_192, 13, H("e98ba06f448c773c8ecc720401002202"), id="A.2-AES192"),
    pytest.param(KEY_256, 15, H("fe4890d1e6188d0b046df344706c631e"), id="A.3-AES256"),
]

# SP 800-38A Appendix F.5 (CTR-AES*.Encrypt).
SP800_38A_COUNTER = H("f0f1f2f3f4f5f6f7f8f9fafbfcfdfeff")
SP800_38A_PLAINTEXT = H(
    "6bc1bee22e409f96e93d7e117393172a"
    "ae2d8a571e03ac9c9eb76fac45af8e51"
    "30c81c46a35ce411e5fbc1191a0a52ef"
    "f69f2445df4f9b17ad2b417be66c3710"
)
SP800_38A_CTR = [
    pytest.param(
        KEY_128,
        H(
            "874d6191b620e3261bef6864990db6ce"
            "9806f66b7970fdff8617187bb9fffdff"
            "5ae4df3edbd5d35e5b4f09020db03eab"
            "1e031dda2fbe03d1792170a0f3009cee"
        ),
        id="F.5.1-CTR-AES128",
    ),
    pytest.param(
        KEY_192,
        H(
            "1abc932417521ca24f2b0459fe7e6e0b"
            "090339ec0aa6faefd5ccc2c6f4ce8e94"
            "1e36b26bd1ebc670d1bd1d665620abf7"
            "4f78a7f6d29809585a97daec58c6b050"
        ),
        id="F.5.3-CTR-AES192",
    ),
    pytest.param(
        KEY_256,
        H(
            "601ec313775789a5b7a7f504bbf3d228"
            "f443e3ca4d62b59aca84e990cacaf5c5"
            "2b0930daa23de94ce87017ba2d84988d"
            "dfc9c58db67aada613c2dd08457941a6"
        ),
        id="F.5.5-CTR-AES256",
    ),
]


# --- field arithmetic and S-box -------------------------------------------------

def test_field_arithmetic_examples() -> None:
    # FIPS-197 sections 4.2 and 4.2.1.
    assert xtime(0x57) == 0xAE
    assert xtime(0xAE) == 0x47
    assert gf_mul(0x57, 0x83) == 0xC1
    assert gf_mul(0x57, 0x13) == 0xFE


def test_field_rejects_non_bytes() -> None:
    with pytest.raises(ValueError):
        xtime(0x100)
    with pytest.raises(ValueError):
        gf_mul(-1, 2)


def test_sbox_spot_values() -> None:
    assert SBOX[0x00] == 0x63
    assert SBOX[0x53] == 0xED
    assert SBOX[0x01] == 0x7C
    assert SBOX[0xFF] == 0x16
    assert INV_SBOX[0x00] == 0x52


def test_inv_sbox_inverts_sbox() -> None:
    assert sorted(SBOX) == list(range(256))
    for x in range(256):
        assert INV_SBOX[SBOX[x]] == x
        assert SBOX[INV_SBOX[x]] == x


# --- round steps ------------------------------------------------------------------

def test_shift_rows_permutation() -> None:
    # Output column c takes row r from input column (c + r) mod 4.
    expected = bytes([0, 5, 10, 15, 4, 9, 14, 3, 8, 13, 2, 7, 12, 1, 6, 11])
    assert shift_rows(bytes(range(16))) == expected


def test_mix_columns_known_columns() -> None:
    state = H("db135345" "f20a225c" "01010101" "2d26314c")
    assert mix_columns(state) == H("8e4da1bc" "9fdc589d" "01010101" "4d7ebdf8")


def test_fips197_c1_first_round_steps() -> None:
    # FIPS-197 Appendix C.1, round[1] lines.
    start = H("00102030405060708090a0b0c0d0e0f0")
    assert sub_bytes(start) == H("63cab7040953d051cd60e0e7ba70e18c")
    assert shift_rows(sub_bytes(start)) == H("6353e08c0960e104cd70b751bacad0e7")
    assert mix_columns(shift_rows(sub_bytes(start))) == H("5f72641557f5bc92f7be3b291db9f91a")
    rk1 = expand_key(bytes(range(16)))[1]
    assert rk1 == H("d6aa74fdd2af72fadaa678f1d6ab76fe")
    assert aes_round(start, rk1) == H("89d810e8855ace682d1843d8cb128fe4")


def test_final_round_skips_mix_columns() -> None:
    state = bytes(range(0, 32, 2))
    rk = bytes(range(16))
    assert aes_final_round(state, rk) == add_round_key(shift_rows(sub_bytes(state)), rk)
    assert aes_final_round(state, rk) != aes_round(state, rk)


# --- key expansion and block cipher -------------------------------------------------

@pytest.mark.parametrize(("key", "count", "last"), FIPS197_APPENDIX_A)
def test_key_expansion_appendix_a(key: bytes, count: int, last: bytes) -> None:
    round_keys = expand_key(key)
    assert len(round_keys) == count
    assert all(len(rk) == 16 for rk in round_keys)
    assert round_keys[0] == key[:16]
    assert round_keys[-1] == last


@pytest.mark.parametrize("length", [0, 8, 15, 17, 20, 31, 33, 64])
def test_key_expansion_rejects_bad_lengths(length: int) -> None:
    with pytest.raises(ValueError):
        expand_key(bytes(length))


@pytest.mark.parametrize(("key", "ciphertext"), FIPS197_APPENDIX_C)
def test_encrypt_block_appendix_c(key: bytes, ciphertext: bytes) -> None:
    assert encrypt_block(key, FIPS197_PLAINTEXT) == ciphertext
    assert encrypt_block(expand_key(key), FIPS197_PLAINTEXT) == ciphertext


def test_encrypt_block_rejects_bad_schedule() -> None:
    round_keys = expand_key(bytes(16))
    with pytest.raises(ValueError):
        encrypt_block(round_keys[:-1], bytes(16))


# --- CTR mode -----------------------------------------------------------------------

@pytest.mark.parametrize(("key", "ciphertext"), SP800_38A_CTR)
def test_ctr_sp800_38a(key: bytes, ciphertext: bytes) -> None:
    assert ctr_xor(key, SP800_38A_COUNTER, SP800_38A_PLAINTEXT) == ciphertext
    # Decryption is the same operation (F.5.2 / F.5.4 / F.5.6).
    assert ctr_xor(key, SP800_38A_COUNTER, ciphertext) == SP800_38A_PLAINTEXT


@pytest.mark.parametrize(("key", "ciphertext"), SP800_38A_CTR)
def test_ctr_keystream_matches_vector(key: bytes, ciphertext: bytes) -> None:
    stream = ctr_keystream(key, SP800_38A_COUNTER, 4)
    assert bytes(p ^ s for p, s in zip(SP800_38A_PLAINTEXT, stream)) == ciphertext


def test_counter_block_big_endian_and_wrap() -> None:
    assert counter_block(1) == bytes(15) + b"\x01"
    assert counter_block(0x0102) == bytes(14) + b"\x01\x02"
    assert counter_block(2**128 - 1) == b"\xff" * 16
    assert counter_block(2**128) == bytes(16)
    assert counter_block(2**128 + 5) == counter_block(5)


@pytest.mark.parametrize("key_len", [16, 24, 32])
def test_ctr_streaming_split_at_every_offset(key_len: int) -> None:
    rng = random.Random(2026 + key_len)
    key = rng.randbytes(key_len)
    iv = rng.randbytes(16)
    data = rng.randbytes(3 * 16 + 7)
    whole = ctr_xor(key, iv, data)
    for split in range(48):
        head = ctr_xor(key, iv, data[:split])
        tail = ctr_xor(key, iv, data[split:], offset=split)
        assert head + tail == whole, split
    # A three-way split through arbitrary offsets as well.
    assert (
        ctr_xor(key, iv, data[:5])
        + ctr_xor(key, iv, data[5:29], offset=5)
        + ctr_xor(key, iv, data[29:], offset=29)
    ) == whole


def test_ctr_offset_continues_sp800_38a_stream() -> None:
    ciphertext = SP800_38A_CTR[0].values[1]
    assert ctr_xor(KEY_128, SP800_38A_COUNTER, SP800_38A_PLAINTEXT[21:], offset=21) == ciphertext[21:]


def test_ctr_counter_wraps_to_zero() -> None:
    key = bytes(range(16))
    iv = b"\xff" * 16
    stream = ctr_keystream(key, iv, 3)
    assert stream[:16] == encrypt_block(key, b"\xff" * 16)
    assert stream[16:32] == encrypt_block(key, bytes(16))
    assert stream[32:] == encrypt_block(key, counter_block(1))
    data = bytes(range(40))
    assert ctr_xor(key, iv, data) == bytes(d ^ s for d, s in zip(data, stream))


def test_ctr_carry_propagates_across_bytes() -> None:
    key = bytes(range(16))
    iv = bytes(8) + b"\x00\x00\x00\x00\xff\xff\xff\xff"
    stream = ctr_keystream(key, iv, 2)
    assert stream[16:] == encrypt_block(key, bytes(8) + b"\x00\x00\x00\x01" + bytes(4))


def test_ctr_zero_length() -> None:
    key = bytes(16)
    iv = bytes(16)
    assert ctr_xor(key, iv, b"") == b""
    assert ctr_xor(key, iv, b"", offset=37) == b""
    assert ctr_keystream(key, iv, 0) == b""


def test_ctr_rejects_bad_arguments() -> None:
    with pytest.raises(ValueError):
        ctr_xor(bytes(16), bytes(15), b"x")
    with pytest.raises(ValueError):
        ctr_xor(bytes(16), bytes(16), b"x", offset=-1)
    with pytest.raises(ValueError):
        ctr_keystream(bytes(16), bytes(16), -1)
