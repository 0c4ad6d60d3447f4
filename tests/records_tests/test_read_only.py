"""RecordStore(url, read_only=True): what reports read through. It creates nothing, writes
nothing, refuses a SQLite file that is not there rather than creating it, and says when a
database holds no autotune tables."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
import sqlalchemy as sa

from autotune.records import (
    EmptyStorageError,
    RecordStore,
    StorageError,
    TrialRecord,
)


def _tables(url: str) -> list[str]:
    engine = sa.create_engine(url)
    try:
        return sorted(sa.inspect(engine).get_table_names())
    finally:
        engine.dispose()


def test_an_empty_database_holds_no_study_and_stays_empty(db_url: str, tmp_path: Path) -> None:
    path = tmp_path / "autotune.db"
    if db_url.startswith("sqlite"):
        path.touch()

    with pytest.raises(EmptyStorageError, match="holds no autotune study"):
        RecordStore(db_url, read_only=True)

    assert _tables(db_url) == []
    if db_url.startswith("sqlite"):
        assert path.read_bytes() == b""


def test_a_missing_sqlite_file_is_refused_not_created(tmp_path: Path) -> None:
    path = tmp_path / "typo.db"

    with pytest.raises(StorageError, match=r"names the SQLite file .*typo.db, which does not"):
        RecordStore(f"sqlite:///{path}", read_only=True)

    assert not path.exists()


def test_a_read_only_store_reads_and_cannot_write(
    db_url: str, new_record: Callable[..., TrialRecord]
) -> None:
    with RecordStore(db_url) as store:
        store.save_study("s", optuna_study_id=1, settings={"seed": 0})
        store.add_trial("s", new_record(0))

    with RecordStore(db_url, read_only=True) as reader:
        assert reader.study_names() == ["s"] and len(reader.trials("s")) == 1
        with pytest.raises(sa.exc.DBAPIError, match="(?i)read-?only"):
            reader.add_trial("s", new_record(1))
        assert len(reader.trials("s")) == 1


def test_a_database_of_an_older_autotune_is_read_as_it_is(tmp_path: Path) -> None:
    """schema1.db predates the finalist, claim and worker tables: a reader finds none of
    them, and adds none."""
    path = tmp_path / "old.db"
    shutil.copy(Path(__file__).parents[1] / "fixtures" / "databases" / "schema1.db", path)
    url = f"sqlite:///{path}"
    before, tables = path.read_bytes(), _tables(url)

    with RecordStore(url, read_only=True) as store:
        assert [r.baseline for r in store.trials("old")] == ["eager"]
        assert store.finalist_rounds("old") == [] and store.workers("old") == []
        assert store.claim_of("old", "scope") is None

    assert _tables(url) == tables and path.read_bytes() == before


def test_a_database_of_a_newer_autotune_is_refused(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'new.db'}"
    RecordStore(url).close()
    engine = sa.create_engine(url)
    with engine.begin() as conn:
        conn.execute(sa.text("UPDATE autotune_meta SET value = '99'"))
    engine.dispose()

    with pytest.raises(StorageError, match="schema_version '99'"):
        RecordStore(url, read_only=True)
