"""What every table's rows share: JSON columns, UTC times, the engine the store holds, and the
error a row that breaks autotune's rules raises when it is read back."""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import datetime, timezone
from typing import Any

import sqlalchemy as sa

from autotune.errors import UsageError
from autotune.settings import shown


class HasEngine:
    """A store's part that runs its queries on ``self._engine``."""

    _engine: sa.Engine
    # Tables a read-only store found missing (a database of an older autotune): reads of
    # them find nothing.
    _missing: frozenset[str] = frozenset()


class StudyRowError(UsageError):
    """A row of a study read back from the storage breaks the rules autotune writes it by: it
    was edited, or written by another tool (or another version). The message names the study,
    the row, every bad field with its value, and what to do.

    Attributes:
        study: The study's name (None: not known where the settings were checked).
        row: Which row, in words (``the row of trial 7 in autotune_trials``).
        problems: One ``field value: what is wrong`` per bad field.
    """

    def __init__(self, study: str | None, row: str, problems: Sequence[str], remedy: str) -> None:
        self.study, self.row, self.problems = study, row, list(problems)
        subject = f"Study {study!r}" if study is not None else "A study"
        super().__init__(
            f"{subject}: {row} breaks autotune's rules "
            f"({len(self.problems)} problem{'s' if len(self.problems) != 1 else ''}: "
            f"{'; '.join(self.problems)}). {remedy}"
        )


def json_column(text: Any, column: str, kind: type = dict) -> tuple[Any, str | None]:
    """The JSON value stored in ``column``, and None; or None and a problem saying why it
    cannot be read (not text, not valid JSON, or not a ``kind``: dict or list)."""
    if not isinstance(text, str):
        return None, f"{column} {shown(text)}: must be JSON text"
    try:
        value = json.loads(text)
    except (ValueError, RecursionError) as exc:
        why = exc.msg if isinstance(exc, json.JSONDecodeError) else type(exc).__name__
        return None, f"{column} {shown(text)}: not valid JSON ({why})"
    if not isinstance(value, kind):
        noun = "an object" if kind is dict else "a list"
        return None, f"{column} {shown(text)}: must be {noun} in JSON"
    return value, None


def dumps(value: Any, name: str) -> str:
    try:
        return json.dumps(value, sort_keys=True)
    except (TypeError, ValueError) as exc:
        raise TypeError(
            f"`{name}` must be JSON-serializable, but {exc}; convert such values "
            "(paths, tuples as keys, tensors) to str, int, float, bool, list or dict first."
        ) from None


def utcnow() -> datetime:
    return datetime.now(timezone.utc)


def as_utc(moment: datetime) -> datetime:
    # SQLite keeps no time zone; we only ever write UTC.
    if moment.tzinfo is None:
        return moment.replace(tzinfo=timezone.utc)
    return moment.astimezone(timezone.utc)
