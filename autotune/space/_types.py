"""The values a space file may list: scalars (a knob's type is checked against the installed
torch by :mod:`autotune.runtime.knobs`, the rule the runtime applies to a best-config file)."""

from __future__ import annotations

from typing import Any

_SCALARS = (bool, int, float, str)


def is_scalar(value: Any) -> bool:
    return value is None or isinstance(value, _SCALARS)
