"""`autotune verify`: real trial processes re-measure a best-config file and judge its claims.

On this 2-core CPU the tiny model runs *slower* under aot_eager than eager (Dynamo's per-call
overhead dwarfs two small matmuls: about 0.2x to 0.5x), so "modest" claims here are 0.1x.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from autotune.cli import main
from autotune.runtime.config import BestConfig, CompileConfig
from autotune.runtime.fingerprint import environment_fingerprint
from autotune.trials import SubprocessRunner
from autotune.verify import Spread, is_slower, reliably_faster, verify

FAST = ["--measure-seconds", "0.3", "--skip-default"]
MODEST = {"speedup_vs_eager": 0.1, "speedup_vs_eager_q1": 0.05, "speedup_vs_eager_q3": 0.15}
BOLD = {"speedup_vs_eager": 50.0, "speedup_vs_eager_q1": 45.0, "speedup_vs_eager_q3": 55.0}


def best_file(
    tmp_path: Path,
    config: CompileConfig | None = None,
    metrics: dict[str, float] | None = None,
    **environment: str,
) -> str:
    """A best-config file as `autotune search` would write it, tuned on this very machine."""
    best = BestConfig(
        decision="compile" if config is not None else "do_not_compile",
        reason="written by the test",
        config=config,
        metrics={"speedup_vs_default": 1.0, "compile_time_s": 0.5, **(metrics or {})},
        environment={**environment_fingerprint("cpu"), **environment},
        workload={"kind": "infer", "device": "cpu", "inputs": ["(4x16:float32)"]},
    )
    path = tmp_path / "best_config.json"
    best.dump(path)
    return str(path)


def run_json(capsys, *argv: str) -> tuple[int, dict]:
    code = main(["verify", *argv, "--json"])
    return code, json.loads(capsys.readouterr().out)


def aot() -> CompileConfig:
    return CompileConfig(backend="aot_eager")


def test_modest_claims_hold_and_the_json_has_claimed_and_measured_speedups(
    tmp_path, model_file, capsys
):
    path = best_file(tmp_path, aot(), MODEST)
    code, report = run_json(capsys, path, model_file("tiny"), *FAST)
    assert (code, report["verdict"], report["exit_code"]) == (0, "ok", 0), report["reasons"]
    assert report["claimed_speedup_vs_eager"] == 0.1 and report["claimed_speedup_vs_eager_q1"]
    measured = report["measured_speedup_vs_eager"]
    assert (
        report["measured_speedup_vs_eager_q1"]
        <= measured
        <= report["measured_speedup_vs_eager_q3"]
    )
    assert report["claimed_speedup_vs_default"] == 1.0
    assert report["measured_speedup_vs_default"] is None  # --skip-default
    assert report["measured_compile_time_s"] > 0 and report["claimed_compile_time_s"] == 0.5
    assert report["environment_mismatches"] == [] and report["noise_floor"] is not None
    (repeat,) = report["per_repeat"]
    assert set(repeat) == {"repeat", "eager", "config", "speedup_vs_default"}
    assert repeat["config"]["speedup_vs_eager"] == measured
    assert 0.5 < repeat["eager"]["speedup_vs_eager"] < 2.0


def test_a_claim_far_above_the_measurement_is_slower_with_exit_code_1(
    tmp_path, model_file, capsys
):
    code = main(["verify", best_file(tmp_path, aot(), BOLD), model_file("tiny"), *FAST])
    out = capsys.readouterr().out
    assert code == 1
    assert "Verdict: slower: " in out and "claimed 50.000x" in out
    assert "speedup vs eager" in out and "noise floor (eager vs eager)" in out


@pytest.mark.parametrize(
    ("backend", "verdict", "kind"),
    [
        ("relu_accuracy_error_TESTING_ONLY", "incorrect", "accuracy"),
        ("relu_compile_error_TESTING_ONLY", "broken", "compile_error"),
    ],
)
def test_a_config_that_fails_here_fails_the_verify(
    tmp_path, model_file, capsys, backend, verdict, kind
):
    path = best_file(tmp_path, CompileConfig(backend=backend), MODEST)
    code, report = run_json(capsys, path, model_file("tiny"), *FAST)
    assert (code, report["verdict"]) == (1, verdict)
    assert kind in report["reasons"][0]
    assert report["per_repeat"][0]["config"]["failure_kind"] == kind
    assert report["measured_speedup_vs_eager"] is None


def test_another_environment_is_a_warning_not_a_failure(tmp_path, model_file, capsys):
    path = best_file(tmp_path, aot(), MODEST, torch="1.13.0")
    code, report = run_json(capsys, path, model_file("tiny"), *FAST)
    assert (code, report["verdict"]) == (0, "ok")
    (mismatch,) = report["environment_mismatches"]
    assert "torch" in mismatch and "1.13.0" in mismatch and torch.__version__ in mismatch
    assert mismatch in report["warnings"]


def test_repeats_are_each_reported_and_pooled_by_their_median(tmp_path, model_file, capsys):
    path = best_file(tmp_path, aot(), MODEST)
    code = main(["verify", path, model_file("tiny"), *FAST, "--repeats", "2", "--json"])
    captured = capsys.readouterr()
    report = json.loads(captured.out)
    assert code == 0, report["reasons"]
    speedups = [r["config"]["speedup_vs_eager"] for r in report["per_repeat"]]
    assert [r["repeat"] for r in report["per_repeat"]] == [1, 2]
    assert report["measured_speedup_vs_eager"] == pytest.approx(sum(speedups) / 2)
    assert "repeat 2  the file's config  ok" in captured.err  # progress: stderr with --json


def test_a_do_not_compile_file_checks_that_compiling_still_does_not_pay(tmp_path, model_file):
    """Through the API, with aot_eager standing in for default torch.compile (fast)."""
    best = BestConfig.load(best_file(tmp_path))
    with SubprocessRunner() as runner:
        report = verify(best, model_file("tiny"), runner=runner, measure_seconds=0.3,
                        default=aot())  # fmt: skip
    assert (report.verdict, report.exit_code) == ("ok", 0), report.reasons
    assert "eager is still the right call" in report.reasons[0]
    data = report.to_dict()
    assert data["claimed_speedup_vs_eager"] is None
    assert 0 < data["measured_default_speedup_vs_eager"] < 1.0
    assert data["measured_speedup_vs_default"] > 1.0  # eager over aot_eager


def test_the_verdict_rules_on_given_numbers():
    claimed = Spread(1.40, 1.35, 1.45)
    assert not is_slower(claimed, Spread(1.40, 1.30, 1.50), 0.05)
    assert not is_slower(claimed, Spread(1.36, 1.30, 1.40), 0.05)  # the IQRs overlap
    assert not is_slower(claimed, Spread(1.34, 1.33, 1.34), 0.05)  # fell by less than 5%
    assert is_slower(claimed, Spread(1.20, 1.15, 1.25), 0.05)
    assert not is_slower(claimed, Spread(1.20, 1.15, 1.25), 0.20)  # within a noisy floor
    assert reliably_faster(Spread(1.20, 1.10, 1.30), 0.05)
    assert not reliably_faster(Spread(1.20, 0.98, 1.30), 0.05)  # slower in a quarter of rounds
    assert not reliably_faster(Spread(1.03, 1.01, 1.05), 0.05)  # within the tolerance


@pytest.mark.parametrize(
    ("content", "words"),
    [
        ("{ not json", ["is not valid JSON", "line 1"]),
        ('{"decision": "maybe"}', ["invalid best-config", "decision"]),
    ],
)
def test_a_broken_file_is_one_paragraph_and_exit_code_2(
    tmp_path, model_file, capsys, content, words
):
    path = tmp_path / "best_config.json"
    path.write_text(content)
    code = main(["verify", str(path), model_file("tiny"), "--json"])
    captured = capsys.readouterr()
    assert code == 2 and captured.out == ""
    assert captured.err.startswith("autotune: error: ") and "Traceback" not in captured.err
    assert all(word in captured.err for word in words)


def test_a_model_file_breaking_the_contract_is_exit_code_2(tmp_path, model_file, capsys):
    path = best_file(tmp_path, aot(), MODEST)
    assert main(["verify", path, model_file("no_get_inputs")]) == 2
    err = capsys.readouterr().err
    assert "get_inputs" in err and "Traceback" not in err
    assert main(["verify", str(tmp_path / "missing.json"), model_file("tiny"), "--debug"]) == 2
    err = capsys.readouterr().err
    assert "does not exist" in err and "Traceback" in err


def test_a_do_not_compile_file_cannot_skip_the_default_compile(tmp_path, model_file, capsys):
    assert main(["verify", best_file(tmp_path), model_file("tiny"), "--skip-default"]) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and "drop --skip-default" in captured.err


@pytest.mark.slow
def test_a_real_inductor_config_is_verified_against_eager_and_default_compile(
    tmp_path, model_file, capsys
):
    path = best_file(tmp_path, CompileConfig(), MODEST)
    code, report = run_json(capsys, path, model_file("tiny"), "--measure-seconds", "0.5")
    assert (code, report["verdict"]) == (0, "ok"), report["reasons"]
    assert report["measured_compile_time_s"] > 0 and report["measured_default_compile_time_s"] > 0
    # The file's config is the default compile itself: the two agree within the noise.
    assert 0.7 < report["measured_speedup_vs_default"] < 1.4
    assert set(report["per_repeat"][0]) >= {"eager", "default", "config"}


@pytest.mark.slow
def test_a_do_not_compile_file_is_verified_with_real_inductor(tmp_path, model_file, capsys):
    code = main(["verify", best_file(tmp_path), model_file("tiny"), "--measure-seconds", "0.5"])
    out = capsys.readouterr().out
    # Inductor's per-call overhead makes the tiny model slower compiled on a CPU.
    assert code == 0 and "Verdict: ok: default torch.compile measured" in out


class SpecRecorder:
    """Fails every trial, after noting whether it was held to the looser gate."""

    def __init__(self) -> None:
        self.relaxed: dict[str, bool] = {}

    def run(self, spec):
        from autotune.trials import TrialResult

        self.relaxed["eager" if spec.config is None else spec.config["backend"]] = (
            spec.relaxed_numerics
        )
        kind = "compile_error" if spec.config is not None else None
        if kind is None:
            return TrialResult(status="ok", latency_median_s=1e-3, eager_latency_median_s=1e-3,
                               speedup_vs_eager=1.0, speedup_vs_eager_q1=1.0,
                               speedup_vs_eager_q3=1.0)  # fmt: skip
        return TrialResult.failed(kind, "not measured here")


@pytest.mark.parametrize(
    ("workload", "options", "relaxed"),
    [
        ({"relaxed_numerics": True}, {}, True),  # the file says so
        ({"relaxed_numerics": False}, {}, False),
        ({}, {"cpp.enable_floating_point_contract_flag": "fast"}, True),  # older file: by knob
        ({}, {}, False),
    ],
)
def test_verify_holds_the_config_to_the_gate_its_search_used(
    tmp_path, model_file, workload, options, relaxed
):
    config = CompileConfig(backend="aot_eager", options=options)
    best = BestConfig.load(best_file(tmp_path, config, MODEST))
    best.workload.update(workload)
    runner = SpecRecorder()
    verify(best, model_file("tiny"), runner=runner)  # type: ignore[arg-type]
    # default torch.compile is held to the strict gate, as in the search
    assert runner.relaxed == {"eager": False, "inductor": False, "aot_eager": relaxed}


class SlowCompileRunner:
    """Every trial runs 1.5x eager; a compiled one takes 20 s to compile."""

    def run(self, spec):
        from autotune.trials import TrialResult

        return TrialResult(status="ok", compile_time_s=20.0 if spec.config else None,
                           latency_median_s=1e-3, eager_latency_median_s=1.5e-3,
                           speedup_vs_eager=1.5 if spec.config else 1.0,
                           speedup_vs_eager_q1=1.45 if spec.config else 0.99,
                           speedup_vs_eager_q3=1.55 if spec.config else 1.01)  # fmt: skip


def test_a_cold_compile_above_the_claim_or_the_picks_cap_is_a_warning(tmp_path, model_file):
    claims = {"speedup_vs_eager": 1.5, "speedup_vs_eager_q1": 1.45, "speedup_vs_eager_q3": 1.55,
              "cold_compile_time_s": 5.0}  # fmt: skip
    best = BestConfig.load(best_file(tmp_path, aot(), claims))
    best.source["pick"] = "fastest,compile<=10s"
    best.source["pick_rule"] = {"goal": "fastest", "max_compile_s": 10.0}
    report = verify(best, model_file("tiny"), runner=SlowCompileRunner(), default=None)  # type: ignore[arg-type]
    assert report.verdict == "ok"  # the speed claim holds; compile time is a warning
    assert "cold compile: claimed 5.0 s, measured 20.0 s" in report.warnings
    assert any("above the compile<=10s of the rule that picked this config" in w
               for w in report.warnings)  # fmt: skip


class OrderRecorder:
    """Notes what each trial measured; the config fails from its ``fail_from``-th run on."""

    def __init__(self, fail_from: int | None = None) -> None:
        self.order: list[str] = []
        self.fail_from = fail_from

    def run(self, spec):
        from autotune.trials import TrialResult

        name = "eager" if spec.config is None else spec.config["backend"]
        self.order.append(name)
        if name == "aot_eager" and self.fail_from and self.order.count(name) >= self.fail_from:
            return TrialResult.failed("compile_error", "broke on the second repeat")
        return SlowCompileRunner().run(spec)


def test_repeats_alternate_their_order_and_a_failure_ends_after_its_repeat(tmp_path, model_file):
    best = BestConfig.load(best_file(tmp_path, aot(), MODEST))
    runner = OrderRecorder()
    verify(best, model_file("tiny"), runner=runner, repeats=3)  # type: ignore[arg-type]
    # ABBA: the config's and the default's pooled figures span the same minutes
    assert runner.order == ["eager", "inductor", "aot_eager", "aot_eager", "inductor", "eager",
                            "eager", "inductor", "aot_eager"]  # fmt: skip

    runner = OrderRecorder(fail_from=2)
    report = verify(best, model_file("tiny"), runner=runner, repeats=3)  # type: ignore[arg-type]
    assert runner.order == ["eager", "inductor", "aot_eager", "aot_eager", "inductor", "eager"]
    assert report.verdict == "broken" and len(report.repeats) == 2
