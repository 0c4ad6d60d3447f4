"""autotune's tables, kept in the same database as Optuna's but under the ``autotune_`` prefix.

Everything here belongs to ``METADATA`` alone, so ``METADATA.create_all`` never touches
Optuna's tables (``studies``, ``trials``, ``alembic_version``, ...).
"""

from __future__ import annotations

import dataclasses
from typing import Any

import sqlalchemy as sa

from autotune.records._record import TrialRecord

SCHEMA_VERSION = 1
TABLE_PREFIX = "autotune_"

# Constraint and index names are per schema in PostgreSQL: derive them from our prefixed table
# names so they can never collide with Optuna's.
METADATA = sa.MetaData(
    naming_convention={
        "ix": "ix_%(table_name)s_%(column_0_N_name)s",
        "uq": "uq_%(table_name)s_%(column_0_N_name)s",
        "fk": "fk_%(table_name)s_%(column_0_name)s",
        "pk": "pk_%(table_name)s",
    }
)

meta_table = sa.Table(
    "autotune_meta",
    METADATA,
    sa.Column("key", sa.String(64), primary_key=True),
    sa.Column("value", sa.Text, nullable=False),
)

studies_table = sa.Table(
    "autotune_studies",
    METADATA,
    sa.Column("study_name", sa.String(512), primary_key=True),
    sa.Column("optuna_study_id", sa.Integer, nullable=False),
    sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
    sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
    sa.Column("autotune_version", sa.String(64), nullable=False),
    sa.Column("settings_json", sa.Text, nullable=False),
)

# Lengths of the environment columns; longer values are cut to fit.
ENV_COLUMN_LENGTHS = {
    "host": 255,
    "torch_version": 64,
    "triton_version": 64,
    "cuda_version": 64,
    "driver_version": 64,
    "device_name": 255,
    "cpu_model": 255,
    "python_version": 64,
}

# TrialRecord is the one definition of a trial's row: each of its plain fields is a column of
# the SQL type its annotation names; these fields differ from the plain mapping.
_TRIAL_COLUMN_TYPES: dict[str, Any] = {
    "config_hash": sa.String(32),
    "status": sa.String(16),
    "baseline": sa.String(16),
    "failure_kind": sa.String(32),
    "peak_memory_bytes": sa.BigInteger,
}
_PLAIN_TYPES = {"int": sa.Integer, "float": sa.Float, "str": sa.Text}
JSON_COLUMNS = {
    "config": "config_json",
    "environment": "environment_json",
    "result": "result_json",
}


def _trial_columns() -> list[sa.Column[Any]]:
    columns = []
    for f in dataclasses.fields(TrialRecord):
        if f.name in JSON_COLUMNS or f.name == "created_at":
            continue
        annotation = str(f.type)
        optional = annotation.endswith(" | None")
        kind = _TRIAL_COLUMN_TYPES.get(f.name, _PLAIN_TYPES[annotation.removesuffix(" | None")])
        columns.append(sa.Column(f.name, kind, nullable=optional))
    return columns


def _study_column(primary_key: bool = False) -> sa.Column[str]:
    """The study a row belongs to: rows go when their study is deleted."""
    return sa.Column(
        "study_name",
        sa.String(512),
        sa.ForeignKey(studies_table.c.study_name, ondelete="CASCADE"),
        nullable=False,
        primary_key=primary_key,
    )


trials_table = sa.Table(
    "autotune_trials",
    METADATA,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    _study_column(),
    *_trial_columns(),
    *(sa.Column(name, sa.String(length)) for name, length in ENV_COLUMN_LENGTHS.items()),
    *(sa.Column(column, sa.Text, nullable=False) for column in JSON_COLUMNS.values()),
    sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
    # Its index leads with study_name, so it also serves every per-study lookup.
    sa.UniqueConstraint("study_name", "trial_number"),
    sa.Index(None, "study_name", "config_hash"),
)

# Work that one process of a study must do alone (probe the model's parts, run the finalists):
# the process that inserts the row owns it, keeps its heartbeat fresh, and marks it done; a
# claim whose heartbeat went stale (its owner died) may be taken over.
claims_table = sa.Table(
    "autotune_claims",
    METADATA,
    _study_column(primary_key=True),
    sa.Column("name", sa.String(64), primary_key=True),
    sa.Column("owner", sa.String(255), nullable=False),
    sa.Column("claimed_at", sa.DateTime(timezone=True), nullable=False),
    sa.Column("heartbeat_at", sa.DateTime(timezone=True), nullable=False),
    sa.Column("done_at", sa.DateTime(timezone=True)),
)

# Every process that ran trials of a study: who and where, while it ran and how it ended.
workers_table = sa.Table(
    "autotune_workers",
    METADATA,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    _study_column(),
    sa.Column("host", sa.String(255), nullable=False),
    sa.Column("pid", sa.Integer, nullable=False),
    sa.Column("gpu", sa.String(64)),  # CUDA_VISIBLE_DEVICES of the worker, if set
    sa.Column("device", sa.String(32), nullable=False),
    sa.Column("started_at", sa.DateTime(timezone=True), nullable=False),
    sa.Column("heartbeat_at", sa.DateTime(timezone=True), nullable=False),
    sa.Column("stopped_at", sa.DateTime(timezone=True)),
    sa.Column("ended", sa.String(255)),  # why it stopped: budget met, timeout, signal, error
    sa.Index(None, "study_name"),
)

# Finalists: the best configs re-measured cold and warm in fresh processes before the winner is
# chosen, kept so that a later run (or `autotune finalize`) decides from them again.
finalist_rounds_table = sa.Table(
    "autotune_finalist_rounds",
    METADATA,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    _study_column(),
    sa.Column("finalists_json", sa.Text, nullable=False),  # trial numbers, in the order run
    sa.Column("state", sa.String(16), nullable=False),  # measuring | done
    sa.Column("owner", sa.String(255), nullable=False),  # host:pid that measures them
    sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
    sa.Column("finished_at", sa.DateTime(timezone=True)),
    sa.Index(None, "study_name"),
)

finalist_results_table = sa.Table(
    "autotune_finalist_results",
    METADATA,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column(
        "round_id",
        sa.Integer,
        sa.ForeignKey(finalist_rounds_table.c.id, ondelete="CASCADE"),
        nullable=False,
    ),
    sa.Column("trial_number", sa.Integer, nullable=False),
    sa.Column("run", sa.String(8), nullable=False),  # cold | warm
    sa.Column("result_json", sa.Text, nullable=False),
    sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
    sa.UniqueConstraint("round_id", "trial_number", "run"),
)

TABLE_NAMES = tuple(sorted(METADATA.tables))
