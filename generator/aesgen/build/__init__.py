"""Build-system glue: `aesgen configure` renders build.ninja.in into build/build.ninja.

The names below load configure.py on first use, so `python -m aesgen.build.configure`
(the regeneration edge of build.ninja) does not import it twice.
"""
from __future__ import annotations

__all__ = [
    "ConfigureError",
    "CrossToolchain",
    "Preset",
    "Toolchain",
    "cross_arch",
    "discover_presets",
    "host_arch",
    "render_build_ninja",
    "write_build_ninja",
]


def __getattr__(name: str):
    if name in __all__:
        from . import configure

        return getattr(configure, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
