"""The train workload: a trial times forward, loss, backward and optimizer step, as users do."""

from __future__ import annotations

import json
import subprocess

import pytest
import torch

from autotune.records import RecordStore
from autotune.runtime.config import CompileConfig
from autotune.trials import MeasureSettings, SubprocessRunner, TrialSpec
from autotune.workload import WorkloadError, default_loss

FAST = MeasureSettings(warmup=1, min_rounds=5, max_rounds=20, target_seconds=0.2)


def spec(model: str, config: CompileConfig | None, **kwargs) -> TrialSpec:
    return TrialSpec(
        model_path=model,
        device="cpu",
        config=config.to_dict() if config is not None else None,
        workload="train",
        time_limit_s=120.0,
        measure=FAST,
        **kwargs,
    )


def aot(**kwargs) -> CompileConfig:
    return CompileConfig(backend="aot_eager", **kwargs)


def test_a_train_step_of_an_mlp_is_compiled_checked_and_timed(runner, model_file):
    result = runner.run(spec(model_file("tiny"), aot()))
    assert result.status == "ok", result.error_tail
    assert result.compile_time_s > 0 and result.phases["compile_s"] >= result.compile_time_s
    assert result.latency_median_s > 0 and result.eager_latency_median_s > 0
    assert result.speedup_vs_eager_q1 <= result.speedup_vs_eager <= result.speedup_vs_eager_q3
    # aot_eager runs the very ops of eager, forward and backward: bit for bit equal.
    assert result.accuracy["max_abs_diff"] == 0.0
    assert result.accuracy["fallback_random_copy"] is False
    assert result.graphs >= 1 and result.rounds >= 5


def test_the_eager_baseline_steps_against_an_eager_copy(runner, model_file):
    result = runner.run(spec(model_file("tiny"), None))
    assert result.status == "ok", result.error_tail
    assert result.compile_time_s is None
    # How near 1 the ratio comes depends on the machine's load: only its form is asserted.
    assert 0 < result.speedup_vs_eager_q1 <= result.speedup_vs_eager <= result.speedup_vs_eager_q3
    assert result.latency_median_s > 0 and result.eager_latency_median_s > 0
    assert FAST.min_rounds <= result.rounds <= FAST.max_rounds
    assert result.accuracy["max_abs_diff"] == 0.0


def test_dropout_passes_the_gate_because_every_step_is_seeded(runner, model_file):
    for config in (None, aot()):
        result = runner.run(spec(model_file("train_dropout"), config))
        assert result.status == "ok", result.error
        assert result.accuracy["max_abs_diff"] == 0.0


def test_a_wrong_backend_fails_the_gate_naming_the_loss_or_a_gradient(runner, model_file):
    wrong = CompileConfig(backend="relu_accuracy_error_TESTING_ONLY")
    opted = [f"backend.{wrong.backend}"]  # refused from data unless opted into by name
    result = runner.run(spec(model_file("tiny"), wrong, allow_unsafe_knobs=opted))
    assert result.failure_kind == "accuracy"
    assert "of step 1 differs from eager" in result.error
    assert "the loss" in result.error or "the gradient of 'a." in result.error


def test_a_users_own_step_is_compiled_checked_and_timed(runner, model_file):
    # Accumulation over two micro-batches, clipping and a scheduler, as the file writes them.
    result = runner.run(spec(model_file("train_own_step"), aot()))
    assert result.status == "ok", result.error_tail
    assert result.accuracy["max_abs_diff"] == 0.0 and result.accuracy["loss_rel"] == 0.0
    # Gradients were captured as they accumulated: the sum of both micro-batches' ones.
    assert result.accuracy["grad_cosine"] == pytest.approx(1.0)
    assert result.units == {"name": "sequences", "per_sweep": 8}  # the file's units(inputs)


def test_a_step_that_returns_no_loss_is_a_model_error(model_file, monkeypatch):
    monkeypatch.setenv("STEP_RETURNS", "none")
    result = SubprocessRunner().run(spec(model_file("train_own_step"), None))
    assert result.failure_kind == "model_error"
    assert "train_step(model, optimizer, inputs)" in result.error
    assert "returned NoneType" in result.error and "return loss" in result.error


def test_the_optimizer_step_compiles_when_the_config_says_so(runner, model_file):
    result = runner.run(spec(model_file("train_own_step"), aot(train={"optimizer": "compiled"})))
    assert result.status == "ok", result.error_tail
    # The model's graph and the optimizer step's (its loop over parameters, LR a tensor).
    assert result.graphs >= 2
    assert result.accuracy["loss_rel"] < 1e-5 and result.accuracy["grad_cosine"] > 0.9999


def test_bf16_training_is_held_to_the_training_contract(runner, model_file):
    bf16 = aot(precision={"autocast": "bfloat16"})
    held = spec(model_file("tiny"), bf16, relaxed_numerics=True)
    refused = runner.run(held)  # no contract: eager's gate, 10x looser, still fp32's
    assert refused.failure_kind == "accuracy"
    contract = "loss_rel<=0.05,grad_cosine>=0.99"
    result = runner.run(spec(model_file("tiny"), bf16, relaxed_numerics=True, accuracy=contract))
    assert result.status == "ok", result.error_tail
    assert result.accuracy["held_to"] == "contract" and result.accuracy["contract"] == contract
    assert 0 < result.accuracy["loss_rel"] <= 0.05 and result.accuracy["grad_cosine"] >= 0.99
    strict = spec(model_file("tiny"), bf16, relaxed_numerics=True, accuracy="loss_rel<=1e-9")
    failed = runner.run(strict)
    assert failed.failure_kind == "accuracy" and "loss_rel measured" in failed.error


def test_float16_training_is_refused(runner, model_file):
    fp16 = aot(precision={"autocast": "float16"})
    result = runner.run(spec(model_file("tiny"), fp16, relaxed_numerics=True))
    assert result.failure_kind == "compile_error" and "GradScaler" in result.error


def test_freezing_is_refused_for_training(runner, model_file):
    frozen = CompileConfig(backend="inductor", options={"freezing": True})
    result = runner.run(spec(model_file("tiny"), frozen))
    assert result.failure_kind == "compile_error"
    assert "inference only" in result.error and "workload == 'infer'" in result.error


def test_a_loss_fn_that_returns_no_scalar_is_a_model_error(runner, model_file):
    result = runner.run(spec(model_file("train_bad_loss"), None))
    assert result.failure_kind == "model_error"
    assert "loss_fn(output, inputs)" in result.error and "2x3 float32" in result.error


def test_every_input_shape_is_one_step(runner, model_file):
    result = runner.run(spec(model_file("shapes"), aot(dynamic=False)))
    assert result.status == "ok", result.error_tail
    assert len(result.inputs) == 3 and result.graphs >= 3
    assert [s["inputs"] for s in result.per_shape] == result.inputs  # a step time per shape
    assert all(s["latency_median_s"] > 0 and s["speedup_vs_eager"] > 0 for s in result.per_shape)


def test_the_model_files_loss_fn_and_optimizer_are_used_for_every_step(
    tmp_path, model_file, monkeypatch
):
    log = tmp_path / "log.txt"
    monkeypatch.setenv("AUTOTUNE_TEST_TRAIN_LOG", str(log))
    result = SubprocessRunner().run(spec(model_file("train_custom"), aot()))
    assert result.status == "ok", result.error_tail
    lines = log.read_text().split()
    # One optimizer for the eager copy and one for the compiled copy.
    assert lines.count("get_optimizer") == 2
    # Each loss is followed by one step of the file's SGD: none of AdamW.
    assert lines.count("loss") == lines.count("step")
    timed_steps = 2 * result.rounds * result.calls_per_sample
    assert lines.count("step") >= 2 + timed_steps


def test_a_search_tunes_a_train_step_end_to_end(
    tmp_path, model_file, space_file, autotune_command
):
    # A process of its own: the CLI kills every trial host of its process when it exits, the
    # warm host of this module included. --finalists 0: re-measuring default torch.compile
    # from cold caches would compile it with g++ from scratch (~20 s) and prove nothing here.
    argv = [
        "search", model_file("train_dropout"), "--workload", "train", "--trials", "2",
        "--space", space_file("aot_eager"), "--scope", "whole", "--finalists", "0",
        "--device", "cpu", "--measure-seconds", "0.2", "--study", "s",
        "--storage", f"sqlite:///{tmp_path}/autotune.db", "--out", str(tmp_path / "best.json"),
    ]  # fmt: skip
    done = subprocess.run([autotune_command, *argv], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    with RecordStore(f"sqlite:///{tmp_path}/autotune.db") as store:
        # A draw of a configuration measured before is reused, not measured: not counted.
        records = [r for r in store.trials("s") if r.duplicate_of is None]
    assert len(records) == 4 and {r.status for r in records} == {"ok"}, done.stdout
    assert all(r.result["accuracy"]["max_abs_diff"] < 1e-4 for r in records)
    # The default-compile baseline is Inductor: the step with dropout was gated on a copy.
    gated = {r.baseline: r.result["accuracy"]["fallback_random_copy"] for r in records}
    assert gated["eager"] is False and gated["default"] is True
    best = json.loads((tmp_path / "best.json").read_text())
    assert best["workload"]["kind"] == "train"


def test_the_default_loss_sums_the_mean_of_every_floating_output_tensor():
    a, b = torch.randn(3, 4), torch.randn(5, dtype=torch.float64)
    output = (a, {"aux": [b], "ids": torch.arange(3)}, "text")
    torch.testing.assert_close(default_loss(output, ()), a.mean() + b.mean())
    with pytest.raises(WorkloadError, match="holds none; define loss_fn"):
        default_loss({"ids": torch.arange(3)}, ())


@pytest.mark.slow
def test_inductor_tunes_a_train_step_with_dropout(runner, model_file):
    result = runner.run(spec(model_file("train_dropout"), CompileConfig(backend="inductor")))
    assert result.status == "ok", result.error_tail
    assert result.compile_time_s > 0 and result.speedup_vs_eager > 0
    # Inductor draws its own random numbers: the gate compared a fallback_random copy.
    assert result.accuracy["fallback_random_copy"] is True
    assert result.accuracy["max_abs_diff"] < 1e-4
