"""A space is held to the bounds a best-config file is held to (stated once, in
autotune.runtime._bounds), plus this machine's own rule: no more threads than its CPUs."""

from __future__ import annotations

import os

import pytest

from autotune import CompileConfig, ConfigError
from autotune.space import SpaceError, space_from_dict
from autotune.space._knob import Knob
from autotune.space._validate import knob_notes, value_problems


def problems_of(raw: dict, device: str = "cpu") -> str:
    with pytest.raises(SpaceError) as info:
        space_from_dict(raw, device)
    return str(info.value)


def test_a_space_with_ten_million_cpp_threads_is_refused():
    message = problems_of({"inductor": {"cpp.threads": [4, 10**7]}})
    assert (
        "inductor.cpp.threads: 10000000 is outside what the knob accepts (-1 (all CPUs) or 1 to "
        "1024); it sets the OpenMP threads" in message
    )


@pytest.mark.parametrize(
    ("raw", "line"),
    [
        ({"inductor": {"compile_threads": [10**6]}},
         "inductor.compile_threads: 1000000 is outside what the knob accepts (1 to 256)"),
        ({"dynamo": {"recompile_limit": {"low": 8, "high": 10**6}}},
         "dynamo.recompile_limit: 1000000 is outside what the knob accepts (1 to 1024)"),
        ({"inductor": {"max_fusion_size": {"low": 16, "high": 4096, "log": True}}},
         "inductor.max_fusion_size: 4096 is outside what the knob accepts (1 to 1024)"),
        ({"inductor": {"cpp.threads": [0]}},
         "inductor.cpp.threads: 0 is outside what the knob accepts (-1 (all CPUs) or 1 to 1024)"),
    ],
)  # fmt: skip
def test_a_space_with_a_value_outside_a_bound_is_refused(raw, line):
    assert line in problems_of(raw)


def test_a_range_past_a_bound_is_said_of_its_first_and_last_values_outside_it():
    message = problems_of({"inductor": {"max_fusion_size": {"low": 16, "high": 4096}}})
    assert "max_fusion_size: 1025 is outside" in message and "4096 is outside" in message
    assert "(2 problems)" in message


@pytest.mark.parametrize(
    ("layer", "name", "value"),
    [
        ("inductor", "cpp.threads", 10**7),
        ("inductor", "compile_threads", 4096),
        ("dynamo", "recompile_limit", 10**5),
        ("inductor", "padding_alignment_bytes", 2**20),
        ("functorch", "activation_memory_budget", 1.5),
    ],
)
def test_the_space_and_the_file_refuse_a_value_with_the_same_bound(layer, name, value):
    (space_line,) = value_problems(layer, name, value)
    key = {"inductor": "options"}.get(layer, layer)
    with pytest.raises(ConfigError) as info:
        CompileConfig.from_dict({key: {name: value}})
    file_line = f"config.{key}.{name}: " + space_line.removeprefix(f"{layer}.{name}: ")
    assert file_line in str(info.value)


def test_an_openvino_thread_count_is_bounded_in_a_space_as_in_a_file():
    assert value_problems("openvino", "INFERENCE_NUM_THREADS", 10**7) == [
        "openvino.INFERENCE_NUM_THREADS: 10000000 is outside what the knob accepts (1 to 1024); "
        "it sets the threads or streams of each compiled partition, and no server has more "
        "hardware threads. Set a value in that range, or remove the key for torch's default"
    ]


@pytest.mark.parametrize("name", ["cpp.threads", "compile_threads"])
def test_threads_above_this_machines_cpus_are_noted(name):
    cores = os.cpu_count() or 1
    notes = knob_notes(Knob("inductor", name, (1, cores + 1)), "cpu")
    assert notes == [f"inductor.{name} above this machine's {cores} CPUs oversubscribes them"]
    assert knob_notes(Knob("inductor", name, (1, cores)), "cpu") == []
