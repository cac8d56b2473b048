"""Microarchitecture models: the facts about a CPU core that the generator's choices read,
kept as data in targets/uarch/<model>.toml, each fact with its source.

A preset names its model (``uarch = "zen3"``); the S-box timing model (netlist/timing.py),
the A64 list scheduler (kernels/a64/schedule.py) and every later choice read the facts from
there, so nothing CPU-specific stays in code. ``aesgen calibrate`` measures the same facts
on the host and writes a model file for a new CPU.

A model file:

    name = "zen3"                  # the file's stem
    arch = "x86_64"                # or "aarch64"
    description = "..."
    execution = "out-of-order"     # or "in-order"
    mca_model = "znver3"           # llvm-mca's -mcpu for this core

    [sources]                      # every fact names one of these
    mca = "llvm-mca 19 (Debian llvm-19), -mcpu=znver3, -instruction-info"

    [core]                         # the machine: CORE_FACTS
    issue_width = { value = 6, source = "mca" }

    [instructions]                 # per instruction class (INSTRUCTION_CLASSES):
    aes = { latency = 4, per_cycle = 2, source = "mca" }    # cycles; instructions a cycle

    [pipes]                        # PIPE_FACTS
    aes_clmul_shared = { value = true, source = "measured" }
"""
from __future__ import annotations

import tomllib
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from .paths import TARGETS

UARCH_DIR = TARGETS / "uarch"

# The machine as a whole. (type, what it is)
CORE_FACTS: dict[str, tuple[type, str]] = {
    "issue_width": (int, "instructions (fused uops) allocated or issued a cycle"),
    "rob": (int, "reorder-buffer entries (out-of-order cores)"),
    "retire_width": (int, "uops retired a cycle (out-of-order cores)"),
    "scheduler": (int, "scheduler entries of the vector/math ports (out-of-order cores)"),
    "vector_alu_ports": (list, "ports (pipes) that run a vector logic op such as PXOR / EOR"),
    "zmm_alu_ports": (list, "ports that run a 512-bit vector logic op, where fewer than "
                            "vector_alu_ports (Intel fuses ports 0 and 1 for 512-bit uops)"),
    "vector_shuffle_ports": (list, "ports (pipes) that run a byte shuffle (PSHUFB / TBL)"),
    "loads_per_cycle": (int, "vector loads a cycle"),
    "stores_per_cycle": (int, "vector stores (store-data uops) a cycle"),
    "store_forward_latency": (int, "cycles from a store's data to a load of it"),
}
# Latency (cycles) and throughput (instructions a cycle) per instruction class; a class
# is the instruction the kernels use for it, at the width it names.
INSTRUCTION_CLASSES: dict[str, dict[str, str]] = {
    "x86_64": {
        "vector_logic": "pxor xmm",
        "shuffle": "pshufb xmm",
        "load": "movdqu xmm <- memory (L1 hit, to use)",
        "aes": "aesenc xmm",
        "aes_ymm": "vaesenc ymm",
        "aes_zmm": "vaesenc zmm",
        "clmul": "pclmulqdq xmm",
        "clmul_ymm": "vpclmulqdq ymm",
        "clmul_zmm": "vpclmulqdq zmm",
        "ternary_logic": "vpternlogd zmm",
        "gf2p8affine": "vgf2p8affineqb xmm",
        "gp_add": "add r64",
    },
    "aarch64": {
        "vector_logic": "eor v.16b",
        "shuffle": "tbl v.16b (one table register)",
        "load": "ld1 {v.16b} (L1 hit, to use)",
        "aes": "aese v.16b + aesmc v.16b (a fused pair where the core fuses it)",
        "clmul": "pmull v.1q",
        "gp_add": "add x",
    },
}
PIPE_FACTS: dict[str, tuple[type, str]] = {
    "aes_clmul_shared": (bool, "AES and carry-less multiply issue to the same pipes"),
    "aes_shuffle_shared": (bool, "AES rounds and byte/lane shuffles issue to the same pipes "
                                 "(a shuffle takes an AES round's slot)"),
    "zmm_split": (bool, "512-bit operations run as two 256-bit halves"),
}
EXECUTION = ("out-of-order", "in-order")


class UarchError(ValueError):
    """A model file that is missing, malformed, or names a source it does not define."""


@dataclass(frozen=True)
class Fact:
    value: object
    source: str


@dataclass(frozen=True)
class Timing:
    latency: float | None       # cycles from inputs to result (None: not modelled)
    per_cycle: float | None     # independent instructions a cycle
    source: str


@dataclass(frozen=True)
class UarchModel:
    name: str
    arch: str
    description: str
    execution: str
    mca_model: str
    sources: tuple[tuple[str, str], ...]
    core: tuple[tuple[str, Fact], ...]
    instructions: tuple[tuple[str, Timing], ...]
    pipes: tuple[tuple[str, Fact], ...]
    path: Path | None = None

    def fact(self, name: str):
        """A core or pipe fact's value; UarchError naming the file when it is absent."""
        for key, f in self.core + self.pipes:
            if key == name:
                return f.value
        raise UarchError(f"{self._where()}: no fact {name!r}")

    def timing(self, cls: str) -> Timing:
        for key, t in self.instructions:
            if key == cls:
                return t
        raise UarchError(f"{self._where()}: no timing for instruction class {cls!r}")

    def latency(self, cls: str) -> int:
        t = self.timing(cls).latency
        if t is None:
            raise UarchError(f"{self._where()}: instruction class {cls!r} has no latency")
        return int(round(t))

    def source_of(self, key: str) -> str:
        """The citation behind a fact or an instruction class."""
        for k, f in self.core + self.pipes:
            if k == key:
                return dict(self.sources)[f.source]
        return dict(self.sources)[self.timing(key).source]

    def _where(self) -> str:
        return str(self.path) if self.path else f"model {self.name}"

    def to_toml(self, header: str = "") -> str:
        """The model as a file load_uarch reads back (comments other than ``header`` are
        not kept)."""
        def val(v) -> str:
            if isinstance(v, bool):
                return "true" if v else "false"
            if isinstance(v, (list, tuple)):
                return "[" + ", ".join(val(x) for x in v) + "]"
            if isinstance(v, str):
                return '"' + v.replace("\\", "\\\\").replace('"', '\\"') + '"'
            return repr(v)

        lines = [f"# {ln}" if ln else "#" for ln in header.splitlines()]
        lines += [f"name = {val(self.name)}", f"arch = {val(self.arch)}",
                  f"description = {val(self.description)}",
                  f"execution = {val(self.execution)}", f"mca_model = {val(self.mca_model)}",
                  "", "[sources]"]
        lines += [f"{k} = {val(v)}" for k, v in self.sources]
        lines += ["", "[core]"]
        lines += [f"{k} = {{ value = {val(f.value)}, source = {val(f.source)} }}"
                  for k, f in self.core]
        lines += ["", "[instructions]"]
        for k, t in self.instructions:
            parts = []
            if t.latency is not None:
                parts.append(f"latency = {val(t.latency)}")
            if t.per_cycle is not None:
                parts.append(f"per_cycle = {val(t.per_cycle)}")
            parts.append(f"source = {val(t.source)}")
            lines.append(f"{k} = {{ {', '.join(parts)} }}")
        lines += ["", "[pipes]"]
        lines += [f"{k} = {{ value = {val(f.value)}, source = {val(f.source)} }}"
                  for k, f in self.pipes]
        return "\n".join(lines) + "\n"


def parse_uarch(text: str, path: Path | None = None) -> UarchModel:
    """A model from a file's text; every problem is a UarchError naming the file."""
    where = str(path) if path else "model"
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise UarchError(f"{where}: {e}") from None
    for key in ("name", "arch", "description", "execution", "mca_model", "sources"):
        if key not in data:
            raise UarchError(f"{where}: missing {key!r}")
    arch = data["arch"]
    if arch not in INSTRUCTION_CLASSES:
        raise UarchError(f"{where}: arch {arch!r}, known: {', '.join(INSTRUCTION_CLASSES)}")
    if data["execution"] not in EXECUTION:
        raise UarchError(f"{where}: execution {data['execution']!r}, known: "
                         f"{', '.join(EXECUTION)}")
    sources = data["sources"]

    def cited(key: str, entry: dict) -> str:
        src = entry.get("source")
        if src not in sources:
            raise UarchError(f"{where}: {key} cites source {src!r}, which [sources] does "
                             "not define")
        return src

    def facts(table: str, known: dict) -> tuple:
        out = []
        for key, entry in data.get(table, {}).items():
            if key not in known:
                raise UarchError(f"{where}: unknown [{table}] fact {key!r}; known: "
                                 f"{', '.join(known)}")
            if not isinstance(entry, dict) or "value" not in entry:
                raise UarchError(f"{where}: [{table}] {key} needs {{ value = ..., source = "
                                 "... }")
            kind = known[key][0]
            value = entry["value"]
            if kind is int and (isinstance(value, bool) or not isinstance(value, int)):
                raise UarchError(f"{where}: [{table}] {key} must be an integer")
            if kind is bool and not isinstance(value, bool):
                raise UarchError(f"{where}: [{table}] {key} must be true or false")
            if kind is list:
                if not isinstance(value, list):
                    raise UarchError(f"{where}: [{table}] {key} must be a list")
                value = tuple(value)
            out.append((key, Fact(value, cited(f"[{table}] {key}", entry))))
        return tuple(out)

    classes = INSTRUCTION_CLASSES[arch]
    timings = []
    for key, entry in data.get("instructions", {}).items():
        if key not in classes:
            raise UarchError(f"{where}: unknown instruction class {key!r} for {arch}; "
                             f"known: {', '.join(classes)}")
        lat, per = entry.get("latency"), entry.get("per_cycle")
        for what, v in (("latency", lat), ("per_cycle", per)):
            if v is not None and (isinstance(v, bool) or not isinstance(v, (int, float))
                                  or v <= 0):
                raise UarchError(f"{where}: [instructions] {key}.{what} must be a positive "
                                 "number")
        timings.append((key, Timing(lat, per, cited(f"[instructions] {key}", entry))))
    return UarchModel(data["name"], arch, data["description"], data["execution"],
                      data["mca_model"], tuple(sources.items()),
                      facts("core", CORE_FACTS), tuple(timings), facts("pipes", PIPE_FACTS),
                      path)


def load_uarch(name: str, root: Path | None = None) -> UarchModel:
    """targets/uarch/<name>.toml (or <root>/<name>.toml)."""
    root = UARCH_DIR if root is None else root
    path = root / f"{name}.toml"
    if not path.is_file():
        known = sorted(p.stem for p in root.glob("*.toml"))
        raise UarchError(f"no microarchitecture model {name!r} ({path}); known: "
                         f"{', '.join(known)}")
    model = parse_uarch(path.read_text(), path)
    if model.name != name:
        raise UarchError(f"{path}: name {model.name!r} differs from the file's stem")
    return model


# The model a kernel built outside any preset (a KernelSpec with no ``uarch``: tests, ad-hoc
# specs, the netlist report) is tuned for, per instruction set: the cores the S-box round
# model and the A64 scheduler were first fitted on.
REFERENCE_UARCH = {"x86_64": "golden-cove", "aarch64": "cortex-a53"}


@lru_cache(maxsize=None)
def model_for(uarch: str, arch: str) -> UarchModel:
    """``uarch``'s model, or the instruction set's reference model when it is empty."""
    model = load_uarch(uarch or REFERENCE_UARCH[arch])
    if model.arch != arch:
        raise UarchError(f"model {model.name!r} is for {model.arch}, not {arch}")
    return model
