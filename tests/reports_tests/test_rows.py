"""Rows edited by hand or written by another tool: a study's settings row that breaks autotune's
rules ends every command that reads it (studies, report, export, finalize, a worker joining) in
one paragraph naming the study, the setting and its value, exit code 2. A broken trial or
finalist row is left out of the reports with a note, and refused where a decision is made."""

from __future__ import annotations

import sqlite3
from contextlib import closing
from pathlib import Path

import pytest

from autotune.cli import main

from .conftest import STUDY

SETTINGS_ATTACKS = {
    "truncated": ("substr(settings_json, 1, 40)", ["settings_json", "not valid JSON"]),
    "trials many": ("json_set(settings_json, '$.trials', 'many')",
                    ["trials must be a whole number, got 'many'"]),
    "no measure": ("json_remove(settings_json, '$.measure')", ["measure missing"]),
    "measure a number": ("json_set(settings_json, '$.measure', 5)",
                         ["measure must be a JSON object, got 5"]),
    "types everywhere": (
        "json_set(settings_json, '$.device', json('[1]'), '$.seed', 'x', '$.sampler', 1.5, "
        "'$.prune', 'no', '$.measure.warmup', json('{}'))",
        ["device must be a non-empty string, got [1]", "seed must be a whole number, got 'x'",
         "sampler must be one of tpe, random, got 1.5", "prune must be true or false, got 'no'",
         "measure.warmup must be a whole number, got {}"],
    ),
}  # fmt: skip


def _sql(storage: str, statement: str) -> None:
    with closing(sqlite3.connect(storage.removeprefix("sqlite:///"))) as conn:
        conn.execute(statement)
        conn.commit()


def _commands(storage: str, tmp_path: Path) -> dict[str, list[str]]:
    return {
        "studies": ["studies", "--storage", storage],
        "report": ["report", "--study", STUDY, "--storage", storage],
        "export": ["export", "--study", STUDY, "--storage", storage,
                   "--out", str(tmp_path / "t.parquet")],
        "finalize": ["finalize", "--study", STUDY, "--storage", storage,
                     "--out", str(tmp_path / "best.json")],
        "worker": ["worker", "--study", STUDY, "--storage", storage, "--device", "cpu"],
    }  # fmt: skip


def _one_paragraph(capsys: pytest.CaptureFixture[str]) -> str:
    out, err = capsys.readouterr()
    assert "Traceback" not in out + err
    (line,) = [line for line in err.splitlines() if line.startswith("autotune: error:")]
    return line


@pytest.mark.parametrize("attack", sorted(SETTINGS_ATTACKS))
@pytest.mark.parametrize("command", ["studies", "report", "export", "finalize", "worker"])
def test_a_broken_settings_row_is_one_paragraph_naming_study_setting_and_value(
    study_storage, tmp_path, capsys, attack, command
):
    change, named = SETTINGS_ATTACKS[attack]
    _sql(study_storage, f"UPDATE autotune_studies SET settings_json = {change}")
    capsys.readouterr()

    assert main(_commands(study_storage, tmp_path)[command]) == 2

    line = _one_paragraph(capsys)
    assert f"Study {STUDY!r}: the row of its settings (autotune_studies.settings_json)" in line
    assert all(part in line for part in named), line
    assert "recreate the study" in line
    assert not (tmp_path / "t.parquet").exists() and not (tmp_path / "best.json").exists()


def test_a_broken_trial_row_is_left_out_of_the_report_with_a_note(study_storage, capsys):
    _sql(study_storage, "UPDATE autotune_trials SET result_json = '{\"cut' WHERE trial_number = 3")
    _sql(study_storage, "UPDATE autotune_trials SET status = 'weird' WHERE trial_number = 4")
    capsys.readouterr()

    assert main(["report", "--study", STUDY, "--storage", study_storage, "--width", "400"]) == 0

    out = capsys.readouterr().out
    assert "note: left out: Study 's': the row of trial 3 in autotune_trials" in out
    assert "result_json '{\"cut': not valid JSON" in out
    assert "the row of trial 4 in autotune_trials" in out and "'weird'" in out
    assert "Decision: none yet." in out  # the decision is not made past a broken row
    rows = [line.split()[0] for line in out.splitlines() if line.startswith(("  [", "  #"))]
    assert "#3" in rows  # Optuna's trial still shows, without its record


def test_export_and_studies_leave_a_broken_trial_out_with_a_note(study_storage, tmp_path, capsys):
    _sql(study_storage, "UPDATE autotune_trials SET latency_median_s = 'fast' "
                        "WHERE trial_number = 2")  # fmt: skip
    capsys.readouterr()
    out = tmp_path / "t.csv"

    assert main(["export", "--study", STUDY, "--storage", study_storage, "--out", str(out)]) == 0
    assert main(["studies", "--storage", study_storage]) == 0

    printed, err = capsys.readouterr()
    assert "latency_median_s 'fast': must be a number or null" in err
    assert "note: left out: Study 's': the row of trial 2" in printed
    assert out.exists()


def test_finalize_refuses_a_broken_trial_row_in_one_paragraph(study_storage, tmp_path, capsys):
    _sql(study_storage, "UPDATE autotune_trials SET config_json = '[]', created_at = 'soon' "
                        "WHERE trial_number = 2")  # fmt: skip
    capsys.readouterr()
    argv = ["finalize", "--study", STUDY, "--storage", study_storage,
            "--out", str(tmp_path / "best.json")]  # fmt: skip

    assert main(argv) == 2

    line = _one_paragraph(capsys)
    assert "Study 's': the row of trial 2 in autotune_trials" in line
    assert "config_json '[]': must be an object in JSON" in line
    assert "created_at 'soon': must be a time" in line
    assert "DELETE FROM autotune_trials WHERE study_name = 's' AND trial_number = 2" in line


def test_a_broken_finalist_round_is_left_out_of_the_report_and_refused_by_finalize(
    study_storage, tmp_path, capsys
):
    _sql(study_storage, "UPDATE autotune_finalist_rounds SET finalists_json = '[\"x\"]'")
    _sql(study_storage, "UPDATE autotune_finalist_results SET run = 'hot' WHERE id = 1")
    capsys.readouterr()

    assert main(["report", "--study", STUDY, "--storage", study_storage, "--width", "400"]) == 0
    out = capsys.readouterr().out
    assert "the row of finalist round 1 in autotune_finalist_rounds" in out
    assert "finalists_json ['x']: must list trial numbers" in out
    assert "its result of trial" in out and "run 'hot': must be one of cold, warm" in out

    argv = ["finalize", "--study", STUDY, "--storage", study_storage,
            "--out", str(tmp_path / "best.json")]  # fmt: skip
    assert main(argv) == 2
    assert "finalist round 1" in _one_paragraph(capsys)
