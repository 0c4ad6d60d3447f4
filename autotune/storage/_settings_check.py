"""The rules a study's stored settings follow when read back: each setting an option sets is
read by that option's kind, as the command line reads it (the settings table,
:mod:`autotune.settings`), and the checks across settings (the objective's mix, a Pareto
front's axes and pick rule).

A row written by autotune passes; one edited by hand or written by another tool yields one
problem per bad setting, each naming the setting and its value.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable, Collection, Mapping
from typing import Any

from autotune.errors import UsageError
from autotune.records import shown
from autotune.scope import ScopePlan
from autotune.scoring import Objective, PickRule, parse_axes
from autotune.settings import KINDS, SEARCH_OPTIONS, Kind, kind_of, pareto_problems, rules
from autotune.trials import MeasureSettings

Check = Callable[[Any], None]  # raises rules.RuleError saying what is wrong


def _kind(name: str) -> Check:
    """Read by the settings table's kind ``name`` (:data:`autotune.settings.KINDS`), as a
    value an option takes is read."""
    return _read_by(KINDS[name])


def _read_by(kind: Kind) -> Check:
    def check(value: Any) -> None:
        kind.check(value)

    return check


def _text(value: Any) -> None:
    if not isinstance(value, str) or not value:
        raise rules.RuleError(f"must be a non-empty string, got {shown(value)}")


def _object(value: Any) -> None:
    if not isinstance(value, dict):
        raise rules.RuleError(f"must be a JSON object, got {shown(value)}")


def _optional(check: Check) -> Check:
    return lambda value: None if value is None else check(value)


def _batch_sizes(value: Any) -> None:
    if not isinstance(value, list):  # a row holds the list, never --batch-sizes' one number
        raise rules.RuleError(f"must be a list of batch sizes, got {shown(value)}")
    KINDS["positive_ints"].check(value)


def _axes(value: Any) -> None:
    if not isinstance(value, list) or not all(isinstance(a, str) for a in value):
        raise rules.RuleError(f"must be a list of axes, got {shown(value)}")
    try:
        parse_axes(",".join(value))
    except UsageError:
        raise rules.RuleError(
            "must be two or three distinct axes out of latency, compile and memory, latency "
            f"among them, got {shown(value)}"
        ) from None


def _pick(value: Any) -> None:
    _text(value)
    try:
        PickRule.parse(value)
    except Exception:  # noqa: BLE001 - any failure to read the rule: a limit too large, ...
        raise rules.RuleError(
            f"must be a rule --pick takes, e.g. 'fastest,compile<=60', got {shown(value)}"
        ) from None


def _scope_plan(value: Any) -> None:
    _object(value)
    try:
        ScopePlan.from_dict(value)
    except Exception as exc:  # noqa: BLE001 - whatever the plan's reader fails on
        raise rules.RuleError(
            f"must be a probed scope plan, got one that cannot be read ({type(exc).__name__}: "
            f"{shown(str(exc))})"
        ) from None


def _shapes(value: Any) -> None:
    from autotune.workload import shapes_problem

    problem = shapes_problem(value)
    if problem is not None:
        raise rules.RuleError(f"{problem} (a traffic trace as --traffic reads it)")


MEASURE_RULES: dict[str, Check] = {
    "warmup": _kind("non_negative_int"),
    "min_rounds": _kind("positive_int"),
    "max_rounds": _kind("positive_int"),
    "target_seconds": _kind("positive_float"),
    "precision": _optional(_kind("fraction")),
    "max_seconds": _optional(_kind("positive_float")),
    "stop_below": _optional(_kind("positive_float")),
    "screen_seconds": _optional(_kind("positive_float")),
}
# The settings a row holds that no option sets: what the study was made with.
STORED_ONLY: dict[str, Check] = {
    "space": _object,
    "torch_version": _text,
    "scope_plan": _optional(_scope_plan),
    "model_sha256": _optional(_text),
    "triton_version": _optional(_text),
}
# The stored forms an option's setting may take where it is not what the option reads
# (``Option.stored``): --pareto's axes, --memory-budget's bytes, the model file's path...
STORED_FORMS: dict[str, Check] = {
    "text": _text,
    "object": _object,  # --measure-seconds: the trial timing, each setting against MEASURE_RULES
    "axes": _axes,
    "pick_rule": _pick,
    "ints": _batch_sizes,
    "bytes": _kind("non_negative_int"),
    "shapes": _shapes,  # --traffic: the trace's shapes and weights, read where it was given
}


def field_rules(optional: Collection[str]) -> dict[str, Check]:
    """One rule per setting of ``StudySettings``: those an option sets are read by that
    option's kind (the settings table's, :mod:`autotune.settings`) or by its stored form, those
    in ``optional`` may also be None, the rest are :data:`STORED_ONLY`'s."""
    found = dict(STORED_ONLY)
    for option in SEARCH_OPTIONS:
        if option.field is None or option.field in found:
            continue
        check = STORED_FORMS[option.stored] if option.stored else _read_by(kind_of(option))
        found[option.field] = _optional(check) if option.field in optional else check
    return found


# Settings a row must hold: those without a default, and how trials are timed (every row
# autotune ever wrote has it; a default in its place would time trials differently).
REQUIRED = ("model_path", "device", "space", "space_hash", "torch_version", "measure")


def setting_problems(data: Any, checks: Mapping[str, Check]) -> list[str]:
    """Every problem of a study's stored settings ``data``, each naming the setting and its
    value: a missing one, each against its rule in ``checks`` (a setting no rule knows, a newer
    autotune's, is left alone), then, when each is fine, the checks across settings the
    command line makes."""
    if not isinstance(data, dict):
        return [f"settings_json {shown(data)}: must be a JSON object"]
    problems = [f"{name} missing" for name in REQUIRED if name not in data]
    problems += _problems(data, checks)
    measure = data.get("measure")
    if isinstance(measure, dict):
        problems += _problems(measure, MEASURE_RULES, "measure.")
        if not problems:  # each is fine: then the rules across them that timing holds to
            problems += [f"measure: {p}" for p in measure_settings(measure).problems()]
    return problems or _across(data)


def _problems(data: Mapping[str, Any], checks: Mapping[str, Check], prefix: str = "") -> list[str]:
    problems = []
    for name, value in data.items():
        check = checks.get(name)
        if check is None:
            continue
        try:
            check(value)
        except rules.RuleError as exc:
            problems.append(f"{prefix}{name} {exc}")
    return problems


def _across(data: Mapping[str, Any]) -> list[str]:
    objective = data.get("objective", "latency")
    mix = {k: data.get(k) for k in ("calls", "batch_sizes", "max_latency_s")}
    problems = []
    try:
        Objective(objective, mix["calls"], mix["batch_sizes"], mix["max_latency_s"])
    except UsageError as exc:
        given = ", ".join(f"{k} {shown(v)}" for k, v in mix.items())
        problems.append(f"objective {shown(objective)} with {given}: {_first_sentence(exc)}")
    front_only = {"pick": data["pick"]} if data.get("pick") is not None else {}
    problems += pareto_problems(
        bool(data.get("pareto")), objective, front_only, str, lambda k, v: f"{k} {shown(v)}"
    )
    return problems


def measure_settings(data: Mapping[str, Any]) -> MeasureSettings:
    """The checked ``measure`` object as :class:`MeasureSettings` (unknown keys left out)."""
    names = {f.name for f in dataclasses.fields(MeasureSettings)}
    return MeasureSettings(**{k: v for k, v in data.items() if k in names})


def _first_sentence(exc: BaseException) -> str:
    """The rule an error states, without its remedy: up to its first colon or full stop."""
    return re.split(r"[:.] ", str(exc), maxsplit=1)[0]
