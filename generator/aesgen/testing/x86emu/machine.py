"""Machine: the registers, memory made of regions with unmapped gaps (an access outside one
faults), the load/store accessors the handlers call, and call/run (System V convention)."""
from __future__ import annotations

import random
from collections import Counter

from .errors import ExecutionError, MemoryFault
from .layout import GAP, LOW_LIMIT, SENTINEL
from .operands import GPR64, RAX, RBP, RBX, RCX, RDI, RDX, RSI, RSP
from .program import Program
from .semantics import F_LOGIC, M64, M128, M256, bit_runs, flags_x

ARG_REGS = (RDI, RSI, RDX, RCX, 8, 9)
CALLEE_SAVED = (RBX, RBP, 12, 13, 14, 15)


class Machine:
    """Registers, memory and the run loop for one Program.

    Registers: ``R`` (16 GPRs, unsigned 64-bit ints), ``V`` (zmm0-31 as 512-bit ints),
    ``K`` (k0-7). ``executed`` counts instructions run by all calls; ``counts()`` gives
    them per mnemonic. The decoded instructions reach memory through ``load`` and ``store``
    and their ``_aligned`` and ``_masked`` forms (integers, little-endian; faults as in
    ``read`` and ``write``).
    """

    def __init__(self, program: Program, *, stack_size: int = 1 << 16, seed: int = 1,
                 max_steps: int = 200_000_000) -> None:
        self.program = program
        self.R = [0] * 16
        self.V = [0] * 32
        self.K = [0] * 8
        self.FL = [(F_LOGIC, 0, 0, 0, 64, 0)]
        self.max_steps = max_steps
        self.executed = 0
        self._hits = [0] * len(program.insns)
        self._rng = random.Random(seed)
        n = len(program.insns)
        self._code = [self._stub(i) for i in range(n)]
        # memory: one bytearray indexed by address, with per-byte read/write permissions
        self.mem = bytearray(LOW_LIMIT)
        self.rd = bytearray(LOW_LIMIT)
        self.wr = bytearray(LOW_LIMIT)
        self.regions: dict[int, tuple[int, str]] = {}     # start -> (size, name)
        self._free: list[tuple[int, int]] = []            # freed (slot start, slot end)
        if program.rodata:
            self._map(program.RODATA_BASE, bytes(program.rodata), ".rodata", writable=False)
        if program.data:
            self._map(program.data_base, bytes(program.data), ".data", writable=True)
        self._make_accessors()
        self.stack = self.alloc(stack_size, align=64, name="stack")
        self.stack_top = self.stack + stack_size

    # --- memory -----------------------------------------------------------------------------
    def _grow(self, end: int) -> None:
        if end > len(self.mem):
            extra = end - len(self.mem)
            self.mem.extend(bytes(extra))
            self.rd.extend(bytes(extra))
            self.wr.extend(bytes(extra))

    def _map(self, start: int, data: bytes, name: str, writable: bool = True) -> None:
        end = start + len(data)
        self._grow(end + GAP)
        self.mem[start:end] = data
        self.rd[start:end] = b"\x01" * len(data)
        if writable:
            self.wr[start:end] = b"\x01" * len(data)
        self.regions[start] = (len(data), name)

    def alloc(self, size_or_bytes, align: int = 64, name: str = "", offset: int = 0) -> int:
        """A new region of ``size`` bytes (or holding the given bytes) whose start is
        ``offset`` bytes past an ``align``-aligned address; unmapped gaps on both sides.
        Fresh memory holds a fixed pseudo-random pattern, never zeros by luck."""
        if isinstance(size_or_bytes, int):
            size = size_or_bytes
            data = self._rng.randbytes(size)
        else:
            data = bytes(size_or_bytes)
            size = len(data)
        if size < 0 or align <= 0 or align & (align - 1):
            raise ValueError("bad size or alignment")
        need = size + GAP
        start = None
        for n, (lo, hi) in enumerate(self._free):
            s = ((lo + GAP + align - 1) // align) * align + offset
            if s + need <= hi:
                start = s
                del self._free[n]
                break
        if start is None:
            base = max(len(self.mem), LOW_LIMIT)
            start = ((base + GAP + align - 1) // align) * align + offset
        self._grow(start + size + GAP)
        self._map(start, data, name or f"region{len(self.regions)}")
        return start

    def alloc_end(self, size_or_bytes, name: str = "") -> int:
        """A region whose last byte is the last mapped byte before a gap: any access past
        ``start + size`` faults at once. The start is unaligned unless size is."""
        size = size_or_bytes if isinstance(size_or_bytes, int) else len(size_or_bytes)
        offset = (-size) % 64
        return self.alloc(size_or_bytes, align=64, name=name, offset=offset)

    def free(self, addr: int) -> None:
        size, _ = self.regions.pop(addr)
        self.rd[addr:addr + size] = bytes(size)
        self.wr[addr:addr + size] = bytes(size)
        self._free.append((addr - GAP, addr + size + GAP))

    def read(self, addr: int, n: int) -> bytes:
        if n and (addr < 0 or addr + n > len(self.mem) or self.rd.find(0, addr, addr + n) >= 0):
            raise self._fault(addr, n, False)
        return bytes(self.mem[addr:addr + n])

    def write(self, addr: int, data: bytes) -> None:
        n = len(data)
        if n and (addr < 0 or addr + n > len(self.mem) or self.wr.find(0, addr, addr + n) >= 0):
            raise self._fault(addr, n, True)
        self.mem[addr:addr + n] = data

    def region_of(self, addr: int):
        for start, (size, name) in self.regions.items():
            if start <= addr < start + size:
                return start, size, name
        return None

    def _fault(self, addr: int, n: int, write: bool, detail: str = "") -> MemoryFault:
        f = MemoryFault(addr, n, write, detail)
        perm = self.wr if write else self.rd
        bad = None
        if 0 <= addr < len(perm):
            hit = perm.find(0, addr, min(addr + n, len(perm)))
            bad = hit if hit >= 0 else None
        if bad is None and addr + n > len(perm):
            bad = max(addr, len(perm))
        if bad is not None:
            near = None
            for start, (size, name) in self.regions.items():
                if start <= bad < start + size:
                    near = f"byte {bad:#x} is in read-only {name!r}"
                    break
                dist = bad - (start + size) if bad >= start + size else start - bad
                if near is None or dist < near[0]:
                    near = (dist, f"byte {bad:#x} is {bad - (start + size) + 1} byte(s) past "
                                  f"the end of {name!r} [{start:#x}, {start + size:#x})"
                            if bad >= start + size else
                            f"byte {bad:#x} is {start - bad} byte(s) before {name!r} "
                            f"[{start:#x}, {start + size:#x})")
            if isinstance(near, tuple):
                near = near[1]
            f.where = near or f"byte {bad:#x} is unmapped"
        return f

    def _make_accessors(self) -> None:
        mem, rd, wr = self.mem, self.rd, self.wr
        fault = self._fault
        frombytes = int.from_bytes

        def load(a, n):
            if a + n > len(mem) or rd.find(0, a, a + n) >= 0:
                raise fault(a, n, False)
            return frombytes(mem[a:a + n], "little")

        def store(a, n, v):
            if a + n > len(mem) or wr.find(0, a, a + n) >= 0:
                raise fault(a, n, True)
            mem[a:a + n] = v.to_bytes(n, "little")

        def load_aligned(a, n, align):
            if a % align:
                raise ExecutionError(f"#GP: {n}-byte aligned access at {a:#x}, not a "
                                     f"multiple of {align}")
            return load(a, n)

        def store_aligned(a, n, v, align):
            if a % align:
                raise ExecutionError(f"#GP: {n}-byte aligned access at {a:#x}, not a "
                                     f"multiple of {align}")
            store(a, n, v)

        def load_masked(a, n, esize, k, align):
            if align and a % align:
                raise ExecutionError(f"#GP: aligned masked load at {a:#x}")
            eb = esize // 8
            v = 0
            for first, count in bit_runs(k):
                lo, ln = a + first * eb, count * eb
                if lo + ln > len(mem) or rd.find(0, lo, lo + ln) >= 0:
                    raise fault(lo, ln, False, f"enabled elements {first}..{first + count - 1}"
                                               f" of a masked load")
                v |= frombytes(mem[lo:lo + ln], "little") << (8 * first * eb)
            return v

        def store_masked(a, n, esize, k, v, align):
            if align and a % align:
                raise ExecutionError(f"#GP: aligned masked store at {a:#x}")
            eb = esize // 8
            runs = list(bit_runs(k))
            for first, count in runs:           # check everything before writing anything
                lo, ln = a + first * eb, count * eb
                if lo + ln > len(mem) or wr.find(0, lo, lo + ln) >= 0:
                    raise fault(lo, ln, True, f"enabled elements {first}..{first + count - 1}"
                                              f" of a masked store")
            for first, count in runs:
                lo, ln = a + first * eb, count * eb
                mem[lo:lo + ln] = ((v >> (8 * first * eb)) & ((1 << (8 * ln)) - 1)).to_bytes(
                    ln, "little")

        self.load, self.store = load, store
        self.load_aligned, self.store_aligned = load_aligned, store_aligned
        self.load_masked, self.store_masked = load_masked, store_masked

    # --- running ----------------------------------------------------------------------------
    def _stub(self, i: int):
        def stub():
            f = self.program.factory(i)(self, i + 1)
            self._code[i] = f
            return f()
        return stub

    def poison(self) -> None:
        """Random values in every register a callee may not rely on: caller-saved GPRs,
        all vector registers (all 512 bits), all mask registers, the flags."""
        rng = self._rng
        for r in (RAX, RCX, RDX, RSI, RDI, 8, 9, 10, 11):
            self.R[r] = rng.getrandbits(64)
        for i in range(32):
            self.V[i] = rng.getrandbits(512)
        for i in range(8):
            self.K[i] = rng.getrandbits(64)
        self.FL[0] = flags_x(rng.getrandbits(64) | 1, 64, rng.getrandbits(1), rng.getrandbits(1))

    def call(self, symbol: str, *args: int, poison: bool = True) -> int:
        """Call ``symbol`` with the System V AMD64 convention; returns rax.

        Integer arguments go to rdi, rsi, rdx, rcx, r8, r9, the rest on the stack (rsp is
        16-byte aligned at the call, then the return address is pushed). After the return,
        rbx, rbp, r12-r15 and rsp must be as before."""
        entry = self.program.entry(symbol)
        if poison:
            self.poison()
        R = self.R
        for n, reg in enumerate(ARG_REGS[:len(args)]):
            R[reg] = args[n] & M64
        stack_args = [a & M64 for a in args[6:]]
        top = (self.stack_top - 128) & ~15
        sp = top - 8 * len(stack_args)
        sp &= ~15                                   # aligned at the call instruction
        for n, v in enumerate(stack_args):
            self.store(sp + 8 * n, 8, v)
        sp -= 8
        self.store(sp, 8, SENTINEL)
        R[RSP] = sp
        if poison:
            for r in CALLEE_SAVED:
                R[r] = self._rng.getrandbits(64)
        saved = [R[r] for r in CALLEE_SAVED]
        self._run(entry)
        if R[RSP] != sp + 8:
            raise ExecutionError(f"{symbol}: rsp after return is {R[RSP]:#x}, not "
                                 f"{sp + 8:#x}")
        for r, v in zip(CALLEE_SAVED, saved):
            if R[r] != v:
                raise ExecutionError(f"{symbol}: callee-saved {GPR64[r]} changed "
                                     f"({v:#x} -> {R[r]:#x})")
        return R[RAX]

    def _run(self, pc: int) -> None:
        code, hits = self._code, self._hits
        limit = self.max_steps
        n = 0
        try:
            while pc >= 0:
                hits[pc] += 1
                n += 1
                if n > limit:
                    raise ExecutionError(f"more than {limit} instructions: stopped at "
                                         f"{self.program.insns[pc]}")
                pc = code[pc]()
        except MemoryFault as e:
            if e.insn is None:
                e.insn = self.program.insns[pc]
            raise
        except ExecutionError as e:
            ins = self.program.insns[pc]
            if not str(e).startswith(ins.location()):
                raise ExecutionError(f"{ins.location()}: `{ins.text}`: {e}") from None
            raise
        finally:
            self.executed += n

    def counts(self) -> Counter:
        """Executed instructions per mnemonic (all calls so far)."""
        c: Counter = Counter()
        for ins, h in zip(self.program.insns, self._hits):
            if h:
                c[ins.mnemonic] += h
        return c

    # --- register views ---------------------------------------------------------------------
    def xmm(self, i: int) -> int:
        return self.V[i] & M128

    def ymm(self, i: int) -> int:
        return self.V[i] & M256

    def zmm(self, i: int) -> int:
        return self.V[i]
