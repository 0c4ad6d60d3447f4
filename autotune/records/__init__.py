"""autotune's SQL records: studies and trials as ``autotune_*`` tables in Optuna's database.

Example:
    >>> from autotune.records import RecordStore
    >>> with RecordStore("sqlite:///autotune.db") as store:  # doctest: +SKIP
    ...     store.trials("resnet")
"""

from __future__ import annotations

from autotune.records._engine import StorageError, engine_options, redact_url
from autotune.records._finalists import FinalistRound
from autotune.records._locks import Claim
from autotune.records._readonly import EmptyStorageError, read_only_url
from autotune.records._record import FAILURE_KINDS, TrialRecord
from autotune.records._rows import StudyRowError
from autotune.records._workers import Worker
from autotune.records.store import RecordStore
from autotune.records.tables import SCHEMA_VERSION, TABLE_NAMES

__all__ = [
    "FAILURE_KINDS",
    "Claim",
    "EmptyStorageError",
    "FinalistRound",
    "SCHEMA_VERSION",
    "TABLE_NAMES",
    "RecordStore",
    "StorageError",
    "StudyRowError",
    "TrialRecord",
    "Worker",
    "engine_options",
    "read_only_url",
    "redact_url",
]
