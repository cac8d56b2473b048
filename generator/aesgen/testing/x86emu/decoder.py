"""The decode-time context of one instruction (Decoder): operand readers and writers, bound
later to a machine; each instruction becomes a factory make(m) -> closure() -> next pc."""
from __future__ import annotations

from typing import TYPE_CHECKING

from .errors import ParseError, UnsupportedInstruction
from .operands import Insn, Operand
from .semantics import BITS_MASK, M64, M512, WMASK, expand_mask, replicate_const

if TYPE_CHECKING:
    from .program import Program


def _unsupported(ins: Insn, why: str = "") -> UnsupportedInstruction:
    extra = f" ({why})" if why else ""
    return UnsupportedInstruction(f"{ins.location()}: `{ins.text}`: mnemonic "
                                  f"{ins.mnemonic!r} with operands {ins.operand_text} is not "
                                  f"implemented by the emulator{extra}")


class Decoder:
    """Decode-time context of one instruction."""

    def __init__(self, prog: Program, ins: Insn) -> None:
        self.prog, self.ins, self.ops = prog, ins, ins.ops

    def fail(self, why: str = "") -> UnsupportedInstruction:
        return _unsupported(self.ins, why)

    def need(self, cond: bool, why="operand form") -> None:
        """Raise UnsupportedInstruction unless cond; why: a string or a function making one
        (so the message costs nothing when the form is fine)."""
        if not cond:
            raise self.fail(why() if callable(why) else why)

    # --- addresses ------------------------------------------------------------------------
    def addr(self, op: Operand):
        """binder(m) -> () -> effective address."""
        if op.rip:
            try:
                c = (self.prog.address_of(op.sym) + op.disp) & M64 if op.sym else None
            except KeyError:
                raise ParseError(f"{self.ins.location()}: `{self.ins.text}`: undefined "
                                 f"symbol {op.sym!r}") from None
            if c is None:
                raise self.fail("rip-relative without a symbol")
            return lambda m: (lambda: c)
        b, x, s, d = op.base, op.index, op.scale, op.disp
        if b is None and x is None:
            c = d & M64
            return lambda m: (lambda: c)

        def bind(m):
            R = m.R
            if x is None:
                if d == 0:
                    return lambda: R[b]
                return lambda: (R[b] + d) & M64
            if b is None:
                return lambda: (R[x] * s + d) & M64
            if s == 1:
                return lambda: (R[b] + R[x] + d) & M64
            return lambda: (R[b] + R[x] * s + d) & M64
        return bind

    # --- GPR operands ----------------------------------------------------------------------
    def gget(self, op: Operand, bits: int):
        """binder(m) -> () -> value (unsigned, bits wide)."""
        mask = BITS_MASK[bits]
        if op.kind == "imm":
            v = op.value & mask
            return lambda m: (lambda: v)
        if op.kind == "reg":
            self.need(op.cls == "g" and op.bits == bits, lambda: f"register {op.text} is not "
                      f"{bits}-bit")
            i = op.idx
            if bits == 64:
                return lambda m: (lambda R=m.R: R[i])
            if op.high:
                return lambda m: (lambda R=m.R: (R[i] >> 8) & 0xFF)
            return lambda m: (lambda R=m.R: R[i] & mask)
        if op.kind == "mem":
            self.need(not op.mask and not op.bcst, "decorated memory operand")
            a = self.addr(op)
            n = bits // 8
            return lambda m: (lambda ga=a(m), ld=m.load: ld(ga(), n))
        raise self.fail()

    def gset(self, op: Operand, bits: int):
        """binder(m) -> (value) -> None; value already truncated to bits."""
        if op.kind == "reg":
            self.need(op.cls == "g" and op.bits == bits, lambda: f"register {op.text} is not "
                      f"{bits}-bit")
            i = op.idx
            if bits in (64, 32):
                def bind(m):
                    R = m.R

                    def put(v):
                        R[i] = v
                    return put
                return bind
            keep = M64 ^ (BITS_MASK[bits] << (8 if op.high else 0))
            sh = 8 if op.high else 0

            def bind(m):
                R = m.R

                def put(v):
                    R[i] = (R[i] & keep) | (v << sh)
                return put
            return bind
        if op.kind == "mem":
            self.need(not op.mask and not op.bcst, "decorated memory operand")
            a = self.addr(op)
            n = bits // 8

            def bind(m):
                ga, st = a(m), m.store
                return lambda v: st(ga(), n, v)
            return bind
        raise self.fail()

    # --- vector operands -------------------------------------------------------------------
    def vget(self, op: Operand, nbytes: int, align: int = 0, esize: int = 0,
             mask_src: Operand | None = None, mask_esize: int = 0):
        """binder(m) -> () -> value of nbytes. esize: the broadcast element. A memory source
        of a masked EVEX instruction reads only the enabled elements of mask_esize bits
        (mask_src: the destination carrying the mask): fault suppression."""
        if op.kind == "reg":
            self.need(op.cls == "v", lambda: f"{op.text} is not a vector register")
            self.need(op.bits // 8 == nbytes, lambda: f"{op.text} is not {nbytes} bytes wide")
            i = op.idx
            wm = WMASK.get(nbytes) or ((1 << (8 * nbytes)) - 1)
            if nbytes == 64:
                return lambda m: (lambda V=m.V: V[i])
            return lambda m: (lambda V=m.V: V[i] & wm)
        if op.kind != "mem":
            raise self.fail("vector operand expected")
        self.need(not op.mask, "a mask on a source operand")
        a = self.addr(op)
        if op.bcst:
            self.need(esize and op.bcst * esize == 8 * nbytes,
                      f"broadcast {{1to{op.bcst}}} does not fit")
            eb = esize // 8
            rep = replicate_const(esize, 8 * nbytes)
            return lambda m: (lambda ga=a(m), ld=m.load: ld(ga(), eb) * rep)
        if mask_src is not None and mask_src.mask:
            e = mask_esize or esize
            self.need(e, "masked memory source without an element size")
            k, n = mask_src.mask, 8 * nbytes // e

            def bind(m):
                ga, ldm, K = a(m), m.load_masked, m.K
                return lambda: ldm(ga(), nbytes, e, K[k] & ((1 << n) - 1), align)
            return bind
        if align:
            return lambda m: (lambda ga=a(m), ld=m.load_aligned: ld(ga(), nbytes, align))
        return lambda m: (lambda ga=a(m), ld=m.load: ld(ga(), nbytes))

    def vset(self, op: Operand, nbytes: int, legacy: bool = False, esize: int = 0,
             align: int = 0):
        """binder(m) -> (value) -> None."""
        if op.kind == "reg":
            self.need(op.cls == "v", lambda: f"{op.text} is not a vector register")
            self.need(op.bits // 8 == nbytes, lambda: f"{op.text} is not {nbytes} bytes wide")
            i = op.idx
            if op.mask:
                self.need(not legacy and esize, "write mask on an instruction without one")
                k, n, zero = op.mask, 8 * nbytes // esize, op.zero
                wm = WMASK[nbytes]

                def bind(m):
                    V, K = m.V, m.K

                    def put(v):
                        e = expand_mask(K[k], esize, n)
                        V[i] = (v & e) if zero else ((v & e) | (V[i] & (wm ^ e)))
                    return put
                return bind
            if legacy:
                keep = M512 ^ ((1 << (8 * nbytes)) - 1)

                def bind(m):
                    V = m.V

                    def put(v):
                        V[i] = (V[i] & keep) | v
                    return put
                return bind

            def bind(m):
                V = m.V

                def put(v):
                    V[i] = v
                return put
            return bind
        if op.kind != "mem":
            raise self.fail("vector destination expected")
        a = self.addr(op)
        if op.mask:
            self.need(esize and not op.zero, "masked store needs an element size, no {z}")
            k, n = op.mask, 8 * nbytes // esize

            def bind(m):
                ga, stm, K = a(m), m.store_masked, m.K
                return lambda v: stm(ga(), nbytes, esize, K[k] & ((1 << n) - 1), v, align)
            return bind
        if align:
            def bind(m):
                ga, st = a(m), m.store_aligned
                return lambda v: st(ga(), nbytes, v, align)
            return bind

        def bind(m):
            ga, st = a(m), m.store
            return lambda v: st(ga(), nbytes, v)
        return bind
