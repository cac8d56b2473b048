"""Constant time by data flow (issue 17): which values of a compiled x86-64 function are
secret, and whether a secret reaches what a timing channel sees.

Sources and marks. At entry, each argument has a role (modes/contracts.py: the C contracts'
parameters): the context and the buffers are pointers into regions, lengths are public
numbers. A load is secret unless its address is known to hold public data: a constant
(RIP-relative), the stack (arguments past the sixth, saved registers), a public buffer
(IV, nonce, AAD, tag given to open) or a field of the context its layout declares public
(``Field(..., public=True)``: lengths, counters, FACE bookkeeping, the byte-sliced hash's
block count). Keys, round
keys, hash keys, masks, plaintext, states, tables: everything else is secret. Marks flow
forward through every instruction (its table form says which operands it reads and
writes) and join over the control-flow graph (secret if secret on any path in).

Sinks. A finding is a secret value in the base or index of a memory operand, in the flags
a conditional jump reads (the lowering puts nothing between a flag setter and its jump),
or stored into a public field of the context. A ``Comment`` starting ``declassify:``
makes the results of the instruction after it public: the verdict of a constant-time tag
compare (the return value), and GCM's counter, public unless COUNTER_SECRET says it came
from GHASH (then the data path branches on that flag first and never on the counter).
"""
from __future__ import annotations

import heapq
from dataclasses import dataclass, replace

from ..dsl.ir import Comment, Function, Instruction, LabelDef
from ..dsl.operands import Masked, Mem, Reg, Sym, VList
from ..modes import mode
from .liveness import build_cfg

PUBLIC_REGIONS = ("const", "stack", "public")

@dataclass(frozen=True)
class IsaRules:
    """What the analysis must know of an instruction set beyond its table's read/write
    marks (by an instruction's base name: "cmp" for cmp.r and cmp.w): which instructions branch on the flags or on a register, which set or read the
    flags, which take a time that depends on their operands, which registers a call keeps,
    and the stack pointer."""

    name: str
    flag_branches: frozenset       # conditional jumps on the flags
    register_branches: frozenset   # branches on a register's value (cbz, tbnz)
    flag_readers: frozenset        # non-branch instructions that read the flags
    sets_flags: object             # name -> whether it writes the flags
    # timing depends on the operands: division (by name), and shifts or rotates (these
    # names) when their count is a register rather than an immediate
    division: frozenset
    shifts: frozenset
    callee_saved: frozenset
    stack: tuple                   # the stack pointer's key
    calls: frozenset
    # register-to-register moves that carry a pointer; add/sub (immediate or register)
    moves: frozenset
    add_sub: frozenset
    address_of: frozenset          # lea, adrp/add :lo12: (an address from a label or base)


def _x86_sets_flags(name: str) -> bool:
    return (name not in _X86_NO_FLAGS and not name.startswith(("v", "p", "mov", "k"))) \
        or name in ("kortestw", "kortestq", "ptest", "vptest")


# x86-64: the GP arithmetic the lowering uses writes the flags; cmov, adc, sbb, setcc read
# them; division and shifts by %cl take operand-dependent time (neither is in the table:
# tests/test_secrets_pass.py checks that it stays so or that the rules below cover them)
_X86_NO_FLAGS = {"mov", "mov.st", "mov.d", "mov.dst", "mov.bst", "movabs", "movzx.b32", "lea",
                 "push", "pop", "bswap", "jmp", "ret", "call", "endbr64"}
X86_64_RULES = IsaRules(
    name="x86_64",
    flag_branches=frozenset({"je", "jne", "jb", "jae", "ja", "jbe", "jl", "jge", "jg", "jle",
                             "js", "jns", "jz", "jnz"}),
    register_branches=frozenset(),
    flag_readers=frozenset({"cmova", "cmove", "cmovne", "adc", "adc.m", "sbb"}),
    sets_flags=_x86_sets_flags,
    division=frozenset({"div", "idiv"}),
    shifts=frozenset({"shl", "shr", "sar", "rol", "ror", "shld", "shrd"}),
    # rbx, rsp, rbp, r12-r15
    callee_saved=frozenset({("gp", 3), ("gp", 4), ("gp", 5), ("gp", 12), ("gp", 13),
                            ("gp", 14), ("gp", 15)}),
    stack=("gp", 4),
    calls=frozenset({"call"}),
    moves=frozenset({"mov"}),
    add_sub=frozenset({"add", "sub"}),
    address_of=frozenset({"lea"}),
)

# AArch64: b.cond reads NZCV, cbz/cbnz/tbz/tbnz a register; the flag setters are the
# s-suffixed arithmetic, cmp and tst; adc reads the carry. UDIV/SDIV and the register-count
# shifts (LSLV and kin) are listed should they ever enter the table (they are not in it).
_A64_FLAG_SETTERS = frozenset({"adds", "subs", "cmp", "tst"})
AARCH64_RULES = IsaRules(
    name="aarch64",
    flag_branches=frozenset({"b_eq", "b_ne", "b_lo", "b_hs", "b_hi", "b_ls"}),
    register_branches=frozenset({"cbz", "cbnz", "tbz", "tbnz"}),
    flag_readers=frozenset({"adc"}),
    sets_flags=_A64_FLAG_SETTERS.__contains__,
    division=frozenset({"udiv", "sdiv"}),
    shifts=frozenset({"lsl", "lsr", "asr", "ror", "lslv", "lsrv", "asrv", "rorv"}),
    # x19-x29 (x29 the frame pointer) and sp
    callee_saved=frozenset({("x", n) for n in range(19, 30)} | {("x", 31)}),
    stack=("x", 31),
    calls=frozenset({"bl"}),
    moves=frozenset({"mov"}),
    add_sub=frozenset({"add", "sub"}),
    address_of=frozenset({"adrp"}),       # add x, x, :lo12:sym is an add of a Sym
)

RULES = {"x86_64": X86_64_RULES, "aarch64": AARCH64_RULES}


@dataclass(frozen=True)
class Value:
    secret: bool = False
    region: str | None = None       # a pointer into: "ctx", "secret", "public", "data", ...
    offset: int | None = None       # known offset from the region's start (ctx fields)


PUBLIC = Value()
SECRET = Value(True)


def _granules(offset: int, width: int) -> range:
    """The 8-byte granules (their offsets) a width-bit access at offset touches: stores are
    tracked at that grain (a 16-byte store, two 8-byte loads of it)."""
    return range(offset // 8 * 8, offset + max(width // 8, 1), 8)


def _join(a: Value | None, b: Value | None) -> Value:
    if a is None:
        return b
    if b is None:
        return a
    if a == b:
        return a
    region = a.region if a.region == b.region else None
    offset = a.offset if region is not None and a.offset == b.offset else None
    return Value(a.secret or b.secret, region, offset)


@dataclass(frozen=True)
class _Plan:
    """What the analysis needs of one instruction, worked out once (the fixed point visits
    each instruction several times)."""

    name: str
    read_keys: tuple          # registers read (masks included)
    mems: tuple               # (Mem, read?) for every memory operand
    stores: tuple             # memory operands written
    dst_keys: tuple           # registers written
    reads_flags: bool         # cmov, adc, sbb, setcc
    branch: bool              # a conditional jump on the flags
    register_branch: bool     # a branch on a register (its first operand)
    variable_time: bool
    sets_flags: bool
    zero_idiom: bool          # xor/sub/eor of a register with itself
    kind: str | None          # "mov" (register to register), "lea", "addsub", "call"
    writebacks: tuple         # (Mem) whose base register the access advances (AArch64)


# the plans by what they depend on (the rules, the form, its operands): unrolled code
# repeats the same instruction on the same registers many times, so this stays small
# (operands, not instructions: no kernel is kept alive by it)
_SHARED: dict[tuple, _Plan] = {}


def _plan(ins: Instruction, rules: IsaRules) -> _Plan:
    key = (rules.name, ins.form.name, ins.operands)
    plan = _SHARED.get(key)
    if plan is None:
        plan = _SHARED[key] = _new_plan(ins, rules)
    return plan


def _new_plan(ins: Instruction, rules: IsaRules) -> _Plan:
    name, ops = ins.name, ins.operands
    read_keys, mems, stores, dst = [], [], [], []
    address_of = name in rules.address_of
    for (r, w), op in zip(ins.form.access, ops):
        t = type(op)
        if t is Mem:
            mems.append((op, bool(r) and not address_of))
            if w:
                stores.append(op)
        elif t is Reg:
            if r:
                read_keys.append(op.key)
            if w:
                dst.append(op.key)
        elif t is VList and r:
            read_keys.extend(x.key for x in op.regs)
        elif t is Masked:
            read_keys.append(op.reg.key)
    kind = None
    if name in rules.moves and len(ops) > 1 and type(ops[1]) is Reg:
        kind = "mov"
    elif address_of:
        kind = "lea"
    elif name in rules.add_sub and type(ops[0]) is Reg:
        kind = "addsub"
    elif name in rules.calls:
        kind = "call"
    plan = _Plan(
        name=name, read_keys=tuple(read_keys), mems=tuple(mems), stores=tuple(stores),
        dst_keys=tuple(dst),
        reads_flags=name in rules.flag_readers or (rules is X86_64_RULES
                                                  and name.startswith("set")),
        branch=name in rules.flag_branches,
        register_branch=name in rules.register_branches,
        variable_time=name in rules.division or (
            name in rules.shifts and len(ops) >= 2 and type(ops[-1]) is Reg),
        sets_flags=rules.sets_flags(name),
        zero_idiom=(len(ops) >= 2 and all(type(o) is Reg for o in ops)
                    and len({o.key for o in ops}) == 1
                    and name.lstrip("v").startswith(("pxor", "xor", "sub", "eor"))),
        kind=kind,
        writebacks=tuple(op for op, _ in mems if op.writeback))
    return plan


@dataclass(frozen=True)
class Finding:
    function: str
    index: int              # position of the instruction in the function's body
    text: str               # the instruction
    why: str
    chain: tuple = ()       # the instructions the secret came through, its source first

    def __str__(self) -> str:
        via = f" (via {' -> '.join(self.chain)})" if self.chain else ""
        return f"{self.function}: {self.text}: {self.why}{via}"


def _operand_text(op) -> str:
    if type(op) is Mem:
        if op.rip_label is not None:
            return f"[{op.rip_label}]"
        parts = [str(op.base)] if op.base is not None else []
        if op.index is not None:
            parts.append(f"{op.index}*{op.scale}" if op.scale != 1 else str(op.index))
        if op.disp:
            parts.append(str(op.disp))
        return f"[{' + '.join(parts)}]" + ("!" if op.writeback == "pre" else "")
    if type(op) is Masked:
        return str(op.reg)
    if type(op) is VList:
        return "{" + ", ".join(str(r) for r in op.regs) + "}"
    if type(op) is Reg:
        return str(op)
    for attr in ("name", "value"):
        v = getattr(op, attr, None)
        if isinstance(v, (str, int)):
            return str(v)
    return str(op)


def instruction_text(ins: Instruction) -> str:
    return f"{ins.name} {', '.join(_operand_text(o) for o in ins.operands)}".strip()


class Analysis:
    """One function's marks (see the module text)."""

    def __init__(self, function: Function, roles: tuple[str, ...], fields: dict,
                 arguments: tuple[Reg, ...], rules: IsaRules = X86_64_RULES,
                 public: frozenset = frozenset()) -> None:
        self.function, self.roles, self.fields = function, roles, fields
        self.rules, self.public = rules, public
        self._plans: dict[int, _Plan] = {}      # by id() of this function's instructions
        self.arguments = arguments
        self.findings: list[Finding] = []

    def plan(self, ins: Instruction) -> _Plan:
        p = self._plans.get(id(ins))
        if p is None:
            p = self._plans[id(ins)] = _plan(ins, self.rules)
        return p

    # --- the context's fields -----------------------------------------------------------
    def _field(self, offset: int | None) -> str | None:
        if offset is None:
            return None
        for name, (start, size) in self.fields.items():
            if start <= offset < start + size:
                return name
        return None

    def _default(self, offset: int) -> Value:
        """What a context byte holds before this function stores to it: its field's kind."""
        return PUBLIC if self._field(offset) in self.public else SECRET

    def _ctx_offset(self, state: dict, mem: Mem) -> int | None:
        """The context offset mem addresses, when known (no index)."""
        if mem.base is None or mem.index is not None:
            return None
        base = state.get(mem.base.key, PUBLIC)
        if base.region != "ctx" or base.offset is None:
            return None
        return base.offset + mem.disp

    def _load(self, state: dict, mem: Mem) -> bool:
        """Whether what mem addresses is secret: a context offset this function stored to
        holds what was stored (a spill slot keeps a counter public)."""
        if mem.rip_label is not None or (mem.base is None and mem.index is None):
            return False
        base = state.get(mem.base.key, PUBLIC) if mem.base is not None else PUBLIC
        if base.region in PUBLIC_REGIONS:
            return False
        if base.region == "ctx":
            off = self._ctx_offset(state, mem)
            if off is not None:
                granules = _granules(off, mem.width)
                if all(("mem", g) in state for g in granules):
                    return any(state[("mem", g)].secret for g in granules)
                if any(("mem", g) in state for g in granules):
                    return any(self._at(state, ("mem", g)).secret for g in granules)
            # with a (public) index, the field the displacement points into: an index keeps
            # to its table, or the kernel is wrong, not leaky
            off = None if base.offset is None else base.offset + mem.disp
            return self._field(off) not in self.public
        return True

    # --- one instruction ----------------------------------------------------------------
    def step(self, state: dict, ins: Instruction, index: int, public_next: bool,
             report: bool) -> None:
        p = self.plan(ins)
        secret_in = False
        for key in p.read_keys:
            v = state.get(key)
            if v is not None and v.secret:
                secret_in = True
                break
        mem_loaded = False
        for op, r in p.mems:
            if report:
                # a post-index step ([xn], xm) is not part of this access's address
                for reg in (op.base, None if op.writeback == "post" else op.index):
                    if reg is not None and state.get(reg.key, PUBLIC).secret:
                        self._find(index, ins, f"a secret value ({reg}) in an address",
                                   reg.key)
            if r and not mem_loaded:
                mem_loaded = self._load(state, op)
        secret_in = secret_in or mem_loaded
        if p.reads_flags:
            secret_in = secret_in or state.get("flags", PUBLIC).secret
        if p.branch and report and state.get("flags", PUBLIC).secret:
            self._find(index, ins, "a branch on flags from a secret value", "flags")
        if p.register_branch and report and state.get(p.read_keys[0], PUBLIC).secret:
            self._find(index, ins, f"a branch on a secret value ({ins.operands[0]})",
                       p.read_keys[0])
        if p.variable_time and report and secret_in:
            key = next((k for k in p.read_keys if state.get(k, PUBLIC).secret), None)
            self._find(index, ins, "a secret operand of an instruction of variable time "
                                   "(its time depends on its operands)", key)
        stores = p.stores
        if stores and report:
            for m in stores:
                base = state.get(m.base.key, PUBLIC) if m.base is not None else PUBLIC
                if base.region == "ctx" and base.offset is not None and m.index is None:
                    field = self._field(base.offset + m.disp)
                    if field in self.public and secret_in and not public_next:
                        self._find(index, ins, f"a secret value stored into the public "
                                               f"field {field}")
        value = PUBLIC if (not secret_in or public_next or p.zero_idiom) else SECRET
        kind = p.kind
        if kind is not None:
            value = self._pointer_value(state, ins, p, value, secret_in, mem_loaded)
            if public_next:
                value = Value(False, value.region, value.offset)
        for d in p.dst_keys:
            state[d] = value
        for m in p.writebacks:                 # [xn], #k or [xn, #k]!: xn moves on
            base = state.get(m.base.key, PUBLIC)
            step_secret = m.index is not None and state.get(m.index.key, PUBLIC).secret
            off = base.offset + m.disp if base.offset is not None and m.index is None else None
            state[m.base.key] = Value(base.secret or step_secret, base.region, off)
        for m in stores:                       # what known context bytes now hold
            off = self._ctx_offset(state, m)
            if off is not None:
                stored = SECRET if secret_in and not public_next else PUBLIC
                for g in _granules(off, m.width):
                    state[("mem", g)] = stored
        if kind == "call":
            # the callee's registers: unknown; the context as its fields say (the callee is
            # checked on its own, secret stores into public fields among it)
            for key in list(state):
                if isinstance(key, tuple) and key[0] == "mem":
                    del state[key]
                elif key != "flags" and key not in self.rules.callee_saved:
                    state[key] = SECRET
        if p.sets_flags:
            state["flags"] = SECRET if secret_in and not public_next else PUBLIC

    def _pointer_value(self, state: dict, ins: Instruction, p: "_Plan", value: Value,
                       secret_in: bool, mem_loaded: bool) -> Value:
        """The result of an instruction that may carry a pointer: a register move, lea, or
        add/sub on a pointer (its region kept, its offset known after an immediate)."""
        ops = ins.operands
        if p.kind == "mov":
            return state.get(ops[1].key, PUBLIC)
        if p.kind == "lea":
            if type(ops[1]) is not Mem:        # adrp x, sym / add x, x, :lo12:sym
                return Value(False, "const")
            m = ops[1]
            base = state.get(m.base.key, PUBLIC) if m.base is not None else PUBLIC
            idx = state.get(m.index.key, PUBLIC) if m.index is not None else PUBLIC
            if m.rip_label is not None:
                return Value(False, "const")
            if base.region is not None:
                off = base.offset + m.disp if base.offset is not None and m.index is None else None
                return Value(base.secret or idx.secret, base.region, off)
            return value
        if p.kind == "addsub":
            # x86: add dst, src (dst read); AArch64: add dst, src, imm|reg[, shift]
            three = self.rules is AARCH64_RULES
            cur = state.get((ops[1] if three else ops[0]).key, PUBLIC)
            if cur.region is not None:
                other = ops[2] if three else ops[1]
                if type(other) is Sym:                                    # :lo12:label
                    return Value(False, "const")
                if type(other) is not Reg and type(other) is not Mem:     # an immediate
                    k = other.value if p.name.startswith("add") else -other.value
                    return Value(cur.secret, cur.region,
                                 cur.offset + k if cur.offset is not None else None)
                if not secret_in or not (cur.secret or mem_loaded):
                    return Value(secret_in, cur.region, None)
        return value

    def _find(self, index: int, ins: Instruction, why: str, key=None) -> None:
        chain = self._chain(index, key) if key is not None else ()
        self.findings.append(Finding(self.function.symbol, index, instruction_text(ins), why,
                                     chain))

    def _chain(self, index: int, key, limit: int = 8) -> tuple[str, ...]:
        """Where the secret in register ``key`` at instruction ``index`` came from, read
        backwards through the text (the last writer of each register in turn, its first
        register read, until a load or an argument): an explanation, not a proof."""
        body = self.function.body
        steps: list[str] = []
        i = index
        while len(steps) < limit:
            i -= 1
            while i >= 0 and not (isinstance(body[i], Instruction) and (
                    key in self.plan(body[i]).dst_keys
                    or any(m.base.key == key for m in self.plan(body[i]).writebacks)
                    or key == "flags" and self.plan(body[i]).sets_flags)):
                i -= 1
            if i < 0:
                for reg, role in zip(self.arguments, self.roles):
                    if reg.key == key:
                        steps.append(f"argument {reg} ({role})")
                break
            p = self.plan(body[i])
            steps.append(instruction_text(body[i]))
            moved = next((m for m in p.writebacks if m.base.key == key), None)
            if moved is not None and moved.index is not None:
                key = moved.index.key          # the base moved on by a register
                continue
            if any(r for _, r in p.mems) or not p.read_keys:
                break                          # a load, or a value made here
            key = p.read_keys[0]
        return tuple(reversed(steps))

    # --- the function -------------------------------------------------------------------
    def entry_state(self) -> dict:
        state: dict = {}
        for reg, role in zip(self.arguments, self.roles):
            if role == "ctx":
                state[reg.key] = Value(False, "ctx", 0)
            elif role == "n":
                state[reg.key] = PUBLIC
            else:
                state[reg.key] = Value(False, role, 0)
        state[self.rules.stack] = Value(False, "stack", 0)
        return state

    def _at(self, state: dict, key) -> Value | None:
        """A key's value, a context offset not stored to holding its field's kind."""
        if key in state:
            return state[key]
        return self._default(key[1]) if isinstance(key, tuple) and key[0] == "mem" else None

    def run(self) -> list[Finding]:
        blocks = build_cfg(self.function)
        # each block's items, with whether a declassify comment precedes an instruction
        marks: dict[int, bool] = {}
        pending = False
        for i, item in enumerate(self.function.body):
            if isinstance(item, Comment) and item.text.startswith("declassify:"):
                pending = True
            elif isinstance(item, Instruction):
                marks[id(item)] = pending
                pending = False
        positions = {id(it): i for i, it in enumerate(self.function.body)}
        ins_in: dict[int, dict] = {0: self.entry_state()}
        # the lowest block first (the text's order: forward jumps mostly), so that a block
        # is visited once its predecessors have settled, loops aside
        work, queued = [0], {0}
        while work:
            i = heapq.heappop(work)
            queued.discard(i)
            b = blocks[i]
            state = dict(ins_in[b.index])
            for ins in b.instructions:
                self.step(state, ins, positions[id(ins)], marks[id(ins)], False)
            for s in b.successors:
                old = ins_in.get(s)
                new = state if old is None else {k: _join(self._at(old, k), self._at(state, k))
                                                 for k in set(old) | set(state)}
                if new != old:
                    ins_in[s] = new
                    if s not in queued:
                        queued.add(s)
                        heapq.heappush(work, s)
        for b in blocks:                       # the findings, once, at the fixed point
            if b.index not in ins_in:
                continue
            state = dict(ins_in[b.index])
            for ins in b.instructions:
                self.step(state, ins, positions[id(ins)], marks[id(ins)], True)
        return self.findings


def check_functions(spec, functions: dict, context_fields: tuple, abi_for,
                    public_fields: frozenset) -> list[Finding]:
    """The findings of every function of one kernel (``spec`` a KernelSpec, ``functions``
    its compiled functions by entry name, ``context_fields`` its (section, name, offset,
    size, doc) fields, ``public_fields`` the names of those declared public);
    ``abi_for(entry)`` gives an entry's calling convention."""
    rules = RULES[spec.arch]
    contract = mode(spec.mode).contract
    fields = {name: (off, size) for _, name, off, size, _ in context_fields}
    findings: list[Finding] = []
    for entry, fn in functions.items():
        roles = contract.roles(entry)
        abi = abi_for(entry)
        # a call keeps what the convention keeps (Win64: rdi and rsi too)
        kept = frozenset(r.key for r in abi.callee_saved if r.cls == abi.arguments[0].cls)
        entry_rules = rules if kept <= rules.callee_saved else replace(
            rules, callee_saved=rules.callee_saved | kept)
        findings += Analysis(fn, roles, fields, abi.arguments, entry_rules,
                             frozenset(public_fields)).run()
    return findings


def check_kernel(ck, abi_for) -> list[Finding]:
    """check_functions for a compiled kernel (emit/compile.py's CompiledKernel)."""
    return check_functions(ck.spec, ck.functions, ck.context_fields, abi_for, ck.public_fields)
