"""Opening the records database: engines, connection checks, the schema and its version."""

from __future__ import annotations

import sqlite3
import time
from typing import Any

import sqlalchemy as sa
from sqlalchemy import event
from sqlalchemy.engine import URL, make_url
from sqlalchemy.exc import ArgumentError, DBAPIError, IntegrityError, NoSuchModuleError

from autotune._secrets import mask_text, mask_url
from autotune.errors import UsageError
from autotune.records.tables import METADATA, SCHEMA_VERSION, TABLE_NAMES, meta_table

_INIT_ATTEMPTS = 5
POSTGRES_INSTALL = "pip install 'autotune[postgres]'"
_SQLITE_TIMEOUT_S = 30.0
# A server session of a read-only store refuses every write (PostgreSQL).
_READ_ONLY_OPTION = "-c default_transaction_read_only=on"


class StorageError(UsageError, RuntimeError):
    """The records database cannot be opened or used; the message says why and what to do."""


def redact_url(url: str | URL) -> str:
    """Returns ``url`` with its password and secret query parameters replaced by ``***``,
    safe to print, log or store (see :func:`autotune._secrets.mask_url`)."""
    return mask_url(url)


def open_engine(url: str) -> sa.Engine:
    """An engine on ``url`` that reached the database, with autotune's tables in place."""
    engine = create_engine(url)
    try:
        ping(engine, url)
        _init_schema(engine, url)
    except BaseException:
        engine.dispose()
        raise
    return engine


def parse_url(url: str) -> URL:
    """``url`` parsed by SQLAlchemy, or a :class:`StorageError` saying what is wrong with it."""
    try:
        parsed = make_url(url)
    except (ArgumentError, ValueError) as exc:
        raise StorageError(_bad_url(url, exc)) from None
    if parsed.host and "@" in parsed.host:
        raise StorageError(
            f"The storage URL {redact_url(url)} has an '@' in its user or password that is not "
            "percent-encoded, so the text after the first '@' would be taken for the host. "
            "Write each '@' of the user and password as %40 (the password p@ss as p%40ss; "
            "Python: urllib.parse.quote(password, safe=''))."
        )
    return parsed


def create_engine(url: str, target: str | None = None, read_only: bool = False) -> sa.Engine:
    """An engine on ``target`` (default ``url``; messages name ``url``), not connected yet."""
    parse_url(url)
    try:
        parsed = make_url(target or url)
        engine = sa.create_engine(parsed, **engine_options(parsed, read_only))
    except (ArgumentError, NoSuchModuleError, ImportError, ValueError) as exc:
        raise StorageError(_bad_url(url, exc)) from None
    if parsed.get_backend_name() == "sqlite":
        event.listen(engine, "connect", _sqlite_on_connect_ro if read_only else _sqlite_on_connect)
    return engine


def _bad_url(url: str, exc: BaseException) -> str:
    return (
        f"Cannot open the records database {redact_url(url)}: {reason(exc, url)} "
        "The storage URL must read dialect+driver://user:password@host:port/database, e.g. "
        "sqlite:///autotune.db or postgresql+psycopg://user:password@host:5432/db, and its "
        f"driver must be installed (for PostgreSQL: {POSTGRES_INSTALL})."
    )


def engine_options(url: str | URL, read_only: bool = False) -> dict[str, Any]:
    """Engine options for ``url``, for our engine and Optuna's alike: SQLite waits out other
    writers; a server connection is checked before use (a restarted database), gives up
    connecting after 10 s, and a process keeps few of them open (a worker runs one query at a
    time, its heartbeat thread another): the server's connection limit is shared by every
    worker of the fleet. ``read_only``: a PostgreSQL session refuses every write."""
    url = make_url(url)
    if url.get_backend_name() == "sqlite":
        return {"connect_args": {"timeout": _SQLITE_TIMEOUT_S}}
    options: dict[str, Any] = {"pool_pre_ping": True, "pool_size": 1, "max_overflow": 2}
    connect_args: dict[str, Any] = {}
    if url.get_driver_name() in ("psycopg", "psycopg2"):
        if "connect_timeout" not in url.query:
            connect_args["connect_timeout"] = 10
        if read_only:  # connect_args replace the URL's own options: keep them
            given = url.query.get("options", ())
            given = (given,) if isinstance(given, str) else tuple(given)
            connect_args["options"] = " ".join([*given, _READ_ONLY_OPTION])
    if connect_args:
        options["connect_args"] = connect_args
    return options


def _sqlite_on_connect(dbapi_connection: Any, _record: Any) -> None:
    cursor = dbapi_connection.cursor()
    try:
        _set_wal(cursor)
        cursor.execute("PRAGMA foreign_keys=ON")
    finally:
        cursor.close()


def _sqlite_on_connect_ro(dbapi_connection: Any, _record: Any) -> None:
    # No journal mode switch (it writes the file): the connection may only read.
    dbapi_connection.execute("PRAGMA query_only=ON")


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


def ping(engine: sa.Engine, url: str) -> None:
    """Refuses a database the engine cannot reach, naming ``url`` (its secrets masked)."""
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
            f"Cannot connect to the records database {redact_url(url)}: {reason(exc, url)} "
            f"{remedy}"
        ) from None


def reason(exc: BaseException, url: str | URL) -> str:
    """The first line of what ``exc`` says, with every URL, password and secret parameter in
    it masked (``url``'s secrets wherever they appear)."""
    original = exc.orig if isinstance(exc, DBAPIError) else exc
    # The first line says what failed; later ones repeat SQL or hints.
    text = str(original).strip().split("\n", 1)[0].strip() or type(original).__name__
    text = mask_text(text, [url])
    return text if text.endswith((".", "?", "!")) else text + "."


def _init_schema(engine: sa.Engine, url: str) -> None:
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
                    f"{redact_url(url)}: {reason(exc, url)} The database user "
                    "needs the right to create tables there (and to write the database file for "
                    "SQLite); grant it or point --storage at another database."
                ) from None
            time.sleep(0.05 * (attempt + 1))
    check_schema_version(engine, url)


def check_schema_version(engine: sa.Engine, url: str, write: bool = True) -> None:
    """Refuses a database of a newer autotune; records this one's version where none is
    (unless ``write`` is False)."""
    stored = _stored_schema_version(engine)
    if stored is None:
        if not write:
            return  # a writer stopped between creating the tables and writing the version
        try:
            with engine.begin() as conn:
                row = {"key": "schema_version", "value": str(SCHEMA_VERSION)}
                conn.execute(meta_table.insert().values(row))
        except IntegrityError:
            pass  # Another worker wrote it first.
        stored = _stored_schema_version(engine) or ""
    if not stored.isdigit() or int(stored) > SCHEMA_VERSION:
        raise StorageError(
            f"The records database {redact_url(url)} has autotune schema_version "
            f"{stored!r}, but this autotune reads schema_version <= {SCHEMA_VERSION}. Upgrade "
            "autotune (pip install -U autotune) or point --storage at another database."
        )


def _stored_schema_version(engine: sa.Engine) -> str | None:
    query = sa.select(meta_table.c.value).where(meta_table.c.key == "schema_version")
    with engine.connect() as conn:
        return conn.execute(query).scalar_one_or_none()
