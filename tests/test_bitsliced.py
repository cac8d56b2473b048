"""Bit-sliced kernels: the transpose network, the round's parts, and runs of the encodings
no committed preset carries (the committed ones run in test_kernels_run and the harness)."""
from __future__ import annotations

import ctypes
import random
import subprocess

import pytest

from aesgen.dsl.operands import Mem
from aesgen.emit.compile import compile_kernel
from aesgen.kernels import bitsliced as B
from aesgen.kernels.slice_layout import IDENTITY, SHIFT_ROWS, apply, inverse, layout
from aesgen.kernels.spec import KernelSpec
from aesgen.model.aes import ctr_xor, gf_mul
from aesgen.report.method_details import bitsliced_breakdown, face_savings

from test_kernels_run import cpu_flags


# --- the transpose, simulated on Python ints (8 registers of 16 bytes) ---------------------
def _swapmove(regs, hi, lo, n, mask):
    m = int.from_bytes(bytes([mask]) * 16, "little")
    a, c = regs[hi], regs[lo]
    t = ((c >> n) ^ a) & m
    regs[hi], regs[lo] = a ^ t, c ^ (t << n)


def _transpose(regs):
    regs = list(regs)
    for n, mask, pairs in B.SWAPMOVES:
        for hi, lo in pairs:
            _swapmove(regs, hi, lo, n, mask)
    return regs


def test_transpose_puts_bit_i_of_every_byte_of_block_j_at_slice_i_bit_j():
    rng = random.Random(5)
    blocks = [bytes(rng.randrange(256) for _ in range(16)) for _ in range(8)]
    slices = _transpose([int.from_bytes(x, "little") for x in blocks])
    for i in range(8):
        s = slices[i].to_bytes(16, "little")
        for p in range(16):
            for j in range(8):
                assert (s[p] >> j) & 1 == (blocks[j][p] >> i) & 1
    # the network is its own inverse: the same code transposes back
    assert _transpose(slices) == [int.from_bytes(x, "little") for x in blocks]


def test_x86_layout_leaves_the_last_round_in_fips_order():
    """The drift is anchored at the last round (the keystream leaves without a shuffle);
    tests/test_neon_bitsliced.py checks the layout algebra against AES for that origin."""
    for nr in (10, 12, 14):
        assert layout(nr, nr) == IDENTITY
        assert layout(nr - 4, nr) == IDENTITY and layout(nr - 1, nr) != IDENTITY
    # FIPS-197 5.1.2 in FIPS byte order (q = 4 * col + row): s'[r, c] = s[r, c + r]
    state = list(range(16))
    assert apply(SHIFT_ROWS, state) == [4 * ((c + r) % 4) + r for c in range(4) for r in range(4)]
    assert apply(inverse(SHIFT_ROWS), apply(SHIFT_ROWS, state)) == state
    # one round of drift is ShiftRows^-1
    assert layout(1, 0) == inverse(SHIFT_ROWS)


def _mix_columns_reference(col):
    return [gf_mul(2, col[r]) ^ gf_mul(3, col[(r + 1) % 4]) ^ col[(r + 2) % 4] ^
            col[(r + 3) % 4] for r in range(4)]


def test_bitsliced_mix_columns_formula_matches_fips197():
    """out = 2t ^ rot1(a) ^ rot2(t), t = a ^ rot1(a), with 2t as the engine computes it."""
    rng = random.Random(9)
    for _ in range(50):
        col = [rng.randrange(256) for _ in range(4)]
        rot = lambda x, k: [x[(r + k) % 4] for r in range(4)]
        t = [a ^ b for a, b in zip(col, rot(col, 1))]
        # 2t slice by slice, as _mix_columns does: bit i <- bit i-1, bit 7 into 0, 1, 3, 4
        two_t = []
        for x in t:
            y = 0
            for i in range(8):
                src = (x >> ((i - 1) % 8)) & 1
                if i in (1, 3, 4):
                    src ^= (x >> 7) & 1
                y |= src << i
            two_t.append(y)
        out = [a ^ b ^ c for a, b, c in zip(two_t, rot(col, 1), rot(t, 2))]
        assert out == _mix_columns_reference(col)


@pytest.mark.parametrize("encoding,width", [("sse", 128), ("avx", 256), ("evex", 512)])
def test_round_parts_counted_against_seed_004(encoding, width):
    d = bitsliced_breakdown(KernelSpec("bitsliced", "none", (128,), 8, encoding, "t_", width))
    assert d["sbox_constant"] == 0x63
    assert d["sbox"] < 163                          # seed 004: 163 instructions
    # seed 004: MixColumns 43 and ShiftRows 8 PSHUFBs; here ShiftRows is a change of
    # layout and the rotations are PSHUFBs (destructive on SSE: a copy each, which the
    # CPU renames away), plus the key's 8 XORs
    assert d["shift_rows"] == 0
    if encoding == "sse":
        assert (d["mix_columns_and_key"], d["mix_columns_copies"]) == (43 + 8, 8)
    else:
        assert d["mix_columns_and_key"] <= 43 + 8 and d["mix_columns_copies"] == 0


# --- compiled kernels ------------------------------------------------------------------------
@pytest.fixture(scope="module")
def compiled():
    return {f: compile_kernel(KernelSpec("bitsliced", f, (128, 192, 256), 8, "sse", "t_", 128))
            for f in ("none", "r2")}


def test_no_aes_or_gf_instruction_and_no_secret_index(compiled):
    for ck in compiled.values():
        for fn in ck.functions.values():
            for ins in fn.instructions():
                bare = ins.name.lstrip("v")
                assert not bare.startswith(("aes", "gf2p8", "pclmul")), ins.name
                if ins.phase in ("transpose", "rounds_0_2", "rounds_3_nr"):
                    # state, round keys, spills and FACE entries are addressed by constants
                    # and public pointers: no index register in the rounds
                    for op in ins.operands:
                        assert not (isinstance(op, Mem) and op.index is not None), \
                            f"{fn.symbol}: indexed operand in {ins.phase}: {ins.name}"


def test_face_r2_skips_rounds_0_2(compiled):
    rows = {r["face"]: r for r in face_savings(list(compiled.values()))}
    assert rows["none"]["up_to_round_2_per_block"] > 40
    assert rows["r2"]["up_to_round_2_per_block"] < 3
    # the transposes are paid at every level (r2's entry layout is the identity for
    # AES-128: no entry shuffle there)
    assert rows["none"]["transpose_per_block"] >= rows["r2"]["transpose_per_block"] > 0


# --- native runs of encodings no preset ships ----------------------------------------------
def _load(tmp_path, spec: KernelSpec):
    """Compile ``spec`` into a shared library; its init and xor_stream, and a 64-aligned
    context (with the buffer that owns it, to keep alive)."""
    ck = compile_kernel(spec)
    src = tmp_path / "k.S"
    src.write_text(".text\n" + "\n".join(ck.texts.values()) +
                   '\n.section .note.GNU-stack,"",@progbits\n')
    lib_path = tmp_path / "k.so"
    subprocess.run(["gcc", "-shared", "-fPIC", "-o", str(lib_path), str(src)], check=True)
    lib = ctypes.CDLL(str(lib_path))
    vp = ctypes.c_void_p
    init, xs = lib[spec.symbol("init")], lib[spec.symbol("xor_stream")]
    init.argtypes = [vp, vp, ctypes.c_size_t, vp]
    xs.argtypes = [vp, vp, vp, ctypes.c_size_t]
    buf = ctypes.create_string_buffer(ck.ctx_size + 64)
    return ck, init, xs, (ctypes.addressof(buf) + 63) // 64 * 64, buf


NEEDS = {"avx": {"avx", "avx2", "ssse3"}, "evex": {"avx512f", "avx512bw", "avx512vl"}}


@pytest.mark.parametrize("face", ["none", "r1", "r2"])
@pytest.mark.parametrize("encoding,width", [("avx", 128), ("evex", 128), ("evex", 256)])
def test_uncommitted_encodings_match_the_model(tmp_path, encoding, width, face):
    missing = NEEDS[encoding] - cpu_flags()
    if missing:
        pytest.skip(f"this CPU lacks {', '.join(sorted(missing))}")
    spec = KernelSpec("bitsliced", face, (128, 256), 8, encoding, "t_", width)
    ck, init, xs, ctx, _buf = _load(tmp_path, spec)
    rng = random.Random(width + len(face))
    for bits in (128, 256):
        for in15, n in ((0, 4096), (250, 700), (3, 1000), (255, 33)):
            key = bytes(rng.randrange(256) for _ in range(bits // 8))
            iv = bytes(rng.randrange(256) for _ in range(15)) + bytes([in15])
            data = bytes(rng.randrange(256) for _ in range(n))
            assert init(ctx, key, len(key), iv) == 0
            out = ctypes.create_string_buffer(n)
            cut = rng.randrange(n)
            xs(ctx, out, data, cut)
            xs(ctx, ctypes.byref(out, cut), data[cut:], n - cut)
            assert out.raw == ctr_xor(key, iv, data), (bits, in15, n, cut)


def test_aarch64_references_are_marked_quoted_and_show_our_predictions():
    from aesgen.report.method_details import render_aarch64_references
    rows = [{"kernel": "neon-tbl-face-r2", "mode": "ctr", "key_bits": 128,
             "mca": {"cortex-a53": {"cycles_per_byte": 11.17}}},
            {"kernel": "neon-tbl-face-r2", "mode": "ctr", "key_bits": 256,
             "mca": {"cortex-a53": {"cycles_per_byte": 16.0}}},
            {"kernel": "neon-tbl-gcm-r2", "mode": "gcm", "key_bits": 128,
             "mca": {"cortex-a53": {"cycles_per_byte": 18.22},
                     "cortex-a72": {"cycles_per_byte": 15.26}}}]
    text = render_aarch64_references(rows, ("cortex-a53", "cortex-a72"))
    assert "neon-tbl-face-r2" in text and "11.17" in text and "16.00" not in text
    assert text.count("quoted from OpenSSL's file header, not measured here") == 2
    assert "18.10" in text and "17.50" in text and "seed 003" in text
    # GCM beside OpenSSL's, BoringSSL's and Linux's AArch64 GCM figures, each marked quoted
    gcm = text[text.index("AES-128-GCM"):]
    assert "neon-tbl-gcm-r2" in gcm and "cortex-a53 18.22, cortex-a72 15.26" in gcm
    quoted = [ln for ln in gcm.splitlines() if "8.39" in ln or "29.00" in ln or "2.37" in ln]
    assert len(quoted) == 3 and all("quoted" in ln for ln in quoted), quoted
    assert "BoringSSL" in gcm and "Linux" in gcm
    # without a CTR row on the Cortex-A53 model, no CTR references
    assert "vpaes" not in render_aarch64_references(rows[2:], ("cortex-a72",))


# --- FACE in slice form: the table and cache in the context, against the model ----------
def _mask_slices(state: bytes) -> list[bytes]:
    """Slices of a state held by every block: slice i byte q = 0xff where bit i of byte q."""
    return [bytes(0xFF if (x >> i) & 1 else 0 for x in state) for i in range(8)]


def _group_slices(states: list[bytes]) -> list[bytes]:
    """Slices of 8 blocks' states (block j at bit j), via the simulated transpose."""
    regs = _transpose([int.from_bytes(s, "little") for s in states])
    return [r.to_bytes(16, "little") for r in regs]


@pytest.mark.parametrize("face", ["r1", "r2"])
def test_face_table_and_cache_are_kept_in_slice_form(tmp_path, face):
    from aesgen.kernels import ctx_layout as L
    from aesgen.kernels.ctr_kernel import Kernel
    from aesgen.kernels.slice_layout import apply
    from aesgen.model import face as F
    from aesgen.model.aes import expand_key

    spec = KernelSpec("bitsliced", face, (128, 192), 8, "sse", "t_", 128)
    ck, init, xs, ctx, _buf = _load(tmp_path, spec)
    kernel = Kernel(spec)
    skip = {"r1": 1, "r2": 2}[face]
    table = kernel.layout.table_r1 if face == "r1" else kernel.layout.table_r2
    engine = kernel.engine
    rng = random.Random(len(face))
    for bits in (128, 192):
        nr = {128: 10, 192: 12}[bits]
        key = bytes(rng.randrange(256) for _ in range(bits // 8))
        iv = bytes(rng.randrange(256) for _ in range(15)) + bytes([77])   # starts mid-group
        n = 16 * 300 + 5                      # completes the table, ends in a new window
        data = bytes(rng.randrange(256) for _ in range(n))
        assert init(ctx, key, len(key), iv) == 0
        out = ctypes.create_string_buffer(n)
        xs(ctx, out, data, n)
        assert out.raw == ctr_xor(key, iv, data)
        raw = ctypes.string_at(ctx, ck.ctx_size)
        assert int.from_bytes(raw[L.FILL_COUNT:L.FILL_COUNT + 8], "little") == 256
        flags = kernel.layout.offset("GROUP_FLAGS")
        assert raw[flags:flags + 32] == b"\x01" * 32, "every group marked filled once"
        rk = expand_key(key)
        last = (int.from_bytes(iv, "big") + 300) % (1 << 128)     # block of the last window
        block = last.to_bytes(16, "big")
        pi = layout(skip, nr)
        diffs = F._difference_table(rk, block, skip)          # s_f(base|v) ^ C_f, FIPS order
        for g in range(32):
            want = _group_slices([bytes(apply(pi, list(d))) for d in diffs[8 * g:8 * g + 8]])
            got = raw[table + 128 * g:table + 128 * g + 128]
            assert got == b"".join(want), f"AES-{bits} {face}: group {g} of the table"
        cache = F.rd1_cache(rk, block) if face == "r1" else F.rd2_cache(rk, block)
        start = kernel.layout.extra + engine.sliced_cache_offset()
        got = raw[start:start + 128]
        assert got == b"".join(_mask_slices(bytes(apply(pi, list(cache))))), "sliced cache"
