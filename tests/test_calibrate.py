"""`aesgen calibrate`: the generated loops, a quick measurement of this host, the model file
it writes, and its refusals. The ranges are what every x86-64 core of the last fifteen years
falls in, wide enough for a busy VM, narrow enough that a wrong cycle conversion (or a chain
that is not one) lands outside them."""
from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from aesgen.calibrate import microbench as MB
from aesgen.calibrate import report as R
from aesgen.targets import host_arch
from aesgen.uarch import INSTRUCTION_CLASSES, load_uarch, parse_uarch
from aesgen.uarch_mca import CLASS_ASM

pytestmark = pytest.mark.skipif(host_arch() != "x86_64" or MB.find_compiler() is None,
                                reason="aesgen calibrate measures x86-64 hosts with a C compiler")

HOST = MB.read_host_cpu()
# flags of a CPU that has every class (the assembler must take them all; nothing runs)
EVERY_FLAG = frozenset(f for needs in MB.NEEDS.values() for f in needs)


@pytest.fixture(scope="module")
def measured() -> MB.Calibration:
    return MB.measure(processes=2, quick=True)


def aesgen(exe: Path, *args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([str(exe), *args], cwd=cwd, capture_output=True, text=True,
                          timeout=120)


def one_error_line(proc: subprocess.CompletedProcess, *names: str) -> None:
    assert proc.returncode == 2, (proc.returncode, proc.stderr)
    lines = proc.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("aesgen: error: "), proc.stderr
    for name in names:
        assert name in lines[0], (name, lines[0])


# --- the loops -----------------------------------------------------------------------------
def test_chain_reads_its_destination_and_streams_are_independent():
    # three-operand forms: source 1 becomes the destination, the other source a constant
    assert MB.instance("vaesenc %ymm1, %ymm2, %ymm0", 3) == "vaesenc %ymm15, %ymm3, %ymm3"
    assert MB.instance("pclmulqdq $0, %xmm1, %xmm0", 7) == "pclmulqdq $0, %xmm15, %xmm7"
    assert MB.instance("addq %rsi, %rax", 2) == f"addq %rsi, {MB.GP_STREAMS[2]}"
    for cls, line in CLASS_ASM["x86_64"].items():
        if cls == "load":
            continue
        chain = MB.loop_body(line, 1, MB.CHAIN)
        dests = {MB.split_asm(ins)[1][-1] for ins in chain}
        assert len(dests) == 1, (cls, dests)
        assert all(MB.split_asm(ins)[1][-1] in MB.split_asm(ins)[1][:-1]
                   or len([o for o in MB.split_asm(ins)[1] if o.startswith("%")]) == 2
                   for ins in chain), (cls, chain[0])        # two-operand forms read dest
        body = MB.loop_body(line, MB.STREAMS if cls != "gp_add" else len(MB.GP_STREAMS), 48)
        dests = [MB.split_asm(ins)[1][-1] for ins in body]
        streams = set(dests)
        assert len(streams) >= 8, (cls, streams)
        for ins in body:                      # no stream reads another stream's register
            ops = MB.split_asm(ins)[1]
            assert not (set(ops[:-1]) & (streams - {ops[-1]})), (cls, ins)


def test_generated_c_compiles_for_every_class(tmp_path):
    plan = MB.plan(EVERY_FLAG)
    assert plan.skipped == {}
    assert plan.classes == list(INSTRUCTION_CLASSES["x86_64"])
    names = {b.name for b in plan.benches}
    for cls in plan.classes:
        assert f"{cls}.streams" in names and (cls == "load" or f"{cls}.latency" in names)
    assert {"add_chain", "load.chain", "store_forward", "store.streams", "mix.aes"} <= names
    for mix in MB.MIXES:                               # both mixes, every stream count
        assert {f"mix.{mix.other}{m}" for m in mix.counts} | {
            f"mix.{mix.other}_both{m}" for m in mix.counts} <= names
    assert sum(n == "mix.aes" for n in names) == 1     # the AES half timed once for both
    source = MB.c_source(plan.benches, 1000)
    assert "%%zmm0" in source and "gf2p8affineqb" in source and "vzeroupper" in source
    exe = MB.compile_program(source, tmp_path)         # gas takes zmm without -mavx512f
    assert exe.is_file()


def test_a_class_the_cpu_lacks_is_skipped_with_its_flag():
    fake = EVERY_FLAG - {"aes", "gfni"}
    plan = MB.plan(fake)
    assert plan.skipped["aes"] == "skipped: needs aes"
    assert plan.skipped["gf2p8affine"] == "skipped: needs gfni"
    assert plan.skipped["aes_clmul_shared"] == "skipped: needs aes and pclmulqdq"
    assert plan.skipped["aes_shuffle_shared"] == "skipped: needs aes and ssse3"
    assert "aes" not in plan.classes and "clmul" in plan.classes
    assert not [b.name for b in plan.benches if b.name.startswith(("aes.", "mix."))]
    plan = MB.plan(EVERY_FLAG - {"avx512f", "vaes"})
    assert plan.skipped["aes_ymm"] == "skipped: needs vaes"
    assert plan.skipped["aes_zmm"] == "skipped: needs vaes and avx512f"
    assert plan.skipped["ternary_logic"] == "skipped: needs avx512f"
    assert set(plan.skipped) | set(plan.classes) == set(INSTRUCTION_CLASSES["x86_64"])
    plan = MB.plan(EVERY_FLAG - {"ssse3"})              # AES without PSHUFB: one mix only
    assert plan.skipped == {"shuffle": "skipped: needs ssse3",
                            "aes_shuffle_shared": "skipped: needs aes and ssse3"}
    names = {b.name for b in plan.benches}
    assert "mix.clmul2" in names and not {n for n in names if "shuffle" in n}


def test_the_table_names_the_missing_flag():
    """A measurement as if the host lacked AES-NI: the class is a row that says why."""
    cal = MB.measure(flags=HOST.flags - {"aes"}, processes=1, quick=True)
    assert "aes" not in cal.per_cycle and "clmul" in cal.per_cycle
    table = R.render_table(cal, None, {}, [])
    assert re.search(r"^aes\s+aesenc xmm\s+skipped: needs aes$", table, re.M), table
    assert re.search(r"^aes_clmul_shared\s+skipped: needs aes and pclmulqdq$", table, re.M)
    assert re.search(r"^aes_shuffle_shared\s+skipped: needs aes and ssse3$", table, re.M)


def test_a_mix_is_called_shared_only_when_interleaving_hides_nothing():
    """derive() on made-up ticks (1 tick a cycle): AES alone 40 cycles, the other class
    alone 30; interleaved 70 (one pipe set: the sum) or 41 (apart: the longer half)."""
    def raw(cycles: float) -> MB.Raw:
        return MB.Raw(ops=1, adds=100, ticks=(int(cycles),), add_ticks=(100,))
    base = {"add_chain": raw(1), "check.imul": raw(3), "gp_load.chain": raw(4),
            "movq.roundtrip": raw(9), "load.chain": raw(9), "store_forward": raw(9),
            "store.streams": raw(1), "mix.aes": raw(40)}
    for both, shared in ((70, True), (41, False)):
        ticks = dict(base)
        for m in MB.MIX_SHUFFLE:
            ticks[f"mix.shuffle{m}"], ticks[f"mix.shuffle_both{m}"] = raw(30), raw(both)
        out = MB.derive(ticks, [])
        m = MB.MIX_SHUFFLE[0]
        assert out[f"mix.shuffle_{m}.ratio"] == pytest.approx(both / 70)
        assert out[f"mix.shuffle_{m}.overlap"] == pytest.approx((70 - both) / 30)
        assert not any(k.startswith("mix.clmul") for k in out)   # no CLMUL mix timed
        cal = MB.Calibration(HOST, 1, 1, MB.Stat((1.0,)), {}, {}, {
            "aes_shuffle_overlap": MB.Stat((out[f"mix.shuffle_{m}.overlap"],))}, {}, {})
        assert R.shared_pipes(cal, "aes_shuffle") is shared
        assert R.shared_pipes(cal, "aes_clmul") is None


# --- this host -----------------------------------------------------------------------------
def test_quick_run_is_plausible(measured):
    assert measured.processes == 2
    assert all(len(s.values) == 2 for s in measured.per_cycle.values())
    # the conversion: IMUL is 3 cycles on every x86-64 core, whatever the ticks per cycle
    assert 2.6 <= measured.checks["imul"].median <= 3.4
    assert 0.1 <= measured.ticks_per_cycle.median <= 10
    assert 0.5 <= measured.latency["vector_logic"].median <= 2.5     # Zen 5: 2
    assert 1.5 <= measured.per_cycle["vector_logic"].median <= 6
    assert 3 <= measured.checks["gp_load"].median <= 7
    assert 3 <= measured.latency["load"].median <= 14
    assert 1 <= measured.per_cycle["load"].median <= 4.5
    assert 2 <= measured.facts["store_forward_latency"].median <= 20
    assert 0.5 <= measured.facts["stores_per_cycle"].median <= 4.5
    assert 1.5 <= measured.per_cycle["gp_add"].median <= 6
    if "aes" in measured.per_cycle:
        assert 2 <= measured.latency["aes"].median <= 8
        assert 0.5 <= measured.per_cycle["aes"].median <= 4.5
    if "clmul" in measured.per_cycle:
        assert 2 <= measured.latency["clmul"].median <= 16
        assert 0.1 <= measured.facts["aes_clmul_ratio"].median <= 1.3
    if "aes" in measured.per_cycle and "shuffle" in measured.per_cycle:
        # interleaved: no faster than the longer half alone, no slower than both apart
        assert 0.4 <= measured.facts["aes_shuffle_ratio"].median <= 1.3
        assert measured.mixed["shuffle"] in MB.MIX_SHUFFLE


# --- the model file ------------------------------------------------------------------------
BASE = """\
name = "base"
arch = "x86_64"
description = "a base model"
execution = "out-of-order"
mca_model = "znver3"

[sources]
measured = "measured somewhere else, long ago"
book = "a book"

[core]
rob = { value = 123, source = "measured" }
issue_width = { value = 5, source = "book" }
store_forward_latency = { value = 99, source = "book" }

[instructions]
aes_zmm = { latency = 7, per_cycle = 3, source = "book" }
vector_logic = { latency = 9, per_cycle = 9, source = "book" }

[pipes]
zmm_split = { value = true, source = "book" }
"""


def test_model_file_holds_the_measured_values_and_the_base_cites_its_own(measured, tmp_path):
    base = parse_uarch(BASE)
    model, header = R.build_model(measured, "host", "2030-01-02", base)
    path = tmp_path / "host.toml"
    R.write_atomically(path, R.model_text(model, header))
    back = load_uarch("host", tmp_path)
    sources = dict(back.sources)
    assert sources["measured"].startswith(f"aesgen calibrate on {HOST.vendor} family "
                                          f"{HOST.family} model {HOST.model} ({HOST.name}), "
                                          "2030-01-02, 2 processes, median")
    for cls, stat in measured.per_cycle.items():
        t = back.timing(cls)
        assert t.source == "measured"
        assert t.per_cycle == R.snap(stat.median)
        assert abs(t.per_cycle - stat.median) <= 0.1
        if cls in measured.latency:
            assert t.latency == R.snap(measured.latency[cls].median)
    # measured facts replace the base's; unmeasured ones keep the base's source text
    sf = measured.facts["store_forward_latency"].median
    assert back.fact("store_forward_latency") == max(1, round(sf))
    assert back.source_of("store_forward_latency").startswith("aesgen calibrate")
    assert back.timing("vector_logic").latency != 9
    assert back.fact("rob") == 123
    assert back.source_of("rob") == "measured somewhere else, long ago"
    assert dict(back.core)["rob"].source == "base_measured"
    assert back.fact("issue_width") == 5 and back.source_of("issue_width") == "a book"
    if "aes_zmm" not in measured.per_cycle:
        assert back.timing("aes_zmm").latency == 7
    assert back.fact("zmm_split") is True
    for fact in ("aes_clmul", "aes_shuffle"):
        if f"{fact}_ratio" in measured.facts:
            assert back.fact(f"{fact}_shared") == (
                measured.facts[f"{fact}_overlap"].median < R.SHARED_BELOW)
            assert back.source_of(f"{fact}_shared").startswith("aesgen calibrate")
    assert not list(tmp_path.glob(".*.tmp"))           # the temporary file was renamed


def test_model_file_without_a_base_has_only_measured_facts(measured):
    model, _ = R.build_model(measured, "bare", "2030-01-02", None, "znver3")
    back = parse_uarch(R.model_text(model, "header"))
    assert [k for k, _ in back.sources] == ["measured"]
    assert back.mca_model == "znver3"
    assert {f.source for _, f in back.core + back.pipes} == {"measured"}


# --- the command ---------------------------------------------------------------------------
def table_value(out: str, cls: str, column: int) -> float:
    """A measured median from the table's row for ``cls`` (0: latency, 1: per cycle)."""
    row = re.search(rf"^{cls}\s+.*$", out, re.M).group(0)
    return float(re.findall(r"(?<![±\d.])≤?(\d+\.\d+) ±", row)[column].lstrip("≤"))


def test_cli_writes_a_model_and_refuses_to_overwrite(aesgen_exe, tmp_path):
    path = tmp_path / "host.toml"
    proc = aesgen(aesgen_exe, "calibrate", "--quick", "--processes", "1", "--write",
                  str(path), cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "process 1/1" in proc.stderr                    # progress goes to stderr
    assert "TSC ticks per core cycle" in proc.stdout and "TSC" not in proc.stderr
    model = load_uarch("host", tmp_path)
    for cls in ("vector_logic", "gp_add"):
        assert abs(model.timing(cls).per_cycle - table_value(proc.stdout, cls, -1)) <= 0.1
    assert abs(model.timing("vector_logic").latency
               - table_value(proc.stdout, "vector_logic", 0)) <= 0.1
    text = path.read_text()
    again = aesgen(aesgen_exe, "calibrate", "--quick", "--processes", "1", "--write",
                   str(path), cwd=tmp_path)
    one_error_line(again, str(path), "--force")
    assert path.read_text() == text
    forced = aesgen(aesgen_exe, "calibrate", "--quick", "--processes", "1", "--write",
                    str(path), "--force", "--name", "other", cwd=tmp_path)
    assert forced.returncode == 0, forced.stderr
    assert parse_uarch(path.read_text()).name == "other"


def test_cli_bad_input_exits_2_and_writes_nothing(aesgen_exe, tmp_path):
    one_error_line(aesgen(aesgen_exe, "calibrate", "--cpu", "no-such-cpu", cwd=tmp_path),
                   "no-such-cpu")
    missing = tmp_path / "no" / "such" / "folder" / "m.toml"
    one_error_line(aesgen(aesgen_exe, "calibrate", "--write", str(missing), cwd=tmp_path),
                   str(missing.parent))
    one_error_line(aesgen(aesgen_exe, "calibrate", "--write", str(tmp_path / "m.json"),
                          cwd=tmp_path), ".toml")
    one_error_line(aesgen(aesgen_exe, "calibrate", "--cpu", "cortex-a72", cwd=tmp_path),
                   "cortex-a72", "aarch64")
    assert list(tmp_path.iterdir()) == []
