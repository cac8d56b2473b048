"""KernelSpec: the frozen description of one kernel; its name and symbols derive from it."""
from __future__ import annotations

import re
from dataclasses import dataclass

from ..modes import MODES as MODE_DESCRIPTORS, hash_engines_of, mode as mode_descriptor
from ..modes.counter import POLICIES, CounterPolicy

FACE_LEVELS = ("none", "r1", "r2")
KEY_BITS = (128, 192, 256)
ROUNDS = {128: 10, 192: 12, 256: 14}
# the rounds a FACE level takes from its cache and table (rounds 0..n start no block)
FACE_ROUNDS = {"none": 0, "r1": 1, "r2": 2}

# method -> (allowed vector widths, whether the width is part of the method's name)
METHODS = {
    "aesni": ((128,), False),
    "vaes256": ((256,), False),
    "vaes512": ((512,), False),
    "gfni": ((128, 256, 512), True),
    # AArch64 (kernels/a64/): AESE/AESMC, tbl/tbx S-box, bitsliced netlist
    "armv8-ce": ((128,), False),
    "neon-tbl": ((128,), False),
    "neon-bitsliced": ((128,), False),
    "table": ((128,), False),          # scalar T-tables (GPRs); NOT constant time
    "bitsliced": ((128, 256, 512), True),
}
# modes of operation (generator/aesgen/modes/): the keystream mode and the AEADs
MODES = tuple(MODE_DESCRIPTORS)
ENCODINGS = ("sse", "avx", "evex", "neon", "neon-sha3")
# the instruction set a method's kernels are written in (default x86_64), and its encodings
AARCH64_METHODS = ("armv8-ce", "neon-tbl", "neon-bitsliced")
# the methods whose S-box is a gate netlist, and the netlists they can take (the first is the
# default)
SLICED_METHODS = ("bitsliced", "neon-bitsliced")
SBOX_NETLISTS = ("bp113", "tower")
ARCH_ENCODINGS = {"x86_64": ("sse", "avx", "evex"), "aarch64": ("neon", "neon-sha3")}


def stitch_window(text: str) -> tuple[int, int]:
    """``"20-70"`` -> (20, 70): 0 <= start < end <= 100, else ValueError naming it."""
    m = re.fullmatch(r"(\d{1,3})-(\d{1,3})", text)
    if not m or not 0 <= int(m.group(1)) < int(m.group(2)) <= 100:
        raise ValueError(f"stitch must be \"start-end\", percent with 0 <= start < end <= "
                         f"100, not {text!r}")
    return int(m.group(1)), int(m.group(2))


def method_arch(method: str) -> str:
    """``aarch64`` for the A64 methods, ``x86_64`` for the others."""
    return "aarch64" if method in AARCH64_METHODS else "x86_64"


@dataclass(frozen=True)
class KernelSpec:
    method: str                      # "aesni", "vaes256", "vaes512", "gfni"
    face: str                        # "none", "r1", "r2"
    key_bits: tuple[int, ...] = KEY_BITS
    interleave: int = 8              # vector registers in flight in the steady-state loop
    encoding: str = "sse"            # "sse" (legacy), "avx" (VEX), "evex" (AVX-512, 32 regs)
    prefix: str = "aesgen_"
    width: int = 128                 # bits per vector register: 128, 256 or 512
    mode: str = "ctr"                # "ctr" (keystream kernels) or an AEAD: "gcm"
    # how the hash engine multiplies (GCM): "schoolbook" (4 carry-less multiplies a block)
    # or "karatsuba" (3, and a shuffle); chosen per preset from measurements
    hash_multiply: str = "schoolbook"
    # the counter policy (modes/counter.py): "" is the mode's default (CTR be128, GCM inc32)
    counter: str = ""
    # the microarchitecture model (targets/uarch/<uarch>.toml) the kernel's choices are made
    # for: the preset's; "" is the instruction set's reference model (uarch.REFERENCE_UARCH)
    uarch: str = ""
    # round keys "resident" in registers through the loop (EVEX, where the batch leaves
    # room) or "loaded" every round; "" is resident under EVEX, loaded elsewhere
    round_keys: str = ""
    # GFNI's doubling in MixColumns: "mulb" (GF2P8MULB) or "affine" (GF2P8AFFINEQB); "" is mulb
    doubling: str = ""
    # the bit-sliced S-box's gate netlist (netlist/library/): "bp113" (Boyar-Peralta, 113
    # gates) or "tower" (tower-field inversion, 121); "" is bp113
    sbox: str = ""
    # the AEAD's hash engine (modes/: the mode's ``hashes``): "" is the mode's first (GCM:
    # "clmul"); "bytesliced" is GHASH by GF2P8AFFINEQB without a carry-less multiply
    hash_engine: str = ""
    # where a stitched AEAD loop spreads the hash through the rounds, as percent of the
    # rounds' stream, "start-end" (the hash done before the rounds end leaves its
    # loop-carried result time to arrive); "" is all of it, "0-100"
    stitch: str = ""
    # GCM on zmm: registers of blocks a chunk of the one-shot record path (a record of more
    # than one chunk, up to the powers of H kept, as a pipeline of chunks: AES of one beside
    # the products of the one before, one reduction); 0, or a chunk of the batch
    # (interleave) or more: records take the batch loop
    record_chunk: int = 0
    # zero every vector register an entry point touched before it returns (the frame pass;
    # VZEROALL and zmm16-31 on x86, EOR on AArch64): no key-derived value is left behind.
    # False only by `aesgen generate --no-scrub`, for a caller who scrubs itself
    scrub: bool = True
    # the calling convention of the entry points (passes/abi.py): "" is the instruction
    # set's own (System V on x86-64, AAPCS64); "win64" the Microsoft x64 convention, which
    # the win64 output flavour needs. Symbols and context are the same either way.
    abi: str = ""

    def __post_init__(self) -> None:
        if self.hash_multiply not in ("schoolbook", "karatsuba"):
            raise ValueError(f"hash_multiply must be schoolbook or karatsuba, not "
                             f"{self.hash_multiply!r}")
        if self.mode not in MODES:
            raise ValueError(f"unknown mode {self.mode!r}; known: {', '.join(MODES)}")
        counters = mode_descriptor(self.mode).counters
        if self.counter and self.counter not in counters:
            raise ValueError(f"mode {self.mode} counts with {', '.join(counters)}, not "
                             f"{self.counter!r}")
        if self.method not in METHODS:
            raise ValueError(f"unknown method {self.method!r}; known: {', '.join(METHODS)}")
        if self.face not in FACE_LEVELS:
            raise ValueError(f"unknown FACE level {self.face!r}; choose from {FACE_LEVELS}")
        allowed = mode_descriptor(self.mode).key_bits
        bad = [k for k in self.key_bits if k not in allowed]
        if bad or not self.key_bits:
            raise ValueError(f"{self.mode} key sizes must be among {allowed}, got "
                             f"{self.key_bits}")
        if not 1 <= self.interleave <= 16:
            raise ValueError(f"interleave must be 1..16, got {self.interleave}")
        if self.encoding not in ENCODINGS:
            raise ValueError(f"unknown encoding {self.encoding!r}")
        if self.encoding not in ARCH_ENCODINGS[self.arch]:
            raise ValueError(f"method {self.method} ({self.arch}) takes the encodings "
                             f"{', '.join(ARCH_ENCODINGS[self.arch])}, not {self.encoding!r}")
        widths, _ = METHODS[self.method]
        if self.width not in widths:
            raise ValueError(f"method {self.method} runs on {widths}-bit vectors, "
                             f"not {self.width}")
        if self.width > 128 and self.encoding == "sse":
            raise ValueError(f"{self.width}-bit vectors need the avx or evex encoding")
        if self.method == "bitsliced" and self.interleave != 8:
            raise ValueError("bitsliced kernels work on 8 registers of slices: interleave 8")
        if self.width == 512 and self.encoding != "evex":
            raise ValueError("512-bit vectors need the evex encoding")
        if self.round_keys not in ("", "resident", "loaded"):
            raise ValueError(f"round_keys must be resident or loaded, not {self.round_keys!r}")
        if self.round_keys == "resident" and self.encoding != "evex":
            raise ValueError("resident round keys need the evex encoding (32 registers)")
        if self.doubling not in ("", "mulb", "affine"):
            raise ValueError(f"doubling must be mulb or affine, not {self.doubling!r}")
        if self.doubling and self.method != "gfni":
            raise ValueError(f"doubling is a choice of the gfni method, not {self.method}")
        if self.sbox not in ("",) + SBOX_NETLISTS:
            raise ValueError(f"sbox must be one of {', '.join(SBOX_NETLISTS)}, not "
                             f"{self.sbox!r}")
        engines = hash_engines_of(mode_descriptor(self.mode), self.method)
        if self.hash_engine and self.hash_engine not in engines:
            raise ValueError(f"mode {self.mode} hashes {self.method} kernels with "
                             f"{', '.join(engines) or 'nothing'}, not {self.hash_engine!r}")
        if self.sbox and self.method not in SLICED_METHODS:
            raise ValueError(f"sbox is a choice of the bit-sliced methods, not {self.method}")
        if self.abi not in ("",) + (("win64",) if self.arch == "x86_64" else ()):
            raise ValueError(f"{self.arch} kernels take the calling convention "
                             f"{'win64 or the default' if self.arch == 'x86_64' else 'default'}"
                             f", not {self.abi!r}")
        if self.stitch:
            stitch_window(self.stitch)
        if not 0 <= self.record_chunk <= 16:
            raise ValueError(f"record_chunk must be 0..16 registers, got {self.record_chunk}")

    @property
    def stitch_window(self) -> tuple[int, int]:
        """(start, end), percent of the rounds' stream the hash is spread over."""
        return stitch_window(self.stitch or "0-100")

    @property
    def hash(self) -> str:
        """The AEAD's hash engine by name: hash_engine, else the first its method takes
        (modes.hash_engines_of); "" for a mode without one."""
        return self.hash_engine or next(iter(hash_engines_of(mode_descriptor(self.mode),
                                                             self.method)), "")

    @property
    def arch(self) -> str:
        """``x86_64`` or ``aarch64``: which ISA, ABI, printer and template the kernel uses."""
        return method_arch(self.method)

    @property
    def lanes(self) -> int:
        """AES blocks per vector register."""
        return self.width // 128

    @property
    def counter_policy(self) -> CounterPolicy:
        return POLICIES[self.counter or mode_descriptor(self.mode).counters[0]]

    @property
    def variant(self) -> str:
        """Method plus width where the method has several: aesni, vaes512, gfni256."""
        return f"{self.method}{self.width}" if METHODS[self.method][1] else self.method

    @property
    def name(self) -> str:
        """Registry name: ``vaes512-face-r2`` for CTR, ``aesni-gcm-none`` for an AEAD,
        ``aesni-gcm-siv`` for a mode without FACE levels; a counter policy other than the
        mode's default is added: ``aesni-face-r2-inc32``."""
        desc = mode_descriptor(self.mode)
        middle = "face" if self.mode == "ctr" else self.mode
        policy = self.counter_policy.name
        face = "" if desc.faces == ("none",) else f"-{self.face}"   # a mode without FACE
        return f"{self.variant}-{middle}{face}" + (
            f"-{policy}" if policy != desc.counters[0] else "")

    @property
    def file_stem(self) -> str:
        """The generated file's name without .S: ``vaes512_face_r2``, ``aesni_gcm_none``."""
        return self.name.replace("-", "_")

    @property
    def symbol_stem(self) -> str:
        return f"{self.prefix}{self.file_stem}"

    def symbol(self, entry: str) -> str:
        return f"{self.symbol_stem}_{entry}"
