"""The queued trials (presets, their combinations) on every job of a process: a trial handed
to the pool starts on the next free runner and the hand-off returns at once, so the queue's
loop asks the next waiting trial while earlier ones compile and run; the queue drains the pool
before it moves on: with --jobs N, N presets run at once."""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable, Sequence

import optuna

from autotune.search._combine import run_combinations
from autotune.search._queue import run_queued
from autotune.search._session import Session
from autotune.trials import RunnerPool, TrialRunner


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
    with RunnerPool[None](runners, stopping) as pool:

        def start(trial: optuna.Trial) -> None:
            """``trial`` on a free runner; failed when none can take it (a job failed, or
            the wait was interrupted)."""
            try:
                pool.submit(lambda runner: run(runner, trial))
            except BaseException:
                session.fail(trial)
                raise

        def drain() -> None:
            pool.wait()

        early = run_queued(session, first, must_stop, start, drain)
        return early or run_combinations(session, start, must_stop, drain)
