"""Read this CPU with the CPUID and XGETBV instructions, from Python.

A few bytes of machine code are placed in an executable anonymous mapping and called through
ctypes (x86-64 Linux only). Features are decided as the generated C does: the CPUID bit, and
for vector state the XCR0 bits the OS enabled. If the code cannot run here, the caller falls
back to /proc/cpuinfo.
"""
from __future__ import annotations

import ctypes
import mmap
import platform
import struct
from dataclasses import dataclass
from functools import cache


@dataclass(frozen=True)
class CpuIdentity:
    vendor: str
    family: int
    model: int
    brand: str


# void cpuid(uint32_t leaf, uint32_t subleaf, uint32_t out[4])   (SysV: edi, esi, rdx)
_CPUID = bytes([
    0x53,                    # push rbx
    0x49, 0x89, 0xD0,        # mov r8, rdx
    0x89, 0xF8,              # mov eax, edi
    0x89, 0xF1,              # mov ecx, esi
    0x0F, 0xA2,              # cpuid
    0x41, 0x89, 0x00,        # mov [r8], eax
    0x41, 0x89, 0x58, 0x04,  # mov [r8+4], ebx
    0x41, 0x89, 0x48, 0x08,  # mov [r8+8], ecx
    0x41, 0x89, 0x50, 0x0C,  # mov [r8+12], edx
    0x5B,                    # pop rbx
    0xC3,                    # ret
])
# uint64_t xgetbv0(void)
_XGETBV = bytes([
    0x31, 0xC9,              # xor ecx, ecx
    0x0F, 0x01, 0xD0,        # xgetbv
    0x48, 0xC1, 0xE2, 0x20,  # shl rdx, 32
    0x48, 0x09, 0xD0,        # or rax, rdx
    0xC3,                    # ret
])


class _Code:
    def __init__(self) -> None:
        self.page = mmap.mmap(-1, 4096, prot=mmap.PROT_READ | mmap.PROT_WRITE | mmap.PROT_EXEC)
        self.page.write(_CPUID + bytes(64 - len(_CPUID)) + _XGETBV)
        base = ctypes.addressof(ctypes.c_char.from_buffer(self.page))
        self.cpuid = ctypes.CFUNCTYPE(None, ctypes.c_uint32, ctypes.c_uint32,
                                      ctypes.POINTER(ctypes.c_uint32 * 4))(base)
        self.xgetbv = ctypes.CFUNCTYPE(ctypes.c_uint64)(base + 64)


@cache
def _code() -> _Code:
    if platform.machine().lower() not in ("x86_64", "amd64"):
        raise OSError("CPUID exists on x86-64 only")
    return _Code()


def cpuid(leaf: int, subleaf: int = 0) -> tuple[int, int, int, int]:
    out = (ctypes.c_uint32 * 4)()
    _code().cpuid(leaf, subleaf, ctypes.byref(out))
    return tuple(out)


def xcr0() -> int:
    """XCR0, or 0 when the OS has not enabled XGETBV (CPUID.1:ECX.OSXSAVE clear)."""
    if not cpuid(1)[2] & (1 << 27):
        return 0
    return _code().xgetbv()


def identity() -> CpuIdentity:
    _, b, c, d = cpuid(0)
    vendor = struct.pack("<III", b, d, c).decode("ascii", "replace")
    eax = cpuid(1)[0]
    family = (eax >> 8) & 0xF
    model = (eax >> 4) & 0xF
    if family in (6, 15):
        model |= ((eax >> 16) & 0xF) << 4
    if family == 15:
        family += (eax >> 20) & 0xFF
    brand = ""
    if cpuid(0x80000000)[0] >= 0x80000004:
        raw = b"".join(struct.pack("<IIII", *cpuid(leaf)) for leaf in
                       (0x80000002, 0x80000003, 0x80000004))
        brand = raw.split(b"\0", 1)[0].decode("ascii", "replace").strip()
    return CpuIdentity(vendor, family, model, brand)


def features(table) -> set[str]:
    """Names from the feature table (targets/x86_64_features.toml) this CPU and OS support."""
    max_leaf = cpuid(0)[0]
    os_state = xcr0()
    regs = {"eax": 0, "ebx": 1, "ecx": 2, "edx": 3}
    have = set()
    for f in table.values():
        leaf, sub, reg, bit = f.cpuid
        if leaf > max_leaf:
            continue
        if cpuid(leaf, sub)[regs[reg]] >> bit & 1 and (os_state & f.xcr0) == f.xcr0:
            have.add(f.name)
    return have
