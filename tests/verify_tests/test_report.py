"""Building the report of `autotune verify` from given trial results: verdicts, pooled figures,
warnings and the JSON form (autotune/verify/_report.py, _claims.py, _warnings.py)."""

from __future__ import annotations

from typing import Any

import pytest
import scripted

from autotune.runtime.config import BestConfig, CompileConfig
from autotune.trials import TrialResult
from autotune.verify._verdict import VerifyReport, build_report

CLAIMS = {
    "speedup_vs_eager": 2.0,
    "speedup_vs_eager_q1": 1.9,
    "speedup_vs_eager_q3": 2.1,
    "speedup_vs_default": 1.25,
    "latency_median_s": 5e-4,
    "eager_latency_median_s": 1e-3,
    "compile_time_s": 0.5,
}


def best(metrics: dict[str, Any] | None = None, *, compile: bool = True) -> BestConfig:
    """A file tuned on what scripted.ok reports: same environment, model and inputs."""
    return BestConfig(
        decision="compile" if compile else "do_not_compile",
        reason="written by the test",
        config=CompileConfig(backend="aot_eager") if compile else None,
        metrics=dict(CLAIMS if metrics is None else metrics),
        environment={"host": "scripted", "torch": "2.13.0"},
        model={"sha256": "scripted"},
        workload={"kind": "infer", "device": "cpu", "inputs": ["(4x16:float32)"]},
    )


def repeat(
    config: TrialResult | None = None,
    default: TrialResult | None = None,
    eager: TrialResult | None = None,
) -> dict[str, TrialResult]:
    """One repeat; by default everything measures what CLAIMS says."""
    return {
        "eager": eager or scripted.ok(1.0),
        "default": default or scripted.ok(1.6),
        "config": config or scripted.ok(2.0),
    }


def report(file: BestConfig, *repeats: dict[str, TrialResult]) -> VerifyReport:
    return build_report(file, "cpu", list(repeats), 0.05)


@pytest.mark.parametrize(
    ("config", "verdict", "exit_code", "words"),
    [
        (
            scripted.ok(2.1),
            "ok",
            0,
            "measured 2.100x (2.080x to 2.120x) eager, claimed 2.000x "
            "(1.900x to 2.100x): the claim holds",
        ),  # fmt: skip
        (scripted.ok(1.92, q=0.05), "ok", 0, "below the claim but within the noise"),
        (scripted.ok(1.75, q=0.05), "slower", 1, "the interquartile ranges do not overlap"),
    ],
)
def test_a_claim_holds_within_the_noise_and_fails_beyond_it(config, verdict, exit_code, words):
    found = report(best(), repeat(config))
    assert (found.verdict, found.exit_code) == (verdict, exit_code)
    (reason,) = found.reasons
    assert words in reason


@pytest.mark.parametrize(
    ("eager_q", "tolerance", "verdict", "noisy"),
    [
        (0.01, 0.05, "slower", False),  # a quiet machine: the given tolerance
        (0.08, 0.08, "slower", False),  # the noise floor raises it, not yet past 1.75x
        (0.15, 0.15, "ok", True),  # 1.75x is within 15% of 2.0x; noise above 10% is flagged
    ],
)
def test_the_noise_floor_raises_the_tolerance(eager_q, tolerance, verdict, noisy):
    found = report(best(), repeat(scripted.ok(1.75, q=0.05), eager=scripted.ok(1.0, q=eager_q)))
    assert found.noise_floor == pytest.approx(eager_q)
    assert found.tolerance == pytest.approx(tolerance)
    assert found.verdict == verdict
    assert any(w.startswith("noisy timing: ") for w in found.warnings) is noisy


@pytest.mark.parametrize(
    ("kind", "verdict"),
    [
        ("accuracy", "incorrect"),
        ("compile_error", "broken"),
        ("graph_break", "broken"),
        ("crash", "broken"),
        ("timeout", "broken"),
        ("oom", "broken"),
    ],
)
def test_a_config_failing_in_any_repeat_is_incorrect_or_broken(kind, verdict):
    failed = TrialResult.failed(kind, "it failed here")
    found = report(best(), repeat(), repeat(failed))
    assert (found.verdict, found.exit_code) == (verdict, 1)
    assert found.reasons == [f"the config failed here: {kind}: it failed here"]


@pytest.mark.parametrize(
    ("default", "verdict", "words"),
    [
        (scripted.ok(1.5), "compile_now_faster", "reliably faster now"),
        (scripted.ok(1.04), "ok", "not reliably faster"),  # within the 5% tolerance
        (scripted.ok(1.2, q=0.25), "ok", "not reliably faster"),  # q1 below 1
        (TrialResult.failed("compile_error", "no"), "ok", "does not run here"),
    ],
)
def test_a_do_not_compile_file_is_judged_on_default_compile_against_eager(default, verdict, words):
    found = report(best(compile=False), repeat(default=default))
    assert found.verdict == verdict
    assert words in found.reasons[0]
    assert found.claimed["speedup_vs_eager"] is None and found.claimed["compile_time_s"] is None
    assert (
        found.claimed["latency_median_s"] == CLAIMS["eager_latency_median_s"]
    )  # what it says to run: eager
    assert found.measured["speedup_vs_eager"] == 1.0  # eager against itself
    assert found.warnings == []  # a failing default compile is the verdict's business here


def test_a_file_claiming_no_speedup_is_ok_once_its_config_runs_and_matches_eager():
    found = report(best({}), repeat(scripted.ok(0.3)))
    assert found.verdict == "ok"
    assert found.reasons == ["the config compiles and matches eager; the file claims no speedup"]


def test_repeats_pool_each_figure_by_its_median():
    found = report(
        best(),
        repeat(scripted.ok(2.43, compile_s=3.0), scripted.ok(1.6, compile_s=6.0)),
        repeat(scripted.ok(1.10, compile_s=9.0), scripted.ok(1.0, compile_s=8.0)),
        repeat(scripted.ok(2.29, compile_s=4.0), scripted.ok(1.5, compile_s=7.0)),
    )
    m = found.measured
    pooled = (m["speedup_vs_eager"], m["speedup_vs_eager_q1"], m["speedup_vs_eager_q3"])
    assert pooled == pytest.approx((2.29, 2.27, 2.31))
    assert m["speedup_vs_default"] == pytest.approx(2.43 / 1.6)  # median of the repeats' ratios
    assert m["default_speedup_vs_eager"] == pytest.approx(1.5)
    assert (m["compile_time_s"], m["default_compile_time_s"]) == (4.0, 7.0)
    assert m["latency_median_s"] == pytest.approx(1e-3 / 2.29)
    assert found.verdict == "ok"  # 2.29x against a claimed 2.0x; the mean would be 1.94x
    per_repeat = found.to_dict()["per_repeat"]
    assert [r["repeat"] for r in per_repeat] == [1, 2, 3]
    assert [r["config"]["speedup_vs_eager"] for r in per_repeat] == [2.43, 1.10, 2.29]
    assert per_repeat[1]["speedup_vs_default"] == pytest.approx(1.10)


@pytest.mark.parametrize(
    ("metrics", "claimed"),
    [
        ({"compile_time_s": 0.5, "cold_compile_time_s": 5.0}, 5.0),  # verify compiles cold
        ({"compile_time_s": 0.5}, 0.5),  # older files: the only one there is
        ({}, None),
    ],
)
def test_the_claimed_compile_time_is_the_files_cold_one_when_it_has_one(metrics, claimed):
    assert report(best(metrics), repeat()).claimed["compile_time_s"] == claimed


def test_another_environment_device_model_or_inputs_is_a_warning_not_a_failure():
    file = best()
    file.environment["torch"] = "1.13.0"
    file.workload.update(device="cuda", inputs=["(8x16:float32)"])
    file.model["sha256"] = "another"
    found = report(file, repeat())
    assert found.verdict == "ok"
    assert found.environment_mismatches == [
        "environment: torch: tuned with '1.13.0', running with '2.13.0'"
    ]
    assert found.warnings == [
        *found.environment_mismatches,
        "device: tuned on 'cuda', verified on 'cpu'",
        "model: its structure differs from the one the file was tuned for",
        "inputs: tuned with ['(8x16:float32)'], verified with ['(4x16:float32)']",
    ]


@pytest.mark.parametrize(
    ("default", "warnings"),
    [
        (TrialResult.failed("crash", "died"), ["default torch.compile failed here: crash"]),
        (scripted.ok(2.0), ["speedup vs default torch.compile: claimed 1.25x, measured 1.00x"]),
        (scripted.ok(1.68), []),  # 1.19x: fell by less than the tolerance
    ],
)
def test_default_compile_failing_or_catching_up_is_a_warning(default, warnings):
    found = report(best(), repeat(default=default))
    assert found.verdict == "ok"
    assert found.warnings == warnings


@pytest.mark.parametrize(
    ("measured_s", "warnings"),
    [
        (0.7, []),  # 1.4x the file's
        (0.8, ["cold compile: claimed 0.5 s, measured 0.8 s"]),  # 1.6x
    ],
)
def test_a_cold_compile_above_1_5x_the_files_is_a_warning(measured_s, warnings):
    found = report(best(), repeat(scripted.ok(2.0, compile_s=measured_s)))
    assert (found.verdict, found.warnings) == ("ok", warnings)


@pytest.mark.parametrize("claimed_s", [10.0, None])
def test_a_cold_compile_above_the_cap_of_the_pick_rule_is_a_warning(claimed_s):
    file = best({**CLAIMS, "compile_time_s": claimed_s})
    file.source.update(pick="fastest,compile<=10s", pick_rule={"max_compile_s": 10.0})
    found = report(file, repeat(scripted.ok(2.0, compile_s=12.0)))
    assert found.verdict == "ok"
    assert found.warnings == [
        "cold compile: measured 12.0 s, above the compile<=10s of the rule that picked this "
        "config (--pick fastest,compile<=10s); search again on this machine"
    ]
