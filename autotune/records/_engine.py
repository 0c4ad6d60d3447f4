"""Opening the records database: engines, connection checks, the schema and its version."""

from __future__ import annotations

import re
import sqlite3
import time
from typing import Any

import sqlalchemy as sa
from sqlalchemy import event
from sqlalchemy.engine import URL, make_url
from sqlalchemy.exc import ArgumentError, DBAPIError, IntegrityError, NoSuchModuleError

from autotune.errors import UsageError
from autotune.records.tables import METADATA, SCHEMA_VERSION, TABLE_NAMES, meta_table

_INIT_ATTEMPTS = 5
POSTGRES_INSTALL = "pip install 'autotune[postgres]'"
_SQLITE_TIMEOUT_S = 30.0


class StorageError(UsageError, RuntimeError):
    """The records database cannot be opened or used; the message says why and what to do."""


def redact_url(url: str | URL) -> str:
    """Returns ``url`` with its password replaced by ``***``, safe to print or log."""
    try:
        return make_url(url).render_as_string(hide_password=True)
    except (ArgumentError, ValueError):
        return re.sub(r"(://[^:/@]*:)[^@]*@", r"\1***@", str(url))


def open_engine(url: str) -> sa.Engine:
    """An engine on ``url`` that reached the database, with autotune's tables in place."""
    engine = _create_engine(url)
    try:
        _ping(engine)
        _init_schema(engine)
    except BaseException:
        engine.dispose()
        raise
    return engine


def _create_engine(url: str) -> sa.Engine:
    try:
        parsed = make_url(url)
        engine = sa.create_engine(parsed, **engine_options(parsed))
    except (ArgumentError, NoSuchModuleError, ImportError, ValueError) as exc:
        raise StorageError(
            f"Cannot open the records database {redact_url(url)}: {reason(exc, url)} "
            "The storage URL must read dialect+driver://user:password@host:port/database, e.g. "
            "sqlite:///autotune.db or postgresql+psycopg://user:password@host:5432/db, and its "
            f"driver must be installed (for PostgreSQL: {POSTGRES_INSTALL})."
        ) from None
    if parsed.get_backend_name() == "sqlite":
        event.listen(engine, "connect", _sqlite_on_connect)
    return engine


def engine_options(url: str | URL) -> dict[str, Any]:
    """Engine options for ``url``, for our engine and Optuna's alike: SQLite waits out other
    writers; a server connection is checked before use (a restarted database), gives up
    connecting after 10 s, and a process keeps few of them open (a worker runs one query at a
    time, its heartbeat thread another): the server's connection limit is shared by every
    worker of the fleet."""
    url = make_url(url)
    if url.get_backend_name() == "sqlite":
        return {"connect_args": {"timeout": _SQLITE_TIMEOUT_S}}
    options: dict[str, Any] = {"pool_pre_ping": True, "pool_size": 1, "max_overflow": 2}
    if url.get_driver_name() in ("psycopg", "psycopg2") and "connect_timeout" not in url.query:
        options["connect_args"] = {"connect_timeout": 10}
    return options


def _sqlite_on_connect(dbapi_connection: Any, _record: Any) -> None:
    cursor = dbapi_connection.cursor()
    try:
        _set_wal(cursor)
        cursor.execute("PRAGMA foreign_keys=ON")
    finally:
        cursor.close()


def _set_wal(cursor: Any) -> None:
    # WAL lets readers (reports, Optuna) proceed while a worker writes; the mode is stored in the
    # file, so later connections (Optuna's too) find it set and skip the switch. Switching needs
    # an exclusive lock and SQLite answers "database is locked" at once, without waiting out the
    # busy timeout, when workers open a fresh file together: retry until the timeout is spent.
    deadline = time.monotonic() + _SQLITE_TIMEOUT_S
    delay = 0.01
    while True:
        try:
            if str(cursor.execute("PRAGMA journal_mode").fetchone()[0]).lower() != "wal":
                cursor.execute("PRAGMA journal_mode=WAL")
            return
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or time.monotonic() + delay > deadline:
                raise
        time.sleep(delay)
        delay = min(delay * 2, 0.5)


def _ping(engine: sa.Engine) -> None:
    try:
        with engine.connect() as conn:
            conn.execute(sa.select(1))
    except DBAPIError as exc:
        if engine.url.get_backend_name() == "sqlite":
            remedy = "Check that the directory of the database file exists and is writable."
        else:
            remedy = (
                "Check that the database server runs and is reachable from this machine and "
                "that the URL names the right host, port, user, password and database."
            )
        raise StorageError(
            f"Cannot connect to the records database {redact_url(engine.url)}: "
            f"{reason(exc, engine.url)} {remedy}"
        ) from None


def reason(exc: BaseException, url: str | URL) -> str:
    """The first line of what ``exc`` says, with the URL's password masked."""
    original = exc.orig if isinstance(exc, DBAPIError) else exc
    # The first line says what failed; later ones repeat SQL or hints.
    text = str(original).strip().split("\n", 1)[0].strip() or type(original).__name__
    password = _password(url)
    if password:
        text = text.replace(password, "***")
    return text if text.endswith((".", "?", "!")) else text + "."


def _password(url: str | URL) -> str | None:
    try:
        password = make_url(url).password
    except (ArgumentError, ValueError):
        return None
    return None if password is None else str(password)


def _init_schema(engine: sa.Engine) -> None:
    # Workers that start together race to create the tables; the losers' checks then pass.
    for attempt in range(_INIT_ATTEMPTS):
        try:
            with engine.begin() as conn:
                METADATA.create_all(conn)
            break
        except DBAPIError as exc:
            if attempt == _INIT_ATTEMPTS - 1:
                raise StorageError(
                    f"Cannot create autotune's tables {', '.join(TABLE_NAMES)} in "
                    f"{redact_url(engine.url)}: {reason(exc, engine.url)} The database user "
                    "needs the right to create tables there (and to write the database file for "
                    "SQLite); grant it or point --storage at another database."
                ) from None
            time.sleep(0.05 * (attempt + 1))
    _check_schema_version(engine)


def _check_schema_version(engine: sa.Engine) -> None:
    stored = _stored_schema_version(engine)
    if stored is None:
        try:
            with engine.begin() as conn:
                row = {"key": "schema_version", "value": str(SCHEMA_VERSION)}
                conn.execute(meta_table.insert().values(row))
        except IntegrityError:
            pass  # Another worker wrote it first.
        stored = _stored_schema_version(engine) or ""
    if not stored.isdigit() or int(stored) > SCHEMA_VERSION:
        raise StorageError(
            f"The records database {redact_url(engine.url)} has autotune schema_version "
            f"{stored!r}, but this autotune reads schema_version <= {SCHEMA_VERSION}. Upgrade "
            "autotune (pip install -U autotune) or point --storage at another database."
        )


def _stored_schema_version(engine: sa.Engine) -> str | None:
    query = sa.select(meta_table.c.value).where(meta_table.c.key == "schema_version")
    with engine.connect() as conn:
        return conn.execute(query).scalar_one_or_none()
