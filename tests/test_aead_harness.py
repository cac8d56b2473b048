"""harness/aead_tests.cc can fail: it is built with the real trampoline (harness/abi_check_<arch>.S)
against a mock set (tests/aead_mock/: an aesgen.h with the AEAD contract of DESIGN.md,
mock_gcm.c, AES-GCM over OpenSSL's AES with a GHASH of its own, mock_gcm_siv.c, AES-GCM-SIV
over OpenSSL's AES with a POLYVAL computed through GHASH, and mock_otr.c, AES-OTR v3.1 and v2
with parallel and serial AD over OpenSSL's AES, pair by pair on 64-bit words). The correct mock
passes every test; each mock broken on purpose (a compile-time switch of mock_gcm.c) fails the
tests that look at what it breaks:

- LEAVES_PLAINTEXT: open leaves the plaintext in out when the tag is wrong;
- ACCEPTS_WRONG_TAG: open and finish_open accept any tag;
- IGNORES_TAG_LEN: tags are always 16 bytes (written, compared), tag_len unchecked;
- WRITES_PAST_CTX: init writes one byte at ctx + ctx_size;
- INC128: the counter carries out of bytes 12..15 (only the inc32 wrap test can see it);
- AAD_AFTER_DATA: aad after data began is taken;
- WIPE_KEEPS_KEY: wipe leaves the key in the context.

The same for the GCM-SIV kernel (switches of mock_gcm_siv.c, BROKEN_SIV):

- SIV_LEAVES_PLAINTEXT: open leaves the decrypted plaintext in out when the tag is wrong;
- SIV_ACCEPTS_WRONG_TAG: open accepts any tag;
- SIV_CTR64: the counter carries out of bytes 0..3 into byte 4 (only the wrap tests see it);
- SIV_CTR_BE: the counter is big-endian in bytes 0..3;
- SIV_NO_NONCE_XOR: the nonce is not XORed into the POLYVAL result;
- SIV_IGNORES_TAG_LEN: tags are always 16 bytes, tag_len unchecked;
- SIV_TAKES_192: init takes 24-byte keys;
- SIV_REFUSED_INIT_CLEARS: a refused init clears the context (forgets the key);
- SIV_SEALS_WITHOUT_KEY: seal on a context without a key seals;
- SIV_NO_LENGTH_LIMIT: no 2^36 limit on the message or the AAD.

The same for the OTR kernels (switches of mock_otr.c, BROKEN_OTR; each breaks every OTR kernel of
the mock, or only those of the variant it names):

- OTR_LEAVES_PLAINTEXT: open leaves the decrypted plaintext in out when the tag is wrong;
- OTR_ACCEPTS_WRONG_TAG: open accepts any tag;
- OTR_NO_NONCE_CHECK: nonces of 0 and of 16 or more bytes are taken (the first 15 in Format);
- OTR_NO_TAG_CHECK: tags of 0 and of 17 or more bytes are taken (16 written or compared);
- OTR_FORMAT_OVERWRITES: Format stores the tag length into byte 0, losing the 1 of a 15-byte nonce;
- OTR_TAU_NOT_IN_FORMAT: Format leaves the tag length out;
- OTR_B16_NO_SWAP: a tail of two full blocks comes out in the pair's order, not swapped;
- OTR_EMPTY_IS_FULL: the empty message takes the final offset of a full last block;
- OTR_EMPTY_AD_DIGEST: empty AD gives TA = E(pad(empty)), not 0;
- OTR_AD_MASKS_SWAPPED: the last AD block takes the multiple of the other case (full/partial);
- OTR_WRITES_PAST_END: seal writes the byte after a partial one-block tail;
- OTR_TAKES_192: init takes 24-byte keys;
- OTR_INIT_KEEPS_Q: init on a context that had a key keeps that key's E(0);
- OTR_S_NO_DOUBLING: v3.1-s does not double U xor TA (the other kernels pass);
- OTR_V2_THREE_L: v2 takes 3 L_i as the second-round mask (the v3.1 kernels pass).

The mock set has ten kernels. Three GCM ones: one with method "table" and constant_time 0
(listed first, so aesgen_best_aead must pass over it), a constant-time one, and one that needs a
CPU feature no CPU has (skipped, or a failure under AESGEN_TEST_EXPECT_ALL_KERNELS=1). Two
GCM-SIV ones: one that needs that feature (listed first, so aesgen_best_aead("gcm-siv") must pass
over it) and one that runs. Five OTR ones: one of mode "otr" that needs that feature (listed
first), then one of each mode, "otr", "otr-v2", "otr-s" and "otr-v2-s". The GCM-SIV and OTR
kernels run every test that applies to them; the tests of one mode alone (GCM_ONLY, SIV_ONLY,
OTR_ONLY) are instantiated over the kernels of that mode only. A broken variant's run leaves
out the kernel tests of the modes its switch does not touch (that source is compiled without
it).

The harness is compiled once at -O0 (the time goes into compiling GoogleTest's templates, not
into running) and linked against each mock; the runs are at AESGEN_TEST_SCALE=0.2. Skipped,
naming what is missing, without g++, GoogleTest or OpenSSL's headers.
"""
from __future__ import annotations

import os
import platform
import shutil
import subprocess
import xml.etree.ElementTree as ET
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from aesgen.paths import ROOT

HARNESS = ROOT / "harness"
MOCK = ROOT / "tests" / "aead_mock"
ARCH = {"x86_64": "x86_64", "amd64": "x86_64", "aarch64": "aarch64",
        "arm64": "aarch64"}.get(platform.machine().lower())
SCALE = "0.2"

# variant -> tests (of the constant-time kernel, mock_gcm) that must fail
BROKEN = {
    "LEAVES_PLAINTEXT": {"Tampering", "InPlace", "EveryTagLength"},
    "ACCEPTS_WRONG_TAG": {"Tampering", "InPlace", "EveryTagLength", "GuardPagesEveryBuffer",
                          "NullPointersWhereLengthIsZero"},
    "IGNORES_TAG_LEN": {"RandomSealOpen", "EveryTagLength", "LengthsOutOfRange",
                        "GuardPagesEveryBuffer"},
    "WRITES_PAST_CTX": {"KeyLengths", "GcmSpecVectors", "RandomSealOpen", "Tampering",
                        "WipeZeroesContext"},
    "INC128": {"Inc32WrapInsideMessage"},
    "AAD_AFTER_DATA": {"StreamingAadAfterDataIsRefused"},
    "WIPE_KEEPS_KEY": {"WipeZeroesContext"},
}
# Variants whose only failures must be the ones listed: nothing else notices them.
EXACT = {"INC128", "AAD_AFTER_DATA", "WIPE_KEEPS_KEY"}

# variant -> tests of the GCM-SIV kernel (mock_gcm_siv, switches of mock_gcm_siv.c) that must fail
_SIV_OPEN_REFUSALS = {"GcmSivRfc8452Vectors", "Tampering", "InPlace", "ShortRecords",
                      "TlsRecordsPastTheShortPath", "ManyMessagesOneContext", "WipeZeroesContext",
                      "GuardPagesEveryBuffer", "NullPointersWhereLengthIsZero"}
BROKEN_SIV = {
    "SIV_LEAVES_PLAINTEXT": _SIV_OPEN_REFUSALS,
    "SIV_ACCEPTS_WRONG_TAG": _SIV_OPEN_REFUSALS,
    "SIV_CTR64": {"GcmSivRfc8452Vectors", "GcmSivCounterWrap"},
    "SIV_CTR_BE": {"GcmSivRfc8452Vectors", "GcmSivCounterWrap", "RandomSealOpen", "LargeMessages",
                   "InPlace", "ShortRecords"},
    "SIV_NO_NONCE_XOR": {"GcmSivRfc8452Vectors", "GcmSivCounterWrap", "RandomSealOpen", "InPlace",
                         "ManyMessagesOneContext", "KeyLengths"},
    "SIV_IGNORES_TAG_LEN": {"GcmSivLengthsOutOfRange"},
    "SIV_TAKES_192": {"KeyLengths", "GcmSivSealWithoutKey"},
    "SIV_REFUSED_INIT_CLEARS": {"KeyLengths"},
    "SIV_SEALS_WITHOUT_KEY": {"GcmSivSealWithoutKey"},
    "SIV_NO_LENGTH_LIMIT": {"GcmSivLengthsOutOfRange"},
}
EXACT_SIV = {"SIV_CTR64", "SIV_IGNORES_TAG_LEN", "SIV_TAKES_192", "SIV_REFUSED_INIT_CLEARS",
             "SIV_SEALS_WITHOUT_KEY", "SIV_NO_LENGTH_LIMIT"}

# GCM's own tests (fixture AeadGcm, instantiated over GCM kernels alone), and GCM-SIV's own
# (AeadGcmSiv).
GCM_ONLY = {"GcmSpecVectors", "EveryTagLength", "StreamingRandomPieces",
            "StreamingWithoutAadOrData", "StreamingAadAfterDataIsRefused", "TwoContextsInterleaved",
            "LengthsOutOfRange", "Inc32WrapInsideMessage"}
SIV_ONLY = {"GcmSivRfc8452Vectors", "GcmSivCounterWrap", "GcmSivLengthsOutOfRange",
            "GcmSivSealWithoutKey"}
OTR_ONLY = {"OtrSpecVectors", "OtrEveryNonceAndTagLength", "OtrEveryLengthClass",
            "OtrAadLengthClasses", "OtrB16TailIsASwappedPair", "OtrLengthsOutOfRange",
            "OtrContextsAcrossKeys"}
OTR_KERNELS = ("mock_otr", "mock_otr_v2", "mock_otr_s", "mock_otr_v2_s")

# variant -> {OTR kernel of the mock: tests of it (mock_otr.c's switches) that must fail}. A set
# for every kernel unless the switch touches some variants only; an empty set: that kernel fails
# nothing. EXACT_OTR: those failures and no others.
_OTR_OPEN_REFUSALS = {"OtrSpecVectors", "OtrEveryNonceAndTagLength", "OtrEveryLengthClass",
                      "OtrAadLengthClasses", "OtrContextsAcrossKeys", "Tampering", "InPlace",
                      "ShortRecords", "TlsRecordsPastTheShortPath", "GuardPagesEveryBuffer",
                      "NullPointersWhereLengthIsZero", "WipeZeroesContext"}


def _every_otr(tests: set[str], **more: set[str]) -> dict[str, set[str]]:
    """tests for each OTR kernel of the mock, and for some (keyword: kernel name) more."""
    return {k: tests | more.get(k, set()) for k in OTR_KERNELS}


BROKEN_OTR = {
    "OTR_LEAVES_PLAINTEXT": _every_otr(_OTR_OPEN_REFUSALS),
    "OTR_ACCEPTS_WRONG_TAG": _every_otr(_OTR_OPEN_REFUSALS),
    "OTR_NO_NONCE_CHECK": _every_otr({"OtrLengthsOutOfRange", "OtrEveryNonceAndTagLength"}),
    "OTR_NO_TAG_CHECK": _every_otr({"OtrLengthsOutOfRange"}),
    # A.7 (the 15-byte nonce) is a v3.1-p vector
    "OTR_FORMAT_OVERWRITES": _every_otr({"OtrEveryNonceAndTagLength", "OtrLengthsOutOfRange"},
                                        mock_otr={"OtrSpecVectors"}),
    # A.7 and A.8 (tau 12 and 8) are v3.1 vectors
    "OTR_TAU_NOT_IN_FORMAT": _every_otr({"OtrEveryNonceAndTagLength", "Tampering"},
                                        mock_otr={"OtrSpecVectors"},
                                        mock_otr_s={"OtrSpecVectors"}),
    # A.5 (32 bytes) and A.9 (64 bytes) are the p vectors with b = 16
    "OTR_B16_NO_SWAP": _every_otr({"OtrB16TailIsASwappedPair", "OtrEveryLengthClass",
                                   "OtrEveryNonceAndTagLength"},
                                  mock_otr={"OtrSpecVectors"}, mock_otr_v2={"OtrSpecVectors"}),
    # A.1 is the empty message (v3.1-p)
    "OTR_EMPTY_IS_FULL": _every_otr({"OtrEveryLengthClass", "OtrEveryNonceAndTagLength",
                                     "NullPointersWhereLengthIsZero", "GuardPagesEveryBuffer"},
                                    mock_otr={"OtrSpecVectors"}),
    # A.1 and A.3 have empty AD (v3.1-p and -s)
    "OTR_EMPTY_AD_DIGEST": _every_otr({"OtrAadLengthClasses", "OtrEveryLengthClass",
                                       "OtrEveryNonceAndTagLength",
                                       "NullPointersWhereLengthIsZero"},
                                      mock_otr={"OtrSpecVectors"},
                                      mock_otr_s={"OtrSpecVectors"}),
    "OTR_AD_MASKS_SWAPPED": _every_otr({"OtrAadLengthClasses", "OtrSpecVectors"}),
    "OTR_WRITES_PAST_END": _every_otr({"OtrEveryLengthClass", "OtrEveryNonceAndTagLength",
                                       "GuardPagesEveryBuffer"}),
    "OTR_TAKES_192": _every_otr({"KeyLengths"}),
    "OTR_INIT_KEEPS_Q": _every_otr({"RekeyWithoutWipe", "OtrContextsAcrossKeys", "KeyLengths"}),
    "OTR_S_NO_DOUBLING": {"mock_otr_s": {"OtrSpecVectors", "OtrEveryLengthClass",
                                         "RandomSealOpen"},
                          "mock_otr": set(), "mock_otr_v2": set(), "mock_otr_v2_s": set()},
    "OTR_V2_THREE_L": {"mock_otr_v2": {"OtrSpecVectors", "OtrEveryLengthClass"},
                       "mock_otr_v2_s": {"OtrSpecVectors", "OtrEveryLengthClass"},
                       "mock_otr": set(), "mock_otr_s": set()},
}
EXACT_OTR = {"OTR_NO_TAG_CHECK", "OTR_TAKES_192"}
# Switches whose failures include the vectors aesgen_best_aead's choice is held against.
_OTR_BEST_FAILS = {"OTR_FORMAT_OVERWRITES", "OTR_TAU_NOT_IN_FORMAT", "OTR_B16_NO_SWAP",
                   "OTR_EMPTY_IS_FULL", "OTR_EMPTY_AD_DIGEST", "OTR_AD_MASKS_SWAPPED",
                   "OTR_S_NO_DOUBLING", "OTR_V2_THREE_L", "OTR_WRITES_PAST_END"}

# The --gtest_filter of a broken GCM variant's run, of a broken GCM-SIV one's and of an OTR one's.
_GCM_RUN = "-Aeads/Aead*.*/mock_gcm_siv*:Aeads/Aead*.*/mock_otr*"
_SIV_RUN = "Aeads/Aead*.*/mock_gcm_siv*:AeadRegistry.*"
_OTR_RUN = "Aeads/Aead*.*/mock_otr*:AeadRegistry.*"


def _missing_tools() -> list[str]:
    missing = [t for t in ("gcc", "g++") if shutil.which(t) is None]
    if ARCH is None:
        missing.append(f"a trampoline for {platform.machine()}")
    if missing:
        return missing
    probe = subprocess.run(
        ["g++", "-std=c++17", "-x", "c++", "-", "-o", os.devnull, "-lgtest", "-lgtest_main",
         "-lpthread", "-lcrypto"],
        input="#include <gtest/gtest.h>\n#include <openssl/evp.h>\n"
              "TEST(P, Q) { EXPECT_NE(EVP_aes_128_gcm(), nullptr); }\n",
        capture_output=True, text=True)
    if probe.returncode != 0:
        missing.append("GoogleTest or OpenSSL development files (Debian: libgtest-dev "
                       "libssl-dev): " + probe.stderr.strip().splitlines()[0]
                       if probe.stderr.strip() else "libgtest-dev or libssl-dev")
    return missing


@dataclass
class Run:
    """One mock variant's GoogleTest run: test name -> "passed" / "failed" / "skipped"."""

    returncode: int
    results: dict[str, str] = field(default_factory=dict)
    log: str = ""
    skip_messages: dict[str, str] = field(default_factory=dict)

    def with_status(self, status: str) -> set[str]:
        return {name for name, s in self.results.items() if s == status}


def _check(cmd: list, cwd: Path) -> None:
    proc = subprocess.run([str(c) for c in cmd], cwd=cwd, capture_output=True, text=True)
    if proc.returncode != 0:
        pytest.fail(f"{' '.join(map(str, cmd))} exited {proc.returncode}:\n{proc.stderr}")


def _run(binary: Path, report: Path, extra_env: dict[str, str] | None = None,
         gtest_filter: str | None = None) -> Run:
    # the mocks are C: their compiler leaves key material in vector registers as it likes;
    # the scrub check is for generated kernels (its own test still runs)
    env = dict(os.environ, AESGEN_TEST_SCALE=SCALE, AESGEN_TEST_SCRUB_CHECK="0")
    env.pop("AESGEN_TEST_EXPECT_ALL_KERNELS", None)
    env.update(extra_env or {})
    cmd = [str(binary), f"--gtest_output=xml:{report}"]
    if gtest_filter:
        cmd.append(f"--gtest_filter={gtest_filter}")
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=120)
    run = Run(proc.returncode, log=proc.stdout[-4000:] + proc.stderr[-2000:])
    if report.exists():
        for case in ET.parse(report).getroot().iter("testcase"):
            name = f"{case.get('classname')}.{case.get('name')}"
            if case.find("failure") is not None:
                run.results[name] = "failed"
            elif case.find("skipped") is not None or case.get("result") == "skipped":
                run.results[name] = "skipped"
                skipped = case.find("skipped")
                run.skip_messages[name] = skipped.get("message", "") if skipped is not None else ""
            elif case.get("status") == "run":
                run.results[name] = "passed"
    return run


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> dict[str, Run]:
    """Build the harness once, link it against every mock variant, run each; keyed by
    variant ("" = the correct mock, "EXPECT_ALL" = it under AESGEN_TEST_EXPECT_ALL_KERNELS=1)."""
    missing = _missing_tools()
    if missing:
        pytest.skip(f"cannot build the AEAD harness: missing {'; '.join(missing)}")
    out = tmp_path_factory.mktemp("aead_harness")
    inc = ["-I", HARNESS, "-I", MOCK]
    warn = ["-Wall", "-Wextra", "-Werror"]
    harness_o, abi_o = out / "aead_tests.o", out / "abi_check.o"

    def compile_harness() -> None:
        _check(["g++", "-std=c++17", "-O0", *warn, *inc, "-c", HARNESS / "aead_tests.cc",
                "-o", harness_o], out)

    def compile_mock(source: str, variant: str) -> Path:
        obj = out / f"{source}_{variant or 'ok'}.o"
        flags = [f"-DMOCK_BROKEN_{variant}"] if variant else []
        _check(["gcc", "-std=c11", "-O2", *warn, *flags, "-I", MOCK, "-c", MOCK / f"{source}.c",
                "-o", obj], out)
        return obj

    variants = [""] + list(BROKEN) + list(BROKEN_SIV) + list(BROKEN_OTR)
    with ThreadPoolExecutor(max_workers=max(2, os.cpu_count() or 2)) as pool:
        builds = [pool.submit(compile_harness),
                  pool.submit(_check, ["gcc", *warn, "-I", HARNESS, "-c",
                                       HARNESS / f"abi_check_{ARCH}.S", "-o", abi_o], out)]
        # mock_gcm.c with each GCM switch, mock_gcm_siv.c with each GCM-SIV one, mock_otr.c
        # with each OTR one; a variant links the one it breaks with the correct others.
        gcm = {v: pool.submit(compile_mock, "mock_gcm", v) for v in [""] + list(BROKEN)}
        siv = {v: pool.submit(compile_mock, "mock_gcm_siv", v) for v in [""] + list(BROKEN_SIV)}
        otr = {v: pool.submit(compile_mock, "mock_otr", v) for v in [""] + list(BROKEN_OTR)}
        for b in builds:
            b.result()
        binaries = {}
        for v in variants:
            binary = out / f"aead_tests_{v or 'ok'}"
            objs = [gcm.get(v, gcm[""]).result(), siv.get(v, siv[""]).result(),
                    otr.get(v, otr[""]).result()]
            _check(["g++", "-o", binary, harness_o, *objs, abi_o, "-lgtest",
                    "-lgtest_main", "-lpthread", "-lcrypto"], out)
            binaries[v] = binary
        jobs = {v: pool.submit(_run, binaries[v], out / f"report_{v or 'ok'}.xml", None,
                               None if not v else _SIV_RUN if v in BROKEN_SIV
                               else _OTR_RUN if v in BROKEN_OTR else _GCM_RUN)
                for v in variants}
        jobs["EXPECT_ALL"] = pool.submit(
            _run, binaries[""], out / "report_expect_all.xml",
            {"AESGEN_TEST_EXPECT_ALL_KERNELS": "1"}, "Aeads/Aead.KeyLengths/*")
        return {v: j.result() for v, j in jobs.items()}


_FIXTURES = ("Aeads/Aead.", "Aeads/AeadGcm.", "Aeads/AeadGcmSiv.", "Aeads/AeadOtr.")


def _kernel_tests(run: Run, status: str | None, kernel: str = "mock_gcm") -> set[str]:
    """The parameterized AEAD tests ("Tampering", ...) of one kernel with that status (any
    status: None), whichever fixture has them (shared, GCM's, GCM-SIV's or OTR's own)."""
    suffix = "/" + kernel
    found = set()
    for name, st in run.results.items():
        if name.endswith(suffix) and status in (None, st):
            for prefix in _FIXTURES:
                if name.startswith(prefix):
                    found.add(name[len(prefix):-len(suffix)])
    return found


def test_correct_mock_passes_everything(runs: dict[str, Run]) -> None:
    run = runs[""]
    assert run.returncode == 0 and not run.with_status("failed"), run.log
    passed = run.with_status("passed")
    # The AEAD suites ran for both kernels this CPU "runs", and the trampoline self-test too.
    for kernel in ("mock_gcm", "mock_table_gcm"):
        assert len(_kernel_tests(run, "passed", kernel)) >= 15, sorted(passed)
    assert {"AbiTrampoline10.DetectsEachViolation", "AeadRegistry.BestAeadRunsHere",
            "AeadHarnessSelfTest.OracleMatchesGcmSpecVectors",
            "AeadHarnessSelfTest.NoncesWithChosenJ0AndTheInc32Wrap"} <= passed
    # The kernel that needs a feature no CPU has is skipped, every test of it; the other
    # runs GCM's own tests and is not a case of GCM-SIV's.
    skipped = _kernel_tests(run, "skipped", "mock_gcm_needs_mock_feature")
    assert skipped == _kernel_tests(run, "passed", "mock_gcm")
    assert not _kernel_tests(run, "skipped", "mock_gcm")
    assert GCM_ONLY <= _kernel_tests(run, "passed", "mock_gcm")
    assert not _kernel_tests(run, None, "mock_gcm") & (SIV_ONLY | OTR_ONLY)


def test_gcm_siv_suite_runs_what_applies_and_skips_the_rest(runs: dict[str, Run]) -> None:
    run = runs[""]
    assert run.returncode == 0 and not run.with_status("failed"), run.log
    passed = _kernel_tests(run, "passed", "mock_gcm_siv")
    skipped = _kernel_tests(run, "skipped", "mock_gcm_siv")
    # Every test GCM and GCM-SIV share, and GCM-SIV's own, ran and passed.
    shared = _kernel_tests(run, "passed", "mock_gcm") - GCM_ONLY
    assert len(shared) >= 12, sorted(shared)
    assert passed == shared | SIV_ONLY, sorted(passed ^ (shared | SIV_ONLY))
    # GCM's own tests are not cases of it (nothing is skipped for being of another mode).
    assert not skipped, sorted(skipped)
    assert not _kernel_tests(run, None, "mock_gcm_siv") & (GCM_ONLY | OTR_ONLY)
    # The GCM-SIV kernel this CPU cannot run is skipped, every test of it.
    assert _kernel_tests(run, "skipped", "mock_gcm_siv_needs_mock_feature") == passed | skipped
    assert {"Aeads/AeadEntry.Descriptor/mock_gcm_siv",
            "Aeads/AeadEntry.Descriptor/mock_gcm_siv_needs_mock_feature",
            "AeadHarnessSelfTest.GcmSivReferenceMatchesRfc8452Vectors",
            "AeadHarnessSelfTest.PolyvalMatchesRfc8452AndGhash",
            "AeadHarnessSelfTest.GcmSivReferenceOnLongMessages",
            "AeadHarnessSelfTest.GcmSivChosenTagsAndTheCounterWrap"} <= run.with_status("passed")


def test_otr_suite_runs_what_applies_and_skips_the_rest(runs: dict[str, Run]) -> None:
    run = runs[""]
    assert run.returncode == 0 and not run.with_status("failed"), run.log
    # Every test GCM and OTR share, and OTR's own, ran and passed, for the kernel of every
    # variant (mode "otr", "otr-v2", "otr-s", "otr-v2-s"); nothing skipped.
    shared = _kernel_tests(run, "passed", "mock_gcm") - GCM_ONLY
    assert len(shared) >= 12, sorted(shared)
    for kernel in OTR_KERNELS:
        passed = _kernel_tests(run, "passed", kernel)
        assert passed == shared | OTR_ONLY, (kernel, sorted(passed ^ (shared | OTR_ONLY)))
        assert not _kernel_tests(run, "skipped", kernel), kernel
        assert not _kernel_tests(run, None, kernel) & (GCM_ONLY | SIV_ONLY), kernel
        assert run.results.get(f"Aeads/AeadEntry.Descriptor/{kernel}") == "passed", kernel
    # The OTR kernel this CPU cannot run is skipped, every test of it.
    assert _kernel_tests(run, "skipped", "mock_otr_needs_mock_feature") == shared | OTR_ONLY
    assert {"AeadHarnessSelfTest.OtrReferenceMatchesSpecVectors",
            "AeadHarnessSelfTest.OtrReferenceOnLongMessages",
            "AeadHarnessSelfTest.OtrReferenceArithmeticAndProperties",
            "AeadRegistry.BestAeadRunsHere"} <= run.with_status("passed")


def test_missing_feature_fails_when_every_kernel_is_expected(runs: dict[str, Run]) -> None:
    run = runs["EXPECT_ALL"]
    assert run.results.get("Aeads/Aead.KeyLengths/mock_gcm_needs_mock_feature") == "failed", \
        run.log
    assert run.results.get("Aeads/Aead.KeyLengths/mock_gcm") == "passed", run.log
    assert run.results.get("Aeads/Aead.KeyLengths/mock_gcm_siv_needs_mock_feature") == "failed", \
        run.log
    assert run.results.get("Aeads/Aead.KeyLengths/mock_gcm_siv") == "passed", run.log
    assert run.results.get("Aeads/Aead.KeyLengths/mock_otr_needs_mock_feature") == "failed", \
        run.log
    assert run.results.get("Aeads/Aead.KeyLengths/mock_otr") == "passed", run.log


@pytest.mark.parametrize("variant", sorted(BROKEN))
def test_broken_mock_fails(runs: dict[str, Run], variant: str) -> None:
    run = runs[variant]
    assert run.returncode != 0, f"the suite passed a mock with {variant}:\n{run.log}"
    failed = _kernel_tests(run, "failed")
    assert BROKEN[variant] <= failed, \
        f"{variant}: expected {sorted(BROKEN[variant])} to fail, failed: {sorted(failed)}"
    if variant in EXACT:
        assert failed == BROKEN[variant], f"{variant}: also failed {sorted(failed - BROKEN[variant])}"
    # The harness's own tests do not depend on the mock.
    assert not {n for n in run.with_status("failed")
                if n.startswith(("AbiTrampoline10.", "AeadHarnessSelfTest."))}


@pytest.mark.parametrize("variant", sorted(BROKEN_SIV))
def test_broken_siv_mock_fails(runs: dict[str, Run], variant: str) -> None:
    run = runs[variant]
    assert run.returncode != 0, f"the suite passed a mock with {variant}:\n{run.log}"
    failed = _kernel_tests(run, "failed", "mock_gcm_siv")
    assert BROKEN_SIV[variant] <= failed, \
        f"{variant}: expected {sorted(BROKEN_SIV[variant])} to fail, failed: {sorted(failed)}"
    if variant in EXACT_SIV:
        assert failed == BROKEN_SIV[variant], \
            f"{variant}: also failed {sorted(failed - BROKEN_SIV[variant])}"
    # GCM's own tests are still not cases of it.
    assert not _kernel_tests(run, None, "mock_gcm_siv") & GCM_ONLY


@pytest.mark.parametrize("variant", sorted(BROKEN_OTR))
def test_broken_otr_mock_fails(runs: dict[str, Run], variant: str) -> None:
    run = runs[variant]
    assert run.returncode != 0, f"the suite passed a mock with {variant}:\n{run.log}"
    for kernel, want in BROKEN_OTR[variant].items():
        failed = _kernel_tests(run, "failed", kernel)
        assert want <= failed, \
            f"{variant}, {kernel}: expected {sorted(want)} to fail, failed: {sorted(failed)}"
        if variant in EXACT_OTR or not want:  # (not want: a variant the switch leaves alone)
            assert failed == want, f"{variant}, {kernel}: also failed {sorted(failed - want)}"
        # The tests of other modes are still not cases of it.
        assert not _kernel_tests(run, None, kernel) & (GCM_ONLY | SIV_ONLY)
    best = run.results.get("AeadRegistry.BestAeadRunsHere")
    assert best == ("failed" if variant in _OTR_BEST_FAILS else "passed"), (best, run.log)
    # The harness's own tests do not depend on the mock.
    assert not {n for n in run.with_status("failed")
                if n.startswith(("AbiTrampoline10.", "AeadHarnessSelfTest."))}
