from __future__ import annotations

import optuna

from autotune.reports import load_study_data, render_report

from .conftest import STUDY


def test_the_report_has_the_table_finalists_decision_failures_and_importance(study_storage):
    data = load_study_data(study_storage, STUDY)
    text = render_report(data, width=160)

    words = " ".join(text.split())  # a long storage path wraps the header
    assert f"Study '{STUDY}'" in text and "done, 8 of 8 search trials measured" in words
    header = next(line for line in text.splitlines() if line.lstrip().startswith("trial "))
    for column in ("compile", "latency", "vs eager", "vs default", "graphs", "breaks", "recomp"):
        assert column in header
    eager = next(line for line in text.splitlines() if line.lstrip().startswith("[eager]"))
    assert "1.00x (0.98-1.02)" in eager
    assert "Finalists re-measured cold and warm" in text
    made = data.decision
    assert made is not None and made.confirmation is not None
    section = text.split("Finalists re-measured")[1].split("\n\n")[0].splitlines()
    finalist = next(line for line in section if line.startswith(("  #", "  [")))
    assert "eager (" in finalist and "x, " in finalist.split("] ")[0]  # quartiles, interval
    confirmed = text.split("Confirmation round, apart from the choice (2 fresh processes")[1]
    chosen = next(line for line in confirmed.splitlines() if line.startswith(("  #", "  [")))
    assert chosen.lstrip().startswith(f"#{made.confirmation.chosen.trial_number} ")
    if made.best.decision == "compile":  # the claim, with its interval
        low = made.best.metrics["speedup_vs_eager_ci_low"]
        assert f"{made.best.metrics['speedup_vs_eager']:.2f}x eager [{low:.2f}x, " in chosen
    assert "Decision (as `autotune finalize` would make it now" in text
    assert "Failures by kind" in text and "first error: compile still running" in text
    assert "Latency per input shape" in text
    assert "Knob importance" in text
    table = text.split("\n\n")[1].splitlines()
    # a title, a header, and a row per trial: 2 baselines, 8 measured, and the reused ones
    assert len(data.rows) >= 10 and len(table) == 1 + 1 + len(data.rows)
    assert all(len(line) <= 160 for line in table)


def test_a_running_study_is_reported_as_running(study_storage):
    optuna.load_study(study_name=STUDY, storage=study_storage).ask()

    text = render_report(load_study_data(study_storage, STUDY))

    assert "running, 8 of 8 search trials measured, 1 running" in " ".join(text.split())
    assert "running" in text.splitlines()[-1] or any(
        line.split()[1:2] == ["running"] for line in text.splitlines() if line.strip()
    )


def test_a_pareto_study_reports_its_front_and_draws_its_page(
    tmp_path, monkeypatch, space_file, model_file
):
    import scripted

    from autotune.cli import main
    from autotune.reports import write_html

    from .conftest import varied

    scripted.use(monkeypatch, varied)
    storage = f"sqlite:///{tmp_path}/pareto.db"
    assert main([
        "search", model_file("tiny"), "--space", space_file("aot_eager_16"), "--trials", "5",
        "--pareto", "--storage", storage, "--study", "p", "--out", str(tmp_path / "b.json"),
        "--device", "cpu", "--finalists", "0", "--measure-seconds", "0.2",
    ]) == 0  # fmt: skip
    data = load_study_data(storage, "p")

    text = render_report(data)

    assert "Pareto front of the search (latency, compile)" in text
    assert data.metric_names == ["speedup_vs_eager", "compile_time_s"]
    assert write_html(data, tmp_path / "p.html") > 20_000
