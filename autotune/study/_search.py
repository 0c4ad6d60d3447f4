"""The search loop: baselines first, then Optuna-suggested trials, every result recorded."""

from __future__ import annotations

import dataclasses
import threading
import warnings
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import optuna
from optuna.trial import TrialState

from autotune._deadline import Deadline, DeadlineReached
from autotune.errors import UsageError
from autotune.records import RecordStore, TrialRecord
from autotune.runtime.config import CompileConfig
from autotune.scope import ScopePlan, plan_scopes
from autotune.space import SearchSpace, space_from_dict
from autotune.study._objective import Objective
from autotune.study._pareto import DIRECTIONS, optuna_values
from autotune.study._records import to_record, trial_key
from autotune.study._settings import StudySettings, settle
from autotune.study._storage import HEARTBEAT_S, default_cache_dir, open_optuna_storage
from autotune.trials import TrialResult, TrialRunner, TrialSpec, kill_all_trials
from autotune.trials._runner import tracked

BASELINE_ATTR = "autotune.baseline"
BATCH_ATTR = "autotune.batch_size"
BATCH_PARAM = "workload.batch_size"
SCOPE_ATTR = "autotune.scope"
CONSTRAINT_ATTR = "autotune.constraint"  # [violation]: > 0 means infeasible
BASELINES = ("eager", "default")
_JOIN_AFTER_KILL_S = 10.0


@dataclass
class SearchRequest:
    """One run of a study: where it is, the settings asked for, and this run's limits.

    Attributes:
        given: The names of the settings this run set on purpose; the others keep the values
            stored with the study when it exists (None: all were given).
        deadline: This run's wall-clock limit (``--timeout``): probes, trials and finalists.
    """

    study_name: str
    storage: str
    settings: StudySettings
    given: frozenset[str] | None = None
    deadline: Deadline = field(default_factory=Deadline)
    cache_dir: str | None = None


class Search:
    """Runs (or resumes) a study until its trial budget or the wall-clock timeout is spent."""

    def __init__(
        self,
        request: SearchRequest,
        runner: TrialRunner | Sequence[TrialRunner] = (),
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
        self.objective = Objective.of(self.settings)

    @property
    def deadline(self) -> Deadline:
        return self.request.deadline

    def run(self) -> list[TrialRecord]:
        """Runs trials (baselines first, alone); returns every record of the study."""
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
            optuna.storages.fail_stale_trials(self.study)
        if self._budget_met():
            self._note_once(
                f"the study's budget of {self.settings.trials} trials is already met "
                f"({self._searched()} done): no new trials (raise it with --trials)"
            )
            return self.records.trials(self.request.study_name)
        self._enqueue_missing_baselines()
        try:
            while self._pending_baselines() and not self._must_stop():
                self._one_trial(self.runners[0])
            if not self._must_stop():
                self.plan = self._settle_scope_plan()
        except DeadlineReached as reached:
            self._note_once(f"stopping: {reached}")
            return self.records.trials(self.request.study_name)
        if len(self.runners) == 1:
            self._work(self.runners[0])
        else:
            self._work_in_parallel()
        return self.records.trials(self.request.study_name)

    def _work(self, runner: TrialRunner) -> None:
        """One job: takes trials until the budget, the timeout or the space runs out."""
        while True:
            with self._lock:
                if self._budget_met(self._in_flight) or self._must_stop():
                    return
                self._in_flight += 1
            try:
                self._one_trial(runner)
            finally:
                with self._lock:
                    self._in_flight -= 1

    def _work_in_parallel(self) -> None:
        errors: list[BaseException] = []

        def job(runner: TrialRunner) -> None:
            try:
                self._work(runner)
            except BaseException as exc:  # surfaced in the main thread below
                errors.append(exc)
                self._stopping.set()

        before = tracked()
        threads = [threading.Thread(target=job, args=(r,), daemon=True) for r in self.runners]
        for thread in threads:
            thread.start()
        try:
            for thread in threads:
                while thread.is_alive():
                    thread.join(0.2)  # short waits keep Ctrl-C responsive
        except BaseException:
            self._stopping.set()  # trials killed by an interrupt are not recorded as crashes
            kill_all_trials(keep=before)  # each job then tells Optuna its trial failed
            for thread in threads:
                thread.join(_JOIN_AFTER_KILL_S)
            raise
        if errors:
            raise errors[0]

    def done(self) -> int:
        """Search trials the study has finished (baselines excluded)."""
        return self._searched()

    def _budget_met(self, in_flight: int = 0) -> bool:
        return self._searched() + in_flight >= self.settings.trials

    def _must_stop(self) -> bool:
        if self._stopping.is_set():
            return True
        if self.deadline.passed():
            self._note_once(f"stopping: the timeout of {self.deadline.timeout_s:g} s is spent")
            return True
        if not self._pending_baselines() and self._exhausted():
            self._note_once(f"stopping: all {self._size()} configurations were measured")
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
        try:
            record = self._measure(trial, runner)
        except BaseException:
            self._fail(trial)  # interrupted: nothing stays RUNNING
            raise
        if record is None:
            self._fail(trial)
            return
        self.records.add_trial(self.request.study_name, record)
        self._tell(trial, record)
        self.on_record(record)
        if record.baseline == "eager" and record.failure_kind == "model_error":
            raise UsageError(
                f"The model file {self.settings.model_path} does not run in eager mode on "
                f"{self.settings.device}: {(record.error or '').rstrip('.')}. No trial was "
                "compiled; fix the model file and run the same command again."
            )

    def _measure(self, trial: optuna.Trial, runner: TrialRunner) -> TrialRecord | None:
        """The trial's record, or None when it must not count: the run was stopped, or the
        timeout cut its compile budget short (a ``timeout`` then says nothing of the config)."""
        baseline = trial.user_attrs.get(BASELINE_ATTR)
        batch = self._batch_for(trial)
        config = self._config_for(trial, baseline)
        key = trial_key(config, batch)
        reused = self._reuse(key) if baseline is None else None
        if reused is not None:
            result, duplicate_of = reused
        else:
            budget = self.deadline.budget(self.settings.compile_budget_s)
            with _heartbeat(self.study, trial):
                result = runner.run(self._spec(config, batch, budget))
            duplicate_of = None
            result.batch_size = batch
            cut = result.failure_kind == "timeout" and budget < self.settings.compile_budget_s
            if self._stopping.is_set() or cut:
                return None
            result = self._within_budgets(result)
        return to_record(
            trial.number, trial._trial_id, baseline, config, key, result, duplicate_of,
            self._default_speedup(batch),
        )  # fmt: skip

    def _fail(self, trial: optuna.Trial) -> None:
        try:
            self.study.tell(trial, state=TrialState.FAIL)
        except Exception:  # noqa: BLE001 - the storage may be what failed; the heartbeat then
            pass  # fails the trial later

    def _batch_for(self, trial: optuna.Trial) -> int | None:
        if trial.user_attrs.get(BASELINE_ATTR) is not None:
            return trial.user_attrs.get(BATCH_ATTR)
        if self.settings.batch_sizes:
            return int(trial.suggest_categorical(BATCH_PARAM, self.settings.batch_sizes))
        return None

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
            deadline=self.deadline,
        )  # fmt: skip

    def _spec(self, config: CompileConfig | None, batch: int | None, budget: float) -> TrialSpec:
        return self.settings.trial_spec(
            config.to_dict() if config is not None else None,
            cache_dir=self.request.cache_dir,
            relaxed_numerics=config is not None and self.space.relaxes_numerics(config),
            batch_size=batch,
            budget_s=budget,
        )

    def _reuse(self, key: str) -> tuple[TrialResult, int] | None:
        """A configuration measured before in this study is not compiled again."""
        found = self.records.find_by_hash(self.request.study_name, key)
        if found is None:
            return None
        return TrialResult.from_dict(found.result), found.trial_number

    def _tell(self, trial: optuna.Trial, record: TrialRecord) -> None:
        """A measured trial scores by the objective; a failed one (timeout, crash, broken
        memory or latency budget, ...) is an infeasible trial, so the sampler learns to avoid
        it."""
        score = self.objective.score(record)
        violation = 0.0 if score is not None else 1.0
        trial.set_user_attr(CONSTRAINT_ATTR, [violation])
        if hasattr(trial, "set_constraint"):  # Optuna >= 5; older ones read constraints_func
            trial.set_constraint("feasible", violation)
        axes = self.settings.pareto
        if axes:
            self.study.tell(trial, optuna_values(record, axes))
        else:
            self.study.tell(trial, score if score is not None else 0.0)

    def _within_budgets(self, result: TrialResult) -> TrialResult:
        """A trial that ran and matched eager, but broke --memory-budget or --max-latency-ms,
        is infeasible."""
        if not result.ok:
            return result
        memory, peak = self.settings.memory_budget_bytes, result.peak_memory_bytes
        if memory is not None and peak is not None and peak > memory:
            result.status, result.failure_kind = "failed", "memory_budget"
            result.error = (
                f"peak memory {peak / 2**20:.0f} MiB exceeds --memory-budget "
                f"{memory / 2**20:.0f} MiB"
            )
        cap, latency = self.settings.max_latency_s, result.latency_median_s
        if result.ok and cap is not None and latency is not None and latency > cap:
            result.status, result.failure_kind = "failed", "latency_budget"
            result.error = f"latency {latency * 1e3:.3g} ms exceeds --max-latency-ms {cap * 1e3:g}"
        return result

    def _default_speedup(self, batch: int | None) -> float | None:
        for record in self.records.trials(self.request.study_name):
            if record.baseline == "default" and record.status == "ok":
                if record.batch_size == batch:
                    return record.speedup_vs_eager
        return None

    def _searched(self) -> int:
        rows = self.records.trials(self.request.study_name)
        return sum(1 for r in rows if r.baseline is None)

    def _batches(self) -> list[int | None]:
        """The batch sizes the study measures (None: the model file's own inputs)."""
        return list(self.settings.batch_sizes) if self.settings.batch_sizes else [None]

    def _size(self) -> int:
        scopes = self.plan.size if self.plan is not None else 1
        return self.space.size * scopes * len(self._batches())

    def _exhausted(self) -> bool:
        rows = self.records.trials(self.request.study_name)
        distinct = {r.config_hash for r in rows if r.baseline is None}
        return len(distinct) >= self._size()

    def _pending_baselines(self) -> list[tuple[str, int | None]]:
        waiting = self.study.get_trials(deepcopy=False, states=(TrialState.WAITING,))
        return [
            (t.user_attrs[BASELINE_ATTR], t.user_attrs.get(BATCH_ATTR))
            for t in waiting
            if BASELINE_ATTR in t.user_attrs
        ]

    def _enqueue_missing_baselines(self) -> None:
        """Eager and default torch.compile are measured first in every study, at every batch
        size it searches (and again on resume when their earlier attempt did not succeed)."""
        records = self.records.trials(self.request.study_name)
        done = {(r.baseline, r.batch_size) for r in records if r.status == "ok"}
        pending = set(self._pending_baselines())
        for batch in self._batches():
            for name in BASELINES:
                if (name, batch) not in done and (name, batch) not in pending:
                    attrs: dict[str, Any] = {BASELINE_ATTR: name, BATCH_ATTR: batch}
                    self.study.enqueue_trial({}, user_attrs=attrs)

    def _settle_settings(self) -> StudySettings:
        """Creates the study's settings, or settles what this run asked for against the stored
        ones (only what may change, changes; it is stored and said)."""
        requested = self.request.settings
        name = self.request.study_name
        stored = StudySettings.from_dict(
            self.records.save_study(name, self.study._study_id, requested.to_dict())
        )
        settings, notes = settle(name, stored, requested, self.request.given)
        if settings != stored:
            changes = {k: v for k, v in settings.to_dict().items() if v != stored.to_dict()[k]}
            settings = StudySettings.from_dict(self.records.update_study_settings(name, changes))
        for note in notes:
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
