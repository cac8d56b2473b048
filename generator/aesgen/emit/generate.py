"""Render a generated set (kernels, header, registry, manifest) and write it atomically."""
from __future__ import annotations

import json
import os
import shutil
import tempfile
from dataclasses import dataclass, replace
from pathlib import Path

import jinja2

from .. import __version__
from ..kernels.spec import SBOX_NETLISTS, SLICED_METHODS, KernelSpec
from ..modes import encoding_for, features_for, hash_engine_for, hash_engines_of, mode
from ..paths import TEMPLATES
from ..printer.flavours import flavour as flavour_named
from ..targets import Preset, load_features, load_priority
from .compile import CompiledKernel, compile_kernel, compiled_summary


def timing_warning(ck: CompiledKernel) -> str | None:
    """Why a kernel is not constant time (None for a constant-time one): the manifest's
    `warning` field and the warning comment in aesgen.h, as its skeleton states it."""
    return ck.timing_warning

@dataclass(frozen=True)
class GenerateRequest:
    preset: Preset
    methods: tuple[str, ...]
    faces: tuple[str, ...]
    key_bits: tuple[int, ...]
    prefix: str
    command: str
    modes: tuple[str, ...] = ("ctr", "gcm")
    # a hash engine to take instead of the mode's first, where the mode offers it at a
    # kernel's width and the preset has what it needs ("" = each mode's first)
    hash_engine: str = ""
    # False: the kernels return without zeroing the vector registers they used (--no-scrub)
    scrub: bool = True
    # output flavours (printer/flavours.py), a file a kernel each: elf, macho, win64
    flavours: tuple[str, ...] = ("elf",)
    # "hidden": the kernels' symbols stay out of a shared library's dynamic symbol table
    # (a vendored static library's private code, as BoringSSL marks its assembly);
    # "default": exported like any global
    visibility: str = "hidden"


class OutputError(OSError):
    pass


def plan_kernels(req: GenerateRequest) -> list[KernelSpec]:
    """Every (mode, method, FACE level) the request asks for and the preset can run: CTR for
    each method; an AEAD for the methods its skeleton covers, where the preset has the
    features the mode needs (GCM: a hash engine, hash_engine_for), at the FACE levels built
    for it."""
    specs = []
    for name in req.modes:
        desc = mode(name)
        for method in req.methods:
            choice = req.preset.method(method)
            if choice is None:
                raise ValueError(f"preset {req.preset.name} has no method {method!r}")
            hash_engine = hash_engine_for(desc, choice.width,
                                          req.preset.features_of(choice), choice.method)
            if req.hash_engine and req.hash_engine in hash_engines_of(desc, choice.method):
                needs = features_for(desc, choice.width, req.hash_engine)
                if needs is not None and set(needs) <= set(req.preset.features_of(choice)):
                    hash_engine = req.hash_engine
            if choice.method not in desc.methods or hash_engine is None:
                continue
            encoding = encoding_for(desc, choice.width, choice.encoding)
            key_bits = tuple(k for k in req.key_bits if k in desc.key_bits)
            if not key_bits:
                continue
            # a mode without FACE levels (GCM-SIV: a key a message) is built once, "none"
            faces = req.faces if len(desc.faces) > 1 else desc.faces
            for face in faces:
                if face in desc.faces:
                    # GCM on zmm batches as the preset's [gcm] table says; elsewhere (and
                    # for CTR, and the bit-sliced methods' fixed groups) the method's
                    interleave = (req.preset.gcm_zmm_batch if desc.aead and choice.width == 512
                                  and choice.method not in SLICED_METHODS
                                  else choice.interleave)
                    specs.append(KernelSpec(choice.method, face, key_bits,
                                            interleave, encoding, req.prefix,
                                            choice.width, name,
                                            req.preset.gcm_multiply if desc.aead
                                            else "schoolbook", uarch=req.preset.uarch,
                                            round_keys=_round_keys(choice, encoding),
                                            doubling=choice.doubling, sbox=choice.sbox,
                                            hash_engine=hash_engine,
                                            stitch=(req.preset.gcm_stitch if desc.aead
                                                    else ""), scrub=req.scrub,
                                            # (the GCM skeleton builds the record
                                            # path where its kernel can take it)
                                            record_chunk=(req.preset.gcm_record_chunk
                                                          if name == "gcm" else 0)))
    return specs


def _round_keys(choice, encoding: str) -> str:
    """The preset's round-key choice for a kernel in ``encoding``: a mode may run a method
    in another encoding than its CTR kernels (then its registers decide, "")."""
    return choice.round_keys if encoding == choice.encoding else ""


def template_environment() -> jinja2.Environment:
    """The Jinja environment of templates/ (kernels, header, registry, vendor fragments)."""
    return jinja2.Environment(loader=jinja2.FileSystemLoader(TEMPLATES),
                              undefined=jinja2.StrictUndefined, keep_trailing_newline=True,
                              trim_blocks=False, autoescape=False)


# instruction set -> the template of its .S files
KERNEL_TEMPLATE = {"x86_64": "kernel_x86_64.S.j2", "aarch64": "kernel_aarch64.S.j2"}


def kernel_file_name(spec: KernelSpec, flavour: str = "elf") -> str:
    """<kernel>.S for ELF, <kernel>-macho.S and <kernel>-win64.S for the others."""
    return f"{spec.file_stem}{flavour_named(spec.arch, flavour).file_suffix}.S"


def available_cpus() -> int:
    """The CPUs this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:                      # not Linux
        return os.cpu_count() or 1


def compile_all(specs: list[KernelSpec], jobs: int | None = None,
                progress=None, flavours: tuple[str, ...] = ()) -> list[CompiledKernel]:
    """compile_kernel of every spec, in ``jobs`` processes (default: one a CPU this process
    may use), in the order given; progress(done, total, name) after each. Each kernel is
    compiled on its own, so the result does not depend on the number of processes. The
    texts of ``flavours`` (those of each spec's calling convention) are printed with it."""
    jobs = min(jobs or int(os.environ.get("AESGEN_JOBS", "0")) or available_cpus(),
               len(specs))
    if jobs <= 1:
        out = []
        for n, spec in enumerate(specs, 1):
            out.append(compile_kernel(spec))
            if progress:
                progress(n, len(specs), spec.name)
        return out
    import concurrent.futures
    import gc
    import multiprocessing

    # The kernels planned last (the AEAD modes, the higher FACE levels) take longest: they
    # go first, so that no process is left compiling a big one while the others are done.
    # A worker sends back the kernel without its instruction lists (compiled_summary):
    # pickling those and unpickling them here cost more than compiling. The workers live
    # for this set alone and keep nothing: no cyclic garbage collector there (see
    # compile.cyclic_gc_paused).
    with concurrent.futures.ProcessPoolExecutor(
            jobs, mp_context=multiprocessing.get_context("fork"),
            initializer=gc.disable) as pool:
        futures = {pool.submit(compiled_summary, specs[i], flavours): i
                   for i in reversed(range(len(specs)))}
        results: list = [None] * len(specs)
        for n, done in enumerate(concurrent.futures.as_completed(futures), 1):
            i = futures[done]
            results[i] = done.result()
            if progress:
                progress(n, len(specs), specs[i].name)
    return results


def check_output_folder(out_dir: Path) -> None:
    """Fail now, before any kernel is compiled, when the set could not be written to
    out_dir: a file there, or no folder that can be created on the way to it (a file
    in the path, a file system that refuses). Creates nothing that stays."""
    out_dir = out_dir.absolute()
    if out_dir.exists() and not out_dir.is_dir():
        raise OutputError(f"cannot write to output folder {out_dir}: it is a file, not a folder")
    existing = out_dir if out_dir.exists() else out_dir.parent
    while not existing.exists():
        existing = existing.parent
    try:
        os.rmdir(tempfile.mkdtemp(prefix=f".{out_dir.name}.", dir=existing))
    except OSError as e:
        raise OutputError(f"cannot write to output folder {out_dir}: "
                          f"{e.strerror or e}") from e


def render_set(req: GenerateRequest, jobs: int | None = None,
               progress=None) -> dict[str, str]:
    """File name -> text for the whole set; nothing touches the disk here. The kernels
    are compiled in ``jobs`` processes (compile_all)."""
    env = template_environment()
    arch = req.preset.arch
    flavours = [flavour_named(arch, f) for f in req.flavours]
    if not flavours:
        raise ValueError("no output flavour asked for")
    # each calling convention the flavours need compiles the set once; the header, the
    # registry and the manifest describe the first flavour's kernels (the others have the
    # same symbols, contexts and features)
    conventions = list(dict.fromkeys(f.abi for f in flavours))
    planned = plan_kernels(req)
    specs = [replace(s, abi=abi) for abi in conventions for s in planned]
    everything = compile_all(specs, jobs, progress, tuple(req.flavours))
    by_convention = {abi: everything[i * len(planned):(i + 1) * len(planned)]
                     for i, abi in enumerate(conventions)}
    compiled = by_convention[flavours[0].abi]
    features = sorted(load_features(req.preset.arch).values(), key=lambda f: f.bit)
    macro_prefix = req.prefix.upper()
    common = {"command": req.command, "version": __version__, "preset": req.preset,
              "prefix": req.prefix, "macro_prefix": macro_prefix}
    files: dict[str, str] = {}
    a64 = req.preset.arch == "aarch64"
    for f in flavours:
        for ck in by_convention[f.abi]:
            texts = ck.texts_for(f.name)
            functions = [{"symbol": fn.symbol, "features": fn.features, "text": texts[entry],
                          "exported": fn.exported} for entry, fn in ck.functions.items()]
            hidden = [line for fn in ck.functions.values() if fn.exported
                      and req.visibility == "hidden"
                      for line in f.hidden(f.symbol(fn.symbol))]
            files[kernel_file_name(ck.spec, f.name)] = env.get_template(
                KERNEL_TEMPLATE[arch]).render(common, kernel=_kernel_view(ck, macro_prefix),
                                              functions=functions, flavour=f, hidden=hidden,
                                              visibility=req.visibility)
    # x86 sets detect features by CPUID (regs), AArch64 sets by getauxval(AT_HWCAP) (hwcaps)
    regs = [] if a64 else [
        {"leaf_index": 0 if f.cpuid[0] == 1 else 1,
         "reg_index": ("eax", "ebx", "ecx", "edx").index(f.cpuid[2]),
         "cpuid": f.cpuid, "xcr0": f.xcr0, "name": f.name, "bit": f.bit}
        for f in features]
    hwcaps = [{"name": f.name, "bit": f.bit, "hwcap": f.hwcap, "sysctl": f.sysctl}
              for f in features] if a64 else []
    kernels = [_kernel_view(ck, macro_prefix) for ck in compiled if not mode(ck.spec.mode).aead]
    aeads = [_kernel_view(ck, macro_prefix) for ck in compiled if mode(ck.spec.mode).aead]
    key_mask = sum(1 << (128, 192, 256).index(k) for k in req.key_bits)
    files["aesgen.h"] = env.get_template("aesgen.h.j2").render(
        common, features=features, kernels=kernels, aeads=aeads,
        guard=f"{macro_prefix}GENERATED_H")
    prio = load_priority()
    names = [k["name"] for k in kernels]
    priority = [names.index(n) for n in prio.order if n in names]
    priority += [i for i in range(len(names)) if i not in priority]
    files["aesgen_registry.c"] = env.get_template("registry.c.j2").render(
        common, features=regs, hwcaps=hwcaps, kernels=kernels, key_mask=key_mask,
        priority=priority, zmm_slow=prio.zmm_slow, aeads=aeads,
        aead_priority=_aead_priority(aeads, prio.order))
    files["manifest.json"] = manifest_text(req, compiled, files)
    return files


def _aead_priority(aeads: list[dict], order: list[str]) -> list[int]:
    """AEADs fastest first: by the priority of the CTR kernel of the same method and FACE
    level (the cipher engine dominates), then in set order."""
    def rank(i: int) -> int:
        ctr_name = f"{aeads[i]['variant']}-face-{aeads[i]['face']}"
        return order.index(ctr_name) if ctr_name in order else len(order)
    return sorted(range(len(aeads)), key=lambda i: (rank(i), i))


def _kernel_view(ck: CompiledKernel, macro_prefix: str) -> dict:
    spec = ck.spec
    feats = ck.features
    desc = mode(spec.mode)
    return {
        "mode": spec.mode, "mode_title": desc.title, "variant": spec.variant,
        "entries": tuple(e for e in desc.entries if desc.has(e)),
        "slots": [f"{spec.symbol_stem}_{e}" if desc.has(e) else "0" for e in desc.entries],
        "nonce": desc.nonce, "tag": desc.tag,
        "name": spec.name, "method": spec.method, "face": spec.face,
        "constant_time": int(ck.constant_time), "features": feats,
        "feature_expr": " | ".join(f"{macro_prefix}CPU_{f}" for f in feats) or "0",
        "ctx_size": ck.ctx_size, "stem": spec.symbol_stem,
        "macro": spec.symbol_stem.upper(), "interleave": ck.interleave,
        "encoding": spec.encoding, "key_bits": spec.key_bits, "width": spec.width,
        "warning": timing_warning(ck),
        "timing_findings": len(ck.timing_findings),
        "first_timing_finding": ck.timing_findings[0] if ck.timing_findings else "",
    }


def manifest_text(req: GenerateRequest, compiled: list[CompiledKernel],
                  files: dict[str, str]) -> str:
    manifest = {
        "_comment": f"Code generated by command: {req.command}. DO NOT EDIT.",
        "generator": f"aesgen {__version__}",
        "command": req.command,
        "preset": req.preset.name,
        "arch": req.preset.arch,
        "preset_features": list(req.preset.features),
        **({"preset_optional_features": list(req.preset.optional_features)}
           if req.preset.optional_features else {}),
        "mca_cpu": req.preset.mca_cpu,
        "uarch": req.preset.uarch,
        "key_bits": list(req.key_bits),
        "prefix": req.prefix,
        **({"flavours": list(req.flavours)} if req.flavours != ("elf",) else {}),
        "visibility": req.visibility,
        "files": sorted(list(files) + ["manifest.json"]),
        "kernels": [{**_manifest_entry(ck, req.flavours), "context_fields": _context_fields(ck)}
                    for ck in compiled if not mode(ck.spec.mode).aead],
        "aeads": [{"mode": ck.spec.mode, "hash": ck.spec.hash,
                   **_manifest_entry(ck, req.flavours),
                   "nonce_bytes": _range(mode(ck.spec.mode).nonce),
                   "tag_bytes": _range(mode(ck.spec.mode).tag),
                   "context_fields": _context_fields(ck)}
                  for ck in compiled if mode(ck.spec.mode).aead],
    }
    return json.dumps(manifest, indent=2, sort_keys=False) + "\n"


def _range(r: tuple[int, int]) -> list:
    return [r[0], "SIZE_MAX" if r[1] == -1 else r[1]]


def _context_fields(ck: CompiledKernel) -> list[dict]:
    return [{"section": sec, "name": name, "offset": off, "size": size}
            for sec, name, off, size, _ in ck.context_fields]


def _manifest_entry(ck: CompiledKernel, flavours: tuple[str, ...]) -> dict:
    return {
        "name": ck.spec.name, "method": ck.spec.method, "variant": ck.spec.variant,
        "width": ck.spec.width, "face": ck.spec.face,
        "counter": ck.spec.counter_policy.name,
        "constant_time": ck.constant_time,
        **({"warning": timing_warning(ck)} if not ck.constant_time else {}),
        "constant_time_proof": _proof_entry(ck),
        "features": list(ck.features),
        "ctx_size": ck.ctx_size, "interleave": ck.interleave,
        **({"record_chunk": ck.record_chunk} if ck.record_chunk else {}),
        **({"sbox": ck.spec.sbox or SBOX_NETLISTS[0]} if ck.spec.method in SLICED_METHODS
           else {}),
        "encoding": ck.spec.encoding, "file": kernel_file_name(ck.spec, flavours[0]),
        **({"flavour_files": {f: kernel_file_name(ck.spec, f) for f in flavours}}
           if len(flavours) > 1 else {}),
        **({"scrub": False} if not ck.spec.scrub else {}),
        "symbols": {entry: fn.symbol for entry, fn in ck.functions.items() if fn.exported},
        "instruction_counts": ck.stats(),
    }


def _proof_entry(ck: CompiledKernel) -> dict:
    """The data-flow pass's report (passes/secrets.py): its verdict, the findings per entry
    point, the first few findings."""
    return {
        "by": "data flow, generator/aesgen/passes/secrets.py",
        "verdict": "proven" if ck.constant_time else "leaks",
        "findings": len(ck.timing_findings),
        "entries": dict(ck.timing_entries),
        **({"first_findings": list(ck.timing_findings[:3])} if ck.timing_findings else {}),
    }


def write_set(files: dict[str, str], out_dir: Path) -> list[Path]:
    """Write every file or none.

    The set is rendered into a temporary folder beside ``out_dir``; then each existing file
    is moved aside and the new one moved in. If any step fails, what was moved is put back,
    so the folder holds the old set or the new one. Files an older manifest listed that the
    new set lacks are removed at the end.
    """
    out_dir = out_dir.absolute()
    parent = out_dir.parent
    try:
        if out_dir.exists() and not out_dir.is_dir():
            raise OutputError(f"cannot write to output folder {out_dir}: it is a file, not a folder")
        for name in files:
            if (out_dir / name).is_dir():
                raise OutputError(f"cannot write {out_dir / name}: a folder is in the way")
        parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=f".{out_dir.name}.", dir=parent))
    except OutputError:
        raise
    except OSError as e:
        raise OutputError(f"cannot write to output folder {out_dir}: "
                          f"{e.strerror or e}") from e
    created_dir = False
    moved: list[tuple[str, bool]] = []          # (name, had an old file)
    backup = tmp / ".old"
    try:
        backup.mkdir()
        for name, text in files.items():
            (tmp / name).write_text(text)
        old = _old_manifest_files(out_dir)
        if not out_dir.exists():
            out_dir.mkdir()
            created_dir = True
        for name in sorted(files):
            had_old = (out_dir / name).exists()
            if had_old:
                os.replace(out_dir / name, backup / name)
            moved.append((name, had_old))
            os.replace(tmp / name, out_dir / name)
        for stale in sorted(old - set(files)):
            (out_dir / stale).unlink(missing_ok=True)
        return [out_dir / name for name in sorted(files)]
    except OSError as e:
        for name, had_old in reversed(moved):
            try:
                (out_dir / name).unlink(missing_ok=True)
                if had_old:
                    os.replace(backup / name, out_dir / name)
            except OSError:
                pass
        if created_dir:
            shutil.rmtree(out_dir, ignore_errors=True)
        raise OutputError(f"cannot write to output folder {out_dir}: {e.strerror or e}") from e
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _old_manifest_files(out_dir: Path) -> set[str]:
    try:
        data = json.loads((out_dir / "manifest.json").read_text())
        return {n for n in data.get("files", []) if "/" not in n}
    except (OSError, ValueError):
        return set()
