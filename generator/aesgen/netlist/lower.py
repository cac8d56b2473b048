"""Lower a netlist to instructions for one strategy, and count them.

Strategies (``STRATEGIES``):

``two_operand``   SSE: ``pxor/pand/por dst, src`` overwrite their first operand. A gate
                  writes in place into an operand that dies there (every op is
                  commutative), else copies one first (``movdqa``). 16 registers.
``three_operand`` AVX/AVX2: ``vpxor/vpand/vpor dst, a, b``, no copies. 16 registers.
``ternary``       AVX-512: the netlist is covered by cones of up to 3 inputs (cover.py);
                  a cone is one VPTERNLOGD (destructive in its first operand, so a copy
                  when no input dies there) or one VPXORQ/VPANDQ/VPORQ/VPANDNQ. 32 registers.
``neon``          AArch64 NEON, three-operand EOR/AND/ORR/BIC/ORN/MVN and the BSL family
                  (BSL/BIT/BIF, destructive in one of their three inputs). 32 registers.
``neon_sha3``     the same with EOR3 and BCAX (FEAT_SHA3).

Common rules. The 8 inputs start in registers and the outputs end in registers, as in a
bit-sliced round where the state never leaves the register file (seed 004's count of 163
covers the S-box alone on that footing); loading and storing the state is not counted.
XNOR and NOT cost one XOR with an all-ones constant (x86: a memory operand, no register;
NEON: MVN, or BCAX against a ones register with SHA3). When more values are live than
registers exist the machine spills: the value with the lowest expected cost (a store,
unless its slot already holds it, plus a load if it must be overwritten in a register
later), farthest next use first, goes to a scratch slot and is read back either as the
memory source operand of an x86 instruction (free) or by one load. On a destructive
instruction whose operands all survive, an operand already in its slot is overwritten for
free, and storing an operand then overwriting it is preferred to a copy when it costs no
more. The schedule (schedule.py) is the cheapest of several list-scheduled orders under
this machine.

Objectives (``lower(netlist, strategy, objective)``). "instructions" takes the order with
the fewest instructions (the counts the report compares with seed 004). "cycles", for
``two_operand`` and its default, takes the fastest lowering by the timing model
(timing.py: the legacy-SSE bit-sliced round on a Golden-Cove-class core): an out-of-order
core does not pay for the instruction count as such; register copies are free (move
elimination) and a spilled value read back soon after its store waits for store-to-load
forwarding on the dependency chain. The candidates are the same orders lowered with the
machine's ``keep_near`` setting (keep a value that is read again soon in its register,
even at the price of a copy or a reload elsewhere), shortlisted by count and ranked by the
model. The bit-sliced SSE kernels use this choice.

The result is a list of ``MI`` over virtual registers, which ``run`` interprets over
256-lane ints so a test can check the S-box through the lowered code itself.
"""
from __future__ import annotations

import bisect
from dataclasses import replace
from functools import lru_cache

from .cover import Cone, Cover, Match, cover, neon_library, ternlog_library
from .evaluate import ALL, INPUTS, check_outputs
from .format import Gate, Netlist
from .schedule import Op, best_schedule, candidate_orders, gate_ops, max_live

from .lowering import DESTRUCTIVE, MI, ONES, SEMANTICS, Lowering, is_mem, mem
from .timing import Core, cycles_per_round, reference_core


# ------------------------------------------------------------------------------------------
# the machine: registers, spills, copies
# ------------------------------------------------------------------------------------------

class Machine:
    """Registers, spill slots and the code emitted so far, for one order of operations.

    ``keep_near`` trades instructions for time on an out-of-order core, where a value read
    back from memory soon after it was stored waits for store-to-load forwarding (about 5
    cycles, on the dependency chain) while a register copy costs nothing (move
    elimination). A value read again within ``keep_near`` operations is not chosen to
    leave its register while another choice exists: an eviction takes another victim even
    if that costs a reload more, and an operation that overwrites such an operand copies
    it instead of storing it first. 0 (the default) gives the fewest instructions.
    """

    def __init__(self, order: list[Op], inputs, outputs, registers: int, *,
                 two_operand: bool, mem_source: bool, keep_near: int = 0) -> None:
        self.R = registers
        self.two_operand = two_operand
        self.mem_source = mem_source
        self.keep_near = keep_near
        self.outputs = set(outputs)
        self.uses: dict[str, list[int]] = {}
        for i, op in enumerate(order):
            for w in op.reads:
                self.uses.setdefault(w, []).append(i)
        self.end = len(order)
        self.pos = 0
        self.reg: dict[str, int] = {}
        self.slot: dict[str, int] = {}
        self.free_slots: list[int] = []
        self.n_slots = 0
        self.next_vreg = 0
        self.code: list[MI] = []
        self.pinned: set[str] = set()
        self.out_regs: tuple[int, ...] = ()
        self.inputs = tuple(self._fresh_for(w) for w in inputs)
        # on a two-operand machine a value needs a register again only where it is
        # overwritten: at its last read, when the other operand survives that read
        self.needs_reg_at_end: set[str] = set()
        for w, u in self.uses.items():
            if w in self.outputs:
                self.needs_reg_at_end.add(w)
                continue
            reads = order[u[-1]].reads
            others = [x for x in reads if x != w]
            if not others or any(self.uses[x][-1] > u[-1] or x in self.outputs
                                 for x in others):
                self.needs_reg_at_end.add(w)

    def spill_cost(self, w: str) -> int:
        """Instructions an eviction of w is expected to add: a store, a later load."""
        store = 0 if w in self.slot else 1
        if w in self.pinned:
            return 99
        if not self.two_operand:
            return store
        return store + (1 if w in self.needs_reg_at_end else 0)

    # --- bookkeeping -------------------------------------------------------------------
    def _fresh_for(self, w: str) -> int:
        r = self.next_vreg
        self.next_vreg += 1
        self.reg[w] = r
        return r

    def next_use(self, w: str) -> int:
        if w in self.pinned:
            return self.end + 2
        u = self.uses.get(w, [])
        k = bisect.bisect_left(u, self.pos)
        if k < len(u):
            return u[k]
        return self.end + 1 if w in self.outputs else -1

    def read_soon(self, w: str) -> bool:
        """w is read again, after the current operation, within ``keep_near`` operations."""
        if not self.keep_near:
            return False
        u = self.uses.get(w, [])
        k = bisect.bisect_right(u, self.pos)
        return k < len(u) and u[k] - self.pos <= self.keep_near

    def dies(self, w: str) -> bool:
        """No read after the current operation, and not an output."""
        if w in self.outputs or w in self.pinned:
            return False
        u = self.uses.get(w, [])
        return not u or u[-1] <= self.pos

    def emit(self, *args, **kw) -> None:
        self.code.append(MI(*args, **kw))

    def make_room(self, protect, need: int = 1) -> None:
        while len(self.reg) + need > self.R:
            self.evict(protect)

    def evict(self, protect) -> None:
        victims = [w for w in self.reg if w not in protect]
        if not victims:
            raise RuntimeError("no register can be spilled")
        w = min(victims, key=lambda v: (self.read_soon(v), self.spill_cost(v),
                                        -self.next_use(v), v))
        if w not in self.slot:
            s = self.free_slots.pop() if self.free_slots else self._new_slot()
            self.slot[w] = s
            self.emit("store", mem(s), (self.reg[w],), kind="store", wire=w)
        del self.reg[w]

    def _new_slot(self) -> int:
        self.n_slots += 1
        return self.n_slots - 1

    def to_reg(self, w: str, protect) -> int:
        if w in self.reg:
            return self.reg[w]
        self.make_room(protect)
        r = self._fresh_for(w)
        self.emit("load", r, (mem(self.slot[w]),), kind="load", wire=w)
        return r

    def source(self, w: str, protect):
        if w in self.reg:
            return self.reg[w]
        if self.mem_source:
            return mem(self.slot[w])
        return self.to_reg(w, protect)

    def copy_of(self, w: str, protect) -> int:
        """A new register holding w's value (a copy, or a load from its slot)."""
        self.make_room(protect)
        r = self.next_vreg
        self.next_vreg += 1
        if w in self.reg:
            self.emit("copy", r, (self.reg[w],), kind="copy", wire=w)
        else:
            self.emit("load", r, (mem(self.slot[w]),), kind="load", wire=w)
        return r

    def retire(self, values) -> None:
        for w in set(values):
            if self.dies(w):
                self.reg.pop(w, None)
                s = self.slot.pop(w, None)
                if s is not None:
                    self.free_slots.append(s)

    def define(self, w: str, r: int) -> None:
        """w now lives in register r (an in-place result takes over its operand's r)."""
        for v, rv in list(self.reg.items()):
            if rv == r:
                del self.reg[v]
        self.reg[w] = r

    def fresh(self, protect, dying_in_reg: int = 0) -> int:
        """A register for a result that may reuse the register of a dying operand."""
        while len(self.reg) - dying_in_reg + 1 > self.R:
            self.evict(protect)
        r = self.next_vreg
        self.next_vreg += 1
        return r

    def finish(self, outputs) -> tuple[int, ...]:
        self.pos = self.end
        out = []
        for w in outputs:
            out.append(self.to_reg(w, set(outputs)))
        return tuple(out)

    # --- operations --------------------------------------------------------------------
    def binary(self, op: str, out: str, a: str, b: str, commutative: bool = True) -> int:
        """out = op(a, b); returns the register of out."""
        protect = {a, b}
        if self.two_operand:
            da, db = self.dies(a), self.dies(b)
            if da and a in self.reg:
                d, other, r = a, b, self.reg[a]
            elif db and b in self.reg and commutative:
                d, other, r = b, a, self.reg[b]
            elif da:
                d, other = a, b
                r = self.copy_of(a, protect)          # a load: a lives only in memory
            elif db and commutative:
                d, other = b, a
                r = self.copy_of(b, protect)
            else:
                d, other, r = self._overwrite_or_copy(a, b, commutative, protect)
            src = self.source(other, protect | {d})
            self.emit(op, r, (r, src), wire=out)
        else:
            first, second = a, b
            if commutative and a not in self.reg and b in self.reg:
                first, second = b, a
            ra = self.to_reg(first, protect)
            src = self.source(second, protect)
            dying = sum(1 for w in {a, b} if self.dies(w) and w in self.reg)
            r = self.fresh(protect, dying)
            self.emit(op, r, (ra, src), wire=out)
        self.retire([a, b])
        self.define(out, r)
        return r

    def _overwrite_or_copy(self, a: str, b: str, commutative: bool, protect):
        """Neither operand of a destructive op dies: the register the result goes to."""
        d, r = self.destination((a, b) if commutative else (a,), protect)
        return d, (b if d == a else a), r

    def destination(self, cands, protect) -> tuple[str, int]:
        """A register to overwrite with a result when no candidate operand dies there.

        A register whose value is also in its spill slot is overwritten for free (the
        value lives on in memory). Otherwise: store one candidate and overwrite it, or copy
        one (evicting another value when no register is free); the cheaper by
        ``spill_cost`` wins. A tie goes to the store on a two-operand machine (it leaves
        a register free, and its spill cost counts the reload); to the copy otherwise.
        """
        in_reg = [w for w in cands if w in self.reg]
        clean = [w for w in in_reg if w in self.slot]
        if clean:
            d = max(clean, key=lambda w: (self.next_use(w), w))
            return d, self.reg[d]
        if in_reg:
            d = min(in_reg, key=lambda w: (self.spill_cost(w), -self.next_use(w), w))
            store_cost = self.spill_cost(d)
            copy_cost = 1
            if len(self.reg) >= self.R:
                victims = [w for w in self.reg if w not in protect]
                copy_cost += min((self.spill_cost(w) for w in victims), default=99)
            cheaper = store_cost < copy_cost or (store_cost == copy_cost and self.two_operand)
            if cheaper and not self.read_soon(d):
                s = self.free_slots.pop() if self.free_slots else self._new_slot()
                self.slot[d] = s
                self.emit("store", mem(s), (self.reg[d],), kind="store", wire=d)
                return d, self.reg[d]
        d = next((w for w in cands if w in self.reg), cands[0])
        return d, self.copy_of(d, protect)

    def invert(self, out: str, r: int) -> None:
        """out (in r) ^= all ones."""
        self.emit("xor", r, (r, ONES), kind="not", wire=out)

    def negate(self, out: str, a: str) -> int:
        """out = NOT a, as an XOR with the all-ones constant."""
        protect = {a}
        if self.two_operand:
            if self.dies(a) and a in self.reg:
                r = self.reg[a]
            else:
                r = self.copy_of(a, protect)
            self.emit("xor", r, (r, ONES), kind="not", wire=out)
        else:
            ra = self.to_reg(a, protect)
            r = self.fresh(protect, 1 if self.dies(a) else 0)
            self.emit("xor", r, (ra, ONES), kind="not", wire=out)
        self.retire([a])
        self.define(out, r)
        return r


# ------------------------------------------------------------------------------------------
# strategies over gates: two_operand, three_operand
# ------------------------------------------------------------------------------------------

GATE_OP = {"XOR": "xor", "XNOR": "xor", "AND": "and", "OR": "or"}


def _run_gates(netlist: Netlist, order: list[Op], registers: int, two_operand: bool,
               keep_near: int = 0) -> Machine:
    m = Machine(order, netlist.inputs, netlist.outputs, registers,
                two_operand=two_operand, mem_source=True, keep_near=keep_near)
    for i, op in enumerate(order):
        m.pos = i
        g: Gate = op.payload
        if g.op == "NOT":
            m.negate(g.out, g.a)
            continue
        r = m.binary(GATE_OP[g.op], g.out, g.a, g.b)
        if g.op == "XNOR":
            m.invert(g.out, r)
    m.out_regs = m.finish(netlist.outputs)
    return m


def _gate_lowering(netlist: Netlist, strategy: str, order: list[Op], m: Machine,
                   registers: int, **settings) -> Lowering:
    return Lowering(netlist.name, strategy, tuple(m.code), m.inputs, m.out_regs, registers,
                    max_live(order, netlist.inputs, netlist.outputs), len(order),
                    strategy == "two_operand", tuple(op.out for op in order), **settings)


# The timed choice (objective "cycles", two_operand): every candidate order is lowered under
# each of these Machine settings; under each setting the TIMED_CANDIDATES lowerings with
# the fewest instructions go through the timing model, and the fastest by its estimate
# wins (then the fewest instructions, then the earliest candidate). Measured on the build
# machine in the bitsliced128 round loop: keep_near removes the forwarding stalls (a round
# about 6% faster than the count-minimal lowering; README.md has the figures).
TIMED_KEEP_NEAR = (12, 16, 24)
TIMED_CANDIDATES = 16


def lower_gates(netlist: Netlist, strategy: str, registers: int = 16, tries: int = 32,
                plans: int = 96, objective: str = "instructions", *,
                keep_near: tuple[int, ...] = TIMED_KEEP_NEAR,
                timed: int = TIMED_CANDIDATES, core: Core | None = None) -> Lowering:
    """The gates of ``netlist`` in the order and with the spills that minimise
    ``objective``: "instructions" (then peak live values), or "cycles" (two_operand only:
    the timing model's estimate for the bit-sliced SSE round on ``core``, by default the
    reference core; see the constants above)."""
    two = strategy == "two_operand"
    ops = gate_ops(netlist)
    if objective == "instructions":
        def cost(order):
            m = _run_gates(netlist, order, registers, two)
            return (len(m.code), max_live(order, netlist.inputs, netlist.outputs))

        order, _ = best_schedule(ops, netlist.inputs, netlist.outputs, cost, tries=tries,
                                 plans=plans)
        m = _run_gates(netlist, order, registers, two)
        return _gate_lowering(netlist, strategy, order, m, registers)
    if objective != "cycles":
        raise ValueError(f"unknown objective {objective!r} (known: {', '.join(OBJECTIVES)})")
    if not two:
        raise ValueError(f"{strategy}: the timing model covers two_operand code only")
    orders = candidate_orders(ops, netlist.inputs, netlist.outputs, tries=tries, plans=plans)
    shortlist: dict[tuple, tuple] = {}       # code -> (rank, order, machine, keep_near)
    for n, near in enumerate(keep_near):
        runs = []
        for k, order in enumerate(orders):
            m = _run_gates(netlist, order, registers, True, near)
            runs.append(((len(m.code), k, n), order, m, near))
        for run_ in sorted(runs, key=lambda r: r[0])[:timed]:
            shortlist.setdefault(tuple(run_[2].code), run_)
    best = None
    for rank, order, m, near in sorted(shortlist.values(), key=lambda r: r[0]):
        low = _gate_lowering(netlist, strategy, order, m, registers, objective="cycles",
                             keep_near=near)
        key = (cycles_per_round(low, core or reference_core()), rank)
        if best is None or key < best[0]:
            best = (key, low)
    return replace(best[1], cycles=best[0][0])


# ------------------------------------------------------------------------------------------
# strategies over cones: ternary (AVX-512), neon
# ------------------------------------------------------------------------------------------

def _leaf_imm(table: int, leaves: tuple[str, ...], assign: tuple[str, str, str]) -> int:
    """VPTERNLOGD immediate for ``table`` (over ``leaves``) with A, B, C = ``assign``."""
    imm = 0
    for i in range(8):
        val = {}
        bits = ((i >> 2) & 1, (i >> 1) & 1, i & 1)
        consistent = True
        for w, bit in zip(assign, bits):
            if w in val and val[w] != bit:
                consistent = False
            val.setdefault(w, bit)
        if not consistent:
            continue               # B and C are the same register: a don't-care row
        k = sum(val[w] << (2 - t) for t, w in enumerate(leaves))
        if (table >> k) & 1:
            imm |= 1 << i
    return imm


def _run_cones(netlist: Netlist, order: list[Op], registers: int, neon: bool,
               sha3: bool) -> Machine:
    m = Machine(order, netlist.inputs, netlist.outputs, registers,
                two_operand=False, mem_source=not neon)
    ones_reg = None
    for i, op in enumerate(order):
        m.pos = i
        cone, match = op.payload
        form, leaves = match.form, cone.leaves
        args = tuple(leaves[j] for j in match.operands)
        out = cone.out
        if form in ("xor", "and", "or", "eor", "orr"):
            m.binary({"eor": "xor", "orr": "or"}.get(form, form), out, *args)
        elif form in ("andn", "bic", "orn"):
            m.binary(form, out, *args, commutative=False)
        elif form == "not" and not neon:
            m.negate(out, args[0])
        elif form == "mvn":
            _unary(m, "not", out, args[0])
        elif form == "xnor_eor_mvn":
            r = m.binary("xor", out, *args)
            m.emit("not", r, (r,), kind="not", wire=out)
        elif form == "xnor_bcax":
            if ones_reg is None:
                ones_reg = _pin_ones(m)
            _nary(m, "bcax", out, (args[0], "__ones", args[1]))
        elif form in ("eor3", "bcax"):
            _nary(m, form, out, args)
        elif form == "bsl":
            _select(m, out, *args)
        elif form == "ternlog":
            _ternlog_cone(m, cone, match)
        else:
            raise ValueError(f"no lowering for cone form {form}")
    m.out_regs = m.finish(netlist.outputs)
    return m


def _pin_ones(m: Machine) -> int:
    m.make_room(set())
    r = m._fresh_for("__ones")
    m.pinned.add("__ones")
    m.emit("movi", r, (), imm=0xFF, kind="const", wire="all ones")
    return r


def _unary(m: Machine, op: str, out: str, a: str) -> None:
    ra = m.to_reg(a, {a})
    r = m.fresh({a}, 1 if m.dies(a) else 0)
    m.emit(op, r, (ra,), wire=out)
    m.retire([a])
    m.define(out, r)


def _nary(m: Machine, op: str, out: str, args: tuple[str, ...]) -> None:
    """A non-destructive 3-source instruction (NEON EOR3/BCAX: registers only)."""
    protect = set(args)
    regs = [m.to_reg(w, protect) for w in args]
    dying = sum(1 for w in set(args) if m.dies(w) and w in m.reg)
    r = m.fresh(protect, dying)
    regs = [m.reg[w] for w in args]
    m.emit(op, r, tuple(regs), wire=out)
    m.retire(args)
    m.define(out, r)


def _select(m: Machine, out: str, mask: str, then: str, other: str) -> None:
    """out = mask ? then : other, with BSL (dst = mask), BIF (dst = then) or BIT (dst = other)."""
    protect = {mask, then, other}
    for w in (mask, then, other):
        m.to_reg(w, protect)
    choice = next((w for w in (mask, other, then) if m.dies(w)), None)
    if choice is None:
        choice = mask
        r = m.copy_of(mask, protect)
    else:
        r = m.reg[choice]
    rm, rt, ro = (r if w == choice else m.reg[w] for w in (mask, then, other))
    if choice == mask:
        m.emit("bsl", r, (r, rt, ro), wire=out)
    elif choice == other:
        m.emit("bit", r, (r, rt, rm), wire=out)
    else:
        m.emit("bif", r, (r, ro, rm), wire=out)
    m.retire([mask, then, other])
    m.define(out, r)


def _ternlog_cone(m: Machine, cone: Cone, match: Match) -> None:
    leaves = cone.leaves
    protect = set(leaves)
    # A: a leaf that dies here and sits in a register is overwritten in place
    a = next((w for w in leaves if m.dies(w) and w in m.reg), None)
    if a is not None:
        r = m.reg[a]
    else:
        a = next((w for w in leaves if m.dies(w)), None)
        if a is not None:
            r = m.copy_of(a, protect)            # a load: a lives only in memory
        else:
            a, r = m.destination(leaves, protect)
    rest = [w for w in leaves if w != a]
    if not rest:
        b = c = a
        rb = rc = r
    elif len(rest) == 1:
        b = c = rest[0]
        rb = rc = m.to_reg(b, protect)
    else:
        b, c = rest
        if b not in m.reg and c in m.reg:
            b, c = c, b
        rb = m.to_reg(b, protect)
        rc = m.source(c, protect)
    imm = _leaf_imm(cone.table, leaves, (a, b, c))
    m.emit("ternlog", r, (r, rb, rc), imm=imm, wire=cone.out)
    m.retire(leaves)
    m.define(cone.out, r)


@lru_cache(maxsize=None)
def _cover(netlist: Netlist, target: str) -> Cover:
    library = {"ternary": ternlog_library, "neon": neon_library(False),
               "neon_sha3": neon_library(True)}[target]
    return cover(netlist, library)


def lower_cones(netlist: Netlist, strategy: str, registers: int = 32, tries: int = 32,
                plans: int = 32) -> Lowering:
    cv = _cover(netlist, strategy)
    ops = [Op(c.out, c.leaves, (c, mt)) for c, mt in zip(cv.cones, cv.matches)]
    neon = strategy.startswith("neon")
    sha3 = strategy == "neon_sha3"

    def cost(order):
        m = _run_cones(netlist, order, registers, neon, sha3)
        return (len(m.code), max_live(order, netlist.inputs, netlist.outputs))

    order, _ = best_schedule(ops, netlist.inputs, netlist.outputs, cost, tries=tries,
                             plans=plans)
    m = _run_cones(netlist, order, registers, neon, sha3)
    forms: dict[str, int] = {}
    for mt in cv.matches:
        forms[mt.form] = forms.get(mt.form, 0) + 1
    return Lowering(netlist.name, strategy, tuple(m.code), m.inputs, m.out_regs, registers,
                    max_live(order, netlist.inputs, netlist.outputs), len(ops), False,
                    tuple(op.out for op in order), forms)


# ------------------------------------------------------------------------------------------
# entry points
# ------------------------------------------------------------------------------------------

OBJECTIVES = ("instructions", "cycles")
# what lower() minimises when not told: time where there is a timing model
DEFAULT_OBJECTIVE = {"two_operand": "cycles"}


def _counted(fn):
    """A strategy with no timing model: only the instruction count can choose."""
    def lower_counted(netlist: Netlist, objective: str, core: Core | None) -> Lowering:
        if objective != "instructions":
            raise ValueError(f"no timing model for this strategy (objective {objective!r})")
        return fn(netlist)
    return lower_counted


STRATEGIES = {
    "two_operand": ("SSE, two-operand, 16 xmm",
                    lambda n, o, c: lower_gates(n, "two_operand", 16, objective=o, core=c)),
    "three_operand": ("AVX/AVX2, three-operand, 16 ymm",
                      _counted(lambda n: lower_gates(n, "three_operand", 16))),
    "ternary": ("AVX-512, VPTERNLOGD cones, 32 zmm",
                _counted(lambda n: lower_cones(n, "ternary", 32))),
    "neon": ("NEON, BSL family, 32 v-registers", _counted(lambda n: lower_cones(n, "neon", 32))),
    "neon_sha3": ("NEON + SHA3 (EOR3, BCAX), 32 v-registers",
                  _counted(lambda n: lower_cones(n, "neon_sha3", 32))),
}


def lower(netlist: Netlist, strategy: str, objective: str | None = None,
          core: Core | None = None) -> Lowering:
    """``netlist`` lowered for ``strategy``, chosen by ``objective``: "instructions" (the
    fewest), or "cycles" (the fastest by the timing model on ``core``, the preset's
    microarchitecture; two_operand only). The default objective is ``DEFAULT_OBJECTIVE``
    for the strategy, else "instructions"."""
    if strategy not in STRATEGIES:
        raise ValueError(f"unknown strategy {strategy!r} (known: {', '.join(STRATEGIES)})")
    objective = objective or DEFAULT_OBJECTIVE.get(strategy, "instructions")
    if objective not in OBJECTIVES:
        raise ValueError(f"unknown objective {objective!r} (known: {', '.join(OBJECTIVES)})")
    if objective != "cycles":
        core = None                     # the count does not depend on the core
    return _lower(netlist, strategy, objective, core)


@lru_cache(maxsize=None)
def _lower(netlist: Netlist, strategy: str, objective: str, core: Core | None) -> Lowering:
    return STRATEGIES[strategy][1](netlist, objective, core)


def run(lowering: Lowering, inputs=INPUTS, mask: int = ALL) -> list[int]:
    """Interpret the lowered code; returns the output lane vectors."""
    regs: dict[int, int] = dict(zip(lowering.inputs, inputs))
    memory: dict[int, int] = {}

    def read(x):
        if isinstance(x, int):
            if x not in regs:
                raise RuntimeError(f"{lowering.strategy}: v{x} read before it is written")
            return regs[x]
        if is_mem(x):
            if x[1] not in memory:
                raise RuntimeError(f"{lowering.strategy}: slot {x[1]} read before written")
            return memory[x[1]]
        if x == ONES:
            return mask
        raise ValueError(f"bad operand {x!r}")

    for ins in lowering.code:
        if ins.op in DESTRUCTIVE or (lowering.two_operand and ins.kind in ("logic", "not")):
            if ins.srcs[0] != ins.dst:
                raise RuntimeError(f"{ins}: a destructive instruction must overwrite its "
                                   "first source")
        value = SEMANTICS[ins.op]([read(s) for s in ins.srcs], mask, ins.imm)
        if is_mem(ins.dst):
            memory[ins.dst[1]] = value
        else:
            regs[ins.dst] = value
    return [regs[r] for r in lowering.outputs]


def check_lowering(lowering: Lowering, forward: bool = True):
    """The S-box check, run through the lowered instructions."""
    return check_outputs(f"{lowering.netlist}/{lowering.strategy}", run(lowering), forward)
