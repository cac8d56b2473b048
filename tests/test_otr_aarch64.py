"""AES-OTR on AArch64 (armv8-ce-otr, -otr-v2, -otr-s, -otr-v2-s: AESE/AESMC, masks doubled in
block order, modes/otr/aarch64.py) cross-built and run under `qemu-aarch64 -cpu max`,
against specs/aes-otr.md Appendix A (every vector of each kernel's version and AD mode) and
the Python model (aesgen.model.otr, written from the spec): every length class of the last
pair (0..80 bytes, and around the batch of 8 pairs and each of its halves, after several
batches, a few long messages), every nonce length 1..15, every tag length 1..16, AAD of
0..40 bytes and longer (around the AD's batch of 8 blocks), both key sizes, in place and
not; tampering (ciphertext, tag, AAD, nonce: -1 and out all zero); the contract's refusals
(nonce of 0 or 16 bytes, tag of 0 or 17, a 24-byte key, a context without a key); wipe.
The kernel reads its inputs from buffers that end at an inaccessible page and writes out and
tag into such buffers with guard bytes before them (tests/aarch64_aead_driver.c), so a byte
read or written past a buffer fails the run.

Two presets, one of each encoding: apple-m1 (the last round and the data in one EOR3, with
FEAT_SHA3) and cortex-a53 (plain NEON). The kernels are rendered in process for the preset
(the committed folders are that output byte for byte, test_regenerate.py), so one qemu start
runs every case of a preset. The doubling engine is checked on its own too: its
instruction count, and its result against the model's doubling for edge values.
"""
from __future__ import annotations

import json
import random
import struct
import subprocess
from pathlib import Path

import pytest
from test_aarch64_backend import CC, QEMU, need

from aesgen.dsl.builder import KernelBuilder
from aesgen.emit.generate import GenerateRequest, render_set
from aesgen.gf128.aarch64.doubling import INSTRUCTIONS, KEEP, Doubling
from aesgen.isa.table import load_table
from aesgen.model import otr as model
from aesgen.model.gf128 import double
from aesgen.modes import mode as mode_descriptor
from aesgen.targets import all_presets

HERE = Path(__file__).parent
VECTORS = json.loads((HERE / "data" / "otr_vectors.json").read_text())
MODES = ("otr", "otr-v2", "otr-s", "otr-v2-s")
PRESETS = ("apple-m1", "cortex-a53")
PREFIX = "otr_"
# pairs a batch of the kernels (modes/otr/aarch64.py BATCH) and the AD's blocks a batch
BATCH, AD_BATCH = 8, 8


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
                assert lens == [1, 15, 1, 16], lens
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


def case(s: Script, mode: str, key: bytes, nonce: bytes, aad: bytes, pt: bytes, where: str,
         tag_len: int = 16, inplace: bool = False, tamper: bool = False) -> None:
    """Seal against the model, open back; with ``tamper`` a changed ciphertext byte (the
    first, the last), tag, AAD and nonce, each alone, are refused."""
    ct, tag = model.seal_mode(mode, key, nonce, aad, pt, tag_len)
    s.seal(nonce, aad, pt, ct + tag, where, tag_len=tag_len, inplace=inplace)
    s.open(nonce, aad, ct, tag, pt, where, inplace=inplace)
    if tamper:
        for at in sorted({0, len(ct) // 2, len(ct) - 1}) if ct else ():
            bad = bytearray(ct)
            bad[at] ^= 0x10
            s.open(nonce, aad, bytes(bad), tag, None, f"{where} bad ct byte {at}")
        s.open(nonce, aad, ct, tag[:-1] + bytes([tag[-1] ^ 0x80]), None, f"{where} bad tag")
        s.open(nonce, aad + b"!", ct, tag, None, f"{where} longer aad")
        if aad:
            s.open(nonce, bytes([aad[0] ^ 1]) + aad[1:], ct, tag, None, f"{where} bad aad")
        s.open(bytes([nonce[0] ^ 2]) + nonce[1:], aad, ct, tag, None, f"{where} bad nonce")


# the last pair's length classes (section 8.1) after 0..2 pairs (0..80 bytes), and around
# a batch of 8 pairs and each of its halves (4, 2, 1), after one and several batches
LENGTHS = sorted(set(range(0, 81)) | {32 * p + r for p in (3, 4, 5, 7, 8, 9, 15, 16, 17, 23)
                                      for r in (0, 1, 15, 16, 17, 31)} | {1420, 4096 + 13})
# AAD lengths: every one of 0..40, and around the AD's batch of 8 blocks and its halves
AAD_LENGTHS = list(range(0, 41)) + [63, 64, 65, 127, 128, 129, 143, 144, 145, 255, 256, 257,
                                    1000]


def build_script(rng: random.Random) -> Script:
    s = Script()
    for mode in MODES:
        version, ad = model.MODES[mode]
        s.select(f"armv8-ce-{mode}")
        # Appendix A: every vector of the kernel's version and AD mode
        ran = 0
        for v in VECTORS["vectors"]:
            if (v["version"], v["ad"]) != (version, ad):
                continue
            key, nonce = bytes.fromhex(v["key"]), bytes.fromhex(v["nonce"])
            aad = bytes(range(v["aad_len"]))
            msg = bytes(0x40 + i for i in range(v["msg_len"]))
            ct, tag = bytes.fromhex(v["ciphertext"]), bytes.fromhex(v["tag"])
            where = f"{mode} {v['section']}"
            s.init(key, where=where)
            s.seal(nonce, aad, msg, ct + tag, where, tag_len=v["tag_len"])
            s.open(nonce, aad, ct, tag, msg, where)
            ran += 1
        assert ran >= 1, mode
        # every length class of the last pair, after 0 .. 23 pairs
        for i, n in enumerate(LENGTHS):
            if i % 20 == 0:
                key = rng.randbytes(rng.choice((16, 32)))
                s.init(key)
            aad = rng.randbytes(rng.choice((0, 13, rng.randint(0, 40))))
            case(s, mode, key, rng.randbytes(12), aad, rng.randbytes(n),
                 f"{mode} {len(key)}-byte key, {len(aad)} AAD, {n} bytes",
                 inplace=i % 5 == 2, tamper=n % 16 in (0, 1) and n < 300)
        for key_len in (16, 32):
            key = rng.randbytes(key_len)
            s.init(key)
            # nonces of 1..15 bytes (Format's general path and the 12-byte one)
            for nl in range(1, 16):
                case(s, mode, key, rng.randbytes(nl), rng.randbytes(5),
                     rng.randbytes(rng.randint(0, 70)), f"{mode} nonce {nl}")
            # tags of 1..16 bytes
            for tl in range(1, 17):
                case(s, mode, key, rng.randbytes(12), b"", rng.randbytes(rng.randint(0, 70)),
                     f"{mode} tag {tl}", tag_len=tl, tamper=tl in (1, 7))
            # AAD of 0..40 bytes and longer
            for al in AAD_LENGTHS:
                case(s, mode, key, rng.randbytes(12), rng.randbytes(al),
                     rng.randbytes(rng.choice((0, 17, 33))), f"{mode} {key_len}-byte key, "
                     f"AAD {al}", tamper=al in (16, 129))
        # long messages, in place and not
        for key_len, n, al, inplace in ((16, 8192 + 5, 31, False), (32, 4096 + 32, 0, True)):
            key = rng.randbytes(key_len)
            s.init(key)
            case(s, mode, key, rng.randbytes(rng.randint(1, 15)), rng.randbytes(al),
                 rng.randbytes(n), f"{mode} long {n}", inplace=inplace, tamper=True)
        # refusals: a 24-byte key leaves the context keyed as it was
        key = rng.randbytes(16)
        s.init(key)
        s.init(rng.randbytes(24), rc=-1, where=f"{mode} 24-byte key refused")
        s.init(b"", rc=-1, where=f"{mode} empty key refused")
        pt, nonce = rng.randbytes(40), rng.randbytes(12)
        case(s, mode, key, nonce, b"aad", pt, f"{mode} the key before the refused ones")
        ct, tag = model.seal_mode(mode, key, nonce, b"aad", pt)
        for nonce_len, tag_len in ((0, 16), (16, 16), (12, 0), (12, 17)):
            where = f"{mode} nonce {nonce_len}, tag {tag_len} refused"
            nn = rng.randbytes(nonce_len)
            s.seal(nn, b"aad", pt, None, where, tag_len=tag_len)
            s.open(nn, b"aad", ct, (tag + bytes(1))[:tag_len], None, where)
        # re-keying a used context forgets the old key
        key2 = rng.randbytes(32)
        s.init(key2)
        case(s, mode, key2, rng.randbytes(9), b"x", rng.randbytes(100), f"{mode} re-keyed",
             tamper=True)
        # wiped: all zero, and no key any more (refused, out untouched, open zeroes out)
        s.wipe()
        s.seal(nonce, b"", b"x", None, f"{mode} seal without a key")
        s.open(nonce, b"", b"x", bytes(16), None, f"{mode} open without a key")
    return s


def _openssl_aes(monkeypatch) -> None:
    """The model's AES block (aesgen.model.aes, checked against FIPS-197 in
    test_model_aes.py) replaced by OpenSSL's through the cryptography package, where it is
    installed: the AES-OTR construction stays the model's, and the thousands of cases build
    in a fraction of a second instead of several."""
    try:
        from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes
    except ImportError:
        return
    monkeypatch.setattr(model, "expand_key", lambda key: Cipher(
        algorithms.AES(key), modes.ECB()).encryptor())
    monkeypatch.setattr(model, "encrypt_block", lambda enc, x: enc.update(bytes(x)))


_SCRIPT: list[Script] = []


def script(monkeypatch) -> Script:
    """build_script's steps, made once for every preset."""
    if not _SCRIPT:
        with monkeypatch.context() as m:
            _openssl_aes(m)
            _SCRIPT.append(build_script(random.Random(0x07A64)))
    return _SCRIPT[0]


def driver(preset: str, tmp_path: Path) -> Path:
    p = all_presets()[preset]
    req = GenerateRequest(p, ("armv8-ce",), ("none",), (128, 256), PREFIX,
                          f"aesgen generate --cpu {preset}", MODES)
    files = render_set(req)
    for m in MODES:
        assert f"armv8_ce_{m.replace('-', '_')}.S" in files, sorted(files)
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
def test_otr_under_qemu(preset: str, tmp_path: Path, monkeypatch) -> None:
    need(CC, QEMU)
    exe = driver(preset, tmp_path)
    s = script(monkeypatch)
    run = subprocess.run([QEMU, "-cpu", "max", str(exe)], input=s.end(), capture_output=True,
                         timeout=300)
    assert run.returncode == 0, f"exit {run.returncode}: {run.stderr.decode()}"
    assert s.verify(run.stdout) > 3000


def test_descriptor_takes_armv8_ce_with_its_doubling() -> None:
    """The four OTR modes list armv8-ce, whose kernels take the AArch64 doubling engine
    alone (the x86 methods keep theirs), and build on the AArch64 skeleton."""
    from aesgen.modes import hash_engines_of, skeleton_for
    from aesgen.kernels.spec import KernelSpec

    for m in MODES:
        desc = mode_descriptor(m)
        assert "armv8-ce" in desc.methods
        assert hash_engines_of(desc, "armv8-ce") == ("neon-krovetz",)
        assert "neon-krovetz" not in hash_engines_of(desc, "aesni")
        spec = KernelSpec("armv8-ce", "none", (128, 256), 8, "neon", mode=m)
        assert spec.hash == "neon-krovetz" and spec.name == f"armv8-ce-{m}"
        assert skeleton_for(spec) == "aesgen.modes.otr.aarch64"


def test_doubling_instruction_count() -> None:
    """One doubling emits the instructions the module quotes (5), none of them a byte
    reversal or a memory access."""
    b = KernelBuilder(load_table("aarch64"), "t")
    d = Doubling(b)
    keep, x = d.constant(), b.vec(128)
    before = len(b.function.body)
    d.double(x, keep)
    emitted = [i for i in b.function.body[before:] if hasattr(i, "name")]
    assert len(emitted) == INSTRUCTIONS["neon-krovetz"] == 5
    assert [i.name for i in emitted] == ["sshr", "ext", "and", "shl", "eor"]


def _byte_lanes_double(x: bytes) -> bytes:
    """What the 5 instructions compute, lane by lane (SSHR #7, EXT #1, AND KEEP, SHL #1,
    EOR) on the block's bytes as they lie in the register."""
    t = [0xFF if v & 0x80 else 0 for v in x]
    t = t[1:] + t[:1]
    t = [a & k for a, k in zip(t, KEEP)]
    return bytes(((v << 1) & 0xFF) ^ c for v, c in zip(x, t))


def test_doubling_lanes_match_the_model() -> None:
    """The byte-lane doubling is the spec's dbl (section 2) for edge and random blocks."""
    rng = random.Random(2)
    blocks = [bytes(16), bytes([0x80]) + bytes(15), bytes(15) + b"\x80", b"\xff" * 16,
              bytes([0x80 >> (i % 8) for i in range(16)])] + [rng.randbytes(16)
                                                             for _ in range(200)]
    for x in blocks:
        assert _byte_lanes_double(x) == double(x), x.hex()
