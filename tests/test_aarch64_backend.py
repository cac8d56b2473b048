"""The AArch64 backend: A64 table, AAPCS64 frame, printer, and the armv8-ce kernels run under
qemu-aarch64 against the Python AES model.

Static checks run everywhere; the assembling and running ones need aarch64-linux-gnu-gcc and
qemu-aarch64 and are skipped, naming the missing tool, without them. The run test builds
one static binary per generated set (tests/aarch64_driver.c + the set's .S files and
registry) and feeds it one script of steps for all kernels of the set (see the driver's
comment), so a whole set costs one qemu start.
"""
from __future__ import annotations

import dataclasses

import functools
import json
import random
import re
import shutil
import struct
import subprocess
from pathlib import Path

import pytest

from aesgen.dsl.builder import KernelBuilder
from aesgen.dsl.operands import (A64_VEC, SP, Imm, Mem, Reg, VList, kind_matches,
                                 logical_immediate, xreg)
from aesgen.emit.compile import compile_kernel
from aesgen.emit.generate import GenerateRequest, render_set
from aesgen.isa.table import load_table
from aesgen.kernels import ctx_layout as L
from aesgen.kernels.spec import KernelSpec
from aesgen.model import face as F
from aesgen.model.aes import (add_round_key, ctr_xor, expand_key, mix_columns, shift_rows,
                              sub_bytes, xor_bytes)
from aesgen.passes import compile_function
from aesgen.passes.abi import AAPCS64
from aesgen.paths import GENERATED
from aesgen.targets import all_presets

HERE = Path(__file__).parent
CC = "aarch64-linux-gnu-gcc"
QEMU = "qemu-aarch64"
A64_PRESETS = {n: p for n, p in all_presets().items() if p.arch == "aarch64"}
RUNNABLE = [n for n, p in A64_PRESETS.items() if p.methods]


def need(*tools: str) -> None:
    missing = [t for t in tools if shutil.which(t) is None]
    if missing:
        pytest.skip(f"{', '.join(missing)} not installed (the AArch64 cross toolchain / "
                    "user-mode qemu)")


def rendered(preset: str, keys=(128, 192, 256), prefix="aesgen_",
             ce_interleave: int | None = None,
             modes: tuple[str, ...] = ("ctr", "gcm")) -> dict[str, str]:
    """The preset's set; with ``ce_interleave``, only armv8-ce, at that interleave (a value
    `aesgen tune` tries: odd batches in its ladder). Rendered once a process for the same
    arguments, however they are passed."""
    return _rendered(preset, tuple(keys), prefix, ce_interleave, tuple(modes))


@functools.cache
def _rendered(preset: str, keys: tuple[int, ...], prefix: str, ce_interleave: int | None,
              modes: tuple[str, ...]) -> dict[str, str]:
    p = A64_PRESETS[preset]
    committed = GENERATED / preset / "manifest.json"
    if (keys, prefix, ce_interleave) == ((128, 192, 256), "aesgen_", None) \
            and committed.exists():
        # what `aesgen generate --cpu P` writes, every mode (a superset of ``modes``):
        # tests/test_regenerate.py proves the folder is what rendering gives, so it is
        # read, not rendered again (minutes of the test run)
        manifest = json.loads(committed.read_text())
        if manifest["command"] == f"aesgen generate --cpu {preset} -o generated/{preset}":
            return {name: (committed.parent / name).read_text() for name in manifest["files"]}
    if ce_interleave is not None:
        p = dataclasses.replace(p, methods=tuple(
            dataclasses.replace(m, interleave=ce_interleave) for m in p.methods
            if m.variant == "armv8-ce"))
    req = GenerateRequest(p, tuple(m.variant for m in p.methods), ("none", "r1", "r2"), keys,
                          prefix, f"aesgen generate --cpu {preset}", modes)
    return render_set(req)


# --- the instruction table -----------------------------------------------------------------
T = load_table("aarch64")
V = Reg(A64_VEC, 1001, 128, "16b")
W = Reg(A64_VEC, 1002, 128, "16b")
X = xreg(1003)


@pytest.mark.parametrize("name, operands", [
    ("aese", (X, V)),                                    # a GPR where a vector goes
    ("aese", (V.s4, W)),                                 # wrong arrangement
    ("add", (X, X, Imm(4096))),                          # imm12 out of range
    ("and", (X, X, Imm(0x12345))),                       # not a bitmask immediate
    ("ldr", (V.q, Mem(128, base=X, disp=8))),            # q offset not a multiple of 16
    ("ldr", (V.q, Mem(128, base=X, disp=16 * 4096))),    # beyond the scaled imm12
    ("ldp", (V.q, W.q, Mem(256, base=X, disp=1024))),    # beyond simm7 * 16
    ("ld1", (VList((V,)), Mem(128, base=X, disp=16))),   # ld1 takes no offset
    ("eor3", (V, V, W)),                                 # three operands, not four
    ("ushr", (V, V, Imm(9))),                            # shift beyond the element
    ("mov", (V, X)),                                     # no such move
])
def test_table_rejects_bad_operand_kinds(name, operands):
    with pytest.raises(TypeError, match=rf"aarch64: {name.split('.')[0]} does not take"):
        T.match(name, operands)


def test_table_accepts_and_prints_the_forms_the_kernels_use():
    from aesgen.dsl.ir import Instruction
    from aesgen.printer.gas_aarch64 import format_instruction

    def text(name, *ops):
        phys = tuple(_physical(o) for o in ops)
        return format_instruction(Instruction(T.match(name, phys), phys)).strip()

    assert text("aese", V, W) == "aese\tv1.16b, v2.16b"
    assert text("add", X, X, X, Imm(4)) == "add\tx3, x3, x3, lsl #4"
    assert text("ldp", V.q, W.q, Mem(256, base=X, disp=32, writeback="post")) == \
        "ldp\tq1, q2, [x3], #32"
    assert text("stp", X, X, Mem(128, base=SP, disp=-16, writeback="pre")) == \
        "stp\tx3, x3, [sp, #-16]!"
    assert text("ld1", VList((V.s4, W.s4)), Mem(256, base=X)) == "ld1\t{v1.4s, v2.4s}, [x3]"
    assert text("ins", V.lane_view("b", 15), X.w) == "mov\tv1.b[15], w3"
    assert text("movz", X, Imm(0xff), Imm(16)) == "movz\tx3, #255, lsl #16"
    assert re.fullmatch(r"hint\t#34\s+// bti c", text("hint", Imm(34)))
    assert T.match("eor3", (V, V, W, W)).features == ("ASIMD", "SHA3")
    assert T.match("aesmc", (V, W)).features == ("ASIMD", "AES")


def _physical(op):
    """Map the virtual ids above to small physical ones for printing."""
    if isinstance(op, Reg) and op.is_virtual:
        return Reg(op.cls, op.id - 1000, op.width, op.arr, op.lane)
    if isinstance(op, Mem):
        return op.with_registers(_physical(op.base) if op.base else None,
                                 _physical(op.index) if op.index else None)
    if isinstance(op, VList):
        return VList(tuple(_physical(r) for r in op.regs))
    return op


def test_logical_immediates():
    for v in (0xFF, 0xFFFFFFFFFFFFFF00, 0x0000FF0000000000, 0x5555555555555555, 1 << 63):
        assert logical_immediate(v, 64), hex(v)
    for v in (0, 2 ** 64 - 1, 0xFF00000000FF0000, 0x12345):
        assert not logical_immediate(v, 64), hex(v)
    assert kind_matches(Imm(0x1B), "u12") and not kind_matches(Imm(0x1B), "bimm32")


def test_register_lists_are_coloured_consecutively():
    b = KernelBuilder(T, "list_test")
    b.asm.hint(Imm(34))
    p = b.gp()
    b.asm.mov(p, xreg(0))
    regs = [b.vec(128) for _ in range(4)]
    idx, out = b.vec(128), b.vec(128)
    b.asm.ld1(VList(tuple(r.b16 for r in regs)), Mem(512, base=p, disp=64, writeback="post"))
    b.asm.ldr(idx.q, Mem(128, base=p))
    b.asm.tbl(out.b16, VList(tuple(r.b16 for r in regs)), idx.b16)
    b.asm.str(out.q, Mem(128, base=p))
    b.asm.ret()
    fn = compile_function(b.build(), AAPCS64)
    lists = [op for ins in fn.instructions() for op in ins.operands if isinstance(op, VList)]
    for lst in lists:
        ids = [r.id for r in lst.regs]
        assert ids == [(ids[0] + i) % 32 for i in range(4)], ids
    assert lists[0] == lists[1]


# --- the frame and the ABI -----------------------------------------------------------------
CALLEE_GP = [f"x{n}" for n in range(19, 29)]
CALLEE_V = list(range(8, 16))


def _bodies(text: str) -> dict[str, list[str]]:
    out, cur = {}, None
    for line in text.splitlines():
        m = re.match(r"^(\w+):$", line)
        if m:
            cur = m.group(1)
            out[cur] = []
            continue
        if cur and line.startswith("\t.size"):
            cur = None
        elif cur and line.startswith("\t") and not line.startswith(("\t.", "\t//")):
            out[cur].append(line.split("//", 1)[0].strip())
    return out


@pytest.mark.parametrize("preset", RUNNABLE)
def test_frames_save_what_they_use_and_scrub_vectors(preset):
    files = rendered(preset)
    for name, text in files.items():
        if not name.endswith(".S"):
            continue
        for sym, body in _bodies(text).items():
            assert body[0] == "hint\t#34", f"{sym} does not start with bti c"
            # a function that calls (GCM's entry points: bl to their data path) signs its
            # return address first (paciasp), keeps x29 and x30 first in its frame and
            # authenticates the address after loading it back (autiasp before each ret)
            calls = any(ln.startswith("bl\t") for ln in body)
            pair = ("stp\tx29, x30, [sp]", "ldp\tx29, x30, [sp]")
            if calls:
                assert body[1] == "hint\t#25" and body[3] == pair[0], sym
                assert all(body[n - 1] == "hint\t#29" for n, ln in enumerate(body)
                           if ln == "ret"), sym
                body = [body[0]] + [ln for ln in body[2:] if ln != "hint\t#29"]
            assert ("hint\t#25" in body) == ("hint\t#29" in body) == False, sym
            joined = "\n".join(ln for ln in body if not (calls and ln in pair))
            assert not re.search(r"\b[xw](18|29|30)\b", joined), f"{sym} uses x18/x29/x30"
            used_gp = sorted({r for r in re.findall(r"\b[xw](\d+)\b", joined)
                              if 19 <= int(r) <= 28}, key=int)
            used_v = sorted({int(r) for r in re.findall(r"\b[vqds](\d+)\b", joined)
                             if 8 <= int(r) <= 15})
            saved = []
            i = 1
            size = 0
            if body[1].startswith("sub\tsp, sp, #"):
                size = int(body[1].rsplit("#", 1)[1])
                assert size % 16 == 0, sym
                i = 2
                while body[i].startswith(("stp\t", "str\t")) and "[sp" in body[i]:
                    saved += re.findall(r"\b([xd]\d+)\b", body[i].split("[", 1)[0])
                    i += 1
            frame_pair = ["x29", "x30"] if calls else []
            assert sorted(r for r in saved if r[0] == "x") == sorted(
                [f"x{r}" for r in used_gp] + frame_pair), sym
            assert sorted(int(r[1:]) for r in saved if r[0] == "d") == used_v, sym
            assert size >= 8 * len(saved)
            rets = [n for n, ln in enumerate(body) if ln == "ret"]
            assert rets, sym
            for n in rets:
                if size:
                    assert body[n - 1] == f"add\tsp, sp, #{size}", sym
                    restored = []
                    for ln in body[n - 1 - (len(saved) + 1) // 2 - 2:n - 1]:
                        if ln.startswith(("ldp\t", "ldr\t")) and "[sp" in ln:
                            restored += re.findall(r"\b([xd]\d+)\b", ln.split("[", 1)[0])
                    assert sorted(restored) == sorted(saved), sym
                if sym.endswith(("_init", "_xor_stream")):
                    vectors = {int(r) for r in re.findall(r"\bv(\d+)\.", joined)} | {
                        int(r) for r in re.findall(r"\b[qds](\d+)\b", joined)}
                    scrubbed = {int(m.group(1)) for ln in body[:n]
                                for m in [re.fullmatch(r"eor\tv(\d+)\.16b, v\1\.16b, v\1\.16b",
                                                       ln)] if m}
                    assert vectors <= scrubbed, f"{sym}: {vectors - scrubbed} not zeroed"


def test_sets_carry_bti_pac_note_and_no_exec_stack():
    files = rendered("cortex-a72")
    for name, text in files.items():
        if name.endswith(".S"):
            assert '.section\t.note.GNU-stack,"",%progbits' in text
            assert "0xc0000000" in text and "\t.long\t3\n" in text


def test_native_never_picks_an_aarch64_preset_here():
    import platform

    from aesgen.targets import choose_native_preset
    if platform.machine() != "x86_64":
        pytest.skip("checks an x86-64 host")
    every = {"SSE2", "SSSE3", "SSE41", "AESNI", "PCLMULQDQ", "ASIMD", "AES", "PMULL", "SHA3"}
    preset, _ = choose_native_preset(every)
    assert preset.arch == "x86_64"


def test_unimplemented_a64_methods_say_so():
    from aesgen.emit.compile import NOT_YET_IMPLEMENTED
    for method in NOT_YET_IMPLEMENTED:
        with pytest.raises(ValueError, match="not implemented yet"):
            compile_kernel(KernelSpec(method, "none", (128,), 4, "neon"))
    with pytest.raises(ValueError, match="encodings"):
        KernelSpec("armv8-ce", "none", (128,), 8, "sse")


# --- the AESE domain of the FACE caches ------------------------------------------------------
def aese(x: bytes, k: bytes) -> bytes:
    return shift_rows(sub_bytes(xor_bytes(x, k)))


def test_aese_domain_derivation():
    """D_r = s_r ^ rk_r: what AESE/AESMC chains hold after r rounds (engines.py docstring)."""
    rng = random.Random(6)
    for bits in (128, 192, 256):
        rk = expand_key(bytes(rng.randrange(256) for _ in range(bits // 8)))
        nr = len(rk) - 1
        ctr = bytes(rng.randrange(256) for _ in range(16))
        states = F.round_states(rk, ctr, nr)
        x = ctr
        for r in range(1, nr):
            x = mix_columns(aese(x, rk[r - 1]))
            assert x == xor_bytes(states[r], rk[r])
        assert xor_bytes(aese(x, rk[nr - 1]), rk[nr]) == states[nr]
        # cache ^ table entry = the domain value the next AESE expects
        t2 = F.rd2plus_table(rk, ctr)
        c2 = xor_bytes(F.rd2_cache(rk, ctr), rk[2])
        assert xor_bytes(c2, t2[ctr[15]]) == xor_bytes(states[2], rk[2])
        assert add_round_key(states[0], bytes(16)) == xor_bytes(ctr, rk[0])


# --- assemble every emitted file -------------------------------------------------------------
# every preset's whole set; the key subsets with CTR alone (the GCM kernels of the NEON
# methods take seconds each to build), but for one preset with both modes
KEY_SETS = [(p, (128, 192, 256), ("ctr", "gcm")) for p in RUNNABLE] + [
    (p, keys, ("ctr", "gcm") if (p, keys) == ("cortex-a53", (128,)) else ("ctr",))
    for p in RUNNABLE for keys in ((128,), (192, 256))]


@pytest.mark.parametrize("preset, keys, modes", KEY_SETS)
def test_every_file_assembles(preset, keys, modes, tmp_path):
    need(CC)
    files = rendered(preset, keys, modes=modes)
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    # one compiler run for the .S files and one for the C: each file to its <name>.o here
    for suffix, flags in ((".S", []), (".c", ["-std=c99", "-Wall", "-Wextra", "-Werror",
                                              "-pedantic"])):
        sources = [name for name in files if name.endswith(suffix)]
        assert sources, suffix
        proc = subprocess.run([CC, *flags, "-c", *sources], cwd=tmp_path,
                              capture_output=True, text=True)
        assert proc.returncode == 0 and not proc.stderr, proc.stderr
    for name in files:
        if name.endswith((".S", ".c")):
            obj = tmp_path / (name.rsplit(".", 1)[0] + ".o")
            assert obj.stat().st_size > 0, obj.name


# --- run under qemu against the model --------------------------------------------------------
class Script:
    """Steps for the driver, and what the model expects of each (shared by all kernels)."""

    def __init__(self) -> None:
        self.data = bytearray()
        self.steps: list[tuple] = []     # (op, expected, extra)
        self.key = b""
        self.iv = b""
        self.offset = 0

    def init(self, key: bytes, iv: bytes, ok: bool = True) -> None:
        self.data += bytes([1]) + struct.pack("<I", len(key)) + key.ljust(32, b"\0") + iv
        self.steps.append(("init", 0 if ok else -1, None))
        if ok:
            self.key, self.iv, self.offset = key, iv, 0

    def set_iv(self, iv: bytes) -> None:
        self.data += bytes([2]) + iv
        self.steps.append(("set_iv", 0, None))
        self.iv, self.offset = iv, 0

    def xor(self, n: int, inplace: bool = False, skew: int = 0) -> None:
        seed = len(self.steps) * 7 + 3
        self.data += bytes([3]) + struct.pack("<II", n, seed) + bytes([inplace, skew])
        data = bytes((seed + 131 * i + (i >> 8)) & 255 for i in range(n))
        expected = ctr_xor(self.key, self.iv, data, self.offset)
        self.offset += n
        self.steps.append(("xor", expected, None))

    def dump(self, check) -> None:
        self.data += bytes([5])
        self.steps.append(("dump", None, (check, self.key, self.iv, self.offset)))

    def wipe(self) -> None:
        self.data += bytes([4])
        self.steps.append(("wipe", 1, None))

    def end(self) -> bytes:
        return bytes(self.data) + b"\0"


def _iv(counter: int) -> bytes:
    return (counter % 2 ** 128).to_bytes(16, "big")


def build_script() -> Script:
    rng = random.Random(0xA64)
    s = Script()
    for bits in (128, 192, 256):
        rb = lambda n: bytes(rng.randrange(256) for _ in range(n))  # noqa: E731
        key = rb(bits // 8)
        iv0 = rb(15) + b"\x00"
        s.init(key, iv0)
        for n, inplace, skew in ((0, 0, 0), (1, 0, 1), (15, 1, 3), (16, 0, 0), (17, 0, 7),
                                 (33, 1, 0), (16 * 300 + 7, 0, 5), (5, 0, 0),
                                 (16 * 296, 1, 9)):
            s.xor(n, bool(inplace), skew)
        # complete tables (the first window, a new tag, fills one batch; the second, back
        # at those in15, lifts the limit and fills the rest), cache of the current window
        s.dump("tables")
        # set_iv keeping bytes 0, 5, 10: tables kept; starts 13 blocks before a window's end
        iv1 = bytearray(rb(16))
        for i in (0, 5, 10):
            iv1[i] = iv0[i]
        iv1[15] = 0xF3
        s.set_iv(bytes(iv1))
        s.xor(16 * 20 + 3)
        s.dump("kept")
        # byte 5 changes: the fill restarts at this IV's in15, and only the first fill batch
        # under the new tag stores its entries (kernels/face_fill.py: second sight)
        iv2 = bytearray(iv1)
        iv2[5] ^= 0x40
        iv2[15] = 0x10
        s.set_iv(bytes(iv2))
        s.xor(16 * 10)
        s.dump(("restarted", 0x10, 10))
        # carries: into byte 11 (2^32), into byte 10 (2^40: the table tag changes mid-call),
        # into counter bytes 0..7 (2^64), and the 2^128 wrap
        base = int.from_bytes(rb(16), "big")
        s.set_iv(_iv((base & ~(2 ** 32 - 1)) | 0xFFFFFFF0))
        s.xor(16 * 40)
        s.set_iv(_iv((base & ~(2 ** 40 - 1)) | 0xFFFFFFFFF8))
        s.xor(100)
        s.xor(1)
        s.xor(16 * 30 + 9 - 101)
        s.set_iv(_iv((base & ~(2 ** 64 - 1)) | 0xFFFFFFFFFFFFFFF5))
        s.xor(16 * 24)
        s.set_iv(_iv(2 ** 128 - 7))
        s.xor(16 * 20 + 1)
        # re-key on a used context (tables must go), then a refused key length
        key2 = rb(bits // 8)
        s.init(key2, bytes(iv0))
        s.xor(16 * 50 + 3)
        s.init(rb(20), rb(16), ok=False)
        s.xor(16)
        # a stream split at odd bytes
        s.set_iv(rb(16))
        for n in (1, 2, 3, 5, 8, 13, 21, 34, 55, 89, 144, 233, 377):
            s.xor(n)
        # fresh key starting mid-window: the fill wraps into the next window and completes
        key3 = rb(bits // 8)
        s.init(key3, rb(15) + b"\x37")
        s.xor(16 * 260)
        s.xor(16 * 300 + 11, skew=2)
        s.dump("tables")
        s.wipe()
    return s


def check_dump(ctx: bytes, face: str, check, key: bytes, iv: bytes, offset: int,
               ce_domain: bool = True) -> None:
    """The state every A64 method shares: FIPS round keys, key size, counter, and the FACE
    window, fill position, caches and tables. Caches are in the AESE domain (s_r ^ rk_r) for
    armv8-ce, plain s_r for the NEON engines (ce_domain=False); tables are the same."""
    rk = expand_key(key)
    cache_key = (lambda r: rk[r]) if ce_domain else (lambda r: bytes(16))
    assert ctx[:16 * len(rk)] == b"".join(rk), "round keys differ from FIPS-197"
    assert int.from_bytes(ctx[L.KEY_BITS:L.KEY_BITS + 4], "little") == 8 * len(key)
    ctr_lo, ctr_hi = struct.unpack_from("<QQ", ctx, L.CTR_LO)
    nxt = int.from_bytes(iv, "big") + -(-offset // 16)
    assert (ctr_hi << 64 | ctr_lo) == nxt % 2 ** 128, "counter"
    if face == "none":
        return
    win_lo, win_hi = struct.unpack_from("<QQ", ctx, L.WINDOW_LO)
    start, count = struct.unpack_from("<QQ", ctx, L.FILL_START)
    block = _iv(win_hi << 64 | win_lo)
    last = _iv(int.from_bytes(iv, "big") + (offset - 1) // 16)
    assert block == F.window_base_block(last), "the cache is not for the last block's window"
    table = 384
    if check in ("tables", "kept"):
        assert count == 256, f"table not complete/kept (count {count})"
    else:                   # ("restarted", in15, blocks): one fill batch of those blocks
        _, want_start, blocks = check
        assert start == want_start and 1 <= count <= blocks, (start, count)
    if face == "r1":
        assert ctx[L.CACHE_R1:L.CACHE_R1 + 16] == xor_bytes(F.rd1_cache(rk, block),
                                                             cache_key(1))
        want = F.rd1plus_table(rk, block)
        got = [ctx[table + 4 * v:table + 4 * v + 4] for v in range(256)]
    else:
        assert ctx[L.CACHE_R2:L.CACHE_R2 + 16] == xor_bytes(F.rd2_cache(rk, block),
                                                             cache_key(2))
        want = F.rd2plus_table(rk, block)
        got = [ctx[table + 16 * v:table + 16 * v + 16] for v in range(256)]
    valid = range(256) if count == 256 else [(start + j) % 256 for j in range(count)]
    for v in valid:
        assert got[v] == want[v], f"table entry {v}"


@functools.cache
def script() -> Script:
    return build_script()


@pytest.mark.parametrize("preset, ce_interleave", [("cortex-a72", None), ("apple-m1", None),
                                                   ("apple-m1", 6)])
def test_kernels_run_under_qemu(preset, ce_interleave, tmp_path):
    """Every kernel of the set, every key size and FACE level, the edge counters, against
    the model; plus the registry's getauxval features and best_kernel under -cpu max. With
    armv8-ce at interleave 6 alone, its ladder's batch of 3 (loads and stores in pairs and
    one single)."""
    need(CC, QEMU)
    prefix = preset.replace("-", "_") + "_"
    files = rendered(preset, (128, 192, 256), prefix, ce_interleave, ("ctr",))
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    exe = tmp_path / "driver"
    sources = [n for n in files if n.endswith((".S", ".c"))]
    proc = subprocess.run([CC, "-static", "-O1", f"-DPREFIX={prefix}", "-I", str(tmp_path),
                           "-o", str(exe), str(HERE / "aarch64_driver.c"), *sources],
                          cwd=tmp_path, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    sc = script()
    run = subprocess.run([QEMU, "-cpu", "max", str(exe)], input=sc.end(),
                         capture_output=True, timeout=120)
    assert run.returncode == 0, run.stderr.decode()
    out = memoryview(run.stdout)
    features, best = struct.unpack_from("<QI", out, 0)
    header = files["aesgen.h"]
    bits = {m.group(1): 1 << int(m.group(2)) for m in re.finditer(
        rf"#define {prefix.upper()}CPU_(\w+) \(UINT64_C\(1\) << (\d+)\)", header)}
    want = {"ASIMD", "AES", "PMULL"} | ({"SHA3"} if "SHA3" in bits else set())
    assert features == sum(bits[n] for n in want), (features, bits)
    pos = 12
    names = []
    while pos < len(out):
        (n,) = struct.unpack_from("<I", out, pos)
        name = bytes(out[pos + 4:pos + 4 + n]).decode()
        pos += 4 + n
        names.append(name)
        face = name.rsplit("-", 1)[1]
        for i, (op, expected, extra) in enumerate(sc.steps):
            where = f"{name} step {i} ({op})"
            if op in ("init", "set_iv"):
                (rc,) = struct.unpack_from("<i", out, pos)
                pos += 4
                assert rc == expected, where
            elif op == "xor":
                got = bytes(out[pos:pos + len(expected)])
                pos += len(expected)
                assert got == expected, f"{where}: first bad byte " + str(next(
                    j for j in range(len(got)) if got[j] != expected[j]))
                assert out[pos] == 1, f"{where}: bytes outside the buffers changed"
                pos += 1
            elif op == "wipe":
                assert out[pos] == 1, f"{where}: context not zeroed"
                pos += 1
            elif op == "dump":
                (size,) = struct.unpack_from("<I", out, pos)
                ctx = bytes(out[pos + 4:pos + 4 + size])
                pos += 4 + size
                check, key, iv, offset = extra
                if not name.startswith("armv8-ce-"):
                    continue     # other engines' domains: their own tests (test_neon_tbl.py)
                try:
                    check_dump(ctx, face, check, key, iv, offset)
                except AssertionError as e:
                    raise AssertionError(f"{where}: {e}") from None
    assert [n for n in names if n.startswith("armv8-ce-")] == [
        f"armv8-ce-face-{f}" for f in ("none", "r1", "r2")]
    assert names[best] == "armv8-ce-face-r2"
