"""The ISA table, the kernel builder and the compile passes (verify, regalloc, frame, features)."""
from __future__ import annotations

import ctypes
import re
import subprocess

import pytest

from aesgen.dsl.builder import KernelBuilder
from aesgen.dsl.ir import Function, Instruction
from aesgen.dsl.operands import Imm, Label, Mem, Reg, gp, kmask
from aesgen.printer.flavours import ELF_X86_64_NOTES as ELF_NOTES
from aesgen.isa.table import Form, load_table, parse_table
from aesgen.kernels.ctr_kernel import build_kernel
from aesgen.kernels.spec import KernelSpec
from aesgen.passes import COMPILE, compile_function
from aesgen.passes.abi import SYSV_X86_64
from aesgen.passes.features import FEATURE_ORDER, required_features
from aesgen.passes.liveness import compute_liveness, uses_and_defs
from aesgen.passes.regalloc import AllocationError, allocate_registers
from aesgen.passes.verify import StructureError, verify_structure
from aesgen.printer.gas_x86_64 import print_function
from aesgen.targets import load_features

TABLE = load_table("x86_64")
KINDS = {"r8", "r32", "r64", "xmm", "ymm", "zmm", "m", "m8", "m32", "m64", "m128", "m256",
         "m512", "imm8", "imm32", "imm64", "label", "k", "km", "kz"}
ABI = SYSV_X86_64


def builder(symbol: str = "t_fn") -> KernelBuilder:
    b = KernelBuilder(TABLE, symbol)
    b.asm.endbr64()
    return b


def mem(base: Reg, disp: int = 0, width: int = 64) -> Mem:
    return Mem(width, base=base, disp=disp)


def instruction_lines(text: str) -> list[str]:
    """Mnemonic lines of printed assembly: tab-indented, not directives or comments."""
    out = []
    for line in text.splitlines():
        if line.startswith("\t") and not line.startswith(("\t.", "\t#")):
            out.append(line.split("#", 1)[0].strip())
    return out


# --- the ISA table ------------------------------------------------------------------------
def test_isa_table_parses():
    assert len(TABLE.forms) > 50
    names = [f.name for f in TABLE.forms]
    assert len(names) == len(set(names)), "a DSL name appears twice"
    for form in TABLE.forms:
        assert form.mnemonic
        for spec in form.operands:
            assert spec.access in ("r", "w", "rw"), form.name
            assert set(spec.kinds) <= KINDS, f"{form.name}: unknown kinds {spec.kinds}"
    for name in ("aesenc", "aesenclast", "vaesenc", "pxor", "movdqu", "endbr64", "ret"):
        assert TABLE.forms_named(name), name


def test_every_form_feature_is_known():
    header_bits = set(load_features("x86_64"))
    assert set(FEATURE_ORDER) <= header_bits, "FEATURE_ORDER names a feature aesgen.h lacks"
    for form in TABLE.forms:
        unknown = set(form.features) - set(FEATURE_ORDER)
        assert not unknown, f"{form.name} needs {unknown}, unknown to passes/features.py"


@pytest.mark.parametrize("line, what", [
    ("pxor pxor xmm:rw xmm:r [SSE2", "close with ']'"),
    ("pxor [SSE2]", "name and a mnemonic"),
    ("pxor pxor xmm:x xmm:r [SSE2]", "bad access"),
])
def test_isa_table_rejects_malformed_lines(line, what):
    with pytest.raises(ValueError, match=re.escape(what)) as e:
        parse_table("toy", "# comment\n\n" + line + "\n")
    assert "toy.isa:3" in str(e.value)


def test_required_features_rejects_a_feature_missing_from_feature_order():
    b = builder()
    form = Form("fancy", "fancy", (), ("AVX10",))
    b.function.body.append(Instruction(form, ()))
    b.asm.ret()
    with pytest.raises(ValueError, match="AVX10"):
        required_features(b.build(), ABI)


# --- the builder ----------------------------------------------------------------------------
def test_builder_rejects_wrong_operand_kind():
    b = builder()
    x, g = b.xmm(), b.gp()
    with pytest.raises(TypeError, match=r"\baesenc\b.*r64"):
        b.asm.aesenc(x, g)
    with pytest.raises(TypeError, match=r"\bpxor\b"):
        b.asm.pxor(x, Imm(1))
    with pytest.raises(TypeError, match=r"\bmov\b"):
        b.asm.mov(x, g)
    with pytest.raises(TypeError, match=r"\bmovdqu\b"):          # store form needs m128 first
        b.asm.movdqu(x, x)
    with pytest.raises(AttributeError, match="aesdec"):
        b.asm.aesdec(x, x)


# --- register allocation ----------------------------------------------------------------
def looped_function(symbol: str = "t_loop", values: int = 12) -> Function:
    """f(n, p): ``values`` GPRs mixed n times in a loop; returns a checksum (n >= 1)."""
    b = builder(symbol)
    b.function.returns_value = True
    a = b.asm
    n, p = b.gp(), b.gp()
    a.mov(n, gp("rdi"))
    a.mov(p, gp("rsi"))
    vs = [b.gp() for _ in range(values)]
    for i, v in enumerate(vs):
        a.mov(v, mem(p, 8 * i))
    top = b.label("top")
    b.bind(top)
    for i, v in enumerate(vs):
        nxt = vs[(i + 1) % values]
        if i % 3 == 0:
            a.add(v, nxt)
        elif i % 3 == 1:
            a.xor(v, nxt)
        else:
            a.sub(v, n)
    a.dec(n)
    a.jne(top)
    acc = b.gp()
    a.xor(acc, acc)
    for i, v in enumerate(vs):
        if i % 2:
            a.shl(acc, Imm(1))
        a.xor(acc, v)
    a.mov(gp("rax"), acc)
    a.ret()
    return b.build()


def looped_reference(n: int, init: list[int]) -> int:
    m = (1 << 64) - 1
    vs = list(init)
    k = len(vs)
    while True:
        for i in range(k):
            if i % 3 == 0:
                vs[i] = (vs[i] + vs[(i + 1) % k]) & m
            elif i % 3 == 1:
                vs[i] ^= vs[(i + 1) % k]
            else:
                vs[i] = (vs[i] - n) & m
        n -= 1
        if n == 0:
            break
    acc = 0
    for i, v in enumerate(vs):
        if i % 2:
            acc = (acc << 1) & m
        acc ^= v
    return acc


def test_allocation_is_deterministic():
    a = print_function(compile_function(looped_function(), ABI))
    b = print_function(compile_function(looped_function(), ABI))
    assert a == b
    spec = KernelSpec("aesni", "r2", encoding="avx")
    first, second = ({e: print_function(compile_function(f, ABI))
                      for e, f in build_kernel(spec).functions.items()} for _ in range(2))
    assert first == second


def _registers(operands):
    for op in operands:
        if isinstance(op, Reg):
            yield op
        elif isinstance(op, Mem):
            yield from op.registers()


def check_no_live_conflict(virtual, allocated) -> int:
    """At every definition, the defined register's physical register differs from that of
    every other register live after it (a copy's source may share it: same value).
    Returns the number of (definition, live register) pairs checked."""
    colour: dict[tuple, int] = {}
    assert len(virtual.body) == len(allocated.body)
    for v_item, p_item in zip(virtual.body, allocated.body):
        if isinstance(v_item, Instruction):
            for v, p in zip(_registers(v_item.operands), _registers(p_item.operands)):
                assert not p.is_virtual
                if v.is_virtual:
                    assert colour.setdefault(v.key, p.id) == p.id, f"{v!r} got two registers"

    def phys(key):
        return colour[key] if key[1] >= 1000 else key[1]

    checked = 0
    for block in compute_liveness(virtual, ABI):
        live = set(block.live_out)
        for ins in reversed(block.instructions):
            uses, defs = uses_and_defs(ins, virtual, ABI)
            copy_src = None
            if ins.name in ("mov", "movdqa", "vmovdqa") and all(
                    isinstance(o, Reg) for o in ins.operands):
                copy_src = ins.operands[1].key
            for d in defs:
                for other in live - {d}:
                    if other[0] != d[0] or other == copy_src:
                        continue
                    checked += 1
                    assert phys(d) != phys(other), (
                        f"{virtual.symbol}: {ins.name} defines v{d[1]} in register "
                        f"{phys(d)} while v{other[1]} is live there")
            live = (live - defs) | uses
    return checked


def test_allocation_never_shares_a_register_between_live_values():
    fn = looped_function()
    assert check_no_live_conflict(fn, allocate_registers(verify_structure(fn, ABI), ABI)) > 50


@pytest.mark.parametrize("encoding", ["sse", "avx"])
@pytest.mark.parametrize("face", ["none", "r1", "r2"])
def test_kernel_allocation_never_shares_a_register_between_live_values(face, encoding):
    spec = KernelSpec("aesni", face, encoding=encoding)
    for entry, fn in build_kernel(spec).functions.items():
        assert check_no_live_conflict(fn, allocate_registers(fn, ABI)) > 0, entry


def test_allocated_loop_computes_what_it_should(tmp_path):
    """The looped function, assembled and called: 13 values force callee-saved registers."""
    fn = compile_function(looped_function("t_loop13", values=13), ABI)
    assert fn.saved_registers, "13 live values should need a callee-saved register"
    src = tmp_path / "loop.S"
    src.write_text(print_function(fn) + ELF_NOTES)
    so = tmp_path / "libloop.so"
    subprocess.run(["gcc", "-shared", "-fPIC", "-o", str(so), str(src)], check=True)
    lib = ctypes.CDLL(str(so))
    lib.t_loop13.restype = ctypes.c_uint64
    lib.t_loop13.argtypes = [ctypes.c_uint64, ctypes.c_void_p]
    init = [(0x9E3779B97F4A7C15 * (i + 1)) & ((1 << 64) - 1) for i in range(13)]
    arr = (ctypes.c_uint64 * 13)(*init)
    for n in (1, 2, 7, 1000):
        assert lib.t_loop13(n, ctypes.addressof(arr)) == looped_reference(n, init), n


def test_too_many_live_vectors_fail_with_allocation_error():
    b = builder("t_xmm")
    p = b.gp()
    b.asm.mov(p, gp("rdi"))
    xs = [b.xmm() for _ in range(17)]
    for i, x in enumerate(xs):
        b.asm.movdqu(x, Mem(128, base=p, disp=16 * i))
    for x in xs[1:]:
        b.asm.pxor(xs[0], x)
    b.asm.movdqu(Mem(128, base=p), xs[0])
    b.asm.ret()
    with pytest.raises(AllocationError) as e:
        compile_function(b.build(), ABI)
    msg = str(e.value)
    assert "t_xmm" in msg and "vec" in msg
    assert re.search(rf"\bv{xs[-1].id}\b", msg), msg


def test_sixteen_live_vectors_fit():
    b = builder("t_xmm16")
    p = b.gp()
    b.asm.mov(p, gp("rdi"))
    xs = [b.xmm() for _ in range(16)]
    for i, x in enumerate(xs):
        b.asm.movdqu(x, Mem(128, base=p, disp=16 * i))
    for x in xs[1:]:
        b.asm.pxor(xs[0], x)
    b.asm.movdqu(Mem(128, base=p), xs[0])
    b.asm.ret()
    text = print_function(compile_function(b.build(), ABI))
    assert "%xmm15" in text


def test_callee_saved_registers_are_pushed_and_popped():
    b = builder("t_many")
    b.function.returns_value = True
    a = b.asm
    p = b.gp()
    a.mov(p, gp("rdi"))
    vs = [b.gp() for _ in range(14)]
    for i, v in enumerate(vs):
        a.mov(v, mem(p, 8 * i))
    early = b.label("early")
    a.cmp(vs[0], Imm(0))
    a.je(early)
    for v in vs[1:]:
        a.add(vs[0], v)
    a.mov(gp("rax"), vs[0])
    a.ret()
    b.bind(early)
    for v in vs[1:]:
        a.xor(vs[0], v)
    a.mov(gp("rax"), vs[0])
    a.ret()
    fn = compile_function(b.build(), ABI)
    text = print_function(fn)
    lines = instruction_lines(text)
    assert lines[0] == "endbr64"
    pushed = [ln.split()[1] for ln in lines if ln.startswith("pushq")]
    callee_saved = {"%rbx", "%rbp", "%r12", "%r13", "%r14", "%r15"}
    assert len(pushed) >= 4 and set(pushed) <= callee_saved
    assert lines[1:1 + len(pushed)] == [f"pushq\t{r}" for r in pushed]
    used = set(re.findall(r"%(?:rbx|rbp|r1[2-5])\b", text))
    assert used == set(pushed), "a used callee-saved register is not saved (or the reverse)"
    rets = [i for i, ln in enumerate(lines) if ln == "ret"]
    assert len(rets) == 2
    for i in rets:
        assert lines[i - len(pushed):i] == [f"popq\t{r}" for r in reversed(pushed)]
    assert sum(ln.startswith("popq") for ln in lines) == 2 * len(pushed)


def test_function_without_callee_saved_registers_has_no_push():
    b = builder("t_small")
    b.function.returns_value = True
    v = b.gp()
    b.asm.mov(v, gp("rdi"))
    b.asm.add(v, Imm(1))
    b.asm.mov(gp("rax"), v)
    b.asm.ret()
    lines = instruction_lines(print_function(compile_function(b.build(), ABI)))
    assert lines[0] == "endbr64"
    assert not any(ln.startswith(("pushq", "popq")) for ln in lines)


def test_entry_must_start_with_endbr64():
    b = KernelBuilder(TABLE, "t_noendbr")
    b.asm.ret()
    with pytest.raises(ValueError, match="endbr64"):
        compile_function(b.build(), ABI)


@pytest.mark.parametrize("zero", ["xor64", "xor32", "pxor", "vpxor"])
def test_xor_with_itself_is_a_definition(zero):
    b = builder("t_zero")
    b.function.returns_value = True
    if zero.startswith("xor"):
        v = b.gp()
        w = v if zero == "xor64" else v.w32
        b.asm.xor(w, w)
        b.asm.mov(gp("rax"), v)
    else:
        x = b.xmm()
        if zero == "pxor":
            b.asm.pxor(x, x)
        else:
            b.asm.vpxor(x, x, x)
        b.asm.movq(x, gp("rdi"))
    b.asm.ret()
    compile_function(b.build(), ABI)             # no "read before any write"


def test_read_before_write_is_an_error():
    b = builder("t_undef")
    b.function.returns_value = True
    v = b.gp()
    b.asm.add(v, Imm(1))
    b.asm.mov(gp("rax"), v)
    b.asm.ret()
    with pytest.raises(AllocationError, match="read before any write"):
        compile_function(b.build(), ABI)


# --- structure ----------------------------------------------------------------------------
def test_verify_structure_rejects_undefined_jump_target():
    b = builder("t_jump")
    b.asm.jmp(Label(".Lt_jump_nowhere"))
    with pytest.raises(StructureError, match=r"undefined label \.Lt_jump_nowhere"):
        compile_function(b.build(), ABI)


def test_verify_structure_rejects_label_defined_twice_and_fall_off():
    b = builder("t_twice")
    lab = b.label("x")
    b.bind(lab)
    b.bind(lab)
    b.asm.ret()
    with pytest.raises(StructureError, match="defined twice"):
        verify_structure(b.build(), ABI)
    b = builder("t_fall")
    v = b.gp()
    b.asm.mov(v, gp("rdi"))
    with pytest.raises(StructureError, match="must end in ret or jmp"):
        verify_structure(b.build(), ABI)


def test_pipeline_order():
    assert COMPILE[0] is verify_structure and COMPILE[-1] is required_features


def test_printer_refuses_virtual_registers():
    b = builder()
    v = b.gp()
    b.asm.mov(v, gp("rdi"))
    b.asm.ret()
    with pytest.raises(ValueError, match="virtual register"):
        print_function(b.build())


def test_write_masks_print_on_the_destination_and_assemble(tmp_path):
    """A masked tail: k = first n bytes, a zeroing masked load, a merging masked store. The
    mask is read (liveness sees k1), printed after the destination in AT&T order, and the
    real assembler accepts the result."""
    from aesgen.kernels.vector_ops import VectorOps
    from aesgen.passes.abi import sysv_with_vectors

    b = builder("t_masked")
    v = VectorOps(b, "evex")
    b.asm.endbr64()
    src, dst, n = b.gp(), b.gp(), b.gp()
    for r, name in ((src, "rdi"), (dst, "rsi"), (n, "rdx")):
        b.asm.mov(r, gp(name))
    k = kmask(1)
    v.first_bytes_mask(k, n)
    x = b.vec(512)
    v.load_masked(x, Mem(512, base=src), k)
    v.keep_masked(x, x, k)
    v.store_masked(Mem(512, base=dst), x, k)
    b.asm.ret()
    fn = compile_function(b.build(), sysv_with_vectors(32))
    loads = [i for i in fn.instructions() if i.name == "vmovdqu8"]
    assert all(k in i.registers_read() for i in loads)
    text = print_function(fn)
    assert re.search(r"vmovdqu8\t\(%rdi\), %zmm\d+\{%k1\}\{z\}", text), text
    assert re.search(r"vmovdqu8\t%zmm\d+, \(%rsi\)\{%k1\}\n", text), text
    assert "bzhiq\t%rdx," in text and "kmovq\t" in text
    src_file = tmp_path / "masked.S"
    src_file.write_text(text)
    subprocess.run(["gcc", "-c", str(src_file), "-o", str(tmp_path / "masked.o")], check=True)
    with pytest.raises(ValueError, match="k0|k1..k7"):
        kmask(0)
    with pytest.raises(ValueError, match="AVX-512"):
        VectorOps(builder("t_sse"), "avx").first_bytes_mask(k, n)


# --- calls between functions of one file ---------------------------------------------------
def _callee(symbol: str) -> Function:
    """callee(p): *p += 1; clobbers every scratch register it may (rax..r11, xmm0..15)."""
    b = builder(symbol)
    b.function.exported = False
    a = b.asm
    for name in ("rax", "rcx", "rdx", "rsi", "r8", "r9", "r10", "r11"):
        a.mov(gp(name), Imm(-1))
    x = b.xmm()
    b.asm.pxor(x, x)
    a.add(mem(gp("rdi")), Imm(1))
    a.mov(gp("rdi"), Imm(-1))
    a.ret()
    b.function.scrub_vectors = True
    return b.build()


def _caller(symbol: str, callee: str) -> Function:
    """caller(p, q): calls callee(p) and returns the sum of p and q read before the call."""
    b = builder(symbol)
    b.function.returns_value = True
    a = b.asm
    p, q = b.gp(), b.gp()
    a.mov(p, gp("rdi"))
    a.mov(q, gp("rsi"))
    a.mov(gp("rdi"), p)
    a.call(Label(callee))
    a.add(p, q)
    a.mov(gp("rax"), p)
    a.ret()
    return b.build()


def test_values_live_across_a_call_stay_in_callee_saved_registers(tmp_path):
    caller = compile_function(_caller("t_caller", "t_callee"), ABI)
    callee = compile_function(_callee("t_callee"), ABI)
    text = print_function(caller)
    assert "call\tt_callee" in text
    assert {r.name() for r in caller.saved_registers} <= {"rbx", "rbp", "r12", "r13", "r14",
                                                           "r15"}
    assert len(caller.saved_registers) == 2, "p and q live across the call"
    callee_text = print_function(callee)
    assert ".globl\tt_callee" not in callee_text and ".type\tt_callee" in callee_text
    src = tmp_path / "call.S"
    src.write_text(text + callee_text + ELF_NOTES)
    so = tmp_path / "libcall.so"
    subprocess.run(["gcc", "-shared", "-fPIC", "-o", str(so), str(src)], check=True)
    lib = ctypes.CDLL(str(so))
    lib.t_caller.restype = ctypes.c_uint64
    lib.t_caller.argtypes = [ctypes.c_void_p, ctypes.c_uint64]
    cell = ctypes.c_uint64(41)
    addr = ctypes.addressof(cell)
    assert lib.t_caller(addr, 5) == addr + 5
    assert cell.value == 42
    with pytest.raises(AttributeError):
        lib.t_callee                          # local to the file: not exported


def test_a_vector_live_across_a_call_is_an_allocation_error():
    b = builder("t_vcall")
    x = b.xmm()
    b.asm.movdqu(x, mem(gp("rdi"), width=128))
    b.asm.call(Label("t_callee"))
    b.asm.movdqu(mem(gp("rsi"), width=128), x)
    b.asm.ret()
    with pytest.raises(AllocationError, match="t_vcall"):
        compile_function(b.build(), ABI)


def test_a_call_is_not_a_jump_inside_the_function():
    b = builder("t_notjump")
    b.asm.call(Label("elsewhere"))
    b.asm.ret()
    verify_structure(b.build(), ABI)          # no "undefined label"
    (call,) = [i for i in b.build().instructions() if i.name == "call"]
    assert call.is_call and not call.is_jump
