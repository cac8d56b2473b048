"""The handlers of the general-purpose instructions: control flow, moves (movd/movq to and
from xmm too), the ALU with lazy flags, shifts, cmov/setcc, imul, BMI. HANDLERS: by mnemonic."""
from __future__ import annotations

import operator

from .decoder import Decoder
from .errors import ExecutionError, ParseError
from .layout import CODE_BASE, CODE_STRIDE, SENTINEL
from .operands import RAX, RCX, RSP
from .semantics import (BITS_MASK, CONDITIONS, F_ADD, F_DEC, F_INC, F_LOGIC, F_SAR, F_SHL,
                        F_SHR, F_SUB, F_X, M32, M64, M128, M512, flag_cf, flag_of, flags_x)

HANDLERS: dict = {}
_SUFFIX_BITS = {"b": 8, "w": 16, "l": 32, "q": 64}


def _op_bits(d: Decoder, suffix_bits: int | None) -> int:
    if suffix_bits:
        return suffix_bits
    regs = [op.bits for op in d.ops if op.kind == "reg" and op.cls == "g"]
    if not regs:
        raise d.fail("operand size not given by a suffix or a register")
    return regs[-1]


def _h_simple():
    def h(d):
        return lambda m, nxt: (lambda: nxt)
    return h


HANDLERS["endbr64"] = _h_simple()
for _n in ("nop", "nopw", "nopl"):
    HANDLERS[_n] = _h_simple()


def _h_jmp(d: Decoder):
    d.need(len(d.ops) == 1 and d.ops[0].kind == "label", "direct jump to a label")
    name = d.ops[0].sym
    if name not in d.prog.code_labels:
        raise ParseError(f"{d.ins.location()}: jump to undefined label {name!r}")
    t = d.prog.code_labels[name]
    return lambda m, nxt: (lambda: t)


HANDLERS["jmp"] = _h_jmp
HANDLERS["jmpq"] = _h_jmp


def _h_jcc(cc):
    cond = CONDITIONS[cc]

    def h(d: Decoder):
        d.need(len(d.ops) == 1 and d.ops[0].kind == "label", "direct jump to a label")
        name = d.ops[0].sym
        if name not in d.prog.code_labels:
            raise ParseError(f"{d.ins.location()}: jump to undefined label {name!r}")
        t = d.prog.code_labels[name]
        if cc in ("e", "z"):
            def bind(m, nxt):
                FL = m.FL
                return lambda: t if FL[0][1] == 0 else nxt
            return bind
        if cc in ("ne", "nz"):
            def bind(m, nxt):
                FL = m.FL
                return lambda: t if FL[0][1] != 0 else nxt
            return bind

        def bind(m, nxt):
            FL = m.FL
            return lambda: t if cond(FL[0]) else nxt
        return bind
    return h


for _cc in CONDITIONS:
    HANDLERS["j" + _cc] = _h_jcc(_cc)


def _h_call(d: Decoder):
    d.need(len(d.ops) == 1 and d.ops[0].kind == "label", "direct call of a label")
    name = d.ops[0].sym
    if name not in d.prog.code_labels:
        raise d.fail(f"call of {name!r}, which is not in the program")
    t = d.prog.code_labels[name]

    def bind(m, nxt):
        R, st = m.R, m.store
        ret_addr = CODE_BASE + CODE_STRIDE * nxt

        def run():
            sp = (R[RSP] - 8) & M64
            st(sp, 8, ret_addr)
            R[RSP] = sp
            return t
        return run
    return bind


HANDLERS["call"] = _h_call
HANDLERS["callq"] = _h_call


def _h_ret(d: Decoder):
    d.need(not d.ops, "ret with an immediate")
    n = len(d.prog.insns)

    def bind(m, nxt):
        R, ld = m.R, m.load

        def run():
            sp = R[RSP]
            a = ld(sp, 8)
            R[RSP] = (sp + 8) & M64
            if a == SENTINEL:
                return -1
            i, rem = divmod(a - CODE_BASE, CODE_STRIDE)
            if rem or not 0 <= i < n:
                raise ExecutionError(f"ret to {a:#x}, not a return address (stack "
                                     f"corrupted?)")
            return i
        return run
    return bind


HANDLERS["ret"] = _h_ret
HANDLERS["retq"] = _h_ret


def _h_push(d: Decoder):
    d.need(len(d.ops) == 1)
    g = d.gget(d.ops[0], 64)

    def bind(m, nxt):
        R, st, get = m.R, m.store, g(m)

        def run():
            v = get()
            sp = (R[RSP] - 8) & M64
            st(sp, 8, v)
            R[RSP] = sp
            return nxt
        return run
    return bind


def _h_pop(d: Decoder):
    d.need(len(d.ops) == 1 and d.ops[0].kind in ("reg", "mem"))
    s = d.gset(d.ops[0], 64)

    def bind(m, nxt):
        R, ld, put = m.R, m.load, s(m)

        def run():
            sp = R[RSP]
            v = ld(sp, 8)
            R[RSP] = (sp + 8) & M64
            put(v)
            return nxt
        return run
    return bind


for _n in ("push", "pushq"):
    HANDLERS[_n] = _h_push
for _n in ("pop", "popq"):
    HANDLERS[_n] = _h_pop


def _h_mov(bits):
    def h(d: Decoder):
        d.need(len(d.ops) == 2)
        if any(op.is_vec for op in d.ops):
            return _h_vmovdq_scalar(d, legacy=True)
        b = _op_bits(d, bits)
        src, dst = d.ops
        d.need(dst.kind in ("reg", "mem") and not (src.kind == "mem" and dst.kind == "mem"))
        if src.kind == "imm" and b == 64 and dst.kind == "mem":
            d.need(-(1 << 31) <= src.value < (1 << 31), "immediate does not fit in 32 bits")
        g, s = d.gget(src, b), d.gset(dst, b)
        if src.kind == "reg" and dst.kind == "reg" and b == 64:
            i, j = src.idx, dst.idx

            def bind(m, nxt):
                R = m.R

                def run():
                    R[j] = R[i]
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


for _sfx, _b in (("", None), ("b", 8), ("w", 16), ("l", 32), ("q", 64)):
    HANDLERS["mov" + _sfx] = _h_mov(_b)
HANDLERS["movabsq"] = _h_mov(64)
HANDLERS["movabs"] = _h_mov(64)


def _h_movx(src_bits, dst_bits, signed):
    def h(d: Decoder):
        d.need(len(d.ops) == 2 and d.ops[1].kind == "reg")
        g, s = d.gget(d.ops[0], src_bits), d.gset(d.ops[1], dst_bits)
        sign, full, dm = 1 << (src_bits - 1), 1 << src_bits, BITS_MASK[dst_bits]

        def bind(m, nxt):
            get, put = g(m), s(m)
            if signed:
                def run():
                    v = get()
                    put(((v - full) if v & sign else v) & dm)
                    return nxt
            else:
                def run():
                    put(get())
                    return nxt
            return run
        return bind
    return h


for _sb, _sc in ((8, "b"), (16, "w"), (32, "l")):
    for _db, _dc in ((16, "w"), (32, "l"), (64, "q")):
        if _db > _sb:
            if _sb != 32:
                HANDLERS[f"movz{_sc}{_dc}"] = _h_movx(_sb, _db, False)
            HANDLERS[f"movs{_sc}{_dc}"] = _h_movx(_sb, _db, True)
HANDLERS["movslq"] = _h_movx(32, 64, True)
HANDLERS["movsxd"] = _h_movx(32, 64, True)


def _h_cltq(d: Decoder):

    def bind(m, nxt):
        R = m.R

        def run():
            v = R[RAX] & M32
            R[RAX] = (v - (1 << 32)) & M64 if v >> 31 else v
            return nxt
        return run
    return bind


HANDLERS["cltq"] = _h_cltq
HANDLERS["cdqe"] = _h_cltq


def _h_lea(bits):
    def h(d: Decoder):
        d.need(len(d.ops) == 2 and d.ops[0].kind == "mem" and d.ops[1].kind == "reg")
        b = _op_bits(d, bits)
        a, s = d.addr(d.ops[0]), d.gset(d.ops[1], b)
        mask = BITS_MASK[b]

        def bind(m, nxt):
            ga, put = a(m), s(m)

            def run():
                put(ga() & mask)
                return nxt
            return run
        return bind
    return h


HANDLERS["lea"] = _h_lea(None)
HANDLERS["leaq"] = _h_lea(64)
HANDLERS["leal"] = _h_lea(32)

# --- two-operand ALU ------------------------------------------------------------------------
_ALU = {"add": (F_ADD, operator.add), "sub": (F_SUB, operator.sub),
        "and": (F_LOGIC, operator.and_), "or": (F_LOGIC, operator.or_),
        "xor": (F_LOGIC, operator.xor)}


def _h_alu(name, bits, write=True):
    kind, fn = _ALU.get(name, (None, None))

    def h(d: Decoder):
        d.need(len(d.ops) == 2)
        b = _op_bits(d, bits)
        src, dst = d.ops
        d.need(dst.kind in ("reg", "mem") and not (src.kind == "mem" and dst.kind == "mem"))
        mask = BITS_MASK[b]
        g1, g2 = d.gget(dst, b), d.gget(src, b)
        s = d.gset(dst, b) if write else None
        k = F_SUB if name == "cmp" else (F_LOGIC if name == "test" else kind)
        op = operator.sub if name == "cmp" else (operator.and_ if name == "test" else fn)
        if name in ("adc", "sbb"):
            k = F_ADD if name == "adc" else F_SUB

            def bind(m, nxt):
                ga, gb, put, FL = g1(m), g2(m), s(m), m.FL

                def run():
                    a, c = ga(), gb()
                    cin = flag_cf(FL[0])
                    r = ((a + c + cin) if k == F_ADD else (a - c - cin)) & mask
                    put(r)
                    FL[0] = (k, r, a, c, b, cin)
                    return nxt
                return run
            return bind
        # register destination, 64-bit: the common case, inline
        if dst.kind == "reg" and b == 64 and src.kind in ("reg", "imm"):
            i = dst.idx
            if src.kind == "imm":
                c = src.value & mask

                def bind(m, nxt):
                    R, FL = m.R, m.FL

                    def run():
                        a = R[i]
                        r = op(a, c) & mask
                        if write:
                            R[i] = r
                        FL[0] = (k, r, a, c, 64, 0)
                        return nxt
                    return run
                return bind
            j = src.idx

            def bind(m, nxt):
                R, FL = m.R, m.FL

                def run():
                    a, c = R[i], R[j]
                    r = op(a, c) & mask
                    if write:
                        R[i] = r
                    FL[0] = (k, r, a, c, 64, 0)
                    return nxt
                return run
            return bind

        def bind(m, nxt):
            ga, gb, FL = g1(m), g2(m), m.FL
            put = s(m) if write else None

            def run():
                a, c = ga(), gb()
                r = op(a, c) & mask
                if put is not None:
                    put(r)
                FL[0] = (k, r, a, c, b, 0)
                return nxt
            return run
        return bind
    return h


for _name in ("add", "sub", "and", "or", "xor", "adc", "sbb"):
    HANDLERS[_name] = _h_alu(_name, None)
    for _sfx, _b in _SUFFIX_BITS.items():
        HANDLERS[_name + _sfx] = _h_alu(_name, _b)
for _name in ("cmp", "test"):
    HANDLERS[_name] = _h_alu(_name, None, write=False)
    for _sfx, _b in _SUFFIX_BITS.items():
        HANDLERS[_name + _sfx] = _h_alu(_name, _b, write=False)


def _h_unary(name, bits):
    def h(d: Decoder):
        d.need(len(d.ops) == 1 and d.ops[0].kind in ("reg", "mem"))
        b = _op_bits(d, bits)
        mask = BITS_MASK[b]
        g, s = d.gget(d.ops[0], b), d.gset(d.ops[0], b)

        def bind(m, nxt):
            get, put, FL = g(m), s(m), m.FL
            if name == "inc":
                def run():
                    a = get()
                    r = (a + 1) & mask
                    put(r)
                    FL[0] = (F_INC, r, a, 1, b, flag_cf(FL[0]))
                    return nxt
            elif name == "dec":
                def run():
                    a = get()
                    r = (a - 1) & mask
                    put(r)
                    FL[0] = (F_DEC, r, a, 1, b, flag_cf(FL[0]))
                    return nxt
            elif name == "neg":
                def run():
                    a = get()
                    r = (-a) & mask
                    put(r)
                    FL[0] = (F_SUB, r, 0, a, b, 0)
                    return nxt
            elif name == "not":
                def run():
                    put(get() ^ mask)
                    return nxt
            elif name == "bswap":
                n = b // 8

                def run():
                    put(int.from_bytes(get().to_bytes(n, "little"), "big"))
                    return nxt
            else:
                raise AssertionError(name)
            return run
        return bind
    return h


for _name in ("inc", "dec", "neg", "not"):
    HANDLERS[_name] = _h_unary(_name, None)
    for _sfx, _b in _SUFFIX_BITS.items():
        HANDLERS[_name + _sfx] = _h_unary(_name, _b)
HANDLERS["bswap"] = _h_unary("bswap", None)
HANDLERS["bswapl"] = _h_unary("bswap", 32)
HANDLERS["bswapq"] = _h_unary("bswap", 64)


def _h_shift(name, bits):
    def h(d: Decoder):
        ops = d.ops
        d.need(len(ops) in (1, 2))
        dst = ops[-1]
        d.need(dst.kind in ("reg", "mem"))
        b = _op_bits(d, bits) if bits else dst.bits
        if len(ops) == 2:
            cnt = ops[0]
            d.need(cnt.kind == "imm" or (cnt.kind == "reg" and cnt.cls == "g"
                                         and cnt.idx == RCX and cnt.bits == 8),
                   "shift count must be an immediate or %cl")
        mask = BITS_MASK[b]
        cmask = 63 if b == 64 else 31
        g, s = d.gget(dst, b), d.gset(dst, b)
        if len(ops) == 1:
            fixed = 1
        elif ops[0].kind == "imm":
            fixed = ops[0].value & cmask
        else:
            fixed = None
        sign = 1 << (b - 1)

        def bind(m, nxt):
            get, put, FL, R = g(m), s(m), m.FL, m.R

            def run():
                c = fixed if fixed is not None else R[RCX] & cmask
                if c == 0:
                    if b == 32:
                        put(get())          # a 32-bit destination is still zero-extended
                    return nxt
                a = get()
                if name == "shl":
                    r = (a << c) & mask
                    FL[0] = (F_SHL, r, a, c, b, 0)
                elif name == "shr":
                    r = a >> c
                    FL[0] = (F_SHR, r, a, c, b, 0)
                elif name == "sar":
                    r = (((a - (sign << 1)) if a & sign else a) >> c) & mask
                    FL[0] = (F_SAR, r, a, c, b, 0)
                else:
                    cc = c % b
                    if name == "rol":
                        r = ((a << cc) | (a >> (b - cc))) & mask
                        cf = r & 1
                        of = ((r >> (b - 1)) & 1) ^ cf
                    else:
                        r = ((a >> cc) | (a << (b - cc))) & mask
                        cf = (r >> (b - 1)) & 1
                        of = cf ^ ((r >> (b - 2)) & 1)
                    p = FL[0]
                    FL[0] = (F_X, p[1], cf, of if c == 1 else flag_of(p), p[4], cf)
                put(r)
                return nxt
            return run
        return bind
    return h


for _name in ("shl", "shr", "sar", "rol", "ror", "sal"):
    base = "shl" if _name == "sal" else _name
    HANDLERS[_name] = _h_shift(base, None)
    for _sfx, _b in _SUFFIX_BITS.items():
        HANDLERS[_name + _sfx] = _h_shift(base, _b)


def _h_shrd(d: Decoder):
    """shrdq $n, src, dst: dst = dst >> n with src's low n bits shifted in from the top
    (n 1..63, an immediate: what the kernels use). Flags as SHR's of dst (CF the last bit
    out); OF is defined only for n = 1, as the sign change."""
    ops = d.ops
    d.need(len(ops) == 3 and ops[0].kind == "imm", "shrd $imm, src, dst expected")
    src, dst = ops[1], ops[2]
    d.need(src.kind == "reg" and src.cls == "g" and src.bits == 64 and dst.bits == 64,
           "64-bit registers expected")
    c = ops[0].value & 63
    g, gs, s = d.gget(dst, 64), d.gget(src, 64), d.gset(dst, 64)

    def bind(m, nxt):
        get, gsrc, put, FL = g(m), gs(m), s(m), m.FL

        def run():
            if c == 0:
                return nxt
            a = get()
            r = ((a >> c) | (gsrc() << (64 - c))) & M64
            FL[0] = (F_SHR, r, a, c, 64, 0)
            put(r)
            return nxt
        return run
    return bind


HANDLERS["shrd"] = _h_shrd
HANDLERS["shrdq"] = _h_shrd


def _h_cmov(cc, bits):
    cond = CONDITIONS[cc]

    def h(d: Decoder):
        d.need(len(d.ops) == 2 and d.ops[1].kind == "reg")
        b = _op_bits(d, bits)
        d.need(b in (16, 32, 64), "cmov of 8 bits")
        g, s, gd = d.gget(d.ops[0], b), d.gset(d.ops[1], b), d.gget(d.ops[1], b)

        def bind(m, nxt):
            get, put, getd, FL = g(m), s(m), gd(m), m.FL

            def run():
                v = get()           # the source is read (and may fault) either way
                put(v if cond(FL[0]) else getd())    # 32-bit: upper half zeroed either way
                return nxt
            return run
        return bind
    return h


def _h_setcc(cc):
    cond = CONDITIONS[cc]

    def h(d: Decoder):
        d.need(len(d.ops) == 1)
        s = d.gset(d.ops[0], 8)

        def bind(m, nxt):
            put, FL = s(m), m.FL

            def run():
                put(1 if cond(FL[0]) else 0)
                return nxt
            return run
        return bind
    return h


for _cc in CONDITIONS:
    HANDLERS["cmov" + _cc] = _h_cmov(_cc, None)
    for _sfx in ("w", "l", "q"):
        HANDLERS["cmov" + _cc + _sfx] = _h_cmov(_cc, _SUFFIX_BITS[_sfx])
    HANDLERS["set" + _cc] = _h_setcc(_cc)
    HANDLERS["set" + _cc + "b"] = _h_setcc(_cc)


def _h_imul(bits):
    def h(d: Decoder):
        ops = d.ops
        d.need(len(ops) in (2, 3) and ops[-1].kind == "reg", "imul: 2- or 3-operand form")
        b = _op_bits(d, bits)
        mask, sign = BITS_MASK[b], 1 << (b - 1)
        if len(ops) == 2:
            g1, g2 = d.gget(ops[1], b), d.gget(ops[0], b)
        else:
            d.need(ops[0].kind == "imm")
            g1, g2 = d.gget(ops[1], b), d.gget(ops[0], b)
        s = d.gset(ops[-1], b)

        def sx(v):
            return v - (sign << 1) if v & sign else v

        def bind(m, nxt):
            ga, gb, put, FL = g1(m), g2(m), s(m), m.FL

            def run():
                p = sx(ga()) * sx(gb())
                r = p & mask
                ovf = 0 if sx(r) == p else 1
                put(r)
                FL[0] = flags_x(r, b, ovf, ovf)
                return nxt
            return run
        return bind
    return h


HANDLERS["imul"] = _h_imul(None)
for _sfx in ("w", "l", "q"):
    HANDLERS["imul" + _sfx] = _h_imul(_SUFFIX_BITS[_sfx])


def _h_xchg(bits):
    def h(d: Decoder):
        d.need(len(d.ops) == 2)
        b = _op_bits(d, bits)
        a0, a1 = d.ops
        g0, g1, s0, s1 = d.gget(a0, b), d.gget(a1, b), d.gset(a0, b), d.gset(a1, b)

        def bind(m, nxt):
            x0, x1, p0, p1 = g0(m), g1(m), s0(m), s1(m)

            def run():
                v0, v1 = x0(), x1()
                p0(v1)
                p1(v0)
                return nxt
            return run
        return bind
    return h


HANDLERS["xchg"] = _h_xchg(None)
for _sfx, _b in _SUFFIX_BITS.items():
    HANDLERS["xchg" + _sfx] = _h_xchg(_b)


def _h_bt(bits):
    def h(d: Decoder):
        d.need(len(d.ops) == 2 and d.ops[1].kind == "reg" and d.ops[0].kind == "imm",
               "bt $imm, %reg only")
        b = _op_bits(d, bits)
        g = d.gget(d.ops[1], b)
        bit = d.ops[0].value % b

        def bind(m, nxt):
            get, FL = g(m), m.FL

            def run():
                cf = (get() >> bit) & 1
                p = FL[0]
                FL[0] = (F_X, p[1], cf, flag_of(p), p[4], cf)
                return nxt
            return run
        return bind
    return h


HANDLERS["bt"] = _h_bt(None)
for _sfx in ("w", "l", "q"):
    HANDLERS["bt" + _sfx] = _h_bt(_SUFFIX_BITS[_sfx])


def _h_movbe(bits):
    def h(d: Decoder):
        d.need(len(d.ops) == 2 and {d.ops[0].kind, d.ops[1].kind} == {"reg", "mem"},
               "movbe moves between a register and memory")
        b = _op_bits(d, bits)
        g, s = d.gget(d.ops[0], b), d.gset(d.ops[1], b)
        n = b // 8

        def bind(m, nxt):
            get, put = g(m), s(m)

            def run():
                put(int.from_bytes(get().to_bytes(n, "little"), "big"))
                return nxt
            return run
        return bind
    return h


HANDLERS["movbe"] = _h_movbe(None)
for _sfx in ("w", "l", "q"):
    HANDLERS["movbe" + _sfx] = _h_movbe(_SUFFIX_BITS[_sfx])


def _h_bmi(name, bits):
    """bzhi, shlx, shrx, sarx (count register first in AT&T), rorx (imm), andn."""
    def h(d: Decoder):
        ops = d.ops
        d.need(len(ops) == 3 and ops[2].kind == "reg" and ops[1].kind in ("reg", "mem"))
        b = _op_bits(d, bits)
        d.need(b in (32, 64), "BMI forms are 32 or 64 bits")
        mask, sign = BITS_MASK[b], 1 << (b - 1)
        if name == "rorx":
            d.need(ops[0].kind == "imm")
        else:
            d.need(ops[0].kind == "reg" if name != "andn" else ops[0].kind in ("reg", "mem"))
        g0 = d.gget(ops[0], b) if ops[0].kind != "imm" else None
        imm = ops[0].value if ops[0].kind == "imm" else 0
        g1, s = d.gget(ops[1], b), d.gset(ops[2], b)
        cm = b - 1

        def bind(m, nxt):
            c0 = g0(m) if g0 else None
            src, put, FL = g1(m), s(m), m.FL
            if name == "bzhi":
                def run():
                    n = c0() & 0xFF
                    v = src()
                    if n < b:
                        r, cf = v & ((1 << n) - 1), 0
                    else:
                        r, cf = v, 1
                    put(r)
                    FL[0] = flags_x(r, b, cf, 0)
                    return nxt
            elif name == "shlx":
                def run():
                    put((src() << (c0() & cm)) & mask)
                    return nxt
            elif name == "shrx":
                def run():
                    put(src() >> (c0() & cm))
                    return nxt
            elif name == "sarx":
                def run():
                    v = src()
                    put((((v - (sign << 1)) if v & sign else v) >> (c0() & cm)) & mask)
                    return nxt
            elif name == "rorx":
                c = imm % b

                def run():
                    v = src()
                    put(((v >> c) | (v << (b - c))) & mask)
                    return nxt
            elif name == "andn":
                # AT&T andn src2(r/m), src1, dest: dest = ~src1 & src2
                def run():
                    r = (c0() & ~src()) & mask
                    put(r)
                    FL[0] = (F_LOGIC, r, 0, 0, b, 0)
                    return nxt
            else:
                raise AssertionError(name)
            return run
        return bind
    return h


for _name in ("bzhi", "shlx", "shrx", "sarx", "rorx", "andn"):
    HANDLERS[_name] = _h_bmi(_name, None)
    for _sfx in ("l", "q"):
        HANDLERS[_name + _sfx] = _h_bmi(_name, _SUFFIX_BITS[_sfx])


# --- movd/movq: between GPRs, memory and xmm ----------------------------------------------
def _h_vmovdq_scalar(d: Decoder, legacy: bool):
    """movd/movq/vmovd/vmovq between GPRs, memory and xmm."""
    mn = d.ins.mnemonic
    n = 8 if mn.endswith("q") else 4
    src, dst = d.ops
    if dst.is_vec:
        d.need(dst.bits == 128, "movd/movq write an xmm register")
        if src.is_vec:
            d.need(n == 8, "movd between xmm registers")
            g = d.vget(src, 16)
            lowmask = M64
        elif src.kind == "mem":
            g = d.gget(src, 8 * n)
            lowmask = BITS_MASK[8 * n]
        else:
            d.need(src.is_gpr and src.bits == 8 * n,
                   lambda: f"{src.text}: {8 * n}-bit GPR expected")
            g = d.gget(src, 8 * n)
            lowmask = BITS_MASK[8 * n]
        i = dst.idx
        keep = (M512 ^ M128) if legacy else 0

        def bind(m, nxt):
            get, V = g(m), m.V

            def run():
                V[i] = (V[i] & keep) | (get() & lowmask)
                return nxt
            return run
        return bind
    d.need(src.is_vec and src.bits == 128, "movd/movq read an xmm register")
    g = d.vget(src, 16)
    s = d.gset(dst, 8 * n)
    lowmask = BITS_MASK[8 * n]

    def bind(m, nxt):
        get, put = g(m), s(m)

        def run():
            put(get() & lowmask)
            return nxt
        return run
    return bind


def _h_movd_q(legacy):
    def h(d: Decoder):
        d.need(len(d.ops) == 2)
        if d.ins.mnemonic in ("movq",) and not any(op.is_vec for op in d.ops):
            return _h_mov(64)(d)
        return _h_vmovdq_scalar(d, legacy)
    return h


HANDLERS["movd"] = _h_movd_q(True)
HANDLERS["movq"] = _h_movd_q(True)
HANDLERS["vmovd"] = _h_movd_q(False)
HANDLERS["vmovq"] = _h_movd_q(False)
