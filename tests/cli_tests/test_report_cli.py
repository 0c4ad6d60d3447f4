"""Issue 14's "done when": after a real 3-trial search, `autotune report` prints the table,
`--html` writes a page with its plots, `autotune export` writes Parquet that DuckDB reads, and
Optuna's own API sees autotune's metrics on the trials."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import duckdb
import homes
import optuna
import pytest

from autotune.cli import main

STUDY = "s"


@pytest.fixture(scope="module")
def searched(tmp_path_factory):
    """A real search: three aot_eager trials of the tiny model, no finalists."""
    folder = tmp_path_factory.mktemp("report")
    storage = f"sqlite:///{folder}/autotune.db"
    with pytest.MonkeyPatch.context() as mp:  # the tests' kernel cache, never the user's
        homes.shared(mp, tmp_path_factory.getbasetemp())
        code = _search(folder, storage)
    assert code == 0
    return folder, storage


def _search(folder: Path, storage: str) -> int:
    fixtures = Path(__file__).parents[1] / "fixtures"
    return main([
        "search", str(fixtures / "models" / "tiny.py"), "--space",
        str(fixtures / "spaces" / "aot_eager.toml"), "--trials", "3", "--scope", "whole",
        "--storage", storage, "--study", STUDY, "--out", str(folder / "best.json"),
        "--device", "cpu", "--finalists", "0", "--measure-seconds", "0.2",
    ])  # fmt: skip


def test_report_prints_the_trials_with_their_speedups(searched, capsys):
    folder, storage = searched
    capsys.readouterr()

    assert main(["report", "--study", STUDY, "--storage", storage, "--width", "150"]) == 0

    out = capsys.readouterr().out
    rows = [line.split() for line in out.splitlines() if line.startswith(("  [", "  #"))]
    labels = [row[0] for row in rows]
    assert labels[:2] == ["[eager]", "[default]"] and len(labels) >= 5
    assert all(any(cell.endswith("x") for cell in row) for row in rows if row[1] == "ok")
    assert "Decision (as `autotune finalize` would make it now" in out


def test_report_html_is_a_page_over_20_kb_with_its_plots(searched, capsys):
    folder, storage = searched
    page = folder / "report.html"

    assert main(["report", "--study", STUDY, "--storage", storage, "--html", str(page)]) == 0

    text = page.read_text()
    assert page.stat().st_size > 20_000 and "Plotly.newPlot" in text
    assert "<script src=" not in text  # plotly.js inline: opens offline
    assert "Optimization history" in text and "Speedup against compile time" in text


def test_export_parquet_has_the_columns_duckdb_reads(searched, capsys):
    folder, storage = searched
    out = folder / "trials.parquet"

    assert main(["export", "--study", STUDY, "--storage", storage, "--format", "parquet",
                 "--out", str(out)]) == 0  # fmt: skip

    rel = duckdb.sql(
        f"""SELECT trial_number, status, compile_time_s, latency_median_s,
                   "knob.compile.fullgraph", "knob.compile.dynamic"
            FROM '{out}' ORDER BY trial_number"""
    )
    rows = rel.fetchall()
    assert len(rows) >= 5 and rows[0][1] == "ok" and rows[0][4] is None  # eager: no knobs
    searched_rows = [r for r in rows if r[4] is not None]
    assert searched_rows and all(isinstance(r[4], bool) for r in searched_rows)
    assert all(r[2] > 0 and r[3] > 0 for r in searched_rows if r[1] == "ok")


def test_optuna_sees_the_trials_with_autotunes_metrics(searched):
    folder, storage = searched

    study = optuna.load_study(study_name=STUDY, storage=storage)

    assert study.metric_names == ["speedup_vs_eager"]
    ok = [t for t in study.trials if t.user_attrs.get("autotune.status") == "ok"]
    assert len(ok) >= 4
    for trial in ok:
        attrs = trial.user_attrs
        assert attrs["autotune.speedup_vs_eager"] == pytest.approx(trial.value)
        assert attrs["autotune.latency_median_s"] > 0 and attrs["autotune.config"]
        assert {"autotune.graphs", "autotune.graph_breaks", "autotune.recompiles"} <= set(attrs)


def test_studies_lists_the_study(searched, capsys):
    folder, storage = searched
    capsys.readouterr()

    assert main(["studies", "--storage", storage]) == 0

    out = capsys.readouterr().out
    assert out.splitlines()[1].split()[:2] == [STUDY, "tiny.py"] and "done" in out


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["report", "--study", "nope"], "no autotune study named 'nope' (its studies: s)"),
        (["export", "--study", STUDY, "--out", "x.json"], "cannot tell the format"),
        (["export", "--study", STUDY, "--out", "/no/such/dir/x.csv"], "does not exist"),
        (["report", "--study", STUDY, "--html", "/no/such/dir/r.html"], "does not exist"),
    ],
)
def test_bad_input_is_one_paragraph_and_exit_code_2(searched, capsys, argv, message):
    folder, storage = searched

    assert main([*argv, "--storage", storage]) == 2

    err = capsys.readouterr().err
    assert err.startswith("autotune: error:") and message in err and "Traceback" not in err


def test_a_mistyped_sqlite_path_is_refused_and_not_created(tmp_path, capsys):
    missing = tmp_path / "typo.db"

    assert main(["studies", "--storage", f"sqlite:///{missing}"]) == 2

    assert "does not exist" in capsys.readouterr().err and not missing.exists()


def test_report_and_export_take_the_storages_only_study_without_study(searched, capsys, tmp_path):
    """`autotune report` demanded --study of a storage that holds exactly one."""
    folder, storage = searched
    capsys.readouterr()
    assert main(["report", "--storage", storage, "--width", "150"]) == 0
    assert "Decision (as `autotune finalize` would make it now" in capsys.readouterr().out
    out = tmp_path / "trials.csv"
    assert main(["export", "--storage", storage, "--out", str(out), "--format", "csv"]) == 0
    assert f"of study {STUDY!r}" in capsys.readouterr().out and out.stat().st_size > 0


def test_without_study_a_storage_of_several_or_none_names_them(searched, capsys, tmp_path):
    folder, storage = searched
    two = tmp_path / "two.db"
    with sqlite3.connect(folder / "autotune.db") as source, sqlite3.connect(two) as copy:
        source.backup(copy)  # the write-ahead log too
    from autotune.records import RecordStore

    other = optuna.create_study(study_name="other", storage=f"sqlite:///{two}")
    with RecordStore(f"sqlite:///{two}") as store:
        store.save_study("other", other._study_id, store.study_settings(STUDY))
    capsys.readouterr()
    assert main(["report", "--storage", f"sqlite:///{two}"]) == 2
    err = capsys.readouterr().err
    assert "--study is needed" in err and "holds 2 studies (s, other)" in err
    empty = tmp_path / "empty.db"
    optuna.create_study(storage=f"sqlite:///{empty}", study_name="plain")
    assert main(["report", "--storage", f"sqlite:///{empty}"]) == 2
    assert "holds no study" in capsys.readouterr().err
