"""Running the libFuzzer targets of harness/fuzz/ (`aesgen fuzz`) and reading what they say.

A target is `build/<preset>/fuzz/fuzz_<name>` (built by `ninja fuzz-<preset>`). Each run
starts from the committed seed corpus, harness/fuzz/corpus/<name>/, and grows a working
corpus of its own under the output folder (the committed one is never written); a crash
leaves its input there as crash-<sha1> beside the log. The summary counts executions from
libFuzzer's final statistics and coverage from its last status line (`cov:` edges and
`ft:` features of the instrumented C++: the target, the references, OpenSSL is not
instrumented, the kernels' assembly cannot be).
"""
from __future__ import annotations

import re
import subprocess
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

from ..paths import ROOT

TARGETS = ("ctr", "aead")
SEED_CORPUS = ROOT / "harness" / "fuzz" / "corpus"

_STATUS = re.compile(r"^#(\d+)\s+\w+.*?cov: (\d+) ft: (\d+)(?: corp: (\d+)/\S+)?"
                     r"(?:.*?exec/s: (\d+))?")
_STAT = re.compile(r"^stat::(\w+):\s+(\d+)")
_FINDING = re.compile(r"^==aesgen fuzz== FINDING: (.*)$")
_SUMMARY = re.compile(r"^SUMMARY: (\w+Sanitizer: .*|libFuzzer: .*)$")
_ARTIFACT = re.compile(r"Test unit written to (\S+)")
_KERNELS = re.compile(r"^==aesgen fuzz== (fuzz_\w+): (\d+) kernels:")
_SKIPPED = re.compile(r"^==aesgen fuzz== skipped (.*)$")


@dataclass
class FuzzResult:
    """What one target's run did: executions, coverage, corpus, and a finding if any."""

    target: str
    seconds: float
    executions: int = 0
    exec_per_second: int = 0
    coverage_edges: int = 0
    features: int = 0
    corpus_units: int = 0
    new_units: int = 0
    kernels: int = 0
    skipped: list[str] = field(default_factory=list)
    finding: str | None = None
    reproducer: str | None = None
    log: str = ""
    exit_code: int = 0

    def as_dict(self) -> dict:
        return asdict(self)


def target_binary(builddir: Path, preset: str, target: str) -> Path:
    return builddir / preset / "fuzz" / f"fuzz_{target}"


def parse_log(text: str, result: FuzzResult) -> FuzzResult:
    """Fill result from a libFuzzer log (status lines, final stats, a finding)."""
    stats = {}
    for line in text.splitlines():
        m = _STATUS.match(line)
        if m:
            result.coverage_edges = int(m.group(2))
            result.features = int(m.group(3))
            if m.group(4):
                result.corpus_units = int(m.group(4))
            continue
        m = _STAT.match(line)
        if m:
            stats[m.group(1)] = int(m.group(2))
            continue
        m = _FINDING.match(line)
        if m and result.finding is None:
            result.finding = m.group(1)
            continue
        m = _SUMMARY.match(line)
        if m and result.finding is None:
            result.finding = m.group(1)
            continue
        m = _ARTIFACT.search(line)
        if m:
            result.reproducer = m.group(1)
            continue
        m = _KERNELS.match(line)
        if m:
            result.kernels = int(m.group(2))
            continue
        m = _SKIPPED.match(line)
        if m:
            result.skipped.append(m.group(1))
    result.executions = stats.get("number_of_executed_units", result.executions)
    result.exec_per_second = stats.get("average_exec_per_sec", result.exec_per_second)
    result.new_units = stats.get("new_units_added", result.new_units)
    if result.reproducer and result.finding is None:
        result.finding = "crash (see the log)"
    return result


def run_target(binary: Path, target: str, seconds: float, work: Path, *,
               env: dict | None = None, runs: int | None = None,
               extra: tuple[str, ...] = (), progress=None,
               progress_every: float = 60.0, seeds: bool = True) -> FuzzResult:
    """Fuzz one target for `seconds` (or `runs` inputs) from the seed corpus, growing
    work/corpus (from the committed seeds too unless ``seeds`` is false); the log goes to
    work/fuzz.log as it runs, and progress(text), when given, hears the last status line
    every progress_every seconds."""
    corpus = work / "corpus"
    corpus.mkdir(parents=True, exist_ok=True)
    seed_dir = SEED_CORPUS / target
    # No RSS limit: libFuzzer reads the peak RSS from getrusage, which Linux carries over
    # fork and exec from the parent (a pytest worker that compiled kernels starts the
    # target at 8 GB); a single allocation of 2 GiB or more is a finding instead.
    cmd = [str(binary), f"-max_total_time={max(1, round(seconds))}", "-print_final_stats=1",
           "-timeout=30", "-rss_limit_mb=0", "-malloc_limit_mb=2048", "-max_len=4096",
           f"-artifact_prefix={work}/"]
    if runs is not None:
        cmd.append(f"-runs={runs}")
    cmd += list(extra)
    cmd.append(str(corpus))
    if seeds and seed_dir.is_dir():
        cmd.append(str(seed_dir))
    started = time.monotonic()
    log = work / "fuzz.log"
    with open(log, "w") as out:
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, env=env)
        next_note = started + progress_every if progress else None
        while proc.poll() is None:
            time.sleep(0.2)
            if next_note is not None and time.monotonic() >= next_note:
                next_note += progress_every
                last = _last_status(log)
                if last:
                    progress(f"fuzz_{target}: {last}")
    text = log.read_text(errors="replace")
    result = FuzzResult(target=target, seconds=round(time.monotonic() - started, 1),
                        log=str(log), exit_code=proc.returncode)
    parse_log(text, result)
    if proc.returncode != 0 and result.finding is None:
        result.finding = f"the target exited with status {proc.returncode} (see {log})"
    return result


def _last_status(log: Path) -> str:
    """libFuzzer's last status line (#runs, cov, ft, corpus, exec/s), shortened."""
    try:
        with open(log, "rb") as f:
            f.seek(0, 2)
            f.seek(max(0, f.tell() - 4096))
            lines = f.read().decode(errors="replace").splitlines()
    except OSError:
        return ""
    for line in reversed(lines):
        m = _STATUS.match(line)
        if m:
            return (f"{int(m.group(1)):,} inputs, cov {m.group(2)}, ft {m.group(3)}"
                    + (f", {m.group(5)} exec/s" if m.group(5) else ""))
    return ""


def reproduce(binary: Path, crash: Path) -> subprocess.CompletedProcess:
    """Run one saved input through a target (what a finding's reproducer is for)."""
    return subprocess.run([str(binary), str(crash)], stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True, errors="replace")
