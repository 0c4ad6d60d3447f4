"""The generate workload: a trial times generate() on each request, the searched config
compiling the decode steps in place, and gates it on eager's token ids."""

from __future__ import annotations

import json
import subprocess

import pytest

from autotune.records import RecordStore
from autotune.runtime.config import CompileConfig, for_generate
from autotune.trials import MeasureSettings, TrialSpec

pytest.importorskip("transformers")
FAST = MeasureSettings(warmup=1, min_rounds=5, max_rounds=20, target_seconds=0.2)


def spec(model: str, config: CompileConfig | None, **kwargs) -> TrialSpec:
    return TrialSpec(
        model_path=model, device="cpu", workload="generate", time_limit_s=120.0, measure=FAST,
        config=config.to_dict() if config is not None else None, **kwargs,
    )  # fmt: skip


def test_generate_of_a_llama_is_compiled_checked_and_timed(runner, model_file):
    result = runner.run(spec(model_file("generate_llama"), CompileConfig(backend="aot_eager")))
    assert result.status == "ok", result.error_tail
    assert result.accuracy["tokens_equal"] == 1.0 and result.accuracy["held_to"] == "tokens"
    # Two requests: 1 and 2 sequences, 6 new tokens each.
    assert result.units == {"name": "tokens", "per_sweep": 18.0}
    assert result.graphs >= 1 and result.latency_median_s > 0 and result.compile_time_s > 0
    generated = result.generate
    assert set(generated) == {
        "ttft_s", "eager_ttft_s", "decode_tokens_per_s", "eager_decode_tokens_per_s"
    }  # fmt: skip
    assert generated["ttft_s"] > 0 and generated["decode_tokens_per_s"] > 0


def test_the_eager_baseline_generates_against_eager(runner, model_file):
    result = runner.run(spec(model_file("generate_llama"), None))
    assert result.status == "ok", result.error_tail
    assert result.compile_time_s is None and result.accuracy["tokens_equal"] == 1.0


def test_a_decode_step_that_changes_a_token_fails_the_gate_naming_it(runner, model_file):
    wrong = CompileConfig(backend="relu_accuracy_error_TESTING_ONLY")
    opted = [f"backend.{wrong.backend}"]
    result = runner.run(spec(model_file("generate_own_loop"), wrong, allow_unsafe_knobs=opted))
    assert result.failure_kind == "accuracy", result.error_tail
    assert result.error.startswith("request 0: token ") and "(greedy, fp32)" in result.error


def test_the_files_own_loop_is_timed_without_a_first_token_figure(runner, model_file):
    result = runner.run(spec(model_file("generate_own_loop"), CompileConfig(backend="eager")))
    assert result.status == "ok", result.error_tail
    assert result.generate is None  # its loop takes no max_new_tokens: no TTFT run
    assert result.units == {"name": "tokens", "per_sweep": 12.0}


def test_a_model_without_generate_is_a_model_error(runner, model_file):
    result = runner.run(spec(model_file("tiny"), None))
    assert result.failure_kind == "model_error"
    assert "has no generate() method" in result.error


def test_a_compiled_prefill_runs_its_own_graphs_and_is_timed(runner, model_file):
    plan = for_generate(CompileConfig(backend="aot_eager", dynamic=False), "compiled")
    result = runner.run(spec(model_file("generate_llama"), plan))
    assert result.status == "ok", result.error_tail
    assert result.accuracy["tokens_equal"] == 1.0
    # The decode graph, the prefill at 7 tokens, the prefill dynamic over lengths after it.
    assert result.graphs >= 3 and result.generate["ttft_s"] > 0


INT8 = CompileConfig(backend="aot_eager", precision={"quantize": "int8-dynamic"})


def test_an_int8_decode_is_held_to_the_contract_teacher_forced_and_its_bytes_recorded(
    runner, model_file
):
    """eager's tokens forced through the quantized copy's decode: every position's argmax and
    logits compared; eager's own weights stay float32 (its figures are eager's)."""
    contracted = spec(model_file("generate_llama"), INT8, accuracy="top1>=0.99,cosine>=0.99",
                      relaxed_numerics=True)  # fmt: skip
    result = runner.run(contracted)
    assert result.status == "ok", result.error_tail
    accuracy = result.accuracy
    assert accuracy["held_to"] == "contract" and accuracy["contract"] == "top1>=0.99,cosine>=0.99"
    assert accuracy["top1"] == 1.0 and 0.99 < accuracy["cosine"] < 1.0  # moved, not broken
    assert accuracy["positions"] == 18 and accuracy["first_divergence"] is None
    assert result.weights_bytes < result.eager_weights_bytes * 0.7  # int8 Linear weights


def test_planted_activation_outliers_break_int8_and_the_contract_refuses_it(runner, model_file):
    result = runner.run(spec(model_file("generate_outliers"), INT8, accuracy="top1>=0.99",
                             relaxed_numerics=True))  # fmt: skip
    assert result.failure_kind == "accuracy", result.error_tail
    assert result.error.startswith("outside the accuracy contract top1>=0.99: top1 measured 0.")
    assert "(first different argmax: request 0, sequence " in result.error


def test_a_files_own_loop_cannot_be_teacher_forced(runner, model_file):
    result = runner.run(spec(model_file("generate_own_loop"), INT8, accuracy="top1>=0.99",
                             relaxed_numerics=True))  # fmt: skip
    assert result.failure_kind == "model_error", result.error_tail
    assert "defines its own generate(model, inputs)" in result.error


def test_a_search_ships_the_decode_config_with_the_prefill_it_chose(
    tmp_path, model_file, space_file, autotune_command
):
    # One short request: each compiled trial compiles one decode graph (generate_llama's second
    # request, of another batch and length, recompiles it dynamic), and default torch.compile's
    # are the graphs test_tune's generate test compiles: a kernel-cache hit for the later one.
    argv = [
        "search", model_file("generate_llama_short"), "--workload", "generate", "--trials", "2",
        "--space", space_file("aot_eager_generate"), "--finalists", "0", "--device", "cpu",
        "--measure-seconds", "0.2", "--study", "g",
        "--storage", f"sqlite:///{tmp_path}/autotune.db", "--out", str(tmp_path / "best.json"),
    ]  # fmt: skip
    done = subprocess.run([autotune_command, *argv], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "note: scope: the whole model is compiled, not searched: generate()" in done.stdout
    with RecordStore(f"sqlite:///{tmp_path}/autotune.db") as store:
        records = [r for r in store.trials("g") if r.duplicate_of is None]
    assert {r.status for r in records} == {"ok"}, done.stdout
    compiled = [r for r in records if r.config.get("parts")]  # the preset's at least
    assert compiled and all(
        [p["config"]["backend"] for p in r.config["parts"]] == ["aot_eager"] for r in compiled
    )
    best = json.loads((tmp_path / "best.json").read_text())
    assert best["workload"]["kind"] == "generate"
    if best["decision"] == "compile":
        assert best["schema_version"] == 2
        (part,) = best["config"]["parts"]
        assert part["name"] == "prefill"
        assert part["when"] == {"input": "input_ids", "dim": 1, "min": 2, "max": None}
        decode = {**best["config"], "parts": [], "dynamic": None}
        assert part["config"] in (None, decode), (part["config"], best["config"])
        assert best["metrics"]["decode_tokens_per_s"] > 0
