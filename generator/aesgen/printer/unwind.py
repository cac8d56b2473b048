"""Unwind directives from the frame pass's FrameSteps: DWARF CFI (ELF, Mach-O) and Win64 SEH.

The frame pass (passes/frame.py) says what each prologue and epilogue instruction did; one
``UnwindWriter`` a function follows the canonical frame address (CFA: the stack pointer
before the call) through them and writes what the flavour's unwinder needs after each:

- CFI: ``.cfi_def_cfa_offset`` when the stack pointer moves, ``.cfi_offset`` where a
  register is saved, ``.cfi_restore`` when it is back, ``.cfi_negate_ra_state`` around a
  signed return address (AArch64 PAC). An epilogue in the middle of a function is wrapped
  in ``.cfi_remember_state`` / ``.cfi_restore_state``, so the code after its ret unwinds
  with the whole frame again.
- SEH: ``.seh_pushreg``, ``.seh_stackalloc``, ``.seh_savexmm`` and ``.seh_endprologue``
  (the assembler turns them into UNWIND_INFO codes); Windows finds epilogues by reading
  the code (add rsp / pops / ret), so they need no directive.

DWARF register numbers: x86-64 psABI 3.6.2 (xmm0-15 are 17-32); AArch64 DWARF (x0-x30 are
0-30, v0-v31 64-95).
"""
from __future__ import annotations

from ..dsl.ir import FrameStep
from ..dsl.operands import A64_VEC, VEC, Reg
from .flavours import Flavour


def _dwarf(reg: Reg, arch: str) -> str:
    if arch == "aarch64":
        return str(64 + reg.id if reg.cls == A64_VEC else reg.id)
    if reg.cls == VEC:
        return str(17 + reg.id)
    return f"%{reg.name()}"


class UnwindWriter:
    """The directives of one function's FrameSteps, in order."""

    def __init__(self, flavour: Flavour) -> None:
        self.flavour = flavour
        self.arch = flavour.arch
        self.cfa = 8 if flavour.arch == "x86_64" else 0    # x86: the return address
        self.saved_cfa: list[int] = []
        self.remembered = False

    def step(self, s: FrameStep) -> list[str]:
        if self.flavour.unwind == "seh":
            return self._seh(s)
        return self._cfi(s)

    def _seh(self, s: FrameStep) -> list[str]:
        if self.arch != "x86_64":
            raise ValueError("SEH unwind data is written for x86-64 only")
        if s.kind == "push":
            return [f"\t.seh_pushreg\t%{s.reg.name()}"]
        if s.kind == "alloc":
            return [f"\t.seh_stackalloc\t{s.offset}"]
        if s.kind == "save":
            if s.reg.cls != VEC:
                raise ValueError(f"SEH saves vector registers here, not {s.reg!r}")
            return [f"\t.seh_savexmm\t%xmm{s.reg.id}, {s.offset}"]
        if s.kind == "prologue_end":
            return ["\t.seh_endprologue"]
        return []

    def _cfi(self, s: FrameStep) -> list[str]:
        kind = s.kind
        if kind == "epilogue":
            self.saved_cfa.append(self.cfa)
            self.remembered = False
            return []
        if kind == "epilogue_end":
            cfa = self.saved_cfa.pop()
            if not self.remembered:
                return []
            self.cfa = cfa
            return ["\t.cfi_restore_state"]
        out = []
        if self.saved_cfa and not self.remembered and kind != "prologue_end":
            out.append("\t.cfi_remember_state")       # before the epilogue's first change
            self.remembered = True
        if kind == "push":
            self.cfa += 8
            out += [f"\t.cfi_def_cfa_offset\t{self.cfa}",
                    f"\t.cfi_offset\t{_dwarf(s.reg, self.arch)}, {-self.cfa}"]
        elif kind == "alloc":
            self.cfa += s.offset
            out.append(f"\t.cfi_def_cfa_offset\t{self.cfa}")
        elif kind == "save":
            out.append(f"\t.cfi_offset\t{_dwarf(s.reg, self.arch)}, {s.offset - self.cfa}")
        elif kind == "restore":
            out.append(f"\t.cfi_restore\t{_dwarf(s.reg, self.arch)}")
        elif kind == "free":
            self.cfa -= s.offset
            out.append(f"\t.cfi_def_cfa_offset\t{self.cfa}")
        elif kind == "pop":
            self.cfa -= 8
            out += [f"\t.cfi_def_cfa_offset\t{self.cfa}",
                    f"\t.cfi_restore\t{_dwarf(s.reg, self.arch)}"]
        elif kind in ("sign_return", "auth_return"):
            out.append("\t.cfi_negate_ra_state")
        return out
