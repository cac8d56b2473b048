"""Constant time by data flow (issue 17): which values of a compiled x86-64 function are
secret, and whether a secret reaches what a timing channel sees.

Sources and marks. At entry, each argument has a role (``ENTRY_ARGS``: the C contracts'
order): the context and the buffers are pointers into regions, lengths are public
numbers. A load is secret unless its address is known to hold public data: a constant
(RIP-relative), the stack (arguments past the sixth, saved registers), a public buffer
(IV, nonce, AAD, tag given to open) or a public field of the context (``PUBLIC_FIELDS``:
lengths, counters, FACE bookkeeping, the byte-sliced hash's block count). Keys, round
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

from dataclasses import dataclass

from ..dsl.ir import Comment, Function, Instruction, LabelDef
from ..dsl.operands import Masked, Mem, Reg, VList
from .liveness import build_cfg

# fields of the context that hold public data (kernels/ctx_layout.py, modes/*/layout):
# lengths, counters and the FACE table's bookkeeping (which entries are filled, for which
# counter bytes), the byte-sliced engine's block counts, the key size
PUBLIC_FIELDS = frozenset({
    "KEY_BITS", "CTR_LO", "CTR_HI", "KEYSTREAM_LEFT", "WINDOW_LO", "WINDOW_HI", "TAG_LO",
    "TAG_HI", "FILL_START", "FILL_COUNT", "FILL_BUDGET", "AAD_LEN", "MSG_LEN", "IN_DATA",
    "COUNTER_SECRET", "COUNTER", "FACE_WINDOW", "FACE_TAG_LO", "FACE_TAG_HI", "HASHED",
    "WORK_HASHED", "GROUP_FLAGS",
})

PUBLIC_REGIONS = ("const", "stack", "public")
# rbx, rsp, rbp, r12-r15: a call leaves them as they were
CALLEE_SAVED = frozenset({("gp", 3), ("gp", 4), ("gp", 5), ("gp", 12), ("gp", 13), ("gp", 14),
                          ("gp", 15)})

# the arguments' roles, in order: "ctx", "secret" (a pointer to secret bytes), "public" (a
# pointer to public bytes), "data" (the message in or out: secret), "n" (a public number)
ENTRY_ARGS = {
    ("ctr", "init"): ("ctx", "secret", "n", "public"),
    ("ctr", "set_iv"): ("ctx", "public"),
    ("ctr", "xor_stream"): ("ctx", "data", "data", "n"),
    ("aead", "init"): ("ctx", "secret", "n"),
    ("aead", "seal"): ("ctx", "public", "n", "public", "n", "data"),
    ("aead", "open"): ("ctx", "public", "n", "public", "n", "data"),
    ("aead", "start"): ("ctx", "public", "n"),
    ("aead", "aad"): ("ctx", "public", "n"),
    ("aead", "encrypt"): ("ctx", "data", "n", "data"),
    ("aead", "decrypt"): ("ctx", "data", "n", "data"),
    ("aead", "encrypt_data"): ("ctx", "data", "n", "data", "n"),
    ("aead", "decrypt_data"): ("ctx", "data", "n", "data", "n"),
    ("aead", "finish_seal"): ("ctx", "data", "n"),
    ("aead", "finish_open"): ("ctx", "public", "n"),
    ("aead", "wipe"): ("ctx",),
    ("ctr", "wipe"): ("ctx",),
}

# instructions that write the flags from their inputs (the GP arithmetic the lowering uses);
# cmov, adc, sbb, setcc read them
FLAG_READERS_BRANCH = {"je", "jne", "jb", "jae", "ja", "jbe", "jl", "jge", "jg", "jle", "js",
                       "jns", "jz", "jnz"}
NO_FLAGS = {"mov", "mov.st", "mov.d", "mov.dst", "mov.bst", "movabs", "movzx.b32", "lea",
            "push", "pop", "bswap", "jmp", "ret", "call", "endbr64"}


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
class Finding:
    function: str
    index: int              # position of the instruction in the function's body
    text: str               # the instruction
    why: str

    def __str__(self) -> str:
        return f"{self.function}: {self.text}: {self.why}"


class Analysis:
    """One function's marks (see the module text)."""

    def __init__(self, function: Function, roles: tuple[str, ...], fields: dict,
                 arguments: tuple[Reg, ...]) -> None:
        self.function, self.roles, self.fields = function, roles, fields
        self.arguments = arguments
        self.findings: list[Finding] = []

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
        return PUBLIC if self._field(offset) in PUBLIC_FIELDS else SECRET

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
            return self._field(off) not in PUBLIC_FIELDS
        return True

    # --- one instruction ----------------------------------------------------------------
    def step(self, state: dict, ins: Instruction, index: int, public_next: bool,
             report: bool) -> None:
        name = ins.name
        ops = ins.operands
        reads: list[Value] = []
        mem_loaded = False
        for (r, w), op in zip(ins.form.access, ops):
            t = type(op)
            if t is Mem:
                for reg in (op.base, op.index):
                    if reg is not None and state.get(reg.key, PUBLIC).secret and report:
                        self._find(index, ins, f"a secret value ({reg}) in an address")
                if r and name != "lea":
                    mem_loaded = mem_loaded or self._load(state, op)
            elif t is Reg and r:
                reads.append(state.get(op.key, PUBLIC))
            elif t is VList and r:
                reads.extend(state.get(x.key, PUBLIC) for x in op.regs)
            elif t is Masked:
                reads.append(state.get(op.reg.key, PUBLIC))
        secret_in = mem_loaded or any(v.secret for v in reads)
        if name in ("cmova", "cmove", "cmovne", "adc", "adc.m", "sbb") or name.startswith("set"):
            secret_in = secret_in or state.get("flags", PUBLIC).secret
        if name in FLAG_READERS_BRANCH and state.get("flags", PUBLIC).secret and report:
            self._find(index, ins, "a branch on flags from a secret value")
        # the result
        dst = [op for (r, w), op in zip(ins.form.access, ops) if w and type(op) is Reg]
        stores = [op for (r, w), op in zip(ins.form.access, ops) if w and type(op) is Mem]
        if stores and report:
            for m in stores:
                base = state.get(m.base.key, PUBLIC) if m.base is not None else PUBLIC
                if base.region == "ctx" and base.offset is not None and m.index is None:
                    field = self._field(base.offset + m.disp)
                    if field in PUBLIC_FIELDS and secret_in and not public_next:
                        self._find(index, ins, f"a secret value stored into the public "
                                               f"field {field}")
        zero_idiom = (len(ops) >= 2 and all(type(o) is Reg for o in ops)
                      and len({o.key for o in ops}) == 1 and name.lstrip("v").startswith(
                          ("pxor", "xor", "sub")))
        value = Value(secret_in and not public_next and not zero_idiom)
        if name == "mov" and type(ops[1]) is Reg:
            value = state.get(ops[1].key, PUBLIC)
        elif name == "lea":
            m = ops[1]
            base = state.get(m.base.key, PUBLIC) if m.base is not None else PUBLIC
            idx = state.get(m.index.key, PUBLIC) if m.index is not None else PUBLIC
            if m.rip_label is not None:
                value = Value(False, "const")
            elif base.region is not None:
                off = base.offset + m.disp if base.offset is not None and m.index is None else None
                value = Value(base.secret or idx.secret, base.region, off)
        elif name in ("add", "sub") and type(ops[0]) is Reg:
            cur = state.get(ops[0].key, PUBLIC)
            if cur.region is not None:
                other = ops[1]
                if type(other) is not Reg and type(other) is not Mem:     # an immediate
                    k = other.value if name == "add" else -other.value
                    value = Value(cur.secret, cur.region,
                                  cur.offset + k if cur.offset is not None else None)
                elif not secret_in or not (cur.secret or mem_loaded):
                    value = Value(secret_in, cur.region, None)
        if public_next:
            value = Value(False, value.region, value.offset)
        for d in dst:
            state[d.key] = value
        for m in stores:                       # what known context bytes now hold
            off = self._ctx_offset(state, m)
            if off is not None:
                for g in _granules(off, m.width):
                    state[("mem", g)] = Value(secret_in and not public_next)
        if name == "call":
            # the callee's registers: unknown; the context as its fields say (the callee is
            # checked on its own, secret stores into public fields among it)
            for key in list(state):
                if isinstance(key, tuple) and key[0] == "mem":
                    del state[key]
                elif key != "flags" and key not in CALLEE_SAVED:
                    state[key] = SECRET
        if name not in NO_FLAGS and not name.startswith(("v", "p", "mov", "k")) \
                or name in ("kortestw", "kortestq", "ptest", "vptest"):
            state["flags"] = Value(secret_in and not public_next)

    def _find(self, index: int, ins: Instruction, why: str) -> None:
        ops = ", ".join(str(o) for o in ins.operands)
        self.findings.append(Finding(self.function.symbol, index, f"{ins.name} {ops}", why))

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
        state[("gp", 4)] = Value(False, "stack", 0)          # rsp
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
        work = [0]
        while work:
            b = blocks[work.pop()]
            state = dict(ins_in[b.index])
            for ins in b.instructions:
                self.step(state, ins, positions[id(ins)], marks[id(ins)], False)
            for s in b.successors:
                old = ins_in.get(s)
                new = state if old is None else {k: _join(self._at(old, k), self._at(state, k))
                                                 for k in set(old) | set(state)}
                if new != old:
                    ins_in[s] = new
                    work.append(s)
        for b in blocks:                       # the findings, once, at the fixed point
            if b.index not in ins_in:
                continue
            state = dict(ins_in[b.index])
            for ins in b.instructions:
                self.step(state, ins, positions[id(ins)], marks[id(ins)], True)
        return self.findings


def check_kernel(ck, abi_for) -> list[Finding]:
    """The findings of every function of a compiled x86-64 kernel (emit/compile.py's
    CompiledKernel); ``abi_for(entry)`` gives an entry's calling convention."""
    kind = "ctr" if ck.spec.mode == "ctr" else "aead"
    fields = {}
    extra = {name: (off, size) for _, name, off, size, _ in ck.context_fields}.get("EXTRA")
    if extra is not None and ck.spec.method == "bitsliced":
        # the bit-sliced engine's own area holds, after its secret key slices, a public
        # byte a group saying whether FACE filled its table entry (kernels/bitsliced.py)
        from ..kernels.engine_choice import engine_for
        fields["GROUP_FLAGS"] = (extra[0] + engine_for(ck.spec).group_flags(), 64)
    fields.update({name: (off, size) for _, name, off, size, _ in ck.context_fields})
    findings: list[Finding] = []
    for entry, fn in ck.functions.items():
        roles = ENTRY_ARGS.get((kind, entry))
        if roles is None:
            raise ValueError(f"{ck.spec.name}: no argument roles for {entry}")
        findings += Analysis(fn, roles, fields, abi_for(entry).arguments).run()
    return findings
