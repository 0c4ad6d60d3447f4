"""The kinds of value a setting takes, each read two ways with the same rule: from the command
line's text (:meth:`Kind.parse`), and as a value (:meth:`Kind.check`: ``autotune.tune``'s
keywords, a study file's TOML, a stored row). Both raise :class:`RuleError` whose message
completes the option's name: ``must be at least 1, got 0``. Standard library only."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from autotune.settings import rules
from autotune.settings.rules import RuleError


@dataclass(frozen=True)
class Kind:
    """A kind of value: ``parse`` reads the command line's text, ``check`` a typed value
    (returning it in the form the command line's would have: a tuple, bytes, canonical text)."""

    name: str
    parse: Callable[[str], Any]
    check: Callable[[Any], Any]


_SHOWN = 80  # characters of a bad value a message quotes


def shown(value: Any) -> str:
    """``value`` as a message quotes it: its repr, cut to a readable length, on one line."""
    try:
        text = repr(value).replace("\n", "\\n")
    except (RecursionError, ValueError):  # nested too deep, an int with too many digits
        text = f"<{type(value).__name__}>"
    return text if len(text) <= _SHOWN else text[: _SHOWN - 3] + "..."


def _whole_number(text: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise RuleError(f"must be a whole number, got {text!r}") from None


def _number_text(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise RuleError(f"must be a number, got {text!r}") from None
    if math.isnan(value):
        raise RuleError(f"must be a number, got {text!r}")
    return value


def _int_value(value: Any) -> int:
    if not isinstance(value, int) or isinstance(value, bool):
        raise RuleError(f"must be a whole number, got {shown(value)}")
    return value


def _float_value(value: Any) -> float:
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        raise RuleError(f"must be a number, got {shown(value)}")
    try:
        number = float(value)
    except OverflowError:  # a whole number past any float: as large as a float gets
        number = math.inf if value > 0 else -math.inf
    if math.isnan(number):
        raise RuleError(f"must be a number, got {shown(value)}")
    return number


def _text_value(value: Any) -> str:
    if not isinstance(value, str) or not value:
        raise RuleError(f"must be a non-empty string, got {shown(value)}")
    return value


def _integer(rule: Callable[[int], int]) -> Kind:
    return Kind(rule.__name__, lambda t: rule(_whole_number(t)), lambda v: rule(_int_value(v)))


def _real(rule: Callable[[float, str | None], float]) -> Kind:
    return Kind(
        rule.__name__, lambda t: rule(_number_text(t), t), lambda v: rule(_float_value(v), None)
    )


def _size_value(value: Any) -> int:
    if isinstance(value, str):
        return rules.size(value)
    return rules.non_negative_int(_int_value(value))


def _ints_text(text: str) -> tuple[int, ...]:
    values = [_whole_number(part.strip()) for part in text.split(",") if part.strip()]
    return rules.distinct_positive_ints(values, text)


def _ints_value(value: Any) -> tuple[int, ...]:
    if isinstance(value, int) and not isinstance(value, bool):
        value = [value]  # one batch size
    if not isinstance(value, (list, tuple)):
        raise RuleError(f"must be a list of whole numbers, got {shown(value)}")
    return rules.distinct_positive_ints([_int_value(v) for v in value], None)


def _gpu_list(text: str) -> tuple[int, ...]:
    values = tuple(rules.non_negative_int(_whole_number(p.strip())) for p in text.split(",") if p)
    if not values or len(set(values)) != len(values):
        raise RuleError(
            f"must be distinct GPU indices separated by commas, e.g. 0,1,2,3; got {text!r}"
        )
    return values


def _plain_text(value: Any) -> str:
    """Text where text goes: a study named ``5`` in a file (``study = 5``) is the text ``5``."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return str(value)
    if not isinstance(value, str):
        raise RuleError(f"must be a string or a number, got {shown(value)}")
    return value


def _texts(rule: Callable[[str], str]) -> Kind:
    return Kind(rule.__name__, rule, lambda v: rule(_text_value(v)))


def switch(value: Any) -> bool:
    """A switch's value: True or False, never a word that looks like one."""
    if not isinstance(value, bool):
        raise RuleError(f"must be true or false, got {shown(value)}")
    return value


def choice(choices: tuple[str, ...]) -> Kind:
    """One of ``choices``."""
    return Kind("choice", lambda t: rules.choice(t, choices), lambda v: rules.choice(v, choices))


TEXT = Kind("text", lambda text: text, _plain_text)
KINDS: dict[str, Kind] = {
    "positive_int": _integer(rules.positive_int),
    "non_negative_int": _integer(rules.non_negative_int),
    "seed": _integer(rules.seed),
    "confirm": _integer(rules.confirm),
    "positive_float": _real(rules.positive_float),
    "non_negative_float": _real(rules.non_negative_float),
    "fraction": _real(rules.fraction),
    "size": Kind("size", rules.size, _size_value),
    "positive_ints": Kind("positive_ints", _ints_text, _ints_value),
    "gpu_list": Kind("gpu_list", _gpu_list, lambda v: _gpu_list(",".join(map(str, v)))),
    "device": _texts(rules.device),
    "accuracy": _texts(rules.accuracy),
}
