"""What a search request derives from the model file: a training step of the file's own
compiles the whole model (the scope probes call the model with get_inputs' arguments)."""

from __future__ import annotations

import pytest

from autotune.errors import UsageError
from autotune.search import build_request
from autotune.settings import CLI, resolve
from autotune.trials import TrialSpec


def _request(model: str, **values):
    return build_request(resolve({"model": model, "device": "cpu", **values}, language=CLI))


def test_a_files_own_train_step_compiles_the_whole_model_and_says_why(model_file):
    request = _request(model_file("train_own_step"), workload="train")
    assert request.settings.scope == "whole"
    (note,) = request.notes
    assert "train_step calls the model its own way" in note and "--scope whole" in note


def test_the_fixed_step_and_inference_keep_the_scope_search(model_file):
    assert _request(model_file("tiny"), workload="train").settings.scope == "search"
    inference = _request(model_file("train_own_step"))
    assert inference.settings.scope == "search" and not inference.notes


def test_a_recorded_traffic_is_read_into_the_studys_settings(model_file):
    from pathlib import Path

    trace = Path(model_file("tiny")).parents[1] / "traces" / "requests.csv"
    request = _request(model_file("trace_requests"), traffic=str(trace))
    assert request.settings.traffic[0] == {"shape": {"batch": 1, "length": 16}, "weight": 120.0}
    spec = TrialSpec.from_settings(request.settings, None, cache_dir=None, relaxed_numerics=False)
    assert spec.traffic == request.settings.traffic


@pytest.mark.parametrize(
    ("stem", "values", "said"),
    [
        ("traffic", {"workload": "train"}, "timed request by request for the infer workload"),
        ("traffic", {"objective": "throughput", "batch_sizes": [1, 8]}, "drop --batch-sizes"),
        ("traffic", {"traffic": "TRACE"}, "Two traffic mixes"),
        ("tiny", {"traffic": "TRACE"}, r"define get_request\(device, \*\*shape\)"),
    ],
)
def test_a_traffic_mix_refuses_what_it_cannot_measure(model_file, stem, values, said):
    from pathlib import Path

    trace = str(Path(model_file("tiny")).parents[1] / "traces" / "requests.csv")
    values = {k: trace if v == "TRACE" else v for k, v in values.items()}
    with pytest.raises(UsageError, match=said):
        _request(model_file(stem), **values)
