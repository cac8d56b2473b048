"""The general-purpose side of AArch64 (AAPCS64) as the mode skeletons use it: the same
methods as arch/x86_64/scalar.py, so a skeleton written over them (modes/ctr/entries.py)
serves both instruction sets. Entries are BTI landing pads; loads and stores take a dsl Mem
whose width says how much moves; a walk over bytes uses post-indexed addressing.
"""
from __future__ import annotations

from ...dsl.builder import KernelBuilder
from ...dsl.operands import XZR, Imm, Label, Mem, Reg, xreg
from ...passes.frame import BTI_C


def _view(r: Reg, width: int) -> Reg:
    return r.w if width <= 32 else r


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

    def store_imm(self, b: KernelBuilder, dst: Mem, value: int) -> None:
        if value == 0:
            b.asm.str(_view(XZR, dst.width), dst)
            return
        t = b.gp()
        b.asm.mov(_view(t, dst.width), Imm(value))
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
        b.asm.ldp(first, second, Mem(128, base=base, disp=disp))
        return first, second

    def store_pair(self, b: KernelBuilder, base: Reg, disp: int, first: Reg,
                   second: Reg) -> None:
        """first at base+disp, second 8 bytes above it."""
        b.asm.stp(first, second, Mem(128, base=base, disp=disp))

    def count_up(self, b: KernelBuilder, lo: Reg, hi: Reg, n: int) -> None:
        b.asm.adds(lo, lo, Imm(n))
        b.asm.adc(hi, hi, XZR)

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
