"""Work spread over a process's runners (autotune/trials/_pool.py): each unit on the next free
runner, the first error raised in the calling thread, and an interrupt that kills the trials
still running."""

from __future__ import annotations

import threading

import pytest

from autotune.trials import RunnerPool, _pool


class Runner:
    def __init__(self, name: str) -> None:
        self.name = name

    def run(self, spec):  # never called: the pool hands the runner to the unit of work
        raise AssertionError

    def close(self) -> None:
        pass


def test_units_run_on_every_free_runner_at_once_and_wait_returns_their_results_in_order():
    both_running = threading.Barrier(2, timeout=10)

    def unit(n: int):
        def work(runner: Runner) -> tuple[str, int]:
            both_running.wait()  # two units at once, or this times out
            return runner.name, n

        return work

    with RunnerPool([Runner("a"), Runner("b")], threading.Event()) as pool:
        pool.submit(unit(1))
        pool.submit(unit(2))  # returns at once: a runner is free
        done = pool.wait()
    assert sorted(done) == [("a", 1), ("b", 2)] and [n for _, n in done] == [1, 2]


def test_a_units_error_is_raised_by_the_next_submit_which_starts_nothing_and_by_wait():
    stopping, started = threading.Event(), []

    def work(n: int):
        def unit(runner: Runner) -> None:
            started.append(n)
            if n == 1:
                raise RuntimeError("the database went away")

        return unit

    with pytest.raises(RuntimeError, match="database"):
        with RunnerPool([Runner("a")], stopping) as pool:
            pool.submit(work(1))
            with pytest.raises(RuntimeError, match="database"):
                pool.submit(work(2))  # waits for the one runner; finds the error instead
            pool.wait()
    assert started == [1] and stopping.is_set()


def test_leaving_by_an_interrupt_kills_the_trials_started_since_the_pool_opened(monkeypatch):
    killed, release = [], threading.Event()
    monkeypatch.setattr(_pool, "tracked", lambda: {"before"})

    def kill_all(keep: set[str]) -> None:
        killed.append(keep)
        release.set()

    monkeypatch.setattr(_pool, "kill_all", kill_all)
    stopping = threading.Event()

    with pytest.raises(KeyboardInterrupt):
        with RunnerPool([Runner("a")], stopping) as pool:
            pool.submit(lambda runner: release.wait(10))  # runs until its trial is killed
            raise KeyboardInterrupt

    assert killed == [{"before"}] and stopping.is_set()


def test_a_pool_needs_a_runner():
    with pytest.raises(ValueError, match="at least one runner"):
        RunnerPool([], threading.Event())
