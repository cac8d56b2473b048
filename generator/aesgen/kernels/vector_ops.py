"""Vector operations written once for three x86 encodings and three widths.

Lowerings call ``ops.xor(dst, a, b)`` and get, by encoding:
  sse   legacy two-operand forms (``pxor`` after a copy when dst != a), xmm only,
        16 registers; memory operands must be 16-byte aligned (``unaligned=True`` loads first)
  avx   VEX three-operand forms (``vpxor``) on xmm or ymm, 16 registers
  evex  AVX-512 forms (``vpxorq``, ``vmovdqu64``, EVEX rows of ``vaesenc``...) on xmm, ymm
        or zmm, 32 registers, and ``ternary`` (VPTERNLOGD) folds three-input logic
The width comes from the register operands (a 512-bit view is a zmm register).
"""
from __future__ import annotations

from ..dsl.builder import KernelBuilder
from ..dsl.operands import Imm, Masked, Mem, Reg

EVEX_ROWS = ("evx", "evy", "evyv", "evxst", "z", "x", "y", "xst", "yst")

# VPTERNLOGD truth-table immediates (A = destination's old value, B, C the sources):
# the result bit is imm[(A << 2) | (B << 1) | C].
XOR3 = 0x96


class VectorOps:
    def __init__(self, builder: KernelBuilder, encoding: str) -> None:
        if encoding not in ("sse", "avx", "evex"):
            raise ValueError(f"unknown encoding {encoding!r}")
        self.b = builder
        self.encoding = encoding
        self.sse = encoding == "sse"
        self.avx = encoding == "avx"
        self.evex = encoding == "evex"
        if self.evex:
            builder.prefer = EVEX_ROWS

    @property
    def registers(self) -> int:
        return 32 if self.evex else 16

    def _emit(self, name: str, *ops) -> None:
        self.b.emit(name, *ops)

    # --- moves ------------------------------------------------------------------------
    def load(self, dst: Reg, src: Mem, *, aligned: bool = True) -> None:
        if self.evex:
            self._emit("vmovdqa64" if aligned and dst.width == 128 else "vmovdqu64",
                       dst, src.at(dst.width))
        elif self.avx:
            self._emit("vmovdqa" if aligned else "vmovdqu", dst, src.at(dst.width))
        else:
            self._emit("movdqa" if aligned else "movdqu", dst, src)

    def store(self, dst: Mem, src: Reg, *, aligned: bool = True) -> None:
        if self.evex:
            self._emit("vmovdqa64" if aligned and src.width == 128 else "vmovdqu64",
                       dst.at(src.width), src)
        elif self.avx:
            self._emit("vmovdqa" if aligned and src.width == 128 else "vmovdqu",
                       dst.at(src.width), src)
        else:
            self._emit("movdqa" if aligned else "movdqu", dst, src)

    def copy(self, dst: Reg, src: Reg) -> None:
        if dst == src:
            return
        if self.evex:
            self._emit("vmovdqa64", dst, src)
        else:
            self._emit("vmovdqa" if self.avx else "movdqa", dst, src)

    def load_u32(self, dst: Reg, src: Mem | Reg) -> None:
        """dst = zero-extended 32-bit value (movd)."""
        self._emit("movd" if self.sse else "vmovd", dst, src)

    def store_u32(self, dst: Mem | Reg, src: Reg) -> None:
        self._emit("movd" if self.sse else "vmovd", dst, src)

    def from_gp64(self, dst: Reg, src: Reg) -> None:
        self._emit("movq" if self.sse else "vmovq", dst, src)

    def broadcast_lane(self, dst: Reg, src: Mem) -> None:
        """Every 128-bit lane of dst = the 16 bytes at src."""
        if dst.width == 128:
            self.load(dst, src)
        elif dst.width == 256:
            self._emit("vbroadcasti32x4" if self.evex else "vbroadcasti128", dst, src.at(128))
        else:
            self._emit("vbroadcasti32x4", dst, src.at(128))

    def broadcast_register(self, dst: Reg, src: Reg) -> None:
        """Every 128-bit lane of dst = src (an xmm value)."""
        if dst.width == 128:
            self.copy(dst, src)
        elif dst.width == 256:
            wide = src.view(256)
            self._emit("vinserti32x4" if self.evex else "vinserti128", dst, wide, src, Imm(1))
        else:
            wide = src.view(512)
            self._emit("vshufi32x4", dst, wide, wide, Imm(0))

    def join_lanes(self, dst: Reg, parts: list[Reg]) -> None:
        """Lane i of dst (ymm, zmm) = parts[i] (xmm values): built in registers, where a
        wide load of values just stored a lane at a time would wait for the stores to
        retire (a load fed by several stores is not forwarded)."""
        if dst.width == 256:
            self._emit("vinserti32x4" if self.evex else "vinserti128", dst,
                       parts[0].view(256), parts[1], Imm(1))
            return
        halves = [self.b.vec(256), self.b.vec(256)]
        for half, pair in zip(halves, (parts[:2], parts[2:])):
            self.join_lanes(half, pair)
        self._emit("vshufi32x4", dst, halves[0].view(512), halves[1].view(512), Imm(0x44))

    # --- three-address arithmetic ------------------------------------------------------
    def _binary(self, name: str, dst: Reg, a: Reg, b: Reg | Mem, unaligned: bool,
                evex_name: str | None = None) -> None:
        if not self.sse:
            self._emit(evex_name if (self.evex and evex_name) else f"v{name}", dst, a,
                       b.at(dst.width) if isinstance(b, Mem) else b)
            return
        if isinstance(b, Mem) and unaligned:
            tmp = self.b.xmm()
            self.load(tmp, b, aligned=False)
            b = tmp
        if dst == b and dst != a:
            if name in ("pxor", "paddb", "pand", "por"):   # commutative: swap instead of copying
                a, b = b, a
            else:
                raise ValueError(f"{name}: destination aliases the second source")
        self.copy(dst, a)
        self._emit(name, dst, b)

    def xor(self, dst: Reg, a: Reg, b: Reg | Mem, *, unaligned: bool = False) -> None:
        self._binary("pxor", dst, a, b, unaligned, evex_name="vpxorq")

    def xor3(self, dst: Reg, a: Reg, b: Reg, c: Reg | Mem) -> None:
        """dst = a ^ b ^ c: one VPTERNLOGD under EVEX, two XORs otherwise."""
        if self.evex:
            self.copy(dst, a)
            self.ternary(dst, b, c, XOR3)
        else:
            self.xor(dst, a, b)
            self.xor(dst, dst, c)

    def ternary(self, acc: Reg, b: Reg, c: Reg | Mem, imm: int) -> None:
        """acc = f(acc, b, c) for the truth table imm (VPTERNLOGD; EVEX only)."""
        if not self.evex:
            raise ValueError("VPTERNLOGD needs the EVEX encoding (AVX-512)")
        self._emit("vpternlogd", acc, b, c.at(acc.width) if isinstance(c, Mem) else c,
                   Imm(imm))

    def and_(self, dst: Reg, a: Reg, b: Reg | Mem, *, unaligned: bool = False) -> None:
        self._binary("pand", dst, a, b, unaligned, evex_name="vpandq")

    def or_(self, dst: Reg, a: Reg, b: Reg | Mem) -> None:
        self._binary("por", dst, a, b, False, evex_name="vporq")

    def sub_bytes(self, dst: Reg, a: Reg, b: Reg | Mem) -> None:
        """dst = a - b per byte (PSUBB)."""
        self._binary("psubb", dst, a, b, False)

    def shift_qwords(self, dst: Reg, src: Reg, bits: int) -> None:
        """dst = src shifted within each 64-bit element: right by ``bits`` if positive,
        left by ``-bits`` if negative (PSRLQ/PSLLQ)."""
        name = "psrlq" if bits > 0 else "psllq"
        if self.sse:
            self.copy(dst, src)
            self._emit(name, dst, Imm(abs(bits)))
        else:
            self._emit(f"v{name}", dst, src, Imm(abs(bits)))

    def shuffle_dwords(self, dst: Reg, src: Reg, imm: int) -> None:
        """PSHUFD within each 128-bit lane: dword i of dst = dword (imm >> 2i) & 3 of src."""
        self._emit("pshufd" if self.sse else "vpshufd", dst, src, Imm(imm))

    def add_bytes(self, dst: Reg, a: Reg, b: Reg | Mem) -> None:
        self._binary("paddb", dst, a, b, False)

    def shuffle_bytes(self, dst: Reg, a: Reg, control: Reg | Mem) -> None:
        self._binary("pshufb", dst, a, control, False)

    def unpack_low_qwords(self, dst: Reg, a: Reg, b: Reg) -> None:
        self._binary("punpcklqdq", dst, a, b, False)

    def aes_round(self, dst: Reg, state: Reg, key: Reg | Mem) -> None:
        self._binary("aesenc", dst, state, key, False)

    def aes_last_round(self, dst: Reg, state: Reg, key: Reg | Mem) -> None:
        self._binary("aesenclast", dst, state, key, False)

    def gf_multiply(self, dst: Reg, a: Reg, b: Reg | Mem) -> None:
        """dst = a * b per byte in GF(2^8) mod x^8+x^4+x^3+x+1 (GF2P8MULB)."""
        self._binary("gf2p8mulb", dst, a, b, False)

    def affine_inverse(self, dst: Reg, src: Reg, matrix: Reg | Mem, constant: int) -> None:
        """dst = A * inv(src) + c per byte (GF2P8AFFINEINVQB; the AES S-box with A, 0x63)."""
        self._affine("gf2p8affineinvqb", dst, src, matrix, constant)

    def affine(self, dst: Reg, src: Reg, matrix: Reg | Mem, constant: int) -> None:
        """dst = A * src + c per byte (GF2P8AFFINEQB)."""
        self._affine("gf2p8affineqb", dst, src, matrix, constant)

    def _affine(self, name: str, dst: Reg, src: Reg, matrix: Reg | Mem, constant: int) -> None:
        if isinstance(matrix, Mem):
            matrix = matrix.at(dst.width)
        if self.sse:
            self.copy(dst, src)
            self._emit(name, dst, matrix, Imm(constant))
        else:
            self._emit(f"v{name}", dst, src, matrix, Imm(constant))

    # --- GF(2^128) and the GCM counter ---------------------------------------------------
    def clmul(self, dst: Reg, a: Reg, b: Reg | Mem, imm: int) -> None:
        """dst = carry-less product of one qword of a (imm bit 0) and one of b (imm bit 4),
        per 128-bit lane (PCLMULQDQ, VPCLMULQDQ)."""
        if isinstance(b, Mem):
            b = b.at(dst.width)
        if self.sse:
            if dst == b and dst != a:
                raise ValueError("pclmulqdq: destination aliases the second source")
            self.copy(dst, a)
            self._emit("pclmulqdq", dst, b, Imm(imm))
        else:
            self._emit("vpclmulqdq", dst, a, b, Imm(imm))

    def add_dwords(self, dst: Reg, a: Reg, b: Reg | Mem) -> None:
        """dst = a + b per 32-bit element (PADDD): inc32 on a byte-reversed counter block."""
        self._binary("paddd", dst, a, b, False)

    def _shift(self, name: str, dst: Reg, src: Reg, count: int) -> None:
        if self.sse:
            self.copy(dst, src)
            self._emit(name, dst, Imm(count))
        else:
            self._emit(f"v{name}", dst, src, Imm(count))

    def shift_bytes_left(self, dst: Reg, src: Reg, count: int) -> None:
        """dst = src << 8*count within each 128-bit lane (PSLLDQ)."""
        self._shift("pslldq", dst, src, count)

    def shift_bytes_right(self, dst: Reg, src: Reg, count: int) -> None:
        """dst = src >> 8*count within each 128-bit lane (PSRLDQ)."""
        self._shift("psrldq", dst, src, count)

    def shift_dwords_left(self, dst: Reg, src: Reg, count: int) -> None:
        """dst = src << count per 32-bit element (PSLLD)."""
        self._shift("pslld", dst, src, count)

    def shift_qwords_by(self, dst: Reg, src: Reg, counts: Reg | Mem, *, left: bool) -> None:
        """dst = src shifted per 64-bit element by that element of counts (VPSLLVQ,
        VPSRLVQ: a count of 64 or more gives 0); ymm and zmm."""
        self._emit("vpsllvq" if left else "vpsrlvq", dst, src,
                   counts.at(dst.width) if isinstance(counts, Mem) else counts)

    def shift_dwords_arith(self, dst: Reg, src: Reg, count: int) -> None:
        """dst = src >> count per signed 32-bit element (PSRAD): 31 spreads each sign bit."""
        self._shift("psrad", dst, src, count)

    # --- AVX-512 byte masks: a tail without a byte loop ------------------------------------
    def first_bytes_mask(self, k: Reg, n: Reg) -> None:
        """k = a mask of the first n bytes (n in 0..64: BZHI of all ones, then KMOVQ).
        n is kept."""
        if not self.evex:
            raise ValueError("byte masks need AVX-512 (the evex encoding)")
        ones = self.b.gp()
        self.b.asm.mov(ones, Imm(-1))
        self._emit("bzhi", ones, ones, n)
        self._emit("kmovq", k, ones)

    def load_masked(self, dst: Reg, src: Mem, k: Reg) -> None:
        """dst = the bytes at src that k selects, zero elsewhere; the others are not read
        (a masked load does not fault on them: nothing past the buffer is touched)."""
        self._emit("vmovdqu8", dst, src.at(dst.width), Masked(k, zero=True))

    def store_masked(self, dst: Mem, src: Reg, k: Reg) -> None:
        """The bytes of src that k selects to dst; the others are not written."""
        self._emit("vmovdqu8", dst.at(src.width), src, Masked(k))

    def keep_masked(self, dst: Reg, src: Reg, k: Reg) -> None:
        """dst = the bytes of src that k selects, zero elsewhere."""
        self._emit("vmovdqu8", dst, src, Masked(k, zero=True))
