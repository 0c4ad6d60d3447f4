"""What `autotune verify` runs: the plan of each repeat, the specs of its trials, and when it
stops (autotune/verify/_run.py). Trials are scripted (tests/scripted.py)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import scripted

from autotune.errors import UsageError
from autotune.runtime.config import BestConfig, CompileConfig
from autotune.trials import TrialResult, TrialSpec
from autotune.verify import plan_measurements, verify


def best(config: CompileConfig | None = None, **workload: object) -> BestConfig:
    return BestConfig(
        decision="compile" if config is not None else "do_not_compile",
        reason="written by the test",
        config=config,
        workload={"kind": "infer", "device": "cpu", **workload},
    )


def aot(**options: object) -> CompileConfig:
    return CompileConfig(backend="aot_eager", options=options)


@pytest.mark.parametrize(
    ("config", "default", "names"),
    [
        (aot(), CompileConfig(), ["eager", "default", "config"]),
        (aot(), None, ["eager", "config"]),  # --skip-default
        (None, CompileConfig(), ["eager", "default"]),  # do_not_compile: eager is the choice
    ],
)
def test_each_repeat_measures_eager_then_default_compile_then_the_config(config, default, names):
    assert [name for name, _ in plan_measurements(best(config), default)] == names


def test_a_do_not_compile_file_cannot_be_verified_without_the_default_compile():
    with pytest.raises(UsageError, match="drop --skip-default"):
        plan_measurements(best(), None)


def test_every_trial_gets_the_seed_device_budget_and_timing_asked_for(monkeypatch, model_file):
    runs = scripted.use(monkeypatch, lambda spec: scripted.ok(1.0 if spec.config is None else 2))
    file = best(aot(), device="cuda:1", kind="train")
    verify(file, model_file("tiny"), runner=scripted.make(), device="cpu", seed=5,
           compile_budget=30, measure_seconds=0.5, precision=0.02)  # fmt: skip
    assert [spec.config for spec in runs] == [None, CompileConfig().to_dict(), aot().to_dict()]
    for spec in runs:
        assert (spec.device, spec.workload, spec.seed, spec.time_limit_s) == (
            "cpu",
            "train",
            5,
            30,
        )
        assert spec.model_path == str(Path(model_file("tiny")).resolve())
        measure = spec.measure
        assert (measure.target_seconds, measure.precision, measure.max_seconds) == (0.5, 0.02, 2.5)


def test_every_trial_compiles_in_a_private_empty_kernel_cache(monkeypatch, model_file):
    caches: list[str] = []

    def script(spec: TrialSpec) -> TrialResult:
        assert spec.cache_dir is not None and os.listdir(spec.cache_dir) == []
        caches.append(spec.cache_dir)
        Path(spec.cache_dir, "kernel").write_text("a kernel of this trial")
        return scripted.ok(1.0)

    scripted.use(monkeypatch, script)
    verify(best(aot()), model_file("tiny"), runner=scripted.make(), repeats=2)
    assert len(set(caches)) == 6  # the compile times are cold ones
    assert not any(map(os.path.exists, caches))


@pytest.mark.parametrize(
    ("workload", "options", "relaxed"),
    [
        ({"relaxed_numerics": True}, {}, True),  # the file says so
        ({"relaxed_numerics": False}, {}, False),
        ({}, {"cpp.enable_floating_point_contract_flag": "fast"}, True),  # older file: by knob
        ({}, {}, False),
    ],
)
def test_the_config_is_held_to_the_gate_its_search_used(
    monkeypatch, model_file, workload, options, relaxed
):
    runs = scripted.use(monkeypatch, lambda spec: scripted.ok(1.0))
    verify(best(aot(**options), **workload), model_file("tiny"), runner=scripted.make())
    # default torch.compile is held to the strict gate, as in the search
    assert [spec.relaxed_numerics for spec in runs] == [False, False, relaxed]


def test_eager_failing_here_is_bad_input_and_nothing_else_runs(monkeypatch, model_file):
    runs = scripted.use(monkeypatch, lambda spec: TrialResult.failed("model_error", "no eager"))
    with pytest.raises(UsageError, match=r"does not run in eager mode on cpu \(model_error: no"):
        verify(best(aot()), model_file("tiny"), runner=scripted.make(), repeats=2)
    assert len(runs) == 1


def test_each_trial_is_reported_as_it_ends(monkeypatch, model_file):
    scripted.use(monkeypatch, lambda spec: scripted.ok(1.0))
    seen: list[tuple[int, str]] = []
    verify(best(aot()), model_file("tiny"), runner=scripted.make(), repeats=2,
           on_trial=lambda repeat, name, result: seen.append((repeat, name)))  # fmt: skip
    assert seen == [(1, "eager"), (1, "default"), (1, "config"),
                    (2, "config"), (2, "default"), (2, "eager")]  # fmt: skip


def test_the_config_is_held_to_the_accuracy_contract_its_search_stated(monkeypatch, model_file):
    runs = scripted.use(monkeypatch, lambda spec: scripted.ok(1.0))
    bf16 = CompileConfig(backend="aot_eager", precision={"autocast": "bfloat16"})
    verify(best(bf16, accuracy="cosine>=0.999"), model_file("tiny"), runner=scripted.make())
    assert [spec.accuracy for spec in runs] == ["cosine>=0.999"] * 3
    # a file without relaxed_numerics: judged by its config
    assert [spec.relaxed_numerics for spec in runs] == [False, False, True]


def test_a_contract_edited_into_nonsense_is_bad_input(monkeypatch, model_file):
    scripted.use(monkeypatch, lambda spec: scripted.ok(1.0))
    with pytest.raises(UsageError, match="workload.accuracy 'cosine>0.9' must be an accuracy"):
        verify(best(aot(), accuracy="cosine>0.9"), model_file("tiny"), runner=scripted.make())
