"""What a search shows while it runs: a plain line per trial when stdout is a pipe, a live
panel in a terminal (rendered here to a recording console)."""

from __future__ import annotations

import os
from io import StringIO
from pathlib import Path

import pytest
import scripted
from procs import wait_for
from rich.console import Console

from autotune.cli import main
from autotune.records import TrialRecord
from autotune.reports.progress import Progress
from autotune.reports.terminal import trial_line
from autotune.search import Search, SearchRequest
from autotune.trials import TrialResult, TrialSpec
from autotune.trials._phase import write_phase

FAST = ["--measure-seconds", "0.2", "--device", "cpu", "--finalists", "0", "--scope", "whole"]


def recompiling(spec: TrialSpec) -> TrialResult:
    """Eager 1.0x; every compiled config 1.2x with two recompiles and a graph break."""
    if spec.config is None:
        return scripted.ok(1.0)
    result = scripted.ok(1.2)
    result.graphs, result.graph_breaks, result.recompiles = 2, 1, 2
    return result


def study(tmp_path: Path, model_file, space_file, *extra: str) -> tuple[int, str]:
    storage = f"sqlite:///{tmp_path}/autotune.db"
    out = str(tmp_path / "best.json")
    argv = ["search", model_file("tiny"), "--space", space_file("aot_eager"), "--storage",
            storage, "--study", "s", "--out", out, *FAST, *extra]  # fmt: skip
    return main(argv), storage


def record(number: int, speedup: float | None = None, kind: str | None = None) -> TrialRecord:
    return TrialRecord(
        trial_number=number, config={}, config_hash=f"h{number}",
        brief="inductor default dyn=None fg=False", status="failed" if kind else "ok",
        failure_kind=kind, error="compile still running after 600 s" if kind else None,
        speedup_vs_eager=speedup, latency_median_s=1e-3, latency_iqr_s=1e-5,
        compile_time_s=1.0, graphs=1, graph_breaks=0, recompiles=2, wall_time_s=3.0,
    )  # fmt: skip


def test_a_piped_search_prints_one_plain_line_per_trial_with_its_graph_facts(
    tmp_path, model_file, space_file, capsys, monkeypatch
):
    scripted.use(monkeypatch, recompiling)
    code, _ = study(tmp_path, model_file, space_file, "--trials", "2")
    printed = capsys.readouterr().out
    assert code == 0, printed
    lines = [line for line in printed.splitlines() if line.startswith("#")]
    assert len(lines) == 4 and lines[0].startswith("#  0 [eager]")
    assert all("graphs 2 breaks 1 recompiles 2" in line for line in lines[1:])
    assert "\x1b[" not in printed  # no terminal control codes in a log


def test_a_trial_line_ends_in_the_error_of_a_failed_trial_and_the_graph_facts_of_an_ok_one():
    ok = trial_line(record(3, 1.31))
    assert ok.startswith("#  3 inductor default") and ok.endswith("graphs 1 breaks 0 recompiles 2")
    failed = trial_line(record(4, kind="timeout"))
    assert "timeout" in failed and failed.endswith("compile still running after 600 s")
    assert "graphs" not in failed and "\n" not in ok + failed


def test_a_reused_trial_says_reused_whatever_its_source_was_spared():
    """A reused trial carries its source's result, which may have taken a third trial's
    timing (same code): its line says it was reused, and the summary counts the source once."""
    import dataclasses

    from autotune.storage import screened

    source = dataclasses.replace(record(5, 1.1), result={"equivalent_of": 3})
    again = dataclasses.replace(source, trial_number=6, duplicate_of=5)
    assert trial_line(source).endswith("(same code as #3: its timing)")
    assert trial_line(again).endswith("(same config as #5: reused)")
    assert screened([record(3, 1.1), source, again]) == (1, 0)


def text(progress: Progress) -> str:
    screen = Console(file=StringIO(), width=120, color_system=None)
    screen.print(progress.render())
    out = screen.file.getvalue()
    assert isinstance(out, str)
    return out


@pytest.fixture
def finished_search(tmp_path, model_file, space_file, monkeypatch) -> Search:
    """A process joining a study whose budget (2 trials, best 1.2x) is spent."""
    scripted.use(monkeypatch, recompiling)
    code, storage = study(tmp_path, model_file, space_file, "--trials", "2")
    assert code == 0
    return Search(SearchRequest("s", storage, None, model_path=model_file("tiny")))


def test_the_live_panel_shows_the_study_the_phase_the_best_and_the_failures(finished_search):
    screen = Console(file=StringIO(), force_terminal=True, width=120)
    progress = Progress(console=screen, poll_s=0.1)
    assert progress.live
    finished_search.show_in(progress, "worker")
    with progress:
        phases = finished_search.events.phase_dir
        assert phases is not None and os.path.isdir(phases)
        progress.phase("trial", "#7 [default] inductor default dyn=None fg=False")
        assert "starting: #7 [default]" in text(progress)  # before the trial wrote its phase
        write_phase(os.path.join(phases, "trial-7.phase"), "compiling")
        progress.record(record(5, kind="timeout"))
        progress.record(record(6, 1.5))
        assert wait_for(lambda: "2 of 2 done" in text(progress), 10)
        panel = text(progress)
        progress.record(record(7, 1.1))  # the trial the panel showed has ended
        after = text(progress)
    assert "autotune worker: study 's'" in panel and "(study-wide)" in panel
    assert "compiling: #7 [default] inductor default dyn=None fg=False" in panel
    assert "trial #6, 1.50x eager" in panel and "1 timeout" in panel and "elapsed" in panel
    assert "sampling: the next configuration" in after
    assert finished_search.events.phase_dir is None and not os.path.exists(phases)
    printed = screen.file.getvalue()
    assert "#  6 inductor default" in printed and "graphs 1 breaks 0 recompiles 2" in printed


def test_brackets_in_a_line_are_printed_as_they_are_not_read_as_markup(finished_search):
    screen = Console(file=StringIO(), force_terminal=True, width=120)
    progress = Progress(console=screen)
    finished_search.show_in(progress, "search")
    with progress:
        progress.note("#  0 [eager] eager (no compile)  [bold]not bold[/bold]")
    assert "[eager] eager (no compile)  [bold]not bold[/bold]" in screen.file.getvalue()


def test_quiet_shows_neither_lines_nor_a_panel(finished_search, capsys):
    progress = Progress(quiet=True, console=Console(file=StringIO(), force_terminal=True))
    assert not progress.live
    finished_search.show_in(progress, "search")
    with progress:
        progress.note("scope: candidates whole")
        progress.record(record(3, 1.2))
        progress.say("the decision")
    assert capsys.readouterr().out == "the decision\n"
