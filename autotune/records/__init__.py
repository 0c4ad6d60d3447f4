"""autotune's SQL records: studies and trials as ``autotune_*`` tables in Optuna's database.

Example:
    >>> from autotune.records import RecordStore
    >>> with RecordStore("sqlite:///autotune.db") as store:  # doctest: +SKIP
    ...     store.trials("resnet")
"""

from __future__ import annotations

from autotune.records.export import export_parquet
from autotune.records.store import (
    FAILURE_KINDS,
    RecordStore,
    StorageError,
    TrialRecord,
    redact_url,
)
from autotune.records.tables import SCHEMA_VERSION, TABLE_NAMES

__all__ = [
    "FAILURE_KINDS",
    "SCHEMA_VERSION",
    "TABLE_NAMES",
    "RecordStore",
    "StorageError",
    "TrialRecord",
    "export_parquet",
    "redact_url",
]
