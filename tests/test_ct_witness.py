"""valgrind's memcheck as a second, independent witness of constant time (issue 17, item 4).

Each committed x86 set is linked with tests/ct_witness.c and run once under memcheck: the
key and the plaintext are marked undefined (secret), IV, nonce, AAD and lengths stay
defined (public), and every kernel the virtual CPU runs is driven through init, the stream
or seal (GCM also under a 16-byte nonce, whose J0 comes from GHASH under the secret key).
memcheck reports a conditional jump, or an address, that depends on undefined bytes. A
constant-time kernel must get no report; a table kernel (secret-indexed T-table loads)
must get some: the witness is shown to see leaks on every set. valgrind's virtual CPU has
no VAES, VPCLMULQDQ, GFNI or AVX-512 (its CPUID says so), so those kernels are reported as
skipped with the features named; the generator's own proof has to cover them.
"""
from __future__ import annotations

import functools
import json
import platform
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

from aesgen.paths import GENERATED

WITNESS = Path(__file__).with_name("ct_witness.c")


def _x86_sets() -> list[Path]:
    return [m.parent for m in sorted(GENERATED.glob("*/manifest.json"))
            if json.loads(m.read_text()).get("arch", "x86_64") == "x86_64"]


def _cases():
    for folder in _x86_sets():
        manifest = json.loads((folder / "manifest.json").read_text())
        for k in manifest.get("kernels", []) + manifest.get("aeads", []):
            yield pytest.param(folder, k["name"], k["constant_time"],
                               id=f"{folder.name}:{k['name']}")


@functools.lru_cache(maxsize=None)
def _witness(folder: Path) -> dict[str, tuple]:
    """name -> ("ran", errors) or ("skipped", missing features), from one memcheck run."""
    if platform.machine() not in ("x86_64", "AMD64"):
        pytest.skip(f"the witness runs the x86 sets natively; this host is {platform.machine()}")
    if shutil.which("valgrind") is None:
        pytest.fail("valgrind is missing (Debian: apt-get install valgrind; ./aesgen test's "
                    "set-up installs it)")
    work = Path(tempfile.mkdtemp(prefix=f"ct-witness-{folder.name}-"))
    exe = work / "ct_witness"
    build = subprocess.run(["gcc", "-O1", "-g", "-I", str(folder), "-o", str(exe), str(WITNESS),
                            str(folder / "aesgen_registry.c"),
                            *sorted(str(p) for p in folder.glob("*.S"))],
                           capture_output=True, text=True)
    assert build.returncode == 0, build.stderr
    log = work / "memcheck.log"
    run = subprocess.run(["valgrind", "--tool=memcheck", "-q", "--error-limit=no",
                          f"--log-file={log}", str(exe)],
                         capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr + run.stdout
    results = {}
    for line in run.stdout.splitlines():
        name, first, second = line.split()
        results[name] = ("skipped", second) if first == "skipped" else ("ran", int(second))
    results["(log)"] = ("log", log)
    return results


@pytest.mark.parametrize("folder,name,constant_time", _cases())
def test_memcheck_sees_no_secret_branch_or_address(folder, name, constant_time) -> None:
    results = _witness(folder)
    assert name in results, f"the witness did not run {name}"
    kind, value = results[name]
    if kind == "skipped":
        pytest.skip(f"valgrind's virtual CPU lacks {value.replace(',', ', ')} (needed by "
                    f"{folder.name}/{name})")
    log = results["(log)"][1]
    if constant_time:
        assert value == 0, (f"memcheck saw {value} secret-dependent branches or addresses "
                            f"in {name} (declared constant time); see {log}")
    else:
        assert value > 0, (f"{name} is declared NOT constant time (table lookups), yet "
                           f"memcheck saw nothing: the witness would miss a leak")


def test_the_witness_runs_kernels_of_each_kind() -> None:
    """The sets valgrind can run give it each constant-time method it decodes and the
    table method, in each mode: a witness that ran nothing would pass everything."""
    ran = set()
    for folder in _x86_sets():
        for name, (kind, _) in _witness(folder).items():
            if kind == "ran":
                ran.add(name)
    for name in ("aesni-face-r2", "table-face-none", "bitsliced128-face-r2",
                 "bitsliced256-gcm-r2", "aesni-gcm-r1", "table-gcm-r2", "aesni-gcm-siv",
                 "aesni-otr", "aesni-otr-v2-s"):
        assert name in ran, f"no set ran {name} under memcheck"
