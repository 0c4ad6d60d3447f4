from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path

import optuna
import pytest
import sqlalchemy as sa

from autotune.records import (
    SCHEMA_VERSION,
    TABLE_NAMES,
    RecordStore,
    StorageError,
    TrialRecord,
)

optuna.logging.set_verbosity(optuna.logging.WARNING)


def _tables(url: str) -> dict[str, list[str]]:
    engine = sa.create_engine(url)
    try:
        inspector = sa.inspect(engine)
        return {
            name: [column["name"] for column in inspector.get_columns(name)]
            for name in inspector.get_table_names()
        }
    finally:
        engine.dispose()


def _optuna_study(url: str, name: str) -> None:
    study = optuna.create_study(storage=url, study_name=name)
    study.optimize(lambda trial: trial.suggest_float("x", 0.0, 1.0), n_trials=2)


def _write_records(url: str, make: Callable[..., TrialRecord]) -> None:
    with RecordStore(url) as store:
        store.save_study("s", optuna_study_id=1, settings={"seed": 0})
        store.add_trial("s", make(0))


def test_optuna_first_then_records_leaves_optuna_tables_alone(
    db_url: str, new_record: Callable[..., TrialRecord]
) -> None:
    _optuna_study(db_url, "before")
    optuna_tables = _tables(db_url)

    _write_records(db_url, new_record)
    _optuna_study(db_url, "after")

    tables = _tables(db_url)
    assert set(tables) - set(optuna_tables) == set(TABLE_NAMES)
    assert {name: tables[name] for name in optuna_tables} == optuna_tables
    assert all(name.startswith("autotune_") for name in TABLE_NAMES)
    for name in ("before", "after"):
        assert len(optuna.load_study(study_name=name, storage=db_url).trials) == 2


def test_records_first_then_optuna_creates_its_tables(
    db_url: str, new_record: Callable[..., TrialRecord]
) -> None:
    _write_records(db_url, new_record)
    assert set(_tables(db_url)) == set(TABLE_NAMES)

    _optuna_study(db_url, "after")

    assert {"studies", "trials", "trial_params"} <= set(_tables(db_url))
    assert len(optuna.load_study(study_name="after", storage=db_url).trials) == 2
    with RecordStore(db_url) as store:
        assert [record.trial_number for record in store.trials("s")] == [0]


def test_schema_version_is_recorded(db_url: str) -> None:
    RecordStore(db_url).close()

    engine = sa.create_engine(db_url)
    with engine.connect() as conn:
        rows = conn.execute(sa.text("SELECT key, value FROM autotune_meta")).all()
    engine.dispose()
    assert [tuple(row) for row in rows] == [("schema_version", str(SCHEMA_VERSION))]


def test_newer_schema_version_is_refused(db_url: str) -> None:
    RecordStore(db_url).close()
    engine = sa.create_engine(db_url)
    with engine.begin() as conn:
        conn.execute(
            sa.text("UPDATE autotune_meta SET value = :v WHERE key = 'schema_version'"),
            {"v": str(SCHEMA_VERSION + 1)},
        )
    engine.dispose()

    with pytest.raises(StorageError, match=rf"schema_version '{SCHEMA_VERSION + 1}'.*[Uu]pgrade"):
        RecordStore(db_url)


def test_reopening_keeps_studies_and_trials(
    db_url: str, new_record: Callable[..., TrialRecord]
) -> None:
    _write_records(db_url, new_record)

    with RecordStore(db_url) as store:
        assert store.study_settings("s") == {"seed": 0}
        assert store.trials("s") != []


def test_a_database_written_by_the_first_schema_still_opens_and_gains_the_new_tables(
    tmp_path, capsys
) -> None:
    """tests/fixtures/databases/schema1.db was written by autotune before finalist rounds were
    recorded (commit b8a761a): a study "old" with its eager baseline."""
    from autotune.cli import main
    from autotune.storage import settings_from_dict

    path = tmp_path / "old.db"
    shutil.copy(Path(__file__).parents[1] / "fixtures" / "databases" / "schema1.db", path)
    url = f"sqlite:///{path}"
    with RecordStore(url) as store:
        settings = settings_from_dict(store.study_settings("old") or {})
        assert (settings.seed, settings.trials, settings.finalists) == (3, 20, 3)
        assert [r.baseline for r in store.trials("old")] == ["eager"]
        assert store.finalist_rounds("old") == []
    assert {"autotune_finalist_rounds", "autotune_finalist_results"} <= set(_tables(url))
    out = tmp_path / "best.json"
    assert main(["finalize", "--study", "old", "--storage", url, "--out", str(out)]) == 0
    assert "no compiled configuration was measured" in capsys.readouterr().out
    assert json.loads(out.read_text())["decision"] == "do_not_compile"
