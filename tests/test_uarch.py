"""Microarchitecture models as data (generator/aesgen/uarch.py, targets/uarch/): every preset
names a model that loads with every fact cited; a malformed model is refused with a message
naming the file and the fact; and the generator's choices follow the model: a different core
gives a different S-box lowering and A64 schedule, each the better one on its own core."""
from __future__ import annotations

from dataclasses import replace

import pytest

from aesgen import uarch
from aesgen.dsl.operands import A64_VEC, Mem
from aesgen.emit.compile import compile_kernel
from aesgen.kernels.spec import KernelSpec
from aesgen.netlist.library import load as load_netlist
from aesgen.netlist.lower import lower
from aesgen.netlist.timing import core_from_model, cycles_per_round
from aesgen.netlist.transform import strip_output_constant
from aesgen.targets import all_presets
from aesgen.uarch import UarchError, load_uarch, model_for, parse_uarch


def test_every_preset_names_a_model_of_its_instruction_set():
    presets = all_presets()
    assert presets
    for name, preset in presets.items():
        model = preset.model()
        assert model.arch == preset.arch, name
        for key, fact in model.core + model.pipes:
            assert model.source_of(key), (name, key)
        for cls, timing in model.instructions:
            assert cls in uarch.INSTRUCTION_CLASSES[model.arch], (name, cls)
            assert timing.source in dict(model.sources), (name, cls)


def test_every_model_file_round_trips_through_to_toml():
    for path in sorted(uarch.UARCH_DIR.glob("*.toml")):
        model = load_uarch(path.stem)
        again = parse_uarch(model.to_toml("round trip"))
        assert replace(again, path=None) == replace(model, path=None), path.name


def test_golden_cove_core_is_the_one_the_sbox_model_was_fitted_on():
    """netlist/timing.py's figures (Pearson 0.95 against the measured loop) now come from
    targets/uarch/golden-cove.toml; the file must keep them."""
    core = core_from_model(load_uarch("golden-cove"))
    assert (core.alloc_width, core.alu_ports, core.shuffle_ports, core.loads_per_cycle,
            core.stores_per_cycle, core.alu_latency, core.load_latency, core.forward_latency,
            core.scheduler, core.rob, core.retire_width) == (6, (0, 1, 5), (1, 5), 3, 2, 1, 5,
                                                             6, 97, 512, 8)


GOOD = """
name = "t"
arch = "x86_64"
description = "test core"
execution = "out-of-order"
mca_model = "znver3"
[sources]
book = "a book"
[core]
issue_width = { value = 4, source = "book" }
[instructions]
aes = { latency = 4, per_cycle = 2, source = "book" }
[pipes]
aes_clmul_shared = { value = true, source = "book" }
"""


@pytest.mark.parametrize("change, message", [
    (('source = "book" }\n[instructions]', 'source = "paper" }\n[instructions]'),
     "cites source 'paper'"),
    (("issue_width", "issue_wdth"), "unknown \\[core\\] fact 'issue_wdth'"),
    (("aes = {", "aesni = {"), "unknown instruction class 'aesni'"),
    (("value = 4", "value = 4.5"), "issue_width must be an integer"),
    (("value = true", "value = 1"), "aes_clmul_shared must be true or false"),
    (("aes_clmul_shared = { value = true", "aes_shuffle_shared = { value = 2"),
     "aes_shuffle_shared must be true or false"),
    (("latency = 4", "latency = -4"), "aes.latency must be a positive number"),
    (('arch = "x86_64"', 'arch = "mips"'), "arch 'mips'"),
    (('execution = "out-of-order"', 'execution = "dataflow"'), "execution 'dataflow'"),
])
def test_a_malformed_model_is_refused_naming_the_fact(change, message, tmp_path):
    parse_uarch(GOOD)                                   # the base text is good
    bad = GOOD.replace(*change)
    assert bad != GOOD
    path = tmp_path / "t.toml"
    path.write_text(bad)
    with pytest.raises(UarchError, match=message) as err:
        load_uarch("t", tmp_path)
    assert str(path) in str(err.value)


def test_a_missing_model_or_fact_names_what_is_missing(tmp_path):
    with pytest.raises(UarchError, match="no microarchitecture model 'nonesuch'"):
        load_uarch("nonesuch")
    (tmp_path / "t.toml").write_text(GOOD)
    model = load_uarch("t", tmp_path)
    with pytest.raises(UarchError, match="no fact 'rob'"):
        model.fact("rob")
    with pytest.raises(UarchError, match="no timing for instruction class 'clmul'"):
        model.timing("clmul")
    with pytest.raises(UarchError, match="is for x86_64, not aarch64"):
        model_for("zen3", "aarch64")


def test_the_sbox_lowering_is_chosen_for_the_models_core():
    """A core with slower store-to-load forwarding and fewer vector ports gets another
    two-operand S-box lowering, and each core's lowering is the faster one on that core."""
    netlist, _ = strip_output_constant(load_netlist("bp113"))
    fast = core_from_model(load_uarch("golden-cove"))
    slow = replace(fast, name="slow-forwarding", forward_latency=20, alu_ports=(0, 1),
                   shuffle_ports=(1,))
    on_fast, on_slow = lower(netlist, "two_operand", core=fast), lower(netlist, "two_operand",
                                                                       core=slow)
    assert on_fast.code != on_slow.code
    assert cycles_per_round(on_fast, fast) < cycles_per_round(on_slow, fast)
    assert cycles_per_round(on_slow, slow) < cycles_per_round(on_fast, slow)


def _in_order_cycles(code, vector: int, load: int) -> int:
    """One instruction a cycle, in order, each waiting for its register inputs: the machine
    kernels/a64/schedule.py schedules for, with these latencies."""
    ready, t = {}, 0
    for ins in code:
        start = max([t] + [ready.get(r.key, 0) for r in ins.registers_read()])
        lat = load if any(isinstance(op, Mem) for op in ins.operands) else (
            vector if any(r.cls == A64_VEC for r in ins.registers_written()) else 1)
        for r in ins.registers_written():
            ready[r.key] = start + lat
        t = start + 1
    return t


def _steady_round(uarch_name: str):
    spec = KernelSpec("neon-bitsliced", "none", (128,), 8, "neon", uarch=uarch_name)
    fn = compile_kernel(spec).functions["xor_stream"]
    return [ins for ins in fn.instructions() if ins.region == "steady-128"]


def test_the_a64_schedule_follows_the_models_latencies(tmp_path, monkeypatch):
    """The same kernel for cortex-a53 (vector results after 6 cycles) and for a model whose
    vector results come after 2: different instruction orders, each with fewer stall cycles
    on the in-order machine it was scheduled for."""
    quick = load_uarch("cortex-a53").to_toml().replace('name = "cortex-a53"',
                                                         'name = "quick-simd"')
    quick = quick.replace("vector_logic = { latency = 6", "vector_logic = { latency = 2")
    (tmp_path / "quick-simd.toml").write_text(quick)
    for name in ("cortex-a53", "firestorm"):
        (tmp_path / f"{name}.toml").write_text((uarch.UARCH_DIR / f"{name}.toml").read_text())
    monkeypatch.setattr(uarch, "UARCH_DIR", tmp_path)
    model_for.cache_clear()
    try:
        a53, quick_code = _steady_round("cortex-a53"), _steady_round("quick-simd")
    finally:
        model_for.cache_clear()
    assert a53 != quick_code
    assert _in_order_cycles(a53, 6, 4) < _in_order_cycles(quick_code, 6, 4)
    assert _in_order_cycles(quick_code, 2, 4) <= _in_order_cycles(a53, 2, 4)
