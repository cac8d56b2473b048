"""AES-GCM-SIV on AArch64 (armv8-ce-gcm-siv: AESE/AESMC and PMULL in POLYVAL's bit order,
modes/gcm_siv/aarch64.py) cross-built and run under `qemu-aarch64 -cpu max`, against RFC
8452 Appendix C (all 50 vectors, the counter-wrap ones among them) and the `cryptography`
package's AESGCMSIV: every plaintext length 0..300 with random AAD, every short length
around the bounds of the powers of H a record needs, a few long records (in place and not),
both key sizes; tampering (ciphertext, tag, AAD: -1 and out all zero); the contract's
refusals (nonce other than 12 bytes, tag other than 16, 24-byte key, lengths past 2^36, a
context without a key); wipe. The kernel reads its inputs from buffers that end at an
inaccessible page and writes out and tag into such buffers with guard bytes before them
(tests/aarch64_aead_driver.c), so a byte read or written past a buffer fails the run.

One preset of each multiply and encoding: apple-m1 (Karatsuba, the last round folded into
EOR3 with FEAT_SHA3) and cortex-a53 (schoolbook, plain NEON). The kernel is rendered in
process for the preset (the committed folders are that output byte for byte,
test_regenerate.py), so one qemu start runs every case of a preset.
"""
from __future__ import annotations

import json
import random
import struct
import subprocess
from pathlib import Path

import pytest
from test_aarch64_backend import CC, QEMU, need

from aesgen.emit.generate import GenerateRequest, render_set
from aesgen.targets import all_presets

HERE = Path(__file__).parent
VECTORS = json.loads((HERE / "data" / "rfc8452_vectors.json").read_text())
NAME = "armv8-ce-gcm-siv"
PRESETS = ("apple-m1", "cortex-a53")
PREFIX = "siv_"


class Script:
    """Steps for tests/aarch64_aead_driver.c and what each must give back."""

    def __init__(self) -> None:
        self.data = bytearray()
        self.checks: list[tuple] = []        # (kind, expected, where)

    @staticmethod
    def _blob(b: bytes) -> bytes:
        return struct.pack("<I", len(b)) + b

    def select(self, name: str) -> None:
        self.data += b"\x01" + self._blob(name.encode())
        self.checks.append(("select", None, name))

    def init(self, key: bytes, rc: int = 0, where: str = "") -> None:
        self.data += b"\x02" + self._blob(key)
        self.checks.append(("rc", rc, where or f"init {len(key)}"))

    def seal(self, nonce: bytes, aad: bytes, pt: bytes, want: bytes | None, where: str,
             tag_len: int = 16, inplace: bool = False) -> None:
        """want: ciphertext || tag, or None for a refusal (out and tag untouched)."""
        self.data += (b"\x03" + self._blob(nonce) + self._blob(aad) + self._blob(pt)
                      + struct.pack("<I", tag_len) + bytes([inplace]))
        self.checks.append(("seal", (want, len(pt), tag_len), where))

    def open(self, nonce: bytes, aad: bytes, ct: bytes, tag: bytes, want: bytes | None,
             where: str, inplace: bool = False) -> None:
        """want: the plaintext, or None for -1 with out all zero."""
        self.data += (b"\x04" + self._blob(nonce) + self._blob(aad) + self._blob(ct)
                      + self._blob(tag) + bytes([inplace]))
        self.checks.append(("open", (want, len(ct)), where))

    def wipe(self) -> None:
        self.data += b"\x05"
        self.checks.append(("wipe", None, "wipe"))

    def end(self) -> bytes:
        return bytes(self.data) + b"\x00"

    def verify(self, out: bytes) -> int:
        """Walk the driver's output against the checks; returns how many were made."""
        pos = 0

        def take(n: int) -> bytes:
            nonlocal pos
            chunk = out[pos:pos + n]
            assert len(chunk) == n, "the driver's output ends early"
            pos += n
            return chunk

        for kind, expected, where in self.checks:
            if kind == "select":
                ctx_size, *lens = struct.unpack("<I4Q", take(36))
                assert ctx_size, f"no AEAD named {where} in the set"
                assert lens == [12, 12, 16, 16], lens
            elif kind == "rc":
                assert struct.unpack("<i", take(4))[0] == expected, where
            elif kind == "seal":
                want, n, tag_len = expected
                rc = struct.unpack("<i", take(4))[0]
                got = take(n) + take(tag_len)
                if want is None:
                    assert (rc, got) == (-1, b"\x5a" * (n + tag_len)), f"{where}: {rc}"
                else:
                    assert rc == 0, f"{where}: seal returned {rc}"
                    assert got == want, f"{where}: first bad byte " + str(next(
                        i for i in range(len(got)) if got[i] != want[i]))
                assert take(1) == b"\x01", f"{where}: guard bytes or inputs changed"
            elif kind == "open":
                want, n = expected
                rc = struct.unpack("<i", take(4))[0]
                got = take(n)
                if want is None:
                    assert (rc, got) == (-1, bytes(n)), f"{where}: {rc}, out not zeroed"
                else:
                    assert (rc, got) == (0, want), f"{where}: open returned {rc}"
                assert take(1) == b"\x01", f"{where}: guard bytes or inputs changed"
            elif kind == "wipe":
                assert take(1) == b"\x01", "wipe left bytes or wrote past ctx_size"
        assert pos == len(out), "the driver wrote more than the script asked"
        return len(self.checks)


def siv(key: bytes, nonce: bytes, aad: bytes, pt: bytes) -> bytes:
    from cryptography.hazmat.primitives.ciphers.aead import AESGCMSIV

    return AESGCMSIV(key).encrypt(nonce, pt, aad or None)


def case(s: Script, key: bytes, nonce: bytes, aad: bytes, pt: bytes, where: str,
         inplace: bool = False, tamper: bool = False) -> None:
    """Seal against the oracle, open back; with ``tamper`` the ciphertext's first byte, the
    tag's last and (with AAD) the AAD's first, each changed alone, are refused."""
    want = siv(key, nonce, aad, pt)
    ct, tag = want[:-16], want[-16:]
    s.seal(nonce, aad, pt, want, where, inplace=inplace)
    s.open(nonce, aad, ct, tag, pt, where, inplace=inplace)
    if tamper:
        if ct:
            s.open(nonce, aad, bytes([ct[0] ^ 0x10]) + ct[1:], tag, None, f"{where} bad ct")
        s.open(nonce, aad, ct, tag[:-1] + bytes([tag[-1] ^ 0x80]), None, f"{where} bad tag")
        if aad:
            s.open(nonce, bytes([aad[0] ^ 1]) + aad[1:], ct, tag, None, f"{where} bad aad")


def build_script() -> Script:
    rng = random.Random(0x8452A64)
    s = Script()
    s.select(NAME)
    # RFC 8452 Appendix C, every vector (C.3's counter-wrap ones too)
    for v in VECTORS["vectors"]:
        h = bytes.fromhex
        key, nonce, aad, pt, res = (h(v["key"]), h(v["nonce"]), h(v["aad"]),
                                    h(v["plaintext"]), h(v["result"]))
        where = f"RFC 8452 {v['section']} ({len(key)}-byte key, {len(aad)} AAD, {len(pt)})"
        s.init(key, where=where)
        s.seal(nonce, aad, pt, res, where)
        s.open(nonce, aad, res[:-16], res[-16:], pt, where)
    # every plaintext length 0..300 with random AAD lengths 0..300: the batch loop, each
    # step of 4, 2, 1 blocks, the partial block, in seal's two passes and open's pipeline
    for n in range(301):
        if n % 25 == 0:
            key = rng.randbytes(rng.choice((16, 32)))
            s.init(key)
        aad = rng.randbytes(rng.choice((0, 16, rng.randint(0, 300))))
        case(s, key, rng.randbytes(12), aad, rng.randbytes(n),
             f"{len(key)}-byte key, {len(aad)} AAD, {n} bytes", inplace=n % 7 == 3,
             tamper=n % 9 == 0)
    # around the powers of H a short record needs (H^1, H^2 alone: AAD up to 32 bytes and
    # plaintext up to 16)
    for key_len in (16, 32):
        key = rng.randbytes(key_len)
        s.init(key)
        for aad_len in (0, 1, 16, 31, 32, 33, 48, 128, 129):
            for pt_len in (0, 1, 15, 16, 17, 32, 127, 128, 129):
                case(s, key, rng.randbytes(12), rng.randbytes(aad_len),
                     rng.randbytes(pt_len), f"{key_len}-byte key, {aad_len} AAD, {pt_len}")
    # long records, in place and not, and tampered
    for key_len, n, aad_len, inplace in ((16, 4096 + 7, 13, False), (32, 16 * 1000 + 15, 0, True),
                                         (16, 65536 + 3, 1000, True), (32, 40000, 4099, False)):
        key = rng.randbytes(key_len)
        s.init(key)
        case(s, key, rng.randbytes(12), rng.randbytes(aad_len), rng.randbytes(n),
             f"long {key_len}-byte key, {aad_len} AAD, {n} bytes", inplace=inplace,
             tamper=True)
    # refusals: a 24-byte key (RFC 8452 has none) leaves the context keyed as it was
    key = rng.randbytes(16)
    s.init(key)
    s.init(rng.randbytes(24), rc=-1, where="24-byte key refused")
    s.init(b"", rc=-1, where="empty key refused")
    pt, nonce = rng.randbytes(40), rng.randbytes(12)
    case(s, key, nonce, b"aad", pt, "the key before the refused ones")
    good = siv(key, nonce, b"aad", pt)
    for nonce_len, tag_len in ((11, 16), (13, 16), (0, 16), (12, 15), (12, 4), (12, 17),
                               (12, 0)):
        where = f"nonce {nonce_len}, tag {tag_len} refused"
        n12 = rng.randbytes(nonce_len)
        s.seal(n12, b"aad", pt, None, where, tag_len=tag_len)
        s.open(n12, b"aad", good[:-16], good[-16:][:tag_len].ljust(tag_len, b"\0"), None,
               where)
    # re-keying a used context forgets the old key
    key2 = rng.randbytes(32)
    s.init(key2)
    case(s, key2, rng.randbytes(12), b"", rng.randbytes(100), "re-keyed", tamper=True)
    # wiped: all zero, and no key any more (refused, out untouched)
    s.wipe()
    s.seal(nonce, b"", b"x", None, "seal without a key")
    s.open(nonce, b"", b"x", bytes(16), None, "open without a key")
    return s


def driver(preset: str, tmp_path: Path) -> Path:
    p = all_presets()[preset]
    req = GenerateRequest(p, ("armv8-ce",), ("none",), (128, 192, 256), PREFIX,
                          f"aesgen generate --cpu {preset}", ("gcm-siv",))
    files = render_set(req)
    assert "armv8_ce_gcm_siv.S" in files, sorted(files)
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    exe = tmp_path / "driver"
    sources = [n for n in files if n.endswith((".S", ".c"))]
    proc = subprocess.run([CC, "-static", "-O1", f"-DPREFIX={PREFIX}", "-I", str(tmp_path),
                           "-Wall", "-Wextra", "-Werror", "-o", str(exe),
                           str(HERE / "aarch64_aead_driver.c"), *sources],
                          cwd=tmp_path, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    return exe


@pytest.mark.parametrize("preset", PRESETS)
def test_gcm_siv_under_qemu(preset: str, tmp_path: Path) -> None:
    need(CC, QEMU)
    pytest.importorskip("cryptography")
    exe = driver(preset, tmp_path)
    s = build_script()
    run = subprocess.run([QEMU, "-cpu", "max", str(exe)], input=s.end(), capture_output=True,
                         timeout=300)
    assert run.returncode == 0, f"exit {run.returncode}: {run.stderr.decode()}"
    assert s.verify(run.stdout) > 1000


@pytest.mark.parametrize("preset", PRESETS)
def test_gcm_siv_lengths_past_rfc8452_are_refused(preset: str, tmp_path: Path) -> None:
    """AAD or plaintext past 2^36 bytes: -1 from seal and open with nothing read or written
    (NULL buffers: a touch would fault)."""
    need(CC, QEMU)
    exe = driver(preset, tmp_path)
    huge = tmp_path / "huge.c"
    huge.write_text(HUGE_C)
    out = tmp_path / "huge"
    files = [str(f) for f in sorted(tmp_path.glob("*.S"))] + [str(tmp_path / "aesgen_registry.c")]
    proc = subprocess.run([CC, "-static", "-O1", f"-DPREFIX={PREFIX}", "-I", str(tmp_path),
                           "-o", str(out), str(huge), *files], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert exe.exists()
    run = subprocess.run([QEMU, "-cpu", "max", str(out)], capture_output=True, text=True,
                         timeout=60)
    assert run.returncode == 0, run.stdout + run.stderr
    assert run.stdout.split() == ["-1"] * 8 + ["ok"], run.stdout


HUGE_C = r"""
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "aesgen.h"
#define CAT2(a, b) a##b
#define CAT(a, b) CAT2(a, b)
#define P(name) CAT(PREFIX, name)
int main(void) {
    const P(aead) *k = NULL;
    size_t i;
    unsigned char key[16] = {1}, nonce[12] = {2}, tag[16] = {3};
    const size_t over = ((size_t)1 << 36) + 1;
    for (i = 0; i < P(aead_count); i++)
        if (!strcmp(P(aeads)[i].name, "armv8-ce-gcm-siv"))
            k = &P(aeads)[i];
    if (!k)
        return 2;
    unsigned char *ctx = aligned_alloc(64, k->ctx_size);
    if (k->init(ctx, key, 16) != 0)
        return 3;
    const size_t lens[4][2] = {{over, 0}, {0, over}, {(size_t)-1, 0}, {0, (size_t)-1}};
    for (i = 0; i < 4; i++) {
        printf("%d\n", k->seal(ctx, nonce, 12, NULL, lens[i][0], NULL, lens[i][1], NULL,
                               tag, 16));
        printf("%d\n", k->open(ctx, nonce, 12, NULL, lens[i][0], NULL, lens[i][1], NULL,
                               tag, 16));
    }
    printf("%s\n", tag[0] == 3 ? "ok" : "tag written");
    return 0;
}
"""
