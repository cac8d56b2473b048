"""`aesgen vendor`: a generated set in every flavour of its instruction set, with a README and
build fragments (CMake, Meson, a Makefile include) that pick the right files for the target.

The set itself is render_set's (kernels, aesgen.h, the registry, manifest.json); this adds
only the files that let a consumer build it without knowing aesgen: each fragment chooses
the flavour from the target (Mach-O on Apple, win64 on Windows, else ELF) and refuses a
target of another instruction set by name.
"""
from __future__ import annotations

import json

from .. import __version__
from ..printer.flavours import flavours_of
from .generate import GenerateRequest, render_set, template_environment

# instruction set -> (title, CMake's CMAKE_SYSTEM_PROCESSOR pattern, Meson's cpu_family,
# the start of `cc -dumpmachine`)
ARCHES = {
    "x86_64": ("x86-64", "^(x86_64|AMD64|amd64)$", "x86_64", "x86_64%"),
    "aarch64": ("AArch64 (arm64)", "^(aarch64|arm64|ARM64)$", "aarch64", "aarch64% arm64%"),
}
FRAGMENTS = {"CMakeLists.txt": "CMakeLists.txt.j2", "meson.build": "meson.build.j2",
             "aesgen.mk": "aesgen.mk.j2", "README.md": "README.md.j2"}


def vendor_request(req: GenerateRequest) -> GenerateRequest:
    """The request with every flavour its instruction set has."""
    from dataclasses import replace
    return replace(req, flavours=flavours_of(req.preset.arch))


def render_vendor(req: GenerateRequest, jobs: int | None = None, progress=None) -> dict[str, str]:
    """File name -> text of the vendored folder; nothing touches the disk here."""
    req = vendor_request(req)
    files = render_set(req, jobs, progress)
    manifest = json.loads(files["manifest.json"])
    kernels = manifest["kernels"] + manifest["aeads"]
    sources = {f: sorted(k["flavour_files"][f] for k in kernels) for f in req.flavours}
    title, cmake_arch, meson_arch, make_arch = ARCHES[req.preset.arch]
    target = f"{req.prefix}kernels"
    env = template_environment()
    view = {"command": req.command, "version": __version__, "preset": req.preset,
            "prefix": req.prefix, "target": target, "var": target.upper(),
            "flavours": list(req.flavours), "sources": sources, "arch_title": title,
            "cmake_arch": cmake_arch, "meson_arch": meson_arch, "make_arch": make_arch,
            "kernels": kernels, "arch": req.preset.arch}
    extra = {name: env.get_template(f"vendor/{template}").render(view)
             for name, template in FRAGMENTS.items()}
    files.update(extra)
    manifest["files"] = sorted(set(manifest["files"]) | set(extra))
    files["manifest.json"] = json.dumps(manifest, indent=2, sort_keys=False) + "\n"
    return files
