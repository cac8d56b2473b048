"""Vector operations written once for both x86 encodings.

Lowerings call ``ops.xor(dst, a, b)`` and get ``pxor`` with a copy where the legacy SSE
two-operand form needs one, or a single three-operand ``vpxor`` under VEX. Legacy SSE
memory operands must be 16-byte aligned; ``unaligned=True`` sources are loaded first.
"""
from __future__ import annotations

from ..dsl.builder import KernelBuilder
from ..dsl.operands import Mem, Reg


class VectorOps:
    def __init__(self, builder: KernelBuilder, encoding: str) -> None:
        self.b = builder
        self.avx = encoding == "avx"
        self.a = builder.asm

    def _v(self, name: str) -> str:
        return f"v{name}" if self.avx else name

    # --- moves ------------------------------------------------------------------------
    def load(self, dst: Reg, src: Mem, *, aligned: bool = True) -> None:
        self.b.emit(self._v("movdqa" if aligned else "movdqu"), dst, src)

    def store(self, dst: Mem, src: Reg, *, aligned: bool = True) -> None:
        self.b.emit(self._v("movdqa" if aligned else "movdqu"), dst, src)

    def copy(self, dst: Reg, src: Reg) -> None:
        if dst != src:
            self.b.emit(self._v("movdqa"), dst, src)

    def load_u32(self, dst: Reg, src: Mem | Reg) -> None:
        """dst = zero-extended 32-bit value (movd)."""
        self.b.emit(self._v("movd"), dst, src)

    def store_u32(self, dst: Mem | Reg, src: Reg) -> None:
        self.b.emit(self._v("movd"), dst, src)

    def from_gp64(self, dst: Reg, src: Reg) -> None:
        self.b.emit(self._v("movq"), dst, src)

    # --- three-address arithmetic ------------------------------------------------------
    def _binary(self, name: str, dst: Reg, a: Reg, b: Reg | Mem, unaligned: bool) -> None:
        if self.avx:
            self.b.emit(f"v{name}", dst, a, b)
            return
        if isinstance(b, Mem) and unaligned:
            tmp = self.b.xmm()
            self.load(tmp, b, aligned=False)
            b = tmp
        if dst == b and dst != a:
            if name in ("pxor", "paddb"):   # commutative: swap instead of copying
                a, b = b, a
            else:
                raise ValueError(f"{name}: destination aliases the second source")
        self.copy(dst, a)
        self.b.emit(name, dst, b)

    def xor(self, dst: Reg, a: Reg, b: Reg | Mem, *, unaligned: bool = False) -> None:
        self._binary("pxor", dst, a, b, unaligned)

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
