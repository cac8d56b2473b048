"""The `aesgen` command line: list, generate, stats, configure, test.

Every command that fails on bad input prints one line, `aesgen: error: <what>`, exits with
status 2 and writes nothing.
"""
from __future__ import annotations

import json
import shlex
import sys
from pathlib import Path

import click

from . import __version__
from .emit.compile import IMPLEMENTED_METHODS
from .kernels.spec import FACE_LEVELS, KEY_BITS
from .paths import ROOT
from .targets import (TargetError, all_presets, choose_native_preset, find_preset,
                      host_features_from_cpuinfo)

PLANNED_METHODS = ("vaes256", "vaes512", "gfni", "bitsliced", "table", "neon-tbl",
                   "neon-bitsliced", "armv8-ce")


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


def _native_preset():
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError as e:
        raise UserError(f"cannot read /proc/cpuinfo to detect this CPU: {e.strerror}")
    return choose_native_preset(host_features_from_cpuinfo(text))


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="aesgen")
def main() -> None:
    """aesgen: generate AES-CTR assembly kernels, prove them, and compare them.

    \b
    Typical use:
      aesgen list                          what methods, presets and FACE levels exist
      aesgen generate                      kernels for this CPU into out/<preset>/
      aesgen generate --cpu x86-64-aesni --face r2 -o vendor/aes
      aesgen stats out/znver4              instructions per block, by phase
      aesgen test                          pytest, then the GoogleTest suites vs OpenSSL
    """


@main.command("list")
def list_command() -> None:
    """Show the methods, CPU presets and FACE levels, and what `--cpu native` picks."""
    click.echo("methods:")
    for m in IMPLEMENTED_METHODS:
        click.echo(f"  {m}")
    click.echo(f"  (planned, not generated yet: {', '.join(PLANNED_METHODS)})")
    click.echo("presets:")
    for name, p in all_presets().items():
        methods = ", ".join(f"{m.method} ({m.encoding}, x{m.interleave})" for m in p.methods)
        click.echo(f"  {name:<14} {p.description}")
        click.echo(f"  {'':<14} methods: {methods}; llvm-mca model: {p.mca_cpu}")
    click.echo("FACE levels:")
    click.echo("  none  every round computed for every block")
    click.echo("  r1    rd0 + rd1 + rd1+: rounds 0-1 from a per-window cache and a 1 KiB table")
    click.echo("  r2    all five (rd0, rd1, rd1+, rd2, rd2+): rounds 0-2 from a cache and a "
               "4 KiB table")
    try:
        preset, why = _native_preset()
        click.echo(f"native: {why}")
    except (UserError, TargetError) as e:
        click.echo(f"native: no preset ({e})")


@main.command()
@click.option("--cpu", default="native", show_default=True, metavar="PRESET|native",
              help="CPU preset from targets/, or `native` to detect this CPU.")
@click.option("--method", "methods", default=None, metavar="M[,M]",
              help="Methods to generate (default: every method the preset lists).")
@click.option("--face", "faces", default="none,r1,r2", show_default=True,
              metavar="LEVEL[,LEVEL]", help="FACE levels: none, r1, r2.")
@click.option("--keys", default="128,192,256", show_default=True, metavar="BITS[,BITS]",
              help="Key sizes init accepts (others return -1).")
@click.option("--prefix", default="aesgen_", show_default=True,
              help="Prefix of every exported symbol and type.")
@click.option("-o", "--output", default=None, metavar="DIR",
              help="Output folder (default: out/<preset>).")
def generate(cpu, methods, faces, keys, prefix, output) -> None:
    """Generate .S kernels, aesgen.h, the registry and manifest.json for one CPU preset."""
    import re

    from .emit.generate import GenerateRequest, OutputError, render_set, write_set
    from .passes.regalloc import AllocationError

    if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", prefix):
        raise UserError(f"bad prefix {prefix!r}: it must be a C identifier")
    why = None
    if cpu == "native":
        preset, why = _native_preset()
    else:
        preset = find_preset(cpu)
    offered = tuple(m.method for m in preset.methods)
    if methods is None:
        chosen_methods = offered
    else:
        chosen_methods = _split_list(methods, IMPLEMENTED_METHODS + PLANNED_METHODS, "method")
        for m in chosen_methods:
            if m not in IMPLEMENTED_METHODS:
                raise UserError(f"method {m} is planned but not implemented yet")
            if m not in offered:
                raise UserError(f"preset {preset.name} has no method {m} (its CPU lacks the "
                                f"features it needs); it offers: {', '.join(offered)}")
    chosen_faces = _split_list(faces, FACE_LEVELS, "FACE level")
    chosen_keys = _split_list(keys, KEY_BITS, "key size", int)
    out_dir = Path(output) if output else Path("out") / preset.name
    command = "aesgen " + shlex.join(sys.argv[1:])
    req = GenerateRequest(preset, chosen_methods, chosen_faces, chosen_keys, prefix, command)
    try:
        files = render_set(req)
    except (ValueError, AllocationError) as e:
        raise UserError(f"cannot generate for preset {preset.name}: {e}")
    try:
        written = write_set(files, out_dir)
    except OutputError as e:
        raise UserError(str(e))
    kernels = json.loads(files["manifest.json"])["kernels"]
    if why:
        click.echo(f"aesgen: --cpu native chose {why}")
    click.echo(f"aesgen: wrote {len(written)} files for preset {preset.name} to {out_dir} "
               f"({len(kernels)} kernels: {', '.join(k['name'] for k in kernels)})")


@main.command()
@click.argument("directory", type=click.Path(file_okay=False, path_type=Path))
@click.option("--json", "as_json", is_flag=True, help="Print the counts as JSON.")
def stats(directory: Path, as_json: bool) -> None:
    """Instructions per 16-byte block of each kernel's steady-state loop, by phase.

    Phases follow seed 000 section 5.1: counter handling, rounds 0-2, rounds 3..Nr,
    load/XOR/store, plus loop control; the FACE window refresh (once per 256 blocks) is
    shown per window and amortised per block.
    """
    from .report.stats_table import load_counts, render_table

    try:
        rows = load_counts(directory)
    except (OSError, ValueError, KeyError) as e:
        raise UserError(f"{directory} is not a generated set (manifest.json: {e})")
    click.echo(json.dumps(rows, indent=2) if as_json else render_table(rows), nl=not as_json)


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
