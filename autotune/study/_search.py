"""The search loop of one process: baselines first, then Optuna-suggested trials, every result
recorded. Any number of such processes (``autotune search``, ``autotune worker``) may share a
study: the budget, the baselines, the scope probes and every configuration are the study's,
and each process only says where it runs."""

from __future__ import annotations

import dataclasses
import os
import socket
import threading
import time
import warnings
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from typing import Any, TypeVar

import optuna
from optuna.trial import TrialState

from autotune._deadline import Deadline, DeadlineReached
from autotune._secrets import mask_text
from autotune.errors import UsageError
from autotune.records import RecordStore, TrialRecord
from autotune.runtime.config import CompileConfig
from autotune.scope import SCOPE_PARAM, ScopePlan, plan_scopes
from autotune.space import SearchSpace, space_from_dict
from autotune.study._attrs import (
    BASELINE_ATTR,
    BATCH_ATTR,
    BORROWED_ATTR,
    CONSTRAINT_ATTR,
    KEY_ATTR,
    PRESET_ATTR,
    SCOPE_ATTR,
    WORKER_ATTR,
)
from autotune.study._borrow import WarmStart, borrow
from autotune.study._cache import DEFAULT_LIMIT_BYTES, cache_bytes, prune
from autotune.study._explore import ExploringSampler
from autotune.study._identity import device_type, local_settings
from autotune.study._objective import Objective
from autotune.study._pareto import DIRECTIONS
from autotune.study._records import to_record, trial_key
from autotune.study._screen import known_code, reuse_timing, stop_below
from autotune.study._settings import ADAPTIVE_FLOOR_S, StudySettings, settle
from autotune.study._stale import TELL_REFUSED, finished_state, recover_stale, tell_record
from autotune.study._storage import (
    default_cache_dir,
    grace_s,
    heartbeat_s,
    open_optuna_storage,
    retrying,
)
from autotune.trials import TrialResult, TrialRunner, TrialSpec, kill_all_trials
from autotune.trials._runner import tracked

BATCH_PARAM = "workload.batch_size"
BASELINES = ("eager", "default")
SCOPE_CLAIM = "scope_plan"
# What the study's values are, by objective (and by --pareto axis), for Optuna's tools.
SCORE_METRICS = {
    "latency": "speedup_vs_eager",
    "throughput": "samples_per_s",
    "amortized": "amortized_speedup_vs_eager",
}
AXIS_METRICS = {"latency": "speedup_vs_eager", "compile": "compile_s", "memory": "peak_memory_mib"}
_JOIN_AFTER_KILL_S = 10.0
_POLL_S = 1.0

T = TypeVar("T")


class StudyNotFound(UsageError):
    """The storage has no study of that name (yet: a worker may start before it is created)."""

    def __init__(self, study: str) -> None:
        super().__init__(
            f"There is no study {study!r} in this storage to join. Create it with `autotune "
            f"search MODEL.py --study {study} --storage URL` (--no-worker creates it without "
            "running trials); workers started before that wait for it until their --timeout."
        )


@dataclass
class SearchRequest:
    """One process's part in a study: where the study is, what it asks, where it runs.

    Attributes:
        settings: The study's settings; ``None`` joins the study as stored (a worker).
        given: The names of the settings this run set on purpose; the others keep the values
            stored with the study when it exists (None: all were given).
        deadline: This run's wall-clock limit (``--timeout``): probes, trials and finalists.
        device: Where this process runs its trials (default: the study's device); a study
            on ``cuda`` takes workers on any CUDA device.
        model_path: The model file this process runs, named by its operator (the study's row
            only says where it was: a process that runs trials and names none is refused).
        trust_model_path: Run the model file even if its content differs from the study's.
        allow_unsafe_knobs: The knobs refused from data (see :mod:`autotune.runtime._safety`)
            that this process's operator vouches for: those of the space file it was given,
            or the command line's --allow-unsafe-knob. The stored space's [unsafe] table
            counts only for knobs named here.
        allow_version_mismatch: Join even if this torch or triton differs from the study's.
        cache_limit_bytes: Past this, the kernel cache's oldest files are removed.
        warm_start: An earlier study to start from (``--warm-start-from``), borrowed once.
    """

    study_name: str
    storage: str
    settings: StudySettings | None
    given: frozenset[str] | None = None
    deadline: Deadline = field(default_factory=Deadline)
    cache_dir: str | None = None
    device: str | None = None
    model_path: str | None = None
    trust_model_path: bool = False
    allow_version_mismatch: bool = False
    allow_unsafe_knobs: tuple[str, ...] = ()
    cache_limit_bytes: int = DEFAULT_LIMIT_BYTES
    warm_start: WarmStart | None = None


class Search:
    """Runs (or resumes, or joins) a study until its trial budget or the timeout is spent."""

    def __init__(
        self,
        request: SearchRequest,
        runner: TrialRunner | Sequence[TrialRunner] = (),
        on_record: Callable[[TrialRecord], None] = lambda record: None,
        on_note: Callable[[str], None] = lambda note: None,
        on_phase: Callable[[str, str], None] = lambda phase, detail: None,
    ) -> None:
        self.request = request
        self.runners = list(runner) if isinstance(runner, Sequence) else [runner]
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._noted: set[str] = set()
        self.seconds: dict[str, float] = {}  # ask, suggest, database: see _timed
        self._timing: set[str] = set()
        self.plan: ScopePlan | None = None
        self.on_record = on_record
        self.on_note = on_note
        self.on_phase = on_phase  # ("analyzing" | "probing" | "trial", detail): for a display
        self.phase_dir: str | None = None  # set: each trial writes its phase to a file here
        self.records = RecordStore(request.storage)
        self.study = _open_study(request)
        if request.cache_dir is None:
            request.cache_dir = default_cache_dir(
                request.study_name, self.study._study_id, request.storage
            )
        self.created = False
        self.settings = self._settle_settings()
        self.local = self._local_settings()
        self.space: SearchSpace = space_from_dict(
            self.settings.space,
            self.local.device,
            source=f"study {request.study_name}",
            workload=self.settings.workload,
            allow_unsafe_knobs=request.allow_unsafe_knobs,
        )
        self.objective = Objective.of(self.settings)
        self.worker_id = -1
        self.ended = "not started"
        self._sampler: ExploringSampler | None = None  # this process's, set by run()

    @property
    def deadline(self) -> Deadline:
        return self.request.deadline

    def run(self) -> list[TrialRecord]:
        """Runs trials until the study's budget is met, the timeout passes or the space is
        exhausted; returns every record of the study."""
        self.worker_id, index = self._join()
        seed = self.settings.seed + index
        sampler = _sampler(self.settings.sampler, seed, self.settings.trials)
        self._sampler = ExploringSampler(sampler, seed)
        self.study.sampler = self._sampler
        try:
            self._run()
        except BaseException as exc:
            # stored in the database and shown: no password of a URL in the message
            ended = f"{type(exc).__name__}: {mask_text(str(exc))}" if str(exc) else ""
            self.ended = ended[:255] or type(exc).__name__
            raise
        finally:
            self._db(lambda: self.records.stop_worker(self.worker_id, self.ended))
        return self.records.trials(self.request.study_name)

    def _run(self) -> None:
        self._recover_stale()
        if self._budget_met():
            running = self.running()
            elsewhere = f", {running} running elsewhere" if running else ""
            self._note_once(
                f"the study's budget of {self.settings.trials} trials is already met "
                f"({self.done()} done{elsewhere}): no new trials (raise it with --trials)"
            )
            self.ended = "budget met"
            return
        self._enqueue_missing_baselines()
        self._enqueue_presets()
        if self.request.warm_start is not None:
            scope = SCOPE_PARAM if self.settings.scope == "search" else None
            self._db(
                borrow, self.study, self.space, self.settings, scope, self.request.warm_start,
                self.request.storage, self.on_note,
            )  # fmt: skip
        early: optuna.Trial | None = None  # a search trial asked before the scope plan is known
        try:
            while self._pending_baselines() and not self._must_stop():
                trial = self._ask()
                if BASELINE_ATTR not in trial.user_attrs:  # another process took the last one
                    early = trial
                    break
                self._one_trial(self.runners[0], trial)
            if not self._must_stop():
                self.plan = self._settle_scope_plan()
        except BaseException as exc:
            if early is not None:
                self._fail(early)
            if not isinstance(exc, DeadlineReached):
                raise
            self._note_once(f"stopping: {mask_text(str(exc))}")
            self.ended = "timeout"
            return
        if early is not None:
            if self._must_stop():
                self._fail(early)
                return
            self._one_trial(self.runners[0], early)
        if len(self.runners) == 1:
            self._work(self.runners[0])
        else:
            self._work_in_parallel()

    def _work(self, runner: TrialRunner) -> None:
        """One job: takes trials until the budget, the timeout or the space runs out."""
        while not self._must_stop():
            with self._lock:  # a local job's ask counts before the next job checks the budget
                self._recover_stale()
                if self._budget_met():
                    self.ended = "budget met"
                    return
                trial = self._ask()
            self._one_trial(runner, trial)

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

    def prepare(self) -> None:
        """Readies the study for workers without running a trial (``--no-worker``): its
        baselines and presets wait in the queue for the first process that asks."""
        self._enqueue_missing_baselines()
        self._enqueue_presets()

    def wait_for_others(self, on_wait: Callable[[int], None] = lambda running: None) -> None:
        """Waits until no search trial runs in another process (or the deadline passes), so
        that the decision sees every trial of the budget; a process that died is found stale
        and its trial failed meanwhile."""
        while not self.deadline.passed():
            self._recover_stale()
            running = self.running()
            if not running:
                return
            self._note_once(f"waiting for {running} trials still running in other processes")
            on_wait(running)
            time.sleep(_POLL_S)

    def done(self) -> int:
        """Search trials the study has measured (baselines and duplicates excluded), by every
        process: the figure the budget counts."""
        return self._db(
            lambda: self.records.count_trials(self.request.study_name, duplicates=False)
        )

    def running(self) -> int:
        """Search trials running now, in any process of the study."""
        return len(self._running_searched())

    def _budget_met(self) -> bool:
        """The budget is the study's: finished trials and those running anywhere. Each process
        checks before it asks, so the study overshoots by at most one trial per process."""
        return self.done() + self.running() >= self.settings.trials

    def _must_stop(self) -> bool:
        if self._stopping.is_set():
            return True
        if self.deadline.passed():
            self._note_once(f"stopping: the timeout of {self.deadline.timeout_s:g} s is spent")
            self.ended = "timeout"
            return True
        if not self._pending_baselines() and self._exhausted():
            self._note_once(f"stopping: all {self._size()} configurations were measured")
            self.ended = "space exhausted"
            return True
        return False

    def _note_once(self, note: str) -> None:
        if note not in self._noted:
            self._noted.add(note)
            self.on_note(note)

    def _ask(self) -> optuna.Trial:
        with warnings.catch_warnings():
            # Optuna warns that heartbeats are meant for Study.optimize; _heartbeat keeps them.
            warnings.filterwarnings("ignore", message="Heartbeat of storage")
            with self._timed("ask"):  # the sampler, and the storage reads it makes
                trial = retrying(self.study.ask, on_retry=self._note_unreachable)
        # A trial without a heartbeat is never found stale: beat before anything can fail.
        storage: Any = self.study._storage
        self._db(storage.record_heartbeat, trial._trial_id)
        self._db(trial.set_user_attr, WORKER_ATTR, self.worker_id)
        return trial

    def _one_trial(self, runner: TrialRunner, trial: optuna.Trial | None = None) -> None:
        trial = trial or self._ask()
        try:
            record = self._measure(trial, runner)
        except BaseException:
            self._fail(trial)  # interrupted: nothing stays RUNNING
            raise
        if record is None:
            self._fail(trial)
            return
        self._db(lambda: self.records.add_trial(self.request.study_name, record))
        if not self._db(lambda: self._tell(trial, record)):
            # Failed as stale while this process was cut off from the database: the record
            # goes, so autotune's rows and Optuna's agree; the re-queued configuration runs.
            self._db(lambda: self.records.remove_trial(self.request.study_name, trial.number))
            self.on_note(
                f"trial {trial.number} was failed by another process while this one could not "
                "reach the database for longer than the grace period; its result is dropped "
                "and its configuration retried"
            )
            return
        if record.duplicate_of is not None and self._sampler is not None:
            self._sampler.explore_next()  # the sampler may be stuck on a measured point
        self._db(lambda: self.records.beat_worker(self.worker_id))
        self.on_record(record)
        if record.baseline == "eager" and record.failure_kind == "model_error":
            raise UsageError(
                f"The model file {self.local.model_path} does not run in eager mode on "
                f"{self.local.device}: {(record.error or '').rstrip('.')}. No trial was "
                "compiled; fix the model file and run the same command again."
            )

    def _measure(self, trial: optuna.Trial, runner: TrialRunner) -> TrialRecord | None:
        """The trial's record, or None when it must not count: the run was stopped, or the
        timeout cut its compile budget short (a ``timeout`` then says nothing of the config)."""
        baseline = trial.user_attrs.get(BASELINE_ATTR)
        try:
            with self._timed("suggest"):  # the sampler reads the study: a restart is ridden out
                batch = retrying(lambda: self._batch_for(trial), on_retry=self._note_unreachable)
                config = retrying(
                    lambda: self._config_for(trial, baseline), on_retry=self._note_unreachable
                )
            key = trial_key(config, batch)
            self._db(lambda: trial.set_user_attr(KEY_ATTR, key))
        except optuna.exceptions.UpdateFinishedTrialError:
            # Cut off from the database past the grace period, this process's trial was failed
            # as stale by another one (and re-queued) before its configuration was drawn.
            self.on_note(
                f"trial {trial.number} was failed by another process while this one could not "
                "reach the database; it is left to the retry that process queued"
            )
            return None
        preset, borrowed = trial.user_attrs.get(PRESET_ATTR), trial.user_attrs.get(BORROWED_ATTR)
        label = f"[{baseline}] " if baseline else (f"[preset {preset}] " if preset else "")
        label = f"[from {borrowed}] " if borrowed and not label else label
        self.on_phase("trial", f"#{trial.number} {label}{_brief(config)}")
        reused = self._reuse(trial, key)
        if reused is not None:
            result, duplicate_of = reused
        else:
            allowed = self._trial_budget(baseline, batch)
            budget = self.deadline.budget(allowed)
            cache = self.request.cache_dir
            before = self._prune_cache()
            spec = self._spec(config, batch, budget, trial.number)
            if not (baseline or preset or borrowed):  # drawn by the sampler: screened
                spec = self._screened(spec, batch)
            with _heartbeat(self.study, trial), _phase_file(spec.progress_path):
                result = runner.run(spec)
            if result.equivalent_of is not None:
                timed = self._timing_of(result.equivalent_of, result, trial.number)
                if timed is None:
                    return None
                result = timed
            duplicate_of = None
            result.batch_size = batch
            result.cache_bytes_written = max(0, cache_bytes(cache) - before)
            result.environment = {**result.environment, "worker": self._worker()}
            cut = result.failure_kind == "timeout" and budget < allowed
            if self._stopping.is_set() or cut:
                return None
            result = self._within_budgets(result)
        return to_record(
            trial.number, trial._trial_id, baseline, config, key, result, duplicate_of,
            self._default_speedup(batch),
        )  # fmt: skip

    def _reuse(self, trial: optuna.Trial, key: str) -> tuple[TrialResult, int] | None:
        """A configuration measured (or being measured) in this study is not compiled again:
        the result of the earliest trial with the same key is reused, waiting for it while it
        runs in another process. A failed baseline is measured again."""
        while True:
            found = self._db(lambda: self.records.find_by_hash(self.request.study_name, key))
            if found is not None and (found.status == "ok" or found.baseline is None):
                return TrialResult.from_dict(found.result), found.trial_number
            earlier = [
                t for t in self._running() if t.user_attrs.get(KEY_ATTR) == key
                and t.number < trial.number
            ]  # fmt: skip
            if not earlier or self._stopping.is_set():
                return None
            self._note_once(
                f"trial {trial.number} waits for trial {earlier[0].number}, which measures the "
                "same configuration in another process"
            )
            with _heartbeat(self.study, trial):
                time.sleep(_POLL_S)
            self._recover_stale()

    def _screened(self, spec: TrialSpec, batch: int | None) -> TrialSpec:
        """A sampled trial skips timing code the study already timed, and stops timing early
        when clearly slower than the best so far (see autotune.study._screen)."""
        records = self._db(self.records.trials, self._name)
        below = (
            stop_below(records, self.settings.objective, batch) if self.settings.prune else None
        )
        return dataclasses.replace(
            spec,
            known_code=known_code(records, batch),
            measure=dataclasses.replace(spec.measure, stop_below=below),
        )

    def _timing_of(self, number: int, result: TrialResult, trial: int) -> TrialResult | None:
        """The steady state of trial ``number``, which ran the same code as ``result``; None
        when that record is gone (its result was dropped since): this trial does not count."""
        timed = self._db(self.records.trial, self._name, number)
        if timed is None:
            self.on_note(
                f"trial {trial} generated the same code as trial {number}, whose record is "
                f"gone since; trial {trial} does not count"
            )
            return None
        return reuse_timing(result, timed)  # its trial line says so

    def _prune_cache(self) -> int:
        """Keeps the kernel cache under its limit; returns the bytes it holds."""
        removed, left = prune(self.request.cache_dir, self.request.cache_limit_bytes)
        if removed:
            self.on_note(
                f"the kernel cache {self.request.cache_dir} passed its limit of "
                f"{self.request.cache_limit_bytes / 2**30:.1f} GiB: removed {removed / 2**20:.0f} "
                "MiB of its oldest files"
            )
        return left

    def _fail(self, trial: optuna.Trial) -> None:
        """Tells Optuna the trial failed (riding out a restarting database): nothing this
        process stops stays RUNNING."""

        def fail() -> None:
            try:
                self.study.tell(trial, state=TrialState.FAIL)
            except TELL_REFUSED:
                if finished_state(self.study, trial) is None:
                    raise

        try:
            self._db(fail)
        except Exception:  # noqa: BLE001 - the database is gone for good: its heartbeat stops,
            pass  # and another process fails the trial once it is stale

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
        preset = self.space.preset(str(trial.user_attrs.get(PRESET_ATTR)))
        if preset is not None:
            return self.space.preset_config(preset)
        if self.plan is None:
            return self.space.suggest(trial)
        named = self.plan.suggest_named(trial)
        trial.set_user_attr(SCOPE_ATTR, named.name)
        config = self.space.suggest(trial)
        # A scope with a part kept eager inside a compiled region cannot be one graph.
        fullgraph = config.fullgraph and named.fullgraph
        return dataclasses.replace(config, scope=named.scope, fullgraph=fullgraph)

    def _settle_scope_plan(self) -> ScopePlan | None:
        """Analyzes and probes the model's parts once per study: the process that claims the
        probes runs them, the others wait for the stored plan (or take the claim over when its
        owner died). Every later run and worker reuses the plan, so the scope parameter never
        changes its choices."""
        if self.settings.scope != "search":
            return None
        while self.settings.scope_plan is None:
            owner = self._owner()
            if self._db(self.records.claim, self._name, SCOPE_CLAIM, owner, grace_s()):
                self._probe_and_store(owner)
            else:
                self._note_once("scope: waiting for another process to probe the model's parts")
                self.deadline.check("while waiting for the scope probes")
                time.sleep(_POLL_S)
                stored = self._db(lambda: self.records.study_settings(self._name))
                self.settings = StudySettings.from_dict(stored or self.settings.to_dict())
        plan = ScopePlan.from_dict(self.settings.scope_plan)
        for probe in plan.excluded:
            self._note_once(f"scope: kept eager everywhere: {probe.brief()}")
        self._note_once(f"scope: candidates {', '.join(plan.names)}")
        return plan

    def _probe_and_store(self, owner: str) -> None:
        stop = threading.Event()

        def beat() -> None:
            while not stop.wait(heartbeat_s()):
                retrying(lambda: self.records.beat_claim(self._name, SCOPE_CLAIM, owner))

        beating = threading.Thread(target=beat, daemon=True)
        beating.start()
        try:
            plan = self._probe()
        except BaseException:
            stop.set()
            self._db(lambda: self.records.release_claim(self._name, SCOPE_CLAIM, owner))
            raise
        stop.set()
        settings = self._db(
            lambda: self.records.settle_study_setting(self._name, "scope_plan", plan.to_dict())
        )
        self._db(lambda: self.records.finish_claim(self._name, SCOPE_CLAIM, owner))
        self.settings = StudySettings.from_dict(settings)

    def _probe(self) -> ScopePlan:
        s, local = self.settings, self.local
        backends = self.space.to_dict().get("compile", {}).get("backend", ["inductor"])
        self.on_note(f"scope: analyzing {local.model_path} and probing its parts one by one")
        self.on_phase("analyzing", local.model_path)
        return plan_scopes(
            local.model_path, local.device, self.runners[0],
            backend=backends[0] if isinstance(backends, list) else backends,
            budget_s=s.compile_budget_s, seed=s.seed, cache_dir=self.request.cache_dir,
            workload=s.workload, on_probe=lambda r: self.on_note(f"  probe {r.brief()}"),
            on_target=lambda name: self.on_phase("probing", name), deadline=self.deadline,
        )  # fmt: skip

    def _spec(
        self, config: CompileConfig | None, batch: int | None, budget: float, number: int
    ) -> TrialSpec:
        spec = self.local.trial_spec(
            config.to_dict() if config is not None else None,
            cache_dir=self.request.cache_dir,
            relaxed_numerics=config is not None and self.space.relaxes_numerics(config),
            batch_size=batch,
            budget_s=budget,
        )
        spec = dataclasses.replace(spec, allow_unsafe_knobs=list(self.space.unsafe_knobs))
        if self.phase_dir is None:
            return spec
        path = os.path.join(self.phase_dir, f"trial-{number}.phase")
        return dataclasses.replace(spec, progress_path=path)

    def _tell(self, trial: optuna.Trial, record: TrialRecord) -> bool:
        return tell_record(self.study, trial, record, self.objective, self.settings.pareto)

    def _recover_stale(self) -> None:
        """Trials whose process died are finished from their record or failed and retried
        (see autotune.study._stale), between this process's trials."""
        self._db(recover_stale, self.study, self.records, self.objective, self.settings.pareto)

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

    def _trial_budget(self, baseline: str | None, batch: int | None) -> float:
        """The baselines get the whole compile budget; a search trial the adaptive one, once
        default torch.compile's compile time is known (see StudySettings.trial_budget_s)."""
        if baseline is not None:
            return self.settings.compile_budget_s
        default = next(
            (r for r in self._db(self.records.baselines, self._name)
             if r.baseline == "default" and r.status == "ok" and r.batch_size == batch),
            None,
        )  # fmt: skip
        if default is None:
            return self.settings.compile_budget_s
        budget = self.settings.trial_budget_s(default.compile_time_s, default.wall_time_s)
        factor = self.settings.compile_budget_factor
        if budget < self.settings.compile_budget_s:
            self._note_once(
                f"compile budget: {budget:.0f} s per trial, {factor:g}x "
                f"default torch.compile's {default.compile_time_s:.1f} s compile plus its run "
                f"(--compile-budget-factor; at least {ADAPTIVE_FLOOR_S:.0f} s, at most "
                f"--compile-budget {self.settings.compile_budget_s:.0f} s)"
            )
        return budget

    def _default_speedup(self, batch: int | None) -> float | None:
        for record in self._db(self.records.baselines, self._name):
            if record.baseline == "default" and record.status == "ok":
                if record.batch_size == batch:
                    return record.speedup_vs_eager
        return None

    def _batches(self) -> list[int | None]:
        """The batch sizes the study measures (None: the model file's own inputs)."""
        return list(self.settings.batch_sizes) if self.settings.batch_sizes else [None]

    def _size(self) -> int:
        scopes = self.plan.size if self.plan is not None else 1
        return self.space.size * scopes * len(self._batches())

    def _exhausted(self) -> bool:
        return self._db(self.records.count_distinct_keys, self._name) >= self._size()

    def _running(self) -> list[optuna.trial.FrozenTrial]:
        states = (TrialState.RUNNING,)
        return list(self._db(lambda: self.study.get_trials(deepcopy=False, states=states)))

    def _running_searched(self) -> list[optuna.trial.FrozenTrial]:
        return [t for t in self._running() if BASELINE_ATTR not in t.user_attrs]

    def _pending_baselines(self) -> list[tuple[str, int | None]]:
        states = (TrialState.WAITING,)
        waiting = self._db(lambda: self.study.get_trials(deepcopy=False, states=states))
        return [
            (t.user_attrs[BASELINE_ATTR], t.user_attrs.get(BATCH_ATTR))
            for t in waiting
            if BASELINE_ATTR in t.user_attrs
        ]

    def _enqueue_missing_baselines(self) -> None:
        """Eager and default torch.compile are measured first in every study, at every batch
        size it searches (and again when an earlier attempt did not succeed). A baseline
        running or waiting anywhere is not enqueued again; two processes that race here both
        enqueue it, and the second trial then reuses the first one's result."""
        records = self._db(self.records.baselines, self._name)
        done = {(r.baseline, r.batch_size) for r in records if r.status == "ok"}
        running = {
            (t.user_attrs[BASELINE_ATTR], t.user_attrs.get(BATCH_ATTR))
            for t in self._running()
            if BASELINE_ATTR in t.user_attrs
        }
        pending = set(self._pending_baselines()) | running
        for batch in self._batches():
            for name in BASELINES:
                if (name, batch) not in done and (name, batch) not in pending:
                    attrs: dict[str, Any] = {BASELINE_ATTR: name, BATCH_ATTR: batch}
                    self._db(self.study.enqueue_trial, {}, attrs)

    def _enqueue_presets(self) -> None:
        """The space's presets (each mode on its own, then its ``[presets]``) are queued once
        per study, after the baselines, so that the tuned config is measured against what a
        user would try by hand; at most half the trial budget goes to them."""
        presets = list(self.space.presets)
        if not presets:
            return
        trials = self._db(lambda: self.study.get_trials(deepcopy=False))
        if any(PRESET_ATTR in t.user_attrs for t in trials):
            return
        room = self.settings.trials // 2
        chosen, left = presets[:room], presets[room:]
        for preset in chosen:
            self._db(self.study.enqueue_trial, {}, {PRESET_ATTR: preset.name})
        if chosen:
            names = ", ".join(p.name for p in chosen)
            self.on_note(f"presets: measuring {names} (after the baselines)")
        if left:
            self.on_note(
                f"presets: {', '.join(p.name for p in left)} not measured: the budget of "
                f"{self.settings.trials} trials gives at most half of them to presets"
            )

    def _settle_settings(self) -> StudySettings:
        """Creates the study's settings, or settles what this run asked for against the stored
        ones (only what may change, changes; it is stored and said). A worker (no settings
        asked for) takes the stored ones."""
        name = self.request.study_name
        requested = self.request.settings
        if requested is None:
            stored = self.records.study_settings(name)
            if stored is None:
                raise StudyNotFound(name)
            return StudySettings.from_dict(stored)
        raw, self.created = self.records.open_study(
            name, self.study._study_id, requested.to_dict()
        )
        stored_settings = StudySettings.from_dict(raw)
        settings, notes = settle(name, stored_settings, requested, self.request.given)
        if settings != stored_settings:
            changes = {
                k: v for k, v in settings.to_dict().items() if v != stored_settings.to_dict()[k]
            }
            settings = StudySettings.from_dict(self.records.update_study_settings(name, changes))
        for note in notes:
            self.on_note(note)
        return settings

    def _local_settings(self) -> StudySettings:
        """The study's settings as this process runs them: its own device and model path,
        after the checks that it may join (same torch and triton, same model file)."""
        # A worker that names no device takes the study's kind: CUDA_VISIBLE_DEVICES says which.
        requested = self.request.settings
        joining = requested is None
        stored = device_type(self.settings.device) if joining else self.settings.device
        # The model file is the one this process was given: --model, else the settings its
        # caller built from its own file; never the path the database holds.
        model = self.request.model_path or (requested.model_path if requested else None)
        # A study its own caller made without a hash (the Python API) runs the caller's file.
        unhashed = requested is not None and self.settings.model_sha256 is None
        return local_settings(
            self._name, self.settings, self.request.device or stored, model,
            trust_model_path=self.request.trust_model_path or unhashed,
            allow_version_mismatch=self.request.allow_version_mismatch, on_note=self.on_note,
        )  # fmt: skip

    def _join(self) -> tuple[int, int]:
        """Records this process as a worker of the study; its index among them seeds its
        sampler (the study's seed plus the index), so workers never replay one another."""
        gpu = os.environ.get("CUDA_VISIBLE_DEVICES")
        worker_id = self._db(
            lambda: self.records.start_worker(
                self._name, socket.gethostname(), os.getpid(), gpu, self.local.device
            )
        )
        ids = [w.id for w in self._db(lambda: self.records.workers(self._name))]
        return worker_id, ids.index(worker_id)

    def _worker(self) -> dict[str, Any]:
        return {
            "id": self.worker_id,
            "host": socket.gethostname(),
            "pid": os.getpid(),
            "gpu": os.environ.get("CUDA_VISIBLE_DEVICES"),
            "device": self.local.device,
        }

    def _owner(self) -> str:
        return f"{socket.gethostname()}:{os.getpid()}:worker{self.worker_id}"

    @property
    def _name(self) -> str:
        return self.request.study_name

    def _db(self, fn: Callable[..., T], *args: Any) -> T:
        """``fn(*args)`` against the database, riding out a restart or a refused connection."""
        with self._timed("database"):
            return retrying(lambda: fn(*args), on_retry=self._note_unreachable)

    @contextmanager
    def _timed(self, what: str) -> Iterator[None]:
        """Adds the seconds spent to ``self.seconds[what]`` (the outermost timing of a kind
        counts once): what the study's bookkeeping costs next to its trials."""
        if what in self._timing:
            yield
            return
        self._timing.add(what)
        started = time.perf_counter()
        try:
            yield
        finally:
            self.seconds[what] = self.seconds.get(what, 0.0) + time.perf_counter() - started
            self._timing.discard(what)

    def _note_unreachable(self, exc: BaseException) -> None:
        self._note_once(
            f"the database is unreachable ({type(exc).__name__}); retrying with backoff for up "
            "to two minutes"
        )


def _open_study(request: SearchRequest) -> optuna.Study:
    """Creates or loads the study: one direction (maximize the score), or one per --pareto
    axis, where Optuna's TPE sampler runs its multi-objective variant."""
    settings = request.settings
    axes = (settings.pareto if settings is not None else None) or []
    storage = open_optuna_storage(request.storage)
    if settings is None:
        try:
            return optuna.load_study(study_name=request.study_name, storage=storage)
        except KeyError:
            raise StudyNotFound(request.study_name) from None
    study = optuna.create_study(
        study_name=request.study_name,
        storage=storage,
        directions=[DIRECTIONS[axis] for axis in axes] or ["maximize"],
        load_if_exists=True,
    )
    names = [AXIS_METRICS[axis] for axis in axes] or [SCORE_METRICS[settings.objective]]
    # optuna-dashboard labels the values with these; a study made with other directions is
    # refused when the settings are compared, not here.
    if study.metric_names != names and len(names) == len(study.directions):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
            study.set_metric_names(names)
    return study


def _sampler(name: str, seed: int, trials: int = 20) -> optuna.samplers.BaseSampler:
    """The study's sampler for one process, as ``benchmarks/search_quality.py`` chose it.

    TPE runs multivariate with ``group=True`` (the knobs are drawn together, conditional ones
    in their own groups), with its random start scaled to the budget (a quarter of the trials,
    at least 3: Optuna's default of 10 random trials is half of a 20-trial budget), and with
    ``constant_liar``: trials running in other processes count as bad results, so idle workers
    are not all sent to one point. Replayed against an exhaustively measured space, this
    reached the optimum within noise more often and a better worst decile at 10 to 30 trials
    than Optuna's defaults (``benchmarks/results/search_quality_cpu.md``)."""
    if name == "tpe":
        kwargs: dict[str, Any] = {
            "seed": seed, "constant_liar": True, "multivariate": True, "group": True,
            "n_startup_trials": max(3, trials // 4),
        }  # fmt: skip
        if not hasattr(optuna.trial.Trial, "set_constraint"):
            kwargs["constraints_func"] = _constraints
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
            return optuna.samplers.TPESampler(**kwargs)
    if name == "random":
        return optuna.samplers.RandomSampler(seed=seed)
    raise UsageError(f"--sampler must be tpe or random, got {name!r}.")


def _constraints(trial: optuna.trial.FrozenTrial) -> list[float]:
    return list(trial.user_attrs.get(CONSTRAINT_ATTR, [0.0]))


def _brief(config: CompileConfig | None) -> str:
    return config.brief() if config is not None else "eager (no compile)"


@contextmanager
def _phase_file(path: str | None) -> Iterator[None]:
    """Removes a trial's phase file once the trial ended: a display shows running trials."""
    try:
        yield
    finally:
        if path is not None:
            with suppress(OSError):
                os.remove(path)


@contextmanager
def _heartbeat(study: optuna.Study, trial: optuna.Trial) -> Iterator[None]:
    """Keeps the trial's heartbeat fresh while its process runs, so that only trials whose
    owner died are failed as stale (by this or any other process of the study). A beat the
    database refuses is simply tried again at the next one."""
    stop = threading.Event()
    storage: Any = study._storage

    def beat() -> None:
        while True:
            try:
                storage.record_heartbeat(trial._trial_id)
            except Exception:  # noqa: BLE001 - a restarting database: beat again later
                pass
            if stop.wait(heartbeat_s()):
                return

    thread = threading.Thread(target=beat, daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join()
