"""Several processes on one study, in one process's test: each seeds its sampler apart, a
joining process takes the stored settings, and a mixed fleet's file is for one device."""

from __future__ import annotations

import itertools

import pytest
import scripted
import torch

from autotune.decide import finalize
from autotune.search import Search, SearchRequest
from autotune.search import _search as search_module
from autotune.settings import StudySettings, model_sha256
from autotune.space import load_space
from autotune.trials import TrialResult, TrialSpec


class Runner:
    def __init__(self, device_names=("GPU-A",)):
        self.names = itertools.cycle(device_names)
        self.specs: list[TrialSpec] = []

    def run(self, spec: TrialSpec) -> TrialResult:
        self.specs.append(spec)
        result = scripted.ok(1.0 if spec.config is None else 1.5)
        name = next(self.names)
        if name is None:  # killed at its compile budget: it never said where it ran
            return TrialResult(
                status="failed", failure_kind="timeout", error="killed",
                environment={"worker": {"device": "cpu"}},
            )  # fmt: skip
        else:
            result.environment = {**result.environment, "device_name": name}
        return result

    def close(self) -> None:
        pass


@pytest.fixture
def settings(model_file, space_file) -> StudySettings:
    space = load_space(space_file("aot_eager_16"), "cpu")
    return StudySettings(
        model_path=model_file("tiny"), device="cpu", space=space.to_dict(),
        space_hash=space.content_hash(), torch_version=torch.__version__, scope="whole",
        seed=100, trials=3, finalists=0, model_sha256=model_sha256(model_file("tiny")),
    )  # fmt: skip


def test_each_process_seeds_its_sampler_with_the_study_seed_plus_its_index(
    tmp_path, settings, monkeypatch
):
    seeds: list[int] = []
    real = search_module._sampler
    monkeypatch.setattr(
        search_module, "_sampler", lambda n, s, t: seeds.append(s) or real(n, s, t)
    )
    storage = f"sqlite:///{tmp_path}/t.db"
    Search(SearchRequest("s", storage, settings), Runner()).run()
    joining = Search(SearchRequest("s", storage, None, model_path=settings.model_path), Runner())
    assert joining.session.settings.seed == 100 and joining.session.local.device == "cpu"
    joining.run()
    assert seeds == [100, 101]
    sampler = real("tpe", 0)
    assert sampler._constant_liar  # idle workers are not all sent to one point


def test_a_file_for_a_mixed_fleet_is_chosen_among_one_devices_trials(tmp_path, settings):
    storage = f"sqlite:///{tmp_path}/t.db"
    Search(SearchRequest("s", storage, replace_trials(settings, 8)), Runner(("A", "B"))).run()
    notes: list[str] = []
    decision = finalize(storage, "s", for_device="B", on_note=notes.append)
    assert notes[0].startswith("the study's trials ran on 2 kinds of device; the file is for 'B'")
    assert {r.environment["device_name"] for r in decision.records} == {"B"}
    assert decision.best.environment["device_name"] == "B"


def test_a_trial_that_never_said_its_device_is_not_another_kind_of_device(tmp_path, settings):
    """Found on an H200: a trial killed at its compile budget records no device name, and the
    decision said the study ran on 2 kinds of device (the other being None)."""
    storage = f"sqlite:///{tmp_path}/t.db"
    Search(SearchRequest("s", storage, replace_trials(settings, 4)), Runner(("A", None))).run()
    notes: list[str] = []
    decision = finalize(storage, "s", on_note=notes.append)
    assert not any("kinds of device" in note for note in notes), notes
    unnamed = [r for r in decision.records if "device_name" not in r.environment]
    assert unnamed and len(unnamed) < len(decision.records)  # kept with the others
    assert decision.best.environment["device_name"] == "A"


def replace_trials(settings: StudySettings, trials: int) -> StudySettings:
    from dataclasses import replace

    return replace(settings, trials=trials)
