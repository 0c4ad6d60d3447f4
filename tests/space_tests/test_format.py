"""The knob forms of a space file: choices, fixed values, ranges, tables with conditions."""

from __future__ import annotations

import optuna
import pytest

from autotune.space import Range, SpaceError, space_from_dict


def one_knob(value, layer="inductor", name="max_fusion_size"):
    space = space_from_dict({layer: {name: value}}, "cpu")
    (knob,) = space.knobs
    return space, knob


def problems_of(raw, device="cpu"):
    with pytest.raises(SpaceError) as info:
        space_from_dict(raw, device)
    return str(info.value)


def test_an_integer_range_counts_every_step_and_is_drawn_by_optuna():
    space, knob = one_knob({"low": 16, "high": 64, "step": 16})
    assert knob.range == Range(16, 64, 16) and space.size == 4
    trial = optuna.create_study(sampler=optuna.samplers.RandomSampler(seed=1)).ask()
    config = space.suggest(trial)
    assert trial.params["inductor.max_fusion_size"] in (16, 32, 48, 64)
    assert config.options.get("max_fusion_size", 64) == trial.params["inductor.max_fusion_size"]


def test_a_log_range_is_an_optuna_log_int():
    space, _ = one_knob({"low": 16, "high": 256, "log": True})
    trial = optuna.create_study().ask()
    space.suggest(trial)
    distribution = trial.distributions["inductor.max_fusion_size"]
    assert isinstance(distribution, optuna.distributions.IntDistribution) and distribution.log
    assert space.size == 241


def test_a_float_range_with_a_step_gives_clean_grid_values():
    space, knob = one_knob({"low": 0.1, "high": 0.5, "step": 0.1}, name="cpu_gpu_bw")
    assert knob.range is not None and knob.range.values() == [0.1, 0.2, 0.3, 0.4, 0.5]
    study = optuna.create_study(sampler=optuna.samplers.RandomSampler(seed=0))
    drawn = {space.suggest(study.ask()).options.get("cpu_gpu_bw") for _ in range(30)}
    assert drawn <= {0.1, 0.2, 0.3, 0.4, 0.5} and len(drawn) > 1


def test_a_single_value_is_fixed_and_not_an_optuna_param():
    space, _ = one_knob(128)
    trial = optuna.create_study().ask()
    assert space.suggest(trial).options == {"max_fusion_size": 128}
    assert trial.params == {} and space.size == 1


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ({"low": 8, "high": 2}, "`low <= high` must hold, but got (low=8, high=2)"),
        ({"low": 1, "high": 9, "step": 0}, "`step > 0` must hold, but got step=0"),
        ({"low": 1, "high": 10, "step": 4}, "high - low must be a multiple of step"),
        ({"low": 0, "high": 64, "log": True}, "log = true needs an integer range with low >= 1"),
        ({"low": 1, "high": 65, "step": 2, "log": True}, "log = true needs an integer range"),
        ({"low": 1}, "a range needs both low and high"),
        ({"low": "1", "high": 4}, "low must be a number, got '1'"),
        ({"choices": [1, 2], "low": 1, "high": 2}, "give either choices"),
        ({"when": "workload == 'infer'"}, "give either choices = [...] or low = ... and high"),
        ({"choices": [1, 2], "step": 1}, "step apply to ranges (low, high) only"),
        ({"choice": [64, 128]}, "unknown key 'choice' (did you mean choices?)"),
        ({"choices": []}, "the list of choices is empty"),
        ({"choices": [64, 64]}, "repeat a value"),
        ([[64]], "choices must be booleans, numbers or strings"),
    ],
)
def test_malformed_knobs_say_what_rule_they_break(value, expected):
    assert expected in problems_of({"inductor": {"max_fusion_size": value}})


def test_a_float_range_needs_a_step_so_the_space_stays_finite():
    message = problems_of({"inductor": {"cpu_gpu_bw": {"low": 10.0, "high": 50.0}}})
    assert "a float range needs a step (e.g. step = 10)" in message


def test_a_range_is_checked_against_the_knob_type_and_bounds():
    message = problems_of(
        {
            "inductor": {
                "freezing": {"low": 0, "high": 1},
                "triton.max_tiles": {"low": 1, "high": 4},
            },
            "dynamo": {"recompile_limit": {"low": 0, "high": 8}},
            "compile": {"mode": {"low": 1, "high": 2}},
        }
    )
    assert "inductor.freezing: 0 is not a bool" in message
    assert "inductor.triton.max_tiles: 4 is outside what the knob accepts (1 to 3)" in message
    assert "dynamo.recompile_limit: 0 is outside what the knob accepts (1 to 1024)" in message
    assert "compile.mode: give a list of choices, not a range" in message


def test_values_outside_what_a_knob_accepts_are_refused():
    message = problems_of(
        {
            "inductor": {
                "max_autotune_gemm_backends": ["ATEN,TRITN"],
                "cpp.enable_floating_point_contract_flag": ["off", "slow"],
                "cpp.threads": [0],
                "max_autotune_gemm_search_space": ["FAST"],
            }
        }
    )
    assert "'TRITN' in 'ATEN,TRITN' is not a GEMM backend" in message
    assert "(did you mean TRITON?)" in message
    assert "'slow' is not one of 'off', 'on', 'fast'" in message
    assert (
        "inductor.cpp.threads: 0 is outside what the knob accepts (-1 (all CPUs) or 1 to 1024)"
        in message
    )
    assert "'FAST' is not a Literal['DEFAULT', 'EXHAUSTIVE']" in message
    assert "4 problems" in message


def test_unknown_top_level_keys_and_tables_are_refused():
    message = problems_of({"inductr": {}, "numerics": {"compile": {}}, "name": 3})
    assert "unknown key 'inductr' at the top level (did you mean inductor?)" in message
    assert "[numerics] holds the tables [numerics.inductor] and [numerics.dynamo] only" in message
    assert "name must be a string, got 3" in message


def test_to_dict_round_trips_every_form_exactly():
    raw = {
        "name": "forms",
        "description": "every form",
        "compile": {"mode": ["default", "max-autotune-no-cudagraphs"], "fullgraph": [False]},
        "inductor": {
            "freezing": {"choices": [False, True], "when": "workload == 'infer'"},
            "max_fusion_size": {"low": 16, "high": 256, "step": 1, "log": True},
            "cpu_gpu_bw": {"low": 25.0, "high": 100.0, "step": 25.0},
        },
    }
    space = space_from_dict(raw, "cpu")
    assert space.to_dict() == raw
    again = space_from_dict(space.to_dict(), "cpu")
    assert again == space and again.content_hash() == space.content_hash()


def test_the_description_is_not_part_of_the_content_hash():
    a = space_from_dict(
        {"name": "x", "description": "one", "inductor": {"freezing": [True]}}, "cpu"
    )
    b = space_from_dict(
        {"name": "x", "description": "two", "inductor": {"freezing": [True]}}, "cpu"
    )
    assert a.content_hash() == b.content_hash()
