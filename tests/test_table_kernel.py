"""The table method: scalar x86-64 T-table AES-CTR (NOT constant time), FACE none, r1, r2.

A set of the three kernels is generated in memory for the x86-64-v2 preset, assembled into a
shared library and run in-process (ctypes) against the Python model: the contract tests of
test_kernels_run.py, then cases of this method's own (counters that start inside a window,
streams cut at odd byte counts, carries at 2^32/2^40/2^128, re-keying to another size, the
FACE caches and tables compared with aesgen.model.face). Static checks: r2's steady state
really skips rounds 0-2, the kernels need no ISA extension, and every output says they are
not constant time.
"""
from __future__ import annotations

import ctypes
import json
import random
import re

import pytest

import test_kernels_run as R
from aesgen.emit.compile import compile_kernel
from aesgen.emit.generate import GenerateRequest, render_set
from aesgen.kernels import ctx_layout as L
from aesgen.kernels import table_kernel as T
from aesgen.kernels.spec import FACE_LEVELS, KEY_BITS, ROUNDS, KernelSpec
from aesgen.model import aes, face as F
from aesgen.targets import all_presets, find_preset, load_priority

FACES = ("none", "r1", "r2")
TAGGED = (0, 5, 10)


# --- the set under test ---------------------------------------------------------------------
@pytest.fixture(scope="module")
def table_set(tmp_path_factory, shared_library):
    req = GenerateRequest(find_preset("x86-64-v2"), ("table",), FACE_LEVELS, KEY_BITS,
                          "aesgen_", "aesgen generate --cpu x86-64-v2 --method table")
    files = render_set(req)
    folder = tmp_path_factory.mktemp("table_set")
    for name, text in files.items():
        (folder / name).write_text(text)
    lib = ctypes.CDLL(str(shared_library(folder)))
    kernels = R.registry(lib)
    for k in kernels.values():
        k._lib = lib
    return files, kernels


@pytest.fixture(params=FACES)
def kernel(request, table_set):
    k = table_set[1][f"table-face-{request.param}"]
    return k


def face_of(k) -> str:
    return k.face.decode()


def stream(k, ctx, key: bytes, iv: bytes, data: bytes, cuts=(), inplace=False) -> None:
    assert R.init(k, ctx, key, iv) == 0
    got = R.run_stream(k, ctx, data, cuts, inplace)
    want = R.expected(key, iv, data)
    assert got == want, (f"{k.name.decode()} AES-{8 * len(key)} iv {iv.hex()}, {len(data)} "
                         f"bytes cut at {cuts}: first wrong byte {R._first_diff(got, want)}")


# --- what the registry, header, manifest and assembly say -----------------------------------
def test_descriptor_says_not_constant_time(kernel, table_set):
    files, _ = table_set
    f = face_of(kernel)
    assert kernel.method == b"table"
    assert kernel.constant_time == 0
    assert kernel.features == 0, "the table method needs no ISA extension"
    assert kernel.ctx_size == L.layout_for(f, 4).size
    info = {k["name"]: k for k in json.loads(files["manifest.json"])["kernels"]}
    entry = info[f"table-face-{f}"]
    assert entry["constant_time"] is False and entry["features"] == []
    assert entry["warning"].startswith("NOT CONSTANT TIME")
    header = files["aesgen.h"]
    block = header[header.index(f"/* table-face-{f}:"):]
    block = block[:block.index("_wipe(void *ctx);")]
    assert "WARNING: NOT CONSTANT TIME" in block
    text = files[f"table_face_{f}.S"]
    assert "Constant time: NO" in text
    assert text.count("NOT CONSTANT TIME") >= 4            # one per entry point
    assert not re.search(r"%[xyz]mm\d", text), "a vector register in a GPR-only kernel"


def test_presets_and_priority():
    for name, p in all_presets().items():
        if p.arch == "x86_64":
            m = p.method("table")
            assert m is not None and m.interleave == 1, f"{name} lacks [methods.table]"
    order = load_priority().order
    tail = ("table-face-r2", "table-face-r1", "table-face-none")
    assert tuple(order[-3:]) == tail, "table kernels must come last: never preferred"


def test_list_warns(aesgen_exe):
    import subprocess

    out = subprocess.run([str(aesgen_exe), "list"], capture_output=True, text=True).stdout
    line = next(ln for ln in out.splitlines() if ln.strip().startswith("table "))
    assert "WARNING: NOT CONSTANT TIME" in out.split(line, 1)[1].splitlines()[1]
    assert "table (sse, 1x128-bit, NOT constant time)" in out


# --- the shared contract of every kernel (test_kernels_run.py) ------------------------------
CONTRACT = ("test_random_messages_match_model", "test_face_boundaries_match_model",
            "test_set_iv_keeps_or_rebuilds_face_tables",
            "test_set_iv_while_the_table_is_partly_filled",
            "test_set_iv_restarts_stream_and_tail", "test_init_rejects_bad_key_lengths",
            "test_wipe_zeroes_the_whole_context")


@pytest.mark.parametrize("check", CONTRACT)
def test_contract(kernel, check):
    getattr(R, check)(kernel)


# --- cases of this method's own -------------------------------------------------------------
def test_stream_cut_at_odd_byte_counts(kernel):
    """Start inside a window (in15 = 0x37), cross two window ends, every call an odd size;
    zero-length calls between them change nothing."""
    rng = random.Random(0x7AB1E)
    ctx = R.Ctx(kernel.ctx_size)
    sizes = (1, 3, 15, 17, 31, 33, 5, 255, 257, 4097, 13, 1, 7, 2049, 9)
    for bits in KEY_BITS:
        key = rng.randbytes(bits // 8)
        iv = rng.randbytes(15) + b"\x37"
        data = rng.randbytes(16 * 600 + 11)
        cuts, pos = [], 0
        for n in sizes * 4:
            pos += n
            if pos >= len(data):
                break
            cuts += [pos, pos]                     # the repeated cut is a zero-length call
        stream(kernel, ctx, key, iv, data, tuple(cuts), inplace=(bits == 192))
        ctx.check_guards()


def test_zero_length_first_and_alone(kernel):
    rng = random.Random(5)
    ctx = R.Ctx(kernel.ctx_size)
    key, iv = rng.randbytes(16), rng.randbytes(16)
    assert R.init(kernel, ctx, key, iv) == 0
    before = ctx.bytes()
    assert R.xor_call(kernel, ctx, b"", False) == b""
    assert ctx.bytes() == before, "a zero-length call changed the context"
    data = rng.randbytes(100)
    assert R.run_stream(kernel, ctx, data, (0, 0, 16, 16, 99)) == R.expected(key, iv, data)


@pytest.mark.parametrize("tail", [
    b"\xff\xff\xff\xfd",              # 2^32 carry into byte 11 (not a tag byte)
    b"\xff" * 5 + b"\x00",            # 2^40 carry right after a whole window (table complete)
    b"\xff" * 4 + b"\xf0",            # 2^40 carry (byte 10, a tag byte) mid-stream
    b"\xff" * 7 + b"\xfe",            # 2^64 carry: the low half wraps into CTR_HI
    b"\xff" * 15 + b"\xfb",           # 2^128 wrap (byte 0, a tag byte, and CTR_HI)
], ids=["2^32", "2^40-after-window", "2^40", "2^64", "2^128"])
def test_carry_points(kernel, tail):
    rng = random.Random(tail)
    ctx = R.Ctx(kernel.ctx_size)
    for bits in KEY_BITS:
        key = rng.randbytes(bits // 8)
        iv = rng.randbytes(16 - len(tail)) + tail
        data = rng.randbytes(16 * 300 + 9)
        stream(kernel, ctx, key, iv, data, (16 * 3 + 1, 16 * 20))
    ctx.check_guards()


def test_rekey_to_another_size(kernel):
    """init on a used context (another key size, a filled table) forgets the old state."""
    rng = random.Random(11)
    ctx = R.Ctx(kernel.ctx_size)
    for bits in (128, 256, 192, 128):
        key, iv = rng.randbytes(bits // 8), rng.randbytes(16)
        # a table completed (one entry at the tag's first sight, then a whole window), a
        # tail left
        data = rng.randbytes(16 * (512 + 14) + 5)
        stream(kernel, ctx, key, iv, data, (777,))
        if face_of(kernel) != "none":
            assert ctx.u64(L.FILL_COUNT) == 256
        assert R.init(kernel, ctx, bytes(20), iv) == -1   # refused: the stream goes on
        more = rng.randbytes(40)
        got = R.run_stream(kernel, ctx, more, ())
        assert got == R.expected(key, iv, data + more)[len(data):]
    ctx.check_guards()


def _counter_block(iv: bytes, blocks: int) -> bytes:
    return aes.counter_block(int.from_bytes(iv, "big") + blocks)


@pytest.fixture(params=("r1", "r2"))
def face_kernel(request, table_set):
    """The kernels that keep FACE state (level none has none)."""
    return table_set[1][f"table-face-{request.param}"]


def test_caches_and_tables_match_the_model(face_kernel):
    """After a table is complete, C1/C2 and T1/T2 in the context are those of
    aesgen.model.face for the current window; set_iv keeping bytes 0, 5, 10 keeps them."""
    kernel = face_kernel
    f = face_of(kernel)
    rng = random.Random(0xCAFE)
    ctx = R.Ctx(kernel.ctx_size)
    layout = L.layout_for(f, 4)
    for bits in KEY_BITS:
        key, iv = rng.randbytes(bits // 8), rng.randbytes(15) + b"\x10"
        # window 1 (a new tag) fills one entry, window 2 (the tag again) every entry,
        # window 3 runs from the table
        n = 512 + 0x30
        stream(kernel, ctx, key, iv, rng.randbytes(16 * n))
        keys = aes.expand_key(key)
        block = _counter_block(iv, n)
        raw = ctx.bytes()
        assert ctx.u64(L.FILL_COUNT) == 256
        assert raw[L.TAG_LO:L.TAG_LO + 8] == (int.from_bytes(block[8:], "big")
                                              & L.TAG_LO_MASK).to_bytes(8, "little")
        if f == "r1":
            assert raw[L.CACHE_R1:L.CACHE_R1 + 16] == F.rd1_cache(keys, block)
            table = b"".join(F.rd1plus_table(keys, block))
            assert raw[layout.table_r1:layout.table_r1 + 1024] == table
        else:
            assert raw[L.CACHE_R2:L.CACHE_R2 + 16] == F.rd2_cache(keys, block)
            table = b"".join(F.rd2plus_table(keys, block))
            assert raw[layout.table_r2:layout.table_r2 + 4096] == table
        # a new IV with bytes 0, 5, 10 kept: the table survives and is used
        iv2 = bytearray(rng.randbytes(16))
        for p in TAGGED:
            iv2[p] = iv[p]
        assert R.set_iv(kernel, ctx, bytes(iv2)) == 0
        msg = rng.randbytes(16 * 40 + 3)
        assert R.run_stream(kernel, ctx, msg, (21,)) == R.expected(key, bytes(iv2), msg)
        assert ctx.u64(L.FILL_COUNT) == 256
        assert ctx.bytes()[layout.table_r1 or layout.table_r2:][:len(table)] == table
        # byte 5 changed: the fill restarts at the first block, one entry at a new tag
        iv3 = bytearray(iv2)
        iv3[5] ^= 0x5A
        assert R.set_iv(kernel, ctx, bytes(iv3)) == 0
        msg = rng.randbytes(16 * 3)
        assert R.run_stream(kernel, ctx, msg, ()) == R.expected(key, bytes(iv3), msg)
        assert ctx.u64(L.FILL_COUNT) == 1 and ctx.u64(L.FILL_START) == iv3[15]
    ctx.check_guards()


# --- static: what the steady state computes -------------------------------------------------
@pytest.fixture(scope="module")
def compiled():
    return {f: compile_kernel(KernelSpec("table", f, interleave=1)) for f in FACES}


def _steady(ck, bits: int, phase: str | None = None):
    return [ins for ins in ck.functions["xor_stream"].instructions()
            if ins.region == f"steady-{bits}" and (phase is None or ins.phase == phase)]


@pytest.mark.parametrize("bits", KEY_BITS)
def test_r2_steady_state_skips_rounds_0_2(compiled, bits):
    none, r1, r2 = (compiled[f] for f in FACES)
    round_cost = 44                          # 12 movzx, 12 shr, 16 lookups, 4 key XORs
    # none: rounds 0, 1, 2 per block; r1: round 2 only; r2: 4 loads + 4 XORs
    assert len(_steady(none, bits, "rounds_0_2")) == 2 + 2 * round_cost
    assert len(_steady(r1, bits, "rounds_0_2")) < round_cost
    start = _steady(r2, bits, "rounds_0_2")
    assert len(start) == 8
    assert [i.name for i in start] == ["mov", "xor"] * 4
    discs = sorted(op.disp for i in start for op in i.operands if hasattr(op, "disp"))
    assert discs == sorted([L.CACHE_R2 + 4 * c for c in range(4)]
                           + [L.HEADER_END + 4 * c for c in range(4)])
    # the rest is the same rounds 3..Nr for every level, and r2 never builds the counter
    for ck in (none, r1, r2):
        assert len(_steady(ck, bits, "rounds_3_nr")) == (ROUNDS[bits] - 2) * round_cost
    assert not [i for i in _steady(r2, bits) if i.name == "bswap"]
    assert [i for i in _steady(none, bits) if i.name == "bswap"]
    per_block = {f: compiled[f].stats()["steady_state"][str(bits)]["per_block"] for f in FACES}
    assert per_block["r2"]["rounds_0_2"] == 8
    # two rounds and the counter saved, less r2's window and fill checks (4 a block)
    assert per_block["none"]["total"] - per_block["r2"]["total"] >= 2 * round_cost - 4
    assert per_block["none"]["total"] > per_block["r1"]["total"] > per_block["r2"]["total"]


def test_no_extension_and_registers_fit(compiled):
    for f, ck in compiled.items():
        assert ck.features == (), f"table-face-{f} needs {ck.features}"
        assert not ck.constant_time
        assert all(not fn.features for fn in ck.functions.values())


def test_round_tables_are_the_aes_round():
    """Te0..Te3 and the last-round tables give FIPS-197 rounds on little-endian columns."""
    data = T.round_tables()
    te = [[int.from_bytes(data[o + 4 * x:o + 4 * x + 4], "little") for x in range(256)]
          for o in T.TE + T.TE_LAST]
    rng = random.Random(3)
    for _ in range(50):
        state, rk = rng.randbytes(16), rng.randbytes(16)
        s = [int.from_bytes(state[4 * c:4 * c + 4], "little") for c in range(4)]
        for last, want in ((False, aes.aes_round(state, rk)),
                           (True, aes.aes_final_round(state, rk))):
            base = 4 if last else 0
            out = b""
            for c in range(4):
                w = int.from_bytes(rk[4 * c:4 * c + 4], "little")
                for r in range(4):
                    w ^= te[base + r][(s[(c + r) % 4] >> (8 * r)) & 0xFF]
                out += w.to_bytes(4, "little")
            assert out == want
