"""Validates a raw search space against the installed torch, listing every problem at once."""

from __future__ import annotations

import difflib
from typing import Any

from autotune.space import _types

LAYERS = ("compile", "inductor", "dynamo")
MODES = ("default", "reduce-overhead", "max-autotune", "max-autotune-no-cudagraphs")
COMPILE_KEYS = ("backend", "mode", "dynamic", "fullgraph")
TOP_KEYS = (*LAYERS, "name", "description")


def validate(raw: dict[str, Any], device: str) -> tuple[list[str], list[str]]:
    """Returns (problems, notes): problems refuse the space, notes are worth printing."""
    problems: list[str] = []
    notes: list[str] = []
    for key in raw:
        if key not in TOP_KEYS:
            problems.append(f"unknown table [{key}]{_did_you_mean(key, TOP_KEYS)}")
    for layer in LAYERS:
        table = raw.get(layer, {})
        if not isinstance(table, dict):
            problems.append(f"[{layer}] must be a table of knob = [choices], got {table!r}")
            continue
        for name, value in table.items():
            choices = value if isinstance(value, list) else [value]
            bad = _check_choices(layer, name, choices)
            if bad:
                problems.extend(bad)
                continue
            problems.extend(_CHECKERS[layer](name, choices, device))
            notes.extend(_inert(layer, name, device))
    return problems, notes


def _check_choices(layer: str, name: str, choices: list[Any]) -> list[str]:
    if not choices:
        return [f"{layer}.{name}: the list of choices is empty; give at least one value"]
    bad = [c for c in choices if not _types.is_scalar(c)]
    if bad:
        return [f"{layer}.{name}: choices must be booleans, numbers or strings, got {bad[0]!r}"]
    if len(set(map(repr, choices))) != len(choices):
        return [f"{layer}.{name}: the choices {choices!r} repeat a value"]
    return []


def _check_compile(name: str, choices: list[Any], device: str) -> list[str]:
    import torch._dynamo

    key = f"compile.{name}"
    if name not in COMPILE_KEYS:
        return [f"unknown key {key}{_did_you_mean(name, COMPILE_KEYS)}"]
    if name == "mode":
        return [
            f"{key}: {c!r} is not a mode; use one of {', '.join(MODES)}"
            for c in choices
            if c not in MODES
        ]
    if name == "backend":
        known = set(torch._dynamo.list_backends(exclude_tags=()))
        return [
            f"{key}: {c!r} is not a backend of this torch{_did_you_mean(str(c), known)}"
            for c in choices
            if c not in known
        ]
    if name == "dynamic":
        return [
            f'{key}: {c!r} must be true, false or "auto"'
            for c in choices
            if not isinstance(c, bool) and c != "auto"
        ]
    return [f"{key}: {c!r} must be true or false" for c in choices if not isinstance(c, bool)]


def _check_inductor(name: str, choices: list[Any], device: str) -> list[str]:
    import torch._inductor.config as config

    return _check_config("inductor", config, name, choices) or _check_simdlen(
        name, choices, device
    )


def _check_dynamo(name: str, choices: list[Any], device: str) -> list[str]:
    import torch._dynamo.config as config

    return _check_config("dynamo", config, name, choices)


def _check_config(layer: str, config: Any, name: str, choices: list[Any]) -> list[str]:
    import torch

    known = config.get_config_copy()
    if name not in known:
        return [
            f"unknown key {layer}.{name}: torch {torch.__version__} has no such "
            f"torch._{layer}.config knob{_did_you_mean(name, known)}"
        ]
    declared = config.get_type(name)
    wrong = [c for c in choices if _types.accepts(declared, c) is False]
    if wrong:
        return [
            f"{layer}.{name}: {wrong[0]!r} is not a {_types.describe(declared)} "
            f"(the type torch {torch.__version__} declares for this knob)"
        ]
    return []


def _check_simdlen(name: str, choices: list[Any], device: str) -> list[str]:
    if name != "cpp.simdlen" or not device.startswith("cpu"):
        return []
    from torch._inductor import cpu_vec_isa

    widths = sorted({isa.bit_width() for isa in cpu_vec_isa.valid_vec_isa_list()})
    return [
        f"inductor.cpp.simdlen: {c} is not a vector width this CPU supports ({widths or 'none'}); "
        "an unsupported width silently produces scalar code, many times slower"
        for c in choices
        if c is not None and c not in widths
    ]


def _inert(layer: str, name: str, device: str) -> list[str]:
    on_cpu = device.startswith("cpu")
    if layer == "inductor" and on_cpu and (name.startswith("triton.") or name in _GPU_ONLY):
        return [f"inductor.{name} does nothing on {device} (it affects Triton/GPU code only)"]
    if layer == "inductor" and not on_cpu and name.startswith("cpp."):
        return [f"inductor.{name} does nothing on {device} (it affects C++/CPU code only)"]
    return []


_GPU_ONLY = frozenset({"coordinate_descent_tuning", "max_autotune_gemm_search_space"})
_CHECKERS = {"compile": _check_compile, "inductor": _check_inductor, "dynamo": _check_dynamo}


def _did_you_mean(name: str, known: Any) -> str:
    close = difflib.get_close_matches(name, list(known), n=3, cutoff=0.6)
    return f" (did you mean {', '.join(close)}?)" if close else ""
