"""Modes of operation as data: what the templates, reports, registry and compilation need to
know about a mode, so none of them asks "is this CTR?".

A ModeDescriptor names the mode's entry points (in the order of its C struct), the entry
whose steady state the reports count, the report phases, the oracle the harness checks it
against, which cipher methods and CPU features its skeletons need, and which skeleton module
builds a kernel of it for an instruction set and method. Every skeleton module has
``build_kernel(spec) -> BuiltKernel``; compilation (emit/compile.py) takes it from there the
same way for every mode, method and instruction set.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from . import contracts


@dataclass(frozen=True)
class BuiltKernel:
    """What a skeleton hands to compilation: the entry points (and local functions) as IR,
    the context it needs, and whether it is constant time."""
    functions: dict             # entry or local function name -> dsl.ir.Function
    ctx_size: int
    context_fields: tuple = ()  # (section, name, offset, size, doc) when built from fields
    public_fields: frozenset = frozenset()   # names of the fields declared public
    timing_warning: str | None = None   # why the kernel is NOT constant time; None when it is
    # entry -> calling convention, where an entry departs from its instruction set's default
    abi: dict = field(default_factory=dict)
    # registers of blocks a batch, where the skeleton departs from the preset's interleave
    # (GCM on zmm runs 4 registers, 16 blocks, a batch)
    interleave: int | None = None
    # registers a chunk of a one-shot record path (GCM on zmm: modes/gcm/x86_64.py), 0: none
    record_chunk: int = 0


@dataclass(frozen=True)
class ModeDescriptor:
    name: str                       # "ctr", "gcm"
    aead: bool                      # listed in aesgen_aeads[] (else aesgen_kernels[])
    title: str                      # for generated comments
    entries: tuple[str, ...]        # entry points, in the order of the C struct
    hot_entry: str                  # the function whose steady-state loop the reports count
    phases: tuple[str, ...]         # report columns of that loop
    oracle: str                     # what the harness checks the kernels against
    methods: tuple[str, ...]        # cipher methods a skeleton exists for
    needs: tuple[str, ...]          # CPU features a preset must have for the mode
    # the hash engines its skeletons take, in order of preference: (name, the features it
    # needs beyond ``needs`` at each register width it runs at); a kernel takes the first
    # the preset has
    hashes: tuple[tuple[str, tuple[tuple[int, tuple[str, ...]], ...]], ...] = ()
    # (method, hash engines): a method that takes only those engines, which no other
    # method takes (the table method's lookup-table GHASH)
    method_hashes: tuple[tuple[str, tuple[str, ...]], ...] = ()
    # the hash engines whose multiply is a preset's choice (schoolbook or Karatsuba); the
    # others have one form
    multiply_choice: tuple[str, ...] = ()
    # (register width, encoding) -> the encoding its skeleton is written in instead
    encodings: tuple[tuple[tuple[int, str], str], ...] = ()
    faces: tuple[str, ...] = ("none", "r1", "r2")   # FACE levels built so far
    # (instruction set, method or "*", module with build_kernel(spec)): the first that fits
    skeletons: tuple[tuple[str, str, str], ...] = ()
    # counter policies (modes/counter.py) its skeletons take, the default first
    counters: tuple[str, ...] = ("be128",)
    nonce: tuple[int, int] = (0, 0)     # accepted nonce lengths (AEADs; -1 = SIZE_MAX)
    tag: tuple[int, int] = (0, 0)       # accepted tag lengths (AEADs)
    # entries of the struct the mode does not have (NULL in the registry; GCM-SIV cannot
    # stream)
    absent: tuple[str, ...] = ()
    # the key sizes the mode takes (a set generated for others leaves them out)
    key_bits: tuple[int, ...] = (128, 192, 256)
    # the C struct its entries fill, their parameters and roles (modes/contracts.py)
    contract: contracts.Contract = contracts.AEAD

    def has(self, entry: str) -> bool:
        return entry in self.entries and entry not in self.absent

CTR = ModeDescriptor(
    name="ctr", aead=False, title="AES-CTR (128-bit big-endian counter)",
    entries=("init", "set_iv", "xor_stream", "wipe"), hot_entry="xor_stream",
    phases=("counter", "transpose", "rounds_0_2", "rounds_3_nr", "load_xor_store", "loop"),
    oracle="OpenSSL EVP_aes_*_ctr",
    methods=("aesni", "vaes256", "vaes512", "gfni", "bitsliced", "table", "armv8-ce",
             "neon-tbl", "neon-bitsliced"),
    needs=(),
    contract=contracts.CTR,
    skeletons=(("x86_64", "table", "aesgen.kernels.table_kernel"),
               ("x86_64", "*", "aesgen.kernels.ctr_kernel"),
               ("aarch64", "*", "aesgen.kernels.a64.ctr_kernel")),
    counters=("be128", "inc32"))

GCM = ModeDescriptor(
    name="gcm", aead=True, title="AES-GCM (NIST SP 800-38D)",
    entries=("init", "seal", "open", "start", "aad", "encrypt", "decrypt", "finish_seal",
             "finish_open", "wipe"),
    hot_entry="encrypt_data",
    phases=("aes", "face", "counter", "ghash_multiply", "reduction", "load_store", "loop",
            "tail"),
    oracle="OpenSSL EVP_aes_*_gcm",
    # gfni, bitsliced, neon-tbl, neon-bitsliced: the same skeleton over those round
    # engines (no AES instruction)
    methods=("aesni", "vaes256", "vaes512", "gfni", "bitsliced", "table", "armv8-ce",
             "neon-tbl", "neon-bitsliced"),
    needs=(),
    # the carry-less multiply at the cipher's width (VPCLMULQDQ on ymm and zmm); PCLMULQDQ
    # on xmm beside a ymm cipher where the CPU has no VPCLMULQDQ; without a carry-less
    # multiply, GHASH by GF2P8AFFINEQB on byte-sliced streams (ymm; in EVEX forms beside a
    # zmm cipher)
    hashes=(("clmul", ((128, ("PCLMULQDQ",)), (256, ("PCLMULQDQ", "VPCLMULQDQ")),
                       (512, ("PCLMULQDQ", "VPCLMULQDQ", "BMI2")))),
            ("clmul-xmm", ((256, ("PCLMULQDQ",)),)),
            ("bytesliced", ((128, ("GFNI", "AVX2")), (256, ("GFNI", "AVX2")),
                            (512, ("GFNI", "AVX512F", "AVX512BW", "AVX512VL")))),
            # seed 004's 8 KiB of tables: for the table method alone (NOT constant time)
            ("table", ((128, ("SSSE3", "SSE41")),)),
            # AArch64: the Crypto Extension's PMULL/PMULL2 (gf128/aarch64/pmull.py)
            ("pmull", ((128, ("PMULL",)),)),
            # AArch64 without it: PMULL.8b of base Advanced SIMD (gf128/aarch64/pmull8.py),
            # for the methods made for cores without the Crypto Extension, whose kernels
            # then run on every such core (constant time)
            ("pmull8", ((128, ("ASIMD",)),))),
    method_hashes=(("table", ("table",)), ("neon-tbl", ("pmull8",)),
                   ("neon-bitsliced", ("pmull8",))),
    multiply_choice=("clmul", "clmul-xmm", "pmull"),
    # the skeleton keeps to 16 registers and VEX forms on xmm and ymm; zmm is EVEX with 32
    encodings=(((128, "evex"), "avx"), ((256, "evex"), "avx")),
    skeletons=(("x86_64", "*", "aesgen.modes.gcm.x86_64"),
               ("aarch64", "*", "aesgen.modes.gcm.aarch64")),
    counters=("inc32",),
    nonce=(1, -1), tag=(4, 16))

GCM_SIV = ModeDescriptor(
    name="gcm-siv", aead=True, title="AES-GCM-SIV (RFC 8452)",
    entries=GCM.entries, absent=("start", "aad", "encrypt", "decrypt", "finish_seal",
                                 "finish_open"),
    # seal's two passes: the POLYVAL loop and the CTR loop of 8 blocks (both counted)
    hot_entry="seal",
    phases=("derive", "aes", "counter", "polyval_multiply", "reduction", "load_store",
            "loop", "tail"),
    oracle="RFC 8452 Appendix C; the cryptography package's AESGCMSIV (pytest); a "
           "reference over OpenSSL's AES (harness)",
    methods=("aesni", "vaes256", "vaes512", "gfni", "armv8-ce"),
    needs=(),
    # POLYVAL is the carry-less engine in another bit order, at the cipher's width; on
    # AArch64 the Crypto Extension's PMULL/PMULL2 (gf128/aarch64/pmull.py, polyval); the
    # gfni method's constant-time form without a carry-less multiply or AES instruction:
    # the byte-sliced streams of GF2P8AFFINEQB in POLYVAL's bit order
    hashes=(("clmul", ((128, ("PCLMULQDQ",)), (256, ("PCLMULQDQ", "VPCLMULQDQ")),
                       (512, ("PCLMULQDQ", "VPCLMULQDQ", "BMI2")))),
            ("pmull", ((128, ("PMULL",)),)),
            ("bytesliced", ((128, ("GFNI", "AVX2")), (256, ("GFNI", "AVX2")),
                            (512, ("GFNI", "AVX512F", "AVX512BW", "AVX512VL"))))),
    method_hashes=(("gfni", ("bytesliced",)),),
    faces=("none",),
    # as GCM's: xmm and ymm in VEX forms (16 registers), zmm in EVEX (32)
    encodings=(((128, "evex"), "avx"), ((256, "evex"), "avx")),
    skeletons=(("x86_64", "*", "aesgen.modes.gcm_siv.x86_64"),
               ("aarch64", "*", "aesgen.modes.gcm_siv.aarch64")),
    counters=("le32",),
    nonce=(12, 12), tag=(16, 16), key_bits=(128, 256))


def _otr(name: str, title: str, table: bool = False) -> ModeDescriptor:
    """An OTR variant's descriptor; ``table``: the table method's kernel too (T-table AES
    and seed 001's table doublings, NOT constant time: for the comparison of doubling
    methods, built for one variant)."""
    return ModeDescriptor(
        name=name, aead=True, title=title,
        entries=GCM.entries, absent=GCM_SIV.absent,
        # one loop: the pairs' two Feistel rounds, their masks and the checksum
        hot_entry="seal",
        phases=("masks", "aes", "load_store", "loop", "tail"),
        oracle="specs/aes-otr.md Appendix A; the Python model (pytest); a reference over "
               "OpenSSL's AES (harness)",
        methods=("aesni", "vaes256", "vaes512", "armv8-ce") + (("table",) if table else ()),
        needs=(),
        # the hash engine of OTR is its mask doubling (gf128/x86_64/doubling.py): on ymm and
        # zmm a register of consecutive masks moved on by one carry-less multiply, on xmm
        # Krovetz's doubling a mask at a time (clmul there too: `aesgen doubling` measures
        # both)
        hashes=(("krovetz", ((128, ("SSE2",)),)),
                ("clmul", ((128, ("PCLMULQDQ",)),
                           (256, ("PCLMULQDQ", "VPCLMULQDQ", "AVX2")),
                           (512, ("PCLMULQDQ", "VPCLMULQDQ", "AVX512F")))),
                # AArch64: Krovetz's doubling on byte lanes, masks in block order
                # (gf128/aarch64/doubling.py), armv8-ce's alone
                ("neon-krovetz", ((128, ("ASIMD",)),))) + (
                # seed 001's table methods (secret indexes): the table method's alone,
                # Aoki-Iwata-Yasuda's MOVMSKPD first, the batch method's two lookups
                (("aoki", ((128, ("SSE2",)),)),
                 ("batch-table", ((128, ("SSSE3", "SSE41")),))) if table else ()),
        method_hashes=(("armv8-ce", ("neon-krovetz",)),) + (
            (("table", ("aoki", "batch-table")),) if table else ()),
        faces=("none",),
        encodings=(((128, "evex"), "avx"), ((256, "evex"), "avx")),
        skeletons=(("x86_64", "*", "aesgen.modes.otr.x86_64"),
                   ("aarch64", "*", "aesgen.modes.otr.aarch64")),
        counters=("none",),
        nonce=(1, 15), tag=(1, 16), key_bits=(128, 256))


# specs/aes-otr.md: v3.1 (the final version) and seed 001's v2, the AD in parallel (p) or
# serial (s)
OTR = _otr("otr", "AES-OTR v3.1, parallel AD (specs/aes-otr.md)", table=True)
OTR_V2 = _otr("otr-v2", "AES-OTR v2, parallel AD (specs/aes-otr.md section 10; seed 001)")
OTR_S = _otr("otr-s", "AES-OTR v3.1, serial AD (specs/aes-otr.md)")
OTR_V2_S = _otr("otr-v2-s", "AES-OTR v2, serial AD (specs/aes-otr.md section 10)")

MODES = {m.name: m for m in (CTR, GCM, GCM_SIV, OTR, OTR_V2, OTR_S, OTR_V2_S)}


def features_for(desc: ModeDescriptor, width: int,
                 hash_engine: str = "") -> tuple[str, ...] | None:
    """CPU features a preset needs for this mode on registers of this width, with its
    first hash engine or the one named; None where that engine does not run at the width."""
    if not desc.hashes:
        return desc.needs
    engines = dict(desc.hashes)
    widths = dict(engines[hash_engine or desc.hashes[0][0]])
    return desc.needs + widths[width] if width in widths else None


def hash_engines_of(desc: ModeDescriptor, method: str) -> tuple[str, ...]:
    """The hash engines a method's kernels may take, in the mode's order of preference:
    those reserved for it, else every engine no method reserves."""
    reserved = dict(desc.method_hashes)
    if method in reserved:
        return reserved[method]
    taken = {name for names in reserved.values() for name in names}
    return tuple(name for name, _ in desc.hashes if name not in taken)


def hash_engine_for(desc: ModeDescriptor, width: int, features,
                    method: str = "") -> str | None:
    """The first of the method's hash engines (hash_engines_of; ``""`` for a mode without
    one) whose features the CPU has at this register width; None when none runs."""
    for name in hash_engines_of(desc, method) or ("",):
        needs = features_for(desc, width, name)
        if needs is not None and set(needs) <= set(features):
            return name
    return None


def encoding_for(desc: ModeDescriptor, width: int, encoding: str) -> str:
    """The encoding the mode's skeleton runs a method of this width and encoding in."""
    return dict(desc.encodings).get((width, encoding), encoding)


def mode(name: str) -> ModeDescriptor:
    try:
        return MODES[name]
    except KeyError:
        raise ValueError(f"unknown mode {name!r}; known: {', '.join(MODES)}") from None


def skeleton_for(spec) -> str:
    """The module that builds ``spec``'s kernel: its mode's first skeleton for its
    instruction set and method."""
    desc = mode(spec.mode)
    for arch, method, module in desc.skeletons:
        if arch == spec.arch and method in ("*", spec.method):
            return module
    raise ValueError(f"mode {spec.mode!r} has no skeleton for {spec.method} on {spec.arch}")


def build_kernel(spec) -> BuiltKernel:
    """The kernel of ``spec`` as its skeleton builds it (uncompiled IR)."""
    import importlib

    return importlib.import_module(skeleton_for(spec)).build_kernel(spec)
