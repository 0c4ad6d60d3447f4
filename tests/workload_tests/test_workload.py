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


def test_a_traffic_mix_stands_in_for_get_inputs_each_request_with_its_weight(model_file):
    module = load_model_file(model_file("traffic"))  # no get_inputs: get_traffic stands in
    short, long = build_calls(module, "cpu")
    assert (short.weight, long.weight) == (9.0, 1.0)
    assert short.args[0].shape == (1, 16) and list(long.kwargs) == ["input"]


@pytest.mark.parametrize(
    ("returned", "said"),
    [
        ("[]", "returned an empty list"),
        ("(torch.ones(1, 2), 3)", "returned tuple"),  # not a list of requests
        ("[(torch.ones(1, 2),)]", "a tuple as request 0"),  # no weight
        ("[((torch.ones(1, 2),), 1), ((torch.ones(3, 2),), 0)]", "the weight 0 for request 1"),
        ("[((torch.ones(1, 2),), True)]", "the weight True for request 0"),
        ("[((torch.ones(1, 2),), float('nan'))]", "the weight nan for request 0"),
        ("[(3, 1)]", "returned int as the inputs of request 0"),
    ],
)
def test_a_broken_traffic_mix_says_the_rule_and_what_it_got(tmp_path, returned, said):
    path = tmp_path / "m.py"
    path.write_text(
        "import torch\n"
        "def get_model(device): return torch.nn.Linear(2, 2)\n"
        f"def get_traffic(device): return {returned}\n"
    )
    with pytest.raises(WorkloadError) as info:
        build_calls(load_model_file(path), "cpu")
    message = str(info.value)
    assert "(inputs, weight)" in message or "get_traffic(device)" in message
    assert said in message, message
