"""The general-purpose side of x86-64 as the mode skeletons use it: entry and
return, arguments, loads and stores of context fields, compares that branch, the counter as
two native 64-bit halves, and the byte XOR of a keystream tail.

The AArch64 twin is arch/aarch64/scalar.py; a skeleton written over these methods
(modes/ctr/entries.py) is written once for both. Registers are virtual (``b.gp()``); a
memory operand is a dsl Mem whose width says how much moves. The calling convention (System
V or Win64, passes/abi.py) says where the arguments are; nothing else here depends on it.
"""
from __future__ import annotations

from dataclasses import dataclass

from ...dsl.builder import KernelBuilder
from ...dsl.operands import Imm, Label, Mem, Reg, gp
from ...passes.abi import SYSV_X86_64, AbiSpec


def _view(r: Reg, width: int) -> Reg:
    return {64: r, 32: r.w32, 8: r.w8}[width]


def load_bytes(b: KernelBuilder, at: Reg, disp: int, n: int, *, big_endian: bool) -> Reg:
    """The n (1..8) bytes at at+disp as one integer (little- or big-endian), each read by a
    byte load and joined by shifts and ORs, two by two (a tree: a few registers, about 10
    cycles). Why not one 8-byte load: a load that takes its bytes from several earlier
    stores, or from part of one and the cache, cannot be forwarded from the store buffer
    and waits until those stores have reached the cache. A TLS stack writes each record's
    nonce just before the call, a byte at a time (RFC 8446 5.3: the static IV XOR the
    sequence number), and the 8-byte load of it cost about 26 TSC ticks of a 64-byte
    AES-GCM seal on the Zen 5 here (aesgen bench, vaes512-gcm-r2: 80 -> 54 ticks); a
    byte load lies inside any one store and is always forwarded."""
    a = b.asm
    order = range(n) if not big_endian else range(n - 1, -1, -1)   # least significant first
    parts: list[tuple[Reg, int]] = []          # (value, bytes), least significant first
    for i in order:
        r = b.gp()
        a.movzx(r.w32, Mem(8, base=at, disp=disp + i))
        parts.append((r, 1))
        while len(parts) > 1 and parts[-1][1] == parts[-2][1]:
            (low, width), (high, _) = parts[-2], parts[-1]
            a.shl(high, Imm(8 * width))
            b.emit("or", high, low)
            parts[-2:] = [(high, 2 * width)]
    value, width = parts[-1]
    for low, low_width in reversed(parts[:-1]):     # n not a power of two: the rest
        a.shl(value, Imm(8 * low_width))
        b.emit("or", value, low)
    return value


@dataclass(frozen=True)
class X86Scalar:
    abi: AbiSpec = SYSV_X86_64       # where the arguments are at entry
    arch = "x86_64"

    # --- entry, arguments, result ------------------------------------------------------
    def entry(self, b: KernelBuilder) -> None:
        b.asm.endbr64()                        # an indirect-branch landing pad (CET IBT)

    def args(self, b: KernelBuilder, count: int) -> list[Reg]:
        """The first ``count`` arguments in virtual registers (a stack argument loaded)."""
        regs = []
        for i in range(count):
            v = b.gp()
            b.asm.mov(v, self.abi.argument(i))
            regs.append(v)
        return regs

    def arg(self, b: KernelBuilder, index: int) -> Reg:
        """Argument ``index`` (0-based) in a virtual register, read again on each call:
        for a later argument, in a register only at entry or on the stack."""
        v = b.gp()
        b.asm.mov(v, self.abi.argument(index))
        return v

    def result_register(self) -> Reg:
        """The register an entry's int result is in (rax; its low half eax)."""
        return gp("rax")

    def result_minus_one_unless_zero(self, b: KernelBuilder, r: Reg) -> None:
        """The result = 0 when r is 0, else -1, without a branch on r."""
        b.asm.neg(r)                            # CF = (r != 0)
        # the verdict is the return value: public from here on (passes/secrets.py)
        b.comment("declassify: the verdict of a compare made without a branch on its bytes")
        b.emit("sbb", gp("eax"), gp("eax"))     # eax = -CF

    def result(self, b: KernelBuilder, value: int) -> None:
        """The int an entry returns: eax."""
        if value == 0:
            b.asm.xor(gp("eax"), gp("eax"))
        else:
            b.asm.mov(gp("eax"), Imm(value))

    def ret(self, b: KernelBuilder) -> None:
        b.asm.ret()

    # --- memory ---------------------------------------------------------------------------
    def load(self, b: KernelBuilder, dst: Reg, src: Mem) -> None:
        b.asm.mov(_view(dst, src.width), src)

    def store(self, b: KernelBuilder, dst: Mem, src: Reg) -> None:
        b.asm.mov(dst, _view(src, dst.width))

    def store_imm(self, b: KernelBuilder, dst: Mem, value: int) -> None:
        b.asm.mov(dst, Imm(value))             # sign-extended imm32 for a 64-bit field

    def store_zero_16(self, b: KernelBuilder, at: Reg) -> None:
        """16 zero bytes at ``at``."""
        for disp in (0, 8):
            b.asm.mov(Mem(64, base=at, disp=disp), Imm(0))

    # --- control flow ---------------------------------------------------------------------
    def jump(self, b: KernelBuilder, label: Label) -> None:
        b.asm.jmp(label)

    def jump_if_equal(self, b: KernelBuilder, r: Reg, value: int, label: Label,
                      width: int = 64) -> None:
        b.asm.cmp(_view(r, width), Imm(value))
        b.asm.je(label)

    def jump_if_zero(self, b: KernelBuilder, r: Reg, label: Label) -> None:
        b.asm.test(r, r)
        b.asm.je(label)

    def jump_if_nonzero(self, b: KernelBuilder, r: Reg, label: Label) -> None:
        b.asm.test(r, r)
        b.asm.jne(label)

    def decrement(self, b: KernelBuilder, r: Reg) -> None:
        b.asm.dec(r)

    def decrement_jump_if_zero(self, b: KernelBuilder, r: Reg, label: Label) -> None:
        b.asm.dec(r)
        b.asm.je(label)

    # --- the CTR counter: 16 big-endian bytes as hi (bytes 0..7) : lo (bytes 8..15) ------
    def load_big_endian_128(self, b: KernelBuilder, at: Reg) -> tuple[Reg, Reg]:
        """The 16 bytes at ``at`` as hi (bytes 0..7) : lo (bytes 8..15), big-endian, read
        a byte at a time (load_bytes: an IV the caller has just written)."""
        return (load_bytes(b, at, 0, 8, big_endian=True),
                load_bytes(b, at, 8, 8, big_endian=True))

    def load_pair(self, b: KernelBuilder, base: Reg, disp: int) -> tuple[Reg, Reg]:
        """The 64-bit words at base+disp and 8 bytes above it."""
        first, second = b.gp(), b.gp()
        b.asm.mov(first, Mem(64, base=base, disp=disp))
        b.asm.mov(second, Mem(64, base=base, disp=disp + 8))
        return first, second

    def store_pair(self, b: KernelBuilder, base: Reg, disp: int, first: Reg,
                   second: Reg) -> None:
        """first at base+disp, second 8 bytes above it."""
        b.asm.mov(Mem(64, base=base, disp=disp), first)
        b.asm.mov(Mem(64, base=base, disp=disp + 8), second)

    def count_up(self, b: KernelBuilder, lo: Reg, hi: Reg | Mem, n: int | Reg) -> None:
        """The 128-bit counter hi:lo plus n (a number or a register)."""
        b.asm.add(lo, Imm(n) if isinstance(n, int) else n)
        b.asm.adc(hi, Imm(0))

    def count_up_low32(self, b: KernelBuilder, lo: Reg, n: int | Reg) -> None:
        """inc_32 by n: the low 32 bits of lo (counter bytes 12..15) wrap, the rest stays."""
        t = b.gp()
        b.asm.lea(t, Mem(64, base=lo, disp=n) if isinstance(n, int)
                  else Mem(64, base=lo, index=n))
        b.asm.shl(t, Imm(32))
        b.asm.shr(t, Imm(32))                        # (lo + n) mod 2^32
        b.asm.shr(lo, Imm(32))
        b.asm.shl(lo, Imm(32))
        b.emit("or", lo, t)

    # --- arithmetic and compares on 64-bit values (for bookkeeping of public numbers) -----
    def move(self, b: KernelBuilder, dst: Reg, src: Reg | int) -> None:
        if isinstance(src, int) and not -2**31 <= src < 2**31:
            b.asm.movabs(dst, Imm(src))
            return
        b.asm.mov(dst, Imm(src) if isinstance(src, int) else src)

    def clear(self, b: KernelBuilder, r: Reg) -> None:
        """r = 0."""
        b.asm.xor(r, r)

    def add_to(self, b: KernelBuilder, dst: Mem, value: Reg) -> None:
        """The u64 at dst += value."""
        b.asm.add(dst, value)

    def arith(self, b: KernelBuilder, op: str, dst: Reg, x: Reg, y: Reg | Mem | int) -> None:
        """dst = x op y, op one of add, sub, and; y a register, a 64-bit field or a number.
        dst = x + number with dst != x is one LEA."""
        y = Imm(y) if isinstance(y, int) else y
        if op == "add" and dst != x and isinstance(y, Imm):
            b.asm.lea(dst, Mem(64, base=x, disp=y.value))
            return
        if dst != x:
            b.asm.mov(dst, x)
        b.emit(op, dst, y)

    def shift_left(self, b: KernelBuilder, dst: Reg, src: Reg, n: int) -> None:
        """dst = src << n (64-bit)."""
        if dst != src:
            b.asm.mov(dst, src)
        b.asm.shl(dst, Imm(n))

    CONDITIONS = {"eq": "je", "ne": "jne", "a": "ja", "ae": "jae", "b": "jb", "be": "jbe"}

    def compare_jump(self, b: KernelBuilder, cond: str, x: Reg | Mem, y: Reg | Mem | int,
                     label: Label) -> None:
        """Jump to label when x cond y, unsigned: cond one of eq ne a ae b be; y a
        register, a field or any 64-bit number."""
        if isinstance(y, int) and not -2**31 <= y < 2**31:
            t = b.gp()
            b.asm.movabs(t, Imm(y))
            y = t
        b.asm.cmp(x, Imm(y) if isinstance(y, int) else y)
        b.emit(self.CONDITIONS[cond], label)

    def jump_by_pair(self, b: KernelBuilder, first: Reg, second: Reg, base: Reg, disp: int,
                     equal: Label | None, differ: Label) -> None:
        """Jump to ``differ`` unless first and second equal the u64 pair at base+disp; when
        they do, to ``equal`` (None: fall through)."""
        b.asm.cmp(first, Mem(64, base=base, disp=disp))
        b.asm.jne(differ)
        b.asm.cmp(second, Mem(64, base=base, disp=disp + 8))
        if equal is None:
            b.asm.jne(differ)
        else:
            b.asm.je(equal)

    def jump_if_any_bits(self, b: KernelBuilder, r: Reg, mask: int, label: Label) -> None:
        """Jump to label when r & mask is not zero."""
        b.asm.test(r, Imm(mask))
        b.asm.jne(label)

    def jump_unless_any_bits(self, b: KernelBuilder, r: Reg, mask: int, label: Label) -> None:
        """Jump to label when r & mask is zero."""
        b.asm.test(r, Imm(mask))
        b.asm.je(label)

    def mask_jump_if_zero(self, b: KernelBuilder, r: Reg, mask: int, label: Label) -> None:
        """r &= mask (a small number); jump to label when that leaves 0."""
        b.emit("and", r, Imm(mask))
        b.asm.je(label)

    def low_byte(self, b: KernelBuilder, dst: Reg, src: Reg) -> None:
        """dst = src & 255."""
        b.asm.movzx(dst.w32, src.w8)

    def take_one(self, b: KernelBuilder, counter: Mem, empty: Label) -> None:
        """Jump to ``empty`` when the u64 at ``counter`` is 0, else count it down by one."""
        b.asm.cmp(counter, Imm(0))
        b.asm.je(empty)
        b.asm.sub(counter, Imm(1))

    def unsigned_min(self, b: KernelBuilder, dst: Reg, other: Reg | int) -> None:
        """dst = min(dst, other), without a branch."""
        if isinstance(other, int):
            value, other = other, b.gp()
            b.asm.mov(other, Imm(value))
        b.asm.cmp(dst, other)
        b.asm.cmova(dst, other)

    def unsigned_max(self, b: KernelBuilder, dst: Reg, other: Reg) -> None:
        """dst = max(dst, other), without a branch."""
        b.asm.cmp(other, dst)
        b.asm.cmova(dst, other)

    def and_constant(self, b: KernelBuilder, dst: Reg, src: Reg, mask: int) -> None:
        """dst = src & mask for any 64-bit mask."""
        b.asm.movabs(dst, Imm(mask))
        b.emit("and", dst, src)

    # --- bytes ----------------------------------------------------------------------------
    def address_below(self, b: KernelBuilder, base: Reg, minus: Reg) -> Reg:
        p = b.gp()
        b.asm.mov(p, base)
        b.asm.sub(p, minus)
        return p

    def xor_byte(self, b: KernelBuilder, out: Reg, inp: Reg, key: Mem,
                 index: Reg | None = None) -> None:
        """out[index] = inp[index] ^ key; without an index, out[0] and then out and inp
        one byte on."""
        a, t = b.asm, b.gp()
        a.movzx(t.w32, key)
        a.xor(t.w8, Mem(8, base=inp, index=index))
        a.mov(Mem(8, base=out, index=index), t.w8)
        if index is None:
            a.inc(inp)
            a.inc(out)

    def xor_bytes(self, b: KernelBuilder, out: Reg, inp: Reg, key: Reg, disp: int,
                  count: Reg, hint: str) -> None:
        """out[j] = inp[j] ^ key[disp + j] for j < count (count >= 1): a loop of bytes, for
        tails under 16 bytes, where the length is public."""
        a, j = b.asm, b.gp()
        a.xor(j.w32, j.w32)
        loop = b.label(hint)
        b.bind(loop)
        self.xor_byte(b, out, inp, Mem(8, base=key, disp=disp, index=j), index=j)
        a.inc(j)
        a.cmp(j, count)
        a.jb(loop)

    def store_difference(self, b: KernelBuilder, dst: Mem, value: int, minus: Reg) -> None:
        """dst = value - minus."""
        t = b.gp()
        b.asm.mov(t, Imm(value))
        b.asm.sub(t, minus)
        b.asm.mov(dst, t)
