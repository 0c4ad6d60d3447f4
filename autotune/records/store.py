"""RecordStore: autotune's studies and trials in any SQLAlchemy database, beside Optuna's."""

from __future__ import annotations

import dataclasses
import importlib.metadata
import json
import math
import re
import time
from datetime import datetime, timezone
from types import TracebackType
from typing import Any

import sqlalchemy as sa
from sqlalchemy import event
from sqlalchemy.engine import URL, make_url
from sqlalchemy.exc import ArgumentError, DBAPIError, IntegrityError, NoSuchModuleError

from autotune.errors import UsageError
from autotune.records.tables import (
    ENV_COLUMN_LENGTHS,
    METADATA,
    SCHEMA_VERSION,
    TABLE_NAMES,
    meta_table,
    studies_table,
    trials_table,
)
from autotune.trials._spec import FAILURE_KINDS

STATUSES = ("ok", "failed")
BASELINES = ("eager", "default")
# TrialRecord.environment key -> column of autotune_trials.
ENV_KEYS = {
    "host": "host",
    "python": "python_version",
    "torch": "torch_version",
    "triton": "triton_version",
    "cuda": "cuda_version",
    "driver": "driver_version",
    "device_name": "device_name",
    "cpu_model": "cpu_model",
}
_JSON_FIELDS = {
    "config": "config_json",
    "environment": "environment_json",
    "result": "result_json",
}
_INIT_ATTEMPTS = 5


class StorageError(UsageError, RuntimeError):
    """The records database cannot be opened or used; the message says why and what to do."""


@dataclasses.dataclass
class TrialRecord:
    """One trial of a study as stored in ``autotune_trials``.

    ``environment`` fills ``environment_json`` and the environment columns (its keys ``host``,
    ``python``, ``torch``, ``triton``, ``cuda``, ``driver``, ``device_name``, ``cpu_model``);
    ``result`` is the trial child's full JSON result. ``created_at`` is set when written.
    """

    trial_number: int
    config: dict[str, Any]
    config_hash: str
    brief: str
    status: str
    optuna_trial_id: int | None = None
    baseline: str | None = None
    failure_kind: str | None = None
    error: str | None = None
    error_tail: str | None = None
    compile_time_s: float | None = None
    latency_median_s: float | None = None
    latency_iqr_s: float | None = None
    eager_latency_median_s: float | None = None
    speedup_vs_eager: float | None = None
    speedup_vs_eager_q1: float | None = None
    speedup_vs_eager_q3: float | None = None
    speedup_vs_default: float | None = None
    peak_memory_bytes: int | None = None
    graphs: int | None = None
    graph_breaks: int | None = None
    recompiles: int | None = None
    wall_time_s: float | None = None
    duplicate_of: int | None = None
    environment: dict[str, Any] = dataclasses.field(default_factory=dict)
    result: dict[str, Any] = dataclasses.field(default_factory=dict)
    created_at: datetime | None = None

    def __post_init__(self) -> None:
        _check_choice("status", self.status, STATUSES)
        if self.baseline is not None:
            _check_choice("baseline", self.baseline, BASELINES)
        if self.failure_kind is not None:
            _check_choice("failure_kind", self.failure_kind, FAILURE_KINDS)
        if len(self.config_hash) > 32:
            raise ValueError(
                f"`len(config_hash) <= 32` must hold, but got {self.config_hash!r} "
                f"({len(self.config_hash)} characters); store a 32-character hex digest."
            )


def _check_choice(name: str, value: str, choices: tuple[str, ...]) -> None:
    if value not in choices:
        raise ValueError(f"`{name}` must be one of {choices}, but got {value!r}.")


def redact_url(url: str | URL) -> str:
    """Returns ``url`` with its password replaced by ``***``, safe to print or log."""
    try:
        return make_url(url).render_as_string(hide_password=True)
    except (ArgumentError, ValueError):
        return re.sub(r"(://[^:/@]*:)[^@]*@", r"\1***@", str(url))


class RecordStore:
    """autotune's studies and trials in the database at ``url`` (the one Optuna uses).

    Creates the ``autotune_*`` tables when missing and refuses a database written by a newer
    autotune. Every method runs in its own short transaction, so many workers may share one
    database.

    Example:
        >>> with RecordStore("sqlite:///autotune.db") as store:  # doctest: +SKIP
        ...     settings = store.save_study("resnet", optuna_study_id=1, settings={"seed": 0})
    """

    def __init__(self, url: str) -> None:
        self._engine = _create_engine(url)
        try:
            _ping(self._engine)
            _init_schema(self._engine)
        except BaseException:
            self._engine.dispose()
            raise

    def close(self) -> None:
        """Closes every connection of this store."""
        self._engine.dispose()

    def __enter__(self) -> RecordStore:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def save_study(
        self, name: str, optuna_study_id: int, settings: dict[str, Any]
    ) -> dict[str, Any]:
        """Records study ``name`` unless it exists, and returns its stored settings.

        A new study stores ``settings``; an existing one keeps what it has, and the caller
        compares what comes back with what it wanted.
        """
        settings_json = _dumps(settings, "settings")
        now = _utcnow()
        row = {
            "study_name": name,
            "optuna_study_id": optuna_study_id,
            "created_at": now,
            "updated_at": now,
            "autotune_version": _autotune_version(),
            "settings_json": settings_json,
        }
        try:
            with self._engine.begin() as conn:
                conn.execute(studies_table.insert().values(row))
        except IntegrityError:
            stored = self.study_settings(name)
            if stored is None:
                raise
            return stored
        return dict(json.loads(settings_json))

    def study_settings(self, name: str) -> dict[str, Any] | None:
        """Returns the stored settings of study ``name``, or None if it is not recorded."""
        query = sa.select(studies_table.c.settings_json).where(studies_table.c.study_name == name)
        with self._engine.connect() as conn:
            settings_json = conn.execute(query).scalar_one_or_none()
        return None if settings_json is None else dict(json.loads(settings_json))

    def settle_study_setting(self, name: str, key: str, value: Any) -> dict[str, Any]:
        """Stores ``settings[key] = value`` for study ``name`` unless another process stored
        one first (first write wins), and returns the stored settings either way."""
        with self._engine.begin() as conn:
            # Touching the row first locks it (as in add_trial): racing writers queue here.
            conn.execute(
                studies_table.update()
                .where(studies_table.c.study_name == name)
                .values(updated_at=_utcnow())
            )
            query = sa.select(studies_table.c.settings_json).where(
                studies_table.c.study_name == name
            )
            settings = dict(json.loads(conn.execute(query).scalar_one()))
            if settings.get(key) is None:
                settings[key] = value
                conn.execute(
                    studies_table.update()
                    .where(studies_table.c.study_name == name)
                    .values(settings_json=_dumps(settings, "settings"))
                )
        return settings

    def add_trial(self, study_name: str, record: TrialRecord) -> None:
        """Writes ``record`` into study ``study_name``, replacing any row with its trial number."""
        row = _to_row(study_name, record)
        key = (trials_table.c.study_name == study_name) & (
            trials_table.c.trial_number == record.trial_number
        )
        with self._engine.begin() as conn:
            # Updating the study row first locks it: writers of one study queue here, so the
            # delete + insert below never races another writer of the same trial.
            touched = conn.execute(
                studies_table.update()
                .where(studies_table.c.study_name == study_name)
                .values(updated_at=row["created_at"])
            )
            if touched.rowcount == 0:
                raise ValueError(
                    f"study {study_name!r} is not recorded; call save_study({study_name!r}, ...) "
                    "before add_trial."
                )
            conn.execute(trials_table.delete().where(key))
            conn.execute(trials_table.insert().values(row))

    def trials(self, study_name: str) -> list[TrialRecord]:
        """Returns the trials of ``study_name`` ordered by trial number."""
        query = (
            sa.select(trials_table)
            .where(trials_table.c.study_name == study_name)
            .order_by(trials_table.c.trial_number)
        )
        with self._engine.connect() as conn:
            return [_from_row(row._mapping) for row in conn.execute(query)]

    def find_by_hash(self, study_name: str, config_hash: str) -> TrialRecord | None:
        """Returns the earliest trial with ``config_hash`` that is not itself a duplicate."""
        query = (
            sa.select(trials_table)
            .where(
                trials_table.c.study_name == study_name,
                trials_table.c.config_hash == config_hash,
                trials_table.c.duplicate_of.is_(None),
            )
            .order_by(trials_table.c.trial_number)
            .limit(1)
        )
        with self._engine.connect() as conn:
            row = conn.execute(query).first()
        return None if row is None else _from_row(row._mapping)


def _to_row(study_name: str, record: TrialRecord) -> dict[str, Any]:
    row: dict[str, Any] = {"study_name": study_name}
    for field in dataclasses.fields(record):
        value = getattr(record, field.name)
        if field.name in _JSON_FIELDS:
            row[_JSON_FIELDS[field.name]] = _dumps(value, field.name)
        elif isinstance(value, float) and math.isnan(value):
            # SQLite stores NaN as NULL; make every backend read back the same.
            row[field.name] = None
        else:
            row[field.name] = value
    row["created_at"] = _utcnow() if record.created_at is None else _as_utc(record.created_at)
    for key, column in ENV_KEYS.items():
        value = record.environment.get(key)
        row[column] = None if value is None else str(value)[: ENV_COLUMN_LENGTHS[column]]
    return row


def _from_row(row: Any) -> TrialRecord:
    values: dict[str, Any] = {}
    for field in dataclasses.fields(TrialRecord):
        if field.name in _JSON_FIELDS:
            values[field.name] = json.loads(row[_JSON_FIELDS[field.name]])
        else:
            values[field.name] = row[field.name]
    values["created_at"] = _as_utc(row["created_at"])
    return TrialRecord(**values)


def _dumps(value: dict[str, Any], name: str) -> str:
    try:
        return json.dumps(value, sort_keys=True)
    except (TypeError, ValueError) as exc:
        raise TypeError(
            f"`{name}` must be JSON-serializable, but {exc}; convert such values "
            "(paths, tuples as keys, tensors) to str, int, float, bool, list or dict first."
        ) from None


def _utcnow() -> datetime:
    return datetime.now(timezone.utc)


def _as_utc(moment: datetime) -> datetime:
    # SQLite keeps no time zone; we only ever write UTC.
    if moment.tzinfo is None:
        return moment.replace(tzinfo=timezone.utc)
    return moment.astimezone(timezone.utc)


def _autotune_version() -> str:
    try:
        return importlib.metadata.version("autotune")
    except importlib.metadata.PackageNotFoundError:
        return "unknown"


def _create_engine(url: str) -> sa.Engine:
    try:
        parsed = make_url(url)
        engine = sa.create_engine(parsed, **_engine_options(parsed))
    except (ArgumentError, NoSuchModuleError, ImportError, ValueError) as exc:
        raise StorageError(
            f"Cannot open the records database {redact_url(url)}: {_reason(exc, url)} "
            "The storage URL must read dialect+driver://user:password@host:port/database, e.g. "
            "sqlite:///autotune.db or postgresql+psycopg://user:password@host:5432/db, and its "
            "driver must be installed (pip install 'psycopg[binary]' for postgresql+psycopg)."
        ) from None
    if parsed.get_backend_name() == "sqlite":
        event.listen(engine, "connect", _sqlite_on_connect)
    return engine


def _engine_options(url: URL) -> dict[str, Any]:
    if url.get_backend_name() == "sqlite":
        return {"connect_args": {"timeout": 30}}
    options: dict[str, Any] = {"pool_pre_ping": True}
    if url.get_driver_name() in ("psycopg", "psycopg2") and "connect_timeout" not in url.query:
        options["connect_args"] = {"connect_timeout": 10}
    return options


def _sqlite_on_connect(dbapi_connection: Any, _record: Any) -> None:
    cursor = dbapi_connection.cursor()
    # WAL lets readers (reports, Optuna) proceed while a worker writes; the mode is stored in the
    # file, so Optuna's own connections simply find it set.
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.execute("PRAGMA foreign_keys=ON")
    cursor.close()


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
            f"{_reason(exc, engine.url)} {remedy}"
        ) from None


def _reason(exc: BaseException, url: str | URL) -> str:
    original = exc.orig if isinstance(exc, DBAPIError) else exc
    # The first line says what failed; later ones repeat SQL or hints.
    reason = str(original).strip().split("\n", 1)[0].strip() or type(original).__name__
    password = _password(url)
    if password:
        reason = reason.replace(password, "***")
    return reason if reason.endswith((".", "?", "!")) else reason + "."


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
                    f"{redact_url(engine.url)}: {_reason(exc, engine.url)} The database user "
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
