"""Faults a user can cause end in one paragraph and exit 2, never a traceback (issue 41, item
8): a damaged or read-only database in the read commands and the search, an output that is a
directory, a full disk under every writing command (injected at the fsync, where a real full
disk shows; the file written before is kept whole)."""

from __future__ import annotations

import errno
import os
from pathlib import Path

import homes
import pytest
import scripted
from postgres import fresh_schema, needs_postgres

from autotune import _atomic
from autotune.cli import main


def _said(capsys: pytest.CaptureFixture[str]) -> str:
    err = capsys.readouterr().err
    assert "Traceback" not in err and err.startswith("autotune: error: "), err
    assert err.count("\n") == 1, err  # one paragraph
    return err


@pytest.fixture
def studied(tmp_path, model_file, space_file, monkeypatch, capsys) -> str:
    scripted.use(monkeypatch, scripted.by_config())
    homes.fresh(monkeypatch, tmp_path)
    storage = f"sqlite:///{tmp_path}/s.db"
    assert (
        main(
            [
                "search",
                model_file("tiny"),
                "--storage",
                storage,
                "--study",
                "s",
                "--space",
                space_file("aot_eager"),
                "--scope",
                "whole",
                "--device",
                "cpu",
                "--trials",
                "2",
                "--finalists",
                "0",
                "--out",
                str(tmp_path / "best.json"),
            ]
        )
        == 0
    )
    capsys.readouterr()
    return storage


@pytest.mark.parametrize("command", [["report"], ["studies"], ["export", "--out", "x.parquet"]])
def test_a_damaged_sqlite_file_is_one_paragraph_in_every_read_command(tmp_path, capsys, command):
    damaged = tmp_path / "autotune.db"
    damaged.write_bytes(os.urandom(4096))
    os.chdir(tmp_path)
    assert main([*command, "--storage", f"sqlite:///{damaged}"]) == 2
    err = _said(capsys)
    assert "the storage failed: file is not a database" in err
    assert "restore it from a copy, or name another --storage" in err


def test_a_truncated_study_database_is_one_paragraph(studied, tmp_path, capsys):
    path = Path(studied.removeprefix("sqlite:///"))
    main(["report", "--storage", studied, "--study", "s"])  # the last reader checkpoints
    capsys.readouterr()
    for journal in path.parent.glob(f"{path.name}-*"):
        journal.unlink()
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])  # a copy cut short
    assert main(["report", "--storage", studied, "--study", "s"]) == 2
    assert "the storage failed: " in _said(capsys)


def test_a_read_only_database_refuses_a_search_in_one_paragraph(
    studied, tmp_path, model_file, space_file, capsys
):
    path = studied.removeprefix("sqlite:///")
    read_only = f"sqlite:///file:{path}?mode=ro&uri=true"
    assert main(["report", "--storage", read_only, "--study", "s"]) == 0  # reading is fine
    capsys.readouterr()
    code = main(["search", model_file("tiny"), "--storage", read_only, "--study", "s",
                 "--space", space_file("aot_eager"), "--scope", "whole", "--device", "cpu",
                 "--trials", "3", "--finalists", "0"])  # fmt: skip
    assert code == 2
    assert "database is read-only here (a read-only mount" in _said(capsys)


def test_an_output_that_is_a_directory_is_one_paragraph(studied, tmp_path, capsys):
    folder = tmp_path / "out"
    folder.mkdir()
    for argv in (["export", "--out", str(folder)],
                 ["report", "--html", str(folder)]):  # fmt: skip
        assert main([*argv, "--storage", studied, "--study", "s"]) == 2, argv
        err = _said(capsys)
        assert f"cannot write {folder}: it is a directory, where a file goes" in err
    assert folder.is_dir() and not any(folder.iterdir())


def test_a_full_disk_is_one_paragraph_and_keeps_what_was_written(
    studied, tmp_path, model_file, monkeypatch, capsys
):
    def full(path: Path) -> None:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(path))

    best = tmp_path / "best.json"
    before = best.read_bytes()
    (tmp_path / "t.parquet").write_bytes(b"the last export")
    monkeypatch.setattr(_atomic, "_fsync_file", full)
    for argv in (
        ["finalize", "--out", str(best), "--model", model_file("tiny")],
        ["export", "--out", str(tmp_path / "t.parquet")],
        ["report", "--html", str(tmp_path / "r.html")],
    ):
        assert main([*argv, "--storage", studied, "--study", "s"]) == 2, argv
        err = _said(capsys)
        assert ": the disk is full (No space left on device)" in err, err
        assert "free space there (df -h " in err
    assert best.read_bytes() == before
    assert (tmp_path / "t.parquet").read_bytes() == b"the last export"
    assert not (tmp_path / "r.html").exists()
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]  # no temporary left


@pytest.mark.parametrize("_pg", [pytest.param(None, marks=needs_postgres)])
def test_a_postgres_role_that_may_only_read_is_one_paragraph(
    _pg, tmp_path, model_file, space_file, monkeypatch, capsys
):
    """The role reads the study (report works) but may not write: search and worker said
    ProgrammingError in a traceback."""
    import uuid

    import sqlalchemy as sa

    scripted.use(monkeypatch, scripted.by_config())
    homes.fresh(monkeypatch, tmp_path)
    role = f"autotune_reader_{uuid.uuid4().hex[:8]}"
    with fresh_schema() as url:
        argv = ["--study", "s", "--space", space_file("aot_eager"), "--scope", "whole",
                "--device", "cpu", "--finalists", "0"]  # fmt: skip
        assert main(["search", model_file("tiny"), "--storage", url, "--trials", "1", *argv]) == 0
        schema = sa.make_url(url).query["options"].removeprefix("-csearch_path=")
        admin = sa.create_engine(url)
        with admin.begin() as conn:
            conn.execute(sa.text(f"CREATE ROLE {role} LOGIN"))
            conn.execute(sa.text(f'GRANT USAGE ON SCHEMA "{schema}" TO {role}'))
            conn.execute(sa.text(f'GRANT SELECT ON ALL TABLES IN SCHEMA "{schema}" TO {role}'))
        reader = sa.make_url(url).set(username=role).render_as_string(hide_password=False)
        try:
            capsys.readouterr()
            assert main(["report", "--storage", reader, "--study", "s"]) == 0
            capsys.readouterr()
            code = main(
                ["search", model_file("tiny"), "--storage", reader, "--trials", "3", *argv]
            )
            assert code == 2
            assert "database role may only read: autotune search and worker need" in _said(capsys)
        finally:
            with admin.begin() as conn:
                conn.execute(sa.text(f'REVOKE ALL ON ALL TABLES IN SCHEMA "{schema}" FROM {role}'))
                conn.execute(sa.text(f'REVOKE ALL ON SCHEMA "{schema}" FROM {role}'))
                conn.execute(sa.text(f"DROP ROLE {role}"))
            admin.dispose()


def test_tune_raises_one_usage_error_with_the_same_paragraph(tmp_path, monkeypatch):
    import torch

    import autotune
    from autotune.errors import UsageError

    damaged = tmp_path / "autotune.db"
    damaged.write_bytes(os.urandom(4096))
    homes.fresh(monkeypatch, tmp_path)
    with pytest.raises(UsageError, match="the storage failed: file is not a database") as info:
        autotune.tune(torch.nn.Linear(4, 4), (torch.randn(2, 4),), storage=f"sqlite:///{damaged}",
                      models_dir=str(tmp_path / "models"), device="cpu", quiet=True)  # fmt: skip
    assert info.value.__cause__ is not None  # the cause is chained, for --debug and for callers
