"""Derive an AES S-box circuit from a tower of fields, then share its XORs.

The construction (the composite-field approach of Satoh et al. and Canright, "A Very Compact
S-box for AES", CHES 2005, written here from the field algebra, not from their circuits):

    GF(2^8) = GF(16)[Y]/(Y^2 + Y + nu),  GF(16) = GF(4)[Z]/(Z^2 + Z + N),
    GF(4) = GF(2)[W]/(W^2 + W + 1)

with, at each level, either the normal basis {g^q, g} or the polynomial basis {g, 1} of a
root g. All three roots are found inside the AES field itself, so every basis element is an
ordinary GF(2^8) element and every constant map below is computed numerically with the
model's ``gf_mul`` instead of being derived by hand.

Inversion of a = a1*b1 + a0*b0 in GF(q^2) over GF(q) (b1, b0 the level's basis):
    d = a^(q+1) = N(b1) a1^2 + N(b0) a0^2 + T a1 a0      (one GF(q) product, the rest linear)
    a^-1 = d^-1 * a^q  = (d^-1 c1) b1 + (d^-1 c0) b0     (a^q = c1 b1 + c0 b0 is linear in a)
recursively down to GF(4), where the inverse is the square (linear). GF(q) products are
Karatsuba: a1b1, a0b0, (a1+a0)(b1+b0), recombined linearly. That makes 9 + 9 + 18 = 36 AND
gates; everything else is XOR.

Every wire is tracked as a *linear form* over "atoms" (the 8 input bits, the AND gates'
outputs and, optionally, wires given to the norm d and its inverse). AND operands and the
8 outputs are such forms; the change of basis into the tower, the affine output map and
the 0x63 constant are folded into them. The forms are then built from shared XORs, stage
by stage (a form may use only wires of its own stage or earlier, so sharing never makes a
cycle), by either
  * ``slp``: the shortest-linear-program heuristic of Boyar and Peralta ("A new
    combinational logic minimization technique with applications to cryptology", SEA
    2010): keep the distance of every target from the wires built so far and add the XOR
    of two wires that reduces the total distance most; cancellation is allowed; or
  * ``paar``: Paar's greedy ("Optimized arithmetic for Reed-Solomon encoders", ISIT 1997):
    the pair of wires occurring together in the most targets first, no cancellation.
Ties are broken by a seeded random choice. An output whose form has constant 1 ends in an
XNOR; when that XOR also feeds other XORs they are flipped to XNOR too, so they compute
what they did, and a NOT is used only where that cannot work. ``search`` tries every
tower (432 basis choices) with several tie-break seeds and keeps the smallest circuit.
"""
from __future__ import annotations

import random
from dataclasses import dataclass
from functools import cached_property
from itertools import product

from ..model.aes import SBOX, gf_mul, gf_pow
from .format import Gate, Netlist

# ------------------------------------------------------------------------------------------
# GF(2^8) helpers (the AES field, polynomial basis, bit 7 = x^7)
# ------------------------------------------------------------------------------------------



def roots(coeffs: tuple[int, int, int]) -> list[int]:
    """Roots in GF(2^8) of c2*y^2 + c1*y + c0."""
    c2, c1, c0 = coeffs
    return [y for y in range(256) if gf_mul(c2, gf_mul(y, y)) ^ gf_mul(c1, y) ^ c0 == 0]


@dataclass(frozen=True)
class Level:
    """GF(2^k) as a subfield of GF(2^8), with a GF(2)-basis of ``k`` field elements.

    For k > 1 the basis is [s * hi for s in sub.basis] + [s * lo for s in sub.basis]: the
    level's basis {hi, lo} over the subfield times the subfield's basis, so coordinate
    vectors split into the hi and lo subfield elements.
    """

    k: int
    basis: tuple[int, ...]
    sub: "Level | None" = None
    hi: int = 1
    lo: int = 0

    @cached_property
    def _coords(self) -> dict[int, tuple[int, ...]]:
        table = {}
        for bits in product((0, 1), repeat=self.k):
            e = 0
            for bit, b in zip(bits, self.basis):
                if bit:
                    e ^= b
            table[e] = bits
        if len(table) != 1 << self.k:
            raise ValueError("basis elements are not independent")
        return table

    def coords(self, e: int) -> tuple[int, ...]:
        return self._coords[e]

    @property
    def q(self) -> int:
        """Size of the subfield: this level is GF(q^2)."""
        return 1 << (self.k // 2)


GF2 = Level(1, (1,))


def make_level(sub: Level, hi: int, lo: int) -> Level:
    basis = tuple(gf_mul(s, hi) for s in sub.basis) + tuple(gf_mul(s, lo) for s in sub.basis)
    return Level(2 * sub.k, basis, sub, hi, lo)


@dataclass(frozen=True)
class Tower:
    """One choice of roots and bases; ``describe`` says which."""

    w: int               # root of w^2 + w + 1
    w_normal: bool
    n: int               # N in GF(4), z^2 + z + N irreducible over GF(4)
    z: int
    z_normal: bool
    nu: int              # nu in GF(16), y^2 + y + nu irreducible over GF(16)
    y: int
    y_normal: bool

    @cached_property
    def levels(self) -> tuple[Level, Level, Level]:
        def basis(g: int, q: int, normal: bool) -> tuple[int, int]:
            return (gf_pow(g, q), g) if normal else (g, 1)
        l4 = make_level(GF2, *basis(self.w, 2, self.w_normal))
        l16 = make_level(l4, *basis(self.z, 4, self.z_normal))
        l256 = make_level(l16, *basis(self.y, 16, self.y_normal))
        return l4, l16, l256

    def describe(self) -> str:
        def b(normal: bool, g: str, q: int) -> str:
            return f"normal {{{g}^{q}, {g}}}" if normal else f"polynomial {{{g}, 1}}"
        return (f"GF(4): W={self.w:#04x}, {b(self.w_normal, 'W', 2)}; "
                f"GF(16): Z^2+Z+N, N={self.n:#04x}, Z={self.z:#04x}, "
                f"{b(self.z_normal, 'Z', 4)}; "
                f"GF(256): Y^2+Y+nu, nu={self.nu:#04x}, Y={self.y:#04x}, "
                f"{b(self.y_normal, 'Y', 16)} (elements in the AES polynomial basis)")


def all_towers() -> list[Tower]:
    """Every tower with trace-1 defining polynomials: 432 basis choices (Canright's count).

    A normal basis {g^q, g} is the same for both roots of the polynomial, a polynomial
    basis {g, 1} is not: 3 choices at each level, times 2 for N and 8 for nu.
    """
    towers = []
    w_roots = roots((1, 1, 1))
    gf4 = [0, 1, *w_roots]
    gf16 = [e for e in range(256) if gf_pow(e, 16) == e]

    def extends(sub: list[int], coeffs) -> list[int]:
        """Roots of an irreducible quadratic over ``sub`` (none there, two in GF(2^8))."""
        r = roots(coeffs)
        return r if len(r) == 2 and not any(x in sub for x in r) else []

    for w_normal in (True, False):
        for w in (w_roots[:1] if w_normal else w_roots):
            for n in gf4:
                z_roots = extends(gf4, (1, 1, n))
                for z_normal in (True, False) if z_roots else ():
                    for z in (z_roots[:1] if z_normal else z_roots):
                        for nu in gf16:
                            y_roots = extends(gf16, (1, 1, nu))
                            for y_normal in (True, False) if y_roots else ():
                                for y in (y_roots[:1] if y_normal else y_roots):
                                    towers.append(Tower(w, w_normal, n, z, z_normal,
                                                        nu, y, y_normal))
    return towers


# ------------------------------------------------------------------------------------------
# symbolic construction over linear forms
# ------------------------------------------------------------------------------------------

class Circuit:
    """AND gates over linear forms (int bit masks over atoms); atoms 0..7 are the inputs.

    An atom is an input bit, an AND gate's output, or (``materialize``) a linear form given
    a wire of its own. ``stage`` orders the linear synthesis: a form is built from signals
    of its own stage or earlier, and a gate fed by stage s is an atom of stage s + 1, so no
    sharing choice can create a cycle.
    """

    def __init__(self, n_inputs: int = 8) -> None:
        self.n_inputs = n_inputs
        self.stage = [0] * n_inputs
        self.kind = ["in"] * n_inputs
        self.defs: dict[int, tuple[int, ...]] = {}      # atom -> defining form(s)
        self.ands: dict[tuple[int, int], int] = {}      # (form, form) -> atom
        self.lins: dict[int, int] = {}                  # form -> materialized atom

    @property
    def n_atoms(self) -> int:
        return len(self.stage)

    def form_stage(self, form: int) -> int:
        return max(self.stage[i] for i in range(self.n_atoms) if (form >> i) & 1)

    def _atom(self, kind: str, stage: int, defs: tuple[int, ...]) -> int:
        atom = self.n_atoms
        self.stage.append(stage)
        self.kind.append(kind)
        self.defs[atom] = defs
        return atom

    def AND(self, a: int, b: int) -> int:
        if a == 0 or b == 0:
            return 0
        key = (min(a, b), max(a, b))
        atom = self.ands.get(key)
        if atom is None:
            atom = self._atom("and", 1 + max(self.form_stage(a), self.form_stage(b)), key)
            self.ands[key] = atom
        return 1 << atom

    def materialize(self, form: int) -> int:
        """A wire for ``form``; later forms refer to it as one atom."""
        if form & (form - 1) == 0:
            return form
        atom = self.lins.get(form)
        if atom is None:
            atom = self._atom("lin", 1 + self.form_stage(form), (form,))
            self.lins[form] = atom
        return 1 << atom

    def targets(self) -> list[int]:
        """Every form that must exist as a wire, outputs aside."""
        return sorted({f for d in self.defs.values() for f in d})

    def and_atoms(self) -> list[int]:
        return [a for a in range(self.n_atoms) if self.kind[a] == "and"]


def linear_map(level_in: Level, level_out: Level, f) -> list[list[int]]:
    """Matrix (rows = output coords) of the GF(2)-linear map f from level_in to level_out."""
    cols = [level_out.coords(f(b)) for b in level_in.basis]
    return [[cols[j][i] for j in range(level_in.k)] for i in range(level_out.k)]


def apply(matrix: list[list[int]], vec: list[int]) -> list[int]:
    out = []
    for row in matrix:
        acc = 0
        for bit, form in zip(row, vec):
            if bit:
                acc ^= form
        out.append(acc)
    return out


def xor_vec(a: list[int], b: list[int]) -> list[int]:
    return [x ^ y for x, y in zip(a, b)]


def sym_mul(c: Circuit, level: Level, a: list[int], b: list[int]) -> list[int]:
    """Product in ``level`` of two coordinate vectors of forms (Karatsuba, recursively)."""
    if level.k == 1:
        return [c.AND(a[0], b[0])]
    sub, h = level.sub, level.k // 2
    a1, a0, b1, b0 = a[:h], a[h:], b[:h], b[h:]
    p1 = sym_mul(c, sub, a1, b1)
    p0 = sym_mul(c, sub, a0, b0)
    pm = sym_mul(c, sub, xor_vec(a1, a0), xor_vec(b1, b0))
    hi, lo = level.hi, level.lo
    s1, s0, cross = gf_mul(hi, hi), gf_mul(lo, lo), gf_mul(hi, lo)
    # a*b = p1 hi^2 + p0 lo^2 + (pm + p1 + p0) hi lo
    m1 = linear_map(sub, level, lambda e: gf_mul(e, s1 ^ cross))
    m0 = linear_map(sub, level, lambda e: gf_mul(e, s0 ^ cross))
    mm = linear_map(sub, level, lambda e: gf_mul(e, cross))
    return xor_vec(xor_vec(apply(m1, p1), apply(m0, p0)), apply(mm, pm))


def sym_inv(c: Circuit, level: Level, a: list[int], materialize: bool) -> list[int]:
    """Inverse in ``level`` (0 -> 0); ``materialize`` gives the norm and its inverse wires."""
    if level.k == 1:
        return a
    q = level.q
    if level.k == 2:                          # GF(4): a^-1 = a^2, linear
        return apply(linear_map(level, level, lambda e: gf_mul(e, e)), a)
    sub, h = level.sub, level.k // 2
    hi, lo = level.hi, level.lo
    norm_hi, norm_lo = gf_pow(hi, q + 1), gf_pow(lo, q + 1)
    trace = gf_mul(hi, gf_pow(lo, q)) ^ gf_mul(lo, gf_pow(hi, q))
    a1, a0 = a[:h], a[h:]
    sq_hi = linear_map(sub, sub, lambda e: gf_mul(gf_mul(e, e), norm_hi))
    sq_lo = linear_map(sub, sub, lambda e: gf_mul(gf_mul(e, e), norm_lo))
    scale = linear_map(sub, sub, lambda e: gf_mul(e, trace))
    d = xor_vec(xor_vec(apply(sq_hi, a1), apply(sq_lo, a0)),
                apply(scale, sym_mul(c, sub, a1, a0)))
    if materialize:
        d = [c.materialize(f) for f in d]
    dinv = sym_inv(c, sub, d, materialize)
    if materialize:
        dinv = [c.materialize(f) for f in dinv]
    conj = apply(linear_map(level, level, lambda e: gf_pow(e, q)), a)
    return sym_mul(c, sub, dinv, conj[:h]) + sym_mul(c, sub, dinv, conj[h:])


def aes_bits(e: int) -> list[int]:
    """Bits of a byte, most significant first (the netlists' bit order)."""
    return [(e >> (7 - i)) & 1 for i in range(8)]


def sbox_forms(tower: Tower, materialize: bool = False) -> tuple[Circuit, list[int], list[int]]:
    """The circuit's atoms, the 8 output forms and their constants (MSB first)."""
    l256 = tower.levels[2]
    c = Circuit()
    # input bit i (MSB first) is atom i; tower coordinates are linear in the input bits
    to_tower = [[0] * 8 for _ in range(8)]
    for i in range(8):
        for j, bit in enumerate(l256.coords(1 << (7 - i))):
            to_tower[j][i] = bit
    a = apply(to_tower, [1 << i for i in range(8)])
    inv = sym_inv(c, l256, a, materialize)
    # output byte = affine(inverse): S(x) ^ S(0) is GF(2)-linear in the inverse
    rows = [[0] * 8 for _ in range(8)]
    for j, b in enumerate(l256.basis):
        inv_b = next(x for x in range(256) if gf_mul(x, b) == 1)   # element whose inverse is b
        for i, bit in enumerate(aes_bits(SBOX[inv_b] ^ SBOX[0])):
            rows[i][j] = bit
    outs = apply(rows, inv)
    return c, outs, aes_bits(SBOX[0])


# ------------------------------------------------------------------------------------------
# linear synthesis: shared XORs for every form, stage by stage
# ------------------------------------------------------------------------------------------

@dataclass
class Signals:
    """Wires of the linear layers: atoms first, then XORs of two earlier signals."""

    mask: list[int]                    # form over atoms
    deps: list[int]                    # atoms it is built from, cancelled ones included
    pair: list[tuple[int, int] | None]

    def add(self, i: int, j: int) -> int:
        self.mask.append(self.mask[i] ^ self.mask[j])
        self.deps.append(self.deps[i] | self.deps[j])
        self.pair.append((i, j))
        return len(self.mask) - 1

    def find(self, form: int) -> int:
        """The first signal carrying ``form`` (the earliest built, so never a later stage)."""
        return self.mask.index(form)


def paar_local(n: int, base: list[int], targets: list[int], rng: random.Random | None
               ) -> list[tuple[int, int]]:
    """Paar's greedy, cancellation free: the pair of base signals in the most targets.

    ``base`` are vectors over n local coordinates and the first n of them are the unit
    vectors; returns pairs of base indices (new signals get indices len(base), ...).
    """
    index = {v: i for i, v in reversed(list(enumerate(base)))}
    sets = []
    for t in targets:
        if t in index:
            continue
        sets.append({index[1 << k] for k in range(n) if (t >> k) & 1})
    pairs: list[tuple[int, int]] = []
    nxt = len(base)
    while sets:
        count: dict[tuple[int, int], int] = {}
        for s in sets:
            items = sorted(s)
            for i, x in enumerate(items):
                for y in items[i + 1:]:
                    count[(x, y)] = count.get((x, y), 0) + 1
        best = max(count.values())
        tied = sorted(p for p, k in count.items() if k == best)
        pick = tied[0] if rng is None else rng.choice(tied)
        pairs.append(pick)
        for s in sets:
            if pick[0] in s and pick[1] in s:
                s -= set(pick)
                s.add(nxt)
        nxt += 1
        sets = [s for s in sets if len(s) > 1]
    return pairs


def slp_local(n: int, base: list[int], targets: list[int], rng: random.Random | None
              ) -> list[tuple[int, int]]:
    """The Boyar-Peralta shortest-linear-program heuristic (SEA 2010), with cancellation.

    Keeps, for every vector of GF(2)^n, the fewest base signals that sum to it; each step
    adds the sum of two base signals that most reduces the targets' total distance (ties:
    the larger Euclidean norm of the distance vector, then ``rng``), and takes a target
    outright whenever it is one XOR away.
    """
    import numpy as np

    size = 1 << n
    idx = np.arange(size, dtype=np.int64)
    dist = np.full(size, 127, dtype=np.int16)
    dist[0] = 0
    vecs = list(base)
    for v in vecs:
        dist = np.minimum(dist, dist[idx ^ v] + 1)
    want = np.array(sorted(set(targets)), dtype=np.int64)
    pairs: list[tuple[int, int]] = []
    position = {v: i for i, v in reversed(list(enumerate(vecs)))}

    def add(i: int, j: int) -> None:
        nonlocal dist
        v = vecs[i] ^ vecs[j]
        pairs.append((i, j))
        position.setdefault(v, len(vecs))
        vecs.append(v)
        dist = np.minimum(dist, dist[idx ^ v] + 1)

    while True:
        d = dist[want]
        if int(d.max()) <= 1:
            return pairs
        # a target one XOR away: take it
        near = [int(t) for t, k in zip(want, d) if k == 2]
        if near:
            t = near[0] if rng is None else rng.choice(near)
            for i, v in enumerate(vecs):
                j = position.get(t ^ v)
                if j is not None and j != i:
                    add(i, j)
                    break
            continue
        arr = np.array(vecs, dtype=np.int64)
        ii, jj = np.triu_indices(len(vecs), 1)
        cand = arr[ii] ^ arr[jj]
        keep = (cand != 0) & (dist[cand] > 1)
        ii, jj, cand = ii[keep], jj[keep], cand[keep]
        new = np.minimum(d[None, :], dist[cand[:, None] ^ want[None, :]] + 1)
        total = new.sum(axis=1)
        norm = ((new - 1) ** 2).sum(axis=1)
        score = total.astype(np.int64) * 100000 - norm
        best = np.flatnonzero(score == score.min())
        k = int(best[0]) if rng is None else int(rng.choice(list(best)))
        add(int(ii[k]), int(jj[k]))


METHODS = {"paar": paar_local, "slp": slp_local}


def synthesize(c: Circuit, outputs: list[int], method: str = "slp",
               rng: random.Random | None = None, max_dim: int = 20) -> Signals:
    """XOR signals for every form of ``c`` and the outputs, stage by stage."""
    sig = Signals([1 << a for a in range(c.n_atoms)], [1 << a for a in range(c.n_atoms)],
                  [None] * c.n_atoms)
    by_stage: dict[int, set[int]] = {}
    for f in [*c.targets(), *outputs]:
        by_stage.setdefault(c.form_stage(f), set()).add(f)
    for stage in sorted(by_stage):
        forms = sorted(by_stage[stage])
        support = 0
        for f in forms:
            support |= f
        atoms = [a for a in range(c.n_atoms) if (support >> a) & 1]
        local = {a: k for k, a in enumerate(atoms)}

        def to_local(mask: int) -> int:
            return sum(1 << local[a] for a in atoms if (mask >> a) & 1)

        # base: the atoms themselves, then earlier signals made only of these atoms
        base_ids = [sig.find(1 << a) for a in atoms]
        for s in range(c.n_atoms, len(sig.mask)):
            if sig.deps[s] & ~support == 0 and sig.mask[s] not in (sig.mask[b] for b in base_ids):
                base_ids.append(s)
        base = [to_local(sig.mask[s]) for s in base_ids]
        fn = METHODS[method] if len(atoms) <= max_dim else paar_local
        for i, j in fn(len(atoms), base, [to_local(f) for f in forms], rng):
            base_ids.append(sig.add(base_ids[i], base_ids[j]))
        for f in forms:
            sig.find(f)     # raises if a form was not built
    return sig


# ------------------------------------------------------------------------------------------
# netlist emission
# ------------------------------------------------------------------------------------------

def build_netlist(tower: Tower, seed: int | None = None, *, method: str = "slp",
                  materialize: bool = False, name: str = "tower") -> Netlist:
    """The S-box circuit of ``tower``; ``seed`` picks tie-breaks (None: the first)."""
    c, outs, const = sbox_forms(tower, materialize)
    rng = None if seed is None else random.Random(seed)
    sig = synthesize(c, outs, method, rng)

    def resolve(s: int) -> int:
        """A materialized atom is the signal that builds its form."""
        while s < c.n_atoms and c.kind[s] == "lin":
            s = sig.find(c.defs[s][0])
        return s

    # producers over resolved signals: AND atoms and XOR signals
    producer: dict[int, tuple[str, tuple[int, ...]]] = {}
    for a in c.and_atoms():
        fa, fb = c.defs[a]
        producer[a] = ("AND", (resolve(sig.find(fa)), resolve(sig.find(fb))))
    for s in range(c.n_atoms, len(sig.mask)):
        i, j = sig.pair[s]
        producer[s] = ("XOR", (resolve(i), resolve(j)))
    out_sigs = [resolve(sig.find(f)) for f in outs]

    # keep what the outputs need, in a depth-first topological order
    order: list[int] = []
    seen: set[int] = set()

    def visit(s: int) -> None:
        stack = [(s, False)]
        while stack:
            t, done = stack.pop()
            if done:
                order.append(t)
                continue
            if t in seen or t < c.n_inputs:
                continue
            seen.add(t)
            stack.append((t, True))
            for u in reversed(producer[t][1]):
                stack.append((u, False))

    for s in out_sigs:
        visit(s)
    uses: dict[int, int] = {}
    for t in order:
        for u in producer[t][1]:
            uses[u] = uses.get(u, 0) + 1
    for s in out_sigs:
        uses[s] = uses.get(s, 0) + 1

    names: dict[int, str] = {i: f"x{i}" for i in range(c.n_inputs)}
    counters = {"AND": 0, "XOR": 0}
    for t in order:
        op = producer[t][0]
        names[t] = f"{'p' if op == 'AND' else 'l'}{counters[op]}"
        counters[op] += 1
    consumers: dict[int, list[int]] = {}
    for t in order:
        for u in producer[t][1]:
            consumers.setdefault(u, []).append(t)
    # The constant is free on an XOR: make it XNOR. If that XOR also feeds other XORs,
    # flip those too, so they compute what they did; a NOT only where that cannot work.
    flip: set[int] = set()
    out_names: list[str] = []
    nots: list[Gate] = []
    for i, s in enumerate(out_sigs):
        feeds = consumers.get(s, [])
        foldable = (const[i] and producer.get(s, ("",))[0] == "XOR"
                    and all(producer[t][0] == "XOR" for t in feeds)
                    and out_sigs.count(s) == 1)
        if foldable:
            flip ^= {s, *feeds}
        if const[i] and not foldable:
            nots.append(Gate("NOT", f"s{i}", names[s]))
            out_names.append(f"s{i}")
            continue
        if s >= c.n_inputs and not names[s].startswith("s"):
            names[s] = f"s{i}"
        out_names.append(names[s])
    gates = [Gate("XNOR" if t in flip else producer[t][0], names[t],
                  *(names[u] for u in producer[t][1])) for t in order] + nots
    source = ("derived by aesgen.netlist.derive (tower-field inversion after Satoh et al. "
              "2001 and Canright 2005) in " + tower.describe() + f"; linear layers by the "
              f"{'Boyar-Peralta SLP heuristic' if method == 'slp' else 'Paar greedy'}"
              f"{', norm and inverse materialized' if materialize else ''}, "
              f"tie-break seed {seed}")
    return Netlist(name, tuple(f"x{i}" for i in range(8)), tuple(out_names), tuple(gates),
                   source)


def search(seeds: int = 4, towers: list[Tower] | None = None, methods=("slp",),
           progress=None) -> tuple[Netlist, dict]:
    """The smallest circuit over ``towers`` (default: all 432), options and seeds."""
    best = None
    for t in towers if towers is not None else all_towers():
        for method in methods:
            for materialize in (False, True):
                for seed in [None, *range(seeds)]:
                    n = build_netlist(t, seed, method=method, materialize=materialize)
                    if best is None or n.size < best[0].size:
                        best = (n, dict(tower=t, seed=seed, method=method,
                                        materialize=materialize))
                        if progress:
                            progress(f"{n.size} gates: {n.source}")
    return best


# ------------------------------------------------------------------------------------------
# the derived circuits kept in library/
# ------------------------------------------------------------------------------------------

# Chosen by ``search()`` over all 432 towers, with and without materializing the norm and
# its inverse, tie-break seeds None and 0..3 (python -m aesgen.netlist.derive --search).
# The smallest found: 121 gates (36 AND, 81 XOR, 4 XNOR), normal bases at every level.
DERIVED = {
    "tower": dict(tower=Tower(w=0xBC, w_normal=True, n=0xBC, z=0x5C, z_normal=True,
                              nu=0xEC, y=0xFE, y_normal=True),
                  seed=1, materialize=True, method="slp"),
}


def derived_netlist(name: str) -> Netlist:
    p = DERIVED[name]
    return build_netlist(p["tower"], p["seed"], method=p["method"],
                         materialize=p["materialize"], name=name)


def derived_text(name: str) -> str:
    """The library file for a derived circuit: a comment header, then the netlist."""
    from .format import format_netlist

    n = derived_netlist(name)
    counts = ", ".join(f"{k} {op}" for op, k in n.gate_counts().items())
    header = [
        f"# AES S-box, derived by aesgen.netlist.derive: {n.size} gates ({counts}).",
        "# Generated file: regenerate with `python -m aesgen.netlist.derive --write`.",
        "#",
        "# Inversion in GF(2^8) through the tower GF(((2^2)^2)^2), with the change of basis",
        "# into the tower folded into the input layer and the affine map (0x63 as XNORs) into",
        "# the output layer. Wires: x = inputs, p = AND gates (the 36 subfield products),",
        "# l = XOR/XNOR of the linear layers, s = outputs.",
        "# Bit order: x0 is the most significant bit of the input byte, s0 of the output.",
    ]
    return "\n".join(header) + "\n" + format_netlist(n)


def main(argv: list[str] | None = None) -> int:
    import argparse
    from pathlib import Path

    parser = argparse.ArgumentParser(prog="python -m aesgen.netlist.derive",
                                     description=__doc__.splitlines()[0])
    parser.add_argument("--search", action="store_true",
                        help="try every tower and seed, print the best (minutes)")
    parser.add_argument("--seeds", type=int, default=4)
    parser.add_argument("--write", action="store_true",
                        help="rewrite the derived circuits in library/")
    args = parser.parse_args(argv)
    if args.search:
        n, params = search(args.seeds, progress=print)
        print(f"best: {n.size} gates {n.gate_counts()} {params}")
    if args.write:
        for name in DERIVED:
            path = Path(__file__).parent / "library" / f"{name}.net"
            path.write_text(derived_text(name))
            print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
