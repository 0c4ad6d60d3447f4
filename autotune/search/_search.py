"""The search loop of one process: baselines first, then Optuna-suggested trials, every result
recorded. Any number of such processes (``autotune search``, ``autotune worker``) may share a
study: the budget, the baselines, the scope probes and every configuration are the study's,
and each process only says where it runs.

The loop's parts live beside it: the session with the database (``_session``), the queue of
baselines and presets (``_queue``), the scope claim (``_scope_claim``), one trial's path
(``_trial_path``) and the events a display subscribes to (``_events``)."""

from __future__ import annotations

import functools
import threading
import time
import warnings
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import optuna

from autotune._deadline import Deadline, DeadlineReached
from autotune._secrets import mask_text
from autotune.errors import UsageError
from autotune.records import TrialRecord
from autotune.reports import standing
from autotune.scope import SCOPE_PARAM
from autotune.search._combine import combine_and_tell
from autotune.search._ends import Ended, space_spent
from autotune.search._events import Events
from autotune.search._explore import ExploringSampler
from autotune.search._jobs import run_queue
from autotune.search._queue import (
    compile_does_not_pay,
    enqueue_missing_baselines,
    enqueue_presets,
    pending_baselines,
    whole_model_failed,
)
from autotune.search._scope_claim import settle_scope_plan
from autotune.search._session import SearchRequest, Session, StudyNotFound
from autotune.search._start_from import StartFrom, start_from_earlier
from autotune.search._trial_path import TrialPath
from autotune.storage import CONSTRAINT_ATTR
from autotune.trials import RunnerPool, TrialRunner

if TYPE_CHECKING:
    from autotune.reports.progress import Progress

__all__ = ["Search", "SearchRequest", "StudyNotFound"]

_POLL_S = 1.0


class Search:
    """Runs (or resumes, or joins) a study until its trial budget or the timeout is spent.

    ``study`` is a request (the study is joined here) or a :class:`Session` already joined (its
    device known, so that the runners can be built for it first). ``runner`` runs its trials
    (one per job); ``on_record``, ``on_note`` and ``on_phase`` say what happens: ``events``
    holds them (a session brings its own), and a display subscribes there. ``session`` is the
    study as this process sees it (settings, space, records), ``trials`` one trial's path."""

    def __init__(
        self,
        study: SearchRequest | Session,
        runner: TrialRunner | Sequence[TrialRunner] = (),
        on_record: Callable[[TrialRecord], None] = lambda record: None,
        on_note: Callable[[str], None] = lambda note: None,
        on_phase: Callable[[str, str], None] = lambda phase, detail: None,
    ) -> None:
        if isinstance(study, Session):
            self.session, self.events = study, study.events
        else:
            self.events = Events(on_record, on_note, on_phase)
            self.session = Session(study, self.events)
        self.request = self.session.request
        self.runners = list(runner) if isinstance(runner, Sequence) else [runner]
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self.trials = TrialPath(self.session, self.events, self._stopping)
        self.ended = Ended.NOT_STARTED
        self.failure = ""  # with Ended.FAILED: the exception that ended it, one line

    @property
    def ended_text(self) -> str:
        """How the search ended, as the worker row and the output say it."""
        return self.failure if self.ended is Ended.FAILED else self.ended.value

    @property
    def deadline(self) -> Deadline:
        return self.request.deadline

    def show_in(self, progress: Progress, command: str) -> None:
        """Shows this search in ``progress`` (``autotune COMMAND``'s panel) from now on: the
        panel subscribes to its events and reads where the study stands from its storage."""
        s = self.session
        read = functools.partial(standing, s.records, s.study, bool(s.settings.pareto))
        title = f"autotune {command}: study {self.request.study_name!r}"
        progress.attach(self.events, title, s.settings.trials, s.objective, read)

    def run(self) -> list[TrialRecord]:
        """Runs trials until the study's budget is met, the timeout passes or the space is
        exhausted; returns every record of the study."""
        s = self.session
        s.worker_id, index = s.join()
        seed = s.settings.seed + index
        sampler = _sampler(s.settings.sampler, seed, s.settings.trials)
        self.trials.sampler = s.study.sampler = ExploringSampler(sampler, seed)
        try:
            self._run()
        except BaseException as exc:
            # stored in the database and shown: no password of a URL in the message
            failure = f"{type(exc).__name__}: {mask_text(str(exc))}" if str(exc) else ""
            self.ended, self.failure = Ended.FAILED, failure[:255] or type(exc).__name__
            raise
        finally:
            s.db(lambda: s.records.stop_worker(s.worker_id, self.ended_text))
        return s.records.trials(self.request.study_name)

    def _run(self) -> None:
        self.session.recover_stale()
        if self._budget_met():
            running = self.running()
            elsewhere = f", {running} running elsewhere" if running else ""
            self.events.note_once(
                f"the study's budget of {self.session.settings.trials} trials is already met "
                f"({self.done()} done{elsewhere}): no new trials (raise it with --trials)"
            )
            self.ended = Ended.BUDGET_MET
            return
        enqueue_missing_baselines(self.session)
        enqueue_presets(self.session)
        early: optuna.Trial | None = None  # a search trial asked before the scope plan is known
        try:
            # Baselines, presets, then the winners combined: before the scope probes.
            s, run, stop = self.session, self.trials.run, self._must_stop
            early = run_queue(s, run, self.runners, stop, self._stopping)
            if not self._must_stop():
                failed = whole_model_failed(self.session)
                if failed:
                    self.events.note_once(failed)  # said before the probes it announces
                self.trials.plan = settle_scope_plan(self.session, self.runners[0], self.deadline)
                if self.request.start_from is not None:  # once the scope plan is known
                    _start_from(self.session, self.request.start_from, self.events)
        except BaseException as exc:
            if early is not None:
                self.session.fail(early)
            if not isinstance(exc, DeadlineReached):
                raise
            self.events.note_once(f"stopping: {mask_text(str(exc))}")
            self.ended = Ended.TIMEOUT
            return
        if early is not None:
            if self._must_stop():
                self.session.fail(early)
                return
            self.trials.run(self.runners[0], early)
        if len(self.runners) == 1:
            self._work(self.runners[0])
        else:
            self._work_in_parallel()

    def _work(self, runner: TrialRunner) -> None:
        """One job: takes trials until the budget, the timeout or the space runs out."""
        while not self._must_stop():
            with self._lock:  # a local job's ask counts before the next job checks the budget
                self.session.recover_stale()
                if self._budget_met():
                    self.ended = Ended.BUDGET_MET
                    return
                combine_and_tell(self.session)  # where another process ran the last preset
                trial = self.session.ask()
            self.trials.run(runner, trial)

    def _work_in_parallel(self) -> None:
        """One job per runner until the search stops; the first job's error is raised once
        every job has ended (the others stop taking trials when one fails)."""
        with RunnerPool[None](self.runners, self._stopping) as pool:
            for _ in self.runners:
                pool.submit(self._work)
            pool.wait()

    def prepare(self) -> None:
        """Readies the study for workers without running a trial (``--no-worker``): its
        baselines and presets wait in the queue for the first process that asks."""
        enqueue_missing_baselines(self.session)
        enqueue_presets(self.session)

    def wait_for_others(self, on_wait: Callable[[int], None] = lambda running: None) -> None:
        """Waits until no search trial runs in another process (or the deadline passes), so
        that the decision sees every trial of the budget; a process that died is found stale
        and its trial failed meanwhile."""
        while not self.deadline.passed():
            self.session.recover_stale()
            running = self.running()
            if not running:
                return
            self.events.note_once(f"waiting for {running} trials still running in other processes")
            on_wait(running)
            time.sleep(_POLL_S)

    def done(self) -> int:
        """Search trials the study has measured (baselines and duplicates excluded), by every
        process: the figure the budget counts."""
        return self.session.db(
            lambda: self.session.records.count_trials(self.request.study_name, duplicates=False)
        )

    def running(self) -> int:
        """Search trials running now, in any process of the study."""
        return len(self.session.running_searched())

    def _budget_met(self) -> bool:
        """The budget is the study's: finished trials and those running anywhere. Each process
        checks before it asks, so the study overshoots by at most one trial per process."""
        return self.done() + self.running() >= self.session.settings.trials

    def _must_stop(self) -> bool:
        if self._stopping.is_set():
            return True
        if self.deadline.passed():
            self.events.note_once(
                f"stopping: the timeout of {self.deadline.timeout_s:g} s is spent"
            )
            self.ended = Ended.TIMEOUT
            return True
        if pending_baselines(self.session):
            return False
        why = space_spent(self.session, self.trials.plan, self.trials.repeats)
        ended = Ended.SPACE_EXHAUSTED
        if not why:
            why, ended = compile_does_not_pay(self.session) or "", Ended.COMPILE_DOES_NOT_PAY
        if why:
            self.events.note_once(f"stopping: {why}")
            self.ended = ended
        return bool(why)


def _sampler(name: str, seed: int, trials: int = 20) -> optuna.samplers.BaseSampler:
    """The study's sampler for one process, as ``benchmarks/search_quality.py`` chose it.

    TPE runs multivariate with ``group=True`` (the knobs are drawn together, conditional ones
    in their own groups), with its random start scaled to the budget (a quarter of the trials,
    at least 3: Optuna's default of 10 random trials is half of a 20-trial budget), and with
    ``constant_liar``: trials running in other processes count as bad results, so idle workers
    are not all sent to one point. Replayed against a space measured whole, one process per
    configuration, this reached the optimum within noise more often and a better worst decile
    at 10 to 30 trials than Optuna's defaults. Against the quieter tables measured in two
    processes, no sampler is clearly better: random sampling matched it on a convnet and, on a
    small BERT, more often picked the faster of two plateaus 5 % apart
    (``benchmarks/results/search_quality_cpu.md``)."""
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


def _start_from(s: Session, source: StartFrom, events: Events) -> None:
    """Queues the earlier study's best configurations (``--start-from``), checked against this
    study's space and scope candidates."""
    scope = SCOPE_PARAM if s.settings.scope == "search" else None
    s.db(
        start_from_earlier, s.study, s.space, s.settings, scope, source, s.request.storage,
        events.on_note,
    )  # fmt: skip
