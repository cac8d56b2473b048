"""x86-64 hash engines: PCLMULQDQ on xmm (VPCLMULQDQ on ymm/zmm next)."""
