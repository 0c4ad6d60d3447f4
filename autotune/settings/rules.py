"""The rules a setting's value follows, stated once: the command line's argument types
(:mod:`autotune._argtypes`) and a study's settings read back from its storage
(:mod:`autotune.study._stored`) both check with these, in the same words.

Each rule takes a value of its type and returns it, or raises :class:`RuleError` whose message
completes "--option ..." or "field ...": ``must be at least 1, got 0``. Standard library only.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

SEED_LIMIT = 2**32  # numpy's (and so Optuna's samplers') seeds are 32-bit
WORKLOADS = ("infer", "train")
SAMPLERS = ("tpe", "random")
SCOPES = ("search", "whole")
PRESET_FINALISTS = ("best", "all")


class RuleError(ValueError):
    """A value breaks its rule; the message says how (``must be ..., got ...``)."""


def positive_int(value: int) -> int:
    if value < 1:
        raise RuleError(f"must be at least 1, got {value}")
    return value


def non_negative_int(value: int) -> int:
    if value < 0:
        raise RuleError(f"must be 0 or more, got {value}")
    return value


def seed(value: int) -> int:
    if not 0 <= value < SEED_LIMIT:
        raise RuleError(f"must be in 0 to {SEED_LIMIT - 1}, got {value}")
    return value


def positive_float(value: float, shown: str | None = None) -> float:
    if not value > 0 or value == float("inf"):
        raise RuleError(f"must be a positive number, got {_shown(value, shown)}")
    return value


def non_negative_float(value: float, shown: str | None = None) -> float:
    if not value >= 0 or value == float("inf"):
        raise RuleError(f"must be a number >= 0, got {_shown(value, shown)}")
    return value


def fraction(value: float, shown: str | None = None) -> float:
    if not 0 <= value < 1:
        raise RuleError(f"must be a fraction in [0, 1), got {_shown(value, shown)}")
    return value


def distinct_positive_ints(values: Sequence[int], shown: str | None = None) -> tuple[int, ...]:
    """Distinct positive integers, at least one, in the order given."""
    checked = tuple(positive_int(v) for v in values)
    if not checked or len(set(checked)) != len(checked):
        raise RuleError(
            "must be distinct positive integers separated by commas, e.g. 1,8,32; got "
            f"{shown if shown is not None else ','.join(map(str, values))!r}"
        )
    return checked


def device(text: str) -> str:
    if not re.fullmatch(r"cpu|cuda(:\d+)?", text):
        raise RuleError(f"must be cpu, cuda or cuda:N, got {text!r}")
    return text


def accuracy(text: str) -> str:
    """An accuracy contract (:mod:`autotune._contract`), returned in its canonical form."""
    from autotune._contract import ContractError, parse_contract

    try:
        return str(parse_contract(text))
    except ContractError as exc:
        raise RuleError(f"must be an accuracy contract: {exc}") from exc


def choice(value: str, choices: Sequence[str]) -> str:
    if value not in choices:
        raise RuleError(f"must be one of {', '.join(choices)}, got {value!r}")
    return value


def _shown(value: float, shown: str | None) -> str:
    return shown if shown is not None else f"{value:g}"
