"""Search spaces: TOML files of knobs and choices, validated against the installed torch."""

from __future__ import annotations

from autotune.space._file import SpaceError, builtin_names
from autotune.space._space import (
    Knob,
    SearchSpace,
    config_from_values,
    load_space,
    space_from_dict,
)

__all__ = [
    "Knob",
    "SearchSpace",
    "SpaceError",
    "builtin_names",
    "config_from_values",
    "load_space",
    "space_from_dict",
]
