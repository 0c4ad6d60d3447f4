"""The commands that read a storage (studies, report, export) never create tables or write:
an empty database stays byte-identical and table-less, a SQLite path that does not exist is
not created, and Optuna's tables are not created either."""

from __future__ import annotations

from pathlib import Path

import pytest
import sqlalchemy as sa
from postgres import needs_postgres

from autotune.cli import main


def _argv(command: str, storage: str, tmp_path: Path) -> list[str]:
    return {
        "studies": ["studies", "--storage", storage],
        "report": ["report", "--study", "x", "--storage", storage],
        "export": ["export", "--study", "x", "--storage", storage,
                   "--out", str(tmp_path / "f.parquet")],
    }[command]  # fmt: skip


def _tables(url: str) -> list[str]:
    engine = sa.create_engine(url)
    try:
        return sorted(sa.inspect(engine).get_table_names())
    finally:
        engine.dispose()


COMMANDS = ["studies", "report", "export"]


@pytest.mark.parametrize("command", COMMANDS)
def test_an_empty_sqlite_file_stays_byte_identical_and_table_less(tmp_path, capsys, command):
    path = tmp_path / "empty.db"
    path.touch()
    storage = f"sqlite:///{path}"

    code = main(_argv(command, storage, tmp_path))

    out, err = capsys.readouterr()
    assert path.read_bytes() == b"" and _tables(storage) == []
    assert sorted(p.name for p in tmp_path.iterdir()) == ["empty.db"]
    if command == "studies":
        assert code == 0 and "No autotune studies in this storage" in out
    else:
        assert code == 2 and "holds no autotune study" in err and "Traceback" not in err


@pytest.mark.parametrize("command", COMMANDS)
def test_a_missing_sqlite_file_is_not_created(tmp_path, capsys, command, monkeypatch):
    monkeypatch.chdir(tmp_path)
    path = tmp_path / "missing.db"

    assert main(_argv(command, f"sqlite:///{path}", tmp_path)) == 2
    assert main(_argv(command, "sqlite:///relative.db", tmp_path)) == 2

    err = capsys.readouterr().err
    assert err.count("which does not exist") == 2
    assert list(tmp_path.iterdir()) == []


def test_the_default_storage_is_not_created_by_a_reader(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("AUTOTUNE_STORAGE", raising=False)

    assert main(["studies"]) == 2

    assert "sqlite:///autotune.db names the SQLite file autotune.db" in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []


def test_a_database_with_other_tables_gets_none_of_autotunes_or_optunas(tmp_path, capsys):
    storage = f"sqlite:///{tmp_path / 'other.db'}"
    engine = sa.create_engine(storage)
    with engine.begin() as conn:
        conn.execute(sa.text("CREATE TABLE inventory (id INTEGER)"))
    engine.dispose()
    before = (tmp_path / "other.db").read_bytes()

    for command in COMMANDS:
        main(_argv(command, storage, tmp_path))

    assert _tables(storage) == ["inventory"]
    assert (tmp_path / "other.db").read_bytes() == before


@pytest.mark.parametrize("command", COMMANDS)
@pytest.mark.parametrize("_pg", [pytest.param(None, marks=needs_postgres)])
def test_an_empty_postgresql_schema_stays_empty(postgres_url, tmp_path, capsys, command, _pg):
    code = main(_argv(command, postgres_url, tmp_path))

    assert code == (0 if command == "studies" else 2)
    assert _tables(postgres_url) == []


def test_a_study_without_optunas_tables_is_reported_missing_not_given_them(tmp_path, capsys):
    from autotune.records import RecordStore
    from autotune.settings import StudySettings

    storage = f"sqlite:///{tmp_path / 'records-only.db'}"
    settings = StudySettings(model_path="/m.py", device="cpu", space={}, space_hash="h",
                             torch_version="2.13.0")  # fmt: skip
    with RecordStore(storage) as store:
        store.save_study("x", optuna_study_id=1, settings=settings.to_dict())
    tables = _tables(storage)

    assert main(_argv("report", storage, tmp_path)) == 2

    err = capsys.readouterr().err
    assert "holds no Optuna study: Optuna's tables studies, trials" in err
    assert "Traceback" not in err and _tables(storage) == tables
