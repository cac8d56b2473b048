"""The `aesgen` command line: list, generate, stats, configure, test.

Every command that fails on bad input prints one line, `aesgen: error: <what>`, exits with
status 2 and writes nothing.
"""
from __future__ import annotations

import json
import os
import shlex
import sys
from pathlib import Path

import click

from . import __version__
from .emit.compile import IMPLEMENTED_METHODS
from .kernels.spec import FACE_LEVELS, KEY_BITS
from .kernels.table_kernel import NOT_CONSTANT_TIME as TABLE_NOT_CONSTANT_TIME
from .paths import ROOT
from .report.bench import DEFAULT_WHAT as BENCH_DEFAULT_WHAT
from .targets import (TargetError, all_presets, choose_native_preset, find_preset,
                      host_features_from_cpuinfo)

# A64 methods whose engine does not exist yet (emit/compile.py's NOT_YET_IMPLEMENTED)
PLANNED_METHODS = tuple(m for m in ("neon-tbl", "neon-bitsliced") if m not in IMPLEMENTED_METHODS)


# methods whose kernels are not constant time, and why (`aesgen list` warns about each)
NOT_CONSTANT_TIME = {"table": TABLE_NOT_CONSTANT_TIME}


class UserError(Exception):
    """Bad input: reported as one line with exit status 2."""


def _split_list(value: str, allowed: tuple, what: str, convert=str) -> tuple:
    items = []
    for word in value.split(","):
        word = word.strip()
        if not word:
            continue
        try:
            item = convert(word)
        except ValueError:
            raise UserError(f"bad {what} {word!r}; choose from {', '.join(map(str, allowed))}")
        if item not in allowed:
            raise UserError(f"bad {what} {word!r}; choose from {', '.join(map(str, allowed))}")
        if item not in items:
            items.append(item)
    if not items:
        raise UserError(f"no {what} given")
    return tuple(sorted(items, key=allowed.index))


def _host() -> tuple[set[str], tuple[str, int, int] | None, str]:
    """This CPU's features and (vendor, family, model), from CPUID and XGETBV; from
    /proc/cpuinfo where the CPUID code cannot run."""
    from . import cpuid
    from .targets import load_features

    try:
        ident = cpuid.identity()
        return (cpuid.features(load_features()), (ident.vendor, ident.family, ident.model),
                ident.brand or ident.vendor)
    except (OSError, ValueError):
        pass
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError as e:
        raise UserError(f"cannot detect this CPU: CPUID unavailable and /proc/cpuinfo "
                        f"unreadable ({e.strerror})")
    fields = dict(line.split(":", 1) for line in text.splitlines()[:30] if ":" in line)
    fields = {k.strip(): v.strip() for k, v in fields.items()}
    try:
        cpu = (fields["vendor_id"], int(fields["cpu family"]), int(fields["model"]))
    except (KeyError, ValueError):
        cpu = None
    from .targets import host_arch
    return (host_features_from_cpuinfo(text, host_arch()), cpu,
            fields.get("model name", "unknown CPU"))


def _host_cpu_line() -> str:
    """'AuthenticAMD family 25 model 1': the CPU, as the figures it measured name it."""
    _, cpu, name = _host()
    return f"{cpu[0]} family {cpu[1]} model {cpu[2]}" if cpu else name


def _native_preset():
    host, cpu, _ = _host()
    return choose_native_preset(host, cpu=cpu)


def _selected_choices(preset, space: list, choices: str | None) -> list:
    """The choices of ``space`` that --choices names (all without it); a name the preset
    has not is an error that says why."""
    if choices is None:
        return space
    from .tune.space import why_absent

    wanted = [w.strip() for w in choices.split(",") if w.strip()]
    if not wanted:
        raise UserError("no choice given")
    for w in wanted:
        if w not in {c.name for c in space}:
            raise UserError(why_absent(preset, w))
    return [c for c in space if c.name in wanted]


def _preset_named(cpu: str):
    """The preset --cpu names (`native`: the one for this CPU)."""
    return _native_preset()[0] if cpu == "native" else find_preset(cpu)


def _output_folder(output: str) -> Path:
    """Create the report folder, or say in one line why it cannot be."""
    out_dir = Path(output)
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise UserError(f"cannot write to output folder {out_dir}: {e.strerror}")
    return out_dir


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="aesgen")
def main() -> None:
    """aesgen: generate AES-CTR and AES-GCM assembly kernels, prove them, and compare them.

    \b
    Typical use:
      aesgen list                          what methods, presets and FACE levels exist
      aesgen generate                      kernels for this CPU into out/<preset>/
      aesgen generate --cpu x86-64-v2 --face r2 -o vendor/aes
      aesgen stats out/znver4              instructions per block, by phase
      aesgen bench --quick                 ticks/byte beside OpenSSL and ipsec-mb
      aesgen compare --mca-cpu skylake     counts, instruction mix, llvm-mca cycles
      aesgen calibrate                     this core's instruction timings, as a model
      aesgen tune --cpu native --write     a preset's choices, by real runs here
      aesgen correlate                     how well the models predict runs here
      aesgen paper                         seed 000's tables reproduced on this CPU
      aesgen test                          pytest, then the GoogleTest suites vs OpenSSL
    """


def _timing_verdicts(preset: str) -> str:
    """What the data-flow pass said of the committed set generated/<preset>/ (its
    manifest), in one line; "" without a set."""
    path = ROOT / "generated" / preset / "manifest.json"
    try:
        manifest = json.loads(path.read_text())
    except (OSError, ValueError):
        return ""
    kernels = manifest.get("kernels", []) + manifest.get("aeads", [])
    proofs = [k.get("constant_time_proof") for k in kernels]
    if not kernels or None in proofs:
        return ""
    leaking = [k["name"] for k, p in zip(kernels, proofs) if p["verdict"] != "proven"]
    return (f"constant time (generated/{preset}, data-flow pass): {len(kernels) - len(leaking)}"
            f" of {len(kernels)} kernels proven" + (
                f"; NOT constant time, shown leaking: {', '.join(leaking)}" if leaking else ""))


@main.command("list")
def list_command() -> None:
    """Show the methods, CPU presets and FACE levels, and what `--cpu native` picks."""
    click.echo("methods:")
    notes = {"aesni": "AES-NI on xmm, 1 block a register",
             "armv8-ce": "AArch64 AESE/AESMC (Crypto Extension), 1 block a register",
             "neon-tbl": "AArch64, no AES instruction: TBL/TBX S-box in 16 registers, "
                         "4 blocks transposed into rows (seed 003's MixColumns)",
             "neon-bitsliced": "AArch64, no AES instruction: 8 blocks as bit slices in 8 "
                               "q-registers, bp113 netlist S-box (BSL; EOR3/BCAX with SHA3)",
             "vaes256": "VAES on ymm, 2 blocks a register",
             "vaes512": "VAES on zmm, 4 blocks a register",
             "gfni": "no AES instruction: GF2P8AFFINEINVQB S-box, on xmm/ymm/zmm "
                     "(variants gfni128, gfni256, gfni512)",
             "bitsliced": "no AES instruction, no table: 8 registers of bit slices, netlist "
                          "S-box (variants bitsliced128, bitsliced256, bitsliced512: 8/16/32 "
                          "blocks a batch)",
             "table": "scalar T-table lookups on general-purpose registers, 1 block at a "
                       "time, no SSE (seed 000's table baseline)"}
    for m in IMPLEMENTED_METHODS:
        click.echo(f"  {m:<9} {notes.get(m, '')}")
        if m in NOT_CONSTANT_TIME:
            click.echo(f"  {'':<9} WARNING: {NOT_CONSTANT_TIME[m]}")
    if PLANNED_METHODS:
        click.echo(f"  (planned, not generated yet: {', '.join(PLANNED_METHODS)})")
    click.echo("presets:")
    for name, p in all_presets().items():
        methods = ", ".join(f"{m.variant} ({m.encoding}, {m.interleave}x{m.width}-bit"
                            + (", NOT constant time" if m.method in NOT_CONSTANT_TIME else "")
                            + ")" for m in p.methods)
        click.echo(f"  {name:<14} {p.description}")
        click.echo(f"  {'':<14} methods: {methods or 'none implemented yet'}; "
                   f"llvm-mca model: {p.mca_cpu}")
        verdict = _timing_verdicts(name)
        if verdict:
            click.echo(f"  {'':<14} {verdict}")
    from .modes import MODES
    click.echo("modes:")
    def reserved(m, name: str) -> str:
        owners = [meth for meth, names in m.method_hashes if name in names]
        return f"; method{'s' if len(owners) > 1 else ''} {', '.join(owners)} only" \
            if owners else ""
    for m in MODES.values():
        extra = (f"; methods: {', '.join(m.methods)}" if m.aead else "") + (
            f"; needs {', '.join(m.needs)}" if m.needs else "") + (
            "; hash engines (the first the CPU runs): " + ", ".join(
                f"{name} ({' / '.join(sorted({f for fs in dict(ws).values() for f in fs}))}"
                + reserved(m, name) + ")"
                for name, ws in m.hashes) if m.hashes else "") + (
            f"; keys of {', '.join(str(k) for k in m.key_bits)} bits"
            if m.key_bits != (128, 192, 256) else "") + (
            f"; FACE levels so far: {', '.join(m.faces)}" if m.aead else "")
        click.echo(f"  {m.name:<9} {m.title}, checked against {m.oracle}{extra}")
    click.echo("FACE levels:")
    click.echo("  none  every round computed for every block")
    click.echo("  r1    rd0 + rd1 + rd1+: rounds 0-1 from a per-window cache and a 1 KiB table")
    click.echo("  r2    all five (rd0, rd1, rd1+, rd2, rd2+): rounds 0-2 from a cache and a "
               "4 KiB table")
    try:
        from .targets import fastest_variant

        host, cpu, brand = _host()
        preset, why = choose_native_preset(host, cpu=cpu)
        kernel, kwhy = fastest_variant(preset, cpu, host=host)
        click.echo(f"native: this CPU is {brand}" + (
            f" (vendor {cpu[0]}, family {cpu[1]}, model {cpu[2]})" if cpu else ""))
        click.echo(f"native: preset {why}")
        click.echo(f"native: fastest kernel {kernel} ({kwhy})")
    except (UserError, TargetError) as e:
        click.echo(f"native: no preset ({e})")


@main.command()
@click.option("--cpu", default="native", show_default=True, metavar="PRESET|native",
              help="CPU preset from targets/, or `native` to detect this CPU.")
@click.option("--method", "methods", default=None, metavar="M[,M]",
              help="Methods to generate (default: every method the preset lists).")
@click.option("--face", "faces", default="none,r1,r2", show_default=True,
              metavar="LEVEL[,LEVEL]", help="FACE levels of the modes that have FACE (ctr, "
              "gcm): none, r1, r2. A mode without FACE (gcm-siv: a new key every message) is "
              "generated whatever this says.")
@click.option("--mode", "modes", default=None, metavar="MODE[,MODE]",
              help="Modes: ctr (keystream kernels), gcm (AES-GCM AEAD kernels, where the "
                   "preset has PCLMULQDQ, or GFNI and AVX2 for a GHASH without it; the table "
                   "method's with lookup tables), gcm-siv (AES-GCM-SIV, RFC 8452: aesni, "
                   "vaes256 and vaes512 with the carry-less multiply of their width; 128- and "
                   "256-bit keys). Default: every mode the preset has.")
@click.option("--keys", default="128,192,256", show_default=True, metavar="BITS[,BITS]",
              help="Key sizes init accepts (others return -1).")
@click.option("--prefix", default="aesgen_", show_default=True,
              help="Prefix of every exported symbol and type.")
@click.option("-o", "--output", default=None, metavar="DIR",
              help="Output folder (default: out/<preset>).")
@click.option("-j", "--jobs", default=0, type=click.IntRange(min=0), metavar="N",
              help="Processes compiling kernels (default 0: one a CPU; the output is the "
                   "same for any N).")
@click.option("--no-scrub", "no_scrub", is_flag=True,
              help="Return without zeroing the vector registers an entry point used (by "
                   "default every entry leaves no key-derived value in them: VZEROALL and "
                   "zmm16-31, EOR on AArch64; 0 to 4 TSC ticks a call on Zen 5). For a caller that "
                   "scrubs on its own; the harness's scrub check fails such a set.")
@click.option("--flavour", "flavours", default=None, metavar="F[,F]",
              help="Object formats to write each kernel for: elf (Linux, the BSDs), macho "
                   "(macOS: x86-64 and arm64), win64 (x86-64 Windows, COFF for mingw-w64 gcc "
                   "or clang, Microsoft x64 calling convention, SEH unwind data). One file a "
                   "kernel and flavour: <kernel>.S, <kernel>-macho.S, <kernel>-win64.S, each "
                   "behind a preprocessor guard for its target, so a build may assemble them "
                   "all; one aesgen.h and registry serve every flavour. Default: this "
                   "machine's (elf on Linux).")
@click.option("--visibility", type=click.Choice(["hidden", "default"]), default="hidden",
              show_default=True,
              help="hidden: the kernels' symbols link into a static library or program but "
                   "are not exported from a shared library (.hidden on ELF, .private_extern "
                   "on Mach-O; COFF exports nothing unasked); the registry's C functions "
                   "follow your compiler's flags. default: exported like any global.")
def generate(cpu, methods, faces, keys, prefix, output, modes, jobs, no_scrub,
             flavours, visibility) -> None:
    """Generate .S kernels, aesgen.h, the registry and manifest.json for one CPU preset.

    \b
    Examples:
      aesgen generate                                  # this CPU, its preset, out/<preset>
      aesgen generate --cpu znver4 -o generated/znver4
      aesgen generate --cpu x86-64-v3 --flavour elf,macho,win64 -o vendor/x86
      aesgen generate --cpu apple-m1 --flavour macho --mode gcm --keys 128,256
    """
    _generate_set(cpu, methods, faces, keys, prefix, output, modes, jobs, no_scrub, flavours,
                  visibility)


def _generate_set(cpu, methods, faces, keys, prefix, output, modes, jobs, no_scrub, flavours,
                  visibility, render=None, all_flavours: bool = False) -> None:
    """generate's work, shared with vendor: the request from the options, the set rendered
    by ``render`` (render_set by default), written atomically, and the summary line.
    ``all_flavours``: every flavour of the preset's instruction set (vendor)."""
    import re

    from .emit.generate import (GenerateRequest, OutputError, check_output_folder, render_set,
                                write_set)
    from .passes.regalloc import AllocationError

    render = render or render_set

    if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", prefix):
        raise UserError(f"bad prefix {prefix!r}: it must be a C identifier")
    why = None
    if cpu == "native":
        from .targets import fastest_variant

        host, cpu_id, _ = _host()
        preset, why = choose_native_preset(host, cpu=cpu_id)
        kernel, kwhy = fastest_variant(preset, cpu_id, host=host)
        why += f"; fastest kernel here: {kernel} ({kwhy})"
    else:
        preset = find_preset(cpu)
    offered = tuple(m.variant for m in preset.methods)
    if methods is None:
        chosen_methods = offered
        if not offered:
            raise UserError(f"preset {preset.name} offers no method that is implemented yet "
                            f"(see targets/{preset.name}.toml)")
    else:
        known = (IMPLEMENTED_METHODS + ("gfni128", "gfni256", "gfni512", "bitsliced128",
                                        "bitsliced256", "bitsliced512") + PLANNED_METHODS)
        asked = _split_list(methods, known, "method")
        chosen = []
        for m in asked:
            if m in PLANNED_METHODS:
                raise UserError(f"method {m} is planned but not implemented yet")
            matches = [c.variant for c in preset.methods if m in (c.variant, c.method)]
            if not matches:
                raise UserError(f"preset {preset.name} has no method {m} (its CPU lacks the "
                                f"features it needs); it offers: {', '.join(offered)}")
            chosen += [v for v in matches if v not in chosen]
        chosen_methods = tuple(chosen)
    chosen_faces = _split_list(faces, FACE_LEVELS, "FACE level")
    chosen_keys = _split_list(keys, KEY_BITS, "key size", int)
    out_dir = Path(output) if output else Path("out") / preset.name
    command = "aesgen " + shlex.join(sys.argv[1:])
    from .modes import MODES
    chosen_modes = _split_list(modes, tuple(MODES), "mode") if modes else tuple(MODES)
    from .printer.flavours import FLAVOUR_NAMES, flavours_of, host_flavour
    chosen_flavours = (flavours_of(preset.arch) if all_flavours
                       else _split_list(flavours, FLAVOUR_NAMES, "flavour") if flavours
                       else (host_flavour(),))
    for f in chosen_flavours:
        if f not in flavours_of(preset.arch):
            raise UserError(f"preset {preset.name} is {preset.arch}, which has the flavours "
                            f"{', '.join(flavours_of(preset.arch))}, not {f}")
    req = GenerateRequest(preset, chosen_methods, chosen_faces, chosen_keys, prefix, command,
                          chosen_modes, scrub=not no_scrub, flavours=chosen_flavours,
                          visibility=visibility)
    try:
        check_output_folder(out_dir)            # before the minutes of compiling
    except OutputError as e:
        raise UserError(str(e))

    def progress(done: int, total: int, name: str) -> None:
        click.echo(f"\r[{done}/{total}] {name:<40}", nl=done == total, err=True)
    try:
        files = render(req, jobs or None, progress if sys.stderr.isatty() else None)
    except (ValueError, AllocationError) as e:
        raise UserError(f"cannot generate for preset {preset.name}: {e}")
    manifest = json.loads(files["manifest.json"])
    kernels = manifest["kernels"] + manifest["aeads"]
    if not kernels:
        needs = "; ".join(
            f"{m.name} needs a method its skeleton covers ({', '.join(m.methods)}), one of "
            f"its hash engines ({', '.join(name for name, _ in m.hashes)}) on the preset's "
            f"CPU and a key size among {', '.join(str(k) for k in m.key_bits)}"
            for m in (MODES[name] for name in chosen_modes) if m.aead)
        raise UserError(f"preset {preset.name} has no kernel for mode(s) "
                        f"{', '.join(chosen_modes)} with the methods and key sizes chosen"
                        + (f" ({needs})" if needs else ""))
    try:
        written = write_set(files, out_dir)
    except OutputError as e:
        raise UserError(str(e))
    if why:
        click.echo(f"aesgen: --cpu native chose {why}")
    click.echo(f"aesgen: wrote {len(written)} files for preset {preset.name} to {out_dir} "
               f"({len(kernels)} kernels: {', '.join(k['name'] for k in kernels)})")


@main.command()
@click.argument("directory", type=click.Path(file_okay=False, path_type=Path))
@click.option("--cpu", default="native", show_default=True, metavar="PRESET|native",
              help="CPU preset from targets/, or `native` to detect this CPU.")
@click.option("--method", "methods", default=None, metavar="M[,M]",
              help="Methods (default: every method the preset lists).")
@click.option("--face", "faces", default="none,r1,r2", show_default=True,
              metavar="LEVEL[,LEVEL]", help="FACE levels of the modes that have FACE.")
@click.option("--mode", "modes", default=None, metavar="MODE[,MODE]",
              help="Modes (default: every mode the preset has).")
@click.option("--keys", default="128,192,256", show_default=True, metavar="BITS[,BITS]",
              help="Key sizes init accepts.")
@click.option("--prefix", default="aesgen_", show_default=True,
              help="Prefix of every exported symbol, type, and the build target "
                   "(<prefix>kernels).")
@click.option("-j", "--jobs", default=0, type=click.IntRange(min=0), metavar="N",
              help="Processes compiling kernels (default 0: one a CPU).")
@click.option("--visibility", type=click.Choice(["hidden", "default"]), default="hidden",
              show_default=True, help="As for generate: hidden keeps the kernels' symbols "
                                      "out of a shared library's exports.")
def vendor(directory, cpu, methods, faces, keys, prefix, modes, jobs, visibility) -> None:
    """Write a folder to drop into another project's tree: every kernel in every flavour of
    the preset's instruction set (elf, macho, and win64 on x86-64), aesgen.h, the registry,
    manifest.json, a README for the folder, and build fragments that pick the flavour for
    the target: CMakeLists.txt (add_subdirectory; target <prefix>kernels), meson.build
    (subdir; <prefix>kernels_dep) and aesgen.mk (include; $(<PREFIX>KERNELS_LIB)).

    \b
    Examples:
      aesgen vendor third_party/aes --cpu x86-64-v3
      aesgen vendor third_party/aes-arm64 --cpu apple-m1 --mode ctr,gcm --keys 128,256
    """
    from .emit.vendor import render_vendor

    _generate_set(cpu, methods, faces, keys, prefix, str(directory), modes, jobs, False, None,
                  visibility, render=render_vendor, all_flavours=True)


@main.command()
@click.argument("directory", type=click.Path(file_okay=False, path_type=Path), required=False)
@click.option("--json", "as_json", is_flag=True, help="Print the counts as JSON.")
@click.option("--netlists", is_flag=True,
              help="Also the bitsliced S-box netlists: gates, and instructions per lowering "
                   "strategy (two-operand SSE, AVX, VPTERNLOGD, NEON).")
def stats(directory: Path | None, as_json: bool, netlists: bool) -> None:
    """Instructions per 16-byte block of each kernel's steady-state loop, by phase.

    Phases follow seed 000 section 5.1: counter handling, rounds 0-2, rounds 3..Nr,
    load/XOR/store, plus loop control; the FACE window refresh (once per 256 blocks) is
    shown per window and amortised per block. DIRECTORY is a generated set (it reads its
    manifest.json); with --netlists it may be left out.
    """
    from .report.stats_table import (load_aead_counts, load_counts, render_aead_table,
                                     render_table)

    if directory is None and not netlists:
        raise UserError("give a generated folder (e.g. generated/znver4), or --netlists")
    out: dict = {}
    if directory is not None:
        try:
            out["kernels"] = load_counts(directory)
            out["aeads"] = load_aead_counts(directory)
        except (OSError, ValueError, KeyError) as e:
            raise UserError(f"{directory} is not a generated set (manifest.json: {e})")
    if netlists:
        from .netlist.report import netlist_report
        out["netlists"] = netlist_report()
    if as_json:
        click.echo(json.dumps(out.get("kernels", []) if not netlists else out, indent=2))
        return
    if "kernels" in out:
        click.echo(render_table(out["kernels"]), nl=False)
    if out.get("aeads"):
        click.echo("\n" + render_aead_table(out["aeads"]), nl=False)
    if netlists:
        from .netlist.report import render_netlist_table
        click.echo("\nbitsliced AES S-box netlists, instructions per lowering strategy "
                   "(8 blocks per register set)")
        click.echo(render_netlist_table(out["netlists"]))


@main.command()
@click.option("--cpu", default="native", show_default=True, metavar="PRESET|native",
              help="Preset whose kernels are compared (compiled in memory).")
@click.option("--kernels", default=None, metavar="NAME[,NAME]",
              help="Kernel names, e.g. aesni-face-none,aesni-face-r2 (default: all).")
@click.option("--keys", default="128", show_default=True, metavar="BITS[,BITS]")
@click.option("--mca-cpu", "mca_cpus", default=None, metavar="CPU[,CPU]",
              help="llvm-mca models (default: the preset's model, icelake-server, skylake).")
@click.option("-o", "--output", default="out/compare", show_default=True, metavar="DIR",
              help="Where compare.json, compare.md and compare.png go.")
def compare(cpu, kernels, keys, mca_cpus, output) -> None:
    """Instruction counts by phase, instruction mix, and llvm-mca cycles per block.

    Answers questions like "what does FACE r2 save on Ice Lake?" without an Ice Lake:
    llvm-mca predicts the steady-state loop's throughput on each CPU model. A model that
    cannot read an instruction is named with the instruction, and the rest is shown.
    """
    from .emit.compile import compile_kernel
    from .emit.generate import GenerateRequest, plan_kernels
    from .report.compare import (compare_kernels, plot_compare, render_compare,
                                 render_markdown)

    preset = _preset_named(cpu)
    key_bits = _split_list(keys, KEY_BITS, "key size", int)
    from .modes import MODES
    req = GenerateRequest(preset, tuple(m.variant for m in preset.methods), FACE_LEVELS,
                          KEY_BITS, "aesgen_", "aesgen compare", tuple(MODES))
    specs = plan_kernels(req)
    if kernels:
        wanted = [k.strip() for k in kernels.split(",") if k.strip()]
        unknown = [k for k in wanted if k not in {s.name for s in specs}]
        if unknown:
            raise UserError(f"preset {preset.name} has no kernel {unknown[0]!r}; it has: "
                            f"{', '.join(s.name for s in specs)}")
        specs = [s for s in specs if s.name in wanted]
    cpus = tuple(dict.fromkeys(
        [c.strip() for c in mca_cpus.split(",") if c.strip()] if mca_cpus
        else [preset.mca_cpu, "icelake-server", "skylake"]))
    out_dir = _output_folder(output)
    compiled = []
    for spec in specs:
        click.echo(f"aesgen: compiling {spec.name} ...", err=True)
        compiled.append(compile_kernel(spec))
    click.echo(f"aesgen: running llvm-mca for {', '.join(cpus)} ...", err=True)
    rows = compare_kernels(compiled, key_bits, cpus, preset.arch)
    click.echo(render_compare(rows, cpus), nl=False)
    from .report.method_details import render_aarch64_references, render_details
    if preset.arch == "x86_64":
        ctr = [ck for ck in compiled if ck.spec.mode == "ctr"]
        if ctr:
            click.echo(render_details(ctr, min(key_bits)), nl=False)
    else:
        click.echo(render_aarch64_references(rows, tuple(cpus)), nl=False)
    (out_dir / "compare.json").write_text(json.dumps(
        {"preset": preset.name, "mca_cpus": list(cpus), "rows": rows}, indent=2) + "\n")
    (out_dir / "compare.md").write_text(render_markdown(rows, cpus))
    plot_compare(rows, cpus, out_dir / "compare.png",
                 f"aesgen {preset.name}: instructions and llvm-mca cycles per 16-byte block")
    click.echo(f"aesgen: wrote {out_dir}/compare.json, compare.md, compare.png")


@main.command()
@click.option("--cpu", default="native", show_default=True, metavar="PRESET|native",
              help="Preset whose OTR kernels are built with each doubling method (x86-64).")
@click.option("--mca-cpu", "mca_cpus", default="znver4,sapphirerapids,znver5",
              show_default=True, metavar="CPU[,CPU]", help="llvm-mca models.")
@click.option("--processes", default=5, show_default=True, type=click.IntRange(1, 50),
              help="Separate processes measuring each variant (median and spread).")
@click.option("--sizes", default="4096,16384", show_default=True, metavar="BYTES[,BYTES]",
              help="Record sizes the seal is measured at.")
@click.option("--no-measure", is_flag=True,
              help="Counts and llvm-mca only (no kernel is run: any CPU).")
def doubling(cpu, mca_cpus, processes, sizes, no_measure) -> None:
    """Seed 001's comparison of GF(2^128) doubling methods, on the OTR kernels.

    Each OTR kernel of the preset is built with each doubling method its register width
    takes (krovetz: Krovetz's 5 instructions a doubling; clmul: a register of consecutive
    masks moved on by one carry-less multiply). For each: instructions a step and a
    doubling, the masks' and all instructions per block of the steady loop, llvm-mca
    cycles per block on each model, and (unless --no-measure, on a CPU that runs them) the
    seal's ticks/byte with a new nonce and 13 bytes of AAD, median [min..max] over
    processes. The kernels differ in the doubling alone.
    """
    from .report import doubling as D

    preset = _preset_named(cpu)
    if preset.arch != "x86_64":
        raise UserError(f"aesgen doubling compares the x86-64 doubling engines; preset "
                        f"{preset.name} is {preset.arch}")
    cpus = tuple(c.strip() for c in mca_cpus.split(",") if c.strip())
    size_list = _split_sizes(sizes)
    if max(size_list) > D.MAX_SIZE:
        raise UserError(f"bad message size {max(size_list)}: aesgen doubling measures "
                        f"records of up to {D.MAX_SIZE} bytes")
    click.echo(f"aesgen: building {preset.name}'s OTR kernels with each doubling method "
               f"and running llvm-mca for {', '.join(cpus)} ...", err=True)
    rows = D.static_rows(preset, cpus)
    measured = {}
    if not no_measure:
        measured = D.measure(preset, processes, size_list,
                             progress=lambda m: click.echo(f"aesgen: {m}", err=True))
    click.echo(D.render(rows, measured, cpus, size_list), nl=False)


@main.command()
@click.option("--cpu", default="native", show_default=True, metavar="PRESET|native",
              help="Which generated/<preset>/ set to measure.")
@click.option("--filter", "name_filter", default=None, metavar="REGEX",
              help="Only benchmarks whose IMPL/MODE/KEYBITS/SIZE name matches.")
@click.option("--sizes", default=None, metavar="BYTES[,BYTES]",
              help="Message sizes (default 16,1024,4096,20480,40960).")
@click.option("--keys", default=None, metavar="BITS[,BITS]",
              help="Key sizes (default 128,192,256, GCM, GCM-SIV and OTR 128,256; --quick: "
                   "128).")
@click.option("--what", default=",".join(BENCH_DEFAULT_WHAT), show_default=True,
              metavar="ctr,gcm,gcm-fresh,gcm-siv,otr,ghash",
              help="Which tables, any of: the CTR ones (ctr), the AES-GCM seal ones (gcm), "
                   "the set's GCM kernels sealing the same records under fresh random "
                   "nonces (gcm-fresh: FACE's worst case, to set beside their gcm rows), "
                   "the AES-GCM-SIV seal, open and ticks-per-record ones (gcm-siv, beside "
                   "libgcrypt and BoringSSL), the AES-OTR seal, open and ticks-per-record "
                   "ones (otr, beside AES-OCB in libgcrypt and OpenSSL, with the same "
                   "method's CTR and GCM kernels for comparison), GHASH alone (ghash, "
                   "AES-128, beside constant-time GHASHs without a carry-less multiply).")
@click.option("--aead-sizes", default=None, metavar="BYTES[,BYTES]",
              help="GCM, GCM-SIV and OTR record and GHASH message sizes (default GCM and "
                   "GHASH 64,256,1420,4096,16384; GCM-SIV and OTR 16,64,256,1420,4096,16384).")
@click.option("--processes", default=3, show_default=True, type=click.IntRange(1, 100),
              help="Run the benchmark program this many times, one process after the "
                   "other; cells are medians over all, ± the spread of the per-process "
                   "medians.")
@click.option("--quick", is_flag=True,
              help="AES-128 only, fewer repetitions, short runs: a look in a few minutes.")
@click.option("--repetitions", default=None, type=click.IntRange(1, 1000),
              help="Repetitions per benchmark in each process (default: 9 in all, "
                   "--quick 3, shared among the processes, rounded up).")
@click.option("-o", "--output", default="out/bench", show_default=True, metavar="DIR",
              help="Where bench.json, bench.md and bench.png go.")
def bench(cpu, name_filter, sizes, keys, what, aead_sizes, processes, quick, repetitions,
          output) -> None:
    """Benchmark the kernels beside OpenSSL (AES-NI and masked), Intel ipsec-mb, for
    AES-GCM and AES-GCM-SIV libgcrypt and BoringSSL, and for AES-OTR AES-OCB in libgcrypt
    and OpenSSL.

    \b
    Builds build/<preset>/aesgen_bench and runs it --processes times, then (CTR) runs
    OpenSSL again with AES-NI masked (OPENSSL_ia32cap) as often, and prints one table per
    key size and mode: rows are kernels and peers, columns message sizes, cells TSC
    ticks per byte (median of all repetitions of all processes, ± half the spread of
    the per-process medians). CTR: streaming, per-message IV, fresh IV; set-up cost per
    kernel, and the message length at which each FACE level starts to pay. GCM: one
    TLS-style record sealed per iteration (new nonce, 13 bytes of AAD, 16-byte tag).
    GCM-SIV: such records sealed, and opened, beside libgcrypt's and BoringSSL's
    GCM-SIV, in ticks per byte and, up to 256 bytes, ticks per record (at 16 bytes
    mostly GCM-SIV's per-nonce key derivation and set-up).
    OTR: such records sealed, and opened, by the set's AES-OTR kernels beside AES-OCB
    (RFC 7253) in libgcrypt and OpenSSL, in ticks per byte and, up to 256 bytes, ticks
    per record; the seal table ends with the same method's CTR and GCM kernels without
    FACE (aesni, vaes512 and each OTR kernel's method) for comparison, and each OTR
    kernel's speed-up over the peers and ratio to that CTR and GCM follow at 1420 and
    16384 bytes.
    GHASH (only when asked): one AAD-only message per iteration, the set's GCM kernels
    beside OpenSSL's GHASH (with PCLMULQDQ and masked) and two constant-time GHASHs in C.
    Figures are TSC ticks, not core cycles: this VM has no core cycle counter.
    """
    import re
    import subprocess

    from .build.configure import write_build_ninja
    from .report import bench as B

    preset = _preset_named(cpu)
    folder = ROOT / "generated" / preset.name
    if not (folder / "manifest.json").exists():
        raise UserError(f"no generated set for preset {preset.name} in {folder}; run "
                        f"aesgen generate --cpu {preset.name} -o generated/{preset.name}")
    size_list = (_split_sizes(sizes) if sizes else B.STREAM_SIZES)
    key_list = (_split_list(keys, KEY_BITS, "key size", int) if keys
                else ((128,) if quick else KEY_BITS))
    what_list = _split_list(what, B.WHAT, "--what table", str)
    given_aead_sizes = _split_sizes(aead_sizes) if aead_sizes else None
    if given_aead_sizes and max(given_aead_sizes) > B.AEAD_MAX_SIZE:
        raise UserError(f"bad AEAD record size {max(given_aead_sizes)}: at most "
                        f"{B.AEAD_MAX_SIZE}")
    aead_size_list = given_aead_sizes or B.AEAD_SIZES        # gcm_seal and ghash
    siv_size_list = given_aead_sizes or B.GCM_SIV_SIZES      # gcm_siv_seal and gcm_siv_open
    otr_size_list = given_aead_sizes or B.OTR_SIZES          # otr_seal, otr_open, otr_ref
    aead_keys = tuple(b for b in key_list if b in B.AEAD_KEYS)
    if set(what_list) <= {"gcm", "gcm-fresh", "gcm-siv", "otr"} and not aead_keys:
        raise UserError(f"no {' or '.join(w.upper() for w in what_list)} table for key sizes "
                        f"{', '.join(map(str, key_list))}: they are measured with "
                        f"{' and '.join(map(str, B.AEAD_KEYS))}-bit keys")
    if "ghash" in what_list and B.GHASH_KEY not in key_list:
        raise UserError(f"no GHASH table for key sizes {', '.join(map(str, key_list))}: "
                        f"GHASH is measured under a {B.GHASH_KEY}-bit key")
    if name_filter:
        try:
            re.compile(name_filter)
        except re.error as e:
            raise UserError(f"bad --filter regular expression {name_filter!r}: {e}")
    out_dir = _output_folder(output)
    builddir = ROOT / "build"
    write_build_ninja(ROOT, builddir, "aesgen bench")
    target = builddir / preset.name / "aesgen_bench"
    click.echo(f"aesgen bench: building {target.relative_to(ROOT)}", err=True)
    if subprocess.run(["ninja", "-C", str(builddir), str(target)],
                      stdout=subprocess.DEVNULL).returncode != 0:
        raise UserError(f"could not build {target}; run ninja -C build to see why")
    reps = repetitions or B.default_repetitions(quick, processes)
    plan = B.BenchPlan(target, tuple(size_list), tuple(key_list), name_filter, reps,
                       min_time=0.05 if quick else 0.2, warmup=0.02 if quick else 0.1,
                       first_sizes=B.QUICK_FIRST_SIZES if quick else B.FIRST_SIZES,
                       what=what_list, aead_sizes=given_aead_sizes)
    try:
        main_runs = B.run_processes(plan, out_dir, "main", "aesgen kernels and peers",
                                    processes)
    except B.NothingToRun as e:
        raise UserError(str(e))
    runs = list(main_runs)
    if _child_has_work(what_list, name_filter, aead_size_list):
        runs += B.run_processes(plan, out_dir, "openssl-noaesni",
                                "OpenSSL with AES-NI and PCLMULQDQ masked (child process)",
                                processes, env=B.child_env())
    summary = B.summarize(*runs)
    skipped = B.skipped(*runs)
    context = main_runs[0].get("context", {})
    text, md = [], [f"# aesgen bench: preset {preset.name}", "",
                    f"CPU: {context.get('cpu_model', '?')}. "
                    f"{context.get('tsc_note', 'TSC ticks, not core cycles.')}", ""]
    if processes > 1:
        md += [f"{processes} processes, {reps} repetition{'s' if reps > 1 else ''} of each "
               f"benchmark in each; ± is half {B.spread_note(summary)}.", ""]
    for bits in key_list:
        for mode in B.MODES:
            t = B.table(summary, mode, bits, tuple(size_list))
            if t:
                text.append(f"\n{B.MODE_TITLES[mode]}\n{t}")
                md += [B.table(summary, mode, bits, tuple(size_list), markdown=True), ""]
    for mode in (B.AEAD_MODE, B.AEAD_FRESH_MODE):
        for bits in aead_keys:
            t = B.aead_table(summary, bits, tuple(aead_size_list), mode=mode)
            if t:
                text.append(f"\n{B.MODE_TITLES[mode]}\n{t}")
                md += [B.aead_table(summary, bits, tuple(aead_size_list), markdown=True,
                                    mode=mode), ""]
    for t, t_md in B.gcm_siv_sections(summary, aead_keys, tuple(siv_size_list)):
        text.append(t)
        md += [t_md, ""]
    for t, t_md in B.otr_sections(summary, aead_keys, tuple(otr_size_list),
                                  f"generated/{preset.name}"):
        text.append(t)
        md += [t_md, ""]
    t = B.ghash_table(summary, tuple(aead_size_list))
    if t:
        text.append(f"\n{B.MODE_TITLES[B.GHASH_MODE]}\n{t}")
        md += [B.ghash_table(summary, tuple(aead_size_list), markdown=True), ""]
    if skipped:
        text.append("\nnot measured here: " + "; ".join(f"{k} ({v})" for k, v in skipped.items()))
        md += ["**Not measured here**", ""] + [f"- {k}: {v}" for k, v in skipped.items()] + [""]
    setup = B.setup_costs(summary)
    if setup:
        text.append("\nset-up cost (init / key schedule), TSC ticks, median")
        md += ["**Set-up cost** (init, TSC ticks)", "", "| implementation | key | ticks |",
               "|---|---:|---:|"]
        for r in setup:
            text.append(f"  {r['impl']:<22}{r['key_bits']:>5}{r['ticks']:>10.0f}")
            md.append(f"| {r['impl']} | {r['key_bits']} | {r['ticks']:.0f} |")
        md.append("")
    even = B.break_even(summary)
    if even:
        text.append("\nwhere FACE starts to pay: smallest message after a fresh key at which "
                    "the FACE kernel (init included) costs no more than its `none` sibling")
        md += ["**Where FACE starts to pay** (fresh key and IV, init included)", "",
               "| kernel | versus | key | break-even |", "|---|---|---:|---:|"]
        for r in even:
            where = (f"{r['break_even_bytes']} bytes" if r["break_even_bytes"]
                     else f"not within {r['largest_tested']} bytes")
            text.append(f"  {r['impl']:<22} vs {r['versus']:<20}{r['key_bits']:>5}  {where}")
            md.append(f"| {r['impl']} | {r['versus']} | {r['key_bits']} | {where} |")
        md.append("")
    best = _fastest(summary, preset.name)
    if best:
        text.append("\n" + best)
        md += [best, ""]
    click.echo("\n".join(text))
    (out_dir / "bench.json").write_text(json.dumps(
        {"preset": preset.name, "context": context, "results": summary,
         "setup": setup, "break_even": even, "what": list(what_list),
         "otr_ratios": B.otr_ratios(summary, aead_keys, tuple(otr_size_list)),
         "processes": processes, "repetitions_per_process": reps, "skipped": skipped},
        indent=2, sort_keys=True) + "\n")
    (out_dir / "bench.md").write_text("\n".join(md) + "\n")
    bits0 = 128 if 128 in key_list else key_list[0]
    B.plot(summary, out_dir / "bench.png", bits0,
           f"aesgen {preset.name} vs peers, {context.get('cpu_model', '')} (TSC ticks/byte)")
    click.echo(f"aesgen bench: wrote {out_dir}/bench.json, bench.md, bench.png")


def _child_has_work(what: tuple, name_filter: str | None, aead_sizes: tuple) -> bool:
    """Whether the child run (OpenSSL alone, AES-NI and PCLMULQDQ masked: openssl-noaesni
    CTR, openssl-noaesni-gcm, openssl-noaesni-ghash; no GCM-SIV, which OpenSSL 3.0 lacks,
    and no OTR table)
    would run a benchmark: a table asked for has one of its names, and the user's filter
    lets one through."""
    import re

    names = {"ctr": ["openssl-noaesni/stream/128/4096"],
             "gcm": ["openssl-noaesni-gcm/gcm_seal/128/16384"],
             "gcm-fresh": [],
             "gcm-siv": [],
             "otr": [],
             "ghash": [f"openssl-noaesni-ghash/ghash/128/{s}" for s in aead_sizes]}
    return any(name_filter is None or re.search(name_filter, name)
               for table in what for name in names[table])


def _split_sizes(value: str) -> tuple[int, ...]:
    out = []
    for word in value.split(","):
        word = word.strip()
        if not word:
            continue
        if not word.isdigit() or not 1 <= int(word) <= 1 << 24:
            raise UserError(f"bad message size {word!r}: give bytes from 1 to 16777216")
        out.append(int(word))
    if not out:
        raise UserError("no message size given")
    return tuple(sorted(set(out)))


def _fastest(summary: dict, preset: str) -> str:
    rows = {r["impl"]: r["median"] for r in summary.values()
            if r["mode"] == "stream" and r["key_bits"] == 128 and r["size"] == 4096}
    ours = {k: v for k, v in rows.items() if not k.startswith(("openssl", "ipsec"))}
    if not ours:
        return ""
    name = min(ours, key=ours.get)
    parts = [f"{peer} {rows[peer] / ours[name]:.2f}x" for peer in sorted(rows)
             if peer.startswith(("openssl", "ipsec"))]
    return (f"fastest aesgen kernel here (AES-128, 4096 B, streaming): {name} at "
            f"{ours[name]:.3f} ticks/B; speed-up over " + (", ".join(parts) or "no peer"))


@main.command()
@click.option("--cpu", default="native", show_default=True, metavar="PRESET|native")
@click.option("--bench-json", default=None, type=click.Path(dir_okay=False, path_type=Path),
              help="Use this bench.json instead of running the benchmark.")
@click.option("--quick", is_flag=True, help="Fewer repetitions when running the benchmark.")
@click.pass_context
def paper(ctx, cpu, bench_json, quick) -> None:
    """Reproduce seed 000's comparisons here, with the paper's own figures beside ours.

    Prints instructions up to round 2 (base vs FACE, per method), then runs the aesni
    benchmarks (or reads --bench-json) for Table 3 style cycles/byte at 1024, 4096, 20480
    and 40960 bytes and Table 4 style set-up cost, naming this CPU and the paper's.
    """
    from .emit.compile import compile_kernel
    from .emit.generate import GenerateRequest, plan_kernels
    from .report import paper as P

    preset = _preset_named(cpu)
    req = GenerateRequest(preset, tuple(m.variant for m in preset.methods), FACE_LEVELS,
                          KEY_BITS, "aesgen_", "aesgen paper")
    compiled = [compile_kernel(spec) for spec in plan_kernels(req)]
    click.echo(P.round2_table(compiled))
    if bench_json is None:
        out = Path("out/paper")
        ctx.invoke(bench, cpu=preset.name, name_filter="^aesni-face-[a-z0-9]+/(stream|setup)/",
                   sizes="1024,4096,20480,40960", keys="128,192,256", quick=quick,
                   repetitions=None, output=str(out))
        bench_json = out / "bench.json"
    try:
        data = json.loads(bench_json.read_text())
    except (OSError, ValueError) as e:
        raise UserError(f"cannot read {bench_json}: {e}")
    cpu_name = data.get("context", {}).get("cpu_model", "this CPU")
    click.echo("")
    click.echo(P.table3(data["results"], "aesni", cpu_name))
    click.echo(P.table4(data.get("setup", []), "aesni"))


@main.command()
@click.option("--cpu", default="native", show_default=True, metavar="PRESET|native",
              help="Whose generated set to fuzz (an x86-64 preset; its kernels this CPU "
                   "cannot run are skipped and named).")
@click.option("--minutes", default=1.0, show_default=True, type=click.FloatRange(0.05, 10000),
              help="How long each target runs.")
@click.option("--target", "targets", default=",".join(("ctr", "aead")), show_default=True,
              metavar="T[,T]", help="Which targets: ctr (aesgen_kernel), aead (aesgen_aead).")
@click.option("--kernels", default=None, metavar="SUBSTR[,SUBSTR]",
              help="Only kernels whose name contains one of these.")
@click.option("--jobs", default=1, show_default=True, type=click.IntRange(1, 64),
              help="Targets run side by side.")
@click.option("--reproduce", "crash", default=None,
              type=click.Path(exists=True, dir_okay=False, path_type=Path),
              help="Run one saved input (a crash-<sha1> file) through the first target "
                   "and show what it finds.")
@click.option("-o", "--output", default="out/fuzz", show_default=True, metavar="DIR",
              help="Working corpora, logs, crash inputs and summary.json go under DIR/<preset>/.")
def fuzz(cpu, minutes, targets, kernels, jobs, crash, output) -> None:
    """Differential fuzzing of a generated set with libFuzzer, ASan and UBSan.

    \b
    Builds build/<preset>/fuzz/fuzz_ctr and fuzz_aead (clang-19; `ninja fuzz-<preset>`)
    and runs each for --minutes. fuzz_ctr drives every CTR kernel (aesgen_kernels[])
    against OpenSSL's AES-CTR; fuzz_aead every AEAD (aesgen_aeads[]) against OpenSSL's
    AES-GCM, the RFC 8452 GCM-SIV reference and the AES-OTR reference of the harness:
    fuzzer-chosen keys, nonces, lengths, stream splits, in-place calls, tampering,
    out-of-range lengths, re-keying and wipe, buffers against guard pages. Each run starts
    from the committed seeds (harness/fuzz/corpus/<target>/) and grows a working corpus
    in DIR/<preset>/<target>/corpus. A finding stops the run and exits 1, naming the
    saved input; `aesgen fuzz --cpu P --target T --reproduce FILE` replays it (with the
    run's --kernels, if it had one: an input names its kernel by its place in the list).
    """
    import subprocess
    from concurrent.futures import ThreadPoolExecutor

    from .build.configure import write_build_ninja
    from .testing import fuzz as F

    preset = _preset_named(cpu)
    target_list = _split_list(targets, F.TARGETS, "fuzz target", str)
    folder = ROOT / "generated" / preset.name
    if not (folder / "manifest.json").exists():
        raise UserError(f"no generated set for preset {preset.name} in {folder}; run "
                        f"aesgen generate --cpu {preset.name} -o generated/{preset.name}")
    if json.loads((folder / "manifest.json").read_text()).get("arch", "x86_64") != "x86_64":
        raise UserError(f"preset {preset.name} is not x86-64: the fuzz targets run natively "
                        f"(AArch64 sets are checked under qemu by the test command instead)")
    builddir = ROOT / "build"
    write_build_ninja(ROOT, builddir, "aesgen fuzz")
    click.echo(f"aesgen fuzz: building build/{preset.name}/fuzz/ (clang, ASan, UBSan)", err=True)
    built = subprocess.run(["ninja", "-C", str(builddir), f"fuzz-{preset.name}"],
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if built.returncode != 0:
        tail = "\n".join(built.stdout.splitlines()[-15:])
        raise UserError(f"could not build the fuzz targets of {preset.name} (is clang-19 "
                        f"installed? scripts/setup.sh --system installs it):\n{tail}")
    env = dict(os.environ)
    if kernels:
        env["AESGEN_FUZZ_KERNELS"] = kernels
    if crash is not None:
        binary = F.target_binary(builddir, preset.name, target_list[0])
        proc = F.reproduce(binary, crash)
        click.echo(proc.stdout)
        sys.exit(0 if proc.returncode == 0 else 1)
    out_dir = _output_folder(str(Path(output) / preset.name))

    def one(t: str):
        click.echo(f"aesgen fuzz: {preset.name} fuzz_{t} for {minutes:g} min (log: "
                   f"{out_dir / t / 'fuzz.log'})", err=True)
        return F.run_target(F.target_binary(builddir, preset.name, t), t, minutes * 60,
                            out_dir / t, env=env,
                            progress=lambda text: click.echo(f"aesgen fuzz: {text}", err=True))

    with ThreadPoolExecutor(max_workers=jobs) as pool:
        results = list(pool.map(one, target_list))
    click.echo(f"{'target':<12}{'seconds':>9}{'executions':>13}{'exec/s':>9}{'cov':>7}"
               f"{'ft':>7}{'corpus':>8}{'kernels':>9}  finding")
    for r in results:
        click.echo(f"fuzz_{r.target:<7}{r.seconds:>9.0f}{r.executions:>13}{r.exec_per_second:>9}"
                   f"{r.coverage_edges:>7}{r.features:>7}{r.corpus_units:>8}{r.kernels:>9}  "
                   f"{r.finding or 'none'}")
        for s in r.skipped:
            click.echo(f"  skipped {s}")
        if r.finding:
            narrowed = f" --kernels {shlex.quote(kernels)}" if kernels else ""
            click.echo(f"  input: {r.reproducer}; log: {r.log}; replay: aesgen fuzz --cpu "
                       f"{preset.name} --target {r.target}{narrowed} --reproduce "
                       f"{r.reproducer}")
    (out_dir / "summary.json").write_text(json.dumps(
        {"preset": preset.name, "minutes": minutes, "cpu": _host_cpu_line(),
         "results": [r.as_dict() for r in results]}, indent=2, sort_keys=True) + "\n")
    click.echo(f"aesgen fuzz: wrote {out_dir}/summary.json")
    sys.exit(1 if any(r.finding for r in results) else 0)


@main.command()
@click.option("--builddir", default="build", show_default=True, type=click.Path(path_type=Path))
def configure(builddir: Path) -> None:
    """Write <builddir>/build.ninja from build.ninja.in for the presets in generated/."""
    from .build.configure import write_build_ninja

    command = "aesgen " + shlex.join(sys.argv[1:])
    path = write_build_ninja(ROOT, ROOT / builddir, command)
    click.echo(f"aesgen: wrote {path}")


@main.command()
@click.option("--no-pytest", is_flag=True, help="Skip the generator's own pytest suite.")
@click.option("--no-harness", is_flag=True, help="Skip building and running GoogleTest.")
@click.option("--gtest-filter", default=None, help="Passed to every GoogleTest binary.")
def test(no_pytest: bool, no_harness: bool, gtest_filter: str | None) -> None:
    """Run everything: pytest for the generator, then the GoogleTest suites of every
    generated/ preset against OpenSSL, and print one total line."""
    from .testing.runner import run_all

    code = run_all(ROOT, pytest=not no_pytest, harness=not no_harness,
                   gtest_filter=gtest_filter)
    sys.exit(code)


@main.command()
@click.option("--cpu", default="native", show_default=True, metavar="PRESET|native",
              help="Preset whose microarchitecture model (its `uarch` key) and llvm-mca "
                   "model the measurements are shown beside, and --write's base model.")
@click.option("--processes", default=3, show_default=True, type=click.IntRange(1, 50),
              help="Run the microbenchmark program this many times, one after the other; "
                   "figures are medians over the processes ± half their spread.")
@click.option("--quick", is_flag=True, help="Fewer repetitions and shorter loops.")
@click.option("--write", "write_path", default=None, metavar="PATH.toml",
              type=click.Path(dir_okay=False, path_type=Path),
              help="Write a model file: measured facts cite `measured`, the rest are copied "
                   "from the preset's model with their sources.")
@click.option("--name", default=None, metavar="NAME",
              help="The model's name in --write's file (default: the file's stem, which is "
                   "what load_uarch expects, e.g. host for host.toml).")
@click.option("--force", is_flag=True, help="Let --write replace an existing file.")
def calibrate(cpu, processes, quick, write_path, name, force) -> None:
    """Measure this core: latency and instructions a cycle of each instruction class.

    \b
    For each class of targets/uarch models the host CPU has (pxor, pshufb, movdqu load,
    aesenc, vaesenc ymm/zmm, pclmulqdq, vpclmulqdq ymm/zmm, vpternlogd, gf2p8affineqb,
    add), a C program of inline-asm loops times a dependent chain (latency) and 12
    independent streams (throughput); also store-to-load forwarding, stores a cycle, and
    whether AESENC and PCLMULQDQ share pipes (interleaved vs. apart). TSC ticks become core
    cycles through a chain of 64-bit ADD (1 cycle each) timed beside every loop; an IMUL
    chain (3 cycles) checks that. A class the CPU lacks is listed as skipped with the flag.
    x86-64 only; needs gcc or cc. Examples:
      aesgen calibrate --quick
      aesgen calibrate --cpu znver3 --processes 5
      aesgen calibrate --write targets/uarch/my-host.toml
    """
    import datetime
    import os
    import re

    from .calibrate import microbench as MB
    from .calibrate import report as R
    from .targets import host_arch
    from .uarch import UarchError, load_uarch
    from .uarch_mca import mca_timings, mca_version
    from .report.compare import mca_tool

    if host_arch() != "x86_64":
        raise UserError(f"aesgen calibrate measures x86-64 cores only; this machine is "
                        f"{host_arch()}")
    if MB.find_compiler() is None:
        raise UserError("aesgen calibrate needs a C compiler: none of $CC, gcc, cc is on PATH")
    preset = _preset_named(cpu)
    if preset.arch != "x86_64":
        raise UserError(f"preset {preset.name} is for {preset.arch}; this host is x86_64")
    if write_path is not None:
        if write_path.suffix != ".toml":
            raise UserError(f"--write {write_path}: model files are TOML; give a path ending "
                            "in .toml")
        if write_path.exists() and not force:
            raise UserError(f"--write {write_path}: the file exists; pass --force to "
                            "replace it")
        folder = write_path.parent
        if not folder.is_dir():
            raise UserError(f"--write {write_path}: folder {folder} does not exist")
        if not os.access(folder, os.W_OK | os.X_OK):
            raise UserError(f"--write {write_path}: folder {folder} is not writable")
        name = name or write_path.stem
        if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9_-]*", name):
            raise UserError(f"bad model name {name!r}: letters, digits, - and _ only")
        if name != write_path.stem:
            click.echo(f"aesgen calibrate: note: model {name!r} in {write_path.name}; "
                       "load_uarch finds a model only in <name>.toml", err=True)
    elif name is not None:
        raise UserError("--name names the model --write writes; give --write too")

    context = [f"preset {preset.name} ({'chosen for this CPU' if cpu == 'native' else '--cpu'})"]
    model_name = preset.uarch
    base = None
    if not model_name:
        context.append(f"model column left out: preset {preset.name} names no "
                       "microarchitecture model (no `uarch` key)")
    else:
        try:
            base = load_uarch(model_name, preset.source.parent / "uarch")
            context.append(f"model: {model_name} ({R.display_path(base.path)})")
        except UarchError as e:
            context.append(f"model column left out: {e}")
        if base is not None and base.arch != "x86_64":
            context[-1] = f"model column left out: model {model_name} is for {base.arch}"
            base = None
    mca = {}
    if mca_tool() is None:
        context.append("mca column left out: llvm-mca is not installed")
    else:
        mca = mca_timings(preset.mca_cpu, "x86_64")
        context.append(f"mca: {mca_version()} -mcpu={preset.mca_cpu}" if mca else
                       f"mca column left out: llvm-mca read no class for -mcpu={preset.mca_cpu}")

    def progress(text: str) -> None:
        click.echo(f"aesgen calibrate: {text}", err=True)

    try:
        cal = MB.measure(processes=processes, quick=quick, progress=progress)
    except MB.CalibrateError as e:
        raise UserError(str(e))
    click.echo(R.render_table(cal, base, mca, context), nl=False)
    if write_path is not None:
        command = "aesgen " + shlex.join(sys.argv[1:])
        model, header = R.build_model(cal, name, datetime.date.today().isoformat(), base,
                                      preset.mca_cpu, command)
        try:
            R.write_atomically(write_path, R.model_text(model, header))
        except OSError as e:
            raise UserError(f"cannot write {write_path}: {e.strerror or e}")
        click.echo(f"aesgen calibrate: wrote {write_path} (model {name}"
                   + (f", unmeasured facts from {base.name}" if base else "") + ")")


@main.command()
@click.option("--cpu", default="native", show_default=True, metavar="PRESET|native|PATH.toml",
              help="Preset to tune: a name from targets/, `native`, or a preset file (e.g. a "
                   "copy to try --write on).")
@click.option("--choices", default=None, metavar="NAME[,NAME]",
              help="Choices to search, e.g. gcm.multiply,methods.aesni.interleave (default: "
                   "every choice that applies to the preset).")
@click.option("--mca-cpu", default=None, metavar="CPU",
              help="llvm-mca model that costs the candidates (default: the preset's mca_cpu).")
@click.option("--write", is_flag=True,
              help="Write the chosen values and their figures into the preset file; without "
                   "it, print what would change.")
@click.option("--cache", "cache_path", default=None, metavar="PATH",
              type=click.Path(dir_okay=False, path_type=Path),
              help="llvm-mca results kept between runs [default: out/tune/cache.json].")
@click.option("--no-cache", is_flag=True, help="Neither read nor write the cache.")
@click.option("--cost", type=click.Choice(["mca", "bound", "measured"]), default=None,
              help="What a candidate costs: llvm-mca's prediction; the throughput bound of "
                   "the preset's uarch model (x86-64; see aesgen correlate); or real runs on "
                   "this machine (all candidates in one program, interleaved; CTR 4 KiB "
                   "messages, GCM the mean of 1420-byte and 16 KiB records, AES-128). Default: "
                   "measured for --cpu "
                   "native, else mca.")
@click.option("--processes", default=5, show_default=True, type=click.IntRange(1, 50),
              help="--cost measured: processes per choice; a candidate's cost is the median "
                   "over them of its time over the current value's in the same process.")
def tune(cpu, choices, mca_cpu, write, cache_path, no_cache, cost, processes) -> None:
    """Choose a preset's interleaves, round keys, S-boxes, GHASH multiply and zmm GCM batch.

    \b
    Each choice's candidates are compiled in memory as `generate` would build them with
    that value in the preset (FACE r2; the other choices at their current values, or the
    ones chosen before in this run), and cost llvm-mca's predicted cycles per block of the
    AES-128 steady-state loop. The cheapest wins; on equal figures (2 decimals) the preset's
    value stays. A candidate whose loop the model cannot fully read has no cost. The search
    runs one choice at a time, in a fixed order: the interleave of each ladder method (on its
    CTR kernel), the round keys of each EVEX ladder method, the doubling of each GFNI
    method, the S-box netlist of each bit-sliced method (bp113 or tower), gcm.multiply
    and gcm.stitch (the part of the rounds a batch's GHASH is spread through; both on the
    fastest GCM method), gcm.zmm_batch (GCM on zmm), gcm.record_chunk (the chunks of the zmm
    GCM kernels' one-shot record path, from one byte over a chunk to the powers of H a batch
    keeps; 0, or a chunk of the batch or more, for none: only --cost measured sees it, the
    models read the batch loop).
    Generation reads only the preset file; --write records the choices there, with the
    figures in a `# aesgen tune (...)` comment above each. With --cost measured (the
    default for --cpu native) the candidates run on this machine instead, several
    processes, and a value must be 2% faster than the preset's to replace it. --cost bound
    ranks them by the throughput bound of the preset's targets/uarch model (no llvm-mca).
    Examples:
      aesgen tune --cpu native --write
      aesgen tune --cpu x86-64-v3
      aesgen tune --cpu sapphirerapids --cost bound
      aesgen tune --cpu znver4 --choices gcm.zmm_batch --mca-cpu znver4
      aesgen tune --cpu my-copy/znver3.toml --write
    """
    import re
    import tomllib

    from .report.compare import mca_tool, run_llvm_mca
    from .tune import record as TR
    from .tune import search as TS
    from .tune.space import choices_for
    from .uarch_mca import mca_version

    if cpu.endswith(".toml"):
        from .targets import load_preset

        try:
            preset = load_preset(Path(cpu))
        except OSError as e:
            raise UserError(f"cannot read preset file {cpu}: {e.strerror or e}")
        except (tomllib.TOMLDecodeError, KeyError) as e:
            raise UserError(f"{cpu} is not a preset file ({type(e).__name__}: {e})")
    else:
        preset = _preset_named(cpu)
    space = choices_for(preset)
    if not space:
        raise UserError(f"preset {preset.name} has nothing aesgen tune searches (no ladder "
                        "method and no GCM kernel)")
    space = _selected_choices(preset, space, choices)
    if cache_path is not None and no_cache:
        raise UserError("--cache and --no-cache contradict each other; give one")
    cost = cost or ("measured" if cpu == "native" else "mca")
    mca_cpu = mca_cpu or preset.mca_cpu
    if cost == "measured":
        from .targets import host_arch
        if host_arch() != preset.arch:
            raise UserError(f"--cost measured runs the kernels here: preset {preset.name} is "
                            f"for {preset.arch}, this machine is {host_arch()}")
        version = label = f"measured on {_host_cpu_line()}, {processes} processes"
    elif cost == "bound":
        from .uarch import model_for
        if preset.arch != "x86_64" or not preset.uarch:
            raise UserError(f"--cost bound reads x86-64 loops against the preset's uarch "
                            f"model: preset {preset.name} is for {preset.arch}"
                            + ("" if preset.uarch else " and names no uarch model"))
        bound_model = model_for(preset.uarch, preset.arch)
        version = label = f"bound of targets/uarch/{bound_model.name}.toml"
    else:
        if mca_tool() is None:
            raise UserError("aesgen tune needs llvm-mca (the cost model); it is not installed")
        probe = run_llvm_mca(["nop"], mca_cpu, preset.arch, 1)
        if probe.cycles_per_block is None:
            raise UserError(f"--mca-cpu {mca_cpu}: {probe.note}")
        version = mca_version()
        label = re.sub(r"^(llvm-mca \d+)\..*$", r"\1", version) + f" {mca_cpu}"
    cache = TS.Cache(None if no_cache else cache_path or TS.DEFAULT_CACHE)

    def progress(text: str) -> None:
        click.echo(f"aesgen tune: {text}", err=True)

    from .calibrate.report import display_path

    where = display_path(preset.source)
    if cost == "measured":
        click.echo(f"aesgen tune: preset {preset.name} ({where}), cost: ticks per byte "
                   f"{version}")
    elif cost == "bound":
        click.echo(f"aesgen tune: preset {preset.name} ({where}), cost: the {version}, "
                   f"cycles per block of the steady-state loop")
    else:
        click.echo(f"aesgen tune: preset {preset.name} ({where}), cost: {version} "
                   f"-mcpu={mca_cpu} cycles per block of the steady-state loop")
    from .tune.measured import MeasureError
    try:
        outcomes, _ = TS.search(preset, space, mca_cpu, version, cache, progress,
                                processes if cost == "measured" else 0,
                                bound_model if cost == "bound" else None)
    except MeasureError as e:
        raise UserError(str(e))
    try:
        cache.save()
    except OSError as e:
        progress(f"note: cannot write the cache {cache.path}: {e.strerror or e}")
    for o in outcomes:
        click.echo("")
        click.echo("\n".join(TS.render(o)))
    if any(not o.decided for o in outcomes):
        click.echo(f"\nundecided choices keep their value: llvm-mca's {mca_cpu} model gives "
                   "no comparable cost for the current one; an --mca-cpu model that reads "
                   "every instruction of the kernel (e.g. one with AVX-512 for zmm) may "
                   "decide them")
    edits = TR.edits_for(outcomes, label)
    if not edits:
        click.echo(f"\nnothing to record in {where}")
        return
    try:
        old = TR.read(preset.source)
        new = TR.edited_text(old, edits)
    except OSError as e:
        raise UserError(f"cannot read {where}: {e.strerror or e}")
    except TR.RecordError as e:
        raise UserError(f"cannot record the choices in {where}: {e}")
    changed = [f"{o.choice.name} {o.before} -> {o.after}" for o in outcomes
               if o.decided and o.after != o.before]
    summary = ", ".join(changed) if changed else "no value changes, figures only"
    if new == old:
        click.echo(f"\n{where} already records these choices and figures")
    elif write:
        try:
            TR.write(preset.source, new)
        except OSError as e:
            raise UserError(f"cannot write {where}: {e.strerror or e}")
        click.echo(f"\naesgen tune: wrote {where} ({summary}):")
        click.echo(TR.diff(Path(where), old, new), nl=False)
    else:
        click.echo(f"\nwould change {where} ({summary}); run again with --write to write it:")
        click.echo(TR.diff(Path(where), old, new), nl=False)


@main.command()
@click.option("--cpu", default="native", show_default=True, metavar="PRESET|native",
              help="Preset whose variants are predicted and timed; its CPU must be this one "
                   "(the variants run here).")
@click.option("--choices", default=None, metavar="NAME[,NAME]",
              help="Choices to spread, as aesgen tune names them (default: every choice "
                   "that applies to the preset).")
@click.option("--keys", default="128,256", show_default=True, metavar="BITS[,BITS]",
              help="Key sizes each variant is predicted and timed with.")
@click.option("--mca-cpu", default=None, metavar="CPU",
              help="llvm-mca model to correlate (default: the preset's mca_cpu).")
@click.option("--processes", default=3, show_default=True, type=click.IntRange(1, 50),
              help="Processes each timing program runs in; a variant's figure is its median.")
@click.option("--cache", "cache_path", default=None, metavar="PATH",
              type=click.Path(dir_okay=False, path_type=Path),
              help="llvm-mca results kept between runs [default: out/tune/cache.json].")
@click.option("-o", "--output", default=Path("out/correlate"), show_default=True,
              type=click.Path(file_okay=False, path_type=Path),
              help="Where <preset>.json and <preset>.txt go.")
def correlate(cpu, choices, keys, mca_cpu, processes, cache_path, output) -> None:
    """How well llvm-mca, the model aesgen tune ranks by, predicts runs on this machine.

    \b
    Every choice aesgen tune searches, at each of its values (interleaves 1..8), at FACE
    none, r1 and r2, and with each --keys size: generated as `generate` would write it,
    predicted by llvm-mca (cycles per block of the steady-state loop) and timed here (CTR
    4 KiB messages, GCM 16 KiB records; the variants of one mode and method interleaved in
    one program; a variant's figure is the median over processes of its fastest sample).
    Variants whose loop is another's are counted once. Prints every variant and Pearson's
    r and Spearman's rank correlation, over all, per mode and per method, for llvm-mca and
    for the throughput bound of the preset's uarch model.
    Examples:
      aesgen correlate
      aesgen correlate --choices gcm.zmm_batch --keys 128 --processes 5
    """
    from .report.compare import mca_tool, run_llvm_mca
    from .targets import host_arch
    from .tune import correlate as TC
    from .tune import search as TS
    from .tune.measured import MeasureError
    from .tune.space import choices_for
    from .uarch_mca import mca_version

    preset = _preset_named(cpu)
    if host_arch() != preset.arch:
        raise UserError(f"aesgen correlate runs the kernels here: preset {preset.name} is for "
                        f"{preset.arch}, this machine is {host_arch()}")
    space = choices_for(preset)
    space = _selected_choices(preset, space, choices)
    if not space:
        raise UserError(f"preset {preset.name} has nothing aesgen tune searches")
    key_bits = _split_list(keys, KEY_BITS, "key size", int)
    mca_cpu = mca_cpu or preset.mca_cpu
    if mca_tool() is None:
        raise UserError("aesgen correlate needs llvm-mca; it is not installed")
    probe = run_llvm_mca(["nop"], mca_cpu, preset.arch, 1)
    if probe.cycles_per_block is None:
        raise UserError(f"--mca-cpu {mca_cpu}: {probe.note}")
    cache = TS.Cache(cache_path or TS.DEFAULT_CACHE)

    def progress(text: str) -> None:
        click.echo(f"aesgen correlate: {text}", err=True)

    try:
        report = TC.correlate(preset, mca_cpu, mca_version(), cache, key_bits, processes,
                              space, progress)
    except MeasureError as e:
        raise UserError(str(e))
    try:
        cache.save()
    except OSError as e:
        progress(f"note: cannot write the cache {cache.path}: {e.strerror or e}")
    lines = TC.render(report)
    lines.insert(1, f"measured on {_host_cpu_line()}")
    text = "\n".join(lines) + "\n"
    click.echo(text, nl=False)
    try:
        output.mkdir(parents=True, exist_ok=True)
        data = TC.as_json(report)
        data["machine"] = _host_cpu_line()
        (output / f"{preset.name}.json").write_text(json.dumps(data, indent=1) + "\n")
        (output / f"{preset.name}.txt").write_text(text)
    except OSError as e:
        raise UserError(f"cannot write the report under {output}: {e.strerror or e}")
    click.echo(f"aesgen correlate: wrote {output}/{preset.name}.json and .txt", err=True)


def run() -> None:
    """Entry point: turn bad input into one line and exit status 2."""
    try:
        main.main(standalone_mode=False)
    except (UserError, TargetError) as e:
        click.echo(f"aesgen: error: {e}", err=True)
        sys.exit(2)
    except click.exceptions.NoSuchOption as e:
        click.echo(f"aesgen: error: {e.format_message()}", err=True)
        sys.exit(2)
    except click.UsageError as e:
        click.echo(f"aesgen: error: {e.format_message()}", err=True)
        sys.exit(2)
    except click.exceptions.Abort:
        click.echo("aesgen: aborted", err=True)
        sys.exit(1)
    except click.exceptions.Exit as e:
        sys.exit(e.exit_code)


if __name__ == "__main__":
    run()
