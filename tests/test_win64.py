"""The win64 flavour at run time: kernels under the Microsoft x64 convention, under wine.

For three x86-64 presets (legacy SSE, VEX, EVEX with zmm) the set is generated with
``flavours=("win64",)``, cross-built with mingw-w64 gcc together with the Win64 harness
(harness/win64: a trampoline that checks rbx, rbp, rdi, rsi, r12-r15 and xmm6-xmm15 around
every call, with an SEH scope around it, and a driver) and run under wine. Every kernel:

- its outputs (CTR streams in pieces, with set_iv; AEAD messages of 0..4099 bytes, AAD,
  nonce and tag lengths at their limits) equal an independent reference: the
  ``cryptography`` package's OpenSSL (AES-CTR, AES-GCM with nonces of 8 bytes or more,
  AES-GCM-SIV) and the project's models where it has none (GCM with shorter nonces, OTR);
- open takes back what seal made, refuses a wrong tag with out zeroed, and the streaming
  entry points give what seal gives (the driver's own checks: a ``fail`` line);
- no call changes a callee-saved register (``abi`` lines: mask 0);
- a write into a guard page inside the kernel is caught by the caller's SEH handler, which
  Windows finds only by unwinding the kernel's frame with its .pdata/.xdata, and every
  callee-saved register and rsp come back as the unwind data says (``fault`` lines).

A kernel whose features this CPU lacks is reported skipped, the features named.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes
from cryptography.hazmat.primitives.ciphers.aead import AESGCM, AESGCMSIV

from aesgen.emit.generate import GenerateRequest, render_set
from aesgen.model import gcm as gcm_model
from aesgen.model import otr as otr_model
from aesgen.paths import GENERATED, ROOT
from aesgen.targets import all_presets

HARNESS = ROOT / "harness" / "win64"
# SSE, VEX, EVEX (zmm): preset -> FACE levels. Every kernel of x86-64-v2; of the others
# the levels with the least and the most FACE code (r1's frames are r2's)
PRESETS = {"x86-64-v2": ("none", "r1", "r2"), "x86-64-v3": ("none", "r2"),
           "znver4": ("none", "r2")}
MINGW = "x86_64-w64-mingw32-gcc"
WINE = "wine"


def _kernel_names(preset: str) -> list[str]:
    manifest = json.loads((GENERATED / preset / "manifest.json").read_text())
    return [k["name"] for k in manifest["kernels"] + manifest["aeads"]
            if k["face"] in PRESETS[preset]]


CASES = [pytest.param(p, k, id=f"{p}-{k}") for p in PRESETS for k in _kernel_names(p)]


def _missing_tools() -> list[str]:
    return [f"{t} (Debian: {pkg})" for t, pkg in ((MINGW, "gcc-mingw-w64-x86-64"),
                                                 (WINE, "wine64"))
            if shutil.which(t) is None]


def _run(cmd: list, **kw) -> subprocess.CompletedProcess:
    proc = subprocess.run([str(c) for c in cmd], capture_output=True, text=True, **kw)
    assert proc.returncode == 0, f"{' '.join(map(str, cmd))} failed ({proc.returncode}):\n" \
                                 f"{proc.stdout[-2000:]}{proc.stderr[-4000:]}"
    return proc


@pytest.fixture(scope="module")
def wine_env(tmp_path_factory) -> dict:
    missing = _missing_tools()
    if missing:
        pytest.fail("the win64 tests need " + ", ".join(missing) + "; ./aesgen test installs them")
    env = dict(os.environ, WINEPREFIX=str(tmp_path_factory.mktemp("wineprefix")),
               WINEDEBUG="-all", WINEDLLOVERRIDES="mscoree,mshtml=")
    return env


@pytest.fixture(scope="module")
def results(tmp_path_factory, wine_env):
    """``results(preset)`` -> {kernel name: [its driver lines, split]} (cached)."""
    cache: dict[str, dict[str, list[list[str]]]] = {}

    def get(preset: str):
        if preset in cache:
            return cache[preset]
        folder = tmp_path_factory.mktemp(f"win64-{preset}")
        p = all_presets()[preset]
        req = GenerateRequest(p, tuple(m.variant for m in p.methods), PRESETS[preset],
                              (128, 192, 256), "aesgen_", f"aesgen generate --cpu {preset} "
                              f"--flavour win64", ("ctr", "gcm", "gcm-siv", "otr", "otr-v2",
                                                   "otr-s", "otr-v2-s"), flavours=("win64",))
        for name, text in render_set(req).items():
            (folder / name).write_text(text)
        sources = sorted(folder.glob("*.S"))
        with ThreadPoolExecutor(os.cpu_count() or 2) as pool:
            list(pool.map(lambda s: _run([MINGW, "-c", s, "-o", s.with_suffix(".o")]),
                          sources))
        # every symbol the objects define for the linker has the set's prefix
        nm = _run(["x86_64-w64-mingw32-nm", "-g", "--defined-only",
                   *[s.with_suffix(".o") for s in sources]]).stdout
        exported = [ln.split()[-1] for ln in nm.splitlines() if len(ln.split()) == 3]
        assert exported and all(s.startswith("aesgen_") for s in exported), \
            [s for s in exported if not s.startswith("aesgen_")][:5]
        exe = folder / "driver.exe"
        _run([MINGW, "-O2", "-Wall", "-Wextra", "-Werror", "-I", folder, "-I", HARNESS,
              "-o", exe, HARNESS / "win64_driver.c", HARNESS / "win64_call.S",
              HARNESS / "win64_step.c",
              folder / "aesgen_registry.c", *[s.with_suffix(".o") for s in sources]])
        out = _run([WINE, exe], env=wine_env, timeout=600).stdout
        lines: dict[str, list[list[str]]] = {}
        done = False
        for line in out.splitlines():
            words = line.split()
            if not words:
                continue
            if words[0] == "done":
                done = True
                continue
            assert words[0] in ("ctr", "aead", "abi", "fault", "unwind", "fail", "skip"), \
                line[:200]
            lines.setdefault(words[1], []).append(words)
        assert done, f"the driver stopped early:\n{out[-2000:]}"
        cache[preset] = lines
        return lines

    return get


def _bytes(word: str) -> bytes:
    return b"" if word == "-" else bytes.fromhex(word)


def _ctr(key: bytes, iv: bytes, data: bytes) -> bytes:
    enc = Cipher(algorithms.AES(key), modes.CTR(iv)).encryptor()
    return enc.update(data) + enc.finalize()


def _aead(mode: str, key: bytes, nonce: bytes, aad: bytes, pt: bytes,
          tag_len: int) -> tuple[bytes, bytes]:
    """(ciphertext, tag) by a reference independent of the kernels."""
    if mode == "gcm":
        if len(nonce) >= 8:
            sealed = AESGCM(key).encrypt(nonce, pt, aad)
            return sealed[:len(pt)], sealed[len(pt):][:tag_len]
        ct, tag = gcm_model.seal(key, nonce, aad, pt)
        return ct, tag[:tag_len]
    if mode == "gcm-siv":
        sealed = AESGCMSIV(key).encrypt(nonce, pt, aad)
        return sealed[:len(pt)], sealed[len(pt):][:tag_len]
    return otr_model.seal_mode(mode, key, nonce, aad, pt, tag_len)


@pytest.mark.parametrize("preset,kernel", CASES)
def test_kernel_runs_under_wine(results, preset, kernel):
    lines = results(preset).get(kernel)
    assert lines, f"{kernel}: the driver printed nothing for it"
    kinds = {w[0] for w in lines}
    if "skip" in kinds:
        pytest.skip(f"{kernel} needs {' '.join(lines[0][2:])}, which this CPU lacks")
    fails = [" ".join(w) for w in lines if w[0] == "fail"]
    assert not fails, f"{kernel}: " + "; ".join(fails[:5])
    checked = 0
    stepped: set[str] = set()
    for w in lines:
        if w[0] == "ctr":
            key, iv, pt, out, iv2, pt2, out2 = map(_bytes, w[2:9])
            assert out == _ctr(key, iv, pt), f"{kernel}: stream of {len(pt)} bytes, iv {w[3]}"
            assert out2 == _ctr(key, iv2, pt2), f"{kernel}: after set_iv, iv {w[7]}"
            checked += 1
        elif w[0] == "aead":
            mode = w[2]
            key, nonce, aad, pt, ct, tag = map(_bytes, w[3:9])
            want_ct, want_tag = _aead(mode, key, nonce, aad, pt, len(tag))
            assert (ct, tag) == (want_ct, want_tag), \
                f"{kernel}: {len(pt)}-byte message, {len(aad)}-byte AAD, nonce {len(nonce)}, " \
                f"tag {len(tag)}: {'tag' if ct == want_ct else 'ciphertext'} differs"
            checked += 1
        elif w[0] == "abi":
            assert int(w[2], 16) == 0, \
                f"{kernel}: callee-saved registers changed by a call: {_registers(int(w[2], 16))}"
        elif w[0] == "unwind":
            entry, steps, bad = w[2], int(w[3]), int(w[4])
            assert steps > 1, f"{kernel}: {entry} was not stepped"
            assert bad == 0, f"{kernel}: {entry}: {bad} of {steps} instructions unwind " \
                             f"wrongly; the first {' '.join(w[5:])}"
            stepped.add(entry)
        elif w[0] == "fault":
            entry, mask, code, offset = w[2], int(w[3], 16), int(w[4], 16), int(w[5])
            assert code == 0xC0000005, f"{kernel}: {entry} into a guard page: no access " \
                                       f"violation reached the caller's SEH scope ({code:#x})"
            assert 0 <= offset < 4096, f"{kernel}: faulted at guard page + {offset}"
            assert mask == 0, f"{kernel}: after unwinding {entry}'s frame from the fault, " \
                              f"{_registers(mask)} did not come back"
    assert checked >= 14, f"{kernel}: only {checked} cases ran"
    assert {"abi", "fault"} <= kinds, f"{kernel}: no ABI or fault check ran"
    assert {"init", "wipe"} <= stepped and stepped & {"xor_stream", "seal"}, \
        f"{kernel}: entry points single-stepped: {sorted(stepped)}"


def _registers(mask: int) -> str:
    names = ["rbx", "rbp", "rdi", "rsi", "r12", "r13", "r14", "r15"] + [
        f"xmm{n}" for n in range(6, 16)]
    found = [n for i, n in enumerate(names) if mask >> i & 1]
    if mask & 0x40000:
        found.append("rsp")
    return ", ".join(found) or "none"


def test_the_checks_can_fail(tmp_path, wine_env):
    """The trampoline sees a callee that changes rdi or xmm7, and a fault in a function
    whose unwind data is wrong does not land with its registers intact."""
    asm = tmp_path / "bad.S"
    asm.write_text("""\t.text
\t.globl clobber_rdi
\t.def clobber_rdi; .scl 2; .type 32; .endef
clobber_rdi:
\t.seh_proc clobber_rdi
\t.seh_endprologue
\txorl %edi, %edi
\tret
\t.seh_endproc
\t.globl clobber_xmm7
\t.def clobber_xmm7; .scl 2; .type 32; .endef
clobber_xmm7:
\t.seh_proc clobber_xmm7
\t.seh_endprologue
\tpxor %xmm7, %xmm7
\tret
\t.seh_endproc
# pushes rbx and r12 but its unwind data says rbp for r12: unwinding from the fault gives
# rbp the caller's r12 and leaves this function's r12 (0)
\t.globl fault_lying
\t.def fault_lying; .scl 2; .type 32; .endef
fault_lying:
\t.seh_proc fault_lying
\tpushq %rbx
\t.seh_pushreg %rbx
\tpushq %r12
\t.seh_pushreg %rbp
\t.seh_endprologue
\txorl %ebx, %ebx
\txorl %r12d, %r12d
\tmovb $1, (%rcx)
\tpopq %r12
\tpopq %rbx
\tret
\t.seh_endproc
# the same without a fault, single-stepped: from the instruction after the lying push on,
# the unwind gives rbp the caller's r12
\t.globl step_lying
\t.def step_lying; .scl 2; .type 32; .endef
step_lying:
\t.seh_proc step_lying
\tpushq %rbx
\t.seh_pushreg %rbx
\tpushq %r12
\t.seh_pushreg %rbp
\t.seh_endprologue
\txorl %r12d, %r12d
\tpopq %r12
\tpopq %rbx
\tret
\t.seh_endproc
# the same with honest unwind data: the fault lands with every register back
\t.globl fault_honest
\t.def fault_honest; .scl 2; .type 32; .endef
fault_honest:
\t.seh_proc fault_honest
\tpushq %rbx
\t.seh_pushreg %rbx
\tpushq %r12
\t.seh_pushreg %r12
\t.seh_endprologue
\txorl %ebx, %ebx
\txorl %r12d, %r12d
\tmovb $1, (%rcx)
\tpopq %r12
\tpopq %rbx
\tret
\t.seh_endproc
""")
    main = tmp_path / "main.c"
    main.write_text("""#include <windows.h>
#include <stdio.h>
#include "win64_call.h"
volatile struct aesgen_win64_fault aesgen_win64_fault;
LONG aesgen_win64_fault_filter(EXCEPTION_POINTERS *ep, void *frame) {
    (void)frame; aesgen_win64_fault.count++;
    aesgen_win64_fault.code = ep->ExceptionRecord->ExceptionCode;
    return EXCEPTION_EXECUTE_HANDLER;
}
void clobber_rdi(void); void clobber_xmm7(void); void fault_lying(void *); void fault_honest(void *);
void step_lying(void);
int main(void) {
    uint64_t args[10] = {0};
    unsigned char *guard = VirtualAlloc(NULL, 4096, MEM_COMMIT | MEM_RESERVE, PAGE_NOACCESS);
    printf("%x\\n", aesgen_win64_call((void *)clobber_rdi, args, NULL));
    printf("%x\\n", aesgen_win64_call((void *)clobber_xmm7, args, NULL));
    args[0] = (uint64_t)(uintptr_t)guard;
    unsigned mask = aesgen_win64_call((void *)fault_lying, args, NULL);
    printf("%x %u\\n", mask, aesgen_win64_fault.count);
    mask = aesgen_win64_call((void *)fault_honest, args, NULL);
    printf("%x %u\\n", mask, aesgen_win64_fault.count);
    uint64_t steps = 0, bad;
    char first[256];
    bad = aesgen_win64_stepped((void *)step_lying, args, &steps, first, sizeof first);
    printf("%llu %llu %s\\n", (unsigned long long)steps, (unsigned long long)bad, first);
    return 0;
}
""")
    exe = tmp_path / "checks.exe"
    _run([MINGW, "-O1", "-I", HARNESS, "-o", exe, main, asm, HARNESS / "win64_call.S",
          HARNESS / "win64_step.c"])
    out = _run([WINE, exe], env=wine_env, timeout=120).stdout.split()
    assert out[0] == "4", f"rdi changed: mask {out[0]}"                 # AESGEN_W64_RDI
    assert out[1] == "200", f"xmm7 changed: mask {out[1]}"              # xmm7 = 0x100 << 1
    assert (out[2], out[3]) == ("12", "1"), \
        f"lying unwind data: {out[2:4]} (want rbp and r12 wrong, 1 fault)"
    assert (out[4], out[5]) == ("0", "2"), f"honest unwind data: {out[4:6]}"
    # stepped: push rbx, push r12, xor, pop, pop, ret: wrong at the xor, after the lying
    # push (from the first pop on Windows reads the epilogue from the code: right again)
    assert out[6:8] == ["6", "1"], f"stepping the lying function: {' '.join(out[6:])}"
    assert "rbp unwinds to 1b1b1b1b00000005" in " ".join(out[8:]), " ".join(out[8:])
