"""The rules a setting's value follows, stated once: the value kinds of the settings table
(:mod:`autotune.settings._kinds`: the command line, ``autotune.tune``'s keywords, a study
file) and a study's settings read back from its storage (:mod:`autotune.storage._settings_check`)
all check with these, in the same words.

Each rule takes a value of its type and returns it, or raises :class:`RuleError` whose message
completes "--option ..." or "field ...": ``must be at least 1, got 0``. Standard library only.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

SEED_LIMIT = 2**32  # numpy's (and so Optuna's samplers') seeds are 32-bit
# --confirm: processes per side of the confirmation round (each run is recorded as confirmN)
MAX_CONFIRM = 4
SIZE_UNITS = {"": 1, "b": 1, "kb": 10**3, "mb": 10**6, "gb": 10**9, "tb": 10**12,
              "kib": 2**10, "mib": 2**20, "gib": 2**30, "tib": 2**40}  # fmt: skip


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


def confirm(value: int) -> int:
    if not 0 <= value <= MAX_CONFIRM:
        raise RuleError(f"must be in 0 to {MAX_CONFIRM}, got {value}")
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
    """An accuracy contract (:mod:`autotune.measure._contract`), returned in its canonical
    form."""
    from autotune.measure import ContractError, parse_contract

    try:
        return str(parse_contract(text))
    except ContractError as exc:
        raise RuleError(f"must be an accuracy contract: {exc}") from exc


def size(text: str) -> int:
    """``"8GiB"`` -> 8589934592: a size written by people (``8GiB``, ``500MB``, ``1048576``) as
    bytes."""
    match = re.fullmatch(r"\s*([0-9]*\.?[0-9]+)\s*([A-Za-z]*)\s*", text)
    unit = match.group(2).lower() if match else ""
    if match is None or unit not in SIZE_UNITS:
        raise RuleError(f"must be a size such as 8GiB, 500MB or 1048576 (bytes), got {text!r}")
    size = float(match.group(1)) * SIZE_UNITS[unit]
    if size == float("inf"):  # more digits than a float holds
        raise RuleError(f"must be a size below 1.8e308 bytes, got {text!r}")
    return int(size)


def choice(value: str, choices: Sequence[str]) -> str:
    if value not in choices:
        raise RuleError(f"must be one of {', '.join(choices)}, got {value!r}")
    return value


def _shown(value: float, shown: str | None) -> str:
    return shown if shown is not None else f"{value:g}"
