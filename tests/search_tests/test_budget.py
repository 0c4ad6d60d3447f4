"""The adaptive compile budget: once default torch.compile's compile time is known, a search
trial is stopped after a multiple of it (OpenTuner's adaptive time limits)."""

from __future__ import annotations

import pytest
import scripted
import torch

from autotune.search import Search, SearchRequest
from autotune.settings import ADAPTIVE_FLOOR_S, StudySettings
from autotune.space import load_space
from autotune.trials import TrialResult, TrialSpec


def _settings(**more) -> StudySettings:
    return StudySettings(model_path="m.py", device="cpu", space={}, space_hash="h",
                         torch_version=torch.__version__, **more)  # fmt: skip


@pytest.mark.parametrize(
    ("factor", "compile_s", "wall_s", "expected"),
    [
        (5.0, 30.0, 40.0, 160.0),  # 5 x 30 s compile + 10 s of running
        (5.0, 2.0, 5.0, ADAPTIVE_FLOOR_S),  # a small model: never below the floor
        (5.0, 300.0, 310.0, 600.0),  # never above --compile-budget
        (0.0, 30.0, 40.0, 600.0),  # 0: the fixed budget alone
        (5.0, None, None, 600.0),  # before the default compile was measured
    ],
)
def test_the_trial_budget_follows_the_default_compile(factor, compile_s, wall_s, expected):
    settings = _settings(compile_budget_factor=factor)
    assert settings.trial_time_limit_s(compile_s, wall_s) == pytest.approx(expected)


class Recording:
    def __init__(self) -> None:
        self.specs: list[TrialSpec] = []

    def run(self, spec: TrialSpec) -> TrialResult:
        self.specs.append(spec)
        if spec.config is None:
            return scripted.ok(1.0)
        return scripted.ok(1.2, compile_s=30.0, wall_s=45.0)

    def close(self) -> None:
        pass


def test_search_trials_get_the_adaptive_budget_and_baselines_the_whole(
    tmp_path, model_file, space_file
):
    space = load_space(space_file("aot_eager"), "cpu")
    settings = StudySettings(
        model_path=model_file("tiny"), device="cpu", space=space.to_dict(),
        space_hash=space.content_hash(), torch_version=torch.__version__, scope="whole",
        trials=2, compile_budget=600.0,
    )  # fmt: skip
    runner, notes = Recording(), []
    request = SearchRequest("s", f"sqlite:///{tmp_path}/t.db", settings)
    Search(request, runner, on_note=notes.append).run()
    budgets = [spec.time_limit_s for spec in runner.specs]
    assert budgets[:2] == [600.0, 600.0]  # eager and default
    assert budgets[2:] == [pytest.approx(165.0)] * (len(budgets) - 2)  # 5 x 30 + 15
    assert any("compile budget: 165 s per trial, 5x default" in n for n in notes)
