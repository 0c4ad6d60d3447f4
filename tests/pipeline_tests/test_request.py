"""What a search request derives from the model file: a training step of the file's own
compiles the whole model (the scope probes call the model with get_inputs' arguments)."""

from __future__ import annotations

from autotune.pipeline import build_request
from autotune.settings import resolve


def _request(model: str, **values):
    return build_request(resolve({"model": model, "device": "cpu", **values}))


def test_a_files_own_train_step_compiles_the_whole_model_and_says_why(model_file):
    request = _request(model_file("train_own_step"), workload="train")
    assert request.settings.scope == "whole"
    (note,) = request.notes
    assert "train_step calls the model its own way" in note and "--scope whole" in note


def test_the_fixed_step_and_inference_keep_the_scope_search(model_file):
    assert _request(model_file("tiny"), workload="train").settings.scope == "search"
    inference = _request(model_file("train_own_step"))
    assert inference.settings.scope == "search" and not inference.notes
