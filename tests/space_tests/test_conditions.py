"""Conditional knobs: define-by-run suggestion, exact sizes, validation of the conditions."""

from __future__ import annotations

import optuna
import pytest

from autotune.space import SpaceError, load_space, space_from_dict

AUTOTUNE_MODES = ("max-autotune", "max-autotune-no-cudagraphs")


def test_a_knob_whose_condition_is_false_is_neither_suggested_nor_in_the_config():
    space = space_from_dict(
        {
            "compile": {"mode": ["default"]},
            "inductor": {
                "coordinate_descent_tuning": {
                    "choices": [True],
                    "when": "compile.mode in ['max-autotune']",
                }
            },
        },
        "cpu",
    )
    trial = optuna.create_study().ask()
    config = space.suggest(trial)
    assert "inductor.coordinate_descent_tuning" not in trial.params
    assert config.options == {} and space.size == 1


def test_conditions_read_the_workload_and_the_device():
    raw = {
        "inductor": {
            "freezing": {"choices": [False, True], "when": "workload == 'infer'"},
            "triton.cudagraphs": {"choices": [False, True], "when": "device == 'cuda'"},
        }
    }
    assert space_from_dict(raw, "cpu").size == 2
    assert space_from_dict(raw, "cuda:1").size == 4
    trial = optuna.create_study().ask()
    space_from_dict(raw, "cpu").suggest(trial)
    assert set(trial.params) == {"inductor.freezing"}


def test_with_a_backend_choice_inductor_knobs_follow_the_inductor_backend():
    space = space_from_dict(
        {
            "compile": {"backend": ["inductor", "aot_eager"], "mode": ["default", "max-autotune"]},
            "inductor": {"freezing": [False, True]},
        },
        "cpu",
    )
    assert space.size == 2 * 2 + 1
    study = optuna.create_study(sampler=optuna.samplers.RandomSampler(seed=0))
    for _ in range(20):
        trial = study.ask()
        config = space.suggest(trial)
        if config.backend == "aot_eager":
            assert set(trial.params) == {"compile.backend"} and config.options == {}


def test_size_counts_exactly_what_a_brute_force_search_enumerates():
    space = space_from_dict(
        {
            "compile": {
                "mode": ["default", "max-autotune-no-cudagraphs"],
                "dynamic": [False, True],
            },
            "inductor": {
                "freezing": {"choices": [False, True], "when": "workload == 'infer'"},
                "cpp.enable_concat_linear": {
                    "choices": [False, True],
                    "when": "inductor.freezing",
                },
                "max_fusion_size": {
                    "low": 32,
                    "high": 96,
                    "step": 32,
                    "when": "compile.mode == 'default' and not inductor.freezing",
                },
            },
        },
        "cpu",
    )
    study = optuna.create_study(sampler=optuna.samplers.BruteForceSampler(seed=0))
    hashes = set()

    def objective(trial: optuna.Trial) -> float:
        hashes.add(space.suggest(trial).config_hash())
        return 0.0

    study.optimize(objective, n_trials=200)
    assert space.size == len(study.trials) == len(hashes) == 2 * (3 + 1 + 2 + 2)


@pytest.mark.parametrize(
    "leave", [(), ("inductor.max_fusion_size",), ("inductor.freezing",), ("compile.dynamic",)]
)
def test_size_leaving_counts_what_is_left_to_draw(leave):
    """Issue 39: the space left once inert knobs are left to torch, counted exactly (a left
    controller reads as inactive to the knobs whose conditions name it, as in suggest)."""
    space = space_from_dict(
        {
            "compile": {"mode": ["default", AUTOTUNE_MODES[1]], "dynamic": [False, True]},
            "inductor": {
                "freezing": [False, True],
                "cpp.enable_concat_linear": {
                    "choices": [False, True], "when": "inductor.freezing"
                },
                "max_fusion_size": {
                    "low": 32, "high": 96, "step": 32,
                    "when": "compile.mode == 'default' and not inductor.freezing",
                },
            },
        },
        "cpu",
    )  # fmt: skip
    study = optuna.create_study(sampler=optuna.samplers.BruteForceSampler(seed=0))
    hashes = set()

    def objective(trial: optuna.Trial) -> float:
        hashes.add(space.suggest(trial, leave).config_hash())
        return 0.0

    study.optimize(objective, n_trials=200)
    assert space.size_leaving(leave) == len(study.trials) == len(hashes)
    assert (space.size_leaving(leave) < space.size) == bool(leave)


def test_conditions_are_validated_against_the_knobs_they_name():
    with pytest.raises(SpaceError) as info:
        space_from_dict(
            {
                "compile": {"mode": ["default", "max-autotune"]},
                "inductor": {
                    "freezing": {"choices": [True], "when": "compile.mod == 'default'"},
                    "epilogue_fusion": {
                        "choices": [False],
                        "when": "compile.mode == 'max-autotun'",
                    },
                    "shape_padding": {"choices": [False], "when": "inductor.freezing == 'yes'"},
                    "aggressive_fusion": {"choices": [True], "when": "inductor.aggressive_fusion"},
                    "max_autotune": {"choices": [True], "when": "workload == 'training'"},
                    "benchmark_fusion": {"choices": [True], "when": "compile.mode.upper()"},
                },
            },
            "cpu",
        )
    message = str(info.value)
    assert "when names compile.mod, which is neither a knob" in message
    assert "(did you mean compile.mode?)" in message
    assert "compares compile.mode with 'max-autotun', a value it cannot take" in message
    assert "compares inductor.freezing with 'yes', a value it cannot take" in message
    assert "inductor.aggressive_fusion: when names the knob itself" in message
    assert "compares workload with 'training'" in message
    assert "`compile.mode.upper()` is not allowed" in message
    assert "6 problems" in message


def test_a_value_the_space_does_not_offer_is_fine_a_space_that_extends_it_may():
    space = space_from_dict(
        {
            "compile": {"mode": ["default"]},
            "inductor": {
                "epilogue_fusion": {
                    "choices": [False],
                    "when": "compile.mode in ['max-autotune', 'max-autotune-no-cudagraphs']",
                }
            },
        },
        "cpu",
    )
    assert space.size == 1


def test_cyclic_conditions_are_refused():
    with pytest.raises(SpaceError, match="depend on each other in a cycle"):
        space_from_dict(
            {
                "inductor": {
                    "freezing": {"choices": [False, True], "when": "inductor.max_autotune"},
                    "max_autotune": {"choices": [False, True], "when": "not inductor.freezing"},
                }
            },
            "cpu",
        )


def test_a_condition_false_on_this_machine_skips_its_machine_checks():
    # 1024-bit vectors exist on no CPU: without the condition the width is refused.
    raw = {"inductor": {"cpp.simdlen": {"choices": [1024], "when": "1024 in cpu_vector_widths"}}}
    space = space_from_dict(raw, "cpu")
    assert space.size == 1 and space.suggest(optuna.create_study().ask()).options == {}


def test_a_real_tpe_study_never_suggests_a_knob_whose_condition_is_false(space_file):
    """conditional.toml extends quick, adds a backend choice, conditional knobs and ranges."""
    space = load_space(space_file("conditional"), "cpu")
    sampler = optuna.samplers.TPESampler(seed=0, n_startup_trials=5)
    study = optuna.create_study(sampler=sampler, direction="maximize")
    seen: set[str] = set()
    for number in range(30):
        trial = study.ask()
        config = space.suggest(trial)
        params = trial.params
        seen |= set(params)
        assert "inductor.triton.cudagraphs" not in params  # device == 'cuda' only
        if params["compile.backend"] != "inductor":
            assert set(params) <= {"compile.backend", "compile.dynamic", "dynamo.recompile_limit"}
            assert config.options == {} and config.backend == "aot_eager"
        elif params["compile.mode"] != "max-autotune-no-cudagraphs":
            assert "inductor.max_autotune_gemm_backends" not in params
            assert "max_autotune_gemm_backends" not in config.options
        if not params.get("inductor.freezing"):
            assert "inductor.cpp.enable_concat_linear" not in params
            assert "cpp.enable_concat_linear" not in config.options
        if params.get("compile.mode") != "default" or params.get("inductor.freezing"):
            assert "inductor.max_fusion_size" not in params
        if "inductor.cpp.threads" in params:
            assert 1 <= params["inductor.cpp.threads"] <= 4
        assert params["dynamo.recompile_limit"] in range(8, 65, 8)
        assert space.config_from_params(params) == config
        study.tell(trial, float(number % 7))
    # Every conditional knob was suggested at least once when its condition held.
    assert {
        "inductor.max_autotune_gemm_backends",
        "inductor.cpp.enable_concat_linear",
        "inductor.max_fusion_size",
        "inductor.cpp.threads",
    } <= seen
