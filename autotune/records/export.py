"""Export a study's trials to Parquet (pyarrow is imported only when exporting)."""

from __future__ import annotations

import dataclasses
import json
import os
from typing import TYPE_CHECKING, Any

from autotune.records._record import ENV_KEYS, TrialRecord

if TYPE_CHECKING:
    from autotune.records.store import RecordStore

_JSON_FIELDS = ("config", "environment", "result")


def export_parquet(store: RecordStore, study_name: str, path: str | os.PathLike[str]) -> int:
    """Writes the trials of ``study_name`` to the Parquet file ``path``, one row per trial.

    Metrics and environment get a column each; ``config``, ``environment`` and ``result`` are
    JSON strings (``config_json``, ...). Returns the number of rows written.

    Example:
        >>> export_parquet(store, "resnet", "resnet.parquet")  # doctest: +SKIP
        12
    """
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq
    except ImportError:
        raise ImportError(
            "export_parquet needs pyarrow, which is not installed; run `pip install pyarrow`."
        ) from None
    schema = _schema(pa)
    rows = [_flatten(study_name, record) for record in store.trials(study_name)]
    pq.write_table(pa.Table.from_pylist(rows, schema=schema), os.fspath(path))
    return len(rows)


def _schema(pa: Any) -> Any:
    # TrialRecord's annotations are strings under `from __future__ import annotations`.
    types = {"int": pa.int64(), "float": pa.float64(), "str": pa.string()}
    columns = [("study_name", pa.string())]
    for field in dataclasses.fields(TrialRecord):
        if field.name not in ("created_at", *_JSON_FIELDS):
            columns.append((field.name, types[str(field.type).removesuffix(" | None")]))
    columns += [(column, pa.string()) for column in ENV_KEYS.values()]
    columns += [(f"{name}_json", pa.string()) for name in _JSON_FIELDS]
    columns.append(("created_at", pa.timestamp("us", tz="UTC")))
    return pa.schema(columns)


def _flatten(study_name: str, record: TrialRecord) -> dict[str, Any]:
    row: dict[str, Any] = {"study_name": study_name, **dataclasses.asdict(record)}
    for key, column in ENV_KEYS.items():
        value = record.environment.get(key)
        row[column] = None if value is None else str(value)
    for name in _JSON_FIELDS:
        row[f"{name}_json"] = json.dumps(row.pop(name), sort_keys=True)
    return row
