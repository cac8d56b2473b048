"""Outside differential check of the x86-64 sets: every kernel this CPU runs, against the
host's `openssl enc` command (a different program from both the Python model that
test_kernels_run uses and the EVP library calls of the GoogleTest harness).

Each case is the keystream (the kernel applied to zeros) for a key, an IV and a length,
written in two calls split at an odd byte; the cases put the counter near a 256-block
window's end, across the 2^32 carry and at the 2^128 wrap.
"""
from __future__ import annotations

import ctypes
import functools
import json
import random
import shutil
import subprocess

import pytest

from test_kernels_run import KERNELS, Ctx, kernel  # noqa: F401  (the fixture)

CASES = []
_rng = random.Random(2026)
for _bits in (128, 192, 256):
    for _iv_tail, _n in ((bytes([0xf0]), 1000), (b"\xff\xff\xff\xfe", 2085),
                         (b"\xff" * 16, 77)):
        _key = _rng.randbytes(_bits // 8)
        _iv = (_rng.randbytes(16 - len(_iv_tail)) + _iv_tail)[:16]
        CASES.append((_key, _iv, _n))


@functools.cache
def openssl_keystream(key: bytes, iv: bytes, n: int) -> bytes:
    proc = subprocess.run(["openssl", "enc", f"-aes-{8 * len(key)}-ctr", "-K", key.hex(),
                           "-iv", iv.hex(), "-nopad"], input=bytes(n), capture_output=True)
    assert proc.returncode == 0, proc.stderr.decode()
    return proc.stdout


def _x86(param) -> bool:
    set_dir, _ = param.values[0]
    return json.loads((set_dir / "manifest.json").read_text()).get("arch") == "x86_64"


@pytest.mark.parametrize("kernel", [k for k in KERNELS if _x86(k)], indirect=True)
def test_kernel_matches_the_hosts_openssl_command(kernel):
    if shutil.which("openssl") is None:
        pytest.fail("the openssl command is missing (Debian: openssl)")
    for key, iv, n in CASES:
        want = openssl_keystream(key, iv, n)
        assert len(want) == n
        ctx = Ctx(kernel.ctx_size)
        assert kernel.init(ctx.addr, key, len(key), iv) == 0
        out = ctypes.create_string_buffer(n)
        cut = 16 * 37 + 5 if n > 600 else n // 3
        kernel.xor_stream(ctx.addr, out, bytes(n), cut)
        kernel.xor_stream(ctx.addr, ctypes.byref(out, cut), bytes(n - cut), n - cut)
        got = out.raw
        if got != want:
            first = next(i for i in range(n) if got[i] != want[i])
            pytest.fail(f"AES-{8 * len(key)} iv {iv.hex()}: differs from `openssl enc` from "
                        f"byte {first} (block {first // 16})")
        kernel.wipe(ctx.addr)
