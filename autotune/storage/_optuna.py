"""Optuna's RDB storage beside our record tables, in one database."""

from __future__ import annotations

import hashlib
import os
import re
import threading
import time
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any, TypeVar

from autotune._secrets import mask_text
from autotune.errors import UsageError

HEARTBEAT_S = 30
GRACE_S = 120
# How long the end of a beating block waits for a beat under way.
_BEAT_JOIN_S = 5.0
# How long a process rides out a database that restarts or refuses connections.
DB_RETRY_S = 120.0
_RETRY_FIRST_S = 0.5
_RETRY_MAX_S = 5.0

T = TypeVar("T")


def heartbeat_s() -> int:
    """Seconds between a running trial's heartbeats (``$AUTOTUNE_HEARTBEAT_S``, default 30)."""
    return int(os.environ.get("AUTOTUNE_HEARTBEAT_S") or HEARTBEAT_S)


def grace_s() -> int:
    """Seconds without a heartbeat after which a running trial's owner counts as dead
    (``$AUTOTUNE_GRACE_S``, default 120): its trial is failed and retried once."""
    return int(os.environ.get("AUTOTUNE_GRACE_S") or GRACE_S)


@contextmanager
def beating(beat: Callable[[], object]) -> Iterator[None]:
    """Calls ``beat`` at once and every :func:`heartbeat_s` in a background thread while the
    block runs: the one heartbeat of autotune's leases (a running trial's in Optuna, a claim
    on the scope probes or the finalist round), so that only a lease whose process died
    lapses. A beat that fails (the database restarting) is tried again at the next one; the
    block's end waits a moment for a beat under way, never for a hung one."""
    stop = threading.Event()

    def loop() -> None:
        while True:
            with suppress(Exception):  # a restarting database: beat again later
                beat()
            if stop.wait(heartbeat_s()):
                return

    thread = threading.Thread(target=loop, daemon=True, name="autotune-heartbeat")
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join(_BEAT_JOIN_S)


def transient(exc: BaseException) -> bool:
    """Whether a database error may pass: the server restarting, a dropped connection, a
    locked SQLite file.

    The chain is followed through SQLAlchemy's and Optuna's wrappers: Optuna re-raises a failed
    commit as its StorageInternalError (the cause kept), and a query retried on a connection
    that was cut mid-transaction fails with PendingRollbackError, the cut in its context; Optuna
    rolls its session back, so the next call reconnects."""
    from sqlalchemy import exc as sa_exc

    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, sa_exc.DBAPIError) and current.connection_invalidated:
            return True
        if isinstance(current, sa_exc.OperationalError) and _lasting(current):
            return False  # a full disk or a read-only file does not pass by waiting
        if isinstance(current, (sa_exc.OperationalError, sa_exc.InterfaceError)):
            return True
        wrapper = type(current).__name__ == "StorageInternalError"
        if not (wrapper or isinstance(current, sa_exc.SQLAlchemyError)):
            return False
        current = current.__cause__ or current.__context__
    return False


# SQLite's operational errors that waiting does not cure: said at once, not retried for minutes
# as an unreachable database.
_LASTING = ("database or disk is full", "readonly database", "file is not a database",
            "disk image is malformed")  # fmt: skip


def _lasting(exc: BaseException) -> bool:
    text = str(getattr(exc, "orig", None) or exc).lower()
    return any(words in text for words in _LASTING)


def retrying(
    fn: Callable[[], T],
    on_retry: Callable[[BaseException], None] = lambda exc: None,
    within_s: float = DB_RETRY_S,
) -> T:
    """``fn()``, called again with backoff while it fails on a transient database error, for at
    most ``within_s`` seconds; ``on_retry`` hears of each failure."""
    deadline = time.monotonic() + within_s
    delay = _RETRY_FIRST_S
    while True:
        try:
            return fn()
        except Exception as exc:
            if not transient(exc) or time.monotonic() + delay > deadline:
                raise
            on_retry(exc)
        time.sleep(delay)
        delay = min(2 * delay, _RETRY_MAX_S)


def open_optuna_storage(url: str, read_only: bool = False) -> Any:
    """An RDBStorage with heartbeats: a trial whose process died is failed and retried.

    With ``read_only`` (reports), nothing is created or written: Optuna's tables must be
    there already, a SQLite file is opened read-only and a PostgreSQL session refuses writes.
    """
    import optuna
    from optuna.storages import RDBStorage

    from autotune.records import (
        POSTGRES_INSTALL,
        engine_options,
        parse_url,
        read_only_url,
        reason,
        redact_url,
    )

    parse_url(url)  # a malformed URL (an unencoded "@" in the password) is said here
    target, extra = url, dict[str, Any]()
    if read_only:
        target, extra = read_only_url(url), {"skip_table_creation": True}
        _require_optuna_tables(url, target)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
            return _created_together(
                lambda: RDBStorage(
                    target, engine_kwargs=engine_options(target, read_only),
                    **extra, **_heartbeat_kwargs(),
                )
            )  # fmt: skip
    except (ImportError, ModuleNotFoundError) as exc:
        raise UsageError(
            f"The storage {redact_url(url)} needs a database driver that is not installed "
            f"({mask_text(exc, [url])}). For PostgreSQL: {POSTGRES_INSTALL}."
        ) from exc
    except Exception as exc:  # SQLAlchemy's argument and connection errors
        raise UsageError(
            f"Cannot open the storage {redact_url(url)}: {type(exc).__name__}: "
            f"{reason(exc, url)} Pass a reachable SQLAlchemy URL with --storage (default "
            "sqlite:///autotune.db, or $AUTOTUNE_STORAGE)."
        ) from exc
    finally:
        optuna.logging.set_verbosity(optuna.logging.WARNING)


_CREATE_ATTEMPTS = 5


def _created_together(create: Callable[[], Any]) -> Any:
    """``create()``, again when it lost a race to create Optuna's tables: a search and workers
    that start together on a new PostgreSQL schema each run ``CREATE TABLE``, and the losers
    fail on the catalog's unique index (``pg_type_typname_nsp_index``, seen in CI); on the
    next attempt the tables are there and nothing is created."""
    from sqlalchemy.exc import IntegrityError, ProgrammingError

    for attempt in range(_CREATE_ATTEMPTS):
        try:
            return create()
        except (IntegrityError, ProgrammingError) as exc:
            lost = isinstance(exc, IntegrityError) or "already exists" in str(exc)
            if not lost or attempt == _CREATE_ATTEMPTS - 1:
                raise
            time.sleep(0.05 * (attempt + 1))
    raise AssertionError("unreachable")


# Optuna's tables a reader needs: without them, RDBStorage would create them.
OPTUNA_TABLES = ("studies", "trials", "version_info", "alembic_version")


def _require_optuna_tables(url: str, target: str) -> None:
    import sqlalchemy as sa

    from autotune.records import EmptyStorageError, create_engine, ping, redact_url

    engine = create_engine(url, target, read_only=True)
    try:
        ping(engine, url)
        missing = [t for t in OPTUNA_TABLES if t not in sa.inspect(engine).get_table_names()]
    finally:
        engine.dispose()
    if missing:
        raise EmptyStorageError(
            f"The storage {redact_url(url)} holds no Optuna study: Optuna's tables "
            f"{', '.join(missing)} are missing, and this command only reads. Pass --storage "
            "with the URL the study was run with (or set $AUTOTUNE_STORAGE)."
        )


def _heartbeat_kwargs() -> dict[str, Any]:
    """Optuna 4.9 renamed the stale-trial callback; support both sides of the rename."""
    import optuna.storages as storages

    kwargs: dict[str, Any] = {"heartbeat_interval": heartbeat_s(), "grace_period": grace_s()}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # both callbacks are marked experimental
        if hasattr(storages, "RetryHeartbeatStaleTrialCallback"):
            retry = storages.RetryHeartbeatStaleTrialCallback(max_retry=1)
            kwargs["heartbeat_stale_trial_callback"] = retry
        else:
            kwargs["failed_trial_callback"] = storages.RetryFailedTrialCallback(max_retry=1)
    return kwargs


def cache_dir_source() -> str:
    """What named the default kernel cache, for a message: the variable, or the default."""
    return "$AUTOTUNE_CACHE_DIR" if os.environ.get("AUTOTUNE_CACHE_DIR") else "the kernel cache"


def default_cache_dir(study: str, study_id: int, storage: str) -> str:
    """``$AUTOTUNE_CACHE_DIR``, else a folder of the user's cache for this very study: its
    name, its Optuna id and its storage, so a study re-created under an old name (or one in
    another database) never inherits compiled graphs, and their optimistic compile times."""
    if os.environ.get("AUTOTUNE_CACHE_DIR"):
        return os.environ["AUTOTUNE_CACHE_DIR"]
    where = storage if not storage.startswith("sqlite:///") else str(Path(storage[10:]).resolve())
    digest = hashlib.sha256(f"{where}|{study_id}".encode()).hexdigest()[:10]
    slug = re.sub(r"[^A-Za-z0-9_.-]+", "_", study)
    return str(user_cache() / f"{slug}-{digest}")


def user_cache() -> Path:
    """autotune's folder in this user's cache: ``$XDG_CACHE_HOME/autotune``, else
    ``~/.cache/autotune``."""
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache", "autotune")
