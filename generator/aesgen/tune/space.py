"""The search space of `aesgen tune` as data: each Choice names a preset key, its candidate
values and the kernel that measures it, and builds that kernel through plan_kernels.

Candidates are kernels planned from a copy of the preset with one value replaced
(dataclasses.replace), so a candidate is exactly the kernel `generate` would write if the
preset file held that value.
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Union

from ..emit.generate import GenerateRequest, plan_kernels
from ..modes import mode
from ..kernels.spec import KEY_BITS, SBOX_NETLISTS, SLICED_METHODS, KernelSpec
from ..targets import Preset, load_priority

Value = Union[int, str]

FACE = "r2"            # every candidate kernel is measured at FACE r2 ...
KEY = 128              # ... on its AES-128 steady-state loop
# CTR kernels whose batch is a ladder of `interleave` registers (bitsliced is fixed at 8,
# table at 1; of the AArch64 methods armv8-ce: neon-tbl's 4 and neon-bitsliced's 8 are
# their layouts, not a choice)
LADDER_VARIANTS = ("aesni", "vaes256", "vaes512", "gfni128", "gfni256", "gfni512", "armv8-ce")
INTERLEAVES = (4, 6, 8)
MULTIPLIES = ("schoolbook", "karatsuba")
ROUND_KEYS = ("resident", "loaded")       # EVEX ladder methods: keys in registers or not
DOUBLINGS = ("mulb", "affine")            # GFNI: how MixColumns doubles
SBOXES = SBOX_NETLISTS                    # bit-sliced methods: the S-box's gate netlist
ZMM_BATCHES = tuple(range(1, 9)) + (12, 16)  # of the 1..16 [gcm] zmm_batch load_preset takes
# where a stitched GCM loop spreads the hash through the rounds (percent, KernelSpec.stitch):
# all of them, or ending early so the batch's reduction is done before the next one needs it
STITCHES = ("0-100", "0-80", "10-75", "20-70")
# registers a chunk of the zmm one-shot record path ([gcm] record_chunk; 0: the batch loop)
RECORD_CHUNKS = (0, 4, 6, 8, 10, 12)
# [gcm] key -> the Preset field it loads into
GCM_FIELDS = {"multiply": "gcm_multiply", "zmm_batch": "gcm_zmm_batch", "stitch": "gcm_stitch",
              "record_chunk": "gcm_record_chunk"}


@dataclass(frozen=True)
class Choice:
    """One searched key: ``key`` in the preset's TOML table ``table``, tried at ``values``
    on the ``mode`` kernel of ``variant`` (FACE r2, AES-128)."""
    name: str              # "gcm.multiply", "methods.aesni.interleave"
    table: str             # "gcm", "methods.aesni"
    key: str               # "multiply", "interleave"
    values: tuple[Value, ...]
    mode: str              # "ctr" or "gcm"
    variant: str           # the method variant whose kernel measures it
    why: str               # why that kernel, for the report

    def current(self, preset: Preset) -> Value:
        if self.table == "gcm":
            return getattr(preset, GCM_FIELDS[self.key])
        return getattr(preset.method(self.variant), self.key)

    def applied(self, preset: Preset, value: Value) -> Preset:
        """The preset with this choice at ``value`` (the file is not touched)."""
        if self.table == "gcm":
            return replace(preset, **{GCM_FIELDS[self.key]: value})
        return replace(preset, methods=tuple(
            replace(m, **{self.key: value}) if m.variant == self.variant else m
            for m in preset.methods))

    def candidates(self, preset: Preset) -> tuple[Value, ...]:
        """The values tried: ours, and the preset's current one if it is not among them."""
        now = self.current(preset)
        if now in self.values:
            return self.values
        return tuple(sorted(self.values + (now,))) if isinstance(now, int) else (
            self.values + (now,))

    def kernel(self, preset: Preset, face: str = FACE) -> KernelSpec:
        """The measured kernel as generation plans it for ``preset`` (ValueError when the
        preset's values make no valid KernelSpec); FACE r2 unless ``face`` says."""
        specs = plan_kernels(request(preset, (self.variant,), self.mode, face))
        if len(specs) != 1:
            raise ValueError(f"preset {preset.name} plans {len(specs)} {self.mode} kernels "
                             f"of {self.variant} at FACE {face}, not one")
        return specs[0]


def request(preset: Preset, variants: tuple[str, ...], mode: str, face: str = FACE,
            prefix: str = "aesgen_", command: str = "aesgen tune") -> GenerateRequest:
    """What `generate` would be asked for ``variants`` of ``mode`` at one FACE level."""
    return GenerateRequest(preset, variants, (face,), KEY_BITS, prefix, command, (mode,))


def gcm_variants(preset: Preset) -> list[KernelSpec]:
    """The preset's GCM kernels at FACE r2, one per method (none without PCLMULQDQ or a
    method the GCM skeleton covers)."""
    return plan_kernels(request(preset, tuple(m.variant for m in preset.methods), "gcm"))


def fastest_gcm_variant(preset: Preset) -> str | None:
    """The GCM method `best_kernel` would prefer: by its CTR sibling's place in
    kernel_priority.toml, zmm passed over where the preset says zmm lowers the clock."""
    order = load_priority().order
    specs = gcm_variants(preset)
    if preset.zmm_lowers_clock and any(s.width != 512 for s in specs):
        specs = [s for s in specs if s.width != 512]
    variants = [s.variant for s in specs]

    def rank(v: str) -> int:
        name = f"{v}-face-{FACE}"
        return order.index(name) if name in order else len(order)
    return min(variants, key=rank) if variants else None


def _multiply_is_a_choice(preset: Preset, variant: str) -> bool:
    """Whether the hash engine of ``variant``'s GCM kernel multiplies by schoolbook or
    Karatsuba as the preset says (the byte-sliced, table and PMULL.8b engines have one
    form)."""
    spec = next(s for s in gcm_variants(preset) if s.variant == variant)
    return spec.hash in mode("gcm").multiply_choice


def choices_for(preset: Preset) -> list[Choice]:
    """Every choice that applies to ``preset``, in the fixed order the search takes them."""
    out = [Choice(f"methods.{m.variant}.interleave", f"methods.{m.variant}", "interleave",
                  INTERLEAVES, "ctr", m.variant, "its CTR kernel")
           for m in preset.methods if m.variant in LADDER_VARIANTS]
    out += [Choice(f"methods.{m.variant}.round_keys", f"methods.{m.variant}", "round_keys",
                   ROUND_KEYS, "ctr", m.variant, "its CTR kernel")
            for m in preset.methods if m.variant in LADDER_VARIANTS and m.encoding == "evex"]
    out += [Choice(f"methods.{m.variant}.doubling", f"methods.{m.variant}", "doubling",
                   DOUBLINGS, "ctr", m.variant, "its CTR kernel")
            for m in preset.methods if m.method == "gfni"]
    out += [Choice(f"methods.{m.variant}.sbox", f"methods.{m.variant}", "sbox", SBOXES,
                   "ctr", m.variant, "its CTR kernel")
            for m in preset.methods if m.method in SLICED_METHODS]
    fastest = fastest_gcm_variant(preset)
    if fastest and _multiply_is_a_choice(preset, fastest):
        out.append(Choice("gcm.multiply", "gcm", "multiply", MULTIPLIES, "gcm", fastest,
                          "the preset's fastest GCM method"))
        out.append(Choice("gcm.stitch", "gcm", "stitch", STITCHES, "gcm", fastest,
                          "the preset's fastest GCM method"))
    zmm = [s.variant for s in gcm_variants(preset) if s.width == 512]
    if zmm:
        out.append(Choice("gcm.zmm_batch", "gcm", "zmm_batch", ZMM_BATCHES, "gcm", zmm[0],
                          "the preset's GCM method on zmm"))
        out.append(Choice("gcm.record_chunk", "gcm", "record_chunk", RECORD_CHUNKS, "gcm",
                          zmm[0], "the preset's GCM method on zmm"))
    return out


def why_absent(preset: Preset, name: str) -> str:
    """Why ``name`` is not among the preset's choices, as one line for an error."""
    known = ", ".join(c.name for c in choices_for(preset)) or "none"
    if name in ("gcm.multiply", "gcm.stitch", "gcm.zmm_batch", "gcm.record_chunk"):
        need = ("a GCM kernel on zmm (vaes512 with VPCLMULQDQ)"
                if name in ("gcm.zmm_batch", "gcm.record_chunk")
                else "a GCM kernel whose hash engine is a carry-less multiply ("
                + ", ".join(mode("gcm").multiply_choice) + ")")
        return (f"preset {preset.name} has no choice {name!r}: it has no {need}; its "
                f"choices: {known}")
    parts = name.split(".")
    if len(parts) == 3 and parts[0] == "methods" and parts[2] in ("interleave", "round_keys",
                                                                  "doubling", "sbox"):
        m = preset.method(parts[1])
        if m is None:
            why = f"it has no method {parts[1]!r}"
        elif parts[2] == "sbox":
            why = (f"{m.variant} is not a bit-sliced method ({', '.join(SLICED_METHODS)}): "
                   f"its S-box is not a netlist")
        elif m.variant not in LADDER_VARIANTS and parts[2] != "doubling":
            why = f"only the ladder methods ({', '.join(LADDER_VARIANTS)}) are searched"
        elif parts[2] == "round_keys":
            why = f"{m.variant} is {m.encoding}: round keys stay resident only under evex"
        else:
            why = f"{m.variant} is not a GFNI method: it has no doubling"
        return f"preset {preset.name} has no choice {name!r}: {why}; its choices: {known}"
    return (f"unknown choice {name!r}; choices are gcm.multiply, gcm.stitch, gcm.zmm_batch, "
            f"gcm.record_chunk, "
            f"methods.<variant>.interleave, .round_keys (evex), .doubling (gfni) or .sbox "
            f"(bit-sliced); preset {preset.name} has: {known}")
