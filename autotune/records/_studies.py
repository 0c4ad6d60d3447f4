"""The ``autotune_studies`` rows: one per study, holding every setting a trial needs."""

from __future__ import annotations

import importlib.metadata
from datetime import datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.exc import IntegrityError

from autotune.records._rows import HasEngine, StudyRowError, as_utc, dumps, json_column, utcnow
from autotune.records.tables import studies_table

SETTINGS_ROW = "the row of its settings (autotune_studies.settings_json)"
SETTINGS_REMEDY = (
    "The row was edited, or written by another tool or autotune version: fix these fields in "
    "its settings_json, or recreate the study (`optuna delete-study` with its name and "
    "storage, then `autotune search` with the options it was created with)."
)


class StudyRows(HasEngine):
    def save_study(
        self, name: str, optuna_study_id: int, settings: dict[str, Any]
    ) -> dict[str, Any]:
        """Records study ``name`` unless it exists, and returns its stored settings.

        A new study stores ``settings``; an existing one keeps what it has, and the caller
        compares what comes back with what it wanted.
        """
        return self.open_study(name, optuna_study_id, settings)[0]

    def open_study(
        self, name: str, optuna_study_id: int, settings: dict[str, Any]
    ) -> tuple[dict[str, Any], bool]:
        """Like :meth:`save_study`, and says whether this call created the study.

        The rows belong to Optuna's study ``optuna_study_id``: when the stored study has
        another Optuna id, the Optuna study of that name was deleted and made anew, so the old
        rows (trials, finalists, claims, workers) are deleted and the study starts empty.
        """
        settings_json = dumps(settings, "settings")
        now = utcnow()
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
            return settings_dict(name, settings_json), True
        except IntegrityError:
            pass
        with self._engine.begin() as conn:
            stored = conn.execute(
                sa.select(studies_table.c.optuna_study_id, studies_table.c.settings_json).where(
                    studies_table.c.study_name == name
                )
            ).first()
            if stored is not None and stored.optuna_study_id == optuna_study_id:
                return settings_dict(name, stored.settings_json), False
            # Its Optuna study was deleted (and made anew): the old rows go with it.
            conn.execute(studies_table.delete().where(studies_table.c.study_name == name))
            conn.execute(studies_table.insert().values(row))
        return settings_dict(name, settings_json), True

    def study_settings(self, name: str) -> dict[str, Any] | None:
        """Returns the stored settings of study ``name``, or None if it is not recorded.

        Raises:
            StudyRowError: They are not a JSON object (see
                :func:`autotune.storage.settings_from_row` for the check of each
                setting).
        """
        text = self.study_settings_json(name)
        return None if text is None else settings_dict(name, text)

    def study_settings_json(self, name: str) -> str | None:
        """The stored settings of study ``name`` as their JSON text, unread; None if it is not
        recorded."""
        query = sa.select(studies_table.c.settings_json).where(studies_table.c.study_name == name)
        with self._engine.connect() as conn:
            text = conn.execute(query).scalar_one_or_none()
        return None if text is None else str(text)

    def study_names(self) -> list[str]:
        """The names of the studies recorded here, oldest first."""
        query = sa.select(studies_table.c.study_name).order_by(studies_table.c.created_at)
        with self._engine.connect() as conn:
            return [str(name) for name in conn.execute(query).scalars()]

    def study_created(self, name: str) -> tuple[datetime | None, str]:
        """When study ``name`` was created (UTC) and by which autotune version; ``(None, "")``
        if it is not recorded."""
        query = sa.select(studies_table.c.created_at, studies_table.c.autotune_version).where(
            studies_table.c.study_name == name
        )
        with self._engine.connect() as conn:
            row = conn.execute(query).first()
        if row is None:
            return None, ""
        return as_utc(row.created_at), str(row.autotune_version)

    def settle_study_setting(self, name: str, key: str, value: Any) -> dict[str, Any]:
        """Stores ``settings[key] = value`` for study ``name`` unless another process stored
        one first (first write wins), and returns the stored settings either way."""
        with self._engine.begin() as conn:
            settings = _locked_settings(conn, name)
            if settings.get(key) is None:
                settings[key] = value
                _write_settings(conn, name, settings)
        return settings

    def update_study_settings(self, name: str, changes: dict[str, Any]) -> dict[str, Any]:
        """Stores ``changes`` over the settings of study ``name`` (a later run changed what may
        change, e.g. its trial budget) and returns the stored settings."""
        with self._engine.begin() as conn:
            settings = StoredSettings(name, {**_locked_settings(conn, name), **changes})
            _write_settings(conn, name, settings)
        return settings


def _locked_settings(conn: sa.Connection, name: str) -> StoredSettings:
    # Touching the row first locks it (as in add_trial): racing writers queue here.
    touched = conn.execute(
        studies_table.update()
        .where(studies_table.c.study_name == name)
        .values(updated_at=utcnow())
    )
    if touched.rowcount == 0:
        raise ValueError(f"study {name!r} is not recorded; call save_study({name!r}, ...) first.")
    query = sa.select(studies_table.c.settings_json).where(studies_table.c.study_name == name)
    return settings_dict(name, conn.execute(query).scalar_one())


class StoredSettings(dict[str, Any]):
    """A study's settings as read from its row: a dict that knows whose they are, so that
    :func:`autotune.storage.settings_from_dict` names the study when they break a rule."""

    def __init__(self, study: str, settings: dict[str, Any]) -> None:
        super().__init__(settings)
        self.study = study


def settings_dict(name: str, text: Any) -> StoredSettings:
    """The JSON object stored as study ``name``'s settings; a :class:`StudyRowError` when the
    text is not one."""
    value, problem = json_column(text, "settings_json")
    if problem is not None:
        raise StudyRowError(name, SETTINGS_ROW, [problem], SETTINGS_REMEDY)
    return StoredSettings(name, value)


def _write_settings(conn: sa.Connection, name: str, settings: dict[str, Any]) -> None:
    conn.execute(
        studies_table.update()
        .where(studies_table.c.study_name == name)
        .values(settings_json=dumps(settings, "settings"))
    )


def _autotune_version() -> str:
    try:
        return importlib.metadata.version("autotune")
    except importlib.metadata.PackageNotFoundError:
        return "unknown"
