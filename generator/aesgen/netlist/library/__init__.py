"""The S-box netlists kept as data, one ``.net`` file each (format: ../format.py).

``bp113``  the 113-gate circuit of Boyar, Matthews and Peralta (published gate list)
``tower``  a tower-field circuit derived by ../derive.py (121 gates)
"""
from __future__ import annotations

from functools import cache
from pathlib import Path

from ..format import Netlist, load_netlist

HERE = Path(__file__).parent


def names() -> list[str]:
    return sorted(p.stem for p in HERE.glob("*.net"))


def path(name: str) -> Path:
    p = HERE / f"{name}.net"
    if not p.exists():
        raise KeyError(f"no netlist {name!r} in the library (have: {', '.join(names())})")
    return p


@cache
def load(name: str) -> Netlist:
    return load_netlist(path(name))


def all_netlists() -> list[Netlist]:
    return [load(n) for n in names()]
