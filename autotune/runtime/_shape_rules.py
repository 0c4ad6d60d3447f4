"""The rules of a shape plan (:mod:`autotune.runtime.shapes`) as data: its plans, the padding
declaration's form, and the bucket a length pads to. Standard library only: the config
schema reads it."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

# The plans (besides "auto", the default: no plan).
SHAPE_PLANS = ("marked", "pad-pow2", "pad-16", "pad-32", "pad-64", "pad-128")
AUTO = "auto"
# The smallest bucket of pad-pow2.
PAD_FLOOR = 8
SHAPES_KEYS = ("plan", "inputs", "outputs", "eager_above")
# A plan's compile threshold: calls whose batch (dimension 0 of the declared inputs) is larger
# run the eager model (SGLang's torch_compile_max_bs).
EAGER_ABOVE = "eager_above"
PADDING_KEYS = ("inputs", "outputs")
_EXAMPLE = '{"inputs": {"input_ids": {"dim": 1, "value": 0}}, "outputs": {"last_hidden_state": 1}}'
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*|[0-9]+")


def padding_problems(d: Any, where: str) -> list[str]:
    """Every problem of a padding declaration ``{"inputs": {NAME: {"dim": D, "value": V}},
    "outputs": {KEY: D}}``: NAME a keyword argument or a positional index (``"0"``), KEY an
    output's key, index, or ``""`` for a bare tensor."""
    if not isinstance(d, Mapping):
        return [f"{where}: expected an object like {_EXAMPLE}, got {_show(d)}"]
    problems = [f"{where}: unknown key {k!r}" for k in d if k not in SHAPES_KEYS]
    inputs, outputs = d.get("inputs"), d.get("outputs", {})
    if not isinstance(inputs, Mapping) or not inputs:
        problems.append(f"{where}.inputs: expected at least one input to pad, got {_show(inputs)}")
    else:
        for name, spec in inputs.items():
            at = f"{where}.inputs.{name}"
            if not (isinstance(name, str) and _NAME.fullmatch(name)):
                problems.append(f"{at}: a name must be an argument's name or a position ('0')")
            if not isinstance(spec, Mapping) or set(spec) != {"dim", "value"}:
                problems.append(f'{at}: expected {{"dim": D, "value": V}}, got {_show(spec)}')
                continue
            if not _dim(spec["dim"]):
                problems.append(f"{at}.dim: expected a dimension >= 0, got {_show(spec['dim'])}")
            if isinstance(spec["value"], bool) or not isinstance(spec["value"], (int, float)):
                problems.append(f"{at}.value: expected a number, got {_show(spec['value'])}")
    if not isinstance(outputs, Mapping):
        problems.append(f"{where}.outputs: expected an object of KEY: dim, got {_show(outputs)}")
    else:
        for key, dim in outputs.items():
            if not (isinstance(key, str) and (key == "" or _NAME.fullmatch(key))):
                problems.append(f"{where}.outputs: {key!r} is not an output's key or index")
            if not _dim(dim):
                problems.append(f"{where}.outputs.{key}: expected a dimension >= 0, got {dim!r}")
    return problems


def shapes_problems(d: Any, where: str) -> list[str]:
    """Every problem of a config's ``shapes``: a plan of :data:`SHAPE_PLANS` (``auto`` with a
    compile threshold only), the threshold (``eager_above``: a batch size >= 1) and the padding
    declaration they apply (:func:`padding_problems`)."""
    if not isinstance(d, Mapping):
        return [f"{where}: expected an object with keys {', '.join(SHAPES_KEYS)}, got {_show(d)}"]
    problems = []
    threshold = d.get(EAGER_ABOVE)
    if threshold is not None and not (_dim(threshold) and threshold >= 1):
        problems.append(
            f"{where}.{EAGER_ABOVE}: expected a batch size >= 1, got {_show(threshold)}"
        )
    plans = SHAPE_PLANS if threshold is None else (AUTO, *SHAPE_PLANS)
    if d.get("plan") not in plans:
        problems.append(
            f"{where}.plan: expected one of {', '.join(plans)}, got {_show(d.get('plan'))}"
        )
    return problems + padding_problems(d, where)


def bucket(length: int, plan: str) -> int:
    """The padded length of a request of ``length`` under ``plan``.

    Example:
        >>> bucket(37, "pad-pow2"), bucket(37, "pad-32"), bucket(3, "pad-pow2")
        (64, 64, 8)
    """
    if plan == "pad-pow2":
        return max(PAD_FLOOR, 1 << max(0, length - 1).bit_length())
    step = int(plan.removeprefix("pad-"))
    return -(-length // step) * step


def pads(shapes: Mapping[str, Any]) -> bool:
    """Whether the plan pads (its compiled code then sees static shapes: ``dynamic=False``)."""
    return str(shapes.get("plan", "")).startswith("pad-")


def _dim(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _show(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."
