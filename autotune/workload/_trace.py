"""A recorded traffic trace (``--traffic FILE``): a CSV or Parquet table of request shapes and
how often each came, as a serving log gives it. It is data, never code: a ``count`` (or
``weight``) column says how often, and every other column names an argument of the model file's
``get_request(device, **shape)``, which builds that request.

The trace is read once, where the study is created, into :data:`Traffic` (shapes and weights,
identical shapes merged): the study's settings hold it, so every trial and every worker sees the
same traffic without the file.
"""

from __future__ import annotations

import csv
import math
import re
from pathlib import Path
from typing import Any

from autotune.workload._common import WorkloadError, one_line

# How often each row's shape came: one of these columns, never both.
WEIGHT_COLUMNS = ("count", "weight")
# Distinct shapes a trace may hold: each is timed in every round of every trial.
MAX_SHAPES = 256
# What a shape's value may be, as read from CSV text or Parquet.
Value = int | float | str | bool
# [{"shape": {"batch": 4, "seq_len": 128}, "weight": 120.0}, ...]
Traffic = list[dict[str, Any]]

_INT = re.compile(r"[+-]?\d+")
_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def read_trace(path: str | Path) -> Traffic:
    """The shapes of the trace at ``path`` (``.csv`` or ``.parquet``) and their weights,
    identical shapes merged, in their first row's order.

    Raises:
        WorkloadError: The file cannot be read, or breaks the rules above (the rule, the value
            and the remedy said).
    """
    file = Path(path)
    rows = _parquet(file) if file.suffix.lower() in (".parquet", ".pq") else _csv(file)
    return traffic_of(rows, str(file))


def traffic_of(rows: list[dict[str, Any]], where: str) -> Traffic:
    """:data:`Traffic` from a table's rows (column to value), checked."""
    if not rows:
        raise WorkloadError(f"The traffic trace {where} has no rows; {_RULE}.")
    columns = list(rows[0])
    weights = [c for c in columns if c in WEIGHT_COLUMNS]
    if len(weights) != 1:
        raise WorkloadError(
            f"The traffic trace {where} has the columns {columns}; {_RULE}: exactly one of "
            f"{' or '.join(WEIGHT_COLUMNS)}."
        )
    weight_column = weights[0]
    bad = [c for c in columns if c != weight_column and not _IDENTIFIER.fullmatch(str(c))]
    if bad or len(columns) < 2:
        raise WorkloadError(
            f"The traffic trace {where} has the columns {columns}; {_RULE}: besides "
            f"{weight_column}, at least one column, each named like a Python argument."
        )
    merged: dict[tuple[tuple[str, Value], ...], float] = {}
    for number, row in enumerate(rows, start=2):  # as a spreadsheet numbers them
        weight = _weight(row.get(weight_column), f"{where}, row {number}")
        shape = tuple((c, _value(row.get(c), f"{where}, row {number}, column {c}"))
                      for c in columns if c != weight_column)  # fmt: skip
        merged[shape] = merged.get(shape, 0.0) + weight
    if len(merged) > MAX_SHAPES:
        raise WorkloadError(
            f"The traffic trace {where} holds {len(merged)} distinct shapes, but at most "
            f"{MAX_SHAPES} are timed (each in every round of every trial). Group them first, "
            "e.g. round sequence lengths up to a multiple of 16, and sum their counts."
        )
    traffic = [{"shape": dict(shape), "weight": w} for shape, w in merged.items() if w > 0]
    if not traffic:
        raise WorkloadError(
            f"The traffic trace {where} has no shape with a count above 0; {_RULE}."
        )
    return traffic


def shapes_problem(value: Any) -> str | None:
    """What is wrong with a stored :data:`Traffic` (None: nothing), for a study row's or a
    best-config file's check: the rule and the value that breaks it."""
    if not isinstance(value, list) or not value or len(value) > MAX_SHAPES:
        return f"must be a list of 1 to {MAX_SHAPES} shapes with weights, got {_short(value)}"
    for item in value:
        if not isinstance(item, dict) or set(item) != {"shape", "weight"}:
            return f"must hold {{'shape': {{...}}, 'weight': W}} entries, got {_short(item)}"
        shape, weight = item["shape"], item["weight"]
        if (
            isinstance(weight, bool)
            or not isinstance(weight, (int, float))
            or not (weight > 0 and math.isfinite(weight))
        ):
            return f"must hold positive weights, got {_short(weight)}"
        if (
            not isinstance(shape, dict)
            or not shape
            or not all(
                isinstance(k, str) and _IDENTIFIER.fullmatch(k) and isinstance(v, Value)
                for k, v in shape.items()
            )
        ):
            return f"must hold shapes of named numbers or text, got {_short(shape)}"
    return None


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


_RULE = (
    "a traffic trace is a table with a count (or weight) column, how often each shape came, "
    "and one column per argument of the model file's get_request(device, **shape)"
)


def _weight(value: Any, where: str) -> float:
    number = _value(value, where)
    if isinstance(number, bool) or not isinstance(number, (int, float)):
        raise WorkloadError(f"The count at {where} is {value!r}; {_RULE}: a number >= 0.")
    if not (number >= 0 and math.isfinite(number)):
        raise WorkloadError(f"The count at {where} is {value!r}; {_RULE}: a number >= 0.")
    return float(number)


def _value(value: Any, where: str) -> Value:
    """A cell as the shape's value: CSV text read as an int, else a float, else the text."""
    if isinstance(value, (bool, int, float)) and not (
        isinstance(value, float) and math.isnan(value)
    ):
        return value
    if isinstance(value, str) and value.strip():
        text = value.strip()
        if _INT.fullmatch(text):
            return int(text)
        try:
            number = float(text)
        except ValueError:
            return text
        return number if math.isfinite(number) else text
    raise WorkloadError(f"The cell at {where} is empty or not a value ({value!r}); {_RULE}.")


def _csv(file: Path) -> list[dict[str, Any]]:
    try:
        with file.open(newline="", encoding="utf-8") as handle:
            reader = csv.DictReader(handle)
            rows = [dict(row) for row in reader]
            columns = reader.fieldnames or []
    except (OSError, UnicodeDecodeError, csv.Error) as exc:
        raise WorkloadError(
            f"The traffic trace {file} cannot be read: {one_line(exc)}; pass a CSV or Parquet "
            "file."
        ) from exc
    short = next((i for i, row in enumerate(rows, start=2) if None in row.values()), None)
    if short is not None or any(None in row for row in rows):
        raise WorkloadError(
            f"The traffic trace {file} has a row with more or fewer cells than its header "
            f"{columns} (row {short or '?'}); {_RULE}."
        )
    return rows


def _parquet(file: Path) -> list[dict[str, Any]]:
    try:
        import pyarrow.parquet as pq

        return list(pq.read_table(file).to_pylist())
    except Exception as exc:  # noqa: BLE001 - any unreadable file: one paragraph
        raise WorkloadError(
            f"The traffic trace {file} cannot be read as Parquet: {one_line(exc)}; pass a "
            "CSV or Parquet file."
        ) from exc
