"""The accuracy contract: parsing, canonical text, and judging outputs against eager fp32."""

from __future__ import annotations

import math

import pytest
import torch

from autotune.measure import ContractError, parse_contract


@pytest.mark.parametrize(
    ("spec", "canonical"),
    [
        ("cosine>=0.999", "cosine>=0.999"),
        (" max_abs <= 1e-2 , cosine>=0.999", "max_abs<=0.01,cosine>=0.999"),
        ("rtol=1e-2,atol=1e-3", "rtol=0.01,atol=0.001"),
        ("accuracy>=0.99", "accuracy>=0.99"),
        ("accuracy<=0.5", "accuracy<=0.5"),
    ],
)
def test_a_contract_reads_to_its_canonical_text(spec: str, canonical: str) -> None:
    assert str(parse_contract(spec)) == canonical
    assert str(parse_contract(canonical)) == canonical


@pytest.mark.parametrize(
    ("spec", "said"),
    [
        ("", "non-empty"),
        ("cosine>0.9", "write cosine>=X"),
        ("max_abs>=1e-2", "write max_abs<=X"),
        ("cosin>=0.9", "did you mean cosine"),
        ("max_abs<=lots", "not a number"),
        ("max_abs<=inf", "must be finite"),
        ("max_abs<=-1", "cannot be negative"),
        ("cosine>=2", "lies in [-1, 1]"),
        ("rtol<=1e-2", "write rtol=X"),
        ("cosine>=0.9,cosine>=0.99", "stated twice"),
        ("max_abs", "has no <=, >= or ="),
    ],
)
def test_a_bad_contract_says_which_clause_and_why(spec: str, said: str) -> None:
    with pytest.raises(ContractError, match="cannot be read|non-empty") as raised:
        parse_contract(spec)
    assert said in str(raised.value)


def test_bf16_outputs_pass_a_cosine_contract_and_report_their_dtype() -> None:
    expected = [torch.randn(64, 32)]
    actual = [expected[0].bfloat16()]
    verdict = parse_contract("cosine>=0.999,max_abs<=0.05").judge(expected, actual)
    assert verdict.ok, verdict.detail
    assert 0.999 < verdict.errors["cosine"] <= 1.0
    assert 0 < verdict.errors["max_abs"] < 0.05
    assert verdict.errors["dtype_changes"] == ["out[0]: float32 -> bfloat16"]


def test_a_contract_fails_naming_the_measured_metric() -> None:
    expected = [torch.randn(1000)]
    actual = [expected[0] + 0.1 * torch.randn(1000)]
    verdict = parse_contract("cosine>=0.9999").judge(expected, actual)
    assert not verdict.ok
    assert "outside the accuracy contract cosine>=0.9999: cosine measured" in verdict.detail


def test_rtol_atol_judges_every_element() -> None:
    expected = [torch.zeros(10)]
    actual = [torch.zeros(10)]
    actual[0][7] = 0.01
    contract = parse_contract("rtol=0,atol=1e-3")
    verdict = contract.judge(expected, actual)
    assert not verdict.ok and "at 1 of 10 elements" in verdict.detail
    assert parse_contract("rtol=0,atol=0.02").judge(expected, actual).ok


def test_a_nan_fails_a_contract_that_names_no_elementwise_rule() -> None:
    expected = [torch.ones(8)]
    actual = [torch.ones(8)]
    actual[0][2] = math.nan
    verdict = parse_contract("max_rel<=1").judge(expected, actual)
    assert not verdict.ok
    assert "non-finite" in verdict.detail


def test_integer_outputs_stay_exact_under_any_contract() -> None:
    expected = [(torch.randn(4), torch.tensor([1, 2, 3]))]
    actual = [(expected[0][0], torch.tensor([1, 2, 4]))]
    verdict = parse_contract("cosine>=0.5").judge(expected, actual)
    assert not verdict.ok and "int64 must match exactly" in verdict.detail


def test_the_model_files_metric_is_the_worst_over_calls() -> None:
    expected = [torch.tensor([1.0, 2.0]), torch.tensor([3.0, 4.0])]
    actual = [torch.tensor([1.0, 2.0]), torch.tensor([4.0, 3.0])]

    def top1_agreement(output: torch.Tensor, reference: torch.Tensor) -> float:
        return float(output.argmax() == reference.argmax())

    contract = parse_contract("accuracy>=1")
    verdict = contract.judge(expected, actual, top1_agreement)
    assert verdict.errors["accuracy"] == 0.0
    assert not verdict.ok and "accuracy measured 0" in verdict.detail
    with pytest.raises(ContractError, match="defines no accuracy"):
        contract.judge(expected, actual, None)


def test_every_metric_is_recorded_whatever_the_contract_names() -> None:
    expected = [torch.randn(16)]
    verdict = parse_contract("max_abs<=1").judge(expected, [expected[0] * 1.001])
    assert set(verdict.errors) >= {"max_abs", "max_rel", "cosine"}


def test_top1_is_a_fraction_judged_on_a_generation() -> None:
    contract = parse_contract("top1>=0.99,cosine>=0.999")
    assert str(contract) == "top1>=0.99,cosine>=0.999"
    verdict = contract.judge_generation(
        {"top1": 0.95, "cosine": 0.9995, "first_divergence": "request 0, sequence 1, new token 3"}
    )
    assert not verdict.ok
    assert verdict.detail == (
        "outside the accuracy contract top1>=0.99,cosine>=0.999: top1 measured 0.95 (first "
        "different argmax: request 0, sequence 1, new token 3)"
    )
    assert contract.judge_generation({"top1": 1.0, "cosine": 0.9999}).ok
    with pytest.raises(ContractError, match="top1 is a fraction of positions"):
        parse_contract("top1>=1.5")
    with pytest.raises(ContractError, match="write top1>=X"):
        parse_contract("top1<=0.5")
