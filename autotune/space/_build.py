"""From a raw (``extends`` already merged) space to validated knobs, problems and notes."""

from __future__ import annotations

import dataclasses
from collections.abc import Collection
from dataclasses import dataclass, field
from typing import Any

from autotune.runtime import knobs as torch_knobs
from autotune.runtime.shapes import padding_problems
from autotune.space import _graph, _levers, _presets, _unsafe
from autotune.space._knob import Knob, did_you_mean, parse_knob
from autotune.space._validate import (
    LAYERS,
    NUMERICS_LAYERS,
    knob_notes,
    knob_problems,
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
    "accuracy_contract",
    "padding",
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
    left_out: list[Knob] = field(default_factory=list)  # [precision] without a contract


# Layers whose knobs exist for one workload only (train.optimizer, generate.prefill): a preset
# that sets only them belongs to that workload, and is left out of others without a note.
_WORKLOAD_LAYERS = ("train", "generate")


def build(
    raw: dict[str, Any],
    device: str,
    workload: str,
    allow_numerics: bool,
    vouched: Collection[str] | None = None,
    contract: bool = False,
    builtin: bool = False,
) -> Built:
    """Parses and validates every knob of ``raw`` against the installed torch; ``vouched``
    as in :func:`autotune.space._unsafe.problems` (None: a file the user named). ``contract``:
    the study states an accuracy contract (the ``[precision]`` knobs are searched);
    ``builtin``: a space of autotune's own, whose backends not installed here are left out."""
    out = Built(problems=_top_problems(raw))
    broken: set[str] = set()
    opted = _unsafe.declared(raw, out.problems)
    knobs = _parse_knobs(raw, out.problems, broken)
    contract = contract or raw.get("accuracy_contract") is True
    declared_knobs = knobs  # presets may name a backend left out here
    if builtin:
        knobs = _offered_backends(knobs, out.notes, workload)
    padding = raw.get("padding") is not None
    context = make_context(device, workload, knobs, contract, padding)
    allowed = allow_numerics or raw.get("allow_numerics_changes") is True
    for knob in knobs:
        possible = _graph.static_value(knob, context) is not False
        found = knob_problems(knob, device, machine_checks=possible)
        broken.update([knob.param] if found else [])
        out.problems += found
        searched = possible and (allowed or not knob.numerics)
        out.notes += knob_notes(knob, device) if searched else []
        if knob.layer == "shapes" and possible and not padding:
            out.problems.append(
                f"{knob.param} applies the model's padding declaration, and this study has none: "
                'offer it with when = "padding" (a model file\'s PADDING, or '
                "autotune.tune(padding=...), declares it)"
            )
    unsafe, out.unsafe_knobs = _unsafe.problems(
        [k for k in knobs if k.param not in broken], opted, vouched, torch_knobs.declared_type
    )
    out.problems += unsafe
    out.problems += _graph.condition_problems(knobs, broken)
    out.knobs = [
        k for k in knobs if (allowed or not k.numerics) and (contract or k.layer != "precision")
    ]
    out.left_out = [k for k in knobs if k.layer == "precision" and not contract]
    out.notes += _numerics_note(knobs, allowed) + _backend_note(knobs)
    out.notes += _precision_note(knobs, contract)
    declared, found = _presets.parse(raw.get("presets"), declared_knobs)
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
    by_param = {k.param: k for k in knobs}
    usable, notes = [], []
    for preset in named.values():
        layers = {param.split(".")[0] for param in preset.values}
        if any(layer != context["workload"] for layer in layers & set(_WORKLOAD_LAYERS)):
            continue  # a training or generation preset in another workload's study: as meant
        numerics = [param for param in preset.values if param not in searched]
        if numerics:
            why = (
                "state an accuracy contract with --accuracy to measure it"
                if all(p.startswith("precision.") for p in numerics)
                else "pass --allow-numerics-changes to measure it"
            )
            notes.append(
                f"preset {preset.name!r} is not measured: it sets {', '.join(numerics)}, "
                f"which change numerics ({why})"
            )
            continue
        offered = _offered(preset, by_param)
        if offered:
            notes.append(f"preset {preset.name!r} is not measured here: {offered}")
            continue
        _, inactive = _presets.assign(preset, plan, context)
        unmet = _unmet_condition(inactive, by_param, context)
        if unmet is not None:
            condition, after = _CONDITIONS[unmet]
            notes.append(f"preset {preset.name!r} is measured only {condition}: it sets "
                         f"{', '.join(inactive)}{after}")  # fmt: skip
        elif inactive:
            notes.append(
                f"preset {preset.name!r} is not measured here: {', '.join(inactive)} is off "
                f"for {context['device']} / {context['workload']}"
            )
        else:
            usable.append(preset)
    return usable, notes


def make_context(
    device: str, workload: str, knobs: list[Knob], contract: bool = False, padding: bool = False
) -> dict[str, Any]:
    """The values of the context names conditions may read."""
    reads = " ".join(k.when for k in knobs if k.when is not None)
    return {
        "device": device.split(":")[0],
        "workload": workload,
        "cpu_vector_widths": vector_widths() if "cpu_vector_widths" in reads else [],
        **_levers.context(device, contract, reads, padding),
    }


def _offered_backends(knobs: list[Knob], notes: list[str], workload: str) -> list[Knob]:
    """A built-in space's ``compile.backend`` without the backends not installed here, nor,
    for training, those that compile inference graphs only."""
    out = []
    for knob in knobs:
        missing = [v for v in knob.values() if not _levers.installed(str(v))]
        if workload == "train":
            missing += [v for v in knob.values() if v in _levers.INFERENCE_ONLY_BACKENDS]
        if knob.param == "compile.backend" and missing:
            kept = tuple(v for v in knob.values() if v not in missing)
            for name in dict.fromkeys(missing):
                why = (
                    "it compiles inference graphs (a train workload's backward would run "
                    "outside it)"
                    if name in _levers.INFERENCE_ONLY_BACKENDS and workload == "train"
                    else "it is not installed here "
                    f"({_levers.EXTRA_BACKENDS.get(str(name), 'install it')} to search it)"
                )
                notes.append(f"backend {name!r} is not searched: {why}")
            knob = dataclasses.replace(knob, choices=kept)
        out.append(knob)
    return out


def _offered(preset: _presets.Preset, by_param: dict[str, Knob]) -> str:
    """Why a preset names a value the (narrowed) space does not offer; empty if it does."""
    for param, value in preset.values.items():
        knob = by_param.get(param)
        if knob is not None and not knob.offers(value):
            return f"{param} = {value!r} is not offered (not installed, or left out)"
    return ""


def _precision_note(knobs: list[Knob], contract: bool) -> list[str]:
    group = [k.param for k in knobs if k.layer == "precision"]
    if not group or contract:
        return []
    return [
        f"the [precision] knobs ({', '.join(group)}) are not searched; {_levers.CONTRACT_HINT}"
    ]


def _top_problems(raw: dict[str, Any]) -> list[str]:
    problems = [
        f"unknown key {key!r} at the top level{did_you_mean(key, TOP_KEYS)}"
        for key in raw
        if key not in TOP_KEYS
    ]
    for key in ("name", "description"):
        if key in raw and not isinstance(raw[key], str):
            problems.append(f"{key} must be a string, got {raw[key]!r}")
    for key in ("allow_numerics_changes", "accuracy_contract"):
        flag = raw.get(key, False)
        if not isinstance(flag, bool):
            problems.append(f"{key} must be true or false, got {flag!r}")
    if raw.get("padding") is not None:
        problems += padding_problems(raw["padding"], "padding")
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


# A study condition a knob's `when` may wait on: what a preset that sets such a knob is
# measured only ..., and what its note adds after the knobs.
_CONDITIONS = {
    "accuracy_contract": (
        "under an accuracy contract",
        ", which changes numerics (state one with --accuracy)",
    ),
    "padding": ("for a model that declares how its inputs pad (a model file's PADDING)", ""),
}


def _unmet_condition(
    inactive: list[str], by_param: dict[str, Any], context: dict[str, Any]
) -> str | None:
    """The study condition (a key of :data:`_CONDITIONS`) that keeps a preset's ``inactive``
    knobs off here, if that is why."""
    for key in _CONDITIONS:
        if (
            inactive
            and not context[key]
            and any(key in (by_param[p].when or "") for p in inactive)
        ):
            return key
    return None
