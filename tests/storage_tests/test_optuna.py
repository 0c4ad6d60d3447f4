"""Which database errors a worker rides out, and how it retries them."""

from __future__ import annotations

import threading

import optuna
import pytest
from sqlalchemy import exc as sa_exc

from autotune.storage._optuna import retrying, transient


def _raised(make):
    try:
        make()
    except Exception as exc:  # noqa: BLE001 - the chain is what the test looks at
        return exc
    raise AssertionError("nothing raised")


def _dropped() -> sa_exc.OperationalError:
    return sa_exc.OperationalError("SELECT 1", {}, Exception("server closed the connection"))


def test_a_dropped_connection_is_transient_also_inside_optunas_wrapper():
    assert transient(_dropped())

    def wrapped():
        try:
            raise _dropped()
        except sa_exc.OperationalError as e:
            raise optuna.exceptions.StorageInternalError("commit failed") from e

    assert transient(_raised(wrapped))


def test_a_query_retried_on_a_cut_connection_is_transient():
    """What Optuna's fallback query raises after the server dropped the connection."""

    def cut():
        try:
            raise _dropped()
        except sa_exc.OperationalError:
            try:
                raise sa_exc.PendingRollbackError("Can't reconnect until rolled back")
            except sa_exc.PendingRollbackError as e:
                raise optuna.exceptions.StorageInternalError("commit failed") from e

    assert transient(_raised(cut))


def test_bad_data_is_not_transient():
    integrity = sa_exc.IntegrityError("INSERT", {}, Exception("duplicate key"))
    assert not transient(integrity)
    assert not transient(ValueError("no"))

    def wrapped():
        try:
            raise integrity
        except sa_exc.IntegrityError as e:
            raise optuna.exceptions.StorageInternalError("commit failed") from e

    assert not transient(_raised(wrapped))


@pytest.mark.parametrize(
    "message", ["database or disk is full", "attempt to write a readonly database",
                "file is not a database", "database disk image is malformed"],
)  # fmt: skip
def test_a_full_disk_or_a_damaged_file_is_said_at_once_not_waited_out(message):
    """Issue 41, item 8: a SQLite disk that filled mid-study was retried as an unreachable
    database for four minutes, then a traceback."""
    full = sa_exc.OperationalError("INSERT", {}, Exception(message))
    assert not transient(full)
    calls = []

    def fails():
        calls.append(1)
        raise full

    with pytest.raises(sa_exc.OperationalError):
        retrying(fails)
    assert calls == [1]


def test_retrying_calls_again_until_it_works_and_reports_each_failure(monkeypatch):
    monkeypatch.setattr("autotune.storage._optuna.time.sleep", lambda s: None)
    calls, heard = [], []

    def flaky():
        calls.append(1)
        if len(calls) < 3:
            raise _dropped()
        return "ok"

    assert retrying(flaky, on_retry=heard.append) == "ok"
    assert len(calls) == 3 and len(heard) == 2


def test_retrying_gives_up_at_once_on_an_error_that_is_not_transient():
    calls = []

    def broken():
        calls.append(1)
        raise sa_exc.IntegrityError("INSERT", {}, Exception("duplicate key"))

    with pytest.raises(sa_exc.IntegrityError):
        retrying(broken)
    assert calls == [1]


def test_creating_optunas_tables_again_after_losing_the_race_for_them(monkeypatch):
    """A search and workers starting together on a new PostgreSQL schema each create Optuna's
    tables; CI saw a loser fail on the catalog's unique index. It tries again, and then the
    tables are there."""
    from autotune.storage import _optuna

    monkeypatch.setattr(_optuna.time, "sleep", lambda s: None)
    race = sa_exc.IntegrityError(
        "CREATE TABLE studies", {},
        Exception('duplicate key value violates unique constraint "pg_type_typname_nsp_index"'),
    )  # fmt: skip
    tries = []

    def create():
        tries.append(1)
        if len(tries) < 3:
            raise race
        return "storage"

    assert _optuna._created_together(create) == "storage" and len(tries) == 3
    tries.clear()
    with pytest.raises(sa_exc.IntegrityError):
        _optuna._created_together(lambda: (tries.append(1), (_ for _ in ()).throw(race)))
    assert len(tries) == _optuna._CREATE_ATTEMPTS
    denied = sa_exc.ProgrammingError("CREATE TABLE", {}, Exception("permission denied"))
    with pytest.raises(sa_exc.ProgrammingError):  # not a race: said at once
        _optuna._created_together(lambda: (_ for _ in ()).throw(denied))


def test_beating_beats_at_once_and_every_heartbeat_until_the_block_ends(monkeypatch):
    from autotune.storage import beating

    monkeypatch.setenv("AUTOTUNE_HEARTBEAT_S", "1")
    beats, twice = [], threading.Event()

    def beat() -> None:
        beats.append(len(beats))
        if len(beats) == 1:
            raise OSError("the database is restarting")  # tried again at the next beat
        twice.set()

    with beating(beat):
        assert twice.wait(10)
    ended = len(beats)
    threading.Event().wait(1.5)
    assert len(beats) == ended  # no beat once the block ended
