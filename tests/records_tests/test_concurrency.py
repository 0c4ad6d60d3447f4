"""Many workers write into one database; each test gives every worker its own RecordStore."""

from __future__ import annotations

import multiprocessing
import sqlite3
import threading
from collections.abc import Callable
from pathlib import Path

from autotune.records import RecordStore, TrialRecord

THREADS = 4
PROCESSES = 2
TRIALS_PER_WORKER = 15


def _record(trial_number: int, worker: int) -> TrialRecord:
    return TrialRecord(
        trial_number=trial_number,
        config={"worker": worker},
        config_hash=f"{trial_number:032x}",
        brief=f"worker {worker}",
        status="ok",
        latency_median_s=float(trial_number),
        environment={"host": f"node-{worker}"},
    )


def _write(url: str, worker: int, workers: int, start: threading.Barrier | None = None) -> None:
    with RecordStore(url) as store:
        store.save_study("s", optuna_study_id=1, settings={"seed": 0})
        if start is not None:
            start.wait(timeout=30)
        for i in range(TRIALS_PER_WORKER):
            store.add_trial("s", _record(i * workers + worker, worker))
            # Every worker also rewrites one shared trial number: the upsert path under contention.
            store.add_trial("s", _record(10_000, worker))


def _run_threads(target: Callable[[int], None]) -> None:
    errors: list[BaseException] = []

    def run(worker: int) -> None:
        try:
            target(worker)
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(worker,)) for worker in range(THREADS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert errors == []


def _assert_nothing_lost(url: str, workers: int) -> None:
    with RecordStore(url) as store:
        records = store.trials("s")
    expected = list(range(workers * TRIALS_PER_WORKER)) + [10_000]
    assert [record.trial_number for record in records] == expected
    for record in records[:-1]:
        assert record.config == {"worker": record.trial_number % workers}


def test_threads_opening_a_fresh_database_together(db_url: str) -> None:
    start = threading.Barrier(THREADS)

    def open_and_write(worker: int) -> None:
        start.wait(timeout=30)
        _write(db_url, worker, THREADS)

    _run_threads(open_and_write)

    _assert_nothing_lost(db_url, THREADS)


def test_threads_writing_one_study_lose_nothing(db_url: str) -> None:
    RecordStore(db_url).close()
    start = threading.Barrier(THREADS)

    _run_threads(lambda worker: _write(db_url, worker, THREADS, start))

    _assert_nothing_lost(db_url, THREADS)


def test_processes_writing_one_study_lose_nothing(db_url: str) -> None:
    context = multiprocessing.get_context("spawn")
    processes = [
        context.Process(target=_write, args=(db_url, worker, PROCESSES))
        for worker in range(PROCESSES)
    ]
    for process in processes:
        process.start()
    for process in processes:
        process.join(timeout=120)

    assert [process.exitcode for process in processes] == [0] * PROCESSES
    _assert_nothing_lost(db_url, PROCESSES)


def test_sqlite_store_opens_while_another_writer_holds_a_fresh_file(tmp_path: Path) -> None:
    # Switching a rollback-journal file to WAL while another connection writes fails at once with
    # "database is locked" (SQLite skips the busy timeout there): the store must wait instead.
    path = tmp_path / "autotune.db"
    writer = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    writer.execute("CREATE TABLE other (x)")
    writer.execute("BEGIN IMMEDIATE")
    writer.execute("INSERT INTO other VALUES (1)")
    release = threading.Timer(0.5, writer.execute, args=("COMMIT",))
    release.start()
    try:
        with RecordStore(f"sqlite:///{path}") as store:
            store.save_study("s", optuna_study_id=1, settings={"seed": 0})
            assert store.trials("s") == []
    finally:
        release.join()
        writer.close()
    with sqlite3.connect(path) as check:
        assert check.execute("PRAGMA journal_mode").fetchone() == ("wal",)
