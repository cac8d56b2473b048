"""The x86-64 emulator (aesgen.testing.x86emu) and, through it, the kernels this CPU cannot
run.

1. The emulator against this CPU: hand-written instruction snippets (every instruction
   form the host can execute, flags included) and the committed CTR and GCM kernels of
   two presets run natively (ctypes) and in the emulator on the same inputs; outputs,
   return values and the whole context are compared after every call.
2. The zmm/GFNI kernels (znver4, sapphirerapids) in the emulator against the Python model,
   with every input and output placed against the end of its region (an overrun faults).
3. Emulator units: masks, fault suppression, register views, unsupported mnemonics, and
   the AVX-512/GFNI semantics the host cannot check against known values.
"""
from __future__ import annotations

import ctypes
import functools
import json
import random
import re
import subprocess
from pathlib import Path

import pytest

from aesgen.model import gcm as gcm_model
from aesgen.model.aes import SBOX, aes_final_round, aes_round, ctr_xor, gf_mul
from aesgen.paths import GENERATED
from aesgen.testing.x86emu import (ExecutionError, Machine, MemoryFault, Program,
                                   UnsupportedInstruction, clmul_reference)

from test_kernels_run import _host_manifests, missing_features

X86_PRESETS = [m.parent for m in sorted(GENERATED.glob("*/manifest.json"))
               if json.loads(m.read_text()).get("arch", "x86_64") == "x86_64"]
NATIVE_PRESETS = ("znver3", "x86-64-v2")        # compared against this CPU
EMULATED_PRESETS = ("znver4", "sapphirerapids")  # kernels this CPU may lack features for


def _manifest(preset: str) -> dict:
    return json.loads((GENERATED / preset / "manifest.json").read_text())


@functools.cache
def _program(path: str) -> Program:
    return Program.parse_files(path)


def _sx32(v: int) -> int:
    v &= 0xFFFF_FFFF
    return v - (1 << 32) if v >> 31 else v


def _first_diff(a: bytes, b: bytes) -> int:
    return next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))


# =========================================================================================
# two ways to run the same entry points: this CPU (ctypes) and the emulator
class NativeSide:
    def __init__(self, lib: ctypes.CDLL) -> None:
        self.lib, self.keep = lib, []

    def alloc(self, data: bytes, align: int = 1) -> int:
        raw = ctypes.create_string_buffer(bytes(data), len(data) + 64)
        self.keep.append(raw)
        base = ctypes.addressof(raw)
        addr = (base + align - 1) & ~(align - 1)
        if addr != base:
            ctypes.memmove(addr, bytes(data), len(data))
        return addr

    def read(self, addr: int, n: int) -> bytes:
        return ctypes.string_at(addr, n) if n else b""

    def free(self, addr: int) -> None:
        pass

    def call(self, sym: str, *args: int) -> int:
        fn = getattr(self.lib, sym)
        fn.restype = ctypes.c_uint64
        fn.argtypes = [ctypes.c_uint64] * len(args)
        return fn(*[a & (2**64 - 1) for a in args])


class EmuSide:
    """Every buffer is its own region ending right at its last byte: reads or writes past
    it fault; contexts are 64-byte aligned (their sizes are multiples of 64)."""

    def __init__(self, machine: Machine) -> None:
        self.m = machine

    def alloc(self, data: bytes, align: int = 1) -> int:
        addr = self.m.alloc_end(bytes(data))
        assert addr % align == 0
        return addr

    def read(self, addr: int, n: int) -> bytes:
        return self.m.read(addr, n)

    def free(self, addr: int) -> None:
        self.m.free(addr)

    def call(self, sym: str, *args: int) -> int:
        return self.m.call(sym, *args)


def _compare(native: list, emulated: list, what: str) -> None:
    assert len(native) == len(emulated), f"{what}: {len(native)} vs {len(emulated)} steps"
    for (label, *nv), (_, *ev) in zip(native, emulated):
        for n, (a, b) in enumerate(zip(nv, ev)):
            if a != b:
                if isinstance(a, bytes):
                    raise AssertionError(f"{what}: {label}: item {n} differs at byte "
                                         f"{_first_diff(a, b)} (native {a.hex()[:96]}, "
                                         f"emulated {b.hex()[:96]})")
                raise AssertionError(f"{what}: {label}: item {n}: native {a!r}, emulated {b!r}")


# --- scripts: the same calls, observed the same way on either side -------------------------
def ctr_script(side, syms: dict, ctx_size: int, seed: int, long_stream: bool) -> list:
    rng = random.Random(seed)
    obs = []
    ctx = side.alloc(rng.randbytes(ctx_size), 64)
    look = lambda: side.read(ctx, ctx_size)  # noqa: E731

    def stream(label, n, inplace=False):
        data = rng.randbytes(n)
        src = side.alloc(data) if n else 0
        dst = src if inplace else (side.alloc(rng.randbytes(n)) if n else 0)
        side.call(syms["xor_stream"], ctx, dst, src, n)
        obs.append((f"{label} xor_stream({n}{', in place' if inplace else ''})",
                    side.read(dst, n), look()))
        for a in {src, dst} - {0}:
            side.free(a)

    for klen in (16, 24, 32):
        key, iv = rng.randbytes(klen), rng.randbytes(16)
        if klen == 24:
            iv = iv[:12] + b"\xff\xff\xff\xfb"     # a carry into byte 11 soon
        kb, ivb = side.alloc(key), side.alloc(iv)
        r = side.call(syms["init"], ctx, kb, klen, ivb)
        obs.append((f"init(key_len {klen})", _sx32(r), look()))
        for n in (0, 1, 15, 16, 17, 63, 200, rng.randint(300, 700)):
            stream(f"AES-{8 * klen}", n, inplace=(n == 63))
        iv2 = side.alloc(rng.randbytes(15) + b"\xfa")
        obs.append(("set_iv", _sx32(side.call(syms["set_iv"], ctx, iv2)), look()))
        stream(f"AES-{8 * klen} after set_iv", 5)
        stream(f"AES-{8 * klen} after set_iv", rng.randint(900, 1300))
        if long_stream and klen == 16:       # two FACE windows: the tables fill and serve
            stream("AES-128 long", 8192 + 16 * 20 + 3)
            obs.append(("set_iv again", _sx32(side.call(syms["set_iv"], ctx, ivb)), look()))
            stream("AES-128 same tag", 16 * 70 + 9)
        for a in (kb, ivb, iv2):
            side.free(a)
    kb = side.alloc(bytes(20))
    obs.append(("init(key_len 20)", _sx32(side.call(syms["init"], ctx, kb, 20, kb)), look()))
    side.call(syms["wipe"], ctx)
    obs.append(("wipe", look()))
    return obs


GCM_CASES = [  # (nonce bytes, aad bytes, message bytes, tag bytes)
    (12, 0, 0, 16), (12, 13, 64, 16), (12, 16, 17, 12), (1, 5, 33, 16), (16, 20, 300, 8),
    (40, 70, 517, 16), (12, 0, 1029, 16)]


def gcm_script(side, syms: dict, ctx_size: int, seed: int, cases=GCM_CASES) -> list:
    rng = random.Random(seed)
    obs = []
    ctx = side.alloc(rng.randbytes(ctx_size), 64)
    look = lambda: side.read(ctx, ctx_size)  # noqa: E731

    def buf(data):
        return side.alloc(data) if data else 0

    def split(n):
        pieces = []
        while n > 0:
            p = min(n, rng.choice((0, 1, 15, 16, 17, rng.randint(0, n))))
            pieces.append(p)
            n -= p
        return pieces + [0]

    for klen in (16, 24, 32):
        key = rng.randbytes(klen)
        r = side.call(syms["init"], ctx, buf(key), klen)
        obs.append((f"init({klen})", _sx32(r), look()))
        for n, (nl, al, ml, tl) in enumerate(cases):
            if ml > 600 and klen != 16:
                continue
            case = f"AES-{8 * klen} case {n}"
            nonce, aad, pt = rng.randbytes(nl), rng.randbytes(al), rng.randbytes(ml)
            nb, ab, pb = buf(nonce), buf(aad), buf(pt)
            out, tag = buf(rng.randbytes(ml)), side.alloc(rng.randbytes(tl))
            r = side.call(syms["seal"], ctx, nb, nl, ab, al, pb, ml, out, tag, tl)
            ct, tg = side.read(out, ml), side.read(tag, tl)
            obs.append((f"{case} seal", _sx32(r), ct, tg, look()))
            cb = buf(ct)
            out2 = buf(rng.randbytes(ml))
            r = side.call(syms["open"], ctx, nb, nl, ab, al, cb, ml, out2, tag, tl)
            obs.append((f"{case} open", _sx32(r), side.read(out2, ml), look()))
            bad = side.alloc(bytes([tg[0] ^ 4]) + tg[1:])
            r = side.call(syms["open"], ctx, nb, nl, ab, al, cb, ml, out2, bad, tl)
            obs.append((f"{case} open, bad tag", _sx32(r), side.read(out2, ml), look()))
            # the same message in pieces
            r = side.call(syms["start"], ctx, nb, nl)
            obs.append((f"{case} start", _sx32(r), look()))
            pos = 0
            for p in split(al):
                r = side.call(syms["aad"], ctx, ab + pos if p else 0, p)
                obs.append((f"{case} aad({p})", _sx32(r), look()))
                pos += p
            pos = 0
            for p in split(ml):
                o = side.alloc(rng.randbytes(p)) if p else 0
                r = side.call(syms["encrypt"], ctx, pb + pos if p else 0, p, o)
                obs.append((f"{case} encrypt({p})", _sx32(r), side.read(o, p), look()))
                pos += p
            t2 = side.alloc(rng.randbytes(tl))
            r = side.call(syms["finish_seal"], ctx, t2, tl)
            obs.append((f"{case} finish_seal", _sx32(r), side.read(t2, tl), look()))
            r = side.call(syms["start"], ctx, nb, nl)
            r2 = side.call(syms["aad"], ctx, ab, al)
            obs.append((f"{case} start+aad", _sx32(r), _sx32(r2), look()))
            pos = 0
            for p in split(ml):
                o = side.alloc(rng.randbytes(p)) if p else 0
                r = side.call(syms["decrypt"], ctx, cb + pos if p else 0, p, o)
                obs.append((f"{case} decrypt({p})", _sx32(r), side.read(o, p), look()))
                pos += p
            r = side.call(syms["finish_open"], ctx, tag, tl)
            obs.append((f"{case} finish_open", _sx32(r), look()))
        nb = side.alloc(rng.randbytes(12))
        out = side.alloc(bytes(4))
        r = side.call(syms["seal"], ctx, nb, 12, 0, 0, out, 4, out, out, 3)
        obs.append(("seal, tag_len 3", _sx32(r), side.read(out, 4), look()))
    side.call(syms["wipe"], ctx)
    obs.append(("wipe", look()))
    return obs


# =========================================================================================
# 1a. instruction snippets: this CPU against the emulator
# Each snippet runs with ymm0-3 and rax, rcx, rdx, r8-r11 loaded from random input; the
# registers and the flags (CF ZF SF OF PF, as the snippet says they are defined) are
# stored and compared. Bytes 192..255 of the output are scratch memory for stores.
FLAGS = "czsop"
SNIPPETS: list[tuple[str, str, str]] = []      # (name, code, defined flags)


def _snip(name: str, code: str, flags: str = "") -> None:
    SNIPPETS.append((name, code, flags))


for _i, _m in enumerate(("vpshufb %ymm1, %ymm2, %ymm0", "vpshufb %xmm1, %xmm2, %xmm3",
                         "pshufb %xmm1, %xmm0", "pshufb 32(%rdi), %xmm2",
                         "vpshufb 64(%rdi), %ymm1, %ymm0",
                         "vpalignr $5, %ymm1, %ymm2, %ymm0", "vpalignr $20, %xmm1, %xmm2, %xmm0",
                         "palignr $9, %xmm1, %xmm0",
                         "vpslldq $3, %ymm1, %ymm0", "vpsrldq $13, %ymm1, %ymm0",
                         "vpsrldq $16, %xmm1, %xmm2", "pslldq $4, %xmm0", "psrldq $17, %xmm1",
                         "vpshufd $0x1b, %ymm1, %ymm0", "pshufd $0x4e, %xmm1, %xmm0",
                         "vpshufd $0x93, 32(%rdi), %xmm3",
                         "vpunpcklqdq %ymm1, %ymm2, %ymm0", "vpunpckhqdq %ymm1, %ymm2, %ymm0",
                         "punpcklqdq %xmm1, %xmm0", "vpunpckldq %ymm1, %ymm2, %ymm0",
                         "vpunpckhdq %xmm1, %xmm2, %xmm0",
                         "vaesenc %ymm1, %ymm2, %ymm0", "vaesenclast %ymm1, %ymm2, %ymm0",
                         "vaesdec %ymm1, %ymm2, %ymm0", "vaesdeclast %ymm1, %ymm2, %ymm0",
                         "vaesenc %xmm1, %xmm2, %xmm0", "vaesenc 32(%rdi), %ymm2, %ymm3",
                         "aesenc %xmm1, %xmm0", "aesenclast %xmm1, %xmm0",
                         "aesdec %xmm1, %xmm0", "aesdeclast %xmm1, %xmm0",
                         "aesimc %xmm1, %xmm0", "vaesimc %xmm1, %xmm2",
                         "aeskeygenassist $0x1b, %xmm1, %xmm0",
                         "vaeskeygenassist $0x80, %xmm1, %xmm0",
                         "vaeskeygenassist $0, %xmm1, %xmm2",
                         "pclmulqdq $0x00, %xmm1, %xmm0", "pclmulqdq $0x01, %xmm1, %xmm0",
                         "pclmulqdq $0x10, %xmm1, %xmm0", "pclmulqdq $0x11, %xmm1, %xmm0",
                         "pclmulqdq $0x10, 32(%rdi), %xmm0",
                         "vpclmulqdq $0x00, %xmm1, %xmm2, %xmm0",
                         "vpclmulqdq $0x01, %ymm1, %ymm2, %ymm0",
                         "vpclmulqdq $0x10, %ymm1, %ymm2, %ymm0",
                         "vpclmulqdq $0x11, %ymm1, %ymm2, %ymm0",
                         "vpclmulqdq $0x01, 64(%rdi), %ymm2, %ymm0",
                         "vpsllq $5, %ymm1, %ymm0", "vpsrlq $63, %ymm1, %ymm0",
                         "vpsrlq $64, %ymm1, %ymm0", "vpsrad $7, %ymm1, %ymm0",
                         "vpsrad $40, %xmm1, %xmm0", "psrad $3, %xmm0", "psllq $1, %xmm1",
                         "psrlq $33, %xmm2", "vpslld $9, %ymm1, %ymm0",
                         "vpsrld $31, %ymm1, %ymm0", "vpsllw $3, %ymm1, %ymm0",
                         "andq $63, %r8\n vmovq %r8, %xmm3\n vpsrlq %xmm3, %ymm1, %ymm0",
                         "andq $31, %r8\n vmovq %r8, %xmm3\n vpsrad %xmm3, %ymm1, %ymm0",
                         "vpsllq %xmm3, %ymm1, %ymm0",
                         "vpaddb %ymm1, %ymm2, %ymm0", "vpaddw %ymm1, %ymm2, %ymm0",
                         "vpaddd %ymm1, %ymm2, %ymm0", "vpaddq %ymm1, %ymm2, %ymm0",
                         "vpsubb %ymm1, %ymm2, %ymm0", "vpsubw %xmm1, %xmm2, %xmm0",
                         "vpsubd %ymm1, %ymm2, %ymm0", "vpsubq %ymm1, %ymm2, %ymm0",
                         "paddd %xmm1, %xmm0", "paddb 32(%rdi), %xmm0", "psubb %xmm1, %xmm0",
                         "vpaddd 64(%rdi), %ymm1, %ymm0",
                         "vpxor %ymm1, %ymm2, %ymm0", "vpand %ymm1, %ymm2, %ymm0",
                         "vpor %ymm1, %ymm2, %ymm0", "vpandn %ymm1, %ymm2, %ymm0",
                         "pandn %xmm1, %xmm0", "pand %xmm1, %xmm0", "por 64(%rdi), %xmm0",
                         "pxor %xmm1, %xmm0", "vpxor %xmm1, %xmm2, %xmm0",
                         "vpxor 32(%rdi), %ymm1, %ymm0",
                         "vinserti128 $1, %xmm1, %ymm2, %ymm0",
                         "vinserti128 $0, 32(%rdi), %ymm2, %ymm0",
                         "vextracti128 $1, %ymm1, %xmm0", "vextracti128 $0, %ymm1, %xmm0",
                         "vextracti128 $1, %ymm1, 192(%rsi)",
                         "vperm2i128 $0x31, %ymm1, %ymm2, %ymm0",
                         "vperm2i128 $0x28, %ymm1, %ymm2, %ymm0",
                         "vpermq $0x93, %ymm1, %ymm0",
                         "vbroadcasti128 32(%rdi), %ymm0", "vpbroadcastq %xmm1, %ymm0",
                         "vpbroadcastb %xmm1, %ymm0", "vpbroadcastw %xmm1, %xmm0",
                         "vpbroadcastd 40(%rdi), %ymm0",
                         "vmovd %eax, %xmm0", "vmovq %rax, %xmm0", "movd %eax, %xmm0",
                         "movq %rcx, %xmm1", "vmovd %xmm1, %eax", "vmovq %xmm1, %rax",
                         "movd %xmm1, %ecx", "movq %xmm1, %rdx", "movq %xmm1, %xmm0",
                         "vmovq %xmm1, %xmm0", "movd 8(%rdi), %xmm0", "vmovq 8(%rdi), %xmm0",
                         "vmovd %xmm1, 196(%rsi)", "movq %xmm2, 200(%rsi)",
                         "movdqa %xmm1, %xmm0", "vmovdqa %xmm1, %xmm0",
                         "movdqu 3(%rdi), %xmm0", "vmovdqu 5(%rdi), %ymm0",
                         "vmovdqa 32(%rdi), %ymm0", "movdqa 64(%rdi), %xmm0",
                         "vmovdqu %ymm1, 193(%rsi)", "movdqu %xmm1, 201(%rsi)",
                         "vmovdqa %ymm1, %ymm0",
                         "vpextrq $1, %xmm1, %rax", "pextrd $2, %xmm1, %eax",
                         "vpextrb $7, %xmm1, %ecx", "vpinsrq $1, %rcx, %xmm1, %xmm0",
                         "pinsrd $3, %ecx, %xmm0", "vpinsrb $9, 8(%rdi), %xmm1, %xmm0",
                         "vzeroupper", "vzeroall")):
    _snip(f"v{_i}", _m)
for _i, (_m, _f) in enumerate((("vptest %ymm1, %ymm0", "cz"), ("ptest %xmm1, %xmm0", "cz"),
                               ("vpxor %ymm3, %ymm3, %ymm3\n vptest %ymm3, %ymm0", "czsop"),
                               ("vpcmpeqd %ymm0, %ymm0, %ymm3\n vptest %ymm3, %ymm1", "cz"))):
    _snip(f"ptest{_i}", _m, _f)

_ALU_CASES = [
    ("addq %rcx, %rax", FLAGS), ("addq $-128, %rax", FLAGS), ("subq %rcx, %rax", FLAGS),
    ("subq 8(%rdi), %rax", FLAGS), ("andq %rcx, %rax", FLAGS), ("orq $0x70, %rax", FLAGS),
    ("xorq %rcx, %rax", FLAGS), ("xorl %eax, %eax", FLAGS), ("xorl $5, %eax", FLAGS),
    ("cmpq %rcx, %rax", FLAGS), ("cmpq %rax, %rax", FLAGS), ("cmpl $7, %ecx", FLAGS),
    ("cmpb $0x80, 8(%rdi)", FLAGS), ("cmpq 16(%rdi), %rdx", FLAGS),
    ("testq %rcx, %rax", FLAGS), ("testq $0x400, %rdx", FLAGS),
    ("cmpq %r8, %r9\n adcq %rcx, %rax", FLAGS), ("cmpq %r8, %r9\n adcq $3, %rax", FLAGS),
    ("cmpq %r8, %r9\n sbbq %rcx, %rax", FLAGS), ("cmpq %r9, %r8\n sbbl %eax, %eax", FLAGS),
    ("negq %rcx\n sbbl %eax, %eax", FLAGS), ("negq %rax", FLAGS), ("negl %ecx", FLAGS),
    ("cmpq %r8, %r9\n incq %rax", FLAGS), ("cmpq %r9, %r8\n decq %rax", FLAGS),
    ("cmpq %r8, %r9\n movq $-1, %rax\n incq %rax", FLAGS), ("cmpq %r9, %r8\n movq $0x7fffffffffffffff, %rax\n incq %rax", FLAGS),
    ("cmpq %r8, %r9\n movq $1, %rcx\n decq %rcx", FLAGS), ("cmpq %r8, %r9\n decl %eax", FLAGS),
    ("shlq $1, %rax", FLAGS), ("shlq $5, %rax", "czsp"), ("shrq $1, %rax", FLAGS),
    ("shrq $17, %rax", "czsp"), ("sarq $1, %rax", FLAGS), ("sarq $9, %rcx", "czsp"),
    ("shll $3, %eax", "czsp"), ("shrl $31, %ecx", "czsp"), ("cmpq %r8, %r9\n shlq $0, %rax", FLAGS),
    ("cmpq %r8, %r9\n shlq %cl, %rax", "czsp"), ("rorl $7, %eax", "c"),
    ("rorl $1, %eax", "co"), ("rolq $13, %rax", "c"), ("rolq $1, %rcx", "co"),
    ("cmpq %r8, %r9\n rorq $3, %rax", "czsp"),
    ("bswapq %rax", ""), ("bswapl %ecx", ""), ("notq %rax", ""),
    ("movzbl %al, %r11d", ""), ("movzbl %cl, %eax", ""), ("movzwl %cx, %eax", ""),
    ("movzbl 9(%rdi), %edx", ""), ("movsbq %cl, %rax", ""), ("movslq %ecx, %rax", ""),
    ("movswl %ax, %ecx", ""), ("movsbl 11(%rdi), %eax", ""),
    ("movb %cl, %al", ""), ("movb %ch, %al", ""), ("movb %al, %dh", ""),
    ("movw %cx, %ax", ""), ("movl %ecx, %eax", ""),
    ("movl $-1, %eax", ""), ("movq $-1, %rax", ""), ("movabsq $0x123456789abcdef0, %rdx", ""),
    ("movl 12(%rdi), %eax", ""), ("movb $0x5a, 200(%rsi)", ""), ("movq %rax, 208(%rsi)", ""),
    ("movl %ecx, 203(%rsi)", ""), ("movw %cx, 215(%rsi)", ""),
    ("leaq 8(%rax,%rcx,4), %rdx", ""), ("leaq -3(%rax,%rcx), %rdx", ""),
    ("leaq 100(%rax), %rax", ""), ("leal 1(%rax,%rcx,8), %edx", ""),
    ("xorb %cl, %al", FLAGS), ("addb %cl, %al", FLAGS), ("addw %cx, %ax", FLAGS),
    ("subl %ecx, %eax", FLAGS), ("xorb 9(%rdi), %cl", FLAGS), ("andl $0xff00, %eax", FLAGS),
    ("imulq %rcx, %rax", "co"), ("imulq $-7, %rcx, %rax", "co"), ("imull %ecx, %eax", "co"),
    ("andl $0x7f, %ecx\n bzhiq %rcx, %rax, %rdx", "czs"),
    ("andl $0x3f, %ecx\n bzhiq %rcx, %rax, %rdx", "czso"),
    ("andl $0x1f, %ecx\n bzhil %ecx, %eax, %edx", "czso"),
    ("shlxq %rcx, %rax, %rdx", ""), ("shrxq %rcx, %rax, %rdx", ""),
    ("sarxq %rcx, %rax, %rdx", ""), ("shlxl %ecx, %eax, %edx", ""),
    ("rorxq $13, %rax, %rdx", ""), ("andnq %rcx, %rax, %rdx", "czso"),
    ("shlxq %rcx, 8(%rdi), %rdx", ""),
    ("movbeq 8(%rdi), %rax", ""), ("movbel 8(%rdi), %eax", ""), ("movbeq %rcx, 216(%rsi)", ""),
    ("xchgq %rax, %rcx", ""), ("btq $5, %rax", "c"), ("btq $63, %rcx", "c"),
    ("pushq %rax\n pushq %rcx\n popq %rax\n popq %rcx", ""),
]
for _i, (_m, _f) in enumerate(_ALU_CASES):
    _snip(f"alu{_i}", _m, _f)
for _cc in ("a", "ae", "b", "be", "e", "ne", "g", "ge", "l", "le", "s", "ns", "o", "no",
            "p", "np", "c", "nc", "z", "nz", "na", "nbe", "nae", "nb", "ng", "nle", "nl", "nge"):
    _snip(f"cc_{_cc}", f"cmpq %r8, %r9\n set{_cc} %al\n cmov{_cc}q %rcx, %rdx\n "
                       f"cmov{_cc}l %r10d, %r11d", FLAGS)
    _snip(f"ccadd_{_cc}", f"addl %r8d, %r9d\n set{_cc} 220(%rsi)", FLAGS)
_snip("jcc", "cmpq %r8, %r9\n ja 1f\n movq $1, %rax\n jmp 2f\n1: movq $2, %rax\n2: "
             "testq %rcx, %rcx\n js 3f\n movq $3, %rdx\n3: nop", FLAGS)

_PROLOGUE = """\tvmovdqu 0(%rdi), %ymm0
\tvmovdqu 32(%rdi), %ymm1
\tvmovdqu 64(%rdi), %ymm2
\tvmovdqu 96(%rdi), %ymm3
\tmovq 128(%rdi), %rax
\tmovq 136(%rdi), %rcx
\tmovq 144(%rdi), %rdx
\tmovq 152(%rdi), %r8
\tmovq 160(%rdi), %r9
\tmovq 168(%rdi), %r10
\tmovq 176(%rdi), %r11
"""
_EPILOGUE = """\tvmovdqu %ymm0, 0(%rsi)
\tvmovdqu %ymm1, 32(%rsi)
\tvmovdqu %ymm2, 64(%rsi)
\tvmovdqu %ymm3, 96(%rsi)
\tmovq %rax, 128(%rsi)
\tmovq %rcx, 136(%rsi)
\tmovq %rdx, 144(%rsi)
\tmovq %r8, 152(%rsi)
\tmovq %r9, 160(%rsi)
\tmovq %r10, 168(%rsi)
\tmovq %r11, 176(%rsi)
\tsetc 184(%rsi)
\tsetz 185(%rsi)
\tsets 186(%rsi)
\tseto 187(%rsi)
\tsetp 188(%rsi)
\tvzeroupper
\tret
"""


def _snippet_source() -> str:
    out = ["\t.text"]
    for n, (name, code, _) in enumerate(SNIPPETS):
        out += [f"\t.globl\tsnip_{n}", f"\t.type\tsnip_{n}, @function", f"snip_{n}:"]
        body = code.replace("\n", "\n\t")
        # numeric local labels (1:, 1f) as .L labels the emulator parses
        body = re.sub(r"\b(\d):", lambda m: f".Ls{n}_{m.group(1)}:", body)
        body = re.sub(r"\b(\d)f\b", lambda m: f".Ls{n}_{m.group(1)}", body)
        out.append(_PROLOGUE + "\t" + body + "\n" + _EPILOGUE)
    out.append('\t.section\t.note.GNU-stack,"",@progbits')
    return "\n".join(out) + "\n"


@pytest.fixture(scope="module")
def snippets(tmp_path_factory):
    if missing_features(["AVX2", "AESNI", "PCLMULQDQ", "VAES", "VPCLMULQDQ", "BMI2"]):
        pytest.skip("this CPU lacks the AVX2/VAES/VPCLMULQDQ/BMI2 the snippets use")
    src = _snippet_source()
    d = tmp_path_factory.mktemp("snippets")
    (d / "snip.S").write_text(src)
    proc = subprocess.run(["gcc", "-shared", "-fPIC", "-o", str(d / "snip.so"),
                           str(d / "snip.S")], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    return ctypes.CDLL(str(d / "snip.so")), Program.parse(src, filenames=["snip.S"])


def test_instruction_snippets_match_this_cpu(snippets):
    """Every snippet, on 12 random inputs (some with equal or zero registers): all
    registers, the scratch memory and the defined flags agree with this CPU."""
    lib, prog = snippets
    m = Machine(prog)
    native, emu = NativeSide(lib), EmuSide(m)
    rng = random.Random(86)
    inp_n = m.alloc(256)
    mismatches = []
    for n, (name, code, flags) in enumerate(SNIPPETS):
        for trial in range(12):
            data = bytearray(rng.randbytes(192))
            if trial == 1:                       # rcx == rax, r8 == r9
                data[136:144], data[160:168] = data[128:136], data[152:160]
            if trial == 2:                       # zero rcx, small shift counts
                data[136:144] = bytes(8)
            if trial == 3:
                data[136:144] = bytes([rng.randint(0, 70)]) + bytes(7)
            if trial == 4:                       # ymm1 == ymm2 (equal vectors)
                data[64:96] = data[32:64]
            if trial == 5:                       # high-bit-set bytes everywhere
                data = bytearray(b | 0x80 for b in data)
            init_out = rng.randbytes(256)
            results = []
            for side in (native, emu):
                if side is native:
                    src = native.alloc(bytes(data), 64)
                    dst = native.alloc(init_out, 64)
                else:
                    m.write(inp_n, bytes(data) + bytes(64))
                    src, dst = inp_n, emu.alloc(init_out, 64)
                side.call(f"snip_{n}", src, dst)
                out = bytearray(side.read(dst, 256))
                for i, f in enumerate(FLAGS):    # undefined flags are not compared
                    if f not in flags:
                        out[184 + i] = 0
                results.append(bytes(out))
                side.free(dst)
            if results[0] != results[1]:
                a, b = results
                i = _first_diff(a, b)
                mismatches.append(f"{name} `{code}` trial {trial}: output byte {i} native "
                                  f"{a[i]:#04x} emulated {b[i]:#04x}")
                break
    assert not mismatches, "\n".join(mismatches)
    assert m.executed > 20 * len(SNIPPETS) * 12


# =========================================================================================
# 1b. the committed kernels: this CPU against the emulator
def _entries(data: dict, kind: str) -> list:
    """The manifest's entries of one kind: "ctr" kernels, or the AEADs of mode ``kind``."""
    if kind == "ctr":
        return data["kernels"]
    return [k for k in data["aeads"] if k["mode"] == kind]


def _native_cases(kind: str):
    params = []
    for preset in NATIVE_PRESETS:
        data = _manifest(preset)
        for k in _entries(data, kind):
            params.append(pytest.param(preset, k, id=f"{preset}:{k['name']}"))
    return params


def _emulated(preset, info):
    return Machine(_program(str(GENERATED / preset / info["file"])))


@pytest.mark.parametrize("preset, info", _native_cases("ctr"))
def test_ctr_kernel_in_emulator_matches_this_cpu(preset, info, shared_library):
    if missing_features(info["features"]):
        pytest.skip(f"this CPU lacks {missing_features(info['features'])}")
    if preset not in [p.parent.name for p in _host_manifests()]:
        pytest.skip(f"{preset} is not a set for this host")
    lib = ctypes.CDLL(str(shared_library(GENERATED / preset)))
    seed = hash(info["name"]) & 0xFFFF
    long_stream = info["method"] != "table"         # the table method is slow to emulate
    native = ctr_script(NativeSide(lib), info["symbols"], info["ctx_size"], seed, long_stream)
    m = _emulated(preset, info)
    emulated = ctr_script(EmuSide(m), info["symbols"], info["ctx_size"], seed, long_stream)
    _compare(native, emulated, f"{preset}/{info['name']}")
    assert m.executed > 1000


@pytest.mark.parametrize("preset, info", _native_cases("gcm"))
def test_gcm_kernel_in_emulator_matches_this_cpu(preset, info, shared_library):
    if missing_features(info["features"]):
        pytest.skip(f"this CPU lacks {missing_features(info['features'])}")
    lib = ctypes.CDLL(str(shared_library(GENERATED / preset)))
    seed = 7 + len(info["name"])
    native = gcm_script(NativeSide(lib), info["symbols"], info["ctx_size"], seed)
    m = _emulated(preset, info)
    emulated = gcm_script(EmuSide(m), info["symbols"], info["ctx_size"], seed)
    _compare(native, emulated, f"{preset}/{info['name']}")
    # and the outputs are GCM: the first seal of every key size against the model
    seals = [o for o in native if o[0].endswith("case 1 seal")]
    assert len(seals) == 3 and all(o[1] == 0 for o in seals)


# =========================================================================================
# 2. kernels this CPU cannot run, in the emulator against the model
def _header_free(path: Path) -> str:
    text = path.read_text()
    return text[text.index("*/") + 2:] if text.startswith("/*") else text


def _emulated_only(kind: str):
    """Entries of the EMULATED_PRESETS whose features this CPU lacks (all of them on a CPU
    without AVX-512/GFNI), one per distinct file content."""
    seen: dict[str, list] = {}
    for preset in EMULATED_PRESETS:
        data = _manifest(preset)
        for k in _entries(data, kind):
            if not missing_features(k["features"]):
                continue
            body = _header_free(GENERATED / preset / k["file"])
            key = f"{k['name']}:{hash(body)}"
            seen.setdefault(key, [preset, k, []])[2].append(preset)
    return [pytest.param(p, k, id=f"{'+'.join(ps)}:{k['name']}") for p, k, ps in seen.values()]


@functools.cache
def _expected(key: bytes, iv: bytes, data: bytes) -> bytes:
    return ctr_xor(key, iv, data)


def _ctr_cases():
    rng = random.Random(0xE4)
    cases = []
    for n in range(5):
        key = rng.randbytes((16, 24, 32)[n % 3])
        iv = rng.randbytes(16)
        if n == 1:
            iv = iv[:15] + b"\xfb"                       # a FACE window ends early
        if n == 2:
            iv = iv[:8] + b"\xff" * 7 + b"\xf8"           # carry into byte 7 (2^64)
        size = (300, 9000, 2000, 777, 4100)[n]
        data = rng.randbytes(size)
        cuts = sorted(rng.randint(0, size) for _ in range(3)) + [size]
        cases.append((key, iv, data, cuts))
    return cases


CTR_CASES = _ctr_cases()


@pytest.mark.parametrize("preset, info", _emulated_only("ctr"))
def test_ctr_kernel_in_emulator_matches_the_model(preset, info):
    m = _emulated(preset, info)
    syms, size = info["symbols"], info["ctx_size"]
    ctx = m.alloc_end(size)              # 64-byte aligned, ends at the region's end
    assert ctx % 64 == 0
    for n, (key, iv, data, cuts) in enumerate(CTR_CASES):
        kb, ivb = m.alloc_end(key), m.alloc_end(iv)
        assert m.call(syms["init"], ctx, kb, len(key), ivb) == 0
        got, pos = b"", 0
        for end in cuts:
            piece = data[pos:end]
            src = m.alloc_end(piece)
            dst = src if n == 3 else m.alloc_end(len(piece))     # case 3 in place
            m.call(syms["xor_stream"], ctx, dst, src, len(piece))
            got += m.read(dst, len(piece))
            m.free(src)
            if dst != src:
                m.free(dst)
            pos = end
        want = _expected(key, iv, data)
        assert got == want, (f"case {n}: AES-{8 * len(key)}, iv {iv.hex()}, {len(data)} B cut "
                             f"at {cuts}: first wrong byte {_first_diff(got, want)}")
        if n == 1:                        # set_iv restarts the stream (the table is kept)
            assert m.call(syms["set_iv"], ctx, ivb) == 0
            src, dst = m.alloc_end(data[:1500]), m.alloc_end(1500)
            m.call(syms["xor_stream"], ctx, dst, src, 1500)
            assert m.read(dst, 1500) == want[:1500], "after set_iv"
        for a in (kb, ivb):
            m.free(a)
    m.call(syms["wipe"], ctx)
    assert m.read(ctx, size) == bytes(size)
    zmm_work = sum(c for mn, c in m.counts().items() if mn.startswith(("v", "k")))
    assert zmm_work > 1000


@pytest.mark.parametrize("preset, info", _emulated_only("gcm") or [
    pytest.param(None, None, marks=pytest.mark.skip(reason="every AEAD of the emulated "
                                                    "presets runs on this CPU"))])
def test_gcm_kernel_in_emulator_matches_the_model(preset, info):
    m = _emulated(preset, info)
    syms, size = info["symbols"], info["ctx_size"]
    rng = random.Random(77)
    ctx = m.alloc_end(size)
    cases = [(12, 0, 0), (12, 16, 64), (12, 13, 65), (1, 3, 17), (16, 31, 255), (12, 20, 700),
             (40, 70, 129)]
    for n, (nl, al, ml) in enumerate(cases):
        key = rng.randbytes((16, 24, 32)[n % 3])
        nonce, aad, pt = rng.randbytes(nl), rng.randbytes(al), rng.randbytes(ml)
        tag_len = 16 if n % 2 == 0 else rng.randint(4, 15)
        want_ct, want_tag = gcm_model.seal(key, nonce, aad, pt, tag_len)
        buf = lambda b: m.alloc_end(b) if b else 0  # noqa: E731
        assert m.call(syms["init"], ctx, buf(key), len(key)) == 0
        nb, ab, pb = buf(nonce), buf(aad), buf(pt)
        out, tag = m.alloc_end(ml), m.alloc_end(tag_len)
        r = m.call(syms["seal"], ctx, nb, nl, ab, al, pb, ml, out, tag, tag_len)
        got_ct, got_tag = m.read(out, ml), m.read(tag, tag_len)
        what = f"case {n}: AES-{8 * len(key)}, nonce {nl} B, aad {al} B, message {ml} B"
        assert r == 0, f"{what}: seal returned {r:#x}"
        assert got_ct == want_ct, f"{what}: ciphertext wrong from byte {_first_diff(got_ct, want_ct)}"
        assert got_tag == want_tag, f"{what}: tag wrong (ciphertext right)"
        cb = buf(want_ct)
        out2 = m.alloc_end(ml)
        r = m.call(syms["open"], ctx, nb, nl, ab, al, cb, ml, out2, tag, tag_len)
        assert (r, m.read(out2, ml)) == (0, pt), f"{what}: open"
        m.write(tag, bytes([want_tag[0] ^ 1]) + want_tag[1:])
        r = m.call(syms["open"], ctx, nb, nl, ab, al, cb, ml, out2, tag, tag_len)
        assert (_sx32(r), m.read(out2, ml)) == (-1, bytes(ml)), f"{what}: open, bad tag"
        # in pieces
        assert m.call(syms["start"], ctx, nb, nl) == 0
        cut = al // 3
        assert m.call(syms["aad"], ctx, ab, cut) == 0
        assert m.call(syms["aad"], ctx, ab + cut if al else 0, al - cut) == 0
        ct, pos = b"", 0
        for p in (ml // 5, 1, ml):
            p = min(p, ml - pos)
            o = m.alloc_end(p) if p else 0
            assert m.call(syms["encrypt"], ctx, pb + pos if p else 0, p, o) == 0
            ct += m.read(o, p) if p else b""
            pos += p
        t2 = m.alloc_end(tag_len)
        assert m.call(syms["finish_seal"], ctx, t2, tag_len) == 0
        assert (ct, m.read(t2, tag_len)) == (want_ct, want_tag), f"{what}: in pieces"
    m.call(syms["wipe"], ctx)
    assert m.read(ctx, size) == bytes(size)


# =========================================================================================
# 3. emulator units
def _run(src: str, fn: str = "f", *args, setup=None):
    prog = Program.parse("\t.text\n\t.globl f\n\t.type f, @function\nf:\n" + src)
    m = Machine(prog)
    if setup:
        args = setup(m)
    return m, m.call(fn, *args)


def test_32_bit_writes_zero_the_upper_half_and_8_bit_writes_merge():
    _, r = _run("\tmovq $-1, %rax\n\tmovl $5, %eax\n\tret\n")
    assert r == 5
    _, r = _run("\tmovq $-1, %rax\n\tmovb $0, %al\n\tret\n")
    assert r == 0xFFFF_FFFF_FFFF_FF00
    _, r = _run("\tmovq $-1, %rax\n\tmovb $0, %ah\n\tret\n")
    assert r == 0xFFFF_FFFF_FFFF_00FF
    _, r = _run("\tmovq $-1, %rax\n\taddl $1, %eax\n\tret\n")
    assert r == 0
    _, r = _run("\tmovq $-1, %rax\n\tmovq $0, %rcx\n\tcmpq $1, %rcx\n\tcmovael %ecx, %eax\n"
                "\tret\n")
    assert r == 0xFFFF_FFFF, "cmov with a false condition still zero-extends a 32-bit dest"


def test_vex_zeroes_and_legacy_keeps_the_upper_bits():
    src = """\tvpternlogd $0xff, %zmm0, %zmm0, %zmm0
\tvpternlogd $0xff, %zmm1, %zmm1, %zmm1
\tvpternlogd $0xff, %zmm20, %zmm20, %zmm20
\tvpxor %xmm2, %xmm2, %xmm2
\tmovdqa %xmm2, %xmm0
\tvmovdqa %xmm2, %xmm1
\tvpxorq %ymm20, %ymm20, %ymm20
\tret
"""
    m, _ = _run(src)
    assert m.V[0] == ((1 << 512) - 1) ^ ((1 << 128) - 1), "legacy SSE kept bits 128..511"
    assert m.V[1] == 0 and m.V[20] == 0, "VEX/EVEX zeroed bits 128/256..511"
    m, _ = _run("\tvpternlogq $0xff, %zmm5, %zmm5, %zmm5\n\tvpternlogq $0xff, %zmm17, %zmm17,"
                " %zmm17\n\tvzeroupper\n\tret\n")
    assert m.V[5] == (1 << 128) - 1 and m.V[17] == (1 << 512) - 1
    m, _ = _run("\tvpternlogq $0xff, %zmm5, %zmm5, %zmm5\n\tvpternlogq $0xff, %zmm17, %zmm17,"
                " %zmm17\n\tvzeroall\n\tret\n")
    assert m.V[5] == 0 and m.V[17] == (1 << 512) - 1


def _masked_program(op: str) -> Program:
    return Program.parse(f"""\t.text
\t.globl f
f:
\tkmovq %rdx, %k1
\tvpternlogd $0xff, %zmm0, %zmm0, %zmm0
\t{op}
\tret
""")


def test_masked_store_writes_only_enabled_bytes_and_faults_past_the_region():
    m = Machine(_masked_program("vmovdqu8 %zmm0, (%rdi){%k1}"))
    buf = m.alloc_end(bytes(10))
    m.call("f", buf, 0, (1 << 10) - 1)
    assert m.read(buf, 10) == b"\xff" * 10
    m.write(buf, bytes(10))
    m.call("f", buf, 0, 0b1010000101)
    assert m.read(buf, 10) == bytes(0xFF if (0b1010000101 >> i) & 1 else 0 for i in range(10))
    with pytest.raises(MemoryFault, match=r"vmovdqu8.*past the end"):
        m.call("f", buf, 0, (1 << 11) - 1)          # one byte too many
    with pytest.raises(MemoryFault):
        m.call("f", buf, 0, 1 << 63)                # only the last byte of 64
    m2 = Machine(_masked_program("vmovdqu64 %zmm0, (%rdi){%k1}"))
    buf = m2.alloc_end(bytes(16))
    m2.call("f", buf, 0, 0b11)                      # qword elements: 16 bytes
    with pytest.raises(MemoryFault):
        m2.call("f", buf, 0, 0b101)


def test_masked_load_suppresses_faults_and_merges_or_zeroes():
    m = Machine(_masked_program("vmovdqu8 (%rsi), %zmm0{%k1}{z}"))
    buf = m.alloc_end(bytes(range(1, 11)))
    m.call("f", 0, buf, (1 << 10) - 1)              # bytes 10..63 lie past the region
    assert m.V[0] == int.from_bytes(bytes(range(1, 11)), "little")
    with pytest.raises(MemoryFault, match="masked load"):
        m.call("f", 0, buf, (1 << 11) - 1)
    m = Machine(_masked_program("vmovdqu8 (%rsi), %zmm0{%k1}"))
    buf = m.alloc_end(bytes(range(1, 11)))
    m.call("f", 0, buf, 0b11)
    assert m.V[0] == ((1 << 512) - 1) ^ 0xFFFF | 0x0201
    m = Machine(_masked_program("vmovdqu64 (%rsi), %zmm0{%k1}{z}"))
    buf = m.alloc_end(bytes(range(1, 17)))
    m.call("f", 0, buf, 0b11)
    with pytest.raises(MemoryFault):
        m.call("f", 0, buf, 0b111)


def test_unmasked_accesses_fault_outside_regions_and_name_the_instruction():
    m = Machine(Program.parse("\t.text\n\t.globl f\nf:\n\tnop\n\tvmovdqu (%rdi), %ymm0\n\tret\n",
                              filenames=["t.S"]))
    buf = m.alloc_end(31)
    with pytest.raises(MemoryFault) as e:
        m.call("f", buf)
    text = str(e.value)
    assert "t.S:5" in text and "vmovdqu" in text and f"{buf + 31:#x}" in text
    with pytest.raises(MemoryFault):
        m.call("f", 0)                                 # NULL
    m2 = Machine(Program.parse("\t.text\n\t.globl f\nf:\n\tmovq %rax, .Lc(%rip)\n\tret\n"
                               "\t.section .rodata\n.Lc:\n\t.quad 1\n"))
    with pytest.raises(MemoryFault, match="read-only"):
        m2.call("f")


def test_aligned_forms_check_alignment():
    m = Machine(Program.parse("\t.text\n\t.globl f\nf:\n\tpxor (%rdi), %xmm0\n\tret\n"))
    buf = m.alloc(64)
    m.call("f", buf)
    with pytest.raises(ExecutionError, match="#GP"):
        m.call("f", buf + 8)


def test_unsupported_mnemonic_raises_with_its_line():
    prog = Program.parse("\t.text\n\t.globl f\nf:\n\tvpermb %zmm1, %zmm2, %zmm3\n\tret\n",
                         filenames=["u.S"])
    with pytest.raises(UnsupportedInstruction, match=r"u\.S:4.*vpermb"):
        Machine(prog).call("f")
    with pytest.raises(UnsupportedInstruction, match="VEX"):
        Program.parse("\t.text\nf:\n\tvpxor %xmm16, %xmm1, %xmm1\n").decode_all()
    with pytest.raises(UnsupportedInstruction, match="legacy SSE"):
        Program.parse("\t.text\nf:\n\tpxor %xmm16, %xmm1\n").decode_all()
    with pytest.raises(UnsupportedInstruction):
        Program.parse("\t.text\nf:\n\tvaesenc %zmm1, %zmm2, %zmm3{%k1}\n").decode_all()


def test_callee_saved_registers_and_stack_are_checked():
    with pytest.raises(ExecutionError, match="rbx"):
        _run("\tmovq $1, %rbx\n\tret\n")
    with pytest.raises(ExecutionError):
        _run("\tpushq %rax\n\tret\n")
    m, r = _run("\tpushq %rbx\n\tmovq %rsp, %rax\n\tpopq %rbx\n\tret\n")
    assert (r + 8 + 8) % 16 == 0, "rsp is 16-byte aligned at the call"
    m, r = _run("\tmovq 8(%rsp), %rax\n\taddq 16(%rsp), %rax\n\tret\n", "f",
                1, 2, 3, 4, 5, 6, 700, 80)
    assert r == 780, "the 7th and 8th arguments are on the stack"
    with pytest.raises(ExecutionError, match="more than"):
        prog = Program.parse("\t.text\n\t.globl f\nf:\n.Lx:\n\tjmp .Lx\n")
        m = Machine(prog, max_steps=1000)
        m.call("f")


def test_pclmulqdq_immediate_selects_the_qwords():
    src = "\t.text\n\t.globl f\nf:\n" + "".join(
        f"\tvmovdqa %xmm0, %xmm{2 + n}\n\tvpclmulqdq ${imm:#x}, %xmm1, %xmm{2 + n}, %xmm{2 + n}\n"
        for n, imm in enumerate((0x00, 0x01, 0x10, 0x11))) + "\tret\n"
    m = Machine(Program.parse(src))
    rng = random.Random(3)
    for _ in range(50):
        a, b = rng.getrandbits(128), rng.getrandbits(128)
        _call_with(m, {0: a, 1: b})
        lo, hi = (lambda x: x & (2**64 - 1)), (lambda x: x >> 64)
        # Intel: bit 0 picks the qword of the first source (%xmm2+n, a copy of a), bit 4
        # the qword of the second (%xmm1, b)
        assert m.xmm(2) == clmul_reference(lo(a), lo(b))
        assert m.xmm(3) == clmul_reference(hi(a), lo(b))
        assert m.xmm(4) == clmul_reference(lo(a), hi(b))
        assert m.xmm(5) == clmul_reference(hi(a), hi(b))


def _vec_program(body: str) -> Machine:
    return Machine(Program.parse("\t.text\n\t.globl f\nf:\n" + body + "\tret\n"))


def _call_with(m: Machine, regs: dict, kregs: dict | None = None, *args: int) -> None:
    """Call f with these vector (and mask) register values, the others random."""
    m.poison()
    for i, v in regs.items():
        m.V[i] = v
    for i, v in (kregs or {}).items():
        m.K[i] = v
    m.call("f", *args, poison=False)


def test_zmm_lane_semantics_against_the_model():
    rng = random.Random(11)
    m = _vec_program("\tvaesenc %zmm1, %zmm2, %zmm3\n\tvaesenclast %zmm1, %zmm2, %zmm4\n"
                     "\tvpshufb %zmm1, %zmm2, %zmm5\n\tvpclmulqdq $0x10, %zmm1, %zmm2, %zmm6\n"
                     "\tvshufi32x4 $0x4e, %zmm1, %zmm2, %zmm7\n"
                     "\tvinserti32x4 $2, %xmm1, %zmm2, %zmm8\n"
                     "\tvextracti32x4 $3, %zmm2, %xmm9\n\tvbroadcasti32x4 (%rsp), %zmm10\n"
                     "\tvpsrldq $3, %zmm2, %zmm11\n\tvpalignr $7, %zmm1, %zmm2, %zmm12\n")
    for _ in range(5):
        a, b = rng.getrandbits(512), rng.getrandbits(512)
        _call_with(m, {1: a, 2: b})
        la = [(a >> (128 * i)) & (2**128 - 1) for i in range(4)]
        lb = [(b >> (128 * i)) & (2**128 - 1) for i in range(4)]
        tb = lambda x: x.to_bytes(16, "little")  # noqa: E731
        fb = lambda x: int.from_bytes(x, "little")  # noqa: E731
        for i in range(4):
            lane = lambda r: (m.V[r] >> (128 * i)) & (2**128 - 1)  # noqa: E731
            assert lane(3) == fb(aes_round(tb(lb[i]), tb(la[i])))
            assert lane(4) == fb(aes_final_round(tb(lb[i]), tb(la[i])))
            ctrl, data = tb(la[i]), tb(lb[i])
            assert lane(5) == fb(bytes(0 if c & 0x80 else data[c & 15] for c in ctrl))
            assert lane(6) == clmul_reference(lb[i] & (2**64 - 1), la[i] >> 64)
            assert lane(11) == lb[i] >> 24
            assert lane(12) == (((lb[i] << 128) | la[i]) >> 56) & (2**128 - 1)
        # vshufi32x4 $0x4e: lanes 2,3 of src1 (b), then 0,1 of src2 (a)
        assert m.V[7] == lb[2] | lb[3] << 128 | la[0] << 256 | la[1] << 384
        assert m.V[8] == b & ~((2**128 - 1) << 256) | la[0] << 256
        assert m.V[9] == lb[3]


def test_ternlog_truth_tables_and_masked_broadcast():
    rng = random.Random(12)
    for imm in range(256):
        m = _vec_program(f"\tvpternlogd ${imm}, %zmm2, %zmm1, %zmm0\n")
        a, b, c = (rng.getrandbits(512) for _ in range(3))
        _call_with(m, {0: a, 1: b, 2: c})
        want = 0
        for bit in range(512):
            idx = ((a >> bit) & 1) << 2 | ((b >> bit) & 1) << 1 | ((c >> bit) & 1)
            want |= ((imm >> idx) & 1) << bit
        assert m.V[0] == want, f"imm {imm:#x}"
    m = _vec_program("\tvpxorq (%rdi){1to8}, %zmm1, %zmm0{%k2}\n"
                     "\tvpaddd %zmm1, %zmm2, %zmm3{%k3}{z}\n")
    q = m.alloc_end((0x1122334455667788).to_bytes(8, "little"))
    a, b, old = rng.getrandbits(512), rng.getrandbits(512), rng.getrandbits(512)
    _call_with(m, {0: old, 1: a, 2: b}, {2: 0b10100101, 3: 0xF0F0}, q)
    for i in range(8):
        q_a, q_old = (a >> (64 * i)) & (2**64 - 1), (old >> (64 * i)) & (2**64 - 1)
        want = q_a ^ 0x1122334455667788 if (0b10100101 >> i) & 1 else q_old
        assert (m.V[0] >> (64 * i)) & (2**64 - 1) == want
    for i in range(16):
        d = lambda x: (x >> (32 * i)) & 0xFFFF_FFFF  # noqa: E731
        assert d(m.V[3]) == ((d(a) + d(b)) & 0xFFFF_FFFF if (0xF0F0 >> i) & 1 else 0)


def test_gfni_against_the_aes_field():
    """vgf2p8affineinvqb with the S-box matrix and 0x63 is SubBytes; vgf2p8mulb is the AES
    field multiply; vgf2p8affineqb with the identity matrix is the identity (SDM bit order:
    result bit i from matrix byte 7 - i)."""
    rng = random.Random(13)
    m = _vec_program("\tvgf2p8affineinvqb $0x63, %zmm1, %zmm2, %zmm3\n"
                     "\tvgf2p8mulb %zmm2, %zmm4, %zmm5\n"
                     "\tvgf2p8affineqb $0, %zmm6, %zmm2, %zmm7\n"
                     "\tvgf2p8affineqb $0, %ymm8, %ymm2, %ymm9\n")
    sbox_matrix = 0xF1E3C78F1F3E7CF8          # the kernels' gfni_sbox constant
    rep = lambda q: sum(q << (64 * i) for i in range(8))  # noqa: E731
    identity = 0x0102040810204080
    for _ in range(4):
        x, y = rng.getrandbits(512), rng.getrandbits(512)
        # ymm8: per-qword matrices, qword 1 the bit reversal
        _call_with(m, {1: rep(sbox_matrix), 2: x, 4: y, 6: rep(identity),
                       8: identity | (0x8040201008040201 << 64) | rep(identity) >> 128 << 128})
        xb, yb = x.to_bytes(64, "little"), y.to_bytes(64, "little")
        assert m.V[3].to_bytes(64, "little") == bytes(SBOX[v] for v in xb)
        assert m.V[5].to_bytes(64, "little") == bytes(gf_mul(p, q) for p, q in zip(xb, yb))
        assert m.V[7] == x
        rev = lambda v: int(f"{v:08b}"[::-1], 2)  # noqa: E731
        want9 = bytes(rev(v) if 8 <= i < 16 else v for i, v in enumerate(xb[:32]))
        assert m.V[9] == int.from_bytes(want9, "little")


def test_opmask_instructions_and_bmi():
    m = _vec_program("\tmovq $-1, %rax\n\tmovq $13, %rcx\n\tbzhiq %rcx, %rax, %rdx\n"
                     "\tkmovq %rdx, %k1\n\tkshiftlq $3, %k1, %k2\n\tkorq %k1, %k2, %k3\n"
                     "\tkandnq %k3, %k1, %k4\n\tkmovq %k4, %r8\n\tkmovd %k3, %r9d\n"
                     "\tshlxq %rcx, %rdx, %r10\n\tkmovw %k3, %r11d\n\tkshiftrq $70, %k3, %k5\n")
    _call_with(m, {})
    k1 = (1 << 13) - 1
    k3 = k1 | (k1 << 3)
    assert m.R[2] == k1 and m.K[1] == k1 and m.K[2] == k1 << 3 and m.K[3] == k3
    assert m.R[8] == k3 & ~k1 and m.R[9] == k3 and m.R[11] == k3 & 0xFFFF and m.K[5] == 0
    assert m.R[10] == k1 << 13


def test_committed_instruction_forms_all_decode():
    """Every distinct instruction line of the committed x86 sets (labels renamed) decodes:
    nothing a kernel uses is missing from the emulator."""
    lines = set()
    sym = re.compile(r"(\.L[\w.$]+|aesgen_\w+)")
    for set_dir in X86_PRESETS:
        for path in sorted(set_dir.glob("*.S")):
            for line in path.read_text().splitlines():
                if line.startswith("\t") and not line.startswith("\t."):
                    lines.add(sym.sub(".Lx", line.split("#")[0].strip()))
    lines.discard("")
    prog = Program.parse("\t.text\n.Lx:\n" + "\n".join(f"\t{x}" for x in sorted(lines)) + "\n")
    prog.decode_all()
    mnemonics = prog.mnemonics()
    assert {"vaesenc", "vpternlogd", "vgf2p8affineinvqb", "vpclmulqdq", "adcq"} <= mnemonics
    assert len(prog.insns) == len(lines) > 1000


# =========================================================================================
# 3. GCM-SIV, every kernel file, native or not: the emulator against RFC 8452
def _gcm_siv_files():
    """One case per distinct GCM-SIV kernel file of the native and emulated presets."""
    seen, params = set(), []
    for preset in NATIVE_PRESETS + EMULATED_PRESETS:
        for k in _entries(_manifest(preset), "gcm-siv"):
            body = _header_free(GENERATED / preset / k["file"])
            if body not in seen:
                seen.add(body)
                params.append(pytest.param(preset, k, id=f"{preset}:{k['name']}"))
    return params


# (AAD bytes, plaintext bytes): empty, a short record (few powers of H), around the powers'
# bounds, a batch and the ladder, a partial block at every stage
SIV_CASES = ((0, 0), (13, 16), (0, 1), (64, 48), (65, 49), (13, 100), (20, 16 * 33 + 5),
             (16 * 31, 0), (7, 16 * 64))


@pytest.mark.parametrize("preset, info", _gcm_siv_files())
def test_gcm_siv_kernel_in_emulator_matches_rfc8452(preset, info):
    """Every buffer against the end of its region (an overrun faults): seal against the
    cryptography package's AESGCMSIV, open back, open of a changed tag refused with out
    zeroed; whatever features this CPU has."""
    from cryptography.hazmat.primitives.ciphers.aead import AESGCMSIV

    side = EmuSide(_emulated(preset, info))
    syms, size = info["symbols"], info["ctx_size"]
    rng = random.Random(8452)
    ctx = side.alloc(rng.randbytes(size), 64)

    def buf(data: bytes) -> int:
        return side.alloc(data) if data else 0
    for klen in (16, 32):
        key = rng.randbytes(klen)
        assert _sx32(side.call(syms["init"], ctx, buf(key), klen)) == 0
        for aad_len, pt_len in SIV_CASES if klen == 16 else SIV_CASES[:4]:
            what = f"AES-{8 * klen}, AAD {aad_len}, plaintext {pt_len}"
            nonce, aad, pt = rng.randbytes(12), rng.randbytes(aad_len), rng.randbytes(pt_len)
            want = AESGCMSIV(key).encrypt(nonce, pt, aad or None)
            nb, ab, pb = buf(nonce), buf(aad), buf(pt)
            out, tag = buf(rng.randbytes(pt_len)), side.alloc(rng.randbytes(16))
            r = side.call(syms["seal"], ctx, nb, 12, ab, aad_len, pb, pt_len, out, tag, 16)
            assert _sx32(r) == 0, what
            assert side.read(out, pt_len) + side.read(tag, 16) == want, what
            back = buf(rng.randbytes(pt_len))
            r = side.call(syms["open"], ctx, nb, 12, ab, aad_len, out, pt_len, back, tag, 16)
            assert (_sx32(r), side.read(back, pt_len)) == (0, pt), what
            bad = side.alloc(bytes([want[-16] ^ 1]) + want[-15:])
            r = side.call(syms["open"], ctx, nb, 12, ab, aad_len, out, pt_len, back, bad, 16)
            assert (_sx32(r), side.read(back, pt_len)) == (-1, bytes(pt_len)), what
