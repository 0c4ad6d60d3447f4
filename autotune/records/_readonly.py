"""Opening the records database to read only: what ``studies``, ``report`` and ``export`` use.

Nothing is created or written: a SQLite file is opened read-only (a missing file is refused,
not created), a PostgreSQL session refuses writes, and a database without autotune's tables
is said to hold no autotune study rather than given them.
"""

from __future__ import annotations

import os
from urllib.parse import quote

import sqlalchemy as sa

from autotune.records._engine import (
    StorageError,
    check_schema_version,
    create_engine,
    parse_url,
    ping,
    redact_url,
)
from autotune.records.tables import TABLE_NAMES, meta_table, studies_table, trials_table

# Without these there is no study to read; the others came later (an older database lacks
# them, and reads of them find nothing).
_REQUIRED = (meta_table.name, studies_table.name, trials_table.name)


class EmptyStorageError(StorageError):
    """The storage holds no autotune study: autotune's tables are not there."""


def open_read_only(url: str) -> tuple[sa.Engine, frozenset[str]]:
    """An engine on ``url`` that only reads, and the names of autotune's tables missing there.

    Raises:
        StorageError: ``url`` is malformed, names a SQLite file that does not exist, cannot
            be reached, or was written by a newer autotune.
        EmptyStorageError: The database has no autotune tables.
    """
    engine = create_engine(url, read_only_url(url), read_only=True)
    try:
        ping(engine, url)
        tables = set(sa.inspect(engine).get_table_names())
        missing = [name for name in _REQUIRED if name not in tables]
        if missing:
            raise EmptyStorageError(
                f"The storage {redact_url(url)} holds no autotune study: it has none of "
                f"autotune's tables ({', '.join(missing)} are missing), and this command only "
                "reads. Pass --storage with the URL the study was run with (or set "
                "$AUTOTUNE_STORAGE); `autotune search` creates the tables."
            )
        check_schema_version(engine, url, write=False)
    except BaseException:
        engine.dispose()
        raise
    return engine, frozenset(TABLE_NAMES) - tables


def read_only_url(url: str) -> str:
    """``url`` as a read-only reader opens it: a SQLite file in SQLite's read-only mode (which
    never creates it); other URLs as they are (their sessions are made read-only by
    :func:`autotune.records.engine_options`).

    Raises:
        StorageError: ``url`` names a SQLite file that does not exist.
    """
    parsed = parse_url(url)
    database = parsed.database
    if parsed.get_backend_name() != "sqlite" or not database or database == ":memory:":
        return url
    query = {**parsed.query, "mode": "ro"}
    if str(parsed.query.get("uri", "")).lower() not in ("true", "1"):
        if not os.path.exists(database):
            raise StorageError(
                f"The storage {redact_url(url)} names the SQLite file {database}, which does "
                "not exist. Pass --storage with the URL the study was run with (or set "
                "$AUTOTUNE_STORAGE); `autotune search` writes sqlite:///autotune.db in the "
                "folder it ran in by default."
            )
        database = "file:" + quote(os.path.abspath(database))
        query["uri"] = "true"
    return parsed.set(database=database, query=query).render_as_string(hide_password=False)
