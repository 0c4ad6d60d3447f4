"""Issue 56: a queued or stored trial's values are checked against the space when drawn.
Optuna takes a fixed value outside a range with a warning only, and refuses one outside the
choices with a bare ValueError; either way a database row escaped the space."""

from __future__ import annotations

import warnings

import optuna
import pytest

from autotune.space import SpaceError, space_from_dict

SPACE = {
    "inductor": {
        "freezing": [False, True],
        "max_fusion_size": {"low": 16, "high": 64, "step": 16},
    },
    "dynamo": {"recompile_limit": [8, 16]},
}


def _queued(params: dict) -> optuna.Trial:
    study = optuna.create_study()
    study.enqueue_trial(params)
    return study.ask()


@pytest.mark.parametrize(
    ("params", "refused"),
    [
        ({"inductor.max_fusion_size": 1000}, "the trial fixes 1000, but this space offers the "
         "range low=16, high=64, step=16 only"),  # Optuna warned, and took it
        ({"inductor.max_fusion_size": 40}, "the trial fixes 40"),  # off the step
        ({"inductor.freezing": 1}, "the trial fixes 1, but this space offers the choices False, "
         "True only"),  # Optuna compares 1 == True
        ({"dynamo.recompile_limit": 12}, "the trial fixes a value Optuna refuses ('12' not in "
         "(8, 16))"),  # was ValueError
    ],
)  # fmt: skip
def test_a_queued_value_the_space_does_not_offer_is_refused_when_drawn(params, refused):
    space = space_from_dict(SPACE, "cpu")

    with warnings.catch_warnings(), pytest.raises(SpaceError) as info:
        warnings.simplefilter("ignore", UserWarning)  # Optuna's "out of range" warning
        space.suggest(_queued(params))
    (param,) = params
    assert str(info.value).startswith(f"{param}: {refused}")
    assert str(info.value).endswith("queue values the space offers (`autotune spaces --show` "
                                    "lists them)")  # fmt: skip


def test_a_queued_value_the_space_offers_is_drawn_as_queued():
    space = space_from_dict(SPACE, "cpu")
    queued = {"inductor.max_fusion_size": 48, "inductor.freezing": True}

    config = space.suggest(_queued({**queued, "dynamo.recompile_limit": 16}))
    assert config.options["max_fusion_size"] == 48 and config.options["freezing"] is True
    assert config.dynamo == {"recompile_limit": 16}
