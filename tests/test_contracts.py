"""The C contracts as data (modes/contracts.py) against the prototypes aesgen.h declares: the
same functions, parameters in the same order under the same names, so the constant-time
pass's roles and the skeletons' argument lookups describe the real ABI."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from aesgen.modes import MODES
from aesgen.modes.contracts import AEAD, CTR, Contract, parameters_of

HEADER = Path(__file__).parents[1] / "generated" / "znver5" / "aesgen.h"


def _struct_prototypes(text: str, struct: str) -> dict[str, list[str]]:
    """function pointer name -> parameter names, from ``typedef struct <struct> {...}``."""
    body = re.search(r"typedef struct " + struct + r" \{(.*?)\}", text, re.S).group(1)
    out = {}
    for name, params in re.findall(r"\(\*(\w+)\)\(([^)]*)\)", body, re.S):
        out[name] = [re.sub(r"\[\d+\]$", "", p.split()[-1].lstrip("*"))
                     for p in params.split(",")]
    return out


@pytest.mark.parametrize("contract", [CTR, AEAD], ids=lambda c: c.name)
def test_contract_matches_the_header(contract: Contract) -> None:
    declared = _struct_prototypes(HEADER.read_text(), contract.name)
    assert declared, f"no struct {contract.name} in {HEADER}"
    for name, params in declared.items():
        assert [p.name for p in contract.parameters(name)] == params, name
    # what the contract has beyond the struct: local functions of a skeleton only
    assert set(contract.functions) - set(declared) <= {"encrypt_data", "decrypt_data"}


def test_every_mode_entry_has_roles() -> None:
    for m in MODES.values():
        for entry in m.entries:
            assert len(m.contract.roles(entry)) >= 1, (m.name, entry)


def test_roles_and_positions() -> None:
    assert AEAD.roles("seal")[:6] == ("ctx", "public", "n", "public", "n", "data")
    assert AEAD.parameters("open")[8].role == "public"      # the tag open is given
    assert AEAD.parameters("seal")[8].role == "data"        # the tag seal writes
    assert [AEAD.position("seal", n) for n in ("len", "out", "tag", "tag_len")] == [6, 7, 8, 9]
    with pytest.raises(KeyError, match="no parameter"):
        AEAD.position("seal", "iv")
    with pytest.raises(KeyError, match="no function"):
        CTR.roles("seal")
    with pytest.raises(ValueError, match="unknown role"):
        parameters_of("ctx:ctx key:hidden")
