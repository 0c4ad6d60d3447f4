"""argparse types shared by the subcommands and ``autotune.tune``'s options: one message per
rule, wherever it is used.

Every numeric option is checked here, at parse time, so a bad value is refused with the
subcommand's usage before anything runs. The rules themselves live in :mod:`autotune._rules`,
which a study's stored settings are checked with too.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from typing import TypeVar

from autotune import _rules as rules
from autotune._printable import say
from autotune._sizes import parse_size

T = TypeVar("T")


# --trial-host's former values -> today's ("warm" now means a compile with a filled cache).
_FORMER_HOSTS = {"warm": "preloaded", "cold": "fresh"}
# The notes on former names said in this process: a command line is parsed more than once (a
# study file's expansion, the options given, the parse itself), each note is said once.
_SAID: set[str] = set()


def _note_once(text: str) -> None:
    if text not in _SAID:
        _SAID.add(text)
        say(f"note: {text}", file=sys.stderr)


def trial_host(text: str) -> str:
    """``preloaded`` or ``fresh``; the former ``warm`` and ``cold`` are read as them, with a
    note."""
    if text in _FORMER_HOSTS:
        _note_once(f"--trial-host {text} is now --trial-host {_FORMER_HOSTS[text]} (same meaning)")
        return _FORMER_HOSTS[text]
    return text


def renamed(base: type[argparse.Action], flag: str) -> type[argparse.Action]:
    """``base`` (a store or a switch) for a former name of ``flag``: it stores what ``flag``
    would, after a note naming ``flag``."""

    class Former(base):  # type: ignore[valid-type, misc]
        def __call__(
            self,
            parser: argparse.ArgumentParser,
            namespace: argparse.Namespace,
            values: object,
            option_string: str | None = None,
        ) -> None:
            _note_once(f"{option_string} is now {flag} (same meaning)")
            super().__call__(parser, namespace, values, option_string)

    return Former


def accuracy(text: str) -> str:
    try:
        return rules.accuracy(text)  # its canonical form: what the study stores
    except rules.RuleError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def positive_int(text: str) -> int:
    return _checked(rules.positive_int, _int(text))


def non_negative_int(text: str) -> int:
    return _checked(rules.non_negative_int, _int(text))


def seed(text: str) -> int:
    return _checked(rules.seed, _int(text))


def positive_float(text: str) -> float:
    return _checked(lambda v: rules.positive_float(v, text), _float(text))


def non_negative_float(text: str) -> float:
    return _checked(lambda v: rules.non_negative_float(v, text), _float(text))


def fraction(text: str) -> float:
    return _checked(lambda v: rules.fraction(v, text), _float(text))


def size(text: str) -> int:
    try:
        return parse_size(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def positive_ints(text: str) -> tuple[int, ...]:
    """``"1,8,32"`` -> (1, 8, 32): distinct positive integers, in the order given."""
    values = [_int(part.strip()) for part in text.split(",") if part.strip()]
    try:
        return rules.distinct_positive_ints(values, text)
    except rules.RuleError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def gpu_list(text: str) -> tuple[int, ...]:
    """``"0,1,2,3"`` -> (0, 1, 2, 3): distinct GPU indices."""
    values = tuple(non_negative_int(part.strip()) for part in text.split(",") if part.strip())
    if not values or len(set(values)) != len(values):
        raise argparse.ArgumentTypeError(
            f"must be distinct GPU indices separated by commas, e.g. 0,1,2,3; got {text!r}"
        )
    return values


def device(text: str) -> str:
    return _checked(rules.device, text)


def _checked(rule: Callable[[T], object], value: T) -> T:
    try:
        rule(value)
    except rules.RuleError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    return value


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
