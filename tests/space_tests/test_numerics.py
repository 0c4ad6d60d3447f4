"""The opt-in [numerics] group: searched only when allowed, and flagged on the configs."""

from __future__ import annotations

import optuna
import pytest

from autotune.runtime.config import CompileConfig
from autotune.space import SpaceError, load_space, space_from_dict


def test_the_numerics_group_is_left_out_unless_allowed(space_file):
    space = load_space(space_file("numerics"), "cpu")
    assert not space.searches_numerics and space.size == 2
    assert any("are not searched; pass --allow-numerics-changes" in n for n in space.notes)
    assert "numerics" not in space.to_dict()


def test_allowed_numerics_knobs_are_searched_and_stored_with_the_opt_in(space_file):
    space = load_space(space_file("numerics"), "cpu", allow_numerics_changes=True)
    assert space.searches_numerics and space.size == 2 * (1 + 2)
    stored = space.to_dict()
    assert stored["allow_numerics_changes"] is True
    assert set(stored["numerics"]["inductor"]) == {
        "cpp.enable_unsafe_math_opt_flag",
        "cpp.enable_floating_point_contract_flag",
    }
    # A resumed study rebuilds the space from the stored dict, without the command-line flag.
    assert space_from_dict(stored, "cpu") == space


def test_the_space_itself_may_opt_in():
    raw = {
        "allow_numerics_changes": True,
        "numerics": {"inductor": {"cpp.enable_unsafe_math_opt_flag": [False, True]}},
    }
    assert space_from_dict(raw, "cpu").size == 2


def test_relaxes_numerics_flags_configs_that_set_a_numerics_knob(space_file):
    space = load_space(space_file("numerics"), "cpu", allow_numerics_changes=True)
    relaxed = []

    def objective(trial: optuna.Trial) -> float:
        config = space.suggest(trial)
        expected = trial.params.get("inductor.cpp.enable_unsafe_math_opt_flag", False)
        assert space.relaxes_numerics(config) is expected
        relaxed.append(expected)
        return 0.0

    study = optuna.create_study(sampler=optuna.samplers.BruteForceSampler(seed=0))
    study.optimize(objective, n_trials=50)
    assert relaxed.count(True) == 4 and relaxed.count(False) == 2
    assert not space.relaxes_numerics(CompileConfig(options={"freezing": True}))
    assert space.relaxes_numerics(CompileConfig(options={"use_fast_math": True}))


def test_a_numerics_knob_outside_the_group_may_only_hold_torchs_default():
    assert space_from_dict({"inductor": {"use_fast_math": [False]}}, "cuda").size == 1
    with pytest.raises(
        SpaceError,
        match=r"inductor.use_fast_math changes numerics: move it to "
        r"\[numerics.inductor\]",
    ):
        space_from_dict({"inductor": {"use_fast_math": [False, True]}}, "cuda")


def test_only_numerics_knobs_may_depend_on_numerics_knobs():
    with pytest.raises(SpaceError, match="when names inductor.use_fast_math of the opt-in"):
        space_from_dict(
            {
                "inductor": {"freezing": {"choices": [True], "when": "inductor.use_fast_math"}},
                "numerics": {"inductor": {"use_fast_math": [False, True]}},
            },
            "cuda",
        )


def test_a_knob_in_both_groups_is_refused():
    with pytest.raises(SpaceError, match="inductor.freezing is both in"):
        space_from_dict(
            {"inductor": {"freezing": [True]}, "numerics": {"inductor": {"freezing": [False]}}},
            "cpu",
        )
