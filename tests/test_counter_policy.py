"""The counter policy is a parameter of the counter modes (modes/counter.py): the CTR
skeleton built with inc32 (GCM's counter: bytes 12..15 wrap, bytes 0..11 stay) for every
method of both instruction sets, against the model, across the 2^32 wrap where the two
policies part; GCM takes inc32 only."""
from __future__ import annotations

import ctypes
import random
import struct
import subprocess

import pytest
from test_aarch64_backend import CC, QEMU, need
from test_kernels_run import cpu_flags

from aesgen.emit.compile import compile_kernel
from aesgen.kernels.spec import KernelSpec
from aesgen.model.aes import counter_block_at, ctr_xor
from aesgen.model.gcm import inc32_sequence
from aesgen.modes.counter import BE128, INC32

FACES = ("none", "r1", "r2")


# --- the model and the spec --------------------------------------------------------------
def test_policies_part_at_the_wrap_of_the_low_32_bits():
    iv = bytes(range(11)) + bytes([0x7F, 0xFF, 0xFF, 0xFF, 0xFE])
    assert BE128.block(iv, 2) == bytes(range(11)) + bytes([0x80, 0, 0, 0, 0])
    assert INC32.block(iv, 2) == bytes(range(11)) + bytes([0x7F, 0, 0, 0, 0])
    assert INC32.block(iv, 1) == BE128.block(iv, 1)
    assert [INC32.block(iv, i) for i in range(5)] == inc32_sequence(iv, 5)
    assert BE128.block(b"\xff" * 16, 1) == bytes(16)              # the 2^128 wrap
    with pytest.raises(ValueError, match="counter_bits"):
        counter_block_at(iv, 1, 64)


def test_spec_takes_the_policies_its_mode_lists():
    assert KernelSpec("aesni", "r2").counter_policy is BE128
    assert KernelSpec("aesni", "r2", mode="gcm").counter_policy is INC32
    spec = KernelSpec("aesni", "r2", counter="inc32")
    assert spec.counter_policy is INC32 and spec.name == "aesni-face-r2-inc32"
    assert KernelSpec("aesni", "r2", counter="be128").name == "aesni-face-r2"
    with pytest.raises(ValueError, match="mode gcm counts with inc32, not 'be128'"):
        KernelSpec("aesni", "r2", mode="gcm", counter="be128")
    with pytest.raises(ValueError, match="counts with be128, inc32"):
        KernelSpec("aesni", "r2", counter="inc64")


# --- the cases every kernel runs -------------------------------------------------------
def _cases() -> list[tuple[bytes, bytes, bytes, int]]:
    """(key, iv, data, cut): streams that cross the 2^32 wrap of bytes 12..15 (from several
    in15, whole and partial blocks, split into two calls), and one far from it."""
    rng = random.Random(32)
    cases = []
    for bits, low, n in ((128, 0xFFFFFFF0, 700), (256, 0xFFFFFF03, 5000), (192, 0xFFFFFFFF, 40),
                         (128, 0xFFFFFE80, 4096 + 16 * 130 + 5), (256, 0x12345610, 3000)):
        key, iv = rng.randbytes(bits // 8), rng.randbytes(12) + low.to_bytes(4, "big")
        cases.append((key, iv, rng.randbytes(n), rng.randrange(n)))
    return cases


CASES = _cases()


def _expected(policy_bits: int) -> list[bytes]:
    return [ctr_xor(key, iv, data, counter_bits=policy_bits) for key, iv, data, _ in CASES]


def test_cases_cross_the_wrap():
    """The cases tell the policies apart (else a kernel that ignores its policy passes)."""
    differ = [a != b for a, b in zip(_expected(32), _expected(128))]
    assert sum(differ) == len(CASES) - 1


# --- x86-64, run here ---------------------------------------------------------------------
X86 = [("aesni", 128, "sse", ()), ("aesni", 128, "avx", ("avx",)),
       ("table", 128, "sse", ()), ("bitsliced", 128, "sse", ("ssse3",)),
       ("vaes256", 256, "avx", ("vaes", "avx2")), ("gfni", 256, "avx", ("gfni", "avx2")),
       ("vaes512", 512, "evex", ("vaes", "avx512f", "avx512bw", "avx512vl"))]


@pytest.mark.parametrize("face", FACES)
@pytest.mark.parametrize("method,width,encoding,needs", X86,
                         ids=[f"{m}{w}-{e}" for m, w, e, _ in X86])
def test_x86_ctr_kernels_count_with_inc32(tmp_path, method, width, encoding, needs, face):
    missing = sorted(set(needs) - cpu_flags())
    if missing:
        pytest.skip(f"this CPU lacks {', '.join(missing)}")
    spec = KernelSpec(method, face, width=width, encoding=encoding,
                      interleave=1 if method == "table" else 8, counter="inc32",
                      prefix="pol_")
    ck = compile_kernel(spec)
    src = tmp_path / "k.S"
    src.write_text(".text\n" + "\n".join(ck.texts.values())
                   + '\n.section .note.GNU-stack,"",@progbits\n')
    lib_path = tmp_path / "k.so"
    subprocess.run(["gcc", "-shared", "-fPIC", "-o", str(lib_path), str(src)], check=True)
    lib = ctypes.CDLL(str(lib_path))
    vp = ctypes.c_void_p
    init, xs = lib[spec.symbol("init")], lib[spec.symbol("xor_stream")]
    init.argtypes = [vp, vp, ctypes.c_size_t, vp]
    xs.argtypes = [vp, vp, vp, ctypes.c_size_t]
    buf = ctypes.create_string_buffer(ck.ctx_size + 64)
    ctx = (ctypes.addressof(buf) + 63) // 64 * 64
    for (key, iv, data, cut), want in zip(CASES, _expected(32)):
        assert init(ctx, key, len(key), iv) == 0
        out = ctypes.create_string_buffer(len(data))
        xs(ctx, out, data, cut)
        xs(ctx, ctypes.addressof(out) + cut, data[cut:], len(data) - cut)
        assert out.raw == want, f"{spec.name}, iv {iv.hex()}, {len(data)} bytes"


# --- AArch64, under qemu ------------------------------------------------------------------
A64 = [("armv8-ce", "neon"), ("neon-tbl", "neon"), ("neon-bitsliced", "neon")]
DRIVER = r"""
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
%(decls)s
typedef int (*init_fn)(void *, const uint8_t *, size_t, const uint8_t *);
typedef void (*xor_fn)(void *, uint8_t *, const uint8_t *, size_t);
static const struct { init_fn init; xor_fn xs; size_t ctx; } K[] = { %(table)s };
static uint32_t u32(void) { uint32_t v; if (fread(&v, 4, 1, stdin) != 1) exit(0); return v; }
int main(void) {
    /* per case: u32 kernel, u32 key_len, key, iv[16], u32 len, u32 cut, data; writes out */
    for (;;) {
        uint32_t k = u32(), kl = u32(); uint8_t key[32], iv[16];
        if (fread(key, 1, kl, stdin) != kl || fread(iv, 1, 16, stdin) != 16) return 1;
        uint32_t len = u32(), cut = u32();
        uint8_t *in = malloc(len + 1), *out = malloc(len + 1);
        if (fread(in, 1, len, stdin) != len) return 1;
        void *ctx = aligned_alloc(64, (K[k].ctx + 63) & ~(size_t)63);
        if (K[k].init(ctx, key, kl, iv) != 0) return 2;
        K[k].xs(ctx, out, in, cut);
        K[k].xs(ctx, out + cut, in + cut, len - cut);
        fwrite(out, 1, len, stdout);
        free(in); free(out); free(ctx);
    }
}
"""


def test_a64_ctr_kernels_count_with_inc32(tmp_path):
    need(CC, QEMU)
    specs = [KernelSpec(m, f, key_bits=(128, 192, 256), interleave=4 if m == "neon-tbl" else 8,
                        encoding=e, counter="inc32", prefix="pol_")
             for m, e in A64 for f in FACES]
    texts, decls, table = [], [], []
    for spec in specs:
        ck = compile_kernel(spec)
        texts.append("\n".join(ck.texts.values()))
        decls.append(f"int {spec.symbol('init')}(void *, const uint8_t *, size_t, "
                     f"const uint8_t *);\nvoid {spec.symbol('xor_stream')}(void *, uint8_t *, "
                     f"const uint8_t *, size_t);")
        table.append(f"{{{spec.symbol('init')}, {spec.symbol('xor_stream')}, {ck.ctx_size}}}")
    (tmp_path / "k.S").write_text("\n".join(texts) + '\n.section .note.GNU-stack,"",@progbits\n')
    (tmp_path / "d.c").write_text(DRIVER % {"decls": "\n".join(decls),
                                            "table": ", ".join(table)})
    exe = tmp_path / "d"
    proc = subprocess.run([CC, "-static", "-O1", "-march=armv8-a+crypto", "-o", str(exe),
                           str(tmp_path / "d.c"), str(tmp_path / "k.S")],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    script = bytearray()
    for k in range(len(specs)):
        for key, iv, data, cut in CASES:
            script += struct.pack("<II", k, len(key)) + key + iv
            script += struct.pack("<II", len(data), cut) + data
    run = subprocess.run([QEMU, "-cpu", "max", str(exe)], input=bytes(script),
                         capture_output=True, timeout=300)
    assert run.returncode == 0, run.stderr.decode()
    out, pos = run.stdout, 0
    for spec in specs:
        for (key, iv, data, _), want in zip(CASES, _expected(32)):
            got = out[pos:pos + len(data)]
            pos += len(data)
            assert got == want, f"{spec.name}, iv {iv.hex()}, {len(data)} bytes"
    assert pos == len(out)
