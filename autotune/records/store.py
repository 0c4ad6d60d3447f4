"""RecordStore: autotune's studies and trials in any SQLAlchemy database, beside Optuna's."""

from __future__ import annotations

import dataclasses
import importlib.metadata
import json
import math
from datetime import datetime, timezone
from types import TracebackType
from typing import Any

import sqlalchemy as sa
from sqlalchemy.exc import IntegrityError

from autotune.records._engine import open_engine
from autotune.records._record import ENV_KEYS, TrialRecord
from autotune.records.tables import ENV_COLUMN_LENGTHS, studies_table, trials_table

_JSON_FIELDS = {
    "config": "config_json",
    "environment": "environment_json",
    "result": "result_json",
}


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
        self._engine = open_engine(url)

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
