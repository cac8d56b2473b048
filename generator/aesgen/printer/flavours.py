"""Output flavours: the object format a .S file is written for, as data and directives.

A flavour is everything that differs between ELF, Mach-O and Win64 (COFF) text for GNU as
and clang: symbol and local-label spelling, section names, function start and end, the
notes that close a file, the preprocessor guard the file's text sits behind, and how the
frame pass's FrameSteps become unwind information (``unwind.py``: DWARF CFI or Win64 SEH).
The instruction printers (gas_x86_64.py, gas_aarch64.py) take one and write no
format-specific directive of their own.

The calling convention is not a printing matter: a win64 file holds kernels compiled under
the Microsoft x64 convention (KernelSpec.abi = "win64"); ``Flavour.abi`` says which.
"""
from __future__ import annotations

from dataclasses import dataclass

def _elf_notes(progbits: str, comment: str, explain: list[str], feature_and: int) -> str:
    """The notes that end an ELF file: no executable stack, and the GNU property note whose
    FEATURE_1_AND word (type ``feature_and``) says which control-flow protections every
    function of the file supports (bits 0 and 1 set: IBT and SHSTK on x86-64, BTI and PAC
    on AArch64), so a linker building a protected binary keeps them on."""
    lines = [f'\t.section\t.note.GNU-stack,"",{progbits}']
    lines += [f"{comment} {line}" for line in explain]
    lines += ['\t.section\t.note.gnu.property,"a"', "\t.p2align\t3", "\t.long\t4",
              "\t.long\t16", "\t.long\t5", '\t.asciz\t"GNU"', f"\t.long\t{feature_and:#x}",
              "\t.long\t4", "\t.long\t3", "\t.p2align\t3"]
    return "\n".join(lines) + "\n"


ELF_X86_64_NOTES = _elf_notes("@progbits", "#", [
    "CET: every entry point starts with endbr64 and returns with ret (IBT and SHSTK)."],
    0xc0000002)
ELF_AARCH64_NOTES = _elf_notes("%progbits", "//", [
    "BTI: every entry point starts with `bti c` (hint #34), a valid target of BLR.",
    "PAC: a function that stores lr (one that calls its data path) signs it first (paciasp)",
    "and authenticates it after loading it back (autiasp); leaves never touch it."],
    0xc0000000)


@dataclass(frozen=True)
class Flavour:
    name: str                 # "elf", "macho", "win64"
    arch: str                 # "x86_64", "aarch64"
    abi: str                  # the KernelSpec.abi its kernels are compiled under
    guard: str                # the preprocessor condition a file of it is assembled under
    title: str                # what the file header says it is for
    symbol_prefix: str = ""   # "_" on Mach-O (C names get one there)
    local_prefix: str = ".L"  # assembler-local labels: ".L" (ELF, COFF), "L" (Mach-O)
    rodata: str = "\t.section\t.rodata"
    notes: str = ""
    unwind: str = "cfi"       # "cfi" (DWARF .cfi_*) or "seh" (Win64 .seh_*)
    file_suffix: str = ""     # "" for ELF (<kernel>.S), else "-<name>" before ".S"

    @property
    def comment(self) -> str:
        return "//" if self.arch == "aarch64" else "#"

    def symbol(self, name: str) -> str:
        return self.symbol_prefix + name

    def label(self, name: str) -> str:
        """A label operand or definition: a local label (".L...") in the flavour's local
        spelling; any other (a function of the file) as a symbol."""
        if name.startswith(".L"):
            return self.local_prefix + name[2:]
        return self.symbol(name)

    def function_start(self, sym: str, exported: bool) -> list[str]:
        lines = [f"\t.globl\t{sym}"] if exported else []
        if self.name == "elf":
            kind = "%function" if self.arch == "aarch64" else "@function"
            lines.append(f"\t.type\t{sym}, {kind}")
        elif self.name == "win64":
            # a COFF function symbol: storage class 2 (external) or 3 (static), type 0x20
            lines.append(f"\t.def\t{sym};\t.scl\t{2 if exported else 3};\t.type\t32;\t.endef")
        lines += ["\t.p2align\t5", f"{sym}:"]
        if self.unwind == "seh":
            lines.append(f"\t.seh_proc\t{sym}")
        else:
            lines.append("\t.cfi_startproc")
        return lines

    def function_end(self, sym: str) -> list[str]:
        lines = ["\t.seh_endproc" if self.unwind == "seh" else "\t.cfi_endproc"]
        if self.name == "elf":
            lines.append(f"\t.size\t{sym}, .-{sym}")
        return lines

    def hidden(self, sym: str) -> list[str]:
        """Lines that keep an exported symbol out of a shared library's dynamic symbols
        (it stays global for the static link): .hidden on ELF, .private_extern on Mach-O;
        none on COFF, where nothing leaves a DLL unless it is dllexport'ed."""
        if self.name == "elf":
            return [f"\t.hidden\t{sym}"]
        if self.name == "macho":
            return [f"\t.private_extern\t{sym}"]
        return []

    def page(self, sym: str) -> str:
        """AArch64: the ADRP operand of a symbol's 4 KiB page."""
        return f"{sym}@PAGE" if self.name == "macho" else sym

    def page_offset(self, sym: str) -> str:
        """AArch64: the ADD operand of a symbol's offset in its page."""
        return f"{sym}@PAGEOFF" if self.name == "macho" else f":lo12:{sym}"


ELF_X86_64 = Flavour("elf", "x86_64", "", "defined(__x86_64__) && defined(__ELF__)",
                     "ELF (Linux, the BSDs), System V calling convention, DWARF CFI",
                     notes=ELF_X86_64_NOTES)
MACHO_X86_64 = Flavour("macho", "x86_64", "", "defined(__x86_64__) && defined(__APPLE__)",
                       "Mach-O (macOS), System V calling convention, DWARF CFI",
                       symbol_prefix="_", local_prefix="L",
                       rodata="\t.section\t__TEXT,__const", file_suffix="-macho")
WIN64_X86_64 = Flavour("win64", "x86_64", "win64", "defined(__x86_64__) && defined(_WIN32)",
                       "COFF (Windows, mingw-w64 or clang), Microsoft x64 calling "
                       "convention, SEH unwind data", rodata='\t.section\t.rdata,"dr"',
                       unwind="seh", file_suffix="-win64")
ELF_AARCH64 = Flavour("elf", "aarch64", "", "defined(__aarch64__) && defined(__ELF__)",
                      "ELF (Linux, the BSDs), AAPCS64, DWARF CFI", notes=ELF_AARCH64_NOTES)
MACHO_AARCH64 = Flavour("macho", "aarch64", "", "defined(__aarch64__) && defined(__APPLE__)",
                        "Mach-O (macOS, iOS: arm64), AAPCS64 as Apple keeps it, DWARF CFI",
                        symbol_prefix="_", local_prefix="L",
                        rodata="\t.section\t__TEXT,__const", file_suffix="-macho")

FLAVOURS: dict[tuple[str, str], Flavour] = {
    (f.arch, f.name): f
    for f in (ELF_X86_64, MACHO_X86_64, WIN64_X86_64, ELF_AARCH64, MACHO_AARCH64)}
FLAVOUR_NAMES = ("elf", "macho", "win64")


def flavour(arch: str, name: str) -> Flavour:
    try:
        return FLAVOURS[(arch, name)]
    except KeyError:
        have = ", ".join(n for a, n in FLAVOURS if a == arch)
        raise ValueError(f"no {name!r} flavour for {arch}; {arch} has: {have}") from None


def flavours_of(arch: str) -> tuple[str, ...]:
    return tuple(n for a, n in FLAVOURS if a == arch)


def host_flavour() -> str:
    """The flavour of the machine running this: elf on Linux, macho on macOS, win64 on
    Windows (and under mingw-w64's Python)."""
    import sys
    if sys.platform == "darwin":
        return "macho"
    if sys.platform in ("win32", "cygwin", "msys"):
        return "win64"
    return "elf"
