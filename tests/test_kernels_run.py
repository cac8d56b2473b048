"""Run the committed kernels in-process (ctypes) against the Python AES-CTR model.

Each kernel of each generated/<preset>/ set is its own test item. The model is slow (a few
hundred microseconds a block), so the expected outputs are computed once per case and shared
by every kernel: all kernels see the same fixed-seed cases.
"""
from __future__ import annotations

import ctypes
import functools
import json
import random
from pathlib import Path

import pytest

from aesgen.kernels import ctx_layout as L
from aesgen.kernels.bitsliced import BitslicedEngine
from aesgen.kernels.spec import KernelSpec
from aesgen.model.aes import ctr_xor, expand_key
from aesgen.paths import GENERATED
from aesgen.targets import load_features

# --- the registry, as ctypes sees aesgen.h --------------------------------------------
VP = ctypes.c_void_p
INIT = ctypes.CFUNCTYPE(ctypes.c_int, VP, VP, ctypes.c_size_t, VP)
SET_IV = ctypes.CFUNCTYPE(ctypes.c_int, VP, VP)
XOR_STREAM = ctypes.CFUNCTYPE(None, VP, VP, VP, ctypes.c_size_t)
WIPE = ctypes.CFUNCTYPE(None, VP)


class Kernel(ctypes.Structure):
    _fields_ = [("name", ctypes.c_char_p), ("method", ctypes.c_char_p),
                ("face", ctypes.c_char_p), ("constant_time", ctypes.c_int),
                ("features", ctypes.c_uint64), ("ctx_size", ctypes.c_size_t),
                ("init", INIT), ("set_iv", SET_IV), ("xor_stream", XOR_STREAM),
                ("wipe", WIPE)]


def registry(lib: ctypes.CDLL, prefix: str = "aesgen_") -> dict[str, Kernel]:
    count = ctypes.c_size_t.in_dll(lib, f"{prefix}kernel_count").value
    table = (Kernel * count).in_dll(lib, f"{prefix}kernels")
    return {k.name.decode(): k for k in table}


# --- what this CPU has ------------------------------------------------------------------
FEATURES = load_features("x86_64")


@functools.cache
def cpu_flags() -> frozenset[str]:
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("flags"):
            return frozenset(line.split(":", 1)[1].split())
    return frozenset()


def missing_features(names) -> list[str]:
    return [n for n in names if FEATURES[n].cpuinfo not in cpu_flags()]


# --- the kernels under test: one item per (preset, kernel) of the committed sets -------
def _host_manifests() -> list[Path]:
    """The committed sets this machine runs natively (manifest "arch" is the host's; the
    AArch64 sets run under qemu in tests/test_aarch64_harness.py and the harness)."""
    from aesgen.build.configure import host_arch

    return [m for m in sorted(GENERATED.glob("*/manifest.json"))
            if json.loads(m.read_text()).get("arch", "x86_64") == host_arch()]


def _committed_kernels():
    params = []
    for manifest in _host_manifests():
        data = json.loads(manifest.read_text())
        for k in data["kernels"]:
            kid = f"{manifest.parent.name}:{k['name']}"
            params.append(pytest.param((manifest.parent, k), id=kid))
    return params


KERNELS = _committed_kernels()


@pytest.fixture
def kernel(request, shared_library):
    set_dir, info = request.param
    missing = missing_features(info["features"])
    if missing:
        pytest.skip(f"this CPU lacks {', '.join(missing)} (needed by {set_dir.name}/"
                    f"{info['name']})")
    lib = ctypes.CDLL(str(shared_library(set_dir)))
    kernels = registry(lib)
    assert info["name"] in kernels, f"registry of {set_dir.name} lacks {info['name']}"
    k = kernels[info["name"]]
    k._lib = lib            # keep the library loaded while the struct is used
    return k


def with_kernels(fn):
    return pytest.mark.parametrize("kernel", KERNELS, indirect=True)(fn)


# --- memory with guards -------------------------------------------------------------------
def _pattern(n: int, seed: int) -> bytes:
    return random.Random(seed).randbytes(n)


class Ctx:
    """ctx_size bytes, 64-byte aligned, with 64+ guard bytes before and ctx_size after."""

    def __init__(self, size: int) -> None:
        self.size = size
        total = 64 + 63 + 2 * size
        self.raw = ctypes.create_string_buffer(_pattern(total, size), total)
        base = ctypes.addressof(self.raw)
        self.addr = (base + 64 + 63) & ~63
        self.off = self.addr - base
        self.pristine = self.raw.raw

    def bytes(self) -> bytes:
        return self.raw.raw[self.off:self.off + self.size]

    def u64(self, offset: int) -> int:
        return int.from_bytes(self.bytes()[offset:offset + 8], "little")

    def check_guards(self) -> None:
        now = self.raw.raw
        assert now[:self.off] == self.pristine[:self.off], "bytes before the ctx changed"
        end = self.off + self.size
        after, pristine = now[end:], self.pristine[end:]
        assert after == pristine, (f"the {self.size} bytes after the ctx changed (first at "
                                   f"+{_first_diff(after, pristine)})")


def _first_diff(a: bytes, b: bytes) -> int:
    return next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))


GUARD = 48


def xor_call(k: Kernel, ctx: Ctx, data: bytes, inplace: bool) -> bytes:
    """One xor_stream call; the bytes around in and out must stay untouched."""
    n = len(data)
    src_init = _pattern(GUARD, n) + data + _pattern(GUARD, n + 1)
    src = ctypes.create_string_buffer(src_init, len(src_init))
    if inplace:
        dst, dst_init = src, src_init
    else:
        dst_init = _pattern(2 * GUARD + n, n + 2)
        dst = ctypes.create_string_buffer(dst_init, len(dst_init))
    k.xor_stream(ctx.addr, ctypes.addressof(dst) + GUARD, ctypes.addressof(src) + GUARD, n)
    out = dst.raw
    assert out[:GUARD] == dst_init[:GUARD], f"xor_stream wrote before out (len {n})"
    assert out[GUARD + n:] == dst_init[GUARD + n:], f"xor_stream wrote past out+len (len {n})"
    if not inplace:
        assert src.raw == src_init, f"xor_stream changed its input (len {n})"
    return out[GUARD:GUARD + n]


def run_stream(k: Kernel, ctx: Ctx, data: bytes, cuts, inplace: bool = False) -> bytes:
    out, pos = bytearray(), 0
    for end in list(cuts) + [len(data)]:
        out += xor_call(k, ctx, data[pos:end], inplace)
        pos = end
    return bytes(out)


def init(k: Kernel, ctx: Ctx, key: bytes, iv: bytes) -> int:
    kb, ivb = ctypes.create_string_buffer(key, len(key)), ctypes.create_string_buffer(iv, 16)
    return k.init(ctx.addr, ctypes.addressof(kb), len(key), ctypes.addressof(ivb))


def set_iv(k: Kernel, ctx: Ctx, iv: bytes) -> int:
    ivb = ctypes.create_string_buffer(iv, 16)
    return k.set_iv(ctx.addr, ctypes.addressof(ivb))


# --- the model, memoised: every kernel uses the same cases --------------------------------
@functools.cache
def round_keys(key: bytes) -> tuple[bytes, ...]:
    return tuple(expand_key(key))


@functools.cache
def expected(key: bytes, iv: bytes, data: bytes, offset: int = 0) -> bytes:
    return ctr_xor(list(round_keys(key)), iv, data, offset)


def _cuts(rng: random.Random, length: int, max_cuts: int = 4) -> tuple[int, ...]:
    return tuple(sorted(rng.randint(0, length) for _ in range(rng.randint(0, max_cuts))))


def _random_cases():
    rng = random.Random(0xAE5)
    cases = []
    for i in range(40):
        key = rng.randbytes((16, 24, 32)[i % 3])
        iv = rng.randbytes(16)
        if i % 4 == 1:                       # start close to the end of a FACE window
            iv = iv[:15] + bytes([rng.randint(240, 255)])
        size = rng.choice((rng.randint(0, 40), rng.randint(0, 700), rng.randint(0, 9000)))
        data = rng.randbytes(size)
        cases.append((key, iv, data, _cuts(rng, size), i % 5 == 2))   # some in place
    return cases


RANDOM_CASES = _random_cases()


def _edge_cases():
    """IVs at the FACE boundaries: window ends (in15) and carries into bytes 11 (2^32),
    10 (2^40), 7 (2^64), 5 (2^80), 0 (2^120) and the wrap at 2^128."""
    rng = random.Random(0xFACE)
    keys = [rng.randbytes(n) for n in (16, 24, 32)]
    cases = []

    def add(name, tail: bytes, blocks: int):
        i = len(cases)
        iv = rng.randbytes(16 - len(tail)) + tail
        size = 16 * blocks + rng.randint(0, 15)
        data = rng.randbytes(size)
        cases.append((name, keys[i % 3], iv, data, _cuts(rng, size, 3)))

    for in15 in (250, 251, 252, 253, 254, 255, 0):
        add(f"in15={in15}", bytes([in15]), 20)
    for low in (0xF0, 0xF8, 0xFF):
        add(f"2^32-{256 - low}", b"\xff\xff\xff" + bytes([low]), 24)
    for low in (0xF0, 0xFC, 0xFF):
        add(f"2^40-{256 - low}", b"\xff" * 4 + bytes([low]), 24)
    add("2^64-16", b"\xff" * 7 + b"\xf0", 24)
    for low in (0xF0, 0xFF):
        add(f"2^128-{256 - low}", b"\xff" * 15 + bytes([low]), 24)
    # Two whole windows before the carry (fill the table, then use it), then the carry
    # reaches counter byte 10 (2^40), 7 (2^64), 5 (2^80), 0 (2^120) or wraps (2^128): the
    # table must be rebuilt where a tagged byte (0, 5, 10) changed. Every key size.
    for bits in (40, 64, 80, 120, 128):
        ones = bits // 8
        for _ in range(3):
            add(f"2^{bits}-512", b"\xff" * (ones - 2) + b"\xfe\x00", 552)
    return cases


EDGE_CASES = _edge_cases()


# =========================================================================================
@with_kernels
def test_registry_entry_matches_manifest(kernel, request):
    set_dir, info = request.node.callspec.params["kernel"]
    assert kernel.method.decode() == info["method"]
    assert kernel.face.decode() == info["face"]
    r1_entry = 4 if info["width"] == 128 else 16
    engine_fields = []
    if info["method"] == "bitsliced":       # bit-sliced round keys and buffers follow
        engine = BitslicedEngine(KernelSpec("bitsliced", info["face"], width=info["width"],
                                            encoding=info["encoding"]))
        engine_fields, r1_entry = engine.context_fields(), 16   # rd1+ entries in slice form
    assert kernel.ctx_size == info["ctx_size"] == L.layout_for(info["face"], r1_entry,
                                                               engine_fields).size
    assert kernel.constant_time == int(info["constant_time"])
    bits = sum(1 << FEATURES[f].bit for f in info["features"])
    assert kernel.features == bits


@with_kernels
def test_random_messages_match_model(kernel):
    ctx = Ctx(kernel.ctx_size)
    for n, (key, iv, data, cuts, inplace) in enumerate(RANDOM_CASES):
        assert init(kernel, ctx, key, iv) == 0
        got = run_stream(kernel, ctx, data, cuts, inplace)
        want = expected(key, iv, data)
        assert got == want, (f"case {n}: AES-{8 * len(key)}, iv {iv.hex()}, {len(data)} bytes "
                             f"cut at {cuts}, inplace={inplace}: first wrong byte "
                             f"{_first_diff(got, want)}")
        ctx.check_guards()


@with_kernels
def test_face_boundaries_match_model(kernel):
    ctx = Ctx(kernel.ctx_size)
    for name, key, iv, data, cuts in EDGE_CASES:
        assert init(kernel, ctx, key, iv) == 0
        got = run_stream(kernel, ctx, data, cuts)
        want = expected(key, iv, data)
        assert got == want, (f"{name}: AES-{8 * len(key)}, iv {iv.hex()}, {len(data)} bytes "
                             f"cut at {cuts}: first wrong byte {_first_diff(got, want)}")
        ctx.check_guards()


def _change(iv: bytes, positions, rng: random.Random) -> bytes:
    b = bytearray(iv)
    for p in positions:
        b[p] ^= rng.randint(1, 255)
    return bytes(b)


@with_kernels
def test_set_iv_keeps_or_rebuilds_face_tables(kernel):
    rng = random.Random(510)
    face = kernel.face.decode()
    ctx = Ctx(kernel.ctx_size)
    tagged = (0, 5, 10)
    untagged = [p for p in range(16) if p not in tagged]
    for key in (rng.randbytes(16), rng.randbytes(24), rng.randbytes(32)):
        iv1 = rng.randbytes(16)
        # more than two windows, ending inside a block (a keystream tail is left over)
        data = rng.randbytes(8192 + 16 * 8 + 7)
        assert init(kernel, ctx, key, iv1) == 0
        assert run_stream(kernel, ctx, data, (4000,)) == expected(key, iv1, data)
        if face != "none":
            assert ctx.u64(L.FILL_COUNT) == 256, "the table is not complete after 2 windows"
        for p in (None,) + tagged:
            # with the table complete for iv1's bytes 0, 5, 10: keep them, or change one
            iv = _change(iv1, untagged if p is None else [p], rng)
            what = "bytes 0, 5, 10 kept" if p is None else f"byte {p} changed"
            assert set_iv(kernel, ctx, iv) == 0
            msg = rng.randbytes(rng.randint(600, 1400))
            got = run_stream(kernel, ctx, msg, _cuts(rng, len(msg), 2))
            assert got == expected(key, iv, msg), f"after set_iv ({what}), iv {iv.hex()}"
            if face != "none":
                fill = ctx.u64(L.FILL_COUNT)
                if p is None:
                    assert fill == 256, f"set_iv ({what}) lost the complete table"
                else:
                    assert fill < 256, f"set_iv ({what}) kept a table built for other bytes"
            if p is not None:
                # back to iv1's tagged bytes, a tag the table no longer has: one batch is
                # filled at its first sight, the next window (the tag seen again) fills all
                iv = _change(iv1, untagged, rng)
                assert set_iv(kernel, ctx, iv) == 0
                msg = rng.randbytes(8192 + 16 * 9 + 5)
                got = run_stream(kernel, ctx, msg, _cuts(rng, len(msg), 2))
                assert got == expected(key, iv, msg), f"back to iv1's tag, iv {iv.hex()}"
                if face != "none":
                    assert ctx.u64(L.FILL_COUNT) == 256
            ctx.check_guards()


@with_kernels
def test_set_iv_while_the_table_is_partly_filled(kernel):
    """Same bytes 0, 5, 10 but a jump elsewhere in the window: the fill must restart (or
    continue only when the new block is exactly the next entry to fill)."""
    rng = random.Random(4242)
    ctx = Ctx(kernel.ctx_size)
    for key in (rng.randbytes(16), rng.randbytes(32)):
        iv1 = rng.randbytes(15) + b"\x10"
        assert init(kernel, ctx, key, iv1) == 0
        head = rng.randbytes(16 * 40 + 3)      # a new tag: one batch of entries from 0x10
        assert run_stream(kernel, ctx, head, ()) == expected(key, iv1, head)
        for in15 in (0x80, 0x39, 0x11):    # elsewhere; the next entry; inside the filled run
            iv = _change(iv1[:15], [1, 2, 3, 14], rng) + bytes([in15])
            assert set_iv(kernel, ctx, iv) == 0
            # completes the table (the rest of this window, then the next once it reaches
            # the filled batch again), then uses it
            msg = rng.randbytes(16 * 556 + 9)
            got = run_stream(kernel, ctx, msg, _cuts(rng, len(msg), 2))
            assert got == expected(key, iv, msg), f"set_iv to in15={in15:#x}, iv {iv.hex()}"
            if kernel.face.decode() != "none":
                assert ctx.u64(L.FILL_COUNT) == 256
            # leave a partly filled table again for the next jump
            assert init(kernel, ctx, key, iv1) == 0
            assert run_stream(kernel, ctx, head, ()) == expected(key, iv1, head)
        ctx.check_guards()


def _table_of(info: dict) -> tuple[int, int]:
    """(offset, bytes an entry) of the FACE table of a committed kernel, from the layout the
    generator builds for its manifest entry."""
    spec = KernelSpec(info["method"], info["face"], interleave=info["interleave"],
                      encoding=info["encoding"], width=info["width"])
    if info["method"] == "table":
        from aesgen.kernels.table_kernel import TableKernel
        layout = TableKernel(spec).layout
    else:
        from aesgen.kernels.ctr_kernel import Kernel as CtrKernel
        layout = CtrKernel(spec).layout
    if info["face"] == "r1":
        return layout.table_r1, layout.r1_entry
    return layout.table_r2, 16


@with_kernels
def test_short_messages_from_one_in15_use_the_table_from_the_second(kernel, request):
    """DESIGN.md, FACE: validity per entry (or range), filling admitted on second sight.
    1 KiB messages that all start at in15 = 1 under one IV: the first message (a tag seen
    for the first time) fills one batch of entries, from in15 = 1; the second starts from
    them and fills the rest of 1..64; the third runs from the table. Shown by reading the
    context and by corrupting one filled entry: the next message then differs from the model
    exactly in the block(s) that entry serves. A fresh IV (new bytes 0, 5, 10) gets one
    batch again."""
    face = kernel.face.decode()
    if face == "none":
        pytest.skip("FACE none keeps no table")
    info = request.node.callspec.params["kernel"][1]
    grouped = info["method"] == "bitsliced"
    first = 1 if info["method"] == "table" else info["interleave"] * info["width"] // 128
    table, entry = _table_of(info)
    rng = random.Random(1420)
    ctx = Ctx(kernel.ctx_size)
    key, iv = rng.randbytes(16), rng.randbytes(15) + b"\x01"
    msg1, msg2 = rng.randbytes(1024), rng.randbytes(1024)

    def run() -> tuple[int, int]:          # the run of filled entries (kernels/face_fill.py)
        return ctx.u64(L.FILL_START), ctx.u64(L.FILL_COUNT)

    assert init(kernel, ctx, key, iv) == 0
    assert run_stream(kernel, ctx, msg1, ()) == expected(key, iv, msg1)
    if not grouped:
        assert run() == (1, first), "a new tag fills one batch"
    assert set_iv(kernel, ctx, iv) == 0
    assert run_stream(kernel, ctx, msg2, _cuts(rng, len(msg2), 2)) == expected(key, iv, msg2)
    if not grouped:
        assert run() == (1, 64), "the second message keeps the first's entries and fills on"
    # corrupt the entry of in15 = 9 (block 8 of a message starting at in15 = 1)
    at = ctx.off + table + 9 * entry
    ctypes.memmove(ctypes.addressof(ctx.raw) + at, bytes([ctx.raw.raw[at] ^ 0x5A]), 1)
    assert set_iv(kernel, ctx, iv) == 0
    got, want = run_stream(kernel, ctx, msg2, ()), expected(key, iv, msg2)
    wrong = [i for i in range(64) if got[16 * i:16 * i + 16] != want[16 * i:16 * i + 16]]
    if grouped:              # an entry is a group's slices: some block of that group
        group = info["interleave"] * info["width"] // 128
        assert wrong and all((i + 1) // group == 9 // group for i in wrong), wrong
    else:
        assert wrong == [8], f"blocks computed from the corrupted entry: {wrong}"
        assert run() == (1, 64), "the third message changed the run it should only read"
        fresh = bytes([iv[0] ^ 1]) + iv[1:]
        assert set_iv(kernel, ctx, fresh) == 0
        assert run_stream(kernel, ctx, msg1, ()) == expected(key, fresh, msg1)
        assert run() == (1, first), "a fresh IV (byte 0 changed) fills one batch again"
    ctx.check_guards()


@with_kernels
def test_set_iv_restarts_stream_and_tail(kernel):
    rng = random.Random(77)
    ctx = Ctx(kernel.ctx_size)
    key, iv = rng.randbytes(24), rng.randbytes(16)
    assert init(kernel, ctx, key, iv) == 0
    xor_call(kernel, ctx, bytes(37), False)          # leaves 11 keystream bytes unused
    assert set_iv(kernel, ctx, iv) == 0
    data = rng.randbytes(100)
    assert run_stream(kernel, ctx, data, (5, 5, 21)) == expected(key, iv, data)
    ctx.check_guards()


@with_kernels
def test_init_rejects_bad_key_lengths(kernel):
    ctx = Ctx(kernel.ctx_size)
    for n in (0, 1, 15, 17, 23, 25, 31, 33, 64):
        assert init(kernel, ctx, bytes(range(n)), bytes(16)) == -1, f"key_len {n}"
    for n in (16, 24, 32):
        assert init(kernel, ctx, bytes(range(n)), bytes(16)) == 0, f"key_len {n}"
    ctx.check_guards()


@with_kernels
def test_wipe_zeroes_the_whole_context(kernel):
    rng = random.Random(3)
    ctx = Ctx(kernel.ctx_size)
    key, iv = rng.randbytes(32), rng.randbytes(16)
    assert init(kernel, ctx, key, iv) == 0
    # fills the FACE table (one batch at the tag's first sight, the rest from the next
    # window on), leaves a tail
    data = rng.randbytes(8192 + 16 * 300 + 3)
    assert run_stream(kernel, ctx, data, ()) == expected(key, iv, data)
    assert ctx.bytes().count(0) < kernel.ctx_size * 3 // 4   # keys, caches, tables in use
    kernel.wipe(ctx.addr)
    assert ctx.bytes() == bytes(kernel.ctx_size)
    ctx.check_guards()


# --- the registry's CPU detection, and a set generated for fewer key sizes ----------------
@pytest.mark.parametrize("set_dir", [p.parent for p in _host_manifests()],
                         ids=lambda p: p.name)
def test_cpu_features_agree_with_proc_cpuinfo(set_dir, shared_library):
    lib = ctypes.CDLL(str(shared_library(set_dir)))
    lib.aesgen_cpu_features.restype = ctypes.c_uint64
    lib.aesgen_cpu_feature_name.restype = ctypes.c_char_p
    lib.aesgen_cpu_feature_name.argtypes = [ctypes.c_uint64]
    have = lib.aesgen_cpu_features()
    for f in FEATURES.values():
        assert bool(have >> f.bit & 1) == (f.cpuinfo in cpu_flags()), f.name
        assert lib.aesgen_cpu_feature_name(1 << f.bit).decode() == f.name
    assert lib.aesgen_cpu_feature_name(1 << 63) is None


def test_key_subset_rejects_other_sizes(tmp_path, shared_library):
    from aesgen.emit.generate import GenerateRequest, render_set
    from aesgen.targets import find_preset

    preset = find_preset("x86-64-v2")
    missing = missing_features(preset.features)
    if missing:
        pytest.skip(f"this CPU lacks {', '.join(missing)}")
    req = GenerateRequest(preset, ("aesni",), ("none", "r2"), (192, 256), "sub_", "test")
    for name, text in render_set(req).items():
        (tmp_path / name).write_text(text)
    lib = ctypes.CDLL(str(shared_library(tmp_path)))
    assert ctypes.c_uint.in_dll(lib, "sub_key_bits_supported").value == 0b110
    rng = random.Random(9)
    for k in registry(lib, "sub_").values():
        ctx = Ctx(k.ctx_size)
        assert init(k, ctx, bytes(16), bytes(16)) == -1
        for n in (24, 32):
            key, iv = rng.randbytes(n), rng.randbytes(16)
            assert init(k, ctx, key, iv) == 0
            data = rng.randbytes(300)
            assert run_stream(k, ctx, data, (17,)) == expected(key, iv, data)
        ctx.check_guards()
