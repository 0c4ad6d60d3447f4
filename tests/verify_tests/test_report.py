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
            scripted.ok(2.1, ci=0.02),
            "ok",
            0,
            "measured 2.100x (95% interval 2.080x to 2.120x) eager, claimed 2.000x: the claim "
            "holds",
        ),  # fmt: skip
        (scripted.ok(1.92, q=0.05, ci=0.02), "ok", 0, "the claim holds"),  # 2.0 <= 1.94 + 5%
        (scripted.ok(1.75, q=0.05, ci=0.02), "slower", 1, "above the interval by more than 5%"),
        # The quartiles (1.55x to 2.05x) overlap the claim, which the rule before intervals
        # passed; the median is known to 1.77x to 1.83x, and 2.0x lies 9% above it.
        (scripted.ok(1.80, q=0.25, ci=0.03), "slower", 1, "above the interval by more than 5%"),
        (scripted.ok(2.5, ci=0.02), "ok", 0, "the claim understates it"),
    ],
)
def test_a_claim_holds_within_the_interval_and_fails_beyond_it(config, verdict, exit_code, words):
    found = report(best(), repeat(config))
    assert (found.verdict, found.exit_code) == (verdict, exit_code)
    assert words in found.reasons[0]


def test_a_claim_raised_by_15_percent_fails():
    """The issue's planted over-claim: a file whose speedups are 15% above what is measured."""
    raised = {**CLAIMS, "speedup_vs_eager": 2.0 * 1.15, "speedup_vs_default": 1.25 * 1.15}
    found = report(best(raised), repeat(scripted.ok(2.0, q=0.1, ci=0.04)))
    assert (found.verdict, found.exit_code) == ("slower", 1)
    lead_only = {**CLAIMS, "speedup_vs_default": 1.25 * 1.15}  # eager's claim holds
    found = report(best(lead_only), repeat(scripted.ok(2.0, q=0.1, ci=0.04)))
    assert (found.verdict, found.exit_code) == ("behind_default", 1)
    assert "the claimed lead lies above the interval" in found.reasons[0]


@pytest.mark.parametrize(
    ("eager_q", "tolerance", "verdict", "noisy"),
    [
        (0.01, 0.05, "slower", False),  # a quiet machine: the given tolerance
        (0.08, 0.08, "slower", False),  # the noise floor raises it, not yet past 1.80x
        (0.15, 0.10, "too_noisy", False),  # past the 10% cap: nothing can be judged
    ],
)
def test_the_noise_floor_raises_the_tolerance_up_to_a_cap(eager_q, tolerance, verdict, noisy):
    found = report(best(), repeat(scripted.ok(1.75, q=0.05), eager=scripted.ok(1.0, q=eager_q)))
    assert found.noise_floor == pytest.approx(eager_q)
    assert found.tolerance == pytest.approx(tolerance)
    assert found.verdict == verdict
    assert found.exit_code == (3 if verdict == "too_noisy" else 1)
    assert any(w.startswith("noisy timing: ") for w in found.warnings) is noisy


def test_a_tolerance_raised_past_the_cap_judges_a_noisy_machine_and_says_it_is_noisy():
    measured = repeat(scripted.ok(1.75, q=0.05), eager=scripted.ok(1.0, q=0.15))
    found = build_report(best(), "cpu", [measured], 0.20)
    assert (found.verdict, found.tolerance) == ("ok", 0.20)  # 2.0x within 20% of 1.80x
    assert any(w.startswith("noisy timing: ") for w in found.warnings)


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


def test_repeats_without_rounds_pool_their_medians_and_the_widest_quartiles():
    found = report(
        best(),
        repeat(scripted.ok(2.43, compile_s=3.0), scripted.ok(1.6, compile_s=6.0)),
        repeat(scripted.ok(1.10, compile_s=9.0), scripted.ok(1.0, compile_s=8.0)),
        repeat(scripted.ok(2.29, compile_s=4.0), scripted.ok(1.5, compile_s=7.0)),
    )
    m = found.measured
    pooled = (m["speedup_vs_eager"], m["speedup_vs_eager_q1"], m["speedup_vs_eager_q3"])
    assert pooled == pytest.approx((2.29, 1.08, 2.45))  # as the finalist round pools them
    # The repeats disagree: the interval takes in every repeat's median.
    assert (m["speedup_vs_eager_ci_low"], m["speedup_vs_eager_ci_high"]) == (1.10, 2.43)
    assert m["speedup_vs_default"] == pytest.approx(2.29 / 1.5)  # the pooled figures' ratio
    assert m["default_speedup_vs_eager"] == pytest.approx(1.5)
    assert (m["compile_time_s"], m["default_compile_time_s"]) == (4.0, 7.0)
    assert m["latency_median_s"] == pytest.approx(1e-3 / 2.29)
    assert found.verdict == "ok"  # 2.29x against a claimed 2.0x; the mean would be 1.94x
    per_repeat = found.to_dict()["per_repeat"]
    assert [r["repeat"] for r in per_repeat] == [1, 2, 3]
    assert [r["config"]["speedup_vs_eager"] for r in per_repeat] == [2.43, 1.10, 2.29]
    assert per_repeat[1]["speedup_vs_default"] == pytest.approx(1.10)


def test_repeats_with_rounds_pool_the_rounds():
    first = [1.70 + 0.01 * i for i in range(21)]  # median 1.80
    second = [1.90 + 0.01 * i for i in range(21)]  # median 2.00
    found = report(
        best(),
        repeat(scripted.ok(1.8, rounds=first)),
        repeat(scripted.ok(2.0, rounds=second)),
    )
    m = found.measured
    assert m["speedup_vs_eager"] == pytest.approx(1.9, abs=0.01)
    assert m["speedup_vs_eager_ci_low"] <= 1.8 and m["speedup_vs_eager_ci_high"] >= 2.0
    assert found.verdict == "ok"


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
    ("default", "verdict", "warnings"),
    [
        (TrialResult.failed("crash", "died"), "ok", ["default torch.compile failed here: crash"]),
        (scripted.ok(2.0), "behind_default", []),  # the claimed 1.25x lead is gone
        (scripted.ok(1.68), "ok", []),  # 1.19x: within 5% of the interval's 1.22x
    ],
)
def test_default_compile_failing_is_a_warning_and_catching_up_fails_the_lead(
    default, verdict, warnings
):
    found = report(best(), repeat(default=default))
    assert found.verdict == verdict
    assert found.warnings == warnings


def test_an_inconclusive_file_is_verified_as_what_it_ships():
    """Shipping default compile, its claims are default compile's; shipping eager, it is
    judged as a do_not_compile file is."""
    from autotune.verify import plan_measurements

    ships_default = BestConfig(
        decision="inconclusive", reason="inconclusive: a tie", config=CompileConfig(),
        metrics={**CLAIMS, "speedup_vs_eager": 1.6, "speedup_vs_default": 1.0},
        environment={"host": "scripted", "torch": "2.13.0"}, model={"sha256": "scripted"},
        workload={"kind": "infer", "device": "cpu", "inputs": ["(4x16:float32)"]},
    )  # fmt: skip
    assert [name for name, _ in plan_measurements(ships_default, CompileConfig())] == [
        "eager", "default", "config",
    ]  # fmt: skip
    found = report(ships_default, repeat(config=scripted.ok(1.6), default=scripted.ok(1.6)))
    assert found.verdict == "ok" and found.claimed["speedup_vs_eager"] == 1.6
    found = report(ships_default, repeat(config=scripted.ok(1.3), default=scripted.ok(1.3)))
    assert found.verdict == "slower"
    ships_eager = BestConfig(decision="inconclusive", reason="inconclusive: a tie", metrics={},
                             environment=ships_default.environment, model=ships_default.model,
                             workload=ships_default.workload)  # fmt: skip
    found = report(ships_eager, repeat(default=scripted.ok(1.02)))
    assert found.verdict == "ok" and "not reliably faster" in found.reasons[0]
