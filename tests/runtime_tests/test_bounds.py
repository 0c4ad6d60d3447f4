"""The numbers a best-config file sets are bounded: every size and count that reaches a thread
pool, a process pool, an allocation or generated code is refused outside its bound when the
file is read, before anything compiles (issue 56, item 6)."""

from __future__ import annotations

import hashlib
import json
import types
import typing
from pathlib import Path
from typing import Any

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import autotune
from autotune import BestConfig, CompileConfig, ConfigError, ConfigFile
from autotune.runtime import knobs, safety

LAYER_KEYS = {"inductor": "options", "dynamo": "dynamo", "functorch": "functorch"}


def entry_with(**config: Any) -> dict[str, Any]:
    """A best-config entry (its JSON form) whose config holds ``config`` as written, unchecked,
    and the hash of that config: only the bounds can refuse it."""
    entry = BestConfig(decision="compile", reason="r", config=CompileConfig()).to_dict()
    entry["config"].update(config)
    canonical = json.dumps(entry["config"], sort_keys=True, separators=(",", ":"))
    entry["config_hash"] = hashlib.sha256(canonical.encode()).hexdigest()[:16]
    return entry


def file_with(tmp_path: Path, **config: Any) -> Path:
    path = tmp_path / "best_config.json"
    path.write_text(json.dumps(entry_with(**config)), encoding="utf-8")
    return path


def numeric_knobs() -> list[str]:
    """Every knob autotune takes from data whose type torch declares as an int or a float."""
    return [
        p for p in sorted(safety.reviewed()) if _numeric(knobs.declared_type(*p.split(".", 1)))
    ]


def _numeric(tp: Any) -> bool:
    if typing.get_origin(tp) in (typing.Union, types.UnionType):
        return any(_numeric(arm) for arm in typing.get_args(tp))
    return tp in (int, float)


def test_a_file_setting_ten_million_cpp_threads_is_refused_at_load(tmp_path):
    path = file_with(tmp_path, options={"cpp.threads": 10**7})
    with pytest.raises(ConfigError) as info:
        ConfigFile.load(path)
    message = str(info.value)
    assert (
        "config.options.cpp.threads: 10000000 is outside what the knob accepts "
        "(-1 (all CPUs) or 1 to 1024); it sets the OpenMP threads" in message
    )
    assert "Set a value in that range, or remove the key for torch's default" in message


def test_apply_refuses_such_a_file_before_compiling(tmp_path, monkeypatch):
    def compiled(*args: Any, **kwargs: Any) -> None:
        raise AssertionError("compiled a config whose numbers are out of bounds")

    monkeypatch.setattr(torch, "compile", compiled)
    monkeypatch.setattr(torch.nn.Module, "compile", compiled)
    path = file_with(tmp_path, options={"cpp.threads": 10**7})
    with pytest.raises(ConfigError, match=r"cpp\.threads: 10000000 is outside"):
        autotune.apply(torch.nn.Linear(2, 2), path, check_environment=False)


@pytest.mark.parametrize(
    ("config", "line"),
    [
        ({"options": {"compile_threads": 10**6}}, "config.options.compile_threads: 1000000 is "
         "outside what the knob accepts (1 to 256); it sets the compile worker processes"),
        ({"options": {"cpp.threads": 0}}, "config.options.cpp.threads: 0 is outside"),
        ({"options": {"max_fusion_size": 10**9}}, "config.options.max_fusion_size: 1000000000 "
         "is outside what the knob accepts (1 to 1024)"),
        ({"options": {"padding_alignment_bytes": 2**40}}, "config.options.padding_alignment_"
         "bytes: 2**40 is outside what the knob accepts (1 to 4096)"),
        ({"dynamo": {"recompile_limit": 10**9}}, "config.dynamo.recompile_limit: 1000000000 is "
         "outside what the knob accepts (1 to 1024)"),
        ({"dynamo": {"cache_size_limit": 10**9}}, "config.dynamo.cache_size_limit: 1000000000"),
        ({"functorch": {"activation_memory_budget": 2.5}}, "config.functorch.activation_memory_"
         "budget: 2.5 is outside what the knob accepts (0.0 to 1.0)"),
        ({"backend": "openvino", "options": {"INFERENCE_NUM_THREADS": 10**7}},
         "config.options.INFERENCE_NUM_THREADS: 10000000 is outside what the knob accepts "
         "(1 to 1024)"),
    ],
)  # fmt: skip
def test_a_file_setting_a_number_outside_its_bound_is_refused_at_load(tmp_path, config, line):
    with pytest.raises(ConfigError) as info:
        ConfigFile.load(file_with(tmp_path, **config))
    assert line in str(info.value)


def test_a_parts_config_is_held_to_the_same_bounds():
    threads = {**CompileConfig().to_dict(), "options": {"cpp.threads": 10**7}}
    part = {"name": "decode", "when": {"input": "0", "dim": 1, "min": None, "max": 1},
            "config": threads}  # fmt: skip
    entry = {**entry_with(parts=[part]), "schema_version": 2}
    with pytest.raises(ConfigError, match=r"config\.parts\[0\]\.config\.options\.cpp\.threads"):
        BestConfig.from_dict(entry)


@pytest.mark.parametrize(
    "settings_",
    [
        {"options": {"cpp.threads": -1}},
        {"options": {"cpp.threads": 1024, "compile_threads": 1, "max_fusion_size": 256}},
        {"dynamo": {"recompile_limit": 64, "accumulated_recompile_limit": 256}},
        {"options": {"cpp.simdlen": None, "realize_opcount_threshold": None}},
    ],
)
def test_values_within_their_bounds_are_taken(settings_):
    config = CompileConfig(**settings_)
    knobs.check_config(config, allow_unsafe_knobs=False)


def test_check_config_refuses_a_config_that_skipped_its_constructor():
    config = CompileConfig(options={"cpp.threads": 4})
    object.__setattr__(config, "options", {"cpp.threads": 10**7})  # as unpickling could
    with pytest.raises(ConfigError, match=r"sets numbers outside their bounds"):
        knobs.check_config(config, allow_unsafe_knobs=True)


@pytest.mark.parametrize("param", numeric_knobs())
def test_every_numeric_knob_taken_from_data_refuses_an_absurd_value(param):
    layer, name = param.split(".", 1)
    for value in (2**62, -(2**62)):
        with pytest.raises(ConfigError, match=rf"config\.{LAYER_KEYS[layer]}\.{name}: "):
            CompileConfig.from_dict({LAYER_KEYS[layer]: {name: value}})


def test_every_bound_names_a_reviewed_knob_and_holds_torchs_default():
    from autotune.runtime.knobs import BOUNDS

    for param, bound in BOUNDS.items():
        layer, name = param.split(".", 1)
        if layer == "openvino":
            continue
        assert param in safety.reviewed() or param == "dynamo.cache_size_limit", param
        default = getattr(knobs.torch_config(layer), name, None)
        assert default is None or bound.holds(default), (param, default)


@settings(max_examples=300, deadline=None)
@given(st.data())
def test_a_config_is_refused_exactly_when_a_number_is_outside_its_bound(data):
    from autotune.runtime.knobs import BOUNDS

    param = data.draw(st.sampled_from(sorted(p for p in BOUNDS if not p.startswith("openvino"))))
    value = data.draw(st.one_of(st.integers(-(2**70), 2**70), st.integers(-2, 2**12)))
    layer, name = param.split(".", 1)
    raw = {LAYER_KEYS[layer]: {name: value}}
    if BOUNDS[param].holds(value):
        CompileConfig.from_dict(raw)
    else:
        with pytest.raises(ConfigError, match="is outside what the knob accepts"):
            CompileConfig.from_dict(raw)
