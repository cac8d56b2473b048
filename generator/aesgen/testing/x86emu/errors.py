"""The emulator's exceptions: EmulatorError and its ParseError, UnsupportedInstruction,
ExecutionError and MemoryFault (which names the faulting instruction and nearest region)."""
from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .operands import Insn


class EmulatorError(Exception):
    """Base of the emulator's errors."""


class ParseError(EmulatorError):
    pass


class UnsupportedInstruction(EmulatorError):
    """An instruction (mnemonic and operand form) the emulator does not implement."""


class ExecutionError(EmulatorError):
    """The run went wrong: bad return address, clobbered callee-saved register, too many
    steps, a #GP-like condition (misaligned legacy/aligned vector access)."""


class MemoryFault(EmulatorError):
    """An access to bytes outside every allocated region (or a write to read-only data)."""

    def __init__(self, addr: int, size: int, write: bool, detail: str = "") -> None:
        super().__init__()
        self.addr, self.size, self.write, self.detail = addr, size, write, detail
        self.insn: Insn | None = None
        self.where = ""

    def __str__(self) -> str:
        what = "write" if self.write else "read"
        text = f"{what} of {self.size} byte(s) at {self.addr:#x}"
        if self.detail:
            text += f" ({self.detail})"
        if self.where:
            text += f"; {self.where}"
        if self.insn is not None:
            text = f"{self.insn.location()}: `{self.insn.text}`: {text}"
        return text
