from __future__ import annotations

import dataclasses
import math
import re
from collections import namedtuple
from collections.abc import Callable
from typing import Any

import pytest
import torch
import torch.utils._pytree as pytree
from transformers.modeling_outputs import BaseModelOutput

from autotune.measure.accuracy import TOLERANCES, clone_outputs, compare_outputs, tolerance_for

FLOAT_DTYPES = [torch.float64, torch.float32, torch.bfloat16, torch.float16]
COMPLEX_DTYPES = [torch.complex128, torch.complex64]


@dataclasses.dataclass
class Output:
    logits: torch.Tensor
    step: int


def _nudged(dtype: torch.dtype, times_tolerance: float) -> tuple[torch.Tensor, torch.Tensor]:
    """Return ones and ones moved by ``times_tolerance`` of the allowed difference at 1.0."""
    rtol, atol = tolerance_for(dtype)
    expected = torch.ones(4, dtype=dtype)
    offset = times_tolerance * (rtol + atol)
    if dtype.is_complex:
        return expected, (torch.ones(4, dtype=torch.complex128) + offset * 1j).to(dtype)
    return expected, (torch.ones(4, dtype=torch.float64) + offset).to(dtype)


def test_equal_outputs_are_ok_with_zero_diffs() -> None:
    out = (torch.randn(3, 4), {"n": 2, "name": "x", "none": None}, [1.5, True])
    report = compare_outputs(out, clone_outputs(out))
    assert (report.ok, report.max_abs_diff, report.max_rel_diff, report.detail) == (
        True,
        0.0,
        0.0,
        "",
    )


@pytest.mark.parametrize("dtype", FLOAT_DTYPES + COMPLEX_DTYPES)
def test_within_tolerance_is_ok(dtype: torch.dtype) -> None:
    report = compare_outputs(*_nudged(dtype, 0.4))
    assert report.ok, report.detail
    assert report.max_abs_diff > 0


@pytest.mark.parametrize("dtype", FLOAT_DTYPES + COMPLEX_DTYPES)
def test_outside_tolerance_fails_naming_dtype_and_tolerance(dtype: torch.dtype) -> None:
    report = compare_outputs(*_nudged(dtype, 3.0))
    rtol, atol = tolerance_for(dtype)
    assert not report.ok
    assert report.detail.startswith("out: ")
    assert str(dtype).removeprefix("torch.") in report.detail
    assert f"rtol={rtol:.3g}, atol={atol:.3g}" in report.detail
    assert "\n" not in report.detail


def test_float32_is_looser_than_torch_testing_but_catches_real_errors() -> None:
    expected = torch.full((8,), 100.0)
    assert compare_outputs(expected, expected * (1 + 5e-5)).ok
    with pytest.raises(AssertionError):
        torch.testing.assert_close(expected * (1 + 5e-5), expected)
    assert not compare_outputs(expected, expected * (1 + 1e-3)).ok


def test_relaxed_multiplies_float_tolerances_by_ten() -> None:
    assert tolerance_for(torch.float32, relaxed=True) == pytest.approx((1e-3, 1e-3))
    expected, actual = _nudged(torch.float32, 3.0)
    assert not compare_outputs(expected, actual).ok
    assert compare_outputs(expected, actual, relaxed=True).ok


def test_tolerance_table_covers_complex_like_real_parts() -> None:
    assert TOLERANCES[torch.complex64] == TOLERANCES[torch.float32]
    assert TOLERANCES[torch.complex128] == TOLERANCES[torch.float64]
    assert TOLERANCES[torch.complex32] == TOLERANCES[torch.float16]


def test_report_figures_are_the_worst_abs_and_rel_diff() -> None:
    report = compare_outputs(torch.tensor([1.0, 2.0, 4.0]), torch.tensor([1.0, 2.5, 4.0]))
    assert not report.ok
    assert report.max_abs_diff == pytest.approx(0.5)
    assert report.max_rel_diff == pytest.approx(0.25)
    assert "at 1 of 3 elements" in report.detail
    assert "first at [1]: expected 2.0, got 2.5" in report.detail


def test_figures_take_the_worst_over_all_leaves() -> None:
    expected = {"a": torch.tensor([1.0]), "b": torch.tensor([10.0])}
    actual = {"a": torch.tensor([1.00002]), "b": torch.tensor([10.0001])}
    report = compare_outputs(expected, actual)
    assert report.ok
    assert report.max_abs_diff == pytest.approx(1e-4, rel=2e-2)  # from "b"
    assert report.max_rel_diff == pytest.approx(2e-5, rel=2e-2)  # from "a"


@pytest.mark.parametrize(
    ("expected", "actual", "ok"),
    [
        ([1.0, math.nan], [1.0, math.nan], True),
        ([1.0, math.nan], [1.0, 1.0], False),
        ([1.0, 1.0], [1.0, math.nan], False),
        ([math.inf, -math.inf], [math.inf, -math.inf], True),
        ([math.inf], [-math.inf], False),
        ([math.inf], [1e30], False),
        ([1e30], [math.inf], False),
    ],
)
def test_nan_and_inf(expected: list[float], actual: list[float], ok: bool) -> None:
    report = compare_outputs(torch.tensor(expected), torch.tensor(actual))
    assert report.ok is ok
    if not ok:
        assert report.max_abs_diff == math.inf


def test_python_floats_use_float32_tolerance_and_nan_rules() -> None:
    assert compare_outputs(1.0, 1.00005).ok
    report = compare_outputs({"loss": 1.0}, {"loss": 1.1})
    assert not report.ok
    assert report.detail.startswith('out["loss"]: float outside tolerance (rtol=0.0001')
    assert compare_outputs(math.nan, math.nan).ok
    assert not compare_outputs(1.0, math.nan).ok


@pytest.mark.parametrize("dtype", [torch.int64, torch.int32, torch.uint8, torch.bool])
def test_integers_and_bools_must_match_exactly(dtype: torch.dtype) -> None:
    expected = torch.tensor([0, 1, 1, 0]).to(dtype)
    assert compare_outputs(expected, expected.clone()).ok
    actual = expected.clone()
    actual[2] = 0
    report = compare_outputs(expected, actual)
    assert not report.ok
    assert "must match exactly at 1 of 4 elements" in report.detail


def test_int64_beyond_float64_precision_is_still_exact() -> None:
    big = 2**60
    assert not compare_outputs(torch.tensor([big]), torch.tensor([big + 1])).ok


def test_python_scalars_ints_bools_and_strings_are_exact() -> None:
    assert compare_outputs([3, True, "a"], [3, True, "a"]).ok
    assert compare_outputs(3, 4).detail == "out: int differs: expected 3, got 4"
    assert compare_outputs(["a"], ["b"]).detail == "out[0]: str differs: expected 'a', got 'b'"
    assert "type differs: expected int, got float" in compare_outputs(1, 1.0).detail
    assert "type differs: expected bool, got int" in compare_outputs(True, 1).detail


@pytest.mark.parametrize(
    ("expected", "actual", "detail"),
    [
        (torch.ones(2, 3), torch.ones(3, 2), "out: shape differs: expected (2, 3), got (3, 2)"),
        (
            [torch.ones(2)],
            [torch.ones(2, dtype=torch.float64)],
            "out[0]: dtype differs: expected torch.float32, got torch.float64",
        ),
        ((torch.ones(1),), ([1.0],), "out[0]: type differs: expected Tensor, got list"),
        ((1, 2), [1, 2], "out: type differs: expected tuple, got list"),
        ((1, 2), (1, 2, 3), "out: length of tuple differs: expected 2, got 3"),
        ({"a": 1, "b": 2}, {"a": 1, "c": 2}, "out: keys differ: missing ['b'], unexpected ['c']"),
        (None, torch.ones(1), "out: type differs: expected NoneType, got Tensor"),
    ],
)
def test_structural_mismatch_names_the_path(expected: Any, actual: Any, detail: str) -> None:
    report = compare_outputs(expected, actual)
    assert not report.ok
    assert report.detail == detail


def test_nested_path_names_the_first_failing_leaf() -> None:
    expected = [{"logits": torch.zeros(2, 2), "loss": torch.tensor(1.0)}, {"x": torch.ones(1)}]
    actual = clone_outputs(expected)
    actual[0]["logits"][1, 0] = 1.0
    actual[1]["x"] += 1
    report = compare_outputs(expected, actual)
    assert report.detail.startswith('out[0]["logits"]: float32 outside tolerance')
    assert "first at [1, 0]: expected 0.0, got 1.0" in report.detail
    assert report.max_abs_diff == 1.0


def test_dataclass_fields_are_walked() -> None:
    expected = Output(logits=torch.ones(2), step=3)
    assert compare_outputs(expected, Output(logits=torch.ones(2), step=3)).ok
    report = compare_outputs(expected, Output(logits=torch.ones(2), step=4))
    assert report.detail == "out.step: int differs: expected 3, got 4"


def test_transformers_model_output_is_compared_by_key() -> None:
    hidden = torch.randn(2, 5, 8)
    expected = BaseModelOutput(last_hidden_state=hidden)
    assert compare_outputs(expected, BaseModelOutput(last_hidden_state=hidden * (1 + 1e-6))).ok
    report = compare_outputs(expected, BaseModelOutput(last_hidden_state=hidden + 1))
    assert report.detail.startswith('out["last_hidden_state"]: float32 outside tolerance')
    extra = BaseModelOutput(last_hidden_state=hidden, hidden_states=(hidden,))
    assert "unexpected ['hidden_states']" in compare_outputs(expected, extra).detail
    as_tuple = compare_outputs(expected, (hidden,)).detail
    assert as_tuple == "out: type differs: expected BaseModelOutput, got tuple"


class State:
    """A plain object holding tensors (like a KV cache): compared attribute by attribute."""

    def __init__(self, keys: torch.Tensor, step: int) -> None:
        self.keys, self.step = keys, step


class Version:
    def __init__(self, number: int) -> None:
        self.number = number

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Version) and other.number // 10 == self.number // 10

    __hash__ = None  # type: ignore[assignment]


def test_plain_objects_are_compared_by_their_attributes() -> None:
    keys = torch.randn(3)
    assert compare_outputs(State(keys, 1), State(keys * (1 + 1e-6), 1)).ok
    report = compare_outputs([State(keys, 1)], [State(keys + 1, 1)])
    assert report.detail.startswith("out[0].keys: float32 outside tolerance")
    assert compare_outputs(Version(11), Version(12)).ok  # its own __eq__ decides
    assert not compare_outputs(Version(11), Version(21)).ok
    cloned = clone_outputs(State(keys, 1))
    assert cloned.keys.data_ptr() != keys.data_ptr() and cloned.step == 1


@dataclasses.dataclass
class Gpt2Run:
    model: torch.nn.Module
    input_ids: torch.Tensor
    output: Any  # BaseModelOutputWithPastAndCrossAttentions holding a DynamicCache


@pytest.fixture(scope="module")
def gpt2() -> Gpt2Run:
    """A tiny GPT-2 with use_cache left at its default (True): its output holds a KV cache."""
    from transformers import GPT2Config, GPT2Model

    torch.manual_seed(0)
    config = GPT2Config(n_layer=2, n_embd=64, n_head=4, n_positions=64, vocab_size=100)
    model = GPT2Model(config).eval()
    input_ids = torch.randint(0, 100, (2, 16))  # [batch, seq]
    with torch.no_grad():
        return Gpt2Run(model, input_ids, model(input_ids=input_ids))


def _run(gpt2: Gpt2Run, model: Any) -> Any:
    with torch.no_grad():
        return model(input_ids=gpt2.input_ids)


# last_hidden_state, and the keys and values of each of the 2 layers of the cache
GPT2_TENSORS = 1 + 2 * 2
# How the path names the cache depends on the transformers version's pytree registration of its
# outputs: "past_key_values", or "cache" (5.24.0, installed 2026-11-24): either names the cache.
CACHE = r'out\["(past_key_values|cache)"\]'


def test_gpt2_kv_cache_is_compared_tensor_by_tensor(gpt2: Gpt2Run) -> None:
    report = compare_outputs(gpt2.output, _run(gpt2, gpt2.model))
    assert report.ok, report.detail
    assert report.tensors == GPT2_TENSORS
    cloned = clone_outputs(gpt2.output)
    assert compare_outputs(gpt2.output, cloned).tensors == GPT2_TENSORS
    source_layer, cloned_layer = (
        gpt2.output["past_key_values"].layers[0],
        cloned.past_key_values.layers[0],
    )
    assert cloned_layer is not source_layer
    assert cloned_layer.keys.data_ptr() != source_layer.keys.data_ptr()


def test_a_perturbed_cache_key_fails_naming_its_path(gpt2: Gpt2Run) -> None:
    actual = clone_outputs(gpt2.output)
    actual["past_key_values"].layers[1].keys[0, 2, 3, 4] += 1.0
    report = compare_outputs(gpt2.output, actual)
    assert not report.ok
    assert re.match(CACHE + r"\.layers\[1\]\.keys: float32 outside tolerance", report.detail)
    assert "at 1 of 2048 elements" in report.detail and "first at [0, 2, 3, 4]" in report.detail
    assert compare_outputs(gpt2.output, clone_outputs(gpt2.output)).ok  # the source untouched


def test_a_cache_missing_a_layer_fails_structurally(gpt2: Gpt2Run) -> None:
    actual = clone_outputs(gpt2.output)
    actual["past_key_values"].layers.pop()
    report = compare_outputs(gpt2.output, actual)
    assert re.fullmatch(
        CACHE + r"\.layers: length of list differs: expected 2, got 1", report.detail
    ), report.detail


def test_compiled_gpt2_is_gated_on_its_cache(gpt2: Gpt2Run) -> None:
    torch._dynamo.reset()
    try:
        compiled = _run(gpt2, torch.compile(gpt2.model, backend="aot_eager"))
        report = compare_outputs(gpt2.output, clone_outputs(compiled))
        assert report.ok, report.detail
        assert report.tensors == GPT2_TENSORS
        # A backend wrong only in the cache: its [B, H, S, D] outputs are the keys and values.
        wrong = _run(gpt2, torch.compile(gpt2.model, backend=_shift_4d_outputs))
    finally:
        torch._dynamo.reset()
    report = compare_outputs(gpt2.output, wrong)
    assert re.match(CACHE + r"\.layers\[0\]\.keys: float32 outside", report.detail)
    assert compare_outputs(gpt2.output["last_hidden_state"], wrong["last_hidden_state"]).ok


def _shift_4d_outputs(
    gm: torch.fx.GraphModule, example_inputs: list[torch.Tensor]
) -> Callable[..., Any]:
    def run(*args: Any) -> Any:
        outputs = gm(*args)
        return type(outputs)(o + 1e-2 if _is_4d(o) else o for o in outputs)

    return run


def _is_4d(value: object) -> bool:
    return isinstance(value, torch.Tensor) and value.dim() == 4


class Slots:
    """Registered with pytree, no __dict__, no __eq__: only its registration lets it be walked."""

    __slots__ = ("first", "second")

    def __init__(self, first: Any, second: Any) -> None:
        self.first, self.second = first, second


pytree.register_pytree_node(
    Slots,
    lambda s: ([s.first, s.second], None),
    lambda values, _: Slots(*values),
    flatten_with_keys_fn=lambda s: (
        [(pytree.GetAttrKey("first"), s.first), (pytree.GetAttrKey("second"), s.second)],
        None,
    ),
)


def test_types_registered_with_pytree_are_walked_by_their_keys() -> None:
    expected = {"pair": Slots(torch.ones(2), [1.0, 2])}
    cloned = clone_outputs(expected)
    assert type(cloned["pair"]) is Slots
    assert cloned["pair"].first.data_ptr() != expected["pair"].first.data_ptr()
    assert compare_outputs(expected, cloned).ok
    cloned["pair"].second[1] = 3
    report = compare_outputs(expected, cloned)
    assert report.detail == 'out["pair"].second[1]: int differs: expected 2, got 3'


class Keyless(Slots):
    """Registered with pytree without key paths (no flatten_with_keys_fn), as older libraries
    register their types."""


pytree.register_pytree_node(
    Keyless, lambda s: ([s.first, s.second], None), lambda values, _: Keyless(*values)
)


def test_types_registered_without_key_paths_are_compared_by_position() -> None:
    expected = {"pair": Keyless(torch.ones(2), 1.0)}
    assert compare_outputs(expected, clone_outputs(expected)).ok
    report = compare_outputs(expected, {"pair": Keyless(torch.ones(2) * 2, 1.0)})
    assert not report.ok and report.detail.startswith("out.<leaf 0>: float32 outside tolerance")


def test_structure_is_checked_before_leaves_and_names_the_node() -> None:
    Pair = namedtuple("Pair", ["left", "right"])
    expected = [torch.zeros(1), Pair(1, {"a": [1, 2]})]
    actual = [torch.ones(1), Pair(1, {"a": [1, 2, 3]})]
    report = compare_outputs(expected, actual)
    assert report.detail == 'out[1].right["a"]: length of list differs: expected 2, got 3'
    ordered = compare_outputs({"a": 1, "b": 2}, {"b": 2, "a": 1})
    assert ordered.detail == "out: key order differs: expected ['a', 'b'], got ['b', 'a']"


def test_float_dtype_without_tolerance_is_an_error() -> None:
    x = torch.ones(2).to(torch.float8_e4m3fn)
    with pytest.raises(ValueError, match="add it to TOLERANCES"):
        compare_outputs(x, x)


def test_empty_tensors_are_equal() -> None:
    assert compare_outputs(torch.empty(0, 3), torch.empty(0, 3)).ok


def test_clone_outputs_copies_tensors_and_keeps_containers() -> None:
    Pair = namedtuple("Pair", ["left", "right"])
    weight = torch.ones(3, requires_grad=True)
    source: dict[str, Any] = {
        "pair": Pair(weight * 2, 1),
        "max": torch.max(torch.ones(2, 2), dim=0),
        "list": [torch.zeros(1), "s"],
        "data": Output(logits=torch.ones(2), step=1),
        "model": BaseModelOutput(last_hidden_state=torch.ones(2)),
    }
    cloned = clone_outputs(source)
    assert compare_outputs(source, cloned).ok
    assert type(cloned["pair"]) is Pair and type(cloned["max"]) is type(source["max"])
    assert cloned["pair"].left.data_ptr() != source["pair"].left.data_ptr()
    assert not cloned["pair"].left.requires_grad
    assert cloned["model"].last_hidden_state is cloned["model"]["last_hidden_state"]
    source["model"]["last_hidden_state"].add_(1)
    source["data"].logits.add_(1)
    assert cloned["model"].last_hidden_state.tolist() == [1.0, 1.0]
    assert cloned["data"].logits.tolist() == [1.0, 1.0]


class CacheLayer:
    """A KV cache layer as transformers 5.17 keeps it: its tensors and their ``dtype``."""

    def __init__(self, keys: torch.Tensor, values: torch.Tensor) -> None:
        self.keys, self.values, self.dtype = keys, values, keys.dtype


def test_a_bf16_autocast_kv_cache_passes_a_contract_allowing_float_dtypes(gpt2: Gpt2Run) -> None:
    """Found on an H200 (transformers 5.17): GPT-2 under bf16 autocast returns its cache's keys
    and values in bf16, and each cache layer kept a ``dtype`` attribute saying so. With an
    accuracy contract that attribute may change with its tensors; without one it may not."""
    from autotune.measure import parse_contract

    contract = parse_contract("cosine>=0.99")
    with torch.autocast("cpu", dtype=torch.bfloat16):
        actual = _run(gpt2, gpt2.model)
    assert actual["past_key_values"].layers[0].keys.dtype == torch.bfloat16
    verdict = contract.judge(gpt2.output, actual)
    assert verdict.ok, verdict.detail
    assert any(
        re.fullmatch(CACHE + r"\.layers\[0\]\.keys: float32 -> bfloat16", change)
        for change in verdict.errors["dtype_changes"]
    ), verdict.errors["dtype_changes"]

    keys, values = torch.randn(2, 4, 8), torch.randn(2, 4, 8)
    expected = [CacheLayer(keys, values)]
    autocast = [CacheLayer(keys.bfloat16(), values.bfloat16())]
    verdict = contract.judge(expected, autocast)
    assert verdict.ok, verdict.detail
    assert verdict.errors["dtype_changes"] == [
        "out[0].keys: float32 -> bfloat16",
        "out[0].values: float32 -> bfloat16",
    ]
    strict = compare_outputs(expected, autocast)
    assert not strict.ok and "dtype differs" in strict.detail
    integer_keys = [CacheLayer(keys.long(), values)]
    integer_keys[0].keys = keys  # the attribute alone says int64: only float dtypes may change
    assert "dtype differs" in contract.judge(expected, integer_keys).detail
