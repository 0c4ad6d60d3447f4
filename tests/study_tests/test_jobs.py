"""The queued trials on every job: submit hands a trial to a free runner and returns, drain
waits for them all, and a job's error stops the rest."""

from __future__ import annotations

import threading

import pytest

from autotune.study._jobs import Jobs


class Runner:
    def __init__(self, name: str) -> None:
        self.name = name

    def run(self, spec):  # never called: Jobs calls its run function with the runner
        raise AssertionError

    def close(self) -> None:
        pass


def test_trials_run_on_every_free_runner_at_once_and_drain_waits_for_them():
    both_running, ran = threading.Barrier(2, timeout=10), []

    def run(runner, trial):
        both_running.wait()  # two trials at once, or this times out
        ran.append((runner.name, trial))

    jobs = Jobs([Runner("a"), Runner("b")], run, lambda t: None, threading.Event())
    jobs.submit(1)
    jobs.submit(2)  # returns at once: a runner is free
    jobs.drain()
    assert sorted(ran) == [("a", 1), ("b", 2)]


def test_a_jobs_error_is_raised_and_the_next_trial_is_failed_not_started():
    stopping, failed, started = threading.Event(), [], []

    def run(runner, trial):
        started.append(trial)
        if trial == 1:
            raise RuntimeError("the database went away")

    jobs = Jobs([Runner("a")], run, failed.append, stopping)
    jobs.submit(1)
    with pytest.raises(RuntimeError, match="database"):
        jobs.submit(2)  # waits for the one runner; finds the error instead
    assert started == [1] and failed == [2] and stopping.is_set()
    with pytest.raises(RuntimeError):
        jobs.drain()
