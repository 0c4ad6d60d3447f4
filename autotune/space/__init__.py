"""Search spaces: TOML files of knobs and choices, validated against the installed torch."""

from __future__ import annotations

from autotune.space._file import SpaceError, builtin_descriptions, builtin_names
from autotune.space._knob import Knob, OutOfSpaceError, Range
from autotune.space._meanings import knob_meanings
from autotune.space._presets import Preset
from autotune.space._space import (
    SearchSpace,
    config_from_values,
    load_space,
    space_from_dict,
)
from autotune.space._validate import describe_knob, sets_numerics_knob

__all__ = [
    "builtin_descriptions",
    "builtin_names",
    "config_from_values",
    "describe_knob",
    "knob_meanings",
    "load_space",
    "sets_numerics_knob",
    "space_from_dict",
    "Knob",
    "OutOfSpaceError",
    "Preset",
    "Range",
    "SearchSpace",
    "SpaceError",
]
