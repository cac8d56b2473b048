"""The handlers of the SSE, AVX and AVX-512 instructions: vector moves, element-wise arithmetic,
shuffles, AES, CLMUL, GFNI, ternary logic, lane moves, opmasks. HANDLERS: by mnemonic."""
from __future__ import annotations

import operator
from functools import lru_cache

from .decoder import Decoder
from .operands import Operand
from .semantics import (AES_BY_WIDTH, BITS_MASK, M64, M128, M512, WMASK, aeskeygenassist,
                        clmul64, expand_mask, flags_x, gf2p8affine, gf2p8mul, high_bits,
                        join_lanes, lane_mask, pshufb, pshufd, replicate, replicate_const,
                        split_lanes)

HANDLERS: dict = {}

_LEGACY_UNALIGNED = {"movdqu", "movups", "lddqu", "movd", "movq", "pinsrd", "pinsrq",
                     "pextrd", "pextrq", "pinsrb", "pextrb", "pinsrw", "pextrw"}
# element sizes (mask granularity, broadcast element) of the EVEX forms
ESIZE: dict[str, tuple[int, int]] = {}
for _mn, _e in (("vmovdqu8", 8), ("vmovdqu16", 16), ("vmovdqu32", 32), ("vmovdqu64", 64),
                ("vmovdqa32", 32), ("vmovdqa64", 64),
                ("vpxord", 32), ("vpxorq", 64), ("vpandd", 32), ("vpandq", 64),
                ("vpord", 32), ("vporq", 64), ("vpandnd", 32), ("vpandnq", 64),
                ("vpternlogd", 32), ("vpternlogq", 64),
                ("vpaddb", 8), ("vpaddw", 16), ("vpaddd", 32), ("vpaddq", 64),
                ("vpsubb", 8), ("vpsubw", 16), ("vpsubd", 32), ("vpsubq", 64),
                ("vpshufb", 8), ("vpshufd", 32), ("vpalignr", 8),
                ("vpsllq", 64), ("vpsrlq", 64), ("vpslld", 32), ("vpsrld", 32),
                ("vpsrad", 32), ("vpsraq", 64), ("vpsllw", 16), ("vpsrlw", 16),
                ("vpunpcklqdq", 64), ("vpunpckhqdq", 64), ("vpunpckldq", 32),
                ("vpunpckhdq", 32),
                ("vshufi32x4", 32), ("vshufi64x2", 64),
                ("vbroadcasti32x4", 32), ("vbroadcasti64x2", 64),
                ("vbroadcasti32x8", 32), ("vbroadcasti64x4", 64),
                ("vinserti32x4", 32), ("vinserti64x2", 64), ("vinserti32x8", 32),
                ("vinserti64x4", 64),
                ("vextracti32x4", 32), ("vextracti64x2", 64), ("vextracti32x8", 32),
                ("vextracti64x4", 64),
                ("vpbroadcastb", 8), ("vpbroadcastw", 16), ("vpbroadcastd", 32),
                ("vpbroadcastq", 64), ("vpermq", 64), ("valignq", 64), ("vpermi2q", 64),
                ("vpsllvq", 64), ("vpsrlvq", 64)):
    ESIZE[_mn] = (_e, _e)
ESIZE["vgf2p8affineqb"] = (8, 64)
ESIZE["vgf2p8affineinvqb"] = (8, 64)
ESIZE["vgf2p8mulb"] = (8, 0)
# VEX-only mnemonics: no EVEX encoding, so no xmm16-31, zmm or masks
VEX_ONLY = {"vpxor", "vpand", "vpor", "vpandn", "vmovdqa", "vmovdqu", "vbroadcasti128",
            "vinserti128", "vextracti128", "vperm2i128", "vzeroupper", "vzeroall", "vptest",
            "vaeskeygenassist", "vaesimc"}


def _vwidth(d: Decoder, op: Operand) -> int:
    d.need(op.kind == "reg" and op.cls == "v", lambda: f"{op.text}: vector register expected")
    return op.bits // 8


def _h_vmov(aligned: bool, legacy: bool):
    """Whole-register moves: movdqa/movdqu/vmovdqa/vmovdqu/vmovdqa32/64/vmovdqu8..64."""
    def h(d: Decoder):
        d.need(len(d.ops) == 2)
        src, dst = d.ops
        esize = ESIZE.get(d.ins.mnemonic, (0, 0))[0]
        if src.is_vec:
            W = _vwidth(d, src)
        else:
            W = _vwidth(d, dst)
        if legacy:
            d.need(W == 16, "legacy SSE moves are 128-bit")
        align = W if aligned else 0
        d.need(not (src.kind == "mem" and dst.kind == "mem"))
        g = d.vget(src, W, align, 0, mask_src=dst if dst.mask else None, mask_esize=esize)
        s = d.vset(dst, W, legacy, esize, align)
        if src.is_vec and dst.is_vec and not dst.mask:
            i, j, wm = src.idx, dst.idx, WMASK[W]
            if legacy:
                keep = M512 ^ M128

                def bind(m, nxt):
                    V = m.V

                    def run():
                        V[j] = (V[j] & keep) | (V[i] & M128)
                        return nxt
                    return run
                return bind

            def bind(m, nxt):
                V = m.V

                def run():
                    V[j] = V[i] & wm
                    return nxt
                return run
            return bind

        def bind(m, nxt):
            get, put = g(m), s(m)

            def run():
                put(get())
                return nxt
            return run
        return bind
    return h


for _n, _al, _lg in (("movdqa", True, True), ("movdqu", False, True), ("movaps", True, True),
                     ("movups", False, True), ("vmovdqa", True, False),
                     ("vmovdqu", False, False), ("vmovaps", True, False),
                     ("vmovups", False, False), ("vmovdqa32", True, False),
                     ("vmovdqa64", True, False), ("vmovdqu8", False, False),
                     ("vmovdqu16", False, False), ("vmovdqu32", False, False),
                     ("vmovdqu64", False, False)):
    HANDLERS[_n] = _h_vmov(_al, _lg)


# --- element-wise arithmetic ---------------------------------------------------------------
def _swar_add(esize, nbits):
    h = high_bits(esize, nbits)
    lo = ((1 << nbits) - 1) ^ h
    return lambda a, b: ((a & lo) + (b & lo)) ^ ((a ^ b) & h)


def _swar_sub(esize, nbits):
    h = high_bits(esize, nbits)
    lo = ((1 << nbits) - 1) ^ h
    return lambda a, b: ((a | h) - (b & lo)) ^ ((a ^ ~b) & h)


@lru_cache(maxsize=None)
def _shift_fn(kind: str, esize: int, nbits: int, c: int):
    """x -> every esize-bit element of x shifted by c (sll, srl, sra; counts past the
    element width give 0, or the sign, as the SDM says)."""
    if kind == "sll":
        if c >= esize:
            return lambda x: 0
        keep = ((1 << nbits) - 1) ^ replicate((1 << c) - 1, esize, nbits)
        return lambda x: (x << c) & keep
    if kind == "srl":
        if c >= esize:
            return lambda x: 0
        low = replicate((1 << (esize - c)) - 1, esize, nbits)
        return lambda x: (x >> c) & low
    c = min(c, esize - 1)
    ones = replicate(1, esize, nbits)
    low = replicate((1 << (esize - c)) - 1, esize, nbits)
    fill = ((1 << c) - 1) << (esize - c)
    return lambda x: ((x >> c) & low) | (((x >> (esize - 1)) & ones) * fill)


@lru_cache(maxsize=None)
def _bytes_shift_fn(kind: str, nbits: int, n: int):
    """pslldq/psrldq: every 128-bit lane shifted by n bytes."""
    if n > 15:
        return lambda x: 0
    if kind == "l":
        keep = lane_mask(nbits, tuple(i >= n for i in range(16)))
        return lambda x: (x << (8 * n)) & keep
    keep = lane_mask(nbits, tuple(i < 16 - n for i in range(16)))
    return lambda x: (x >> (8 * n)) & keep


def _unpck(kind, esize, nbits):
    """punpckl/h: interleave the low (l) or high (h) halves of each lane of a and b."""
    if esize == 64:
        q0 = replicate(M64, 128, nbits)
        q1 = q0 << 64
        if kind == "l":
            return lambda a, b: (a & q0) | ((b & q0) << 64)
        return lambda a, b: ((a >> 64) & q0) | (b & q1)

    def f(a, b):
        out = []
        per = 64 // esize
        em = (1 << esize) - 1
        for la, lb in zip(split_lanes(a, nbits), split_lanes(b, nbits)):
            if kind == "h":
                la, lb = la >> 64, lb >> 64
            v = 0
            for i in range(per):
                v |= ((la >> (esize * i)) & em) << (2 * esize * i)
                v |= ((lb >> (esize * i)) & em) << (2 * esize * i + esize)
            out.append(v)
        return join_lanes(out)
    return f


@lru_cache(maxsize=None)
def _ternlog_fn(imm: int):
    two = ["0", "~(b | c)", "(c & ~b)", "~b", "(b & ~c)", "~c", "(b ^ c)", "~(b & c)",
           "(b & c)", "~(b ^ c)", "c", "(c | ~b)", "b", "(b | ~c)", "(b | c)", "-1"]
    f0, f1 = imm & 15, imm >> 4
    if f0 == f1:
        expr = two[f0]
    elif f1 == f0 ^ 15:
        expr = f"(a ^ {two[f0]})"
    elif f0 == 0:
        expr = f"(a & {two[f1]})"
    elif f1 == 0:
        expr = f"(~a & {two[f0]})"
    else:
        expr = f"((a & {two[f1]}) | (~a & {two[f0]}))"
    return eval(f"lambda a, b, c, M: ({expr}) & M")


def _vec_binary(fn_of_width, *, imm=False, src2_bytes=None, legacy_align=True):
    """dest = fn(src1, src2[, imm]) in Intel order. AT&T forms:
    VEX/EVEX  [imm,] src2, src1, dest      legacy  [imm,] src, dest (src1 = dest)."""
    def h(d: Decoder):
        mn = d.ins.mnemonic
        legacy = not mn.startswith("v")
        ops = d.ops
        want = (2 if legacy else 3) + (1 if imm else 0)
        d.need(len(ops) == want, lambda: f"{want} operands expected")
        k = ops[0].value if imm else None
        if imm:
            d.need(ops[0].kind == "imm")
            ops = ops[1:]
        if legacy:
            src2, src1, dst = ops[0], ops[1], ops[1]
        else:
            src2, src1, dst = ops
        W = _vwidth(d, dst)
        if legacy:
            d.need(W == 16, "legacy SSE is 128-bit")
        mesize, besize = ESIZE.get(mn, (0, 0))
        W2 = src2_bytes(W) if src2_bytes else W
        align = 16 if (legacy and legacy_align and mn not in _LEGACY_UNALIGNED) else 0
        g1 = d.vget(src1, W)
        g2 = d.vget(src2, W2, align, besize, mask_src=dst if (dst.mask and W2 == W) else None,
                    mask_esize=mesize)
        s = d.vset(dst, W, legacy, mesize)
        fn = fn_of_width(W, k) if imm else fn_of_width(W)
        if src1.is_vec and src2.is_vec and not dst.mask and not legacy and W2 == W:
            i, j, o, wm = src1.idx, src2.idx, dst.idx, WMASK[W]

            def bind(m, nxt):
                V = m.V

                def run():
                    V[o] = fn(V[i] & wm, V[j] & wm)
                    return nxt
                return run
            return bind

        def bind(m, nxt):
            ga, gb, put = g1(m), g2(m), s(m)

            def run():
                put(fn(ga(), gb()))
                return nxt
            return run
        return bind
    return h


def _h_bitwise(opname):
    """pxor/pand/por/pandn families, with the all-register case inlined."""
    def h(d: Decoder):
        mn = d.ins.mnemonic
        legacy = not mn.startswith("v")
        ops = d.ops
        d.need(len(ops) == (2 if legacy else 3))
        if legacy:
            src2, src1, dst = ops[0], ops[1], ops[1]
        else:
            src2, src1, dst = ops
        W = _vwidth(d, dst)
        if legacy:
            d.need(W == 16, "legacy SSE is 128-bit")
        wm = WMASK[W]
        if src1.is_vec and src2.is_vec and not dst.mask and not legacy:
            i, j, o = src1.idx, src2.idx, dst.idx
            d.vget(src1, W)
            d.vget(src2, W)

            def bind(m, nxt):
                V = m.V
                if opname == "xor":
                    def run():
                        V[o] = (V[i] ^ V[j]) & wm
                        return nxt
                elif opname == "and":
                    def run():
                        V[o] = V[i] & V[j] & wm
                        return nxt
                elif opname == "or":
                    def run():
                        V[o] = (V[i] | V[j]) & wm
                        return nxt
                else:
                    def run():
                        V[o] = ~V[i] & V[j] & wm
                        return nxt
                return run
            return bind
        fn = {"xor": operator.xor, "and": operator.and_, "or": operator.or_,
              "andn": lambda a, b: ~a & b & wm}[opname]
        return _vec_binary(lambda W: fn)(d)
    return h


for _op in ("xor", "and", "or", "andn"):
    for _n in (f"p{_op}", f"vp{_op}", f"vp{_op}d", f"vp{_op}q"):
        HANDLERS[_n] = _h_bitwise(_op)
HANDLERS["xorps"] = _h_bitwise("xor")
HANDLERS["vxorps"] = _h_bitwise("xor")

for _e, _c in ((8, "b"), (16, "w"), (32, "d"), (64, "q")):
    for _pre in ("p", "vp"):
        HANDLERS[f"{_pre}add{_c}"] = _vec_binary(lambda W, e=_e: _swar_add(e, 8 * W))
        HANDLERS[f"{_pre}sub{_c}"] = _vec_binary(lambda W, e=_e: _swar_sub(e, 8 * W))

for _pre in ("p", "vp"):
    HANDLERS[f"{_pre}shufb"] = _vec_binary(lambda W: (lambda a, b: pshufb(a, b, W)))
    HANDLERS[f"{_pre}unpcklqdq"] = _vec_binary(lambda W: _unpck("l", 64, 8 * W))
    HANDLERS[f"{_pre}unpckhqdq"] = _vec_binary(lambda W: _unpck("h", 64, 8 * W))
    HANDLERS[f"{_pre}unpckldq"] = _vec_binary(lambda W: _unpck("l", 32, 8 * W))
    HANDLERS[f"{_pre}unpckhdq"] = _vec_binary(lambda W: _unpck("h", 32, 8 * W))
    HANDLERS[f"{_pre}unpcklbw"] = _vec_binary(lambda W: _unpck("l", 8, 8 * W))
    HANDLERS[f"{_pre}unpckhbw"] = _vec_binary(lambda W: _unpck("h", 8, 8 * W))
    HANDLERS[f"{_pre}unpcklwd"] = _vec_binary(lambda W: _unpck("l", 16, 8 * W))
    HANDLERS[f"{_pre}unpckhwd"] = _vec_binary(lambda W: _unpck("h", 16, 8 * W))


def _vpermd(W):
    """VPERMD dest, index, table: dword i of dest = the table's dword (index dword i) mod
    the dwords a register holds (across lanes)."""
    n = W // 4

    def f(idx, table):
        v = 0
        for i in range(n):
            sel = ((idx >> (32 * i)) & 0xFFFFFFFF) % n
            v |= ((table >> (32 * sel)) & 0xFFFFFFFF) << (32 * i)
        return v
    return f


HANDLERS["vpermd"] = _vec_binary(_vpermd)


def _h_pmovzxbq(d: Decoder):
    """vpmovzxbq src, dest: qword i of dest = byte i of src (zero-extended); src is an xmm
    register (its low bytes) or W / 8 bytes of memory."""
    d.need(len(d.ops) == 2)
    src, dst = d.ops
    W = _vwidth(d, dst)
    n = W // 8
    g = d.vget(src, 16 if src.kind == "reg" else n)
    s = d.vset(dst, W, False, 64)

    def bind(m, nxt):
        get, put = g(m), s(m)

        def run():
            x = get()
            put(sum(((x >> (8 * i)) & 0xFF) << (64 * i) for i in range(n)))
            return nxt
        return run
    return bind


HANDLERS["vpmovzxbq"] = _h_pmovzxbq


def _h_pblendvb(d: Decoder):
    """vpblendvb mask, src2, src1, dest (AT&T): byte i of dest = byte i of src2 where the
    mask's byte i has its top bit set, else of src1."""
    d.need(len(d.ops) == 4)
    mask, src2, src1, dst = d.ops
    W = _vwidth(d, dst)
    gm, g2, g1 = d.vget(mask, W), d.vget(src2, W), d.vget(src1, W)
    s = d.vset(dst, W, False, 8)

    def bind(m, nxt):
        getm, get2, get1, put = gm(m), g2(m), g1(m), s(m)

        def run():
            k = getm()
            sel = sum(0xFF << (8 * i) for i in range(W) if (k >> (8 * i + 7)) & 1)
            put((get2() & sel) | (get1() & ~sel & WMASK[W]))
            return nxt
        return run
    return bind


HANDLERS["vpblendvb"] = _h_pblendvb


def _palignr(W, k):
    def f(a, b):       # Intel: dest = (src1:src2) >> 8*imm per lane
        out = []
        for la, lb in zip(split_lanes(a, 8 * W), split_lanes(b, 8 * W)):
            out.append((((la << 128) | lb) >> (8 * k)) & M128 if k < 32 else 0)
        return join_lanes(out)
    return f


def _cmpeq_bits(a: int, b: int, esize: int, nbits: int) -> int:
    """Bit i set when element i of a and b are equal."""
    x, em, k = a ^ b, (1 << esize) - 1, 0
    for i in range(nbits // esize):
        if not (x >> (esize * i)) & em:
            k |= 1 << i
    return k


def _h_pcmpeq(esize):
    vector_form = _vec_binary(
        lambda W: (lambda a, b: expand_mask(_cmpeq_bits(a, b, esize, 8 * W), esize,
                                            8 * W // esize)))

    def h(d: Decoder):
        if not (d.ops and d.ops[-1].is_k):
            return vector_form(d)
        # EVEX: vpcmpeqX src2, src1, %kN[{%kM}]
        d.need(len(d.ops) == 3 and not d.ops[-1].zero)
        src2, src1, dst = d.ops
        W = _vwidth(d, src1)
        g1, g2 = d.vget(src1, W), d.vget(src2, W, 0, esize)
        o, km = dst.idx, dst.mask

        def bind(m, nxt):
            a, b, K = g1(m), g2(m), m.K

            def run():
                k = _cmpeq_bits(a(), b(), esize, 8 * W)
                K[o] = k & K[km] if km else k
                return nxt
            return run
        return bind
    return h


for _e, _c in ((8, "b"), (16, "w"), (32, "d"), (64, "q")):
    HANDLERS[f"pcmpeq{_c}"] = _h_pcmpeq(_e)
    HANDLERS[f"vpcmpeq{_c}"] = _h_pcmpeq(_e)
    ESIZE.setdefault(f"vpcmpeq{_c}", (_e, _e))

HANDLERS["palignr"] = _vec_binary(_palignr, imm=True)
HANDLERS["vpalignr"] = _vec_binary(_palignr, imm=True)


# --- AES -----------------------------------------------------------------------------------
def _aes_fn(which):
    return lambda W: getattr(AES_BY_WIDTH[W], which)


for _which in ("enc", "enclast", "dec", "declast"):
    HANDLERS[f"aes{_which}"] = _vec_binary(_aes_fn(_which))
    HANDLERS[f"vaes{_which}"] = _vec_binary(_aes_fn(_which))


def _vec_unary(fn_of_width, *, imm=False, legacy_inplace=False, src_bytes=None,
               dst_bytes=None, aligned_legacy=True):
    """dest = fn(src[, imm]). AT&T: [imm,] src, dest; legacy in-place shifts: imm, dest."""
    def h(d: Decoder):
        mn = d.ins.mnemonic
        legacy = not mn.startswith("v")
        ops = d.ops
        k = None
        if imm:
            d.need(ops and ops[0].kind == "imm", "immediate expected first")
            k = ops[0].value
            ops = ops[1:]
        if legacy_inplace and legacy:
            d.need(len(ops) == 1)
            src, dst = ops[0], ops[0]
        else:
            d.need(len(ops) == 2)
            src, dst = ops
        if dst.is_vec:
            W = _vwidth(d, dst)
            Wd = W
            Ws = src_bytes(W) if src_bytes else W
        else:
            W = _vwidth(d, src)
            Ws = W
            Wd = dst_bytes(W) if dst_bytes else W
        if legacy:
            d.need(W == 16, "legacy SSE is 128-bit")
        mesize, besize = ESIZE.get(mn, (0, 0))
        align = 16 if (legacy and aligned_legacy and mn not in _LEGACY_UNALIGNED) else 0
        g = d.vget(src, Ws, align, besize, mask_src=dst if (dst.mask and Ws == Wd) else None,
                   mask_esize=mesize)
        s = d.vset(dst, Wd, legacy, mesize)
        fn = fn_of_width(W, k) if imm else fn_of_width(W)

        def bind(m, nxt):
            get, put = g(m), s(m)

            def run():
                put(fn(get()))
                return nxt
            return run
        return bind
    return h


def _h_vshift(kind, esize):
    imm_form = _vec_unary(lambda W, k: _shift_fn(kind, esize, 8 * W, min(k & 0xFF, esize)),
                          imm=True, legacy_inplace=True)

    def count_fn(W):
        return lambda x, c: _shift_fn(kind, esize, 8 * W, min(c & M64, esize))(x)
    reg_form = _vec_binary(count_fn, src2_bytes=lambda W: 16)

    def h(d: Decoder):
        if d.ops and d.ops[0].kind == "imm":
            return imm_form(d)
        return reg_form(d)
    return h


for _kind, _e, _c in (("sll", 16, "w"), ("sll", 32, "d"), ("sll", 64, "q"),
                      ("srl", 16, "w"), ("srl", 32, "d"), ("srl", 64, "q"),
                      ("sra", 16, "w"), ("sra", 32, "d"), ("sra", 64, "q")):
    HANDLERS[f"p{_kind}{_c}"] = _h_vshift(_kind, _e)
    HANDLERS[f"vp{_kind}{_c}"] = _h_vshift(_kind, _e)
for _kind in ("l", "r"):
    HANDLERS[f"ps{_kind}ldq"] = _vec_unary(
        lambda W, k, kind=_kind: _bytes_shift_fn(kind, 8 * W, k & 0xFF),
        imm=True, legacy_inplace=True)
    HANDLERS[f"vps{_kind}ldq"] = HANDLERS[f"ps{_kind}ldq"]

HANDLERS["pshufd"] = _vec_unary(lambda W, k: (lambda x: pshufd(x, k & 0xFF, 8 * W)), imm=True)
HANDLERS["vpshufd"] = HANDLERS["pshufd"]
HANDLERS["aeskeygenassist"] = _vec_unary(lambda W, k: (lambda x: aeskeygenassist(x, k & 0xFF)),
                                         imm=True)
HANDLERS["vaeskeygenassist"] = HANDLERS["aeskeygenassist"]
HANDLERS["aesimc"] = _vec_unary(lambda W: AES_BY_WIDTH[16].inv_mix)
HANDLERS["vaesimc"] = HANDLERS["aesimc"]


def _vpermq(W, k):
    def f(x):
        v = 0
        for i in range(W // 8):
            sel = ((k >> (2 * (i % 4))) & 3 if W == 32
                   else (4 * (i // 4) + ((k >> (2 * (i % 4))) & 3)))
            v |= ((x >> (64 * sel)) & M64) << (64 * i)
        return v
    return f


HANDLERS["vpermq"] = _vec_unary(_vpermq, imm=True)


# --- carry-less multiply, GFNI, ternary logic -----------------------------------------------
def _clmul_fn(W, k):
    s1, s2 = 64 * (k & 1), 64 * ((k >> 4) & 1)
    if W == 16:
        return lambda a, b: clmul64((a >> s1) & M64, (b >> s2) & M64)

    def f(a, b):
        v = 0
        for sh in range(0, 8 * W, 128):
            v |= clmul64((a >> (sh + s1)) & M64, (b >> (sh + s2)) & M64) << sh
        return v
    return f


HANDLERS["pclmulqdq"] = _vec_binary(_clmul_fn, imm=True)
HANDLERS["vpclmulqdq"] = _vec_binary(_clmul_fn, imm=True)
for _n, _k in (("pclmullqlqdq", 0x00), ("pclmulhqlqdq", 0x01), ("pclmullqhqdq", 0x10),
               ("pclmulhqhqdq", 0x11)):
    HANDLERS[_n] = _vec_binary(lambda W, k=_k: _clmul_fn(W, k))
    HANDLERS["v" + _n] = HANDLERS[_n]

for _pre in ("", "v"):
    HANDLERS[f"{_pre}gf2p8affineqb"] = _vec_binary(
        lambda W, k: (lambda x, a: gf2p8affine(x, a, k & 0xFF, W, False)), imm=True)
    HANDLERS[f"{_pre}gf2p8affineinvqb"] = _vec_binary(
        lambda W, k: (lambda x, a: gf2p8affine(x, a, k & 0xFF, W, True)), imm=True)
    HANDLERS[f"{_pre}gf2p8mulb"] = _vec_binary(lambda W: (lambda a, b: gf2p8mul(a, b, W)))


def _h_ternlog(d: Decoder):
    ops = d.ops
    d.need(len(ops) == 4 and ops[0].kind == "imm")
    c_op, b_op, a_op = ops[1], ops[2], ops[3]
    W = _vwidth(d, a_op)
    mesize, besize = ESIZE[d.ins.mnemonic]
    fn = _ternlog_fn(ops[0].value & 0xFF)
    ga, gb = d.vget(a_op, W), d.vget(b_op, W)
    gc = d.vget(c_op, W, 0, besize, mask_src=a_op if a_op.mask else None, mask_esize=mesize)
    s = d.vset(a_op, W, False, mesize)
    wm = WMASK[W]
    if b_op.is_vec and c_op.is_vec and not a_op.mask:
        i, j, o = b_op.idx, c_op.idx, a_op.idx

        def bind(m, nxt):
            V = m.V

            def run():
                V[o] = fn(V[o] & wm, V[i] & wm, V[j] & wm, wm)
                return nxt
            return run
        return bind

    def bind(m, nxt):
        a, b, c, put = ga(m), gb(m), gc(m), s(m)

        def run():
            put(fn(a(), b(), c(), wm))
            return nxt
        return run
    return bind


HANDLERS["vpternlogd"] = _h_ternlog
HANDLERS["vpternlogq"] = _h_ternlog


def _h_vpermi2q(d: Decoder):
    """VPERMI2Q idx/dest, table1, table2 (Intel order; AT&T reversed): qword i of dest =
    qword (idx_i mod 2n) of table1 || table2 (n qwords a register; table2 the high half)."""
    ops = d.ops
    d.need(len(ops) == 3 and not ops[2].mask)
    c_op, b_op, a_op = ops[0], ops[1], ops[2]
    W = _vwidth(d, a_op)
    n = W // 8
    ga, gb, gc = d.vget(a_op, W), d.vget(b_op, W), d.vget(c_op, W)
    s = d.vset(a_op, W, False, 64)

    def fn(idx, t1, t2):
        both = t1 | (t2 << (64 * n))
        out = 0
        for i in range(n):
            sel = ((idx >> (64 * i)) & 0xFFFFFFFFFFFFFFFF) % (2 * n)
            out |= ((both >> (64 * sel)) & 0xFFFFFFFFFFFFFFFF) << (64 * i)
        return out

    def bind(m, nxt):
        a, b, c, put = ga(m), gb(m), gc(m), s(m)

        def run():
            put(fn(a(), b(), c()))
            return nxt
        return run
    return bind


HANDLERS["vpermi2q"] = _h_vpermi2q


def _valignq(W, k):
    """VALIGNQ dest, src1, src2, imm: src1 || src2 (src1 high) shifted right by imm qwords."""
    bits = 8 * W

    def f(a, b):
        return (((a << bits) | b) >> (64 * (k % (W // 8)))) & ((1 << bits) - 1)
    return f


HANDLERS["valignq"] = _vec_binary(_valignq, imm=True)


def _shift_by_qwords(left: bool):
    """VPSLLVQ / VPSRLVQ: each qword shifted by that qword of the counts (64 or more: 0)."""
    def of_width(W):
        def f(a, counts):
            out = 0
            for i in range(W // 8):
                x = (a >> (64 * i)) & 0xFFFFFFFFFFFFFFFF
                c = (counts >> (64 * i)) & 0xFFFFFFFFFFFFFFFF
                y = 0 if c >= 64 else ((x << c) if left else (x >> c)) & 0xFFFFFFFFFFFFFFFF
                out |= y << (64 * i)
            return out
        return f
    return of_width


HANDLERS["vpsllvq"] = _vec_binary(_shift_by_qwords(True))
HANDLERS["vpsrlvq"] = _vec_binary(_shift_by_qwords(False))


# --- 128-bit lane moves: broadcast, insert, extract, shuffle --------------------------------
def _h_broadcast(lane_bytes):
    def h(d: Decoder):
        d.need(len(d.ops) == 2)
        src, dst = d.ops
        W = _vwidth(d, dst)
        d.need(W > lane_bytes or lane_bytes < 16, "broadcast into a wider register")
        element = d.ins.mnemonic.startswith("vpbroadcast")
        mesize, _ = ESIZE.get(d.ins.mnemonic, (0, 0))
        if src.kind == "reg":
            d.need(element, "this broadcast takes a memory source only")
            if src.is_gpr:
                d.need(not d.ins.mnemonic in VEX_ONLY and src.bits == max(32, 8 * lane_bytes),
                       "GPR source of the wrong size")
                g = d.gget(src, src.bits)
            else:
                g = d.vget(src, 16)
        else:
            g = d.vget(src, lane_bytes)
        rep = replicate_const(8 * lane_bytes, 8 * W)
        lm = (1 << (8 * lane_bytes)) - 1
        s = d.vset(dst, W, False, mesize)

        def bind(m, nxt):
            get, put = g(m), s(m)

            def run():
                put((get() & lm) * rep)
                return nxt
            return run
        return bind
    return h


HANDLERS["vbroadcasti128"] = _h_broadcast(16)
HANDLERS["vbroadcasti32x4"] = _h_broadcast(16)
HANDLERS["vbroadcasti64x2"] = _h_broadcast(16)
HANDLERS["vbroadcasti32x8"] = _h_broadcast(32)
HANDLERS["vbroadcasti64x4"] = _h_broadcast(32)
HANDLERS["vpbroadcastb"] = _h_broadcast(1)
HANDLERS["vpbroadcastw"] = _h_broadcast(2)
HANDLERS["vpbroadcastd"] = _h_broadcast(4)
HANDLERS["vpbroadcastq"] = _h_broadcast(8)


def _h_insert(part_bytes):
    def h(d: Decoder):
        ops = d.ops
        d.need(len(ops) == 4 and ops[0].kind == "imm")
        k, src2, src1, dst = ops[0].value, ops[1], ops[2], ops[3]
        W = _vwidth(d, dst)
        d.need(W > part_bytes)
        nparts = W // part_bytes
        pos = (k % nparts) * 8 * part_bytes
        pm = ((1 << (8 * part_bytes)) - 1) << pos
        wm = WMASK[W]
        return _vec_binary(lambda W_: (lambda a, b: (a & (wm ^ pm)) | (b << pos)),
                           src2_bytes=lambda W_: part_bytes)(_with_ops(d, [src2, src1, dst]))
    return h


def _with_ops(d: Decoder, ops) -> Decoder:
    d2 = Decoder(d.prog, d.ins)
    d2.ops = ops
    return d2


def _h_extract(part_bytes):
    def h(d: Decoder):
        ops = d.ops
        d.need(len(ops) == 3 and ops[0].kind == "imm")
        k, src, dst = ops[0].value, ops[1], ops[2]
        W = _vwidth(d, src)
        d.need(W > part_bytes)
        pos = (k % (W // part_bytes)) * 8 * part_bytes
        pm = (1 << (8 * part_bytes)) - 1
        mesize, _ = ESIZE.get(d.ins.mnemonic, (0, 0))
        g = d.vget(src, W)
        if dst.kind == "reg":
            d.need(dst.bits // 8 == part_bytes, lambda: f"{dst.text} is not {part_bytes} bytes")
        s = d.vset(dst, part_bytes, False, mesize)

        def bind(m, nxt):
            get, put = g(m), s(m)

            def run():
                put((get() >> pos) & pm)
                return nxt
            return run
        return bind
    return h


HANDLERS["vinserti128"] = _h_insert(16)
HANDLERS["vinserti32x4"] = _h_insert(16)
HANDLERS["vinserti64x2"] = _h_insert(16)
HANDLERS["vinserti32x8"] = _h_insert(32)
HANDLERS["vinserti64x4"] = _h_insert(32)
HANDLERS["vextracti128"] = _h_extract(16)
HANDLERS["vextracti32x4"] = _h_extract(16)
HANDLERS["vextracti64x2"] = _h_extract(16)
HANDLERS["vextracti32x8"] = _h_extract(32)
HANDLERS["vextracti64x4"] = _h_extract(32)


def _shufi(W, k):
    n = W // 16
    bits = 1 if n == 2 else 2

    def f(a, b):
        out = 0
        for j in range(n):
            sel = (k >> (bits * j)) & ((1 << bits) - 1)
            src = a if j < n // 2 else b
            out |= ((src >> (128 * sel)) & M128) << (128 * j)
        return out
    return f


HANDLERS["vshufi32x4"] = _vec_binary(_shufi, imm=True)
HANDLERS["vshufi64x2"] = _vec_binary(_shufi, imm=True)


def _perm2i128(W, k):
    def f(a, b):
        out = 0
        for j in range(2):
            c = (k >> (4 * j)) & 0xF
            if c & 8:
                continue
            src = a if c & 2 == 0 else b
            out |= ((src >> (128 * (c & 1))) & M128) << (128 * j)
        return out
    return f


HANDLERS["vperm2i128"] = _vec_binary(_perm2i128, imm=True)


# --- pinsr/pextr, ptest ----------------------------------------------------------------------
def _h_pextr(esize):
    def h(d: Decoder):
        ops = d.ops
        d.need(len(ops) == 3 and ops[0].kind == "imm" and ops[1].is_vec and ops[1].bits == 128)
        sel = ops[0].value % (128 // esize)
        g = d.vget(ops[1], 16)
        dst = ops[2]
        if dst.kind == "reg":
            d.need(dst.is_gpr and dst.bits in (esize, 32, 64) and dst.bits >= esize)
            s = d.gset(dst, dst.bits)
        else:
            s = d.gset(dst, esize)
        sh, em = esize * sel, (1 << esize) - 1

        def bind(m, nxt):
            get, put = g(m), s(m)

            def run():
                put((get() >> sh) & em)
                return nxt
            return run
        return bind
    return h


def _h_pinsr(esize):
    def h(d: Decoder):
        ops = d.ops
        legacy = not d.ins.mnemonic.startswith("v")
        d.need(len(ops) == (3 if legacy else 4) and ops[0].kind == "imm")
        sel = ops[0].value % (128 // esize)
        src = ops[1]
        src1, dst = (ops[2], ops[2]) if legacy else (ops[2], ops[3])
        d.need(dst.is_vec and dst.bits == 128)
        if src.kind == "reg":
            d.need(src.is_gpr and src.bits == max(esize, 32))
            g = d.gget(src, src.bits)
        else:
            g = d.gget(src, esize)
        g1 = d.vget(src1, 16)
        s = d.vset(dst, 16, legacy)
        sh, em = esize * sel, (1 << esize) - 1

        def bind(m, nxt):
            get, get1, put = g(m), g1(m), s(m)

            def run():
                put((get1() & (M128 ^ (em << sh))) | ((get() & em) << sh))
                return nxt
            return run
        return bind
    return h


for _e, _c in ((8, "b"), (16, "w"), (32, "d"), (64, "q")):
    for _pre in ("p", "vp"):
        HANDLERS[f"{_pre}extr{_c}"] = _h_pextr(_e)
        HANDLERS[f"{_pre}insr{_c}"] = _h_pinsr(_e)


def _h_movmskpd(d: Decoder):
    """MOVMSKPD r32, xmm: bit 0 the sign bit of qword 0, bit 1 that of qword 1; the rest 0."""
    ops = d.ops
    d.need(len(ops) == 2 and ops[0].is_vec and ops[0].bits == 128 and ops[1].kind == "reg"
           and ops[1].is_gpr and ops[1].bits in (32, 64))
    g = d.vget(ops[0], 16)
    s = d.gset(ops[1], ops[1].bits)

    def bind(m, nxt):
        get, put = g(m), s(m)

        def run():
            v = get()
            put((v >> 63 & 1) | (v >> 127 & 1) << 1)
            return nxt
        return run
    return bind


HANDLERS["movmskpd"] = HANDLERS["vmovmskpd"] = _h_movmskpd


def _h_ptest(d: Decoder):
    d.need(len(d.ops) == 2)
    src2, src1 = d.ops
    W = _vwidth(d, src1)
    legacy = not d.ins.mnemonic.startswith("v")
    g1 = d.vget(src1, W)
    g2 = d.vget(src2, W, 16 if legacy else 0)
    wm = WMASK[W]

    def bind(m, nxt):
        a, b, FL = g1(m), g2(m), m.FL

        def run():
            x, y = a(), b()
            zf = (x & y) == 0
            cf = 1 if (~x & y & wm) == 0 else 0
            FL[0] = flags_x(0 if zf else 1, 64, cf, 0, 0)
            return nxt
        return run
    return bind


HANDLERS["ptest"] = _h_ptest
HANDLERS["vptest"] = _h_ptest


def _h_vzero(upper: bool):
    def h(d: Decoder):
        d.need(not d.ops)

        def bind(m, nxt):
            V = m.V

            def run():
                for i in range(16):
                    V[i] = V[i] & M128 if upper else 0
                return nxt
            return run
        return bind
    return h


HANDLERS["vzeroupper"] = _h_vzero(True)
HANDLERS["vzeroall"] = _h_vzero(False)


# --- opmask registers ----------------------------------------------------------------------
_KBITS = {"b": 8, "w": 16, "d": 32, "q": 64}


def _h_kmov(bits):
    def h(d: Decoder):
        d.need(len(d.ops) == 2)
        src, dst = d.ops
        km = BITS_MASK[bits]
        if dst.is_k:
            o = dst.idx
            if src.is_k:
                i = src.idx
                g = lambda m: (lambda K=m.K: K[i])  # noqa: E731
            elif src.kind == "reg":
                d.need(src.is_gpr and src.bits == (64 if bits == 64 else 32),
                       f"kmov from {src.text}")
                g = d.gget(src, src.bits)
            else:
                g = d.gget(src, bits)

            def bind(m, nxt):
                get, K = g(m), m.K

                def run():
                    K[o] = get() & km
                    return nxt
                return run
            return bind
        d.need(src.is_k, "kmov needs a mask register")
        i = src.idx
        if dst.kind == "reg":
            d.need(dst.is_gpr and dst.bits == (64 if bits == 64 else 32),
                   lambda: f"kmov to {dst.text}")
            s = d.gset(dst, dst.bits)
        else:
            s = d.gset(dst, bits)

        def bind(m, nxt):
            put, K = s(m), m.K

            def run():
                put(K[i] & km)
                return nxt
            return run
        return bind
    return h


def _h_klogic(name, bits):
    def h(d: Decoder):
        ops = d.ops
        km = BITS_MASK[bits]
        d.need(all(op.is_k for op in ops[-2:]))
        o = ops[-1].idx
        if name in ("kshiftl", "kshiftr"):
            d.need(len(ops) == 3 and ops[0].kind == "imm")
            c, i = ops[0].value & 0xFF, ops[1].idx

            def bind(m, nxt):
                K = m.K
                if c >= bits:
                    def run():
                        K[o] = 0
                        return nxt
                elif name == "kshiftl":
                    def run():
                        K[o] = (K[i] << c) & km
                        return nxt
                else:
                    def run():
                        K[o] = (K[i] & km) >> c
                        return nxt
                return run
            return bind
        if name == "knot":
            d.need(len(ops) == 2)
            i = ops[0].idx

            def bind(m, nxt):
                K = m.K

                def run():
                    K[o] = ~K[i] & km
                    return nxt
                return run
            return bind
        if name in ("kortest", "ktest"):
            d.need(len(ops) == 2)
            j, i = ops[0].idx, ops[1].idx      # Intel: kortest k1(i), k2(j)

            def bind(m, nxt):
                K, FL = m.K, m.FL

                def run():
                    a, b = K[i] & km, K[j] & km
                    if name == "kortest":
                        v = a | b
                        zf, cf = v == 0, v == km
                    else:
                        zf, cf = (a & b) == 0, (~a & b & km) == 0
                    FL[0] = flags_x(0 if zf else 1, 64, 1 if cf else 0, 0, 0)
                    return nxt
                return run
            return bind
        d.need(len(ops) == 3 and ops[0].is_k)
        j, i = ops[0].idx, ops[1].idx          # AT&T: src2, src1, dest
        fn = {"kand": lambda a, b: a & b, "kor": lambda a, b: a | b,
              "kxor": lambda a, b: a ^ b, "kandn": lambda a, b: ~a & b,
              "kxnor": lambda a, b: ~(a ^ b), "kadd": lambda a, b: a + b}[name]

        def bind(m, nxt):
            K = m.K

            def run():
                K[o] = fn(K[i] & km, K[j] & km) & km
                return nxt
            return run
        return bind
    return h


for _c, _b in _KBITS.items():
    HANDLERS["kmov" + _c] = _h_kmov(_b)
    for _name in ("kshiftl", "kshiftr", "knot", "kortest", "ktest", "kand", "kor", "kxor",
                  "kandn", "kxnor", "kadd"):
        HANDLERS[_name + _c] = _h_klogic(_name, _b)
