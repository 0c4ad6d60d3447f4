"""autotune's tables, kept in the same database as Optuna's but under the ``autotune_`` prefix.

Everything here belongs to ``METADATA`` alone, so ``METADATA.create_all`` never touches
Optuna's tables (``studies``, ``trials``, ``alembic_version``, ...).
"""

from __future__ import annotations

import sqlalchemy as sa

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

trials_table = sa.Table(
    "autotune_trials",
    METADATA,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column(
        "study_name",
        sa.String(512),
        sa.ForeignKey(studies_table.c.study_name, ondelete="CASCADE"),
        nullable=False,
    ),
    sa.Column("trial_number", sa.Integer, nullable=False),
    sa.Column("optuna_trial_id", sa.Integer),
    sa.Column("baseline", sa.String(16)),
    sa.Column("config_json", sa.Text, nullable=False),
    sa.Column("config_hash", sa.String(32), nullable=False),
    sa.Column("brief", sa.Text, nullable=False),
    sa.Column("status", sa.String(16), nullable=False),
    sa.Column("failure_kind", sa.String(32)),
    sa.Column("error", sa.Text),
    sa.Column("error_tail", sa.Text),
    sa.Column("compile_time_s", sa.Float),
    sa.Column("latency_median_s", sa.Float),
    sa.Column("latency_iqr_s", sa.Float),
    sa.Column("eager_latency_median_s", sa.Float),
    sa.Column("speedup_vs_eager", sa.Float),
    sa.Column("speedup_vs_eager_q1", sa.Float),
    sa.Column("speedup_vs_eager_q3", sa.Float),
    sa.Column("speedup_vs_default", sa.Float),
    sa.Column("peak_memory_bytes", sa.BigInteger),
    sa.Column("graphs", sa.Integer),
    sa.Column("graph_breaks", sa.Integer),
    sa.Column("recompiles", sa.Integer),
    sa.Column("wall_time_s", sa.Float),
    sa.Column("duplicate_of", sa.Integer),
    *(sa.Column(name, sa.String(length)) for name, length in ENV_COLUMN_LENGTHS.items()),
    sa.Column("environment_json", sa.Text, nullable=False),
    sa.Column("result_json", sa.Text, nullable=False),
    sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
    # Its index leads with study_name, so it also serves every per-study lookup.
    sa.UniqueConstraint("study_name", "trial_number"),
    sa.Index(None, "study_name", "config_hash"),
)

TABLE_NAMES = tuple(sorted(METADATA.tables))
