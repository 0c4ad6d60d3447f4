"""--timeout bounds the whole run: a trial, probe or finalist the deadline cuts short says
nothing of its config, so it is neither recorded nor told to Optuna as a result.

The deadline here is a fake that runs out exactly when a run given less than its full budget
ends (as a long compile cut by the timeout would), so no test depends on how fast this machine
gets through the rest."""

from __future__ import annotations

import time

import optuna
import pytest
import scripted
import torch

from autotune._deadline import Deadline, DeadlineReached
from autotune.decide import finalize
from autotune.records import RecordStore
from autotune.scope._probe import Prober, ProbeTarget
from autotune.search import Search, SearchRequest
from autotune.settings import StudySettings
from autotune.space import load_space
from autotune.trials import TrialResult, TrialSpec


class RunsOut(Deadline):
    """Five seconds left, until a run that got less than its budget ends: then none."""

    def __init__(self) -> None:
        super().__init__(at=None, timeout_s=5.0)
        object.__setattr__(self, "spent", False)

    def left(self) -> float:
        return 0.0 if self.spent else 5.0

    def passed(self) -> bool:
        return bool(self.spent)


class BudgetRunner:
    """Ok at once within the study's full budget; a run given less (cut by the deadline)
    compiles until its budget is spent, then times out."""

    def __init__(self, deadline: RunsOut | None = None, full: float = 600.0) -> None:
        self.deadline, self.full = deadline, full
        self.budgets: list[float] = []

    def run(self, spec: TrialSpec) -> TrialResult:
        self.budgets.append(spec.time_limit_s)
        if spec.time_limit_s < self.full:
            if self.deadline is not None:
                object.__setattr__(self.deadline, "spent", True)
            return TrialResult.failed("timeout", f"still compiling after {spec.time_limit_s:g} s")
        return scripted.ok(1.0 if spec.config is None else 1.5, wall_s=0.01)

    def close(self) -> None:
        pass


def _settings(model_file, space_file, **more):
    space = load_space(space_file("aot_eager"), "cpu")
    return StudySettings(
        model_path=model_file("tiny"), device="cpu", space=space.to_dict(),
        space_hash=space.content_hash(), torch_version=torch.__version__, scope="whole",
        # the fixed budget: these tests are about the deadline, not the adaptive budget
        compile_budget=600.0, compile_budget_factor=0.0, **more,
    )  # fmt: skip


def test_a_deadline_gives_each_trial_only_what_is_left():
    deadline = Deadline.after(100.0)
    assert 99.0 < deadline.budget(600.0) <= 100.0 and deadline.budget(5.0) == 5.0
    assert not deadline.passed() and Deadline().left() == float("inf")
    done = Deadline.after(0.0)
    time.sleep(0.001)
    with pytest.raises(DeadlineReached, match="the timeout of 0 s was spent during tests"):
        done.check("during tests")


def test_a_trial_cut_by_the_deadline_is_failed_not_recorded(tmp_path, model_file, space_file):
    deadline = RunsOut()
    runner = BudgetRunner(deadline)
    settings = _settings(model_file, space_file, trials=5)
    request = SearchRequest("s", f"sqlite:///{tmp_path}/t.db", settings, deadline=deadline)
    notes: list[str] = []
    records = Search(request, runner, on_note=notes.append).run()
    assert runner.budgets == [5.0]  # the first run got what was left, and was cut
    assert records == []  # it measured nothing...
    study = optuna.load_study(study_name="s", storage=request.storage)
    states = [t.state for t in study.trials]  # ...nor stays RUNNING; the default compile waits
    assert states == [optuna.trial.TrialState.FAIL, optuna.trial.TrialState.WAITING]
    assert "stopping: the timeout of 5 s is spent" in notes


def test_a_probe_cut_by_the_deadline_stops_the_scope_plan():
    deadline = RunsOut()
    base = TrialSpec(model_path="m.py", device="cpu", config=None, time_limit_s=600.0)
    prober = Prober(BudgetRunner(deadline), "aot_eager", base)
    with pytest.raises(DeadlineReached, match="during the scope probes"):
        prober.probe(ProbeTarget("head", "unit", ("head",)), deadline)


def test_finalists_cut_by_the_deadline_leave_the_decision_to_the_search(
    tmp_path, model_file, space_file
):
    settings = _settings(model_file, space_file, trials=2, finalists=1)
    request = SearchRequest("f", f"sqlite:///{tmp_path}/t.db", settings)
    Search(request, BudgetRunner()).run()
    notes: list[str] = []
    deadline = RunsOut()  # enough left by the estimate (the trials took 0.01 s), yet cut
    decision = finalize(request.storage, "f", deadline=deadline, model_path=settings.model_path,
                        trust_model_path=True,  # a study made through the API, with no hash
                        runner=BudgetRunner(deadline), on_note=notes.append)  # fmt: skip
    assert any(n.startswith("finalists stopped: the timeout of 5 s was spent") for n in notes)
    assert decision.finalists is None and decision.best.decision == "compile"
    with RecordStore(request.storage) as store:
        (unfinished,) = store.finalist_rounds("f")
        assert not unfinished.done
        assert store.claim_of("f", "finalists") is None  # released for a later run
