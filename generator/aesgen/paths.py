"""Where the repository's data folders are: the package lives in <root>/generator/aesgen."""
from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
TARGETS = ROOT / "targets"
TEMPLATES = ROOT / "templates"
GENERATED = ROOT / "generated"
