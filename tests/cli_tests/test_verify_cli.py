"""`autotune verify BEST_CONFIG.json MODEL.py` on the command line.

Verdicts, pooling, order, warnings and the JSON report are forced with scripted trial results
(tests/scripted.py), so no assertion depends on how fast this machine runs the model. A few
tests run real trial processes and check only what holds on any machine: the report is well
formed, and a config that cannot compile or changes the outputs fails the verify.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
import scripted

from autotune.cli import main
from autotune.runtime.config import BestConfig, CompileConfig
from autotune.runtime.fingerprint import environment_fingerprint
from autotune.trials import TrialResult, TrialSpec

# What the file claims; the default script measures exactly that (2.0x, default 1.6x).
CLAIMS = {
    "speedup_vs_eager": 2.0,
    "speedup_vs_eager_q1": 1.9,
    "speedup_vs_eager_q3": 2.1,
    "speedup_vs_default": 1.25,
    "latency_median_s": 5e-4,
    "eager_latency_median_s": 1e-3,
    "compile_time_s": 0.5,
}
FAST = ["--measure-seconds", "0.3"]
AOT = CompileConfig(backend="aot_eager")
Results = TrialResult | list[TrialResult]


def best_file(
    tmp_path: Path,
    config: CompileConfig | None = AOT,
    metrics: dict[str, Any] | None = None,
    *,
    environment: dict[str, Any] | None = None,
    workload: dict[str, Any] | None = None,
    source: dict[str, Any] | None = None,
) -> str:
    """A best-config file tuned on what scripted.ok reports (environment, model, inputs)."""
    best = BestConfig(
        decision="compile" if config is not None else "do_not_compile",
        reason="written by the test",
        config=config,
        metrics=dict(CLAIMS if metrics is None else metrics),
        environment=environment or {"host": "scripted", "torch": "2.13.0"},
        model={"sha256": "scripted"},
        workload=workload or {"kind": "infer", "device": "cpu", "inputs": ["(4x16:float32)"]},
        source=source or {},
    )
    path = tmp_path / "best_config.json"
    best.dump(path)
    return str(path)


def measurement(spec: TrialSpec) -> str:
    """Which measurement a spec is: the files in these tests compile with aot_eager."""
    if spec.config is None:
        return "eager"
    return "default" if spec.config == CompileConfig().to_dict() else "config"


def measuring(
    config: Results | None = None, default: Results | None = None, eager: Results | None = None
) -> scripted.Script:
    """Each measurement answers its results in turn, one per repeat (the last one repeats)."""
    answers = {
        "eager": eager or scripted.ok(1.0),
        "default": default or scripted.ok(1.6),
        "config": config or scripted.ok(2.0),
    }
    seen: Counter[str] = Counter()

    def script(spec: TrialSpec) -> TrialResult:
        name = measurement(spec)
        seen[name] += 1
        results = answers[name]
        if isinstance(results, TrialResult):
            return results
        return results[min(seen[name], len(results)) - 1]

    return script


@pytest.fixture
def verify_json(capsys, model_file):
    """Runs `autotune verify FILE tiny.py ARGS --json`: (exit code, report, stderr)."""

    def go(path: str, *argv: str) -> tuple[int, dict[str, Any], str]:
        code = main(["verify", path, model_file("tiny"), *argv, "--json"])
        captured = capsys.readouterr()
        return code, json.loads(captured.out), captured.err

    return go


def test_claims_measured_as_stated_are_ok_with_exit_code_0_and_no_warnings(
    tmp_path, monkeypatch, verify_json
):
    scripted.use(monkeypatch, measuring())
    code, report, _ = verify_json(best_file(tmp_path))
    assert (code, report["verdict"], report["exit_code"]) == (0, "ok", 0)
    assert report["reasons"] == [
        "measured 2.000x (95% interval 1.980x to 2.020x) eager, claimed 2.000x: the claim holds",
        "measured 1.250x (95% interval 1.222x to 1.278x) default torch.compile, claimed 1.250x: "
        "the lead holds",
    ]
    assert report["warnings"] == [] and report["environment_mismatches"] == []
    assert report["measured_speedup_vs_default"] == pytest.approx(1.25)
    assert report["measured_default_speedup_vs_eager"] == 1.6
    assert report["noise_floor"] == pytest.approx(0.02) and report["tolerance"] == 0.05


@pytest.mark.parametrize(
    ("config", "verdict", "exit_code", "words"),
    [
        (scripted.ok(1.92, q=0.05), "ok", 0, "the claim holds"),
        (scripted.ok(1.75, q=0.05), "slower", 1, "the claim lies above the interval by more"),
    ],
)
def test_a_drop_within_the_tolerance_is_ok_and_one_beyond_it_is_slower(
    tmp_path, monkeypatch, verify_json, config, verdict, exit_code, words
):
    scripted.use(monkeypatch, measuring(config))
    code, report, _ = verify_json(best_file(tmp_path))
    assert (code, report["verdict"], report["exit_code"]) == (exit_code, verdict, exit_code)
    assert words in report["reasons"][0]


def test_the_table_shows_claims_against_measurements_and_the_verdict(
    tmp_path, monkeypatch, model_file, capsys
):
    scripted.use(monkeypatch, measuring(scripted.ok(1.75, q=0.05, compile_s=0.6)))
    path = best_file(tmp_path)
    code = main(["verify", path, model_file("tiny")])
    out = capsys.readouterr().out
    assert code == 1
    assert out.startswith(f"verify {path} (compile aot_eager ") and ": 1 repeat, seed 0, " in out
    assert "  repeat 1  the file's config  ok  1.750x (1.700x to 1.800x) eager" in out
    assert "speedup vs eager    2.000x (1.900x to 2.100x)  1.750x (1.700x to 1.800x)\n" in out
    # A result that gives no interval of its median is known to its quartiles.
    assert "  95% interval      -                          1.700x to 1.800x\n" in out
    assert "speedup vs default  1.250x                     1.094x\n" in out
    assert "  95% interval                                 1.049x to 1.139x\n" in out
    assert "compile time        0.5s                       0.6s (cold)\n" in out
    assert "noise floor (eager vs eager): ±2.0%; tolerance 5.0%\n" in out
    assert out.splitlines()[-1] == (
        "Verdict: slower: measured 1.750x (95% interval 1.700x to 1.800x) eager, claimed 2.000x: "
        "the claim lies above the interval by more than 5%."
    )


NOISY = (
    "noisy timing: eager timed against itself strays ±15% from 1.0, so only larger drops can "
    "fail a claim; verify on a quiet machine, or with --repeats"
)


@pytest.mark.parametrize(
    ("eager_q", "tolerance", "verdict", "code", "noisy"),
    [
        (0.01, "0.05", "slower", 1, []),  # quiet: the tolerance is --tolerance's 5%
        (0.08, "0.05", "slower", 1, []),  # the floor raises it to 8%: 2.0x is 11% above 1.80x
        (0.15, "0.05", "too_noisy", 3, []),  # past the 10% cap: no claim can be judged
        (0.15, "0.20", "ok", 0, [NOISY]),  # a tolerance raised past the cap judges, and warns
    ],
)
def test_the_noise_floor_raises_the_tolerance_up_to_a_cap(
    tmp_path, monkeypatch, verify_json, eager_q, tolerance, verdict, code, noisy
):
    eager = scripted.ok(1.0, q=eager_q)
    scripted.use(monkeypatch, measuring(scripted.ok(1.75, q=0.05), eager=eager))
    exit_code, report, _ = verify_json(best_file(tmp_path), "--tolerance", tolerance)
    assert report["noise_floor"] == pytest.approx(eager_q)
    assert report["tolerance"] == pytest.approx(min(max(float(tolerance), eager_q),
                                                    max(0.10, float(tolerance))))  # fmt: skip
    assert (exit_code, report["verdict"]) == (code, verdict)
    assert [w for w in report["warnings"] if w.startswith("noisy timing")] == noisy


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
def test_a_config_that_fails_here_is_incorrect_or_broken_with_exit_code_1(
    tmp_path, monkeypatch, verify_json, kind, verdict
):
    scripted.use(monkeypatch, measuring(TrialResult.failed(kind, "it failed here")))
    code, report, _ = verify_json(best_file(tmp_path))
    assert (code, report["verdict"]) == (1, verdict)
    assert report["reasons"] == [f"the config failed here: {kind}: it failed here"]
    assert report["per_repeat"][0]["config"]["failure_kind"] == kind
    assert report["measured_speedup_vs_eager"] is None


def test_repeats_run_every_other_one_backwards_and_are_each_reported(
    tmp_path, monkeypatch, verify_json
):
    speedups = [2.1, 2.0, 1.9, 2.2]
    runs = scripted.use(monkeypatch, measuring([scripted.ok(s) for s in speedups]))
    code, report, _ = verify_json(best_file(tmp_path), "--repeats", "4")
    # ABBA: the config's and the default's pooled figures span the same minutes
    abba = ["eager", "default", "config", "config", "default", "eager"]
    assert [measurement(spec) for spec in runs] == abba + abba
    assert [r["repeat"] for r in report["per_repeat"]] == [1, 2, 3, 4]
    assert [r["config"]["speedup_vs_eager"] for r in report["per_repeat"]] == speedups


def test_repeats_are_pooled_by_their_median(tmp_path, monkeypatch, verify_json):
    """The README's busy machine: 2.43x, 1.10x and 2.29x pool to 2.29x (the mean, 1.94x,
    would fail a claim of 2.3x), with the widest quartiles."""
    claims = {**CLAIMS, "speedup_vs_eager": 2.3, "speedup_vs_eager_q1": 2.2,
              "speedup_vs_eager_q3": 2.4}  # fmt: skip
    config = [scripted.ok(2.43, q=0.05), scripted.ok(1.10, q=0.05), scripted.ok(2.29, q=0.05)]
    scripted.use(monkeypatch, measuring(config))
    code, report, err = verify_json(best_file(tmp_path, metrics=claims), "--repeats", "3")
    assert (code, report["verdict"]) == (0, "ok")
    pooled = [report[f"measured_speedup_vs_eager{k}"] for k in ("", "_q1", "_q3")]
    assert pooled == pytest.approx([2.29, 1.05, 2.48])
    assert report["measured_speedup_vs_default"] == pytest.approx(2.29 / 1.6)
    assert "  repeat 3  the file's config  ok  2.290x" in err  # progress: stderr with --json


def test_a_failed_config_ends_the_measuring_after_its_repeat(tmp_path, monkeypatch, verify_json):
    failed = TrialResult.failed("compile_error", "broke on the second repeat")
    runs = scripted.use(monkeypatch, measuring([scripted.ok(2.0), failed]))
    code, report, _ = verify_json(best_file(tmp_path), "--repeats", "3")
    assert [measurement(spec) for spec in runs] == [
        "eager", "default", "config", "config", "default", "eager"
    ]  # fmt: skip
    assert (code, report["verdict"], len(report["per_repeat"])) == (1, "broken", 2)


@pytest.mark.parametrize(
    ("default", "verdict", "exit_code", "words"),
    [
        (
            scripted.ok(1.5),
            "compile_now_faster",
            1,
            "measured 1.500x (95% interval 1.480x to 1.520x) eager: "
            "reliably faster now (q1 > 1 and more than 5%); search again",
        ),  # fmt: skip
        (scripted.ok(1.04), "ok", 0, "not reliably faster"),  # by less than the tolerance
        (scripted.ok(1.2, q=0.25), "ok", 0, "not reliably faster"),  # q1 below 1
        (TrialResult.failed("compile_error", "no"), "ok", 0, "does not run here"),
    ],
)
def test_a_do_not_compile_file_fails_once_default_compile_is_reliably_faster(
    tmp_path, monkeypatch, verify_json, default, verdict, exit_code, words
):
    runs = scripted.use(monkeypatch, measuring(default=default))
    code, report, _ = verify_json(best_file(tmp_path, None))
    assert [measurement(spec) for spec in runs] == ["eager", "default"]
    assert (code, report["verdict"], report["exit_code"]) == (exit_code, verdict, exit_code)
    assert words in report["reasons"][0]
    assert report["claimed_speedup_vs_eager"] is None and report["config"] is None
    assert report["measured_speedup_vs_eager"] == 1.0  # eager, what the file says to run


def test_another_environment_is_a_warning_not_a_failure(tmp_path, monkeypatch, verify_json):
    scripted.use(monkeypatch, measuring())
    path = best_file(tmp_path, environment={"host": "scripted", "torch": "1.13.0"})
    code, report, _ = verify_json(path)
    assert (code, report["verdict"]) == (0, "ok")
    assert report["environment_mismatches"] == [
        "environment: torch: tuned with '1.13.0', running with '2.13.0'"
    ]
    assert report["warnings"] == report["environment_mismatches"]


@pytest.mark.parametrize(
    ("measured_s", "warnings"),
    [
        (7.0, []),  # 1.4x the file's cold compile
        (8.0, ["cold compile: claimed 5.0 s, measured 8.0 s"]),  # 1.6x
    ],
)
def test_a_cold_compile_above_1_5x_the_files_is_a_warning(
    tmp_path, monkeypatch, verify_json, measured_s, warnings
):
    scripted.use(monkeypatch, measuring(scripted.ok(2.0, compile_s=measured_s)))
    # the file's compile_time_s is a warm one (a shared kernel cache): its cold one counts
    path = best_file(tmp_path, metrics={**CLAIMS, "cold_compile_time_s": 5.0})
    code, report, _ = verify_json(path)
    assert (code, report["verdict"], report["claimed_compile_time_s"]) == (0, "ok", 5.0)
    assert report["warnings"] == warnings


def test_a_cold_compile_above_the_cap_of_the_pick_rule_is_a_warning(
    tmp_path, monkeypatch, verify_json
):
    scripted.use(monkeypatch, measuring(scripted.ok(2.0, compile_s=12.0)))
    source = {"pick": "fastest,compile<=10s", "pick_rule": {"max_compile_s": 10.0}}
    path = best_file(tmp_path, metrics={**CLAIMS, "compile_time_s": 10.0}, source=source)
    code, report, _ = verify_json(path)
    assert (code, report["verdict"]) == (0, "ok")
    assert report["warnings"] == [
        "cold compile: measured 12.0 s, above the compile<=10s of the rule that picked this "
        "config (--pick fastest,compile<=10s); search again on this machine"
    ]


TRIAL_KEYS = {
    "status", "failure_kind", "error", "speedup_vs_eager", "speedup_vs_eager_q1",
    "speedup_vs_eager_q3", "speedup_vs_eager_ci_low", "speedup_vs_eager_ci_high", "rounds",
    "speedup_rounds", "latency_median_s", "eager_latency_median_s", "compile_time_s",
    "wall_time_s",
}  # fmt: skip
CLAIMED = {
    "speedup_vs_eager", "speedup_vs_eager_q1", "speedup_vs_eager_q3", "speedup_vs_eager_ci_low",
    "speedup_vs_eager_ci_high", "speedup_vs_default", "latency_median_s",
    "eager_latency_median_s", "compile_time_s",
}  # fmt: skip
MEASURED = CLAIMED | {
    "speedup_vs_default_ci_low", "speedup_vs_default_ci_high", "default_speedup_vs_eager",
    "default_speedup_vs_eager_q1", "default_speedup_vs_eager_q3",
    "default_speedup_vs_eager_ci_low", "default_speedup_vs_eager_ci_high",
    "default_compile_time_s",
}  # fmt: skip
REPORT_KEYS = {
    "verdict", "exit_code", "reasons", "warnings", "environment_mismatches", "decision",
    "config", "device", "tolerance", "noise_floor", "per_repeat",
    *(f"claimed_{k}" for k in CLAIMED), *(f"measured_{k}" for k in MEASURED),
}  # fmt: skip


def test_the_json_report_has_the_documented_keys(tmp_path, monkeypatch, verify_json):
    scripted.use(monkeypatch, measuring())
    _, report, _ = verify_json(best_file(tmp_path))
    assert set(report) == REPORT_KEYS
    (repeat,) = report["per_repeat"]
    assert set(repeat) == {"repeat", "eager", "default", "config", "speedup_vs_default"}
    assert all(set(repeat[name]) == TRIAL_KEYS for name in ("eager", "default", "config"))
    assert (report["decision"], report["device"]) == ("compile", "cpu")
    assert report["config"].startswith("aot_eager ")


def test_skip_default_measures_no_default_compile_and_checks_nothing_against_it(
    tmp_path, monkeypatch, verify_json
):
    runs = scripted.use(monkeypatch, measuring())
    code, report, _ = verify_json(best_file(tmp_path), "--skip-default")
    assert [measurement(spec) for spec in runs] == ["eager", "config"]
    assert (code, report["verdict"]) == (0, "ok")
    assert report["measured_speedup_vs_default"] is None
    assert report["measured_default_speedup_vs_eager"] is None
    assert set(report["per_repeat"][0]) == {"repeat", "eager", "config", "speedup_vs_default"}


@pytest.mark.parametrize(
    ("recorded", "argv", "used"),
    [
        ({}, [], 0),  # a file written before the seed was recorded
        ({"seed": 7}, [], 7),
        ({"seed": 7}, ["--seed", "3"], 3),
    ],
)
def test_the_seed_is_the_files_or_0_for_older_files_unless_seed_is_given(
    tmp_path, monkeypatch, model_file, capsys, recorded, argv, used
):
    workload = {"kind": "infer", "device": "cpu", "inputs": ["(4x16:float32)"], **recorded}
    path = best_file(tmp_path, workload=workload)
    assert json.loads(Path(path).read_text())["workload"].get("seed") == recorded.get("seed")
    runs = scripted.use(monkeypatch, measuring())
    assert main(["verify", path, model_file("tiny"), *argv]) == 0
    assert f": 1 repeat, seed {used}, " in capsys.readouterr().out
    assert [spec.seed for spec in runs] == [used] * 3


def test_a_model_failing_in_eager_mode_is_exit_code_2(tmp_path, monkeypatch, model_file, capsys):
    runs = scripted.use(monkeypatch, measuring(eager=TrialResult.failed("model_error", "broke")))
    code = main(["verify", best_file(tmp_path), model_file("tiny"), "--json"])
    captured = capsys.readouterr()
    assert (code, captured.out, len(runs)) == (2, "", 1)
    assert "does not run in eager mode on cpu (model_error: broke)" in captured.err


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
    path = best_file(tmp_path)
    assert main(["verify", path, model_file("no_get_inputs")]) == 2
    err = capsys.readouterr().err
    assert "get_inputs" in err and "Traceback" not in err
    assert main(["verify", str(tmp_path / "missing.json"), model_file("tiny"), "--debug"]) == 2
    err = capsys.readouterr().err
    assert "does not exist" in err and "Traceback" in err


def test_a_do_not_compile_file_cannot_skip_the_default_compile(tmp_path, model_file, capsys):
    assert main(["verify", best_file(tmp_path, None), model_file("tiny"), "--skip-default"]) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and "drop --skip-default" in captured.err


# Real trial processes: only what holds however fast this machine is.


def real_file(tmp_path: Path, config: CompileConfig | None) -> str:
    """A file tuned on this machine that claims no speedup: its verdict cannot hang on speed."""
    environment = environment_fingerprint("cpu")
    return best_file(tmp_path, config, {"compile_time_s": 0.5}, environment=environment)


def assert_well_formed(report: dict[str, Any], names: set[str]) -> None:
    """Every key present, every median within its quartiles, every trial with rounds."""
    assert set(report) == REPORT_KEYS
    assert_ordered(report, "measured_")
    (repeat,) = report["per_repeat"]
    assert set(repeat) == {"repeat", "speedup_vs_default", *names}
    for name in names:
        trial = repeat[name]
        assert set(trial) == TRIAL_KEYS and trial["status"] == "ok"
        assert_ordered(trial)
        assert (
            trial["rounds"] >= 1
            and trial["latency_median_s"] > 0
            and trial["eager_latency_median_s"] > 0
        )
    assert report["noise_floor"] >= 0 and report["tolerance"] >= 0.05


def assert_ordered(found: dict[str, Any], prefix: str = "") -> None:
    q1, median, q3 = (found[f"{prefix}speedup_vs_eager{k}"] for k in ("_q1", "", "_q3"))
    assert 0 < q1 <= median <= q3


def test_a_real_measurement_gives_a_well_formed_report(tmp_path, model_file, capsys):
    path = real_file(tmp_path, CompileConfig(backend="aot_eager"))
    code = main(["verify", path, model_file("tiny"), *FAST, "--skip-default", "--json"])
    report = json.loads(capsys.readouterr().out)
    assert (code, report["verdict"]) == (0, "ok"), report["reasons"]
    assert report["reasons"] == [
        "the config compiles and matches eager; the file claims no speedup"
    ]
    assert_well_formed(report, {"eager", "config"})
    assert report["measured_compile_time_s"] > 0 and report["claimed_compile_time_s"] == 0.5
    assert report["environment_mismatches"] == []
    assert report["measured_default_speedup_vs_eager"] is None  # --skip-default


@pytest.mark.parametrize(
    ("backend", "verdict", "kind"),
    [
        ("relu_accuracy_error_TESTING_ONLY", "incorrect", "accuracy"),
        ("relu_compile_error_TESTING_ONLY", "broken", "compile_error"),
    ],
)
def test_a_real_config_that_fails_here_fails_the_verify(
    tmp_path, model_file, capsys, backend, verdict, kind
):
    path = real_file(tmp_path, CompileConfig(backend=backend))
    code = main(["verify", path, model_file("tiny"), *FAST, "--skip-default", "--json"])
    assert code == 2  # torch's test-only backends are refused from a file...
    assert f"opt in by name: backend.{backend}" in capsys.readouterr().err
    opted = ["--allow-unsafe-knob", f"backend.{backend}"]  # ...unless opted into by name
    code = main(["verify", path, model_file("tiny"), *FAST, "--skip-default", "--json", *opted])
    report = json.loads(capsys.readouterr().out)
    assert (code, report["verdict"], report["exit_code"]) == (1, verdict, 1)
    assert kind in report["reasons"][0]
    assert report["per_repeat"][0]["config"]["failure_kind"] == kind
    assert report["measured_speedup_vs_eager"] is None


@pytest.mark.slow
def test_a_real_inductor_config_is_measured_against_eager_and_default_compile(
    tmp_path, model_file, capsys
):
    path = real_file(tmp_path, CompileConfig())
    code = main(["verify", path, model_file("tiny"), "--measure-seconds", "0.5", "--json"])
    report = json.loads(capsys.readouterr().out)
    assert (code, report["verdict"]) == (0, "ok"), report["reasons"]
    assert_well_formed(report, {"eager", "default", "config"})
    assert_ordered(report, "measured_default_")
    assert report["measured_compile_time_s"] > 0 and report["measured_default_compile_time_s"] > 0
    assert report["measured_speedup_vs_default"] > 0


@pytest.mark.slow
def test_a_do_not_compile_file_is_verified_with_real_inductor(tmp_path, model_file, capsys):
    path = real_file(tmp_path, None)
    code = main(["verify", path, model_file("tiny"), "--measure-seconds", "0.5", "--json"])
    report = json.loads(capsys.readouterr().out)
    # which verdict depends on this machine's speed and load; each says why
    verdicts = {(0, "ok"), (1, "compile_now_faster"), (3, "too_noisy")}
    assert (code, report["verdict"]) in verdicts, report["reasons"]
    because = "eager timed against itself" if code == 3 else "default torch.compile measured "
    assert report["reasons"][0].startswith(because)
    assert_well_formed(report, {"eager", "default"})
    assert_ordered(report, "measured_default_")
    assert report["measured_default_compile_time_s"] > 0
    assert report["claimed_speedup_vs_eager"] is None
