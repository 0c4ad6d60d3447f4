"""One pure entry point from a caller's options to a search's: :func:`resolve` reads each value
by its option's kind, lists every problem at once in the caller's words (a flag on the command
line, a keyword in Python, a key in a study file), applies ``--effort`` and the rules across
options, and returns :class:`SearchOptions`. It never changes what it was given."""

from __future__ import annotations

import difflib
import functools
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from autotune.errors import UsageError
from autotune.settings._kinds import KINDS, TEXT, Kind, choice, switch
from autotune.settings._option import EFFORTS, Option
from autotune.settings._table import BY_NAME, SEARCH_OPTIONS
from autotune.settings.rules import RuleError


@dataclass(frozen=True)
class Language:
    """How a caller names an option: ``--trials``, ``trials=``, `` `trials` ``.

    Attributes:
        caller: Who is speaking, for the first words of a message (``autotune.tune``).
        form: The option's name in its words, from its table name and flag.
        takes: Whether this caller may set the option.
    """

    caller: str
    form: Callable[[Option], str]
    takes: Callable[[Option], bool] = lambda option: True
    noun: str = "option"
    sep: str = ": "

    def name(self, option: str) -> str:
        """What this caller calls the option named ``option``."""
        return self.form(BY_NAME[option])

    def setting(self, option: str, value: Any) -> str:
        """The option named ``option`` set to ``value``, as this caller writes it."""
        if self is PYTHON:
            return f"{option}={value!r}"
        if self is FILE:
            return f"`{option} = {value!r}`"
        return f"{self.name(option)} {value!r}"


CLI = Language("", lambda o: o.flag)
PYTHON = Language("autotune.tune", lambda o: f"{o.name}=", lambda o: o.in_tune)
FILE = Language("the study file", lambda o: f"`{o.name}`", lambda o: o.in_files, "key", " ")


class SearchOptions:
    """The options of one search, resolved: every option of the table by its name
    (``options.trials``), and which were given (those ``--effort`` set count as given, so a
    resumed study takes them like explicit options).

    Attributes:
        given: The names of the options given.
        effort_sizes_trials: ``--effort thorough`` sizes the trial budget from the space.
    """

    def __init__(
        self, values: Mapping[str, Any], given: frozenset[str], effort_sizes_trials: bool
    ) -> None:
        self._values = MappingProxyType(dict(values))
        self.given = given
        self.effort_sizes_trials = effort_sizes_trials

    def __getattr__(self, name: str) -> Any:
        try:
            return self.__dict__["_values"][name]
        except KeyError:
            raise AttributeError(f"no option {name!r} in the settings table") from None

    def __repr__(self) -> str:
        given = {k: v for k, v in self._values.items() if k in self.given}
        return f"SearchOptions({given})"


def read_values(values: Mapping[str, Any], language: Language) -> tuple[dict[str, Any], list[str]]:
    """Each of ``values`` read by its option's kind: the values as the command line would have
    parsed them, and a problem for each unknown option or bad value, in ``language``'s words."""
    read: dict[str, Any] = {}
    problems = []
    takes = {o.name: o for o in SEARCH_OPTIONS if language.takes(o)}
    for name, value in values.items():
        option = takes.get(name)
        elsewhere = BY_NAME[name].elsewhere if name in BY_NAME else None
        if option is None and elsewhere:
            problems.append(f"it takes no {language.form(BY_NAME[name])}: {elsewhere}")
            continue
        if option is None:
            near = difflib.get_close_matches(name, list(takes), n=1)
            hint = f" (did you mean {language.name(near[0])}?)" if near else ""
            problems.append(f"unknown {language.noun} {_given(language, name, value)}{hint}")
            continue
        try:
            read[name] = None if value is None else kind_of(option).check(value)
        except RuleError as exc:
            problems.append(f"{language.form(option)}{language.sep}{exc}")
    return read, problems


def kind_of(option: Option) -> Kind:
    """How an option's value is read."""
    if option.switch:
        return Kind("switch", lambda text: text, switch)
    if option.choices is not None:
        return choice(option.choices)
    return KINDS[option.kind] if option.kind else TEXT


def resolve(
    values: Mapping[str, Any],
    *,
    given: Iterable[str] | None = None,
    language: Language = PYTHON,
) -> SearchOptions:
    """The options of a search from ``values`` (option name -> value; the options left out take
    their defaults).

    Args:
        values: The values the caller set, by option name, typed (``trials=8``) or as the
            command line parsed them.
        given: The names the caller set explicitly (default: the keys of ``values``).
        language: How the caller names options, for messages.

    Raises:
        UsageError: Every problem at once: an unknown option (with the closest known one), a
            value that breaks its option's rule, options that do not go together.
    """
    read, problems = read_values(values, language)
    given = frozenset(values if given is None else given)
    merged = _defaults() | read
    problems += pareto_problems(
        bool(merged["pareto"]),
        merged["objective"],
        {k: merged[k] for k in ("pick", "pareto_axes") if merged[k] is not None},
        language.name,
        language.setting,
    )
    if merged["accuracy"] is not None and ("workload" in read or "workload" not in values):
        problems += _contract_problems(merged["accuracy"], merged["workload"], language)
    if problems:
        count = "" if len(problems) == 1 else f"{len(problems)} problems: "
        caller = f"{language.caller}: " if language.caller else ""
        raise UsageError(f"{caller}{count}{'; '.join(problems)}.")
    effort = EFFORTS.get(merged["effort"] or "", {})
    chosen = {k: v for k, v in effort.items() if k not in given and v is not None}
    sizes = merged["effort"] == "thorough" and "trials" not in given
    return SearchOptions(merged | chosen, given | set(chosen) | ({"trials"} if sizes else set()),
                         sizes)  # fmt: skip


def pareto_problems(
    pareto: bool,
    objective: str,
    front_only: Mapping[str, Any],
    name: Callable[[str], str],
    setting: Callable[[str, Any], str],
) -> list[str]:
    """The rules across a Pareto study's options, as the caller calls them (``name`` an option,
    ``setting`` an option with its value): what goes with a front only (``front_only``:
    ``pick``, ``pareto_axes``, those set) needs ``pareto``, and a front replaces the single
    objective."""
    if not pareto:
        return [
            f"{setting(key, value)} goes with a Pareto front, which only a {name('pareto')} "
            f"study has: add {name('pareto')} (latency against compile time; "
            f"{name('pareto_axes')} latency,compile,memory adds peak memory)"
            for key, value in front_only.items()
        ]
    if objective != "latency":
        return [
            f"{name('pareto')} replaces the single objective, got "
            f"{setting('objective', objective)}: the front already trades latency against "
            f"compile time. Drop {name('objective')}, or drop {name('pareto')} to optimize one "
            "objective"
        ]
    return []


def _contract_problems(accuracy: str, workload: str, language: Language) -> list[str]:
    """An accuracy contract that cannot judge the workload (a training workload is judged by
    its steps' loss and gradients, an inference one by its outputs), as the caller says it."""
    from autotune.measure import parse_contract, workload_problems

    prefix = (
        f"{language.setting('accuracy', accuracy)} with {language.setting('workload', workload)}"
    )
    problems = workload_problems(
        parse_contract(accuracy), workload, shown=lambda spec: language.setting("accuracy", spec)
    )
    return [f"{prefix}: {problem}" for problem in problems]


@functools.cache
def _defaults() -> dict[str, Any]:
    """Each option's default, read as a given value would be (``20GiB`` as bytes)."""
    return {
        o.name: None if o.default is None else kind_of(o).check(o.default) for o in SEARCH_OPTIONS
    }


def _given(language: Language, name: str, value: Any) -> str:
    """An unknown option as the caller wrote it."""
    if language is PYTHON:
        return f"{name}={value!r}"
    return f"`{name}`" if language is FILE else name
