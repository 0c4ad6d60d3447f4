"""A traffic mix (get_traffic) in a trial: each request timed on its own, the trial's latency
the traffic's weighted mean, its tail and start-up recorded."""

from __future__ import annotations

from pathlib import Path

import pytest

from autotune.runtime.config import CompileConfig
from autotune.trials import MeasureSettings, PreloadedHostRunner, TrialSpec

FAST = MeasureSettings(warmup=1, min_rounds=5, max_rounds=20, target_seconds=0.3)
TRAFFIC = str(Path(__file__).parents[1] / "fixtures" / "models" / "traffic.py")


@pytest.fixture(scope="module")
def result(tmp_path_factory):
    cache = str(tmp_path_factory.mktemp("cache"))
    with PreloadedHostRunner(log_dir=cache) as warm:
        config = CompileConfig(backend="aot_eager", dynamic=False)
        spec = TrialSpec(model_path=TRAFFIC, device="cpu", config=config.to_dict(),
                         measure=FAST, cache_dir=cache)  # fmt: skip
        return warm.run(spec)


def test_each_request_is_timed_with_its_share_of_the_traffic(result) -> None:
    assert result.status == "ok", result.error
    short, long = result.per_shape
    assert (short["weight"], long["weight"]) == pytest.approx((0.9, 0.1))
    assert short["inputs"] == "(1x16:float32)" and long["inputs"] == "(input=2048x16:float32)"
    for shape in (short, long):
        assert shape["speedup_vs_eager"] == pytest.approx(
            shape["eager_latency_median_s"] / shape["latency_median_s"]
        )


def test_the_traffic_records_its_weighted_mean_tail_and_start_up(result) -> None:
    traffic = result.traffic
    short, long = result.per_shape
    mean = 0.9 * short["latency_median_s"] + 0.1 * long["latency_median_s"]
    assert traffic["requests"] == 2
    assert traffic["mean_s"] == pytest.approx(mean)
    # p50 is the short request's latency, p99 the long one's: 90% of requests are short
    assert traffic["p50_s"] == short["latency_median_s"]
    assert traffic["p95_s"] == traffic["p99_s"] == long["latency_median_s"]
    assert traffic["eager_p99_s"] == long["eager_latency_median_s"]
    # start-up: the first call of each request, which compiles both shapes (dynamic=False)
    assert traffic["startup_s"] == result.compile_time_s > 0
    assert result.graphs == 2


def test_the_trial_latency_and_units_are_per_request_of_the_traffic(result) -> None:
    # the rounds' weighting is proven on the fake clock (measure_tests/test_traffic.py); here,
    # what one request processes is the traffic's weighted mean
    assert result.latency_median_s > 0
    assert result.units == {"name": "samples", "per_sweep": pytest.approx(0.9 * 1 + 0.1 * 2048)}


def test_a_recorded_traffic_times_the_requests_get_request_builds(tmp_path) -> None:
    from autotune.workload import read_trace

    fixtures = Path(__file__).parents[1] / "fixtures"
    spec = TrialSpec(
        model_path=str(fixtures / "models" / "trace_requests.py"), device="cpu",
        config=CompileConfig(backend="aot_eager").to_dict(), measure=FAST,
        traffic=read_trace(fixtures / "traces" / "requests.csv"),
    )  # fmt: skip
    with PreloadedHostRunner(log_dir=str(tmp_path)) as warm:
        result = warm.run(spec)
    assert result.status == "ok", result.error
    assert result.inputs == ["(1x16x8:float32)", "(4x64x8:float32)", "(8x128x8:float32)"]
    assert [s["weight"] for s in result.per_shape] == pytest.approx([120 / 130, 9 / 130, 1 / 130])
    assert result.traffic["requests"] == 3


PADDED = str(Path(__file__).parents[1] / "fixtures" / "models" / "padded_encoder.py")


def _planned(plan: str, padding: dict | None = None) -> dict:
    from autotune.workload import load_model_file, padding_of

    declared = padding or padding_of(load_model_file(PADDED))
    return CompileConfig(backend="aot_eager", shapes={"plan": plan, **declared}).to_dict()


@pytest.fixture(scope="module")
def planned(tmp_path_factory):
    cache = str(tmp_path_factory.mktemp("cache"))
    with PreloadedHostRunner(log_dir=cache) as warm:

        def run(config: dict):
            spec = TrialSpec(model_path=PADDED, device="cpu", config=config, measure=FAST,
                             cache_dir=cache)  # fmt: skip
            return warm.run(spec)

        yield run


def test_a_padded_plan_compiles_a_graph_per_bucket_and_matches_eager(planned) -> None:
    # lengths 3..40 pad to 8, 16, 32, 64: four static graphs, outputs cut back equal eager's
    result = planned(_planned("pad-pow2"))
    assert result.status == "ok", result.error
    assert result.graphs == 4 and result.accuracy["max_abs_diff"] < 1e-5
    assert len(result.per_shape) == 8  # every request timed, unpadded as the traffic sent it


def test_marked_dimensions_compile_one_dynamic_graph(planned) -> None:
    result = planned(_planned("marked"))
    assert result.status == "ok", result.error
    assert result.graphs == 1


def test_a_padding_that_changes_the_outputs_fails_the_gate_naming_the_request(planned) -> None:
    wrong = {
        "inputs": {"input_ids": {"dim": 1, "value": 0}, "attention_mask": {"dim": 1, "value": 1}},
        "outputs": {"last_hidden_state": 1},
    }
    result = planned(_planned("pad-pow2", wrong))
    assert (result.status, result.failure_kind) == ("failed", "accuracy")
    assert result.error.startswith(
        "request 0 (input_ids=2x3:int64, attention_mask=2x3:int64): out["
    ), result.error
