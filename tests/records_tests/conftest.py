"""Backends for the records contract: a SQLite file always, PostgreSQL when configured.

PostgreSQL runs when AUTOTUNE_TEST_POSTGRES_URL is set (e.g.
postgresql+psycopg://postgres@127.0.0.1:5432/test). Each test gets a fresh schema, named through
the connection's search_path, so Optuna's tables and ours start empty and reruns never collide.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from postgres import needs_postgres

from autotune.records import RecordStore, TrialRecord

BACKENDS = ["sqlite", pytest.param("postgres", marks=needs_postgres)]


@pytest.fixture(params=BACKENDS)
def db_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A storage URL to an empty database on each backend."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'autotune.db'}"
    return str(request.getfixturevalue("postgres_url"))


@pytest.fixture
def store(db_url: str) -> Iterator[RecordStore]:
    """A RecordStore on ``db_url`` with study "s" recorded."""
    with RecordStore(db_url) as opened:
        opened.save_study("s", optuna_study_id=1, settings={"seed": 0})
        yield opened


def _make_record(trial_number: int, **overrides: Any) -> TrialRecord:
    """A successful trial record with a few fields set; ``overrides`` replace any of them."""
    fields: dict[str, Any] = {
        "trial_number": trial_number,
        "config": {"mode": "default", "trial": trial_number},
        "config_hash": f"{trial_number:032x}",
        "brief": f"mode=default #{trial_number}",
        "status": "ok",
        "latency_median_s": 0.001 * (trial_number + 1),
        "environment": {"host": "node-1", "torch": "2.13.0"},
        "result": {"ok": True},
    }
    fields.update(overrides)
    return TrialRecord(**fields)


@pytest.fixture
def new_record() -> Callable[..., TrialRecord]:
    """Makes records: ``new_record(3, status="failed", ...)``."""
    return _make_record
