"""The training accuracy contract: ``loss_rel`` and ``grad_cosine`` read, fit only a training
workload, and judge steps against eager fp32's."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import pytest
import torch

from autotune.measure import (
    INFERENCE_METRICS,
    TRAINING_METRICS,
    ContractError,
    parse_contract,
    training_errors,
    workload_problems,
)
from autotune.measure._contract import BOUNDS, GENERATE_METRICS


@dataclass
class Step:
    loss: torch.Tensor
    grads: dict[str, torch.Tensor | None] = field(default_factory=dict)


def step(loss: float, **grads: torch.Tensor | None) -> Step:
    return Step(torch.tensor(loss), dict(grads))


def test_training_clauses_read_to_their_canonical_text() -> None:
    contract = parse_contract(" loss_rel <= 2e-2 , grad_cosine>=0.99")
    assert str(contract) == "loss_rel<=0.02,grad_cosine>=0.99"
    assert contract.training
    assert not parse_contract("cosine>=0.999").training
    assert not parse_contract("loss_rel<=0.02,cosine>=0.999").training


def test_the_metric_lists_split_every_bound() -> None:
    assert BOUNDS["loss_rel"] == "<=" and BOUNDS["grad_cosine"] == ">="
    assert TRAINING_METRICS == ("loss_rel", "grad_cosine")
    assert set(INFERENCE_METRICS) == {"max_abs", "max_rel", "cosine", "accuracy", "rtol", "atol"}
    assert GENERATE_METRICS == ("top1", "cosine") and BOUNDS["top1"] == ">="
    assert set(BOUNDS) <= set(INFERENCE_METRICS) | set(TRAINING_METRICS) | set(GENERATE_METRICS)


@pytest.mark.parametrize(
    ("spec", "said"),
    [
        ("loss_rel>=0.1", "write loss_rel<=X"),
        ("grad_cosine<=0.9", "write grad_cosine>=X"),
        ("loss_rel<=-1", "cannot be negative"),
        ("grad_cosine>=1.5", "lies in [-1, 1]"),
        ("grad_cosin>=0.9", "did you mean grad_cosine"),
    ],
)
def test_a_bad_training_clause_says_why(spec: str, said: str) -> None:
    with pytest.raises(ContractError, match="cannot be read") as raised:
        parse_contract(spec)
    assert said in str(raised.value) and "loss_rel<=X and grad_cosine>=X" in str(raised.value)


def test_a_training_workload_refuses_an_inference_clause() -> None:
    problems = workload_problems(parse_contract("cosine>=0.999"), "train")
    assert len(problems) == 1
    assert "loss_rel<=X, grad_cosine>=X" in problems[0]
    assert "never by fp32 output tolerances" in problems[0]
    assert "'loss_rel<=0.02,grad_cosine>=0.99'" in problems[0]
    assert workload_problems(parse_contract("loss_rel<=0.02,grad_cosine>=0.99"), "train") == []


def test_an_inference_workload_refuses_a_training_clause() -> None:
    problems = workload_problems(parse_contract("grad_cosine>=0.99"), "infer")
    assert len(problems) == 1 and "judges a training step" in problems[0]
    assert "cosine>=0.999" in problems[0]
    assert workload_problems(parse_contract("cosine>=0.999,max_abs<=1e-2"), "infer") == []


def test_a_mixed_contract_gets_one_message_naming_the_wrong_clauses() -> None:
    contract = parse_contract("cosine>=0.999,max_abs<=1e-2,loss_rel<=0.02")
    (problem,) = workload_problems(contract, "train", shown=lambda s: f"--accuracy '{s}'")
    assert problem.startswith("cosine>=0.999, max_abs<=0.01 in the accuracy contract")
    assert "--accuracy 'loss_rel<=0.02,grad_cosine>=0.99'" in problem
    (problem,) = workload_problems(contract, "infer")
    assert problem.startswith("loss_rel<=0.02 in the accuracy contract")


def test_training_errors_take_the_worst_step_and_parameter() -> None:
    g = torch.tensor([1.0, 2.0, 3.0])
    expected = [step(2.0, w=g, b=g), step(4.0, w=g, b=g)]
    actual = [step(2.02, w=g, b=g), step(3.8, w=g, b=torch.tensor([1.0, 2.0, -3.0]))]
    errors = training_errors(expected, actual)
    assert errors["loss_rel"] == pytest.approx(0.05)
    assert errors["grad_cosine"] == pytest.approx(-4 / 14)
    assert errors["grad_worst"] == "b"


def test_none_grads_are_skipped_together_and_fail_alone() -> None:
    g = torch.ones(4)
    assert training_errors([step(1.0, w=g, frozen=None)], [step(1.0, w=g, frozen=None)]) == {
        "loss_rel": 0.0,
        "grad_cosine": pytest.approx(1.0),
        "grad_worst": "w",
    }
    errors = training_errors([step(1.0, w=g, b=g)], [step(1.0, w=g, b=None)])
    assert errors["grad_cosine"] == 0.0 and errors["grad_worst"] == "b"


def test_no_gradient_measures_nothing_and_a_grad_clause_fails() -> None:
    steps = [step(1.0, frozen=None)]
    errors = training_errors(steps, steps)
    assert errors == {"loss_rel": 0.0, "grad_cosine": None}
    verdict = parse_contract("grad_cosine>=0.99").judge_steps(steps, steps)
    assert not verdict.ok and "grad_cosine measured nothing" in verdict.detail


def test_zero_grads_agree_and_a_zero_against_a_nonzero_does_not() -> None:
    zero, one = torch.zeros(3), torch.ones(3)
    assert training_errors([step(1.0, w=zero)], [step(1.0, w=zero)])["grad_cosine"] == 1.0
    assert training_errors([step(1.0, w=one)], [step(1.0, w=zero)])["grad_cosine"] == 0.0


def test_nan_and_inf_fail_where_eager_is_finite() -> None:
    g = torch.ones(3)
    bad = torch.tensor([1.0, math.nan, 1.0])
    errors = training_errors([step(1.0, w=g)], [step(math.nan, w=bad)])
    assert errors["loss_rel"] == math.inf and errors["grad_cosine"] == -1.0
    assert training_errors([step(1.0)], [step(math.inf)])["loss_rel"] == math.inf
    both = training_errors([step(math.nan, w=bad)], [step(math.nan, w=bad.clone())])
    assert both["loss_rel"] == 0.0 and both["grad_cosine"] == pytest.approx(1.0)


def test_a_zero_loss_is_compared_absolutely() -> None:
    assert training_errors([step(0.0)], [step(0.0)])["loss_rel"] == 0.0
    assert training_errors([step(0.0)], [step(1e-3)])["loss_rel"] > 1e300


def test_steps_are_compared_one_for_one() -> None:
    with pytest.raises(ValueError, match="one for one"):
        training_errors([step(1.0)], [])


def test_a_bf16_gradient_computes_its_cosine_in_high_precision() -> None:
    g = torch.randn(4096)
    errors = training_errors([step(1.0, w=g)], [step(1.0, w=g.bfloat16())])
    assert 0.9999 < errors["grad_cosine"] <= 1.0


def test_judge_steps_passes_within_the_contract() -> None:
    g = torch.randn(64)
    expected = [step(1.0, w=g)]
    actual = [step(1.01, w=g + 1e-4 * torch.randn(64))]
    verdict = parse_contract("loss_rel<=0.02,grad_cosine>=0.99").judge_steps(expected, actual)
    assert verdict.ok, verdict.detail
    assert verdict.errors["loss_rel"] == pytest.approx(0.01)


def test_judge_steps_fails_naming_the_metric_and_the_parameter() -> None:
    g = torch.tensor([1.0, 0.0])
    expected = [step(1.0, **{"fc.weight": g})]
    actual = [step(1.031, **{"fc.weight": torch.tensor([0.0, 1.0])})]
    verdict = parse_contract("loss_rel<=0.02,grad_cosine>=0.99").judge_steps(expected, actual)
    assert not verdict.ok
    assert verdict.detail == (
        "outside the accuracy contract loss_rel<=0.02,grad_cosine>=0.99: loss_rel measured "
        "0.031; grad_cosine measured 0 (parameter 'fc.weight')"
    )


def test_judge_steps_needs_a_training_clause() -> None:
    with pytest.raises(ContractError, match="no training clause"):
        parse_contract("cosine>=0.999").judge_steps([step(1.0)], [step(1.0)])


def test_a_gradient_zero_but_for_rounding_is_left_out_of_grad_cosine() -> None:
    # A key projection's bias under softmax: exactly zero, so eager holds fp32 rounding
    # (1e-8 of the other gradients) and bf16 its own (1e-4): two directions of noise.
    gen = torch.Generator().manual_seed(0)
    weights = {f"w{i}": torch.randn(64, generator=gen) for i in range(4)}
    eager = step(2.0, **weights, bias=1e-8 * torch.randn(8, generator=gen))
    bf16 = step(2.0, **{k: v * 1.001 for k, v in weights.items()},
                bias=1e-4 * torch.randn(8, generator=gen))  # fmt: skip
    errors = training_errors([eager], [bf16])
    assert errors["grad_cosine"] == pytest.approx(1.0) and errors["grad_zero"] == 1
    assert errors["grad_worst"] != "bias"
    # A real gradient where eager has none is no rounding: its direction counts.
    wrong = step(2.0, **weights, bias=torch.ones(8))
    errors = training_errors([eager], [wrong])
    assert errors["grad_worst"] == "bias" and errors["grad_cosine"] < 0.5
    assert "grad_zero" not in errors
