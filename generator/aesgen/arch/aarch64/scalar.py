"""The general-purpose side of AArch64 (AAPCS64) as the mode skeletons use it: the same
methods as arch/x86_64/scalar.py, so a skeleton written over them (modes/ctr/entries.py)
serves both instruction sets. Entries are BTI landing pads; loads and stores take a dsl Mem
whose width says how much moves; a walk over bytes uses post-indexed addressing.
"""
from __future__ import annotations

from ...dsl.builder import KernelBuilder
from ...dsl.operands import XZR, Imm, Label, Mem, Reg, logical_immediate, xreg
from ...passes.frame import BTI_C


def _view(r: Reg, width: int) -> Reg:
    return r.w if width <= 32 else r


def _pair_mem(b: KernelBuilder, base: Reg, disp: int) -> Mem:
    """The 16 bytes at base + disp as an LDP/STP operand: the offset in the instruction
    when it fits (a multiple of 8 in -512..504), else through an address register."""
    if disp % 8 == 0 and -512 <= disp <= 504:
        return Mem(128, base=base, disp=disp)
    p = b.gp()
    b.asm.add(p, base, Imm(disp))
    return Mem(128, base=p)


class A64Scalar:
    arch = "aarch64"

    # --- entry, arguments, result ------------------------------------------------------
    def entry(self, b: KernelBuilder) -> None:
        b.asm.hint(Imm(BTI_C), comment="bti c")

    def args(self, b: KernelBuilder, count: int) -> list[Reg]:
        regs = []
        for n in range(count):
            v = b.gp()
            b.asm.mov(v, xreg(n))
            regs.append(v)
        return regs

    def result_register(self) -> Reg:
        """The register an entry's int result is in (x0; its low half w0)."""
        return xreg(0)

    def result_minus_one_unless_zero(self, b: KernelBuilder, r: Reg) -> None:
        """The result = 0 when r is 0, else -1, without a branch on r: the top bit of
        r | -r is set exactly when r is not 0, and an arithmetic shift spreads it."""
        t = b.gp()
        b.asm.neg(t, r)
        b.emit("orr", t, t, r)
        # the verdict is the return value: public from here on (passes/secrets.py)
        b.comment("declassify: the verdict of a compare made without a branch on its bytes")
        b.asm.asr(xreg(0), t, Imm(63))

    def result(self, b: KernelBuilder, value: int) -> None:
        """The int an entry returns: w0."""
        if value == -1:
            b.asm.movn(xreg(0, 32), Imm(0))
        else:
            b.asm.mov(xreg(0, 32), Imm(value))

    def ret(self, b: KernelBuilder) -> None:
        b.asm.ret()

    # --- memory ---------------------------------------------------------------------------
    def load(self, b: KernelBuilder, dst: Reg, src: Mem) -> None:
        b.asm.ldr(_view(dst, src.width), src)

    def store(self, b: KernelBuilder, dst: Mem, src: Reg) -> None:
        b.asm.str(_view(src, dst.width), dst)

    def store_zero_16(self, b: KernelBuilder, at: Reg) -> None:
        """16 zero bytes at ``at``."""
        b.asm.stp(XZR, XZR, Mem(128, base=at))

    def store_imm(self, b: KernelBuilder, dst: Mem, value: int) -> None:
        if value == 0:
            b.asm.str(_view(XZR, dst.width), dst)
            return
        t = b.gp()
        if 0 <= value < 1 << 16:
            b.asm.mov(_view(t, dst.width), Imm(value))
        else:                                  # any 64-bit number (-1: FACE's NO_WINDOW)
            self.move(b, t, value)
        b.asm.str(_view(t, dst.width), dst)

    # --- control flow ---------------------------------------------------------------------
    def jump(self, b: KernelBuilder, label: Label) -> None:
        b.asm.b(label)

    def jump_if_equal(self, b: KernelBuilder, r: Reg, value: int, label: Label,
                      width: int = 64) -> None:
        b.asm.cmp(_view(r, width), Imm(value))
        b.asm.b_eq(label)

    def jump_if_zero(self, b: KernelBuilder, r: Reg, label: Label) -> None:
        b.asm.cbz(r, label)

    def jump_if_nonzero(self, b: KernelBuilder, r: Reg, label: Label) -> None:
        b.asm.cbnz(r, label)

    def decrement(self, b: KernelBuilder, r: Reg) -> None:
        b.asm.sub(r, r, Imm(1))

    def decrement_jump_if_zero(self, b: KernelBuilder, r: Reg, label: Label) -> None:
        b.asm.subs(r, r, Imm(1))
        b.asm.b_eq(label)

    # --- the CTR counter: 16 big-endian bytes as hi (bytes 0..7) : lo (bytes 8..15) ------
    def load_big_endian_128(self, b: KernelBuilder, at: Reg) -> tuple[Reg, Reg]:
        hi, lo = b.gp(), b.gp()
        b.asm.ldp(hi, lo, Mem(128, base=at))
        b.asm.rev(hi, hi)
        b.asm.rev(lo, lo)
        return hi, lo

    def load_pair(self, b: KernelBuilder, base: Reg, disp: int) -> tuple[Reg, Reg]:
        """The 64-bit words at base+disp and 8 bytes above it."""
        first, second = b.gp(), b.gp()
        b.asm.ldp(first, second, _pair_mem(b, base, disp))
        return first, second

    def store_pair(self, b: KernelBuilder, base: Reg, disp: int, first: Reg,
                   second: Reg) -> None:
        """first at base+disp, second 8 bytes above it."""
        b.asm.stp(first, second, _pair_mem(b, base, disp))

    def count_up(self, b: KernelBuilder, lo: Reg, hi: Reg, n: int) -> None:
        b.asm.adds(lo, lo, Imm(n))
        b.asm.adc(hi, hi, XZR)

    def count_up_low32(self, b: KernelBuilder, lo: Reg, n: int) -> None:
        """inc_32 by n: the low 32 bits of lo (counter bytes 12..15) wrap, the rest stays."""
        t = b.gp()
        b.asm.add(t.w32, lo.w32, Imm(n))             # a W write clears bits 32..63
        b.emit("and", lo, lo, Imm(0xFFFFFFFF00000000))
        b.emit("orr", lo, lo, t)

    # --- arithmetic and compares on 64-bit values (for bookkeeping of public numbers) -----
    def move(self, b: KernelBuilder, dst: Reg, src: Reg | int) -> None:
        """dst = a register or any 64-bit number (MOVZ/MOVK 16 bits at a time)."""
        if not isinstance(src, int):
            b.asm.mov(dst, src)
            return
        value = src & (2**64 - 1)
        if value < 1 << 16:
            b.asm.mov(dst, Imm(value))
            return
        first = True
        for n in range(4):
            part = (value >> (16 * n)) & 0xFFFF
            if part:
                (b.asm.movz if first else b.asm.movk)(dst, Imm(part), Imm(16 * n))
                first = False

    def clear(self, b: KernelBuilder, r: Reg) -> None:
        """r = 0."""
        b.asm.mov(r, Imm(0))

    def add_to(self, b: KernelBuilder, dst: Mem, value: Reg) -> None:
        """The u64 at dst += value."""
        t = b.gp()
        b.asm.ldr(t, dst)
        b.asm.add(t, t, value)
        b.asm.str(t, dst)

    def _reg(self, b: KernelBuilder, x: Reg | Mem | int) -> Reg:
        if isinstance(x, Mem):
            t = b.gp()
            b.asm.ldr(_view(t, x.width), x)
            return _view(t, x.width)
        if isinstance(x, int):
            t = b.gp()
            self.move(b, t, x)
            return t
        return x

    def arith(self, b: KernelBuilder, op: str, dst: Reg, x: Reg, y: Reg | Mem | int) -> None:
        """dst = x op y, op one of add, sub, and; y a register, a 64-bit field or a number."""
        if isinstance(y, int):
            y = Imm(y & (2**64 - 1) if op == "and" else y)   # a bitmask immediate
        else:
            y = self._reg(b, y)
        b.emit(op, dst, x, y)

    def shift_left(self, b: KernelBuilder, dst: Reg, src: Reg, n: int) -> None:
        """dst = src << n (64-bit)."""
        b.asm.lsl(dst, src, Imm(n))

    CONDITIONS = {"eq": "b_eq", "ne": "b_ne", "a": "b_hi", "ae": "b_hs", "b": "b_lo",
                  "be": "b_ls"}

    def compare_jump(self, b: KernelBuilder, cond: str, x: Reg | Mem, y: Reg | Mem | int,
                     label: Label) -> None:
        """Branch to label when x cond y, unsigned: cond one of eq ne a ae b be."""
        x = self._reg(b, x)
        small = isinstance(y, int) and 0 <= y < 4096
        b.asm.cmp(x, Imm(y) if small else _view(self._reg(b, y), x.width))
        b.emit(self.CONDITIONS[cond], label)

    def jump_by_pair(self, b: KernelBuilder, first: Reg, second: Reg, base: Reg, disp: int,
                     equal: Label | None, differ: Label) -> None:
        """Branch to ``differ`` unless first and second equal the u64 pair at base+disp;
        when they do, to ``equal`` (None: fall through)."""
        x, y = b.gp(), b.gp()
        b.asm.ldp(x, y, _pair_mem(b, base, disp))
        b.asm.cmp(first, x)
        b.asm.b_ne(differ)
        b.asm.cmp(second, y)
        if equal is None:
            b.asm.b_ne(differ)
        else:
            b.asm.b_eq(equal)

    def jump_if_any_bits(self, b: KernelBuilder, r: Reg, mask: int, label: Label) -> None:
        """Branch to label when r & mask is not zero."""
        t = b.gp()
        b.emit("and", t, r, Imm(mask))
        b.asm.cbnz(t, label)

    def jump_unless_any_bits(self, b: KernelBuilder, r: Reg, mask: int, label: Label) -> None:
        """Branch to label when r & mask is zero."""
        t = b.gp()
        b.emit("and", t, r, Imm(mask))
        b.asm.cbz(t, label)

    def mask_jump_if_zero(self, b: KernelBuilder, r: Reg, mask: int, label: Label) -> None:
        """r &= mask; branch to label when that leaves 0."""
        b.emit("and", r, r, Imm(mask))
        b.asm.cbz(r, label)

    def low_byte(self, b: KernelBuilder, dst: Reg, src: Reg) -> None:
        """dst = src & 255."""
        b.emit("and", dst, src, Imm(255))

    def take_one(self, b: KernelBuilder, counter: Mem, empty: Label) -> None:
        """Branch to ``empty`` when the u64 at ``counter`` is 0, else count it down by one."""
        t = b.gp()
        b.asm.ldr(t, counter)
        b.asm.cbz(t, empty)
        b.asm.sub(t, t, Imm(1))
        b.asm.str(t, counter)

    def _replace_unless(self, b: KernelBuilder, cond: str, dst: Reg, other: Reg | int) -> None:
        """dst = other unless dst cond other (a branch on public values)."""
        keep = b.label("keep")
        self.compare_jump(b, cond, dst, other, keep)
        self.move(b, dst, other)
        b.bind(keep)

    def unsigned_min(self, b: KernelBuilder, dst: Reg, other: Reg | int) -> None:
        """dst = min(dst, other)."""
        self._replace_unless(b, "be", dst, other)

    def unsigned_max(self, b: KernelBuilder, dst: Reg, other: Reg) -> None:
        """dst = max(dst, other)."""
        self._replace_unless(b, "ae", dst, other)

    def and_constant(self, b: KernelBuilder, dst: Reg, src: Reg, mask: int) -> None:
        """dst = src & mask for any 64-bit mask: a bitmask immediate when it is one, else
        the mask built 16 bits at a time."""
        if logical_immediate(mask, 64):
            b.emit("and", dst, src, Imm(mask))
            return
        m = b.gp()
        parts = [(mask >> s) & 0xFFFF for s in (0, 16, 32, 48)]
        first = True
        for n, part in enumerate(parts):
            if part or (first and n == 3):
                (b.asm.movz if first else b.asm.movk)(m, Imm(part), Imm(16 * n))
                first = False
        b.emit("and", dst, src, m)

    # --- bytes ----------------------------------------------------------------------------
    def address_below(self, b: KernelBuilder, base: Reg, minus: Reg) -> Reg:
        p = b.gp()
        b.asm.sub(p, base, minus)
        return p

    def xor_byte(self, b: KernelBuilder, out: Reg, inp: Reg, key: Mem,
                 index: Reg | None = None) -> None:
        """out[index] = inp[index] ^ key; without an index, out[0] and then out and inp
        one byte on (post-indexed)."""
        a, t, u = b.asm, b.gp(), b.gp()
        step = "post" if index is None else ""
        a.ldrb(t.w, key)
        a.ldrb(u.w, Mem(8, base=inp, index=index, disp=1 if step else 0, writeback=step))
        a.eor(t.w, t.w, u.w)
        a.strb(t.w, Mem(8, base=out, index=index, disp=1 if step else 0, writeback=step))

    def xor_bytes(self, b: KernelBuilder, out: Reg, inp: Reg, key: Reg, disp: int,
                  count: Reg, hint: str) -> None:
        """out[j] = inp[j] ^ key[disp + j] for j < count (count >= 1): a loop of bytes, for
        tails under 16 bytes, where the length is public."""
        a, j, base = b.asm, b.gp(), b.gp()
        a.add(base, key, Imm(disp))
        a.mov(j, Imm(0))
        loop = b.label(hint)
        b.bind(loop)
        self.xor_byte(b, out, inp, Mem(8, base=base, index=j), index=j)
        a.add(j, j, Imm(1))
        a.cmp(j, count)
        a.b_lo(loop)

    def store_difference(self, b: KernelBuilder, dst: Mem, value: int, minus: Reg) -> None:
        """dst = value - minus."""
        t = b.gp()
        b.asm.mov(t, Imm(value))
        b.asm.sub(t, t, minus)
        b.asm.str(t, dst)
