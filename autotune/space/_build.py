"""From a raw (``extends`` already merged) space to validated knobs, problems and notes."""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass, field
from typing import Any

from autotune.space import _graph, _presets, _unsafe
from autotune.space._knob import Knob, did_you_mean, parse_knob
from autotune.space._validate import (
    LAYERS,
    NUMERICS_LAYERS,
    knob_notes,
    knob_problems,
    torch_config,
    vector_widths,
)

TOP_KEYS = (
    *LAYERS,
    "numerics",
    "name",
    "description",
    "extends",
    "remove",
    "allow_numerics_changes",
    "presets",
    _unsafe.KEY,
)
_NUMERICS_HINT = "pass --allow-numerics-changes (or set allow_numerics_changes = true) to search"


@dataclass
class Built:
    """The outcome of :func:`build`: knobs to search, problems that refuse the space, notes."""

    knobs: list[Knob] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    presets: list[_presets.Preset] = field(default_factory=list)
    unsafe_knobs: tuple[str, ...] = ()  # knobs refused from data that the space opts into


def build(
    raw: dict[str, Any],
    device: str,
    workload: str,
    allow_numerics: bool,
    vouched: Collection[str] | None = None,
) -> Built:
    """Parses and validates every knob of ``raw`` against the installed torch; ``vouched``
    as in :func:`autotune.space._unsafe.problems` (None: a file the user named)."""
    out = Built(problems=_top_problems(raw))
    broken: set[str] = set()
    opted = _unsafe.declared(raw, out.problems)
    knobs = _parse_knobs(raw, out.problems, broken)
    context = make_context(device, workload, knobs)
    allowed = allow_numerics or raw.get("allow_numerics_changes") is True
    for knob in knobs:
        possible = _graph.static_value(knob, context) is not False
        found = knob_problems(knob, device, machine_checks=possible)
        broken.update([knob.param] if found else [])
        out.problems += found
        searched = possible and (allowed or not knob.numerics)
        out.notes += knob_notes(knob, device) if searched else []
    unsafe, out.unsafe_knobs = _unsafe.problems(
        [k for k in knobs if k.param not in broken], opted, vouched, _declared_type
    )
    out.problems += unsafe
    out.problems += _graph.condition_problems(knobs, broken)
    out.knobs = [k for k in knobs if allowed or not k.numerics]
    out.notes += _numerics_note(knobs, allowed) + _backend_note(knobs)
    declared, found = _presets.parse(raw.get("presets"), knobs)
    out.problems += found
    if not out.problems:
        out.presets, notes = _usable_presets(declared, out.knobs, context)
        out.notes += notes
    return out


def _usable_presets(
    declared: list[_presets.Preset], knobs: list[Knob], context: dict[str, Any]
) -> tuple[list[_presets.Preset], list[str]]:
    """The mode presets, then the declared ones (a declared name replaces a mode's), less
    those naming a knob the conditions switch off here."""
    named = {p.name: p for p in _presets.mode_presets(knobs)}
    named.update({p.name: p for p in declared})
    plan = _graph.make_plan(knobs)
    searched = {k.param for k in knobs}
    usable, notes = [], []
    for preset in named.values():
        numerics = [param for param in preset.values if param not in searched]
        if numerics:
            notes.append(
                f"preset {preset.name!r} is not measured: it sets {', '.join(numerics)}, "
                "which change numerics (pass --allow-numerics-changes to measure it)"
            )
            continue
        _, inactive = _presets.assign(preset, plan, context)
        if inactive:
            notes.append(
                f"preset {preset.name!r} is not measured here: {', '.join(inactive)} is off "
                f"for {context['device']} / {context['workload']}"
            )
        else:
            usable.append(preset)
    return usable, notes


def _declared_type(layer: str, name: str) -> Any:
    try:
        return torch_config(layer).get_type(name)
    except (AttributeError, KeyError):
        return None


def make_context(device: str, workload: str, knobs: list[Knob]) -> dict[str, Any]:
    """The values of the context names conditions may read."""
    reads_widths = any(k.when is not None and "cpu_vector_widths" in k.when for k in knobs)
    return {
        "device": device.split(":")[0],
        "workload": workload,
        "cpu_vector_widths": vector_widths() if reads_widths else [],
    }


def _top_problems(raw: dict[str, Any]) -> list[str]:
    problems = [
        f"unknown key {key!r} at the top level{did_you_mean(key, TOP_KEYS)}"
        for key in raw
        if key not in TOP_KEYS
    ]
    for key in ("name", "description"):
        if key in raw and not isinstance(raw[key], str):
            problems.append(f"{key} must be a string, got {raw[key]!r}")
    flag = raw.get("allow_numerics_changes", False)
    if not isinstance(flag, bool):
        problems.append(f"allow_numerics_changes must be true or false, got {flag!r}")
    return problems


def _parse_knobs(raw: dict[str, Any], problems: list[str], broken: set[str]) -> list[Knob]:
    tables = [(layer, raw.get(layer, {}), False) for layer in LAYERS]
    numerics = raw.get("numerics", {})
    if not isinstance(numerics, dict) or not all(k in NUMERICS_LAYERS for k in numerics):
        problems.append(
            "[numerics] holds the tables [numerics.inductor] and [numerics.dynamo] only, got "
            f"{numerics!r}"
        )
    else:
        tables += [(layer, numerics.get(layer, {}), True) for layer in NUMERICS_LAYERS]
    knobs: dict[str, Knob] = {}
    for layer, table, in_numerics in tables:
        prefix = "numerics." if in_numerics else ""
        if not isinstance(table, dict):
            problems.append(f"[{prefix}{layer}] must be a table of knob = choices, got {table!r}")
            continue
        for name, value in table.items():
            knob, found = parse_knob(layer, name, value, in_numerics)
            problems += found
            broken.update([f"{layer}.{name}"] if found else [])
            if knob is not None and knob.param in knobs:
                problems.append(f"{knob.param} is both in [{layer}] and [numerics.{layer}]")
            elif knob is not None:
                knobs[knob.param] = knob
    return list(knobs.values())


def _numerics_note(knobs: list[Knob], allowed: bool) -> list[str]:
    group = [k.param for k in knobs if k.numerics]
    if not group:
        return []
    if allowed:
        return [
            f"the [numerics] knobs ({', '.join(group)}) are searched: configurations that set "
            "them are checked against eager with 10x looser float tolerances"
        ]
    return [f"the [numerics] knobs ({', '.join(group)}) are not searched; {_NUMERICS_HINT} them"]


def _backend_note(knobs: list[Knob]) -> list[str]:
    backend = next((k for k in knobs if k.param == "compile.backend"), None)
    gated = [k.param for k in knobs if k.layer == "inductor" or k.param == "compile.mode"]
    if backend is None or not gated or "inductor" in backend.values():
        return []
    return [f"{', '.join(gated)} only apply to the inductor backend: never suggested here"]
