from __future__ import annotations

import pytest
import torch

from autotune.errors import UsageError
from autotune.workload import WorkloadError, build_calls, build_model, load_model_file


def test_loads_a_model_file_and_builds_its_calls(model_file):
    module = load_model_file(model_file("shapes"))
    model = build_model(module, "cpu")
    calls = build_calls(module, "cpu")
    assert isinstance(model, torch.nn.Module)
    assert [len(c.args) for c in calls] == [1, 1, 0]
    assert list(calls[2].kwargs) == ["input"]


@pytest.mark.parametrize(
    ("stem", "words"),
    [
        ("no_get_inputs", ["does not define get_inputs"]),
        ("broken_import", ["failed to import", "a_module_that_does_not_exist"]),
        ("does_not_exist", ["does not exist"]),
    ],
)
def test_a_broken_model_file_is_a_usage_error_naming_file_and_function(model_file, stem, words):
    with pytest.raises(WorkloadError) as info:
        load_model_file(model_file(stem))
    assert isinstance(info.value, UsageError)
    message = str(info.value)
    assert stem in message
    for word in words:
        assert word in message


def test_get_model_returning_the_wrong_thing_names_the_function(model_file):
    module = load_model_file(model_file("returns_wrong_thing"))
    with pytest.raises(WorkloadError, match=r"get_model\(device\).*returned str"):
        build_model(module, "cpu")


def test_get_inputs_returning_the_wrong_thing_names_the_function(tmp_path):
    path = tmp_path / "m.py"
    path.write_text(
        "import torch\n"
        "def get_model(device): return torch.nn.Linear(2, 2)\n"
        "def get_inputs(device): return [(torch.ones(1, 2),), 3]\n"
    )
    module = load_model_file(path)
    with pytest.raises(WorkloadError, match=r"get_inputs\(device\).*int as element 1"):
        build_calls(module, "cpu")
