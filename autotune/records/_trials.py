"""The ``autotune_trials`` rows: one per trial, written in one transaction each."""

from __future__ import annotations

import dataclasses
import functools
import math
from typing import Any

import sqlalchemy as sa

from autotune.records._checked import OnBad, checked_rows, raw_times, trial_from_row
from autotune.records._record import ENV_KEYS, TrialRecord
from autotune.records._rows import HasEngine, as_utc, dumps, utcnow
from autotune.records.tables import ENV_COLUMN_LENGTHS, JSON_COLUMNS, studies_table, trials_table

# A row's columns, its creation time as the database holds it (see raw_times).
_COLUMNS = raw_times(trials_table)


class TrialRows(HasEngine):
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

    def remove_trial(self, study_name: str, trial_number: int) -> None:
        """Removes the record of trial ``trial_number`` (one Optuna failed meanwhile)."""
        with self._engine.begin() as conn:
            conn.execute(
                trials_table.delete().where(
                    (trials_table.c.study_name == study_name)
                    & (trials_table.c.trial_number == trial_number)
                )
            )

    def trials(self, study_name: str, on_bad: OnBad | None = None) -> list[TrialRecord]:
        """Returns the trials of ``study_name`` ordered by trial number.

        Raises:
            StudyRowError: A row breaks autotune's rules (with ``on_bad``: it is left out
                and the error handed to ``on_bad`` instead).
        """
        query = (
            sa.select(*_COLUMNS)
            .where(trials_table.c.study_name == study_name)
            .order_by(trials_table.c.trial_number)
        )
        return self._read(study_name, query, on_bad)

    def trial(self, study_name: str, trial_number: int) -> TrialRecord | None:
        """The record of trial ``trial_number``, if one was written."""
        query = sa.select(*_COLUMNS).where(
            trials_table.c.study_name == study_name,
            trials_table.c.trial_number == trial_number,
        )
        found = self._read(study_name, query)
        return found[0] if found else None

    def count_trials(
        self, study_name: str, searched_only: bool = True, duplicates: bool = True
    ) -> int:
        """How many trials ``study_name`` recorded (baselines excluded unless asked; with
        ``duplicates=False``, only the trials that measured their configuration: neither a
        reused one nor one that compiled no graph, ``no_graph``)."""
        query = sa.select(sa.func.count()).where(trials_table.c.study_name == study_name)
        if searched_only:
            query = query.where(trials_table.c.baseline.is_(None))
        if not duplicates:
            query = query.where(
                trials_table.c.duplicate_of.is_(None),
                sa.or_(
                    trials_table.c.failure_kind.is_(None),
                    trials_table.c.failure_kind != "no_graph",
                ),
            )
        with self._engine.connect() as conn:
            return int(conn.execute(query).scalar_one())

    def baselines(self, study_name: str) -> list[TrialRecord]:
        """The study's baseline trials (eager and default compile), in trial order."""
        query = (
            sa.select(*_COLUMNS)
            .where(trials_table.c.study_name == study_name, trials_table.c.baseline.isnot(None))
            .order_by(trials_table.c.trial_number)
        )
        return self._read(study_name, query)

    def find_by_hash(self, study_name: str, config_hash: str) -> TrialRecord | None:
        """Returns the earliest trial with ``config_hash`` that is not itself a duplicate."""
        query = (
            sa.select(*_COLUMNS)
            .where(
                trials_table.c.study_name == study_name,
                trials_table.c.config_hash == config_hash,
                trials_table.c.duplicate_of.is_(None),
            )
            .order_by(trials_table.c.trial_number)
            .limit(1)
        )
        found = self._read(study_name, query)
        return found[0] if found else None

    def _read(
        self, study_name: str, query: sa.Select[Any], on_bad: OnBad | None = None
    ) -> list[TrialRecord]:
        reader = functools.partial(trial_from_row, study_name)
        with self._engine.connect() as conn:
            return checked_rows(conn.execute(query), study_name, trials_table.name, reader, on_bad)


def _to_row(study_name: str, record: TrialRecord) -> dict[str, Any]:
    row: dict[str, Any] = {"study_name": study_name}
    for field in dataclasses.fields(record):
        value = getattr(record, field.name)
        if field.name in JSON_COLUMNS:
            row[JSON_COLUMNS[field.name]] = dumps(value, field.name)
        elif isinstance(value, float) and math.isnan(value):
            # SQLite stores NaN as NULL; make every backend read back the same.
            row[field.name] = None
        else:
            row[field.name] = value
    row["created_at"] = utcnow() if record.created_at is None else as_utc(record.created_at)
    for key, column in ENV_KEYS.items():
        value = record.environment.get(key)
        row[column] = None if value is None else str(value)[: ENV_COLUMN_LENGTHS[column]]
    return row
