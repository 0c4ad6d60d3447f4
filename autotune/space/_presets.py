"""A space's presets: the settings practitioners try first, measured in every study.

Each ``mode`` the space allows is a preset on its own (``default`` is the baseline already);
a ``[presets]`` table adds named combinations, each a table of ``"layer.knob" = value``::

    [presets]
    "freezing" = { "inductor.freezing" = true }

A preset sets the knobs it names; every other knob takes the value the preset's mode gives it
(torch's default, or the mode's own setting), or its first choice where the space does not
offer that value. A preset naming a knob that the space's conditions switch off on this device
or workload (``freezing`` when training) is left out of the study with a note.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from autotune.space import _graph
from autotune.space._knob import Knob, did_you_mean


@dataclass(frozen=True)
class Preset:
    """A named setting of some knobs (``values``: Optuna parameter name to value)."""

    name: str
    values: Mapping[str, Any] = field(default_factory=dict)


def as_table(raw: Any) -> Any:
    """``[presets]`` as a table in its order: the stored form is a list of tables, each with
    its ``name`` (a list keeps its order where a stored table's keys get sorted)."""
    if isinstance(raw, list) and all(isinstance(p, dict) and "name" in p for p in raw):
        return {str(p["name"]): {k: v for k, v in p.items() if k != "name"} for p in raw}
    return raw


def as_list(table: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The stored form of a ``[presets]`` table (see :func:`as_table`)."""
    return [{"name": name, **dict(values)} for name, values in table.items()]


def parse(raw: Any, knobs: Sequence[Knob]) -> tuple[list[Preset], list[str]]:
    """The ``[presets]`` table's presets (or the stored list's), and every problem with it."""
    raw = as_table(raw)
    if raw is None:
        return [], []
    if not isinstance(raw, dict):
        return [], [f"[presets] must be a table of name = {{ knob = value }}, got {raw!r}"]
    by_param = {k.param: k for k in knobs}
    presets, problems = [], []
    for name, table in raw.items():
        if not isinstance(table, dict) or not table:
            problems.append(
                f'presets.{name} must be a non-empty table of "layer.knob" = value, got {table!r}'
            )
            continue
        found = []
        for param, value in table.items():
            knob = by_param.get(param)
            if knob is None:
                found.append(
                    f"presets.{name}: {param!r} is not a knob of this space"
                    f"{did_you_mean(param, list(by_param))}"
                )
            elif not knob.offers(value):
                choices = ", ".join(map(repr, knob.values()[:8]))
                found.append(
                    f"presets.{name}: {param} = {value!r} is not one of its choices ({choices})"
                )
        problems += found
        if not found:
            presets.append(Preset(str(name), dict(table)))
    return presets, problems


def mode_presets(knobs: Sequence[Knob]) -> list[Preset]:
    """One preset per ``mode`` the space allows besides ``default`` (the baseline)."""
    mode = next((k for k in knobs if k.param == "compile.mode"), None)
    if mode is None:
        return []
    return [Preset(str(m), {"compile.mode": m}) for m in mode.values() if m != "default"]


def assign(
    preset: Preset, plan: _graph.Plan, context: Mapping[str, Any]
) -> tuple[dict[str, Any], list[str]]:
    """Every active knob's value under ``preset``, and the knobs it names that are inactive
    there (the preset cannot be measured as written when there are any)."""
    import torch._dynamo.config
    import torch._functorch.config
    import torch._inductor

    mode = preset.values.get("compile.mode", "default")
    defaults = {
        "compile": {"mode": mode, "dynamic": "auto", "fullgraph": False},
        "inductor": {
            **torch._inductor.config.get_config_copy(),
            **torch._inductor.list_mode_options(mode),
        },
        "dynamo": torch._dynamo.config.get_config_copy(),
        "functorch": torch._functorch.config.get_config_copy(),
    }

    def pick(knob: Knob) -> Any:
        if knob.param in preset.values:
            return preset.values[knob.param]
        default = defaults.get(knob.layer, {}).get(knob.name, knob.first())
        return default if knob.offers(default) else knob.first()

    values = plan.assign(pick, context)
    inactive = [param for param in preset.values if param not in values]
    return values, inactive
