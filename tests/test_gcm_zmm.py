"""The zmm GCM kernels (vaes512-gcm-*) in the x86 emulator (aesgen.testing.x86emu), on any
CPU: against the Python GCM model (model/gcm.py), with every buffer and the context placed
against the end of their regions, so a read or write past them faults.

What is particular to zmm, each checked here:
  - the masked tail (a message's last bytes below one batch, 4 x zmm_batch blocks: one AES
    batch of 4 registers up to 256 bytes, else of the batch, byte-masked loads and stores,
    powers chosen by the length): every length 0..300, 430..530 and some of 1000..1100,
    seal and open, open in place; the same lengths through the one-shot record path (its
    chunks, then a masked tail) where the kernel has one;
  - the streaming state it leaves (KEYSTREAM and PENDING of a partial block): messages
    cut into pieces that end inside a register, continued by the next call;
  - the batches with FACE: a run of TLS-style records (a static IV XOR a sequence
    number) whose table fills and is then used (read in the context); the same for the
    one-shot record path's records (1420 bytes), whose fill waits for a nonce prefix's
    second record;
  - inc32 wrapping inside the lanes of one register: a 16-byte nonce built so that J0
    ends in 0xfffffff5 (J0 = N H^2 ^ L H is linear in N, so N is solved for).

When this CPU has AVX-512, tests/test_gcm_kernels.py runs the same kernels natively too.
"""
from __future__ import annotations

import json
import random

import pytest

from aesgen.model import gcm as model
from aesgen.model import gf128
from aesgen.paths import GENERATED
from aesgen.testing.x86emu import Machine, Program

PRESETS = ("znver4", "sapphirerapids", "znver5")   # zmm batches of 8 and 12 registers


def _zmm_aeads():
    """One case per distinct kernel file (the presets emit the same vaes512 GCM code)."""
    seen, params = set(), []
    for preset in PRESETS:
        data = json.loads((GENERATED / preset / "manifest.json").read_text())
        for info in data["aeads"]:
            if info["width"] != 512 or info["mode"] != "gcm":    # GCM-SIV: test_x86emu
                continue
            text = (GENERATED / preset / info["file"]).read_text()
            body = text[text.index("*/"):]
            if body in seen:
                continue
            seen.add(body)
            params.append(pytest.param(preset, info, id=f"{preset}:{info['name']}"))
    return params


AEADS = _zmm_aeads()


def test_the_presets_have_zmm_gcm_kernels():
    assert {p.values[1]["face"] for p in AEADS} == {"none", "r1", "r2"}


class Emulated:
    """One kernel in one emulated machine, with the context at the end of its region."""

    def __init__(self, preset: str, info: dict) -> None:
        self.info = info
        self.m = Machine(Program.parse_files(str(GENERATED / preset / info["file"])))
        self.ctx = self.m.alloc_end(info["ctx_size"])
        assert self.ctx % 64 == 0
        self.fields = {f["name"]: f for f in info["context_fields"]}

    def buf(self, data: bytes) -> int:
        return self.m.alloc_end(data) if data else 0

    def call(self, entry: str, *args: int) -> int:
        r = self.m.call(self.info["symbols"][entry], *args) & 0xFFFF_FFFF
        return r - (1 << 32) if r >> 31 else r

    def init(self, key: bytes) -> None:
        assert self.call("init", self.ctx, self.buf(key), len(key)) == 0

    def seal(self, nonce: bytes, aad: bytes, pt: bytes, tag_len: int = 16):
        out, tag = self.m.alloc_end(len(pt)), self.m.alloc_end(tag_len)
        r = self.call("seal", self.ctx, self.buf(nonce), len(nonce), self.buf(aad), len(aad),
                      self.buf(pt), len(pt), out, tag, tag_len)
        assert r == 0
        return self.m.read(out, len(pt)), self.m.read(tag, tag_len)

    def open(self, nonce: bytes, aad: bytes, ct: bytes, tag: bytes, *, in_place=False):
        src = self.buf(ct)
        out = src if in_place and ct else self.m.alloc_end(len(ct))
        r = self.call("open", self.ctx, self.buf(nonce), len(nonce), self.buf(aad), len(aad),
                      src, len(ct), out, self.buf(tag), len(tag))
        return r, self.m.read(out, len(ct))

    def field(self, name: str) -> int:
        f = self.fields[name]
        return int.from_bytes(self.m.read(self.ctx + f["offset"], f["size"]), "little")


def _where(got: bytes, want: bytes) -> int:
    return next((i for i, (x, y) in enumerate(zip(got, want)) if x != y), min(len(got), len(want)))


@pytest.mark.parametrize("preset, info", AEADS)
def test_every_tail_length_seals_and_opens(preset, info):
    """Lengths 0..300 (every tail shape below 4 registers, the 4-register tail and the
    first lengths of the batch-sized one, a partial block in each lane, the short one-shot
    path below 65 bytes), 430..530 (the last registers of a batch-sized tail, then a batch
    and a tail when a batch is 8 registers), some of 1000..1100 (batches and a tail) and
    whole batches of 8 and 12 registers (the last batch alone ends the message, its hash
    summed with the length block's); on a kernel with a record path (the manifest's
    record_chunk) a seal of more than a chunk up to 8 x zmm_batch blocks runs its chunks
    (with znver5's chunk of 8 and batch of 12: 513..1536 bytes), 512 and 1537 do not; every
    third length also through open, in place, and
    with a flipped tag bit."""
    k = Emulated(preset, info)
    rng = random.Random(512)
    lengths = (list(range(0, 301)) + list(range(430, 531)) + list(range(1000, 1100, 7))
               + [512, 513, 768, 1024, 1420, 1536, 1537])
    if info["face"] != "none":            # the tail does not depend on FACE: a sample
        lengths = lengths[::5]
    for n, length in enumerate(lengths):
        if n % 40 == 0:
            key = rng.randbytes((16, 24, 32)[(n // 40) % 3])
            k.init(key)
        nonce, aad, pt = rng.randbytes(12), rng.randbytes(13 + n % 7), rng.randbytes(length)
        ct, tag = k.seal(nonce, aad, pt)
        want_ct, want_tag = model.seal(key, nonce, aad, pt, 16)
        what = f"AES-{8 * len(key)}, {length} bytes"
        assert ct == want_ct, f"{what}: ciphertext wrong from byte {_where(ct, want_ct)}"
        assert tag == want_tag, f"{what}: tag wrong"
        if n % 3 == 0:
            assert k.open(nonce, aad, ct, tag, in_place=n % 2 == 0) == (0, pt), what
            bad = bytes([tag[0] ^ 0x10]) + tag[1:]
            assert k.open(nonce, aad, ct, bad) == (-1, bytes(length)), f"{what}: forgery"


def test_the_record_path_with_another_chunk_and_batch(tmp_path):
    """The record path built with a chunk of 2 registers and a batch of 4 (a preset may
    choose any chunk below its batch; the committed ones use 8 of 12, whose loop runs at
    most once), AES-128 and AES-256: every third length from the masked tail's last (128
    bytes) through the chunks, the loop running up to twice, to the powers of H a batch of
    4 keeps (512 bytes) and past them, sealed and opened against the Python model."""
    import dataclasses

    from aesgen.emit.generate import GenerateRequest, render_set
    from aesgen.targets import find_preset

    preset = dataclasses.replace(find_preset("znver5"), gcm_zmm_batch=4, gcm_record_chunk=2)
    req = GenerateRequest(preset, ("vaes512",), ("none",), (128, 256), "aesgen_", "test",
                          ("gcm",))
    files = render_set(req, jobs=1)
    info = next(a for a in json.loads(files["manifest.json"])["aeads"] if a["mode"] == "gcm")
    assert info["record_chunk"] == 2 and info["interleave"] == 4
    (tmp_path / info["file"]).write_text(files[info["file"]])
    k = Emulated.__new__(Emulated)
    k.info = info
    k.m = Machine(Program.parse_files(str(tmp_path / info["file"])))
    k.ctx = k.m.alloc_end(info["ctx_size"])
    rng = random.Random(3)
    for n, length in enumerate(list(range(120, 530, 3)) + [127, 128, 129, 256, 257, 384, 385,
                                                          511, 512, 513, 576, 577]):
        if n % 30 == 0:
            key = rng.randbytes((16, 32)[(n // 30) % 2])
            k.init(key)
        nonce, aad, pt = rng.randbytes(12), rng.randbytes(13), rng.randbytes(length)
        ct, tag = k.seal(nonce, aad, pt)
        want_ct, want_tag = model.seal(key, nonce, aad, pt, 16)
        what = f"AES-{8 * len(key)}, {length} bytes"
        assert ct == want_ct, f"{what}: ciphertext wrong from byte {_where(ct, want_ct)}"
        assert tag == want_tag, f"{what}: tag wrong"
        if n % 4 == 0:
            assert k.open(nonce, aad, ct, tag) == (0, pt), what


@pytest.mark.parametrize("preset, info", AEADS)
def test_pieces_that_end_inside_a_register_continue_the_stream(preset, info):
    k = Emulated(preset, info)
    rng = random.Random(1024)
    key = rng.randbytes(16)
    k.init(key)
    for case in range(12 if info["face"] == "none" else 4):
        nonce = rng.randbytes(rng.choice((12, 12, 7, 20)))
        aad, pt = rng.randbytes(rng.randint(0, 40)), rng.randbytes(rng.randint(1, 1100))
        want_ct, want_tag = model.seal(key, nonce, aad, pt, 16)
        for decrypt in (False, True):
            assert k.call("start", k.ctx, k.buf(nonce), len(nonce)) == 0
            assert k.call("aad", k.ctx, k.buf(aad), len(aad)) == 0
            src, got, pos = (want_ct if decrypt else pt), b"", 0
            while pos < len(src):
                piece = min(len(src) - pos, rng.choice((1, 15, 17, 63, 65, 100, 200, 300)))
                out = k.m.alloc_end(piece)
                entry = "decrypt" if decrypt else "encrypt"
                assert k.call(entry, k.ctx, k.buf(src[pos:pos + piece]), piece, out) == 0
                got += k.m.read(out, piece)
                pos += piece
            what = f"case {case}, {len(pt)} bytes, {'decrypt' if decrypt else 'encrypt'}"
            assert got == (pt if decrypt else want_ct), f"{what}: wrong from {_where(got, pt)}"
            if decrypt:
                assert k.call("finish_open", k.ctx, k.buf(want_tag), 16) == 0, what
            else:
                tag = k.m.alloc_end(16)
                assert k.call("finish_seal", k.ctx, tag, 16) == 0
                assert k.m.read(tag, 16) == want_tag, what


@pytest.mark.parametrize("preset, info", [p for p in AEADS if p.values[1]["face"] != "none"])
def test_tls_records_fill_the_face_table_and_use_it(preset, info):
    """Records of a TLS 1.3 connection (nonce = static IV ^ sequence number): counter bytes
    0, 5 and 10 stay, so the table is kept from record to record. Each record starts at
    in15 = 2 and a batch never wraps in15, so batches of B = 4 x zmm_batch blocks (the
    preset's [gcm] zmm_batch, the manifest's interleave) fill entries 2..2+B*(254//B)-1:
    the first record stores its first batch (admission on second sight), the second the
    rest; from the third on, the batches start from the table (fewer AES rounds run)."""
    k = Emulated(preset, info)
    regs = info["interleave"]
    blocks = 4 * regs
    fast = 254 // blocks                  # batches of a 4 KiB record that do not wrap in15
    rng = random.Random(4096)
    key, iv = rng.randbytes(16), rng.randbytes(12)
    k.init(key)
    rounds = []
    # one instruction a register and round: AESENC (rounds 1..nr-1), or GFNI's S-box; the
    # bit-sliced engine runs a batch's round as one S-box netlist (VPTERNLOGD gates)
    sbox = {"gfni": "vgf2p8affineinvqb", "bitsliced": "vpternlogd"}.get(info["method"],
                                                                         "vaesenc")
    for seq in range(4):
        nonce = iv[:4] + bytes(a ^ b for a, b in zip(iv[4:], seq.to_bytes(8, "big")))
        aad, pt = rng.randbytes(13), rng.randbytes(4096 + 37 * (seq in (1, 2)))
        before = k.m.counts()[sbox]
        ct, tag = k.seal(nonce, aad, pt)
        rounds.append(k.m.counts()[sbox] - before)
        assert (ct, tag) == model.seal(key, nonce, aad, pt, 16), f"record {seq}"
        if seq == 0:
            assert (k.field("FILL_START"), k.field("FILL_COUNT")) == (2, blocks)
    assert (k.field("FILL_START"), k.field("FILL_COUNT")) == (2, blocks * fast)
    # AES-128: 9 rounds a register of 4 blocks; FACE skips rounds 1..face of every batch
    # whose entries are filled (all of a 4 KiB record's but the one that wraps in15)
    skipped = {"r1": 1, "r2": 2}[info["face"]] * regs * fast
    if info["method"] == "bitsliced":
        # a batch of 8 registers is one S-box netlist a round (its VPTERNLOGD gates, as
        # lowered for the preset) and MixColumns' (at most two a slice); record 0's fill
        # batch also transposes twice more (out to store its entries, back in)
        skipped //= regs
        gates = _sliced_sbox_ternaries(preset, info["variant"])
        assert skipped * gates <= rounds[0] - rounds[3] <= skipped * (gates + 16) + 64, \
            rounds
    else:
        assert rounds[0] - rounds[3] == skipped, rounds


@pytest.mark.parametrize("preset, info", [p for p in AEADS if p.values[1]["face"] != "none"
                                           and p.values[1].get("record_chunk")])
def test_tls_records_on_the_record_path_fill_the_table_on_second_sight(preset, info):
    """One-shot records the record path takes (more than a chunk, at most the powers of H
    a batch keeps: 1420 bytes, a TLS record), under TLS 1.3 nonces: the first record
    sees the nonce prefix (counter bytes 0, 5, 10) and computes every round, filling
    nothing (a record is a whole message: fresh nonces would never read what it stored);
    the second fills the entries of its whole registers (in15 = 2 on) and runs from them;
    from the third on the run covers the record and no entry is stored, and every register
    starts after FACE's rounds. A record of other nonce bytes takes the full path and
    empties the run; the same lengths under fresh random nonces never fill."""
    k = Emulated(preset, info)
    rng = random.Random(1420)
    face = {"r1": 1, "r2": 2}[info["face"]]
    sbox = {"gfni": "vgf2p8affineinvqb"}.get(info["method"], "vaesenc")
    for bits in (128, 256):
        key, iv = rng.randbytes(bits // 8), rng.randbytes(12)
        k.init(key)
        regs = -(-1420 // 64)                     # registers of 4 blocks the record takes
        rounds = []
        for seq in range(5):
            nonce = iv[:4] + bytes(a ^ b for a, b in zip(iv[4:], seq.to_bytes(8, "big")))
            aad, pt = rng.randbytes(13), rng.randbytes(1420 - 16 * (seq == 4))
            before = k.m.counts()[sbox]
            ct, tag = k.seal(nonce, aad, pt)
            rounds.append(k.m.counts()[sbox] - before)
            what = f"AES-{bits}, record {seq}"
            assert (ct, tag) == model.seal(key, nonce, aad, pt, 16), what
            run = (k.field("FILL_START"), k.field("FILL_COUNT"))
            assert run == ((0, 0) if seq == 0 else (2, 4 * regs)), f"{what}: run {run}"
            if seq == 0:
                assert k.field("FILL_BUDGET") == 2, what       # seen once, nothing stored
        # records 2..4 skip FACE's rounds of every register the record path computes
        # (chunks, then the masked tail's registers: a power of two up to a chunk, so
        # the tail's last registers may lie past the message) and run them once for the
        # window's cache, which record 0 (a new prefix: no window) leaves out; record 1
        # also runs FACE's rounds of the registers it fills (record 4 is a block shorter,
        # in the same registers)
        chunk, rest, computed = info["record_chunk"], 1420 - 64 * info["record_chunk"], 0
        while rest > 64 * chunk:
            rest, computed = rest - 64 * chunk, computed + chunk
        computed += chunk + min(chunk, 1 << (-(-rest // 64) - 1).bit_length())
        assert rounds[0] - rounds[2] == face * (computed - 1), (rounds, computed)
        assert rounds[1] - rounds[2] == face * regs, rounds
        assert rounds[2] == rounds[3] == rounds[4], rounds
        other = bytes([iv[0] ^ 1]) + iv[1:]       # counter byte 0: another table
        pt = rng.randbytes(1420)
        ct, tag = k.seal(other, b"", pt)
        assert (ct, tag) == model.seal(key, other, b"", pt, 16)
        assert (k.field("FILL_START"), k.field("FILL_COUNT")) == (0, 0)
        for n in range(4):                        # fresh nonces: nothing filled, ever
            nonce, pt = rng.randbytes(12), rng.randbytes(rng.randint(513, 1536))
            ct, tag = k.seal(nonce, b"", pt)
            assert (ct, tag) == model.seal(key, nonce, b"", pt, 16), f"fresh {n}"
            assert k.field("FILL_COUNT") == 0, f"fresh {n}"


def _sliced_sbox_ternaries(preset: str, variant: str) -> int:
    """VPTERNLOGD gates of the preset's bit-sliced S-box on zmm, from its lowering."""
    from aesgen.kernels.bitsliced import BitslicedEngine, sbox_lowering
    from aesgen.kernels.spec import KernelSpec
    from aesgen.targets import find_preset

    p = find_preset(preset)
    choice = next(m for m in p.methods if m.variant == variant)
    spec = KernelSpec("bitsliced", "r2", (128,), 8, "evex", width=512, sbox=choice.sbox,
                      uarch=p.uarch)
    lowering, _ = sbox_lowering(BitslicedEngine(spec).strategy, spec.uarch, spec.sbox)
    return sum(1 for mi in lowering.code if mi.op == "ternlog")


def _nonce_for_j0(key: bytes, j0: bytes) -> bytes:
    """A 16-byte nonce N with GHASH_H(N || 0^64 || [128]_64) = j0: J0 = N H^2 ^ L H, so
    N = (j0 ^ L H) H^-2 (H^-2 = H^(2^128 - 3) in GF(2^128))."""
    h = gf128.from_block(model.hash_subkey(key))
    length_block = gf128.from_block(bytes(8) + (128).to_bytes(8, "big"))
    inv2, base, e = gf128.from_block(b"\x80" + bytes(15)), h, (1 << 128) - 3
    while e:                                         # square and multiply; 1 is 0x80 00..
        if e & 1:
            inv2 = gf128.gf_mul(inv2, base)
        base = gf128.gf_mul(base, base)
        e >>= 1
    target = gf128.from_block(j0) ^ gf128.gf_mul(length_block, h)
    return gf128.to_block(gf128.gf_mul(target, inv2))


@pytest.mark.parametrize("preset, info", [p for p in AEADS if p.values[1]["face"] == "none"])
def test_inc32_wraps_inside_a_register(preset, info):
    k = Emulated(preset, info)
    rng = random.Random(32)
    key = rng.randbytes(32)
    k.init(key)
    for low in (0xFFFFFFF5, 0xFFFFFFFE, 0xFFFFFF00 - 14):
        j0 = rng.randbytes(12) + low.to_bytes(4, "big")
        nonce = _nonce_for_j0(key, j0)
        assert model.j0(model.hash_subkey(key), nonce) == j0
        for length in (100, 700):
            aad, pt = rng.randbytes(5), rng.randbytes(length)
            assert k.seal(nonce, aad, pt) == model.seal(key, nonce, aad, pt, 16), \
                f"J0 ending {low:#x}, {length} bytes"
