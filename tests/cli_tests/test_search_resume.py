"""Running `autotune search` again on a study, and `autotune finalize`: what is stored is used,
what may change changes (and says so), and finished work is not done twice.

Trials here are scripted (tests/scripted.py): these tests are about the study's bookkeeping,
not about measuring."""

from __future__ import annotations

import json

import optuna
import pytest
import scripted

import autotune
from autotune.cli import main
from autotune.records import RecordStore

FAST = ["--device", "cpu", "--study", "s", "--scope", "whole"]


@pytest.fixture
def run(tmp_path, model_file, space_file, capsys):
    """Runs `autotune search` on the tiny model and its aot_eager space: (exit code, stdout)."""

    def go(*extra: str, command: str = "search") -> tuple[int, str]:
        argv = ["--storage", f"sqlite:///{tmp_path}/a.db", "--out", str(tmp_path / "b.json")]
        if command == "search":
            argv = [model_file("tiny"), "--space", space_file("aot_eager"), *FAST, *argv]
        else:
            argv = ["--study", "s", *argv]
        code = main([command, *argv, *extra])
        captured = capsys.readouterr()
        return code, captured.out + captured.err

    return go


@pytest.fixture
def runs(monkeypatch):
    return scripted.use(monkeypatch, scripted.by_config(default=1.2, fgTrue_dynFalse=1.8))


def test_a_finished_study_run_again_says_so_and_rewrites_the_file_from_its_records(
    run, runs, tmp_path
):
    code, first = run("--trials", "2", "--finalists", "1")
    assert code == 0, first
    measured = len(runs)
    written = json.loads((tmp_path / "b.json").read_text())
    (tmp_path / "b.json").unlink()

    code, again = run("--trials", "2", "--finalists", "1")

    assert code == 0, again
    assert "study 's' (resumed, 2 of 2 trials done)" in again
    assert "the study's budget of 2 trials is already met (2 done): no new trials" in again
    assert "using their cold and warm measurements of" in again and "pass --remeasure" in again
    assert "finalists #" in again and ", [default]: using" in again
    assert "re-measuring" not in again
    assert len(runs) == measured  # nothing ran: no trial, no finalist
    rewritten = json.loads((tmp_path / "b.json").read_text())
    assert {**rewritten, "created_at": None} == {**written, "created_at": None}
    assert again.splitlines()[-1] == first.splitlines()[-1]  # "Wrote ..."


def test_remeasure_measures_the_recorded_finalists_again(run, runs):
    run("--trials", "2", "--finalists", "1")
    before = len(runs)
    code, out = run("--remeasure")
    assert code == 0, out
    assert "re-measuring 2 finalists" in out and "using their cold and warm" not in out
    assert len(runs) == before + 4 + 4  # two finalists cold and warm, then confirmed; no trial


def test_raising_the_budget_runs_only_the_new_trials_and_says_the_budget_changed(
    run, runs, tmp_path
):
    run("--trials", "2", "--finalists", "0")
    before = len(runs)
    code, out = run("--trials", "3", "--finalists", "0")
    assert code == 0, out
    assert "note: --trials of study 's' changes from 2 to 3" in out
    assert len(runs) == before + 1  # one new configuration (a duplicate does not count)
    assert all(spec.config is not None for spec in runs[before:])  # no baseline again
    with RecordStore(f"sqlite:///{tmp_path}/a.db") as store:
        assert sum(r.baseline is None and r.duplicate_of is None for r in store.trials("s")) == 3
    code, out = run()  # a later run without --trials keeps the stored budget of 3
    assert "budget of 3 trials is already met" in out


def test_other_settings_cannot_change_on_resume_and_every_difference_is_named(run, runs):
    run("--trials", "1", "--seed", "7", "--finalists", "0")
    before = len(runs)
    code, out = run("--seed", "8", "--compile-budget", "30", "--measure-seconds", "1",
                    "--objective", "amortized", "--calls", "10")  # fmt: skip
    assert code == 2
    assert out.startswith("autotune: error: The study 's' already exists with other settings")
    for difference in (
        "--seed: the study has 7, this run asks for 8",
        "--compile-budget: the study has 600.0, this run asks for 30.0",
        "--measure-seconds: the study has 2 s, this run asks for 1 s",
        "--objective: the study has 'latency', this run asks for 'amortized'",
        "--calls: the study has None, this run asks for 10",
    ):
        assert difference in out
    assert (
        "Only --charge-warm-compile, --compile-budget-factor, --confirm, --finalists, --no-prune, "
        "--pick, --precision, --preset-finalists and --trials may change"
    ) in " ".join(out.split())
    assert len(runs) == before


def test_options_left_out_on_resume_keep_the_stored_ones(run, runs, tmp_path):
    run("--trials", "1", "--seed", "7", "--compile-budget", "60", "--finalists", "0")
    code, out = run("--trials", "2")
    assert code == 0, out
    assert (runs[-1].seed, runs[-1].time_limit_s) == (7, 60.0)
    best = autotune.load(tmp_path / "b.json")
    assert best.workload["seed"] == 7


def test_finalize_decides_from_the_records_without_running_anything(run, runs, tmp_path):
    run("--trials", "2", "--finalists", "1")
    before = len(runs)
    (tmp_path / "b.json").unlink()
    code, out = run(command="finalize")
    assert code == 0, out
    assert "using their cold and warm measurements of" in out and len(runs) == before
    assert autotune.load(tmp_path / "b.json").decision == "compile"


def test_finalize_of_a_study_that_does_not_exist_is_a_usage_error(run, runs):
    code, out = run(command="finalize")
    assert code == 2
    assert "holds no study named 's'" in out and "Traceback" not in out


def test_the_timeout_bounds_the_trials_and_the_finalists(monkeypatch, run):
    """Trials take 0.3 s here, and the scripted search trials say they took 1 s each: the
    timeout stops the trials, and what is left of it is too short for the finalists."""
    runs = scripted.use(monkeypatch, scripted.by_config(default=1.5), pause_s=0.3)
    code, out = run("--trials", "500", "--timeout", "2", "--finalists", "2")
    assert code == 0, out
    assert "stopping: the timeout of 2 s is spent" in out
    assert "finalists skipped: the timeout leaves" in out
    assert "Wrote" in out
    assert 2 <= len(runs) < 502


def test_an_interrupted_run_leaves_no_trial_running(monkeypatch, run, tmp_path):
    calls = []

    def interrupting(spec):
        calls.append(spec)
        if len(calls) == 3:  # the first searched trial
            raise KeyboardInterrupt
        return scripted.ok(1.0 if spec.config is None else 1.2)

    scripted.use(monkeypatch, interrupting)
    code, out = run("--trials", "3")
    assert code == 130 and "Run the same command to resume the study" in out
    study = optuna.load_study(study_name="s", storage=f"sqlite:///{tmp_path}/a.db")
    states = [t.state for t in study.trials]
    assert optuna.trial.TrialState.RUNNING not in states
    assert states[-1] == optuna.trial.TrialState.FAIL


def test_a_directory_as_the_model_says_it_is_a_directory(tmp_path, capsys):
    (tmp_path / "m.py").write_text("")
    code = main(["search", str(tmp_path), "--device", "cpu"])
    err = capsys.readouterr().err
    assert code == 2
    assert f"The model file {str(tmp_path)!r} is a directory (it holds m.py)" in err
    assert "pass the path of a .py file" in err


def test_verify_measures_with_the_seed_the_file_was_tuned_with(run, runs, tmp_path, model_file):
    run("--trials", "1", "--seed", "11", "--finalists", "0")
    before = len(runs)
    code = main(["verify", str(tmp_path / "b.json"), model_file("tiny"), "--skip-default"])
    assert code == 0
    assert {spec.seed for spec in runs[before:]} == {11}
