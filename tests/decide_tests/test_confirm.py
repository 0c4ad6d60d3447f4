"""The confirmation round (autotune/decide/_confirm.py): the chosen config and default compile
measured again apart from the choice, ABBA, and the three outcomes the file takes from it, on
planted timings (a scripted runner: nothing compiles)."""

from __future__ import annotations

import json

import homes
import pytest
import scripted
import torch

import autotune
from autotune._deadline import DeadlineReached
from autotune.cli import main
from autotune.decide._confirm import RUNS, Confirmation, confirm, settle
from autotune.records import TrialRecord
from autotune.runtime.config import BestConfig, CompileConfig
from autotune.settings import StudySettings
from autotune.trials import TrialResult, TrialSpec

SETTINGS = StudySettings(
    model_path="m.py", device="cpu", space={}, space_hash="x", torch_version="2.13.0"
)
TUNED = CompileConfig(mode="max-autotune-no-cudagraphs")


def record(n: int, config: CompileConfig, baseline: str | None = None) -> TrialRecord:
    return TrialRecord(
        trial_number=n, config=config.to_dict(), config_hash=config.config_hash(),
        brief=config.brief(), status="ok", baseline=baseline, wall_time_s=1.0,
    )  # fmt: skip


CHOSEN, DEFAULT = record(7, TUNED), record(1, CompileConfig(), "default")


def chose(config: CompileConfig = TUNED, trial: int = 7) -> BestConfig:
    """What the finalist round decided: compile ``config``, claiming its lucky 2.0x."""
    return BestConfig(
        decision="compile", reason="trial 7 was the best correct configuration", config=config,
        metrics={"speedup_vs_eager": 2.0, "speedup_vs_default": 1.6, "compile_time_s": 3.0},
        source={"study": "s", "trial": trial},
    )  # fmt: skip


def runs(chosen: list[TrialResult], default: list[TrialResult] | None = None) -> Confirmation:
    subjects = {CHOSEN.trial_number: chosen}
    if default is not None:
        subjects[DEFAULT.trial_number] = default
    return Confirmation(CHOSEN, DEFAULT if default is not None else None, subjects)


def test_a_lucky_finalist_is_claimed_at_what_the_confirmation_measured():
    """The finalist round chose trial 7 at 2.0x; measured apart from the choice it runs 1.6x,
    1.33x default compile, resolved: compile, claiming 1.6x."""
    made = settle(chose(), runs([scripted.ok(1.6, ci=0.02)] * 2, [scripted.ok(1.2, ci=0.02)] * 2))
    assert made.decision == "compile" and made.config == TUNED
    m = made.metrics
    assert m["speedup_vs_eager"] == pytest.approx(1.6)
    assert (m["speedup_vs_eager_ci_low"], m["speedup_vs_eager_ci_high"]) == pytest.approx(
        (1.58, 1.62)
    )
    assert m["speedup_vs_default"] == pytest.approx(1.6 / 1.2)
    assert m["speedup_vs_default_ci_low"] == pytest.approx(1.58 / 1.22)
    # the latencies come from the same runs as the speedup: their ratio agrees with it
    assert m["eager_latency_median_s"] / m["latency_median_s"] == pytest.approx(1.6)
    assert m["confirmation_runs"] == 2 and m["compile_time_s"] == 3.0
    assert "confirmed apart from the choice (2 fresh processes each, ABBA)" in made.reason
    assert "the file claims these figures, not the round that chose it" in made.reason


def test_an_unresolved_lead_is_inconclusive_and_ships_default_compile():
    made = settle(
        chose(), runs([scripted.ok(1.25, ci=0.05)] * 2, [scripted.ok(1.22, ci=0.04)] * 2)
    )
    assert made.decision == "inconclusive"
    assert made.config == CompileConfig() and made.source["trial"] == DEFAULT.trial_number
    assert made.metrics["speedup_vs_eager"] == pytest.approx(1.22)
    assert made.metrics["tied_trial"] == 7
    # what it ships pays back its compile (the confirmation's cold run) like any compile does
    assert made.metrics["cold_compile_time_s"] == made.metrics["compile_time_s"] == 0.5
    assert made.metrics["break_even_calls_vs_eager"] == pytest.approx(0.5 / (1e-3 - 1e-3 / 1.22))
    reason = made.reason
    assert reason.startswith("inconclusive: trial 7 was the best correct configuration")
    assert "its lead over default torch.compile is not resolved" in reason
    assert "It ties trial 7 (" in reason and "and default torch.compile" in reason
    assert "the cheaper side ships: default torch.compile" in reason
    assert "autotune finalize --remeasure" in reason


def test_when_default_compile_does_not_beat_eager_either_eager_ships():
    made = settle(chose(), runs([scripted.ok(1.03, ci=0.05)] * 2, [scripted.ok(1.0, ci=0.04)] * 2))
    assert (made.decision, made.config, made.config_hash) == ("inconclusive", None, None)
    assert "the cheaper side ships: eager" in made.reason


def test_a_tuned_config_ahead_of_default_but_not_of_eager_is_inconclusive():
    """Its lead over default compile is resolved (default compile ran slower than eager), its
    lead over eager is not: compiling itself is unconfirmed, and eager ships."""
    made = settle(chose(), runs([scripted.ok(1.01, ci=0.03)] * 2, [scripted.ok(0.8, ci=0.02)] * 2))
    assert (made.decision, made.config) == ("inconclusive", None)
    assert "trial 7 measured 1.010x" in made.reason and "lead over eager is not" in made.reason


def test_default_compile_chosen_is_confirmed_against_eager_or_inconclusive():
    chosen_default = Confirmation(DEFAULT, None, {1: [scripted.ok(1.3, ci=0.02)] * 2})
    made = settle(chose(CompileConfig(), trial=1), chosen_default)
    assert made.decision == "compile" and made.metrics["speedup_vs_eager"] == pytest.approx(1.3)
    unresolved = Confirmation(DEFAULT, None, {1: [scripted.ok(1.01, ci=0.03)] * 2})
    made = settle(chose(CompileConfig(), trial=1), unresolved)
    assert (made.decision, made.config) == ("inconclusive", None)
    assert "its lead over eager is not resolved" in made.reason


def test_a_chosen_config_failing_in_the_confirmation_is_inconclusive():
    failed = TrialResult.failed("crash", "segfault")
    made = settle(chose(), runs([scripted.ok(1.6, ci=0.02), failed], [scripted.ok(1.2)] * 2))
    assert made.decision == "inconclusive" and made.config == CompileConfig()
    assert "trial 7 failed in it (crash: segfault)" in made.reason


def test_the_round_runs_abba_in_fresh_caches_of_its_own_at_the_studys_precision():
    seen: list[tuple[str, str | None]] = []

    class Runner:
        def run(self, spec: TrialSpec) -> TrialResult:
            assert spec.config is not None and spec.cache_dir is not None
            seen.append((spec.config["mode"], spec.cache_dir))
            assert spec.measure.precision == SETTINGS.finalist_precision
            return scripted.ok(1.5 if spec.config["mode"] != "default" else 1.2)

    recorded: list[tuple[int, str]] = []
    done = confirm(
        CHOSEN, DEFAULT, SETTINGS, runner=Runner(),  # type: ignore[arg-type]
        on_result=lambda r, run, result: recorded.append((r.trial_number, run)),
    )  # fmt: skip
    modes = [mode for mode, _ in seen]
    assert modes == [TUNED.mode, "default", "default", TUNED.mode]  # ABBA
    assert seen[0][1] == seen[3][1] != seen[1][1] == seen[2][1]  # one cache per config
    assert recorded == [(7, RUNS[0]), (1, RUNS[0]), (1, RUNS[1]), (7, RUNS[1])]
    assert len(done.of(CHOSEN)) == len(done.of(DEFAULT)) == 2


def confirming(chosen: float, default: float, ci: float = 0.02) -> scripted.Script:
    """The search and the finalists measure every tuned config 2.0x and default compile 1.2x;
    the confirmation round (its runs' caches are named confirm-*) ``chosen`` and ``default``."""

    def script(spec: TrialSpec) -> TrialResult:
        if spec.config is None:
            return scripted.ok(1.0)
        is_default = spec.config == CompileConfig().to_dict()
        if "confirm-" in (spec.cache_dir or ""):
            return scripted.ok(default if is_default else chosen, ci=ci)
        return scripted.ok(1.2 if is_default else 2.0, ci=ci)

    return script


def search(tmp_path, model_file, space_file, *extra: str) -> dict:
    out = tmp_path / "best.json"
    code = main([
        "search", model_file("tiny"), "--space", space_file("aot_eager_16"), "--trials", "3",
        "--storage", f"sqlite:///{tmp_path}/s.db", "--study", "s", "--out", str(out),
        "--device", "cpu", "--finalists", "1", "--measure-seconds", "0.2", "--scope", "whole",
        *extra,
    ])  # fmt: skip
    assert code == 0
    return json.loads(out.read_text())


def test_a_search_claims_what_its_confirmation_round_measured(
    tmp_path, monkeypatch, model_file, space_file, capsys
):
    specs = scripted.use(monkeypatch, confirming(chosen=1.6, default=1.2))
    homes.fresh(monkeypatch, tmp_path)
    written = search(tmp_path, model_file, space_file)
    assert written["decision"] == "compile"
    assert written["metrics"]["speedup_vs_eager"] == pytest.approx(1.6)  # not the lucky 2.0x
    assert written["metrics"]["confirmation_runs"] == 2
    assert "confirmed apart from the choice" in written["reason"]
    assert sum("confirm-" in (s.cache_dir or "") for s in specs) == 4
    out = capsys.readouterr().out
    assert "1.60x eager (95% interval 1.58x to 1.62x)" in out  # the Best: line
    # A later finalize reads the recorded round, confirmation included, and measures nothing.
    before = len(specs)
    storage = f"sqlite:///{tmp_path}/s.db"
    again_out = str(tmp_path / "again.json")
    finalize = ["finalize", "--study", "s", "--storage", storage, "--model", model_file("tiny")]
    assert main([*finalize, "--out", again_out]) == 0
    assert len(specs) == before
    again = json.loads((tmp_path / "again.json").read_text())
    assert again["metrics"]["speedup_vs_eager"] == pytest.approx(1.6)


def test_a_search_whose_confirmation_ties_says_inconclusive_and_ships_default_compile(
    tmp_path, monkeypatch, model_file, space_file
):
    scripted.use(monkeypatch, confirming(chosen=1.22, default=1.2, ci=0.04))
    homes.fresh(monkeypatch, tmp_path)
    written = search(tmp_path, model_file, space_file)
    assert written["decision"] == "inconclusive"
    assert written["config"] == CompileConfig().to_dict()
    assert "the cheaper side ships: default torch.compile" in written["reason"]
    model = autotune.apply(torch.nn.Linear(4, 4), tmp_path / "best.json")
    assert model is not None


def test_a_confirmation_the_timeout_cuts_short_leaves_the_choice_unconfirmed_and_the_round_whole(
    tmp_path, monkeypatch, model_file, space_file, capsys
):
    planted = confirming(chosen=1.6, default=1.2)
    confirm_runs: list[TrialSpec] = []

    def script(spec: TrialSpec) -> TrialResult:
        if "confirm-" in (spec.cache_dir or ""):
            confirm_runs.append(spec)
            if len(confirm_runs) == 2:  # as Deadline.check raises it between runs
                raise DeadlineReached("the timeout of 60 s was spent before the confirm1 run")
        return planted(spec)

    specs = scripted.use(monkeypatch, script)
    homes.fresh(monkeypatch, tmp_path)
    written = search(tmp_path, model_file, space_file)

    assert written["decision"] == "compile"
    assert written["metrics"]["speedup_vs_eager"] == pytest.approx(2.0)  # the choosing round
    assert "confirmation_runs" not in written["metrics"]
    assert "not confirmed apart from the choice" in written["reason"]
    assert "confirmation stopped: the timeout of 60 s" in capsys.readouterr().out
    # The finalist round was kept whole: a later finalize decides on it and measures nothing,
    # and does not take the confirmation's one run for a confirmation.
    before = len(specs)
    storage = f"sqlite:///{tmp_path}/s.db"
    again = tmp_path / "again.json"
    assert main(["finalize", "--study", "s", "--storage", storage, "--model",
                 model_file("tiny"), "--out", str(again)]) == 0  # fmt: skip
    assert len(specs) == before
    assert json.loads(again.read_text())["metrics"]["speedup_vs_eager"] == pytest.approx(2.0)


def test_confirm_0_claims_the_choosing_round_and_says_so(
    tmp_path, monkeypatch, model_file, space_file
):
    specs = scripted.use(monkeypatch, confirming(chosen=1.6, default=1.2))
    homes.fresh(monkeypatch, tmp_path)
    written = search(tmp_path, model_file, space_file, "--confirm", "0")
    assert written["decision"] == "compile"
    assert written["metrics"]["speedup_vs_eager"] == pytest.approx(2.0)
    assert not any("confirm-" in (s.cache_dir or "") for s in specs)
