"""The shape plan at run time (autotune.runtime.shapes): buckets, padding and cutting back,
the plan as config data, and the warm-up calls made from the shapes a file lists."""

from __future__ import annotations

import pytest
import torch

import autotune
from autotune.runtime.config import CompileConfig, ConfigError
from autotune.runtime.shapes import (
    Call,
    bucket,
    call_spec,
    cut,
    plan_warmup,
    planned,
    synthesized,
)

TOKENS = {"inputs": {"0": {"dim": 1, "value": 0}}, "outputs": {"": 1}}


@pytest.mark.parametrize(
    ("length", "plan", "padded"),
    [(1, "pad-pow2", 8), (8, "pad-pow2", 8), (9, "pad-pow2", 16), (159, "pad-pow2", 256),
     (1, "pad-64", 64), (64, "pad-64", 64), (65, "pad-64", 128), (30, "pad-16", 32)],
)  # fmt: skip
def test_a_length_pads_to_its_bucket(length: int, plan: str, padded: int) -> None:
    assert bucket(length, plan) == padded


def test_padding_runs_outside_the_call_and_cuts_a_bare_tensor_back() -> None:
    seen = []

    def call(x: torch.Tensor) -> torch.Tensor:
        seen.append(x.shape[1])
        return x * 2

    run = planned(call, {"plan": "pad-pow2", **TOKENS})
    out = run(torch.ones(2, 5))
    assert seen == [8] and out.shape == (2, 5) and torch.equal(out, torch.full((2, 5), 2.0))


def test_a_tuple_output_is_cut_by_position_and_a_missing_one_is_named() -> None:
    out = cut((torch.zeros(1, 8), torch.zeros(1, 3)), {"0": 1}, 5)
    assert [t.shape[1] for t in out] == [5, 3]
    with pytest.raises(ValueError, match="cuts the output 'logits'"):
        cut((torch.zeros(1, 8),), {"logits": 1}, 5)


def test_declared_inputs_of_different_lengths_are_refused() -> None:
    declared = {"plan": "pad-pow2", "inputs": {"a": {"dim": 1, "value": 0},
                "b": {"dim": 1, "value": 0}}, "outputs": {}}  # fmt: skip
    with pytest.raises(ValueError, match="differ in length"):
        planned(lambda a, b: a, declared)(a=torch.ones(1, 3), b=torch.ones(1, 4))


def test_a_plan_is_config_data_checked_like_the_rest() -> None:
    config = CompileConfig(backend="eager", shapes={"plan": "marked", **TOKENS})
    assert CompileConfig.from_dict(config.to_dict()) == config
    assert "shapes=marked" in config.brief()
    assert "shapes" not in CompileConfig(backend="eager").to_dict()  # no plan: hash as before
    with pytest.raises(ConfigError, match="shapes.plan: expected one of marked, pad-pow2"):
        CompileConfig(backend="eager", shapes={"plan": "pad-7", **TOKENS})


def test_a_marked_plan_keeps_the_state_dict_and_compiles_one_graph() -> None:
    torch._dynamo.reset()
    torch._dynamo.utils.counters.clear()
    model = torch.nn.Sequential(torch.nn.Linear(4, 4))
    keys = list(model.state_dict())
    fast = autotune.apply(model, CompileConfig(backend="eager", shapes={"plan": "marked",
                          "inputs": {"0": {"dim": 0, "value": 0}}, "outputs": {}}))  # fmt: skip
    with torch.no_grad():
        for rows in (3, 5, 9):
            assert fast(torch.ones(rows, 4)).shape == (rows, 4)
    assert torch._dynamo.utils.counters["stats"]["unique_graphs"] == 1
    assert [k.removeprefix("_orig_mod.") for k in fast.state_dict()] == keys


def test_warm_up_calls_are_made_from_the_shapes_a_file_lists() -> None:
    spec = call_spec((torch.ones(2, 3, dtype=torch.long),), {"mask": torch.zeros(2, 3)})
    assert spec == {"args": [{"shape": [2, 3], "dtype": "int64"}],
                    "kwargs": {"mask": {"shape": [2, 3], "dtype": "float32"}}}  # fmt: skip
    made = synthesized(spec, "cpu")
    assert isinstance(made, Call) and made.args[0].dtype == torch.long
    assert made.kwargs["mask"].shape == (2, 3)
    assert synthesized(call_spec((3,), {}), "cpu") is None  # not a tensor: not made
    assert len(plan_warmup({"warmup": [spec, call_spec((3,), {})]}, "cpu")) == 1
    with pytest.raises(ValueError, match='warmup="plan" compiles every shape'):
        plan_warmup({}, "cpu")


def test_a_compile_threshold_runs_larger_batches_eager() -> None:
    torch._dynamo.reset()
    torch._dynamo.utils.counters.clear()
    model = torch.nn.Sequential(torch.nn.Linear(4, 4))
    shapes = {"plan": "auto", "eager_above": 4, "inputs": {"0": {"dim": 0, "value": 0}},
              "outputs": {}}  # fmt: skip
    fast = autotune.apply(model, CompileConfig(backend="eager", dynamic=False, shapes=shapes))
    with torch.no_grad():
        for rows in (2, 3, 8, 16):
            torch.testing.assert_close(fast(torch.ones(rows, 4)), model(torch.ones(rows, 4)))
    assert torch._dynamo.utils.counters["stats"]["unique_graphs"] == 2  # batches 2 and 3 only


def test_a_compile_threshold_needs_a_whole_model_and_auto_needs_a_threshold() -> None:
    class Two(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.a = torch.nn.Linear(4, 4)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return self.a(x)

    shapes = {"plan": "auto", "eager_above": 4, **TOKENS}
    regional = CompileConfig(backend="eager", scope={"compile": ["a"]}, shapes=shapes)
    with pytest.raises(ValueError, match="only a whole-model scope keeps"):
        autotune.apply(Two(), regional)
    with pytest.raises(ConfigError, match="shapes.plan: expected one of marked"):
        CompileConfig(backend="eager", shapes={"plan": "auto", **TOKENS})
    with pytest.raises(ConfigError, match="eager_above: expected a batch size >= 1"):
        CompileConfig(backend="eager", shapes={"plan": "marked", "eager_above": 0, **TOKENS})
