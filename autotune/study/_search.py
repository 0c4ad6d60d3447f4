"""The search loop: baselines first, then Optuna-suggested trials, every result recorded."""

from __future__ import annotations

import dataclasses
import threading
import time
import warnings
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import optuna
from optuna.trial import TrialState

from autotune.errors import UsageError
from autotune.records import RecordStore, TrialRecord
from autotune.runtime.config import CompileConfig
from autotune.scope import ScopePlan, plan_scopes
from autotune.space import SearchSpace, space_from_dict
from autotune.study._objective import Objective
from autotune.study._pareto import DIRECTIONS, optuna_values
from autotune.study._records import to_record
from autotune.study._settings import StudySettings, check_resume
from autotune.study._storage import HEARTBEAT_S, default_cache_dir, open_optuna_storage
from autotune.trials import TrialResult, TrialRunner, TrialSpec

BASELINE_ATTR = "autotune.baseline"
SCOPE_ATTR = "autotune.scope"
CONSTRAINT_ATTR = "autotune.constraint"  # [violation]: > 0 means infeasible
BASELINES = ("eager", "default")


@dataclass
class SearchRequest:
    """One run of ``autotune search``: a study plus this run's budgets."""

    study_name: str
    storage: str
    settings: StudySettings
    trials: int
    timeout_s: float | None = None
    cache_dir: str | None = None


class Search:
    """Runs (or resumes) a study until its trial budget or the wall-clock timeout is spent."""

    def __init__(
        self,
        request: SearchRequest,
        runner: TrialRunner | Sequence[TrialRunner],
        on_record: Callable[[TrialRecord], None] = lambda record: None,
        on_note: Callable[[str], None] = lambda note: None,
    ) -> None:
        self.request = request
        self.runners = list(runner) if isinstance(runner, Sequence) else [runner]
        self._lock = threading.Lock()
        self._in_flight = 0
        self._stopping = threading.Event()
        self._noted: set[str] = set()
        self.plan: ScopePlan | None = None
        self.on_record = on_record
        self.on_note = on_note
        self.records = RecordStore(request.storage)
        self.study = _open_study(request)
        if request.cache_dir is None:
            request.cache_dir = default_cache_dir(
                request.study_name, self.study._study_id, request.storage
            )
        self.settings = self._settle_settings()
        self.space: SearchSpace = space_from_dict(
            self.settings.space,
            self.settings.device,
            source=f"study {request.study_name}",
            workload=self.settings.workload,
        )
        self.objective = Objective(self.settings.objective, self.settings.calls)

    def run(self) -> list[TrialRecord]:
        """Runs trials (baselines first, alone); returns every record of the study."""
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
            optuna.storages.fail_stale_trials(self.study)
        self._enqueue_missing_baselines()
        deadline = time.monotonic() + self.request.timeout_s if self.request.timeout_s else None
        while self._pending_baselines() and not self._must_stop(deadline):
            self._one_trial(self.runners[0])
        self.plan = self._settle_scope_plan()
        if len(self.runners) == 1:
            self._work(self.runners[0], deadline)
        else:
            self._work_in_parallel(deadline)
        return self.records.trials(self.request.study_name)

    def _work(self, runner: TrialRunner, deadline: float | None) -> None:
        """One job: takes trials until the budget, the timeout or the space runs out."""
        while True:
            with self._lock:
                taken = self._searched() + self._in_flight
                if taken >= self.request.trials or self._must_stop(deadline):
                    return
                self._in_flight += 1
            try:
                self._one_trial(runner)
            finally:
                with self._lock:
                    self._in_flight -= 1

    def _work_in_parallel(self, deadline: float | None) -> None:
        errors: list[BaseException] = []

        def job(runner: TrialRunner) -> None:
            try:
                self._work(runner, deadline)
            except BaseException as exc:  # surfaced in the main thread below
                errors.append(exc)
                self._stopping.set()

        threads = [threading.Thread(target=job, args=(r,), daemon=True) for r in self.runners]
        for thread in threads:
            thread.start()
        try:
            for thread in threads:
                while thread.is_alive():
                    thread.join(0.2)  # short waits keep Ctrl-C responsive
        except BaseException:
            self._stopping.set()  # trials killed by an interrupt are not recorded as crashes
            raise
        if errors:
            raise errors[0]

    def _must_stop(self, deadline: float | None) -> bool:
        if self._stopping.is_set():
            return True
        if deadline is not None and time.monotonic() >= deadline:
            self._note_once(f"stopping: the timeout of {self.request.timeout_s:g} s is spent")
            return True
        if not self._pending_baselines() and self._exhausted():
            self._note_once(f"stopping: all {self.space.size} configurations were measured")
            return True
        return False

    def _note_once(self, note: str) -> None:
        if note not in self._noted:
            self._noted.add(note)
            self.on_note(note)

    def _one_trial(self, runner: TrialRunner) -> None:
        with warnings.catch_warnings():
            # Optuna warns that heartbeats are meant for Study.optimize; _heartbeat keeps them.
            warnings.filterwarnings("ignore", message="Heartbeat of storage")
            trial = self.study.ask()
        baseline = trial.user_attrs.get(BASELINE_ATTR)
        config = self._config_for(trial, baseline)
        reused = self._reuse(config) if config is not None and baseline is None else None
        if reused is not None:
            result, duplicate_of = reused
        else:
            with _heartbeat(self.study, trial):
                result, duplicate_of = self._within_budget(runner.run(self._spec(config))), None
        if self._stopping.is_set():
            return  # left RUNNING: its heartbeat goes stale and a resumed study retries it
        record = to_record(
            trial.number, trial._trial_id, baseline, config, result, duplicate_of,
            self._default_speedup(),
        )  # fmt: skip
        self.records.add_trial(self.request.study_name, record)
        self._tell(trial, record)
        self.on_record(record)
        if baseline == "eager" and result.failure_kind == "model_error":
            raise UsageError(
                f"The model file {self.settings.model_path} does not run in eager mode on "
                f"{self.settings.device}: {(result.error or '').rstrip('.')}. No trial was "
                "compiled; fix the model "
                "file and run the same command again."
            )

    def _config_for(self, trial: optuna.Trial, baseline: str | None) -> CompileConfig | None:
        if baseline == "eager":
            return None
        if baseline == "default":
            return CompileConfig()
        if self.plan is None:
            return self.space.suggest(trial)
        named = self.plan.suggest_named(trial)
        trial.set_user_attr(SCOPE_ATTR, named.name)
        config = self.space.suggest(trial)
        # A scope with a part kept eager inside a compiled region cannot be one graph.
        fullgraph = config.fullgraph and named.fullgraph
        return dataclasses.replace(config, scope=named.scope, fullgraph=fullgraph)

    def _settle_scope_plan(self) -> ScopePlan | None:
        """Analyzes and probes the model's parts once per study; every later run and worker
        reuses the stored plan, so the scope parameter never changes its choices."""
        if self.settings.scope != "search":
            return None
        stored = self.settings.scope_plan
        if stored is None:
            plan = self._probe()
            settings = self.records.settle_study_setting(
                self.request.study_name, "scope_plan", plan.to_dict()
            )
            stored = settings["scope_plan"]
            self.settings = StudySettings.from_dict(settings)
        plan = ScopePlan.from_dict(stored)
        for probe in plan.excluded:
            self._note_once(f"scope: kept eager everywhere: {probe.brief()}")
        self._note_once(f"scope: candidates {', '.join(plan.names)}")
        return plan

    def _probe(self) -> ScopePlan:
        s = self.settings
        backends = self.space.to_dict().get("compile", {}).get("backend", ["inductor"])
        self.on_note(f"scope: analyzing {s.model_path} and probing its parts one by one")
        return plan_scopes(
            s.model_path, s.device, self.runners[0],
            backend=backends[0] if isinstance(backends, list) else backends,
            budget_s=s.compile_budget_s, seed=s.seed, cache_dir=self.request.cache_dir,
            workload=s.workload, on_probe=lambda r: self.on_note(f"  probe {r.brief()}"),
        )  # fmt: skip

    def _spec(self, config: CompileConfig | None) -> TrialSpec:
        return self.settings.trial_spec(
            config.to_dict() if config is not None else None,
            cache_dir=self.request.cache_dir,
            relaxed_numerics=config is not None and self.space.relaxes_numerics(config),
        )

    def _reuse(self, config: CompileConfig) -> tuple[TrialResult, int] | None:
        """A configuration measured before in this study is not compiled again."""
        found = self.records.find_by_hash(self.request.study_name, config.config_hash())
        if found is None:
            return None
        return TrialResult.from_dict(found.result), found.trial_number

    def _tell(self, trial: optuna.Trial, record: TrialRecord) -> None:
        """A measured trial scores by the objective; a failed one (timeout, crash, broken
        memory budget, ...) is an infeasible trial, so the sampler learns to avoid it."""
        score = self.objective.score(record)
        violation = 0.0 if score is not None else 1.0
        trial.set_user_attr(CONSTRAINT_ATTR, [violation])
        if hasattr(trial, "set_constraint"):  # Optuna >= 5; older ones read constraints_func
            trial.set_constraint("feasible", violation)
        axes = self.settings.pareto
        if axes:
            self.study.tell(trial, optuna_values(record, axes, self.settings.compile_budget_s))
        else:
            self.study.tell(trial, score if score is not None else 0.0)

    def _within_budget(self, result: TrialResult) -> TrialResult:
        budget = self.settings.memory_budget_bytes
        peak = result.peak_memory_bytes
        if not result.ok or budget is None or peak is None or peak <= budget:
            return result
        result.status, result.failure_kind = "failed", "memory_budget"
        result.error = (
            f"peak memory {peak / 2**20:.0f} MiB exceeds --memory-budget {budget / 2**20:.0f} MiB"
        )
        return result

    def _default_speedup(self) -> float | None:
        for record in self.records.trials(self.request.study_name):
            if record.baseline == "default" and record.status == "ok":
                return record.speedup_vs_eager
        return None

    def _searched(self) -> int:
        rows = self.records.trials(self.request.study_name)
        return sum(1 for r in rows if r.baseline is None)

    def _exhausted(self) -> bool:
        rows = self.records.trials(self.request.study_name)
        distinct = {r.config_hash for r in rows if r.baseline is None}
        scopes = self.plan.size if self.plan is not None else 1
        return len(distinct) >= self.space.size * scopes

    def _pending_baselines(self) -> list[str]:
        waiting = self.study.get_trials(deepcopy=False, states=(TrialState.WAITING,))
        return [t.user_attrs[BASELINE_ATTR] for t in waiting if BASELINE_ATTR in t.user_attrs]

    def _enqueue_missing_baselines(self) -> None:
        """Eager and default torch.compile are measured first in every study (and re-measured
        on resume when their earlier attempt did not succeed)."""
        done = {
            r.baseline for r in self.records.trials(self.request.study_name) if r.status == "ok"
        }
        pending = set(self._pending_baselines())
        for name in BASELINES:
            if name not in done and name not in pending:
                self.study.enqueue_trial({}, user_attrs={BASELINE_ATTR: name})

    def _settle_settings(self) -> StudySettings:
        current = self.request.settings
        stored = self.records.save_study(
            self.request.study_name, self.study._study_id, current.to_dict()
        )
        settings = StudySettings.from_dict(stored)
        for note in check_resume(self.request.study_name, settings, current):
            self.on_note(note)
        return settings


def _open_study(request: SearchRequest) -> optuna.Study:
    """Creates or loads the study: one direction (maximize the score), or one per --pareto
    axis, where Optuna's TPE sampler runs its multi-objective variant."""
    sampler = _sampler(request.settings.sampler, request.settings.seed)
    axes = request.settings.pareto or []
    return optuna.create_study(
        study_name=request.study_name,
        storage=open_optuna_storage(request.storage),
        sampler=sampler,
        directions=[DIRECTIONS[axis] for axis in axes] or ["maximize"],
        load_if_exists=True,
    )


def _sampler(name: str, seed: int) -> optuna.samplers.BaseSampler:
    if name == "tpe":
        if hasattr(optuna.trial.Trial, "set_constraint"):
            return optuna.samplers.TPESampler(seed=seed)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
            return optuna.samplers.TPESampler(seed=seed, constraints_func=_constraints)
    if name == "random":
        return optuna.samplers.RandomSampler(seed=seed)
    raise UsageError(f"--sampler must be tpe or random, got {name!r}.")


def _constraints(trial: optuna.trial.FrozenTrial) -> list[float]:
    return list(trial.user_attrs.get(CONSTRAINT_ATTR, [0.0]))


@contextmanager
def _heartbeat(study: optuna.Study, trial: optuna.Trial) -> Iterator[None]:
    """Keeps the trial's heartbeat fresh while its process runs, so that only trials whose
    owner died are failed as stale (by this or any other process of the study)."""
    stop = threading.Event()
    storage: Any = study._storage

    def beat() -> None:
        storage.record_heartbeat(trial._trial_id)
        while not stop.wait(HEARTBEAT_S):
            storage.record_heartbeat(trial._trial_id)

    thread = threading.Thread(target=beat, daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join()
