"""Checks a knob value against the type torch declares for it (``config.get_type``)."""

from __future__ import annotations

import types
import typing
from typing import Any

_SCALARS = (bool, int, float, str)


def accepts(tp: Any, value: Any) -> bool | None:
    """True/False when ``value`` fits ``tp``; None when the type cannot be checked here."""
    origin = typing.get_origin(tp)
    if origin is typing.Literal:
        return any(value == arg and type(value) is type(arg) for arg in typing.get_args(tp))
    if origin in (typing.Union, types.UnionType):
        verdicts = [accepts(arm, value) for arm in typing.get_args(tp)]
        if any(v is True for v in verdicts):
            return True
        return None if any(v is None for v in verdicts) else False
    if tp is type(None) or tp is None:
        return value is None
    if tp is bool:
        return isinstance(value, bool)
    if tp is int:
        return isinstance(value, int) and not isinstance(value, bool)
    if tp is float:
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if tp is str:
        return isinstance(value, str)
    return None


def describe(tp: Any) -> str:
    """A short readable name for a declared type."""
    if isinstance(tp, type):
        return tp.__name__
    return str(tp).replace("typing.", "")


def is_scalar(value: Any) -> bool:
    return value is None or isinstance(value, _SCALARS)
