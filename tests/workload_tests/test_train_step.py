"""A model file's (or bundle's) ``train_step``, and the fixed step when it defines none."""

from __future__ import annotations

import types

import pytest
import torch
from torch import nn

from autotune.workload import (
    Call,
    WorkloadError,
    load_model_file,
    train_step_function,
    write_bundle,
)


def _module(**functions) -> types.ModuleType:
    module = types.ModuleType("model_file")
    module.__file__ = "model.py"
    module.__dict__.update(functions)
    return module


def _setup():
    torch.manual_seed(0)
    model = nn.Linear(4, 1)
    return model, torch.optim.SGD(model.parameters(), lr=0.1), Call((torch.randn(3, 4),), {})


def test_without_a_train_step_the_fixed_step_runs_and_returns_the_loss():
    model, optimizer, call = _setup()
    before = model.weight.detach().clone()
    loss = train_step_function(_module())(model, optimizer, call)
    assert loss.requires_grad and loss.numel() == 1  # the default loss: the output's mean
    assert not torch.equal(before, model.weight) and model.weight.grad is None


def test_the_users_step_gets_the_inputs_and_may_return_a_number():
    seen = []

    def train_step(model, optimizer, inputs):
        seen.append(inputs)
        return 1.5

    model, optimizer, call = _setup()
    loss = train_step_function(_module(train_step=train_step))(model, optimizer, call)
    assert seen == [call.inputs] and loss.item() == 1.5


@pytest.mark.parametrize(
    ("returned", "said"),
    [(None, "returned NoneType"), (torch.ones(2), "returned a 2 float32 tensor"),
     (torch.tensor(3), "returned a scalar int64 tensor")],
)  # fmt: skip
def test_a_step_that_returns_no_loss_is_refused_saying_what_to_return(returned, said):
    model, optimizer, call = _setup()
    step = train_step_function(_module(train_step=lambda m, o, i: returned))
    with pytest.raises(WorkloadError, match="Add `return loss`") as caught:
        step(model, optimizer, call)
    assert said in str(caught.value) and "train_step(model, optimizer, inputs)" in str(
        caught.value
    )


def test_a_train_step_that_is_not_a_function_is_refused():
    with pytest.raises(WorkloadError, match="must be a function train_step"):
        train_step_function(_module(train_step=3))


def test_an_exception_inside_the_step_propagates_as_it_is():
    def train_step(model, optimizer, inputs):
        raise KeyError("labels")

    model, optimizer, call = _setup()
    with pytest.raises(KeyError):
        train_step_function(_module(train_step=train_step))(model, optimizer, call)


def test_a_bundle_has_a_train_step_only_when_given_one(tmp_path):
    def train_step(model, optimizer, inputs):
        return 0.5

    model = nn.Linear(4, 1)
    with_step = load_model_file(
        write_bundle(tmp_path, model, (torch.ones(2, 4),), train_step=train_step)
    )
    assert with_step.train_step(None, None, None) == 0.5
    without = load_model_file(write_bundle(tmp_path / "b", model, (torch.ones(2, 4),)))
    assert getattr(without, "train_step", None) is None


def test_units_count_what_one_sweep_processes_in_the_files_unit():
    from autotune.workload import count_units

    calls = [Call((torch.ones(2, 5),), {}), Call((torch.ones(3, 7),), {})]
    tokens = _module(units=lambda inputs: (inputs[0].numel(), "tokens"))
    assert count_units(tokens, calls) == {"name": "tokens", "per_sweep": 31}
    samples = _module(units=lambda inputs: torch.tensor(inputs[0].shape[0]))
    assert count_units(samples, calls) == {"name": "samples", "per_sweep": 5}
    assert count_units(_module(), calls) is None


@pytest.mark.parametrize("returned", [0, -1, "8", (8, ""), True, float("nan")])
def test_units_that_are_no_positive_count_are_refused(returned):
    from autotune.workload import count_units

    with pytest.raises(WorkloadError, match="must return what one call processes"):
        count_units(_module(units=lambda inputs: returned), [Call((torch.ones(1),), {})])
