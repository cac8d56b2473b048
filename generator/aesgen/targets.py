"""CPU presets and CPU features, read from the data files in <root>/targets/."""
from __future__ import annotations

import tomllib
from dataclasses import dataclass
from pathlib import Path

from .kernels.spec import SBOX_NETLISTS, SLICED_METHODS, stitch_window
from .paths import TARGETS
from .uarch import load_uarch


@dataclass(frozen=True)
class Feature:
    name: str
    bit: int
    cpuid: tuple[int, int, str, int]     # x86: CPUID leaf, subleaf, register, bit; () on AArch64
    xcr0: int
    cpuinfo: str
    hwcap: int | None = None             # AArch64: bit of getauxval(AT_HWCAP)
    sysctl: str = ""                     # AArch64 on Apple: the sysctl that reports it


@dataclass(frozen=True)
class MethodChoice:
    """One kernel family a preset gets: ``variant`` names it (aesni, vaes512, gfni256)."""
    variant: str
    method: str
    width: int
    encoding: str
    interleave: int
    # round keys "resident" in registers for the whole loop (EVEX: 32 registers, where the
    # batch leaves room) or "loaded" (broadcast from the context) every round
    round_keys: str = "loaded"
    # GFNI: how MixColumns doubles, "mulb" (GF2P8MULB by 2) or "affine" (GF2P8AFFINEQB)
    doubling: str = ""
    # bit-sliced methods: the S-box's gate netlist (kernels/spec.py SBOX_NETLISTS)
    sbox: str = ""
    # features beyond the preset's own that the variant's kernels need: some of the preset's
    # optional_features (a CPU of the preset may lack them; the runtime choice passes over
    # the kernels it cannot run)
    needs: tuple[str, ...] = ()


ROUND_KEYS = ("resident", "loaded")
DOUBLINGS = ("mulb", "affine")


def _method_choice(path: Path, variant: str, c: dict) -> MethodChoice:
    """[methods.<variant>] of a preset file, the defaults filled in: round keys resident
    under EVEX, loaded elsewhere; the GFNI doubling by GF2P8MULB."""
    method, encoding = c.get("method", variant), c["encoding"]
    round_keys = c.get("round_keys", "resident" if encoding == "evex" else "loaded")
    if round_keys not in ROUND_KEYS:
        raise TargetError(f"{path.name}: [methods.{variant}] round_keys must be resident or "
                          f"loaded, not {round_keys!r}")
    if round_keys == "resident" and encoding != "evex":
        raise TargetError(f"{path.name}: [methods.{variant}] round_keys = \"resident\" needs "
                          f"the evex encoding (32 registers), not {encoding!r}")
    doubling = c.get("doubling", "mulb" if method == "gfni" else "")
    if method == "gfni" and doubling not in DOUBLINGS:
        raise TargetError(f"{path.name}: [methods.{variant}] doubling must be mulb or "
                          f"affine, not {doubling!r}")
    if method != "gfni" and doubling:
        raise TargetError(f"{path.name}: [methods.{variant}] doubling is a GFNI choice; "
                          f"method {method} has none")
    sliced = method in SLICED_METHODS
    sbox = c.get("sbox", SBOX_NETLISTS[0] if sliced else "")
    if sliced and sbox not in SBOX_NETLISTS:
        raise TargetError(f"{path.name}: [methods.{variant}] sbox must be one of "
                          f"{', '.join(SBOX_NETLISTS)}, not {sbox!r}")
    if not sliced and sbox:
        raise TargetError(f"{path.name}: [methods.{variant}] sbox is a choice of the "
                          f"bit-sliced methods; method {method} has none")
    return MethodChoice(variant, method, c.get("width", 128), encoding, c["interleave"],
                        round_keys, doubling, sbox, tuple(c.get("needs", ())))


@dataclass(frozen=True)
class CpuMatch:
    """Which CPUs a preset is for: a CPUID vendor, family and model list (ints or ranges)."""
    vendor: str
    family: int
    models: tuple[tuple[int, int], ...]

    def fits(self, vendor: str, family: int, model: int) -> bool:
        return (vendor == self.vendor and family == self.family
                and any(lo <= model <= hi for lo, hi in self.models))


def _match(d: dict | None) -> CpuMatch | None:
    if not d:
        return None
    models = tuple((m, m) if isinstance(m, int) else (m[0], m[1]) for m in d["models"])
    return CpuMatch(d["vendor"], d["family"], models)


@dataclass(frozen=True)
class Preset:
    name: str
    arch: str
    description: str
    features: tuple[str, ...]
    mca_cpu: str
    zmm_lowers_clock: bool
    methods: tuple[MethodChoice, ...]
    source: Path
    match: CpuMatch | None = None
    # [gcm] multiply: how GHASH multiplies on this CPU ("schoolbook" or "karatsuba"),
    # chosen from measurements recorded beside it in the preset file
    gcm_multiply: str = "schoolbook"
    # [gcm] zmm_batch: registers of 4 blocks a GCM batch on zmm (one reduction each; the
    # aggregation depth is 4 x this), chosen from the figures recorded in the preset file
    gcm_zmm_batch: int = 4
    # the microarchitecture model (targets/uarch/<uarch>.toml) the generator's choices read
    uarch: str = ""
    # features some CPUs of the preset have (not needed to pick it for a CPU): the methods
    # that need them say so (MethodChoice.needs)
    optional_features: tuple[str, ...] = ()
    # [gcm] stitch: the part of a batch's AES rounds its GHASH is spread through, percent
    # "start-end" (KernelSpec.stitch), chosen from the figures recorded in the preset file
    gcm_stitch: str = "0-100"
    # [gcm] record_chunk: registers a chunk of the zmm GCM kernels' one-shot record path
    # (KernelSpec.record_chunk; 0, or a chunk of zmm_batch or more: none), chosen from the
    # figures recorded in the file
    gcm_record_chunk: int = 0

    def features_of(self, choice: MethodChoice) -> tuple[str, ...]:
        """What a CPU of this preset has when it runs that method's kernels."""
        return self.features + choice.needs

    def model(self):
        """The preset's microarchitecture model (uarch.py)."""
        return load_uarch(self.uarch, self.source.parent / "uarch")

    def method(self, name: str) -> MethodChoice | None:
        return next((m for m in self.methods if m.variant == name), None)


class TargetError(ValueError):
    """A preset, feature or method the data files do not define."""


def load_features(arch: str = "x86_64", root: Path = TARGETS) -> dict[str, Feature]:
    data = tomllib.loads((root / f"{arch}_features.toml").read_text())
    feats = {name: Feature(name, d["bit"], tuple(d.get("cpuid", ())), d.get("xcr0", 0),
                           d["cpuinfo"], d.get("hwcap"), d.get("sysctl", ""))
             for name, d in data.items()}
    bits = [f.bit for f in feats.values()]
    if len(bits) != len(set(bits)):
        raise TargetError(f"{arch}_features.toml: two features share a bit")
    return feats


def load_preset(path: Path) -> Preset:
    d = tomllib.loads(path.read_text())
    methods = tuple(_method_choice(path, v, c) for v, c in d.get("methods", {}).items())
    preset = Preset(d["name"], d["arch"], d["description"], tuple(d["features"]),
                    d["mca_cpu"], d["zmm_lowers_clock"], methods, path, _match(d.get("match")),
                    d.get("gcm", {}).get("multiply", "schoolbook"),
                    d.get("gcm", {}).get("zmm_batch", 4), d.get("uarch", ""),
                    tuple(d.get("optional_features", ())),
                    d.get("gcm", {}).get("stitch", "0-100"),
                    d.get("gcm", {}).get("record_chunk", 0))
    if not preset.uarch:
        raise TargetError(f"{path.name}: no uarch (the microarchitecture model in "
                          "targets/uarch/ whose facts the generator's choices read)")
    if preset.gcm_multiply not in ("schoolbook", "karatsuba"):
        raise TargetError(f"{path.name}: [gcm] multiply must be schoolbook or karatsuba, "
                          f"not {preset.gcm_multiply!r}")
    if not 1 <= preset.gcm_zmm_batch <= 16:
        raise TargetError(f"{path.name}: [gcm] zmm_batch must be 1..16 registers, not "
                          f"{preset.gcm_zmm_batch!r}")
    if (type(preset.gcm_record_chunk) is not int
            or not 0 <= preset.gcm_record_chunk <= 16):
        raise TargetError(f"{path.name}: [gcm] record_chunk must be 0..16 registers (0: no "
                          f"record path), not {preset.gcm_record_chunk!r}")
    try:
        stitch_window(preset.gcm_stitch)
    except ValueError as e:
        raise TargetError(f"{path.name}: [gcm] {e}") from None
    if preset.name != path.stem:
        raise TargetError(f"{path.name}: name {preset.name!r} differs from the file name")
    known = load_features(preset.arch, path.parent)
    unknown = [f for f in preset.features + preset.optional_features if f not in known]
    if unknown:
        raise TargetError(f"{path.name}: unknown features {unknown}")
    for m in preset.methods:
        stray = [f for f in m.needs if f not in preset.optional_features]
        if stray:
            raise TargetError(f"{path.name}: [methods.{m.variant}] needs {stray}, which are "
                              f"not among the preset's optional_features")
    return preset


def all_presets(root: Path = TARGETS) -> dict[str, Preset]:
    return {p.stem: load_preset(p) for p in sorted(root.glob("*.toml"))
            if not p.stem.endswith("_features") and p.stem != "kernel_priority"}


@dataclass(frozen=True)
class KernelPriority:
    order: tuple[str, ...]
    zmm_slow: tuple[CpuMatch, ...]


def load_priority(root: Path = TARGETS) -> KernelPriority:
    d = tomllib.loads((root / "kernel_priority.toml").read_text())
    return KernelPriority(tuple(d["order"]), tuple(_match(m) for m in d.get("zmm_slow", [])))


def find_preset(name: str, root: Path = TARGETS) -> Preset:
    presets = all_presets(root)
    if name not in presets:
        raise TargetError(f"unknown preset {name!r}; known presets: {', '.join(presets)}")
    return presets[name]


def host_features_from_cpuinfo(text: str, arch: str = "x86_64") -> set[str]:
    """Feature names whose /proc/cpuinfo flag the kernel reports (it hides what the OS
    does not enable, such as AVX-512 without XSAVE support)."""
    flags: set[str] = set()
    for line in text.splitlines():
        if line.startswith(("flags", "Features")):     # x86 "flags", arm64 "Features"
            flags = set(line.split(":", 1)[1].split())
            break
    return {f.name for f in load_features(arch).values() if f.cpuinfo in flags}


def host_arch() -> str:
    """``x86_64`` or ``aarch64``: the ISA of the machine this runs on (presets for the other
    one are never the native choice)."""
    import platform

    machine = platform.machine().lower()
    return "aarch64" if machine in ("aarch64", "arm64") else "x86_64"


def choose_native_preset(host: set[str], root: Path = TARGETS,
                         cpu: tuple[str, int, int] | None = None) -> tuple[Preset, str]:
    """The preset for this CPU, and why: among presets whose features the CPU has, one whose
    [match] names this CPU's vendor, family and model; else the one with the most features."""
    fitting = [p for p in all_presets(root).values()
               if set(p.features) <= host and p.arch == host_arch()]
    if not fitting:
        raise TargetError("no preset fits this CPU (found features: "
                          f"{', '.join(sorted(host)) or 'none known'})")
    named = [p for p in fitting if cpu and p.match and p.match.fits(*cpu)]
    if named:
        best = max(named, key=lambda p: (len(p.features), p.name))
        why = (f"{best.name}: it names this CPU (vendor {cpu[0]}, family {cpu[1]}, model "
               f"{cpu[2]}) and the CPU has all {len(best.features)} features it needs")
    else:
        # richest first; among equals a generic preset (one that names no CPU), else one
        # for this vendor whose zmm costs no clock
        best = max(fitting, key=lambda p: (len(p.features), p.match is None,
                                           bool(cpu and p.match and p.match.vendor == cpu[0]),
                                           not p.zmm_lowers_clock, p.name))
        why = (f"{best.name}: no preset names this CPU"
               + (f" (vendor {cpu[0]}, family {cpu[1]}, model {cpu[2]})" if cpu else "")
               + f"; it has all {len(best.features)} features of {best.name}, the richest "
               "fitting preset for its vendor")
    return best, why


def fastest_variant(preset: Preset, cpu: tuple[str, int, int] | None,
                    root: Path = TARGETS, host: set[str] | None = None) -> tuple[str, str]:
    """The kernel the priority list picks among the preset's kernels (those whose optional
    features ``host`` has, when given), and why."""
    prio = load_priority(root)
    zmm_slow = preset.zmm_lowers_clock or bool(
        cpu and any(m.fits(*cpu) for m in prio.zmm_slow))
    widths = {m.variant: m.width for m in preset.methods
              if host is None or set(m.needs) <= host}
    for name in prio.order:
        variant = name.rsplit("-face-", 1)[0]
        if variant not in widths:
            continue
        if widths[variant] == 512 and zmm_slow:
            continue
        why = "first in targets/kernel_priority.toml that the preset has"
        if zmm_slow and 512 in widths.values():
            why += "; zmm kernels passed over (512-bit code lowers this CPU's clock)"
        return name, why
    raise TargetError(f"preset {preset.name} has no kernel named in kernel_priority.toml")