"""Rows read back, checked: a trial or a finalist round whose columns break the rules autotune
writes them by (edited by hand, written by another tool) is one :class:`StudyRowError` naming
the study, the row and every bad column, never a traceback from deep inside a report.

A reader that would rather go on without such a row (a report) passes ``on_bad``: the row is
left out and the error handed to it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from datetime import datetime
from typing import Any, TypeVar

import sqlalchemy as sa

from autotune.records._record import TrialRecord
from autotune.records._rows import StudyRowError, as_utc, json_column, shown
from autotune.records.tables import JSON_COLUMNS

T = TypeVar("T")
OnBad = Callable[[StudyRowError], None]
_KINDS: dict[str, tuple[tuple[type, ...], str]] = {
    "int": ((int,), "a whole number"),
    "float": ((int, float), "a number"),
    "str": ((str,), "text"),
}
# A result whose rows keep failing to convert is not advancing: give up rather than spin.
_MAX_UNREADABLE = 1000


def remedy(table: str, key: str) -> str:
    return (
        f"The row was edited, or written by another tool or autotune version: fix it, or "
        f"delete it (DELETE FROM {table} WHERE {key}) and run the study again to measure "
        "what it held."
    )


def checked_rows(
    result: sa.Result[Any],
    study: str,
    table: str,
    convert: Callable[[Mapping[Any, Any]], T],
    on_bad: OnBad | None = None,
) -> list[T]:
    """``convert`` of every row of ``result``; a row it refuses (or that SQLAlchemy cannot
    read: a time column holding text) raises its :class:`StudyRowError`, or with ``on_bad``,
    is left out and handed to it."""
    rows: list[T] = []
    unreadable = 0
    while True:
        try:
            row = result.fetchone()
        except (ValueError, TypeError, OverflowError) as exc:
            unreadable += 1
            problem = f"a column cannot be read ({exc})"
            find = (
                f"The row was edited, or written by another tool or autotune version: find it "
                f"(SELECT * FROM {table} WHERE study_name = {study!r}) and fix or delete it."
            )
            error = StudyRowError(study, f"a row of {table}", [problem], find)
            if on_bad is None or unreadable > _MAX_UNREADABLE:
                raise error from None
            on_bad(error)
            continue
        if row is None:
            return rows
        try:
            rows.append(convert(row._mapping))
        except StudyRowError as error:
            if on_bad is None:
                raise
            on_bad(error)


def trial_from_row(study: str, row: Mapping[Any, Any]) -> TrialRecord:
    """The :class:`TrialRecord` a row of ``autotune_trials`` holds.

    Raises:
        StudyRowError: A JSON column is not a JSON object, a column holds a value of the
            wrong type, or the record breaks its own rules (status, failure kind, ...).
    """
    values: dict[str, Any] = {}
    problems = []
    for field in dataclasses.fields(TrialRecord):
        if field.name == "created_at":
            continue
        if field.name in JSON_COLUMNS:
            column = JSON_COLUMNS[field.name]
            values[field.name], problem = json_column(row[column], column)
        else:
            values[field.name] = row[field.name]
            problem = type_problem(field.name, str(field.type), row[field.name])
        if problem:
            problems.append(problem)
    created_at, problem = time_column(row["created_at"], "created_at")
    problems += [problem] if problem else []
    if not problems:
        try:
            return TrialRecord(**values, created_at=created_at)
        except ValueError as exc:
            problems.append(str(exc).rstrip("."))
    number = row["trial_number"]
    where = f"study_name = {study!r} AND trial_number = {number!r}"
    row_name = f"the row of trial {shown(number)} in autotune_trials"
    raise StudyRowError(study, row_name, problems, remedy("autotune_trials", where))


def raw_times(table: sa.Table) -> list[sa.ColumnElement[Any]]:
    """``table``'s columns to select, its times as the text the database holds (SQLite): read
    by :func:`time_column`, so that a bad one names its row instead of failing the query."""
    return [
        sa.type_coerce(c, sa.String).label(c.name) if isinstance(c.type, sa.DateTime) else c
        for c in table.columns
    ]


def time_column(value: Any, name: str, optional: bool = False) -> tuple[Any, str | None]:
    """The UTC time a column read by :func:`raw_times` holds, and None; or None and a problem."""
    if value is None and optional:
        return None, None
    if isinstance(value, str):
        try:
            value = datetime.fromisoformat(value)
        except ValueError:
            pass
    if not isinstance(value, datetime):
        return None, f"{name} {shown(value)}: must be a time"
    return as_utc(value), None


def type_problem(name: str, annotation: str, value: Any) -> str | None:
    """What is wrong with ``value`` as a column annotated ``int``, ``float | None``, ...;
    None when nothing is."""
    optional = annotation.endswith(" | None")
    types, noun = _KINDS[annotation.removesuffix(" | None")]
    if value is None and optional:
        return None
    if isinstance(value, types) and not isinstance(value, bool):
        return None
    return f"{name} {shown(value)}: must be {noun}{' or null' if optional else ''}"
