"""The x86-64 instruction table plus the bitwise forms netlist lowering needs.

The shared table (``isa/x86_64.isa``) lists the forms the AES-NI/VAES/GFNI kernels use;
gate netlists also need AND, OR and AND-NOT. They are listed here in the same format and
appended to the shared table for the netlist kernels' builders; a form whose DSL name the
shared table already has is taken from the shared table, so moving these rows into
``x86_64.isa`` later changes nothing here.
"""
from __future__ import annotations

from functools import cache

from ..isa.table import InstructionTable, load_table, parse_table

EXTRA_FORMS = """
# SSE2, two operands
pand      pand      xmm:rw  xmm/m128:r               [SSE2]
por       por       xmm:rw  xmm/m128:r               [SSE2]
pandn     pandn     xmm:rw  xmm/m128:r               [SSE2]
# AVX (xmm) and AVX2 (ymm), three operands
vpand     vpand     xmm:w   xmm:r   xmm/m128:r       [AVX]
vpor      vpor      xmm:w   xmm:r   xmm/m128:r       [AVX]
vpandn    vpandn    xmm:w   xmm:r   xmm/m128:r       [AVX]
vpand.y   vpand     ymm:w   ymm:r   ymm/m256:r       [AVX2]
vpor.y    vpor      ymm:w   ymm:r   ymm/m256:r       [AVX2]
vpandn.y  vpandn    ymm:w   ymm:r   ymm/m256:r       [AVX2]
# AVX-512 (EVEX, zmm)
vpandq    vpandq    zmm:w   zmm:r   zmm/m512:r       [AVX512F]
vporq     vporq     zmm:w   zmm:r   zmm/m512:r       [AVX512F]
vpandnq   vpandnq   zmm:w   zmm:r   zmm/m512:r       [AVX512F]
"""


@cache
def netlist_table() -> InstructionTable:
    base = load_table("x86_64")
    extra = parse_table("x86_64", EXTRA_FORMS)
    have = {f.name for f in base.forms}
    forms = base.forms + tuple(f for f in extra.forms if f.name not in have)
    return InstructionTable(base.isa, forms)
