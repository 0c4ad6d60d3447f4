"""Trials of the levers beyond Inductor's knobs: precision held to the accuracy contract, and a
backend's silent fallback recorded as a failure, never as that backend's result."""

from __future__ import annotations

from pathlib import Path

import pytest

from autotune.runtime.config import CompileConfig
from autotune.space._levers import native_bf16
from autotune.trials import MeasureSettings, SubprocessRunner, TrialSpec

FAST = MeasureSettings(warmup=1, min_rounds=5, max_rounds=20, target_seconds=0.3)
MODELS = Path(__file__).parents[1] / "fixtures" / "models"
BF16 = {"backend": "eager", "precision": {"autocast": "bfloat16"}}
needs_bf16 = pytest.mark.skipif(not native_bf16("cpu"), reason="no AVX512-BF16 or AMX-BF16")


def _run(model: str, config: dict, **spec: object):  # type: ignore[no-untyped-def]
    config = CompileConfig.from_dict(config).to_dict()
    return SubprocessRunner().run(
        TrialSpec(
            model_path=str(MODELS / model), device="cpu", config=config, measure=FAST, **spec
        )  # type: ignore[arg-type]  # fmt: skip
    )


def test_bf16_autocast_passes_the_contract_it_is_held_to() -> None:
    result = _run("tiny.py", BF16, relaxed_numerics=True, accuracy="cosine>=0.999")
    assert result.ok, result.error
    accuracy = result.accuracy
    assert accuracy["held_to"] == "contract" and accuracy["contract"] == "cosine>=0.999"
    assert 0.999 <= accuracy["cosine"] < 1.0
    assert accuracy["max_abs_diff"] == accuracy["max_abs"] > 0
    assert accuracy["dtype_changes"] == ["out[0]: float32 -> bfloat16"]


def test_an_int8_config_is_timed_against_float32_eager_and_held_to_the_contract() -> None:
    """The config quantizes a copy: eager's model keeps its float32 weights, so the speedup
    and the error are against eager fp32; the weights' bytes are recorded beside them."""
    pytest.importorskip("torchao")
    int8 = {"backend": "eager", "precision": {"quantize": "int8-dynamic"}}
    result = _run("tiny.py", int8, relaxed_numerics=True, accuracy="cosine>=0.99")
    assert result.ok, result.error
    assert result.accuracy["held_to"] == "contract" and 0.99 <= result.accuracy["cosine"] < 1.0
    assert result.eager_weights_bytes == (16 * 32 + 32 + 32 * 8 + 8) * 4
    assert result.weights_bytes < result.eager_weights_bytes * 0.6


def test_without_a_contract_bf16_fails_the_gate() -> None:
    result = _run("tiny.py", BF16, relaxed_numerics=True)
    assert result.failure_kind == "accuracy"
    assert "dtype differs: expected torch.float32, got torch.bfloat16" in (result.error or "")


def test_a_contract_bf16_cannot_meet_fails_naming_the_measured_error() -> None:
    result = _run("tiny.py", BF16, relaxed_numerics=True, accuracy="max_abs<=1e-7")
    assert result.failure_kind == "accuracy"
    assert "outside the accuracy contract max_abs<=1e-07: max_abs measured" in (result.error or "")


def test_an_exact_config_keeps_eagers_gate_and_records_the_metrics() -> None:
    result = _run("tiny.py", {"backend": "eager"}, accuracy="cosine>=0.99")
    assert result.ok, result.error
    assert result.accuracy["held_to"] == "eager"
    assert result.accuracy["cosine"] == pytest.approx(1.0)


def test_the_model_files_task_metric_is_recorded_and_judged() -> None:
    result = _run("top1.py", BF16, relaxed_numerics=True, accuracy="accuracy>=0.9")
    assert result.ok, result.error
    assert 0.9 <= result.accuracy["accuracy"] <= 1.0


def test_a_contract_naming_a_metric_the_file_lacks_is_a_model_error() -> None:
    result = _run("tiny.py", BF16, relaxed_numerics=True, accuracy="accuracy>=0.9")
    assert result.failure_kind == "model_error"
    assert "defines no accuracy(output, reference)" in (result.error or "")


class TestOpenVINO:
    @pytest.fixture(autouse=True)
    def _installed(self) -> None:
        pytest.importorskip("openvino")

    def test_a_graph_it_cannot_convert_is_a_backend_fallback(self) -> None:
        result = _run("openvino_lgamma.py", {"backend": "openvino", "dynamic": False})
        assert result.failure_kind == "backend_fallback"
        assert "ran outside OpenVINO" in (result.error or "")
        assert "in torch" in (result.error or "")

    def test_a_model_it_converts_whole_is_its_result(self) -> None:
        result = _run("tiny.py", {"backend": "openvino", "dynamic": False})
        assert result.ok, result.error
        assert result.accuracy["held_to"] == "eager"  # f32: pinned, exact within tolerance

    @needs_bf16
    def test_its_bf16_is_held_to_the_contract(self) -> None:
        config = {"backend": "openvino", "dynamic": False,
                  "options": {"INFERENCE_PRECISION_HINT": "bf16"}}  # fmt: skip
        assert CompileConfig.from_dict(config).changes_precision
        result = _run("tiny.py", config, relaxed_numerics=True, accuracy="cosine>=0.99")
        assert result.ok, result.error
        assert result.accuracy["held_to"] == "contract"
        assert result.accuracy["max_abs"] > 1e-5  # computed in bf16, not f32
