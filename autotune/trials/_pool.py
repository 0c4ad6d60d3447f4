"""Work spread over a process's trial runners: one thread per runner (``concurrent.futures``),
each unit of work given the next free runner. The search's jobs and the queued presets both
run through it, so they stop alike: a unit that fails sets
``stopping`` and its error is raised in the calling thread; an interrupt (Ctrl-C) or an error
raised while work still runs kills the trials started since the pool opened (each job then
records its trial as killed, not as a crash) and waits a while for the jobs to end."""

from __future__ import annotations

import concurrent.futures
import queue
import threading
from collections.abc import Callable, Sequence
from types import TracebackType
from typing import Generic, TypeVar

from autotune._process import kill_all, tracked
from autotune.trials._runner import TrialRunner

T = TypeVar("T")

# Waits are this short so that Ctrl-C reaches the calling thread at once.
_POLL_S = 0.2
# After killing the trials, how long the jobs get to record them and end.
_JOIN_AFTER_KILL_S = 10.0


class RunnerPool(Generic[T]):
    """``submit(work)`` runs ``work(runner)`` on the next free one of ``runners``.

    Use it as a context manager: leaving the block by an exception (an interrupt, or an error
    :meth:`submit` or :meth:`wait` raised) sets ``stopping`` and kills the trials still
    running; leaving it normally requires every unit to have ended (:meth:`wait`).
    """

    def __init__(self, runners: Sequence[TrialRunner], stopping: threading.Event) -> None:
        if not runners:
            raise ValueError("RunnerPool needs at least one runner, but got none.")
        self._free: queue.Queue[TrialRunner] = queue.Queue()
        for runner in runners:
            self._free.put(runner)
        self._executor = concurrent.futures.ThreadPoolExecutor(
            max_workers=len(runners), thread_name_prefix="autotune-job"
        )
        self._stopping = stopping
        self._futures: list[concurrent.futures.Future[T]] = []
        self._errors: list[BaseException] = []  # in the order the units failed
        self._lock = threading.Lock()
        self._before = tracked()

    def __enter__(self) -> RunnerPool[T]:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        if error is not None:
            self.stop()
        self._executor.shutdown(wait=error is None, cancel_futures=True)

    def submit(self, work: Callable[[TrialRunner], T]) -> concurrent.futures.Future[T]:
        """Starts ``work`` on a free runner, waiting for one while every runner is busy.

        Raises:
            BaseException: The first error a unit of work raised (nothing is started then).
        """
        while True:
            self._raise()
            try:
                runner = self._free.get(timeout=_POLL_S)
                break
            except queue.Empty:
                continue
        future = self._executor.submit(self._run, work, runner)
        self._futures.append(future)
        return future

    def wait(self) -> list[T]:
        """Waits until every unit submitted has ended; their results, in submission order.

        Raises:
            BaseException: The first error a unit raised.
        """
        pending = set(self._futures)
        while pending:
            _, pending = concurrent.futures.wait(pending, timeout=_POLL_S)
        self._raise()
        return [f.result() for f in self._futures]

    def stop(self) -> None:
        """Kills the trials still running (the work stops) and waits a while for the units
        to end; ``stopping`` tells them a killed trial is not a crash."""
        self._stopping.set()
        kill_all(keep=self._before)
        concurrent.futures.wait(self._futures, timeout=_JOIN_AFTER_KILL_S)

    def _run(self, work: Callable[[TrialRunner], T], runner: TrialRunner) -> T:
        try:
            return work(runner)
        except BaseException as exc:  # raised again in the calling thread
            with self._lock:
                self._errors.append(exc)
            self._stopping.set()
            raise
        finally:
            self._free.put(runner)

    def _raise(self) -> None:
        with self._lock:
            first = self._errors[0] if self._errors else None
        if first is not None:
            raise first
