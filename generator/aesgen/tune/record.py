"""Write tuned values into a preset TOML file in place: only the value on the key's line in its
table, and one `# aesgen tune (...)` comment line above it with the figures.

Every other byte of the file (comments, order, line endings) is kept, so the preset stays a
hand-edited file; the result is checked with tomllib to differ from the old data in exactly
the keys written before it replaces the file.
"""
from __future__ import annotations

import copy
import difflib
import os
import re
import tempfile
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

from .search import Outcome, digits
from .space import Value

MARK = "# aesgen tune ("


class RecordError(ValueError):
    """The preset file cannot be edited as asked (its layout is not one this tool reads)."""


@dataclass(frozen=True)
class Edit:
    table: str          # "gcm", "methods.aesni"
    key: str            # "multiply"
    value: Value
    comment: str        # the figures line, without "# "


def edits_for(outcomes: Sequence[Outcome], label: str) -> list[Edit]:
    """One edit per decided choice: its chosen value and every candidate's figure, cheapest
    first, e.g. ``aesgen tune (llvm-mca 19 znver3): karatsuba 11.90, schoolbook 13.80 ...``
    (``label`` says where the figures come from)."""
    out = []
    for o in outcomes:
        if not o.decided:
            continue
        places = digits(o.unit)
        figures = ", ".join(f"{c.value} {c.cost:.{places}f}" for c in o.ranked())
        out.append(Edit(o.choice.table, o.choice.key, o.after,
                        f"aesgen tune ({label}): {figures} {o.unit}"))
    return out


def toml_value(value: Value) -> str:
    if isinstance(value, bool) or not isinstance(value, (int, str)):
        raise RecordError(f"cannot write {value!r} as a preset value")
    if isinstance(value, int):
        return str(value)
    if not re.fullmatch(r"[A-Za-z0-9_.+-]*", value):
        raise RecordError(f"cannot write {value!r} as a plain TOML string")
    return f'"{value}"'


HEADER = re.compile(r"^\[\[?\s*([A-Za-z0-9_.-]+)\s*\]\]?\s*(#.*)?$")


def _header(line: str) -> str | None:
    m = HEADER.match(line.rstrip("\r\n"))
    return m.group(1) if m else None


def apply_edit(text: str, edit: Edit) -> str:
    """``text`` with ``edit`` made: the key's value replaced (or the key added at the end of
    its table, or the table added at the end of the file) and its comment line set."""
    lines = text.splitlines(keepends=True)
    eol = "\r\n" if lines and lines[0].endswith("\r\n") else "\n"
    comment = f"# {edit.comment}"
    assignment = f"{edit.key} = {toml_value(edit.value)}"
    starts = [i for i, ln in enumerate(lines) if _header(ln) == edit.table]
    if len(starts) > 1:
        raise RecordError(f"table [{edit.table}] appears {len(starts)} times")
    if not starts:
        tail = "" if not lines or lines[-1].endswith(("\n", "\r")) else eol
        return text + tail + eol.join(["", f"[{edit.table}]", comment, assignment, ""])
    start = starts[0]
    end = next((i for i in range(start + 1, len(lines)) if _header(lines[i]) is not None),
               len(lines))
    key_re = re.compile(rf"^(\s*{re.escape(edit.key)}\s*=\s*)(\"[^\"\n]*\"|[^\s#]+)(.*)$",
                        re.S)
    found = [i for i in range(start + 1, end) if key_re.match(lines[i])]
    if len(found) > 1:
        raise RecordError(f"key {edit.key} appears {len(found)} times in [{edit.table}]")
    if found:
        i = found[0]
        m = key_re.match(lines[i])
        lines[i] = m.group(1) + toml_value(edit.value) + m.group(3)
        indent = re.match(r"\s*", lines[i]).group(0)
        if i > start + 1 and lines[i - 1].lstrip().startswith(MARK):
            lines[i - 1] = indent + comment + eol
        else:
            lines.insert(i, indent + comment + eol)
        return "".join(lines)
    # after the table's last key line (a comment or blank line before the next header
    # belongs to that header)
    last = max((i for i in range(start, end)
                if lines[i].strip() and not lines[i].lstrip().startswith("#")), default=start)
    if not lines[last].endswith(("\n", "\r")):
        lines[last] += eol
    lines[last + 1:last + 1] = [comment + eol, assignment + eol]
    return "".join(lines)


def _set(data: dict, table: str, key: str, value: Value) -> None:
    for part in table.split("."):
        data = data.setdefault(part, {})
    data[key] = value


def edited_text(text: str, edits: Sequence[Edit]) -> str:
    """``text`` with every edit made; RecordError unless the result parses to the old data
    with exactly those keys set."""
    new = text
    for e in edits:
        new = apply_edit(new, e)
    try:
        expected = copy.deepcopy(tomllib.loads(text))
        for e in edits:
            _set(expected, e.table, e.key, e.value)
        got = tomllib.loads(new)
    except tomllib.TOMLDecodeError as err:
        raise RecordError(f"the edited file is not valid TOML: {err}") from err
    if got != expected:
        raise RecordError("editing the file would change more than the tuned keys; "
                          "its layout is not one aesgen tune can edit")
    return new


def diff(path: Path, old: str, new: str) -> str:
    """A unified diff for the terminal (every line ended, even a file's unended last)."""
    def lines(text: str) -> list[str]:
        return [ln if ln.endswith("\n") else ln + "\n" for ln in text.splitlines(True)]
    return "".join(difflib.unified_diff(lines(old), lines(new), f"{path} (now)",
                                        f"{path} (tuned)"))


def read(path: Path) -> str:
    """The file's text with its line endings as they are."""
    return path.read_bytes().decode("utf-8")


def write(path: Path, text: str) -> None:
    """``text`` to ``path`` through a temporary file and a rename, keeping the file's mode."""
    mode = path.stat().st_mode & 0o7777
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(text.encode("utf-8"))
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
