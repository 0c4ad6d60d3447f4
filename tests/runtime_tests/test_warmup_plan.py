"""A best-config entry's warm-up plan (``workload.warmup``) is data that production allocates
from: a malformed or huge plan is a ConfigError when the file is read, nothing is allocated,
and dtype names go through a closed list, never ``getattr(torch, ...)`` (issue 56, item 6)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import torch

import autotune
from autotune import BestConfig, CompileConfig, ConfigError, ConfigFile
from autotune.runtime.shapes import call_spec, plan_warmup, synthesized

ONE_CALL = {"args": [{"shape": [2, 3], "dtype": "float32"}], "kwargs": {}}


def entry_with(warmup: Any) -> dict[str, Any]:
    """A best-config entry (its JSON form) whose workload lists ``warmup``, unchecked."""
    entry = BestConfig(
        decision="compile", reason="r", config=CompileConfig(backend="eager"),
        workload={"kind": "infer", "warmup": [ONE_CALL]},
    ).to_dict()  # fmt: skip
    entry["workload"]["warmup"] = warmup
    return entry


def written(tmp_path: Path, warmup: Any) -> Path:
    path = tmp_path / "best_config.json"
    path.write_text(json.dumps(entry_with(warmup)), encoding="utf-8")
    return path


@pytest.fixture
def no_allocation(monkeypatch):
    """Makes any warm-up tensor an error: nothing may be allocated from a refused plan."""

    def refused(*args: Any, **kwargs: Any) -> None:
        raise AssertionError(f"allocated a warm-up tensor {args} from a plan that is refused")

    monkeypatch.setattr(torch, "ones", refused)


def test_a_trillion_element_warmup_shape_is_refused_at_load(tmp_path, no_allocation):
    huge = {"args": [{"shape": [10**6, 10**6], "dtype": "float32"}], "kwargs": {}}
    with pytest.raises(ConfigError) as info:
        ConfigFile.load(written(tmp_path, [huge]))
    assert (
        "workload.warmup[0].args[0].shape: [1000000, 1000000] holds more than the 1073741824 "
        "elements a warm-up tensor may have; warm up with the calls themselves" in str(info.value)
    )


def test_apply_with_warmup_plan_refuses_it_before_allocating(tmp_path, no_allocation):
    huge = {"args": [{"shape": [10**6, 10**6], "dtype": "float32"}], "kwargs": {}}
    with pytest.raises(ConfigError, match=r"workload\.warmup\[0\]\.args\[0\]\.shape"):
        autotune.apply(
            torch.nn.Linear(2, 2), written(tmp_path, [huge]), warmup="plan",
            check_environment=False,
        )  # fmt: skip


@pytest.mark.parametrize("dtype", ["Tensor", "ones", "float33", "torch.float32", "qint8", 3])
def test_a_dtype_outside_the_closed_list_is_refused_at_load(tmp_path, dtype, no_allocation):
    bad = {"args": [{"shape": [2], "dtype": dtype}], "kwargs": {}}
    with pytest.raises(ConfigError, match=r"args\[0\]\.dtype: .* is not a dtype a warm-up makes"):
        ConfigFile.load(written(tmp_path, [bad]))


@pytest.mark.parametrize("dtype", ["Tensor", "ones", "__class__", "float33"])
def test_synthesized_never_looks_a_name_up_on_torch(dtype):
    with pytest.raises(ConfigError, match="is not a dtype a warm-up makes; use one of bool"):
        synthesized({"args": [{"shape": [2], "dtype": dtype}], "kwargs": {}}, "cpu")


def tensor(shape: Any, dtype: Any = "float32") -> dict[str, Any]:
    return {"shape": shape, "dtype": dtype}


@pytest.mark.parametrize(
    ("warmup", "rule"),
    [
        ({"args": []}, r"workload\.warmup: expected a list of calls"),
        ([[1, 2]], r"warmup\[0\]: expected \{\"args\""),
        ([{"args": [], "kwargs": {}, "extra": 1}], r"warmup\[0\]: unknown key 'extra'"),
        ([{"args": {"0": tensor([2])}}], r"warmup\[0\]\.args: expected a list"),
        ([{"args": [tensor("2x3")]}], r"args\[0\]\.shape: expected a list of at most 16 sizes"),
        ([{"args": [tensor([2, -1])]}], r"args\[0\]\.shape: expected a list of at most 16"),
        ([{"args": [tensor([2, True])]}], r"args\[0\]\.shape: expected a list of at most 16"),
        ([{"args": [tensor([2.0])]}], r"args\[0\]\.shape: expected a list of at most 16"),
        ([{"args": [tensor([1] * 17)]}], r"args\[0\]\.shape: expected a list of at most 16"),
        ([{"args": [{"shape": [2]}]}], r"args\[0\]: expected a tensor like"),
        ([{"args": [tensor([0, 2**40])]}], r"args\[0\]\.shape: \[0, 1099511627776\] holds"),
        ([{"kwargs": {"x": tensor([2**15, 2**15]), "y": tensor([2**15, 2**15]),
                      "z": tensor([2**15, 2**15])}}],
         r"warmup\[0\]: its tensors hold 3221225472 elements, more than the 2147483648"),
        ([ONE_CALL] * 1025, r"workload\.warmup: 1025 calls, more than the 1024 a warm-up makes"),
    ],
)  # fmt: skip
def test_a_malformed_or_huge_plan_is_refused_at_load(warmup, rule, no_allocation):
    with pytest.raises(ConfigError, match=rule):
        BestConfig.from_dict(entry_with(warmup))


@pytest.mark.filterwarnings("ignore:ComplexHalf support is experimental")
def test_every_dtype_of_the_list_is_written_read_and_made():
    from autotune.runtime._shape_rules import WARMUP_DTYPES

    for name in WARMUP_DTYPES:
        dtype = getattr(torch, name)  # the test's own constant list, not data
        spec = call_spec((torch.zeros(2, 3, dtype=dtype),), {})
        assert spec == {"args": [{"shape": [2, 3], "dtype": name}], "kwargs": {}}
        loaded = BestConfig.from_dict(entry_with([spec]))
        (made,) = plan_warmup(loaded.workload, "cpu")
        assert made.args[0].dtype == dtype and made.args[0].shape == (2, 3)


def test_a_call_past_the_caps_is_written_without_its_tensors():
    # 2**31 elements on the meta device: what a search could measure, past what a file may hold
    big = torch.empty(2**20, 2**11, device="meta")
    spec = call_spec((big, torch.ones(2)), {"mask": torch.ones(2)})
    assert spec == {"args": [None, None], "kwargs": {"mask": None}}
    loaded = BestConfig.from_dict(entry_with([spec, ONE_CALL]))
    assert len(plan_warmup(loaded.workload, "cpu")) == 1  # the big call is skipped
