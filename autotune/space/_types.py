"""Checks a knob value against the type torch declares for it (``config.get_type``): the same
rules the runtime applies to a best-config file (:mod:`autotune.runtime._safety`)."""

from __future__ import annotations

from typing import Any

from autotune.runtime._safety import accepts, describe

_SCALARS = (bool, int, float, str)

__all__ = ["accepts", "describe", "is_scalar"]


def is_scalar(value: Any) -> bool:
    return value is None or isinstance(value, _SCALARS)
