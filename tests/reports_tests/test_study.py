from __future__ import annotations

import optuna
import pytest

from autotune.errors import UsageError
from autotune.reports import knob_importance, list_studies, load_study_data

from .conftest import STUDY


def test_a_study_reads_back_with_its_trials_decision_and_importance(study_storage):
    data = load_study_data(study_storage, STUDY)

    assert [row.number for row in data.rows] == list(range(len(data.rows)))
    assert data.baseline("eager") is not None and data.baseline("default") is not None
    assert len(data.searched) == 8 and data.state() == "done"
    assert data.failures()["timeout"] >= 1
    assert data.decision is not None and data.decision.finalists
    assert data.importance is not None
    assert set(data.importance) <= {"compile.fullgraph", "compile.dynamic", "scope.kind",
                                    "dynamo.recompile_limit"}  # fmt: skip
    assert "PED-ANOVA" in data.importance_note
    assert data.metric_names == ["speedup_vs_eager"]


def test_a_trial_still_running_is_a_row_without_a_record(study_storage):
    study = optuna.load_study(study_name=STUDY, storage=study_storage)
    running = study.ask()

    data = load_study_data(study_storage, STUDY)

    row = data.rows[-1]
    assert (row.number, row.status, row.record) == (running.number, "running", None)
    assert data.running == 1 and data.state() == "running"


def test_importance_needs_three_measured_search_trials(study_storage):
    data = load_study_data(study_storage, STUDY, importance=False)
    data.rows = [row for row in data.rows if row.record is None or row.record.baseline
                 or row.number < 4]  # fmt: skip

    found, note = knob_importance(data)

    assert found is None and "needs 3 measured search trials" in note


def test_an_unknown_study_is_refused_with_the_names_the_storage_holds(study_storage):
    with pytest.raises(UsageError, match=r"no autotune study named 'nope' \(its studies: s\)"):
        load_study_data(study_storage, "nope")


def test_a_missing_sqlite_file_is_refused_not_created(tmp_path):
    path = tmp_path / "typo.db"

    with pytest.raises(UsageError, match="does not exist"):
        load_study_data(f"sqlite:///{path}", STUDY)

    assert not path.exists()


def test_list_studies_reads_every_study(study_storage):
    (data,) = list_studies(study_storage)

    assert data.name == STUDY and data.best() is not None


def test_a_trial_whose_process_stopped_beating_is_stale(study_storage, monkeypatch):
    import time
    import warnings

    from autotune.storage._optuna import open_optuna_storage

    monkeypatch.setenv("AUTOTUNE_HEARTBEAT_S", "1")
    monkeypatch.setenv("AUTOTUNE_GRACE_S", "1")
    storage = open_optuna_storage(study_storage)
    with warnings.catch_warnings():  # "heartbeats are meant for Study.optimize"
        warnings.simplefilter("ignore")
        trial = optuna.load_study(study_name=STUDY, storage=storage).ask()
    storage.record_heartbeat(trial._trial_id)
    time.sleep(2.5)  # past the grace period: the owner counts as dead

    data = load_study_data(study_storage, STUDY, importance=False)

    assert data.rows[-1].status == "stale" and data.running == 0 and data.state() == "done"


@pytest.mark.postgres
def test_a_study_on_postgresql_reads_back_and_exports(
    postgres_url, tmp_path, monkeypatch, model_file, space_file
):
    import duckdb
    import scripted

    from autotune.cli import main
    from autotune.reports import export_study, render_report

    from .conftest import varied

    scripted.use(monkeypatch, varied)
    assert main([
        "search", model_file("tiny"), "--space", space_file("aot_eager_16"), "--trials", "4",
        "--storage", postgres_url, "--study", "pg", "--out", str(tmp_path / "b.json"),
        "--device", "cpu", "--finalists", "1", "--measure-seconds", "0.2",
    ]) == 0  # fmt: skip
    data = load_study_data(postgres_url, "pg")

    words = " ".join(render_report(data).split())  # a long URL wraps the header
    assert "done, 4 of 4 search trials measured" in words
    assert export_study(data, tmp_path / "pg.parquet") == len(data.rows)
    ((count,),) = duckdb.sql(f"SELECT count(*) FROM '{tmp_path / 'pg.parquet'}'").fetchall()
    assert count == len(data.rows)


def test_a_password_in_the_storage_url_shows_nowhere_in_what_the_reports_print(
    study_storage, tmp_path, capsys
):
    from autotune.cli import main

    url = f"{study_storage}?password=hunter2&sslpassword=k3yk3y"  # SQLite ignores both
    page, out = tmp_path / "r.html", tmp_path / "t.csv"

    # wide enough that no line wraps the URL, whatever the terminal (pytest-xdist's is narrower)
    assert main(["report", "--study", STUDY, "--storage", url, "--html", str(page),
                 "--width", "400"]) == 0  # fmt: skip
    assert main(["export", "--study", STUDY, "--storage", url, "--out", str(out)]) == 0
    assert main(["studies", "--storage", url]) == 0

    printed = "".join(capsys.readouterr()) + page.read_text() + out.read_text()
    assert f"{study_storage}?password=***&sslpassword=***" in printed
    assert "hunter2" not in printed and "k3yk3y" not in printed
    assert load_study_data(url, STUDY, importance=False).storage.endswith("password=***")


def test_studies_says_what_the_file_ships_beside_the_best_searched(study_storage):
    """`autotune studies` showed "best vs eager 2.31x (#3)" where the file shipped default
    compile at 1.62x: it now shows both."""
    import dataclasses

    from autotune.reports import render_studies

    (data,) = list_studies(study_storage)
    best = data.best()
    assert best is not None and data.decision is not None
    default = next(r for r in data.records if r.baseline == "default")
    made = data.decision.best
    ships_default = dataclasses.replace(
        made,
        config=made.config,
        source={**made.source, "trial": default.trial_number},
        metrics={**made.metrics, "speedup_vs_eager": 1.62},
    )
    decided = dataclasses.replace(
        data, decision=dataclasses.replace(data.decision, best=ships_default)
    )
    header, row = render_studies([decided]).splitlines()[:2]
    assert "best searched" in header and "the file ships" in header
    assert f"{best.speedup_vs_eager:.2f}x (#{best.trial_number})" in row
    assert f"1.62x (#{default.trial_number}, default compile)" in row
