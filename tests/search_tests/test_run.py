"""run_study: one call from a search to its file; with last_process (a worker's --out), only the
process that ended the study and holds the file's claim writes it."""

from __future__ import annotations

from dataclasses import replace

import pytest
import scripted
import torch

import autotune
from autotune._deadline import Deadline
from autotune.search import Ended, Finish, Search, SearchRequest, _run, run_study
from autotune.search._run import FILE_CLAIM
from autotune.settings import StudySettings, model_sha256
from autotune.space import load_space
from autotune.trials import TrialResult, TrialSpec


class Runner:
    """Eager 1.0x, every compiled config 1.5x; ``closed`` once run_study is done with it."""

    closed = False

    def run(self, spec: TrialSpec) -> TrialResult:
        return scripted.ok(1.0 if spec.config is None else 1.5)

    def close(self) -> None:
        self.closed = True


@pytest.fixture
def settings(model_file, space_file) -> StudySettings:
    space = load_space(space_file("aot_eager_16"), "cpu")
    return StudySettings(
        model_path=model_file("tiny"), device="cpu", space=space.to_dict(),
        space_hash=space.content_hash(), torch_version=torch.__version__, scope="whole",
        trials=2, finalists=0, model_sha256=model_sha256(model_file("tiny")),
    )  # fmt: skip


def test_a_search_runs_to_its_file_and_its_runners_close(tmp_path, settings):
    runner = Runner()
    search = Search(SearchRequest("s", f"sqlite:///{tmp_path}/a.db", settings), runner)
    decided = []
    outcome = run_study(
        search, Finish(out=str(tmp_path / "best.json")), on_decision=decided.append
    )
    assert runner.closed and outcome.decision is not None and decided == [outcome.decision]
    assert autotune.load(tmp_path / "best.json").decision == "compile"


def test_a_process_that_did_not_end_the_study_writes_nothing(tmp_path, settings):
    storage = f"sqlite:///{tmp_path}/a.db"
    finish = Finish(out=str(tmp_path / "best.json"), last_process=True)
    first = Search(SearchRequest("s", storage, settings), Runner())
    first.run()  # eager, default and the budget: the study is done
    raised = SearchRequest("s", storage, replace(settings, trials=4), given=frozenset({"trials"}),
                           deadline=Deadline.after(0.001))  # fmt: skip
    outcome = run_study(Search(raised, Runner()), finish)  # a raised budget, cut by its timeout
    assert outcome.decision is None and "did not end here (timeout)" in str(outcome.not_written)
    assert not (tmp_path / "best.json").exists()


def test_another_process_writing_the_file_is_left_to_it(tmp_path, settings):
    storage = f"sqlite:///{tmp_path}/a.db"
    search = Search(SearchRequest("s", storage, settings), Runner())
    assert search.session.records.claim("s", FILE_CLAIM, "another:1:worker9", 60.0)
    outcome = run_study(search, Finish(out=str(tmp_path / "best.json"), last_process=True))
    assert search.ended is Ended.BUDGET_MET
    assert outcome.not_written == "another process of the study is writing the file"
    assert not (tmp_path / "best.json").exists()


def test_the_cache_and_package_asked_for_ship_beside_a_compile_decision(
    tmp_path, settings, monkeypatch
):
    shipped = []
    monkeypatch.setattr(_run, "ship_cache", lambda *a, **k: shipped.append((a, k)))
    search = Search(SearchRequest("s", f"sqlite:///{tmp_path}/a.db", settings), Runner())
    out = str(tmp_path / "best.json")
    outcome = run_study(search, Finish(out=out, save_cache=True))
    assert outcome.not_shipped is None and len(shipped) == 1
    (path, model), kwargs = shipped[0]
    assert (path, model) == (out, settings.model_path)
    assert kwargs["cache"] is True and kwargs["aot"] is True


def test_nothing_ships_beside_a_file_that_does_not_compile(tmp_path, settings, monkeypatch):
    shipped = []
    monkeypatch.setattr(_run, "ship_cache", lambda *a, **k: shipped.append((a, k)))

    class Slower(Runner):
        def run(self, spec: TrialSpec) -> TrialResult:
            return scripted.ok(1.0 if spec.config is None else 0.5)

    search = Search(SearchRequest("s", f"sqlite:///{tmp_path}/a.db", settings), Slower())
    outcome = run_study(search, Finish(out=str(tmp_path / "best.json"), save_aot=True))
    assert outcome.decision is not None and outcome.decision.best.decision == "do_not_compile"
    assert outcome.not_shipped == "No compile cache was exported: the file runs the model eager."
    assert shipped == []
