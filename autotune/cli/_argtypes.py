"""argparse types shared by the subcommands: one message per rule, wherever it is used.

Every numeric option is checked here, at parse time, so a bad value is refused with the
subcommand's usage before anything runs.
"""

from __future__ import annotations

import argparse
import re

from autotune._sizes import parse_size

SEED_LIMIT = 2**32  # numpy's (and so Optuna's samplers') seeds are 32-bit


def positive_int(text: str) -> int:
    value = _int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def non_negative_int(text: str) -> int:
    value = _int(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be 0 or more, got {value}")
    return value


def seed(text: str) -> int:
    value = _int(text)
    if not 0 <= value < SEED_LIMIT:
        raise argparse.ArgumentTypeError(f"must be in 0 to {SEED_LIMIT - 1}, got {value}")
    return value


def positive_float(text: str) -> float:
    value = _float(text)
    if not value > 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"must be a positive number, got {text}")
    return value


def non_negative_float(text: str) -> float:
    value = _float(text)
    if not value >= 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"must be a number >= 0, got {text}")
    return value


def fraction(text: str) -> float:
    value = _float(text)
    if not 0 <= value < 1:
        raise argparse.ArgumentTypeError(f"must be a fraction in [0, 1), got {text}")
    return value


def size(text: str) -> int:
    try:
        return parse_size(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def positive_ints(text: str) -> tuple[int, ...]:
    """``"1,8,32"`` -> (1, 8, 32): distinct positive integers, in the order given."""
    values = tuple(positive_int(part.strip()) for part in text.split(",") if part.strip())
    if not values or len(set(values)) != len(values):
        raise argparse.ArgumentTypeError(
            f"must be distinct positive integers separated by commas, e.g. 1,8,32; got {text!r}"
        )
    return values


def gpu_list(text: str) -> tuple[int, ...]:
    """``"0,1,2,3"`` -> (0, 1, 2, 3): distinct GPU indices."""
    values = tuple(non_negative_int(part.strip()) for part in text.split(",") if part.strip())
    if not values or len(set(values)) != len(values):
        raise argparse.ArgumentTypeError(
            f"must be distinct GPU indices separated by commas, e.g. 0,1,2,3; got {text!r}"
        )
    return values


def device(text: str) -> str:
    if not re.fullmatch(r"cpu|cuda(:\d+)?", text):
        raise argparse.ArgumentTypeError(f"must be cpu, cuda or cuda:N, got {text!r}")
    return text


def _int(text: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a whole number, got {text!r}") from None


def _float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a number, got {text!r}") from None
    if value != value:
        raise argparse.ArgumentTypeError(f"must be a number, got {text!r}")
    return value
