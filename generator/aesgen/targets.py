"""CPU presets and CPU features, read from the data files in <root>/targets/."""
from __future__ import annotations

import tomllib
from dataclasses import dataclass
from pathlib import Path

from .paths import TARGETS


@dataclass(frozen=True)
class Feature:
    name: str
    bit: int
    cpuid: tuple[int, int, str, int]
    xcr0: int
    cpuinfo: str


@dataclass(frozen=True)
class MethodChoice:
    """One kernel family a preset gets: ``variant`` names it (aesni, vaes512, gfni256)."""
    variant: str
    method: str
    width: int
    encoding: str
    interleave: int


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

    def method(self, name: str) -> MethodChoice | None:
        return next((m for m in self.methods if m.variant == name), None)


class TargetError(ValueError):
    """A preset, feature or method the data files do not define."""


def load_features(arch: str = "x86_64", root: Path = TARGETS) -> dict[str, Feature]:
    data = tomllib.loads((root / f"{arch}_features.toml").read_text())
    feats = {name: Feature(name, d["bit"], tuple(d["cpuid"]), d["xcr0"], d["cpuinfo"])
             for name, d in data.items()}
    bits = [f.bit for f in feats.values()]
    if len(bits) != len(set(bits)):
        raise TargetError(f"{arch}_features.toml: two features share a bit")
    return feats


def load_preset(path: Path) -> Preset:
    d = tomllib.loads(path.read_text())
    methods = tuple(MethodChoice(v, c.get("method", v), c.get("width", 128), c["encoding"],
                                 c["interleave"])
                    for v, c in d.get("methods", {}).items())
    preset = Preset(d["name"], d["arch"], d["description"], tuple(d["features"]),
                    d["mca_cpu"], d["zmm_lowers_clock"], methods, path)
    if preset.name != path.stem:
        raise TargetError(f"{path.name}: name {preset.name!r} differs from the file name")
    known = load_features(preset.arch, path.parent)
    unknown = [f for f in preset.features if f not in known]
    if unknown:
        raise TargetError(f"{path.name}: unknown features {unknown}")
    return preset


def all_presets(root: Path = TARGETS) -> dict[str, Preset]:
    return {p.stem: load_preset(p) for p in sorted(root.glob("*.toml"))
            if not p.stem.endswith("_features")}


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
        if line.startswith("flags"):
            flags = set(line.split(":", 1)[1].split())
            break
    return {f.name for f in load_features(arch).values() if f.cpuinfo in flags}


def choose_native_preset(host: set[str], root: Path = TARGETS) -> tuple[Preset, str]:
    """The preset with the most features that this CPU has all of, and why it won."""
    fitting = [p for p in all_presets(root).values() if set(p.features) <= host]
    if not fitting:
        raise TargetError("no preset fits this CPU (every preset needs AES-NI; found: "
                          f"{', '.join(sorted(host)) or 'no known features'})")
    best = max(fitting, key=lambda p: (len(p.features), p.name))
    others = [p.name for p in fitting if p is not best]
    why = (f"{best.name}: this CPU has all {len(best.features)} features it needs"
           + (f" (also fitting, with fewer features: {', '.join(others)})" if others else ""))
    return best, why
