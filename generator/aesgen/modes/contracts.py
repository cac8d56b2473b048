"""The C contracts' entry points as data (DESIGN.md, "The C contracts"): each function's
parameters in prototype order, each with the role the constant-time pass gives it at entry
(passes/secrets.py), so the skeletons find a later argument by its name and the pass finds
what is secret in one place.

Roles: "ctx" (the context), "secret" (a pointer to secret bytes: the key), "public" (a
pointer to public bytes: IV, nonce, AAD, the tag given to open), "data" (the message in or
out: secret), "n" (a public number: a length). templates/aesgen.h.j2 writes the same
prototypes; tests/test_contracts.py holds the two to each other.
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Parameter:
    name: str
    role: str


ROLES = ("ctx", "secret", "public", "data", "n")


def parameters_of(text: str) -> tuple[Parameter, ...]:
    """Parameters from "name:role name:role ..." (prototype order); an unknown role is an
    error."""
    out = tuple(Parameter(*p.split(":")) for p in text.split())
    bad = [p.role for p in out if p.role not in ROLES]
    if bad:
        raise ValueError(f"unknown role(s) {bad} in {text!r}")
    return out


@dataclass(frozen=True)
class Contract:
    """One C struct's functions (and the local functions a skeleton calls with the same
    conventions), by name."""
    name: str
    functions: dict

    def parameters(self, function: str) -> tuple[Parameter, ...]:
        if function not in self.functions:
            raise KeyError(f"the {self.name} contract has no function {function!r}")
        return self.functions[function]

    def roles(self, function: str) -> tuple[str, ...]:
        return tuple(p.role for p in self.parameters(function))

    def position(self, function: str, name: str) -> int:
        """0-based place of the parameter ``name`` in the function's prototype."""
        names = [p.name for p in self.parameters(function)]
        if name not in names:
            raise KeyError(f"{self.name}.{function} has no parameter {name!r}")
        return names.index(name)


_ONE_SHOT = ("ctx:ctx nonce:public nonce_len:n aad:public aad_len:n in:data len:n out:data "
             "tag:{tag} tag_len:n")

CTR = Contract("aesgen_kernel", {
    "init": parameters_of("ctx:ctx key:secret key_len:n iv:public"),
    "set_iv": parameters_of("ctx:ctx iv:public"),
    "xor_stream": parameters_of("ctx:ctx out:data in:data len:n"),
    "wipe": parameters_of("ctx:ctx"),
})

AEAD = Contract("aesgen_aead", {
    "init": parameters_of("ctx:ctx key:secret key_len:n"),
    # seal writes the tag (it comes from secret state); open reads the one it was given
    "seal": parameters_of(_ONE_SHOT.format(tag="data")),
    "open": parameters_of(_ONE_SHOT.format(tag="public")),
    "start": parameters_of("ctx:ctx nonce:public nonce_len:n"),
    "aad": parameters_of("ctx:ctx aad:public len:n"),
    "encrypt": parameters_of("ctx:ctx in:data len:n out:data"),
    "decrypt": parameters_of("ctx:ctx in:data len:n out:data"),
    "finish_seal": parameters_of("ctx:ctx tag:data tag_len:n"),
    "finish_open": parameters_of("ctx:ctx tag:public tag_len:n"),
    "wipe": parameters_of("ctx:ctx"),
    # GCM's local data path, called by seal, open, encrypt and decrypt (modes/gcm)
    "encrypt_data": parameters_of("ctx:ctx in:data len:n out:data final:n"),
    "decrypt_data": parameters_of("ctx:ctx in:data len:n out:data final:n"),
})
