"""Round engines on AArch64 (armv8-ce here; neon-tbl, neon-bitsliced in their modules).

The interface (``A64Engine``) -- what another A64 method (neon-tbl, neon-bitsliced) provides
=========================================================================================
The protocol is the x86 engines' (kernels/engines.py: ``prepare(k, b, ctx, bits)``,
``rounds(k, b, keys, blocks, first, last, nr)``, ``expand_key(k, b, ctx, key, bits)``,
``context_extra()``), with two refinements an A64 engine may take further (``last_round``
with the data XOR folded in, ``rounds_from_offset`` with an offset folded into a round key)
and its register count declared up front (``registers``).
The skeleton owns everything but the AES rounds: the context, the counter, batches, FACE
caches/tables and their refresh, load/XOR/store and the partial block. An engine owns the
round keys' form in registers and the round function. Blocks travel between the two as
virtual vector registers holding one 16-byte block each, in FIPS-197 byte order (byte i of the
block in lane i of ``.16b``), each possibly offset by a constant that depends only on the key
and the round (the engine's *domain*).

``D_r(ctr)`` names what a block register holds "after round r" in the engine's domain; the
one contract on domains is

    D_r(x) = s_r(x) ^ c_r   for every counter block x, with c_r depending on the key only,

where ``s_r`` is FIPS-197's state after round r (round 0 = AddRoundKey of rk0). ``D_-1`` is
the plain counter block and ``D_nr`` the keystream block itself (c_nr = 0). Then the FACE
table entries ``D_r(base|v) ^ D_r(base) = s_r(base|v) ^ s_r(base)`` are the same in every
domain (the x86 kernels' tables, byte for byte), and only the cache ``D_r(base)`` is
domain-specific: the skeleton stores whatever ``rounds`` returns, and starts a block at
``cache ^ table[in15]`` = D_r(block), which is what the engine's next round expects.

Methods (``k`` is the skeleton's Kernel, ``b`` the KernelBuilder):

``prepare(k, b, ctx, bits) -> keys``
    before the loop of one key size: load round keys (and constants) into registers; the
    result is opaque to the skeleton and passed back to the calls below.
``rounds(k, b, keys, blocks, first, last, nr)``
    D_{first-1} -> D_last in place, for 0 <= first <= last <= nr (first = 0 starts from
    input blocks; last = nr ends with ``last_round``). An engine writes
    ``rounds_before_last`` (last <= nr - 1). 1 to ``interleave`` blocks per call (an engine that works on groups of
    8, as a bitsliced one, pads or transposes inside); called with the FACE split points
    last = 1 or 2 and first = 2 or 3, so a domain change between calls is the engine's.
``rounds_from_offset(k, b, keys, blocks, offset, level, last, nr)``
    ``blocks`` ^ ``offset`` is D_level: produce D_last (level < last <= nr - 1). The base
    class XORs the offset into each block and continues with the rounds; an engine may do
    better (fold it into a round key). The CTR skeleton's FACE fast path calls it with the
    table entries T[in15] as blocks and the window's cache as the offset.
``last_round(k, b, keys, blocks, nr, data=None)``
    D_{nr-1} -> keystream in place, or keystream ^ data when ``data`` (registers of input
    blocks, one per block) is given: the engine may fold the XORs (EOR3 with FEAT_SHA3).
``expand_key(k, b, ctx, key, bits)``
    FIPS-197 key expansion from the key bytes at ``key`` into ``ctx`` + ROUND_KEYS (15 x 16
    bytes, FIPS byte order: the context layout is shared with x86). ``init`` calls it; a
    bitsliced engine may keep its own key form after HEADER_END only if ctx_layout grows a
    field for it.
``registers(bits) -> int``
    vector registers ``prepare`` keeps live through the loop; the skeleton checks that they,
    the batch, the FACE cache and its temporaries fit in 32.
``max_blocks``
    the most blocks a call takes (None: any); a skeleton with a longer batch calls the
    engine on pieces of it.
``folds_data``
    whether ``last_round`` with the data saves an instruction (EOR3 with FEAT_SHA3), so a
    skeleton should run the last round beside the data rather than with the rounds.

Instructions go through ``b.asm`` / ``b.emit`` (the A64 table, ``isa/aarch64.isa``); the phase
is set by the skeleton (rounds_0_2, rounds_3_nr); ``last_round`` puts the data XOR in
``load_xor_store`` when it is a separate instruction.

CeEngine (method armv8-ce): AESE/AESMC, domain D_r = s_r ^ rk_r
---------------------------------------------------------------
AESE(x, k) = ShiftRows(SubBytes(x ^ k)) and AESMC(x) = MixColumns(x), so the key is added
*before* SubBytes. Starting from D_-1 = ctr:

    AESMC(AESE(ctr, rk0))       = MC(SR(SB(ctr ^ rk0)))      = s_1 ^ rk1
    AESMC(AESE(s_r ^ rk_r, rk_r)) = MC(SR(SB(s_r)))          = s_{r+1} ^ rk_{r+1}
    AESE(s_{nr-1} ^ rk_{nr-1}, rk_{nr-1}) ^ rk_nr = SR(SB(s_{nr-1})) ^ rk_nr = s_nr

so D_r = s_r ^ rk_r for 0 <= r < nr (c_r = rk_r): D_0 = ctr (round 0 costs nothing; it is
the AESE of round 1), D_1 = s_1 ^ rk1, D_2 = s_2 ^ rk2. The FACE caches of an armv8-ce
context therefore hold C1 = s_1(base) ^ rk1 and C2 = s_2(base) ^ rk2 (not the x86 values),
while T1/T2 equal the x86 tables; C ^ T[in15] = s_r(block) ^ rk_r is exactly the input the
next AESE (with rk_r) expects. tests/test_aarch64_backend.py reads both back from a context
after a run and checks them against aesgen.model.face.

The fast path folds the cache into the round key instead of into every block: with x = T[v],
AESE(x, rk_r ^ C) = SR(SB(T[v] ^ C ^ rk_r)) = SR(SB(s_r(block))), so a batch pays one EOR
(rk_r ^ C) where x86 pays one a block.

Each round is AESE immediately followed by AESMC on the same register (the pair that
Cortex-A57/A72/A53, Neoverse and Apple cores fuse), block after block, so ``interleave``
independent chains hide the latency.
"""
from __future__ import annotations

from dataclasses import dataclass

from ...dsl.builder import KernelBuilder
from ...dsl.operands import Imm, Mem, Reg
from .. import ctx_layout as L
from ..key_schedule import word_steps
from ..spec import ROUNDS, KernelSpec

def expand_key_words(b, ctx: Reg, key: Reg, bits: int, sub_word) -> None:
    """FIPS-197 5.2 word by word in general registers: the key words from ``key``, every
    round-key word stored to ctx + ROUND_KEYS (FIPS byte order, shared with x86).
    ``sub_word(w) -> Reg`` is the engine's SubWord of a 32-bit word; RotWord is ror #8 of
    the little-endian word."""
    a = b.asm
    nk = bits // 32
    words: list[Reg] = []
    for i in range(nk):
        w = b.gp()
        a.ldr(w.w, Mem(32, base=key, disp=4 * i))
        a.str(w.w, Mem(32, base=ctx, disp=L.ROUND_KEYS + 4 * i))
        words.append(w)
    for i, step, rcon in word_steps(bits):
        t = words[i - 1]
        if step == "rot_sub":
            rot = b.gp()
            a.ror(rot.w, t.w, Imm(8))
            t = sub_word(rot)
            rc = b.gp()
            a.mov(rc.w, Imm(rcon))
            a.eor(t.w, t.w, rc.w)
        elif step == "sub":
            t = sub_word(t)
        w = b.gp()
        a.eor(w.w, words[i - nk].w, t.w)
        a.str(w.w, Mem(32, base=ctx, disp=L.ROUND_KEYS + 4 * i))
        words.append(w)



@dataclass
class CeKeys:
    regs: list[Reg]        # rk0 .. rk_nr, one vector register each


class A64Engine:
    """Base of the A64 round engines: the interface above."""

    # the most blocks one call of ``rounds`` takes (None: any number)
    max_blocks: int | None = None
    # whether last_round with the data costs less than the last round and an EOR apart
    # (CeEngine with FEAT_SHA3: EOR3 of the last round key and the data)
    folds_data = False

    def __init__(self, spec: KernelSpec) -> None:
        self.spec = spec

    def registers(self, bits: int) -> int:
        raise NotImplementedError

    def context_extra(self) -> int:
        """Bytes of method-specific context after the FACE tables (``layout.extra``)."""
        return 0

    def context_fields(self) -> list:
        """The engine's own context fields: EXTRA of context_extra() bytes (secret)."""
        return L.engine_area(self.context_extra())

    def prepare(self, k, b: KernelBuilder, ctx: Reg, bits: int):
        raise NotImplementedError

    def rounds(self, k, b: KernelBuilder, keys, blocks: list[Reg], first: int, last: int,
               nr: int) -> None:
        """Rounds first..last, as the x86 engines' ``rounds``: up to nr - 1 by the engine's
        ``rounds_before_last``, then the last round."""
        self.rounds_before_last(k, b, keys, blocks, first, min(last, nr - 1), nr)
        if last >= nr:
            self.last_round(k, b, keys, blocks, nr)

    def rounds_before_last(self, k, b: KernelBuilder, keys, blocks: list[Reg], first: int,
                           last: int, nr: int) -> None:
        raise NotImplementedError

    def last_round(self, k, b: KernelBuilder, keys, blocks: list[Reg], nr: int,
                   data: list[Reg] | None = None) -> None:
        raise NotImplementedError

    def rounds_from_offset(self, k, b: KernelBuilder, keys, blocks: list[Reg], cache: Reg,
                           level: int, last: int, nr: int) -> None:
        """D_level = blocks ^ cache (the offset), then rounds up to ``last``. An engine may
        fold the XOR elsewhere (CeEngine: into a round key)."""
        for x in blocks:
            b.asm.eor(x.b16, x.b16, cache.b16)
        self.rounds_before_last(k, b, keys, blocks, level + 1, last, nr)

    def expand_key(self, k, b: KernelBuilder, ctx: Reg, key: Reg, bits: int) -> None:
        raise NotImplementedError


class CeEngine(A64Engine):
    """ARMv8 Cryptographic Extension: AESE + AESMC a round, round keys resident."""

    @property
    def folds_data(self) -> bool:
        return self.spec.encoding == "neon-sha3"

    def registers(self, bits: int) -> int:
        return ROUNDS[bits] + 1

    def prepare(self, k, b, ctx, bits) -> CeKeys:
        a, nr = b.asm, ROUNDS[bits]
        regs = [b.vec(128) for _ in range(nr + 1)]
        for r in range(0, nr + 1, 2):
            if r + 1 <= nr:
                a.ldp(regs[r].q, regs[r + 1].q, Mem(256, base=ctx, disp=L.ROUND_KEYS + 16 * r))
            else:
                a.ldr(regs[r].q, Mem(128, base=ctx, disp=L.ROUND_KEYS + 16 * r))
        return CeKeys(regs)

    def rounds_before_last(self, k, b, keys, blocks, first, last, nr,
                           key_override=None) -> None:
        for r in range(max(first, 1), last + 1):
            key = keys.regs[r - 1] if key_override is None or r != first else key_override
            for x in blocks:                  # AESE/AESMC adjacent: the fused pair
                b.asm.aese(x.b16, key.b16)
                b.asm.aesmc(x.b16, x.b16)

    def rounds_from_offset(self, k, b, keys, blocks, cache, level, last, nr) -> None:
        """The cache folds into the next round key: AESE(T, rk ^ C) = SR(SB(T ^ C ^ rk)),
        and T ^ C = D_level is the AESE input (domain s ^ rk) -- one EOR a batch, not a
        block."""
        folded = b.vec(128)
        with b.phase("rounds_0_2"):
            b.asm.eor(folded.b16, keys.regs[level].b16, cache.b16)
        self.rounds_before_last(k, b, keys, blocks, level + 1, last, nr,
                                key_override=folded)

    def last_round(self, k, b, keys, blocks, nr, data=None) -> None:
        sha3 = self.spec.encoding == "neon-sha3"
        for x in blocks:
            b.asm.aese(x.b16, keys.regs[nr - 1].b16)
        for i, x in enumerate(blocks):
            if data is not None and sha3:
                b.asm.eor3(x.b16, x.b16, keys.regs[nr].b16, data[i].b16)
                continue
            b.asm.eor(x.b16, x.b16, keys.regs[nr].b16)
            if data is not None:
                with b.phase("load_xor_store"):
                    b.asm.eor(x.b16, x.b16, data[i].b16)

    def expand_key(self, k, b, ctx, key, bits) -> None:
        """FIPS-197 5.2 word by word in general registers; SubWord by AESE with a zero key on
        the word broadcast to all four columns (ShiftRows then moves equal bytes only, so
        lane 0 holds SubWord(w)); RotWord is ror #8 of the little-endian word."""
        a = b.asm
        zero = b.vec(128)
        a.movi(zero.d2, Imm(0))
        expand_key_words(b, ctx, key, bits, lambda w: self._sub_word(b, w, zero))

    @staticmethod
    def _sub_word(b, w: Reg, zero: Reg) -> Reg:
        x, out = b.vec(128), b.gp()
        b.asm.dup(x.s4, w.w)
        b.asm.aese(x.b16, zero.b16)
        b.asm.umov(out.w, x.lane_view("s", 0))
        return out

