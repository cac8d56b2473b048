"""The counter policy of a counter mode: which trailing bits of the counter block count.

``be128``: the whole block is one 128-bit big-endian number (SP 800-38A's CTR, the IV of the
CTR kernels); ``inc32``: bytes 12..15 are a 32-bit big-endian number that wraps, bytes 0..11
never change (SP 800-38D section 6.2, GCM's inc_32); ``le32``: bytes 0..3 are a 32-bit
little-endian number that wraps (RFC 8452's AES-GCM-SIV), so a counter kept in block order
in a vector register steps by one 32-bit add on its lowest dword, as inc32's byte-reversed
one does. A kernel's spec names its policy
(KernelSpec.counter; each mode's descriptor lists the policies its skeletons take, the
default first): the CTR skeleton takes either, GCM only inc32.

Only the step between batches differs: a batch never crosses a change of counter byte 14
(FACE's window, or the ladder's in15 bound), so the blocks inside a batch differ in byte 15
alone under both policies, and FACE's window (the counter without byte 15) and table tag
(bytes 0, 5, 10) mean the same under both.
"""
from __future__ import annotations

from dataclasses import dataclass

from ..dsl.builder import KernelBuilder
from ..dsl.operands import Mem, Reg
from ..model.aes import counter_block_at


@dataclass(frozen=True)
class CounterPolicy:
    name: str           # "be128", "inc32", "le32": the manifest's "counter"
    bits: int           # how many trailing bits of the block count (and wrap)
    summary: str
    little: bool = False    # the leading bytes count, little-endian (RFC 8452's counter)

    def block(self, first: bytes, i: int) -> bytes:
        """The model: the counter block i steps after ``first``."""
        if self.little:
            n = self.bits // 8
            low = (int.from_bytes(first[:n], "little") + i) % (1 << self.bits)
            return low.to_bytes(n, "little") + first[n:]
        return counter_block_at(first, i, self.bits)

    def count_up(self, isa, b: KernelBuilder, lo: Reg, hi: Reg | Mem, n: int | Reg) -> None:
        """Advance the counter, held as two native 64-bit halves (hi = bytes 0..7, lo =
        bytes 8..15, each big-endian; hi may stay in memory on x86), by n blocks (a number;
        a register on x86), through the kernel's ISA layer."""
        if self.bits == 128:
            isa.count_up(b, lo, hi, n)
        else:
            isa.count_up_low32(b, lo, n)

    def vector_add(self, v, dst: Reg, src: Reg, step: Reg | Mem) -> None:
        """dst = src advanced by step's blocks, lane by lane, for counters kept byte-reversed
        in vector registers (the GCM skeleton's): inc32 is a 32-bit add on each lane's low
        dword (bytes 12..15). A 128-bit carry across a lane's dwords is not built: the CTR
        kernels keep their counter in general-purpose registers (count_up)."""
        if self.bits != 32:
            raise ValueError(f"counter policy {self.name}: no vector form (inc32 and le32 "
                             f"have one)")
        v.add_dwords(dst, src, step)


BE128 = CounterPolicy("be128", 128, "the block is a 128-bit big-endian number "
                                    "(SP 800-38A)")
INC32 = CounterPolicy("inc32", 32, "bytes 12..15 are a 32-bit big-endian number that wraps; "
                                   "bytes 0..11 stay (SP 800-38D inc_32)")
LE32 = CounterPolicy("le32", 32, "bytes 0..3 are a 32-bit little-endian number that wraps; "
                                 "bytes 4..15 stay (RFC 8452's AES-GCM-SIV)", little=True)
# OTR counts nothing: every block has its own mask (a GF(2^128) doubling chain)
NO_COUNTER = CounterPolicy("none", 0, "no counter: each block is masked by its own power "
                                      "of 2 times L (AES-OTR)")
POLICIES = {p.name: p for p in (BE128, INC32, LE32, NO_COUNTER)}
