"""autotune's SQL records: studies and trials as ``autotune_*`` tables in Optuna's database.

Example:
    >>> from autotune.records import RecordStore
    >>> with RecordStore("sqlite:///autotune.db") as store:  # doctest: +SKIP
    ...     store.trials("resnet")
"""

from __future__ import annotations

from autotune.records._engine import (
    POSTGRES_INSTALL,
    StorageError,
    create_engine,
    engine_options,
    parse_url,
    ping,
    reason,
    redact_url,
)
from autotune.records._finalists import FinalistRound
from autotune.records._locks import Claim
from autotune.records._readonly import EmptyStorageError, read_only_url
from autotune.records._record import ENV_KEYS, FAILURE_KINDS, TrialRecord
from autotune.records._rows import StudyRowError, shown
from autotune.records._studies import SETTINGS_REMEDY, SETTINGS_ROW, settings_dict
from autotune.records._workers import Worker
from autotune.records.store import RecordStore
from autotune.records.tables import SCHEMA_VERSION, TABLE_NAMES

__all__ = [
    "ENV_KEYS",
    "FAILURE_KINDS",
    "POSTGRES_INSTALL",
    "SCHEMA_VERSION",
    "SETTINGS_REMEDY",
    "SETTINGS_ROW",
    "TABLE_NAMES",
    "create_engine",
    "engine_options",
    "parse_url",
    "ping",
    "read_only_url",
    "reason",
    "redact_url",
    "settings_dict",
    "shown",
    "Claim",
    "EmptyStorageError",
    "FinalistRound",
    "RecordStore",
    "StorageError",
    "StudyRowError",
    "TrialRecord",
    "Worker",
]
