"""The search loop, with a runner that answers from a table (no processes, no compiles)."""

from __future__ import annotations

import dataclasses

import optuna
import pytest
import torch

from autotune._deadline import Deadline
from autotune.decide import best_config
from autotune.errors import UsageError
from autotune.records import RecordStore
from autotune.search import Ended, Search, SearchRequest
from autotune.search._ends import REPEATS
from autotune.settings import StudySettings
from autotune.space import load_space
from autotune.storage import BASELINE_ATTR
from autotune.trials import TrialResult, TrialSpec


class TableRunner:
    """Speedup by (backend, fullgraph, dynamic); records every spec it was asked to run."""

    def __init__(self, speedups=None, fail=None):
        self.speedups = speedups or {}
        self.fail = fail or {}
        self.specs: list[TrialSpec] = []

    def run(self, spec: TrialSpec) -> TrialResult:
        self.specs.append(spec)
        if spec.config is None:
            return _ok(1.0, q1=0.97, q3=1.03)
        key = (spec.config["fullgraph"], spec.config["dynamic"])
        if key in self.fail:
            return TrialResult.failed(self.fail[key], "boom", error_tail="tail")
        return _ok(self.speedups.get(key, 1.2))


def _ok(speedup, q1=None, q3=None):
    return TrialResult(
        status="ok",
        compile_time_s=0.5,
        latency_median_s=1e-3 / speedup,
        latency_iqr_s=1e-5,
        eager_latency_median_s=1e-3,
        speedup_vs_eager=speedup,
        speedup_vs_eager_q1=q1 if q1 is not None else speedup - 0.02,
        speedup_vs_eager_q3=q3 if q3 is not None else speedup + 0.02,
        peak_memory_bytes=100 * 2**20,
        environment={"host": "h", "torch": "2.13.0"},
        model={"sha256": "abc", "parameters": 1},
        inputs=["(4x16:float32)"],
    )


@pytest.fixture
def request_for(tmp_path, model_file, space_file):
    def make(trials=3, study="s", model="tiny", scope="whole", **settings):
        space = load_space(space_file("aot_eager"), "cpu")
        study_settings = StudySettings(
            model_path=model_file(model), device="cpu", space=space.to_dict(),
            space_hash=space.content_hash(), torch_version=torch.__version__, scope=scope,
            trials=trials, **settings,
        )  # fmt: skip
        return SearchRequest(study, f"sqlite:///{tmp_path}/t.db", study_settings)

    return make


def test_baselines_run_first_then_the_budget_of_search_trials(request_for):
    runner = TableRunner()
    records = Search(request_for(trials=3), runner).run()
    assert [r.baseline for r in records[:2]] == ["eager", "default"]
    assert runner.specs[0].config is None
    assert runner.specs[1].config["backend"] == "inductor"
    assert sum(r.baseline is None and r.duplicate_of is None for r in records) == 3
    study = optuna.load_study(study_name="s", storage=request_for().storage)
    assert len(study.trials) == 5
    assert study.trials[0].user_attrs[BASELINE_ATTR] == "eager"


def test_speedup_vs_default_goes_through_eager(request_for):
    runner = TableRunner(
        speedups={(False, False): 1.5, (True, False): 1.5, (False, True): 1.5, (True, True): 1.5}
    )
    runner_default = 1.2  # the default baseline's config is not in the table: 1.2
    records = Search(request_for(trials=2), runner).run()
    searched = [r for r in records if r.baseline is None and r.duplicate_of is None]
    assert searched[0].speedup_vs_default == pytest.approx(1.5 / runner_default)


def test_a_repeated_config_is_reused_not_run_again(request_for):
    runner = TableRunner()
    records = Search(request_for(trials=12), runner).run()
    searched = [r for r in records if r.baseline is None]
    assert len({r.config_hash for r in searched}) <= 4
    assert len(runner.specs) == 2 + len({r.config_hash for r in searched})
    for r in searched:
        if r.duplicate_of is not None:
            original = next(o for o in records if o.trial_number == r.duplicate_of)
            assert original.config_hash == r.config_hash


class StuckSampler(optuna.samplers.BaseSampler):
    """Proposes the same point every time: a sampler that has converged on its best guess."""

    def infer_relative_search_space(self, study, trial):
        return {}

    def sample_relative(self, study, trial, search_space):
        return {}

    def sample_independent(self, study, trial, name, distribution):
        return distribution.choices[0]


def test_a_duplicate_does_not_count_and_the_next_proposal_is_random(request_for, monkeypatch):
    """With a sampler stuck on one point, every proposal after the first is a duplicate:
    duplicates reuse the result without counting, and the proposal after each is drawn at
    random, so the budget of new configurations is still measured."""
    monkeypatch.setattr(
        "autotune.search._search._sampler", lambda name, seed, trials: StuckSampler()
    )
    runner = TableRunner()
    # without exploring, the loop would spin to the deadline
    request = dataclasses.replace(request_for(trials=3), deadline=Deadline.after(120))
    search = Search(request, runner)
    records = search.run()
    assert search.ended is Ended.BUDGET_MET
    searched = [r for r in records if r.baseline is None]
    measured = [r for r in searched if r.duplicate_of is None]
    assert len(measured) == len({r.config_hash for r in measured}) == 3
    assert len(runner.specs) == 2 + 3  # the baselines, then each configuration once
    assert any(r.duplicate_of is not None for r in searched)


def test_the_study_stops_when_every_config_was_measured(request_for):
    notes = []
    Search(request_for(trials=50), TableRunner(), on_note=notes.append).run()
    assert any("all 4 configurations were measured" in n for n in notes)


def test_resume_runs_only_what_is_left_and_no_baseline_twice(request_for):
    Search(request_for(trials=2), TableRunner()).run()
    runner = TableRunner()
    records = Search(request_for(trials=3), runner).run()
    assert [s.config is None for s in runner.specs].count(True) == 0
    assert sum(r.baseline is None and r.duplicate_of is None for r in records) == 3


@pytest.mark.parametrize("step", ["record_heartbeat", "set_trial_user_attr", "user_attrs"])
def test_a_stop_between_asking_a_trial_and_running_it_fails_the_trial(
    request_for, monkeypatch, step
):
    """A SIGTERM (KeyboardInterrupt) that lands in the database writes right after Optuna's
    ask left the trial RUNNING although the worker said it failed it (a CI flake of
    test_sigterm_fails_the_running_trial_and_the_worker_exits_0)."""
    search = Search(request_for(trials=2), TableRunner())
    owner = optuna.trial.Trial if step == "user_attrs" else type(search.session.study._storage)
    original = getattr(owner, step)
    armed = [True]

    def interrupted(*args, **kwargs):
        if armed and armed.pop():
            raise KeyboardInterrupt
        if isinstance(original, property):
            return original.fget(*args)
        return original(*args, **kwargs)

    monkeypatch.setattr(
        owner, step, property(interrupted) if isinstance(original, property) else interrupted
    )
    with pytest.raises(KeyboardInterrupt):
        search.run()
    states = [t.state for t in search.session.study.get_trials(deepcopy=False)]
    assert states and optuna.trial.TrialState.RUNNING not in states


def test_resume_with_another_model_is_refused(request_for):
    Search(request_for(trials=1), TableRunner()).run()
    with pytest.raises(UsageError, match="other settings .the model file: the study has"):
        Search(request_for(trials=1, model="shapes"), TableRunner())


def test_failures_are_recorded_and_told_to_optuna_as_infeasible(request_for):
    fail = {(True, False): "graph_break", (True, True): "timeout"}
    records = Search(request_for(trials=8), TableRunner(fail=fail)).run()
    failed = [r for r in records if r.status == "failed"]
    assert failed and {r.failure_kind for r in failed} <= {"graph_break", "timeout"}
    study = optuna.load_study(study_name="s", storage=request_for().storage)
    trials = {t.number: t for t in study.trials}
    for r in failed:
        assert trials[r.trial_number].state == optuna.trial.TrialState.COMPLETE
        assert trials[r.trial_number].user_attrs["autotune.constraint"] == [1.0]
        assert r.error_tail == "tail"
    ok = next(r for r in records if r.status == "ok" and r.baseline is None)
    assert trials[ok.trial_number].user_attrs["autotune.constraint"] == [0.0]


def test_an_eager_model_error_stops_the_study_with_a_usage_error(request_for):
    class Broken(TableRunner):
        def run(self, spec):
            return TrialResult.failed("model_error", "get_model raised")

    with pytest.raises(UsageError, match="does not run in eager mode"):
        Search(request_for(), Broken()).run()


def test_the_best_file_never_holds_a_config_within_noise_of_eager(request_for):
    speedups = {k: 1.01 for k in [(False, False), (True, False), (False, True), (True, True)]}

    class Noisy(TableRunner):
        def run(self, spec):
            result = super().run(spec)
            if spec.config is not None:
                result.speedup_vs_eager_q1 = 0.95
            return result

    request = request_for(trials=4)
    search = Search(request, Noisy(speedups=speedups))
    best = best_config(search.run(), search.session.settings, "s", request.storage)
    assert best.decision == "do_not_compile" and best.config is None
    assert "not reliably faster than eager" in best.reason


def test_the_best_file_names_the_fastest_correct_config(request_for):
    speedups = {(False, False): 1.3, (True, False): 1.9, (False, True): 1.1, (True, True): 1.2}
    request = request_for(trials=50)
    search = Search(request, TableRunner(speedups=speedups))
    records = search.run()
    best = best_config(records, search.session.settings, "s", request.storage)
    assert best.decision == "compile"
    assert best.config.fullgraph is True and best.config.dynamic is False
    assert best.metrics["speedup_vs_eager"] == pytest.approx(1.9)
    assert best.source["study"] == "s"
    winner = next(r for r in records if r.trial_number == best.source["trial"])
    assert winner.config_hash == best.config_hash


def test_records_keep_the_environment(request_for):
    request = request_for(trials=1)
    Search(request, TableRunner()).run()
    with RecordStore(request.storage) as store:
        rows = store.trials("s")
    assert all(r.environment.get("host") == "h" for r in rows)


def test_parallel_jobs_spend_exactly_the_budget(request_for):
    runners = [TableRunner(), TableRunner()]
    records = Search(request_for(trials=4), runners).run()
    assert sum(r.baseline is None and r.duplicate_of is None for r in records) == 4
    assert len({r.trial_number for r in records}) == len(records)
    assert sum(r.baseline is not None for r in records) == 2
    assert runners[0].specs[0].config is None  # the baselines ran first, on the first job


def test_scopes_are_probed_once_and_searched(request_for):
    notes = []
    runner = TableRunner()
    request = request_for(trials=6, model="scope_mixed", scope="search")
    search = Search(request, runner, on_note=notes.append)
    records = search.run()
    probes = [s for s in runner.specs if s.config and s.config["scope"]["compile"] != [""]]
    assert probes, "the parts were never probed"
    assert search.trials.plan is not None and search.trials.plan.size >= 2
    searched = [r for r in records if r.baseline is None and r.duplicate_of is None]
    assert {r.config["scope"]["compile"][0] for r in searched} <= {
        path for c in search.trials.plan.candidates for path in c.scope.compile
    }
    stored = RecordStore(request.storage).study_settings("s")
    assert stored["scope_plan"] == search.trials.plan.to_dict()
    # A resumed study reuses the stored plan: no second round of probes.
    again = TableRunner()
    Search(request_for(trials=7, model="scope_mixed", scope="search"), again).run()
    assert len(again.specs) <= 1  # at most the one new trial; probes would be several


def test_drawing_only_measured_configurations_stops_the_search(request_for):
    """Reuse has a bound: REPEATS draws in a row of configurations the study measured stop
    the search (what is left unmeasured is drawn too rarely), saying how much was measured."""
    Search(request_for(trials=1), TableRunner()).run()
    study = optuna.load_study(study_name="s", storage=request_for().storage)
    measured = next(t for t in study.trials if t.params)
    for _ in range(REPEATS + 5):  # a sampler stuck on one measured point
        study.enqueue_trial(measured.params)
    notes: list[str] = []
    runner = TableRunner()
    search = Search(request_for(trials=50), runner, on_note=notes.append)
    records = search.run()
    assert search.ended is Ended.SPACE_EXHAUSTED and runner.specs == []  # nothing compiled again
    assert sum(r.duplicate_of is not None for r in records) == REPEATS
    assert [n for n in notes if n.startswith("stopping: ")] == [
        f"stopping: the last {REPEATS} configurations drawn had all been measured (the space "
        "holds 4 distinct configurations, 1 measured): the rest is drawn too rarely to spend "
        "more trials on"
    ]


def test_amortized_over_few_calls_does_not_compile(request_for):
    """Every compile costs 0.5 s here; ten calls of 1 ms can never pay it back."""
    request = request_for(trials=4, objective="amortized", calls=10)
    search = Search(request, TableRunner(speedups={(False, False): 1.5}))
    best = best_config(search.run(), search.session.settings, "s", request.storage)
    assert best.decision == "do_not_compile"
    assert "over 10 calls no configuration pays back its compile time" in best.reason
    assert best.workload["objective"] == "amortized" and best.workload["calls"] == 10


def test_amortized_over_many_calls_compiles_and_reports_the_break_even(request_for):
    request = request_for(trials=50, objective="amortized", calls=10**7)
    search = Search(request, TableRunner(speedups={(False, False): 1.5}))
    best = best_config(search.run(), search.session.settings, "s", request.storage)
    assert best.decision == "compile"
    # 0.5 s of compile against 1 ms - 1/1.5 ms saved per call: 1,500 calls
    assert best.metrics["break_even_calls_vs_eager"] == pytest.approx(1500, rel=1e-6)


def test_a_broken_memory_budget_makes_a_trial_infeasible(request_for):
    request = request_for(trials=2, memory_budget_bytes=50 * 2**20)
    records = Search(request, TableRunner()).run()
    measured = [r for r in records if r.baseline != "eager" and r.duplicate_of is None]
    assert measured and all(r.failure_kind == "memory_budget" for r in measured)
    assert "exceeds --memory-budget 50 MiB" in measured[0].error


def test_a_start_up_over_the_cap_makes_a_trial_infeasible(request_for):
    # compile 0.5 s: under a cap of 1 s; a traffic's start-up of 3 s: over it
    within = Search(request_for(trials=2, max_startup_s=1.0), TableRunner()).run()
    assert all(r.status == "ok" for r in within if r.duplicate_of is None)

    class Served(TableRunner):
        def run(self, spec):
            result = super().run(spec)
            startup = None if spec.config is None else 3.0  # eager compiles nothing
            result.traffic = {"requests": 2, "mean_s": 1e-3, "startup_s": startup}
            return result

    request = request_for(trials=2, study="served", max_startup_s=1.0)
    records = Search(request, Served()).run()
    measured = [r for r in records if r.baseline != "eager" and r.duplicate_of is None]
    assert measured and all(r.failure_kind == "startup_budget" for r in measured)
    assert "start-up 3.0 s (compiling every shape it serves) exceeds --max-startup-s 1" in (
        measured[0].error
    )


def test_a_winner_within_the_noise_of_default_compile_gives_way_to_it(request_for):
    from autotune.decide._finalists import Finalist

    request = request_for(trials=50)
    search = Search(request, TableRunner(speedups={(False, False): 1.5}))
    records = search.run()
    tuned = next(r for r in records if r.baseline is None and r.speedup_vs_eager == 1.5)
    default = next(r for r in records if r.baseline == "default")
    fresh = [
        Finalist(tuned, _ok(1.30, q1=1.10, q3=1.50), _ok(1.30, q1=1.10, q3=1.50)),
        Finalist(default, _ok(1.25, q1=1.15, q3=1.35), _ok(1.25, q1=1.15, q3=1.35)),
    ]
    best = best_config(records, search.session.settings, "s", request.storage, finalists=fresh)
    assert best.decision == "compile" and best.source["trial"] == default.trial_number
    assert "did not beat default torch.compile (1.250x eager) by more than" in best.reason
    assert best.reason.endswith("so the default compile is recommended")
    shaky_default = [
        fresh[0],
        Finalist(default, _ok(1.2, q1=0.9, q3=1.4), _ok(1.2, q1=0.9, q3=1.4)),
    ]
    best = best_config(
        records, search.session.settings, "s", request.storage, finalists=shaky_default
    )
    assert best.decision == "do_not_compile"
    assert "the default compile is not reliably faster than eager" in best.reason
    clear = [Finalist(tuned, _ok(1.6), _ok(1.6)), fresh[1]]
    best = best_config(records, search.session.settings, "s", request.storage, finalists=clear)
    assert best.source["trial"] == tuned.trial_number
    assert best.metrics["cold_compile_time_s"] == 0.5


def test_a_trial_failed_by_another_process_meanwhile_leaves_no_record(request_for):
    """A worker cut off from the database past the grace period finds its trial failed as
    stale by another: its result is dropped, so autotune's rows and Optuna's still agree."""
    request = request_for(trials=2)

    class FailedMeanwhile(TableRunner):
        def run(self, spec):
            if len(self.specs) == 2:  # the first search trial, after the two baselines
                study = optuna.load_study(study_name="s", storage=request.storage)
                (running,) = study.get_trials(states=(optuna.trial.TrialState.RUNNING,))
                study._storage.set_trial_state_values(
                    running._trial_id, state=optuna.trial.TrialState.FAIL
                )
            return super().run(spec)

    notes = []
    records = Search(request, FailedMeanwhile(), on_note=notes.append).run()
    assert any("was failed by another process" in n for n in notes)
    study = optuna.load_study(study_name="s", storage=request.storage)
    complete = {t.number for t in study.trials if t.state == optuna.trial.TrialState.COMPLETE}
    assert complete == {r.trial_number for r in records}
    assert sum(r.baseline is None and r.duplicate_of is None for r in records) == 2


def test_a_display_hears_each_phase_and_each_trial_gets_a_phase_file(request_for, tmp_path):
    runner, phases = TableRunner(), []
    search = Search(request_for(trials=1, scope="search"), runner)
    search.events.on_phase = lambda phase, detail: phases.append((phase, detail))
    search.events.phase_dir = str(tmp_path)
    search.run()
    default = "#1 [default] inductor default dyn=None fg=False"
    assert phases[:2] == [("trial", "#0 [eager] eager (no compile)"), ("trial", default)]
    assert phases[2][0] == "analyzing" and ("probing", "unit a") in phases
    assert phases[-1][0] == "trial" and phases[-1][1].startswith("#")
    paths = [spec.progress_path for spec in runner.specs]
    assert paths[:2] == [str(tmp_path / "trial-0.phase"), str(tmp_path / "trial-1.phase")]
    assert list(tmp_path.glob("*.phase")) == []  # each removed when its trial ended
