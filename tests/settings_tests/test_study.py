"""A resumed study's settings: what is stored stays, what may change changes and is said."""

from __future__ import annotations

from dataclasses import replace

import pytest

from autotune.errors import UsageError
from autotune.measure import MeasureSettings
from autotune.settings import CHANGEABLE, StudySettings, settle

STORED = StudySettings(
    model_path="/m.py", device="cpu", space={"name": "cpu"}, space_hash="a" * 16,
    torch_version="2.13.0", seed=7, trials=20,
)  # fmt: skip


def test_settings_not_given_keep_the_stored_values():
    asked = replace(STORED, seed=0, compile_budget=30.0, trials=5)
    settled, notes = settle("s", STORED, asked, given=frozenset({"model_path"}))
    assert settled == STORED and notes == []


def test_changeable_settings_change_and_say_so():
    asked = replace(STORED, trials=40, finalists=5, pick="fastest", charge_warm_compile=True)
    settled, notes = settle("s", STORED, asked, given=frozenset(CHANGEABLE))
    assert (settled.trials, settled.finalists, settled.pick, settled.charge_warm_compile) == (
        40, 5, "fastest", True,
    )  # fmt: skip
    assert "note: --trials of study 's' changes from 20 to 40" in notes
    assert len(notes) == 4


def test_every_other_difference_is_refused_and_named():
    asked = replace(
        STORED, seed=1, measure=MeasureSettings(target_seconds=1.0), space_hash="b" * 16,
        device="cuda", trials=40,
    )  # fmt: skip
    with pytest.raises(UsageError) as info:
        settle("s", STORED, asked)
    message = str(info.value)
    assert "--seed: the study has 7, this run asks for 1" in message
    assert "--measure-seconds: the study has 2 s, this run asks for 1 s" in message
    assert "--space: the study has space 'cpu' (hash aaaaaaaaaaaa)" in message
    assert "--device: the study has 'cpu', this run asks for 'cuda'" in message
    assert "--trials" not in message.split("Only")[0]  # changeable: not a refusal


def test_the_device_counts_by_its_type():
    on_cuda = replace(STORED, device="cuda")
    settled, _ = settle("s", on_cuda, replace(on_cuda, device="cuda:1"))
    assert settled.device == "cuda"  # a process's own CUDA device is its own
    with pytest.raises(
        UsageError, match="--device: the study has 'cuda', this run asks for 'cpu'"
    ):
        settle("s", on_cuda, replace(on_cuda, device="cpu"))


def test_versions_are_left_to_the_joining_check():
    settled, notes = settle("s", STORED, replace(STORED, torch_version="2.14.0"))
    assert settled.torch_version == "2.13.0" and notes == []
