"""The queued trials (presets, their combinations) on every job of a process: ``Jobs.submit``
hands a trial to the next free runner and returns at once, so the queue's loop asks the next
waiting trial while earlier ones compile and run; ``drain`` waits for them all. With builders,
this is what keeps the builders busy while a preset is measured."""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable, Sequence

import optuna

from autotune.study._combine import run_combinations
from autotune.study._queue import run_queued
from autotune.study._session import Session
from autotune.trials import TrialRunner, kill_all_trials, tracked

_JOIN_AFTER_KILL_S = 10.0


def run_queue(
    session: Session,
    run: Callable[[TrialRunner, optuna.Trial], None],
    runners: Sequence[TrialRunner],
    must_stop: Callable[[], bool],
    stopping: threading.Event,
) -> optuna.Trial | None:
    """The queue a study starts with: the baselines on the first runner, one at a time (the
    adaptive compile budget waits for default torch.compile's), then the presets and their
    winners' combinations on every runner; returns a trial asked that was none of them."""
    first = functools.partial(run, runners[0])
    if len(runners) == 1:
        return run_queued(session, first, must_stop) or run_combinations(session, first, must_stop)
    jobs = Jobs(runners, run, session.fail, stopping)
    try:
        early = run_queued(session, first, must_stop, jobs.submit, jobs.drain)
        return early or run_combinations(session, jobs.submit, must_stop, jobs.drain)
    except BaseException:
        jobs.stop()
        raise


class Jobs:
    """``run(runner, trial)`` on whichever of ``runners`` is free (``fail(trial)`` for one
    that cannot start); ``stopping`` is set when a job fails or the process is interrupted
    (trials then killed are not crashes)."""

    def __init__(
        self,
        runners: Sequence[TrialRunner],
        run: Callable[[TrialRunner, optuna.Trial], None],
        fail: Callable[[optuna.Trial], None],
        stopping: threading.Event,
    ) -> None:
        self._free = list(runners)
        self._run = run
        self._fail = fail
        self._stopping = stopping
        self._changed = threading.Condition()
        self._threads: list[threading.Thread] = []
        self._errors: list[BaseException] = []
        self._before = tracked()

    def submit(self, trial: optuna.Trial) -> None:
        """Starts ``trial`` on a free runner, waiting for one while every runner is busy; when
        a job failed or the wait is interrupted, ``trial`` is failed and the error raised."""
        try:
            with self._changed:
                while not (self._free or self._errors):
                    self._changed.wait(0.2)  # short waits keep Ctrl-C responsive
                runner = None if self._errors else self._free.pop(0)
            if runner is None:
                raise self._errors[0]
        except BaseException:
            self._fail(trial)
            self._interrupted()
            raise
        thread = threading.Thread(target=self._job, args=(runner, trial), daemon=True)
        self._threads.append(thread)
        thread.start()

    def drain(self) -> None:
        """Waits until every submitted trial is recorded; raises the first job's error."""
        for thread in self._threads:
            self._join(thread)
        self._threads.clear()
        self._raise()

    def _job(self, runner: TrialRunner, trial: optuna.Trial) -> None:
        try:
            self._run(runner, trial)
        except BaseException as exc:  # surfaced by submit or drain, in the calling thread
            with self._changed:
                self._errors.append(exc)
            self._stopping.set()
        finally:
            with self._changed:
                self._free.append(runner)
                self._changed.notify_all()

    def _join(self, thread: threading.Thread) -> None:
        try:
            while thread.is_alive():
                thread.join(0.2)  # short waits keep Ctrl-C responsive
        except BaseException:
            self._interrupted()
            raise

    def stop(self) -> None:
        """Kills the trials still running (the search stops) and waits for their jobs."""
        self._interrupted()

    def _interrupted(self) -> None:
        self._stopping.set()  # trials killed by an interrupt are not recorded as crashes
        kill_all_trials(keep=self._before)  # each job then tells Optuna its trial failed
        for thread in self._threads:
            thread.join(_JOIN_AFTER_KILL_S)

    def _raise(self) -> None:
        if self._errors:
            raise self._errors[0]
