"""Text from data reaches neither the terminal raw nor a spreadsheet as a formula (issue 41,
item 7): a trial error, a study name or a file's reason carrying ESC/BEL/CR sequences is printed
escaped by show, report, studies and the progress lines, and export's CSV quotes a cell that a
spreadsheet would run."""

from __future__ import annotations

import csv
import json

import homes
import pytest
import scripted

from autotune._printable import inline, printable
from autotune.cli import main
from autotune.trials import TrialResult, TrialSpec

# A window-title change, a screen clear, a carriage return that hides what came before, a bell,
# a bidi override that reverses what follows.
HOSTILE = "boom\x1b]0;owned\x07\x1b[2J\rclean\u202eevil"
SHOWN = "boom\\x1b]0;owned\\x07\\x1b[2J\\x0dclean\\u202eevil"
FORMULA = '=HYPERLINK("http://x","click")'


def test_printable_escapes_control_and_invisible_format_characters_and_keeps_layout():
    assert printable(HOSTILE) == SHOWN
    assert printable("a\tb\nc ü → 1.2x") == "a\tb\nc ü → 1.2x"
    assert printable("\x9b31m\x7f") == "\\x9b31m\\x7f"  # the C1 CSI and DEL too


def hostile(spec: TrialSpec) -> TrialResult:
    if spec.config is None:
        return scripted.ok(1.0)
    if spec.config["fullgraph"]:
        return TrialResult.failed("compile_error", f"{FORMULA} {HOSTILE}")
    return scripted.ok(1.3)


@pytest.fixture
def study(tmp_path, monkeypatch, model_file, space_file, capsys) -> tuple[str, str, str]:
    scripted.use(monkeypatch, hostile)
    homes.fresh(monkeypatch, tmp_path)
    storage, name = f"sqlite:///{tmp_path}/s.db", "s\x1b[2Jx"
    code = main([
        "search", model_file("tiny"), "--space", space_file("aot_eager"), "--trials", "4",
        "--storage", storage, "--study", name, "--out", str(tmp_path / "best.json"),
        "--device", "cpu", "--finalists", "0", "--scope", "whole", "--seed", "1",
    ])  # fmt: skip
    assert code == 0
    return storage, name, capsys.readouterr().out


def test_inline_escapes_the_layout_too_so_a_value_cannot_fake_a_line():
    assert inline("CPU A\n  - torch: ok\tx\x1b[2J") == "CPU A\\n  - torch: ok\\tx\\x1b[2J"
    assert inline("AMD EPYC, torch 2.13.0") == "AMD EPYC, torch 2.13.0"


def test_search_report_and_studies_print_a_hostile_error_and_name_escaped(study, capsys):
    storage, name, printed = study
    assert "\x1b" not in printed and "\x07" not in printed and "\u202e" not in printed
    assert "boom\\x1b]0;owned\\x07\\x1b[2J" in printed  # the trial line, its error escaped
    for argv in (["report", "--storage", storage, "--study", name],
                 ["studies", "--storage", storage]):  # fmt: skip
        assert main(argv) == 0
        out = capsys.readouterr().out
        assert "\x1b" not in out and "\x07" not in out and "\r" not in out, argv
        assert "s\\x1b[2Jx" in out, argv


def test_export_csv_quotes_a_cell_a_spreadsheet_would_run(study, tmp_path, capsys):
    storage, name, _ = study
    out = tmp_path / "trials.csv"
    assert main(["export", "--storage", storage, "--study", name, "--out", str(out)]) == 0
    with out.open(newline="") as f:
        cells = [cell for row in csv.reader(f) for cell in row]
    assert any(cell.startswith(f"'{FORMULA}") for cell in cells)
    assert not any(cell.startswith(("=", "+", "@")) for cell in cells)


def test_show_prints_a_files_hostile_reason_escaped(tmp_path, capsys):
    path = tmp_path / "best_config.json"
    path.write_text(json.dumps({
        "schema_version": 1, "autotune_version": "0.1.0", "decision": "do_not_compile",
        "reason": HOSTILE, "config": None,
    }))  # fmt: skip
    assert main(["show", str(path)]) == 0
    out = capsys.readouterr().out
    assert "boom\\x1b]0;owned\\x07\\x1b[2J" in out and "\x1b" not in out and "\x07" not in out


def test_the_progress_panel_and_its_lines_show_hostile_text_escaped():
    from io import StringIO

    from rich.console import Console

    from autotune.reports.progress import Progress

    screen = Console(file=StringIO(), width=200, force_terminal=True, color_system=None)
    progress = Progress(console=screen, live=True)
    progress.phase("probing", HOSTILE)  # a part's name, as the model file spells it
    progress.say(f"  probe unit {HOSTILE}: crash")
    screen.print(progress.render())
    out = screen.file.getvalue()
    assert "boom\\x1b]0;owned\\x07" in out and "\x07" not in out and "]0;owned\x07" not in out
