"""Checks one knob against the installed torch: the key exists, its values fit what it accepts."""

from __future__ import annotations

import os
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from autotune.runtime import knobs as torch_knobs
from autotune.runtime.knobs import GEMM_BACKEND_LISTS, GEMM_BACKENDS
from autotune.space import _levers
from autotune.space._knob import Knob, did_you_mean

if TYPE_CHECKING:
    from autotune.runtime.config import CompileConfig

LAYERS = ("compile", "inductor", "dynamo", "functorch", *_levers.LAYERS)
# functorch has no numerics-changing knob: its settings change what is saved or recomputed.
NUMERICS_LAYERS = ("inductor", "dynamo")
MODES = ("default", "reduce-overhead", "max-autotune", "max-autotune-no-cudagraphs")
COMPILE_KEYS = ("backend", "mode", "dynamic", "fullgraph")
_COMPILE_TYPES = {
    "backend": "backend",
    "mode": "mode",
    "dynamic": 'bool | "auto"',
    "fullgraph": "bool",
}
COMPILE_DEFAULTS: dict[str, Any] = {
    "backend": "inductor",
    "mode": "default",
    "dynamic": "auto",
    "fullgraph": False,
}

NUMERICS_KNOBS = frozenset(
    {
        "inductor.cpp.enable_unsafe_math_opt_flag",
        "inductor.cpp.enable_floating_point_contract_flag",
        "inductor.emulate_precision_casts",
        "inductor.emulate_precision_casts_on_saved_tensors",
        "inductor.use_fast_math",
        "inductor.cuda.use_fast_math",
        "inductor.cutlass.use_fast_math",
        "inductor.triton.codegen_upcast_to_fp32",
    }
)
"""Knobs that change numerics on purpose: outside ``[numerics]``, only torch's default is valid."""


def sets_numerics_knob(config: CompileConfig, knobs: Iterable[str] = NUMERICS_KNOBS) -> bool:
    """True when ``config`` sets one of ``knobs`` (``inductor.*``/``dynamo.*`` names); a config
    only names knobs set away from torch's default."""
    present = {f"inductor.{k}" for k in config.options} | {f"dynamo.{k}" for k in config.dynamo}
    return not present.isdisjoint(knobs)


_ONE_OF: dict[str, tuple[str, ...]] = {
    "inductor.cpp.enable_floating_point_contract_flag": ("off", "on", "fast"),
}
_BACKEND_LISTS = GEMM_BACKEND_LISTS
# Inductor knobs whose passes or code generators only run for GPUs; each is checked to change
# no C++ code on a probe where it changes Triton code (tests/space_tests/test_knob_effect.py).
_GPU_ONLY = frozenset(
    {
        "coordinate_descent_tuning",
        "max_autotune_gemm_search_space",
        "use_fast_math",
        "shape_padding",
        "comprehensive_padding",
        "combo_kernels",
    }
)
_CUDA_GRAPH_MODES = ("reduce-overhead", "max-autotune")
# Knobs that start threads or processes: more than this machine's CPUs oversubscribes them.
_THREAD_KNOBS = ("inductor.cpp.threads", "inductor.compile_threads")
_MAX_CHECKED = 4096


def knob_problems(knob: Knob, device: str, machine_checks: bool = True) -> list[str]:
    """Every problem of one knob; ``machine_checks=False`` skips the checks of this CPU."""
    values = _checked_values(knob)
    if knob.layer in _levers.LAYERS:  # device checks only where the knob can be suggested
        found = _levers.problems(knob, device if machine_checks else "any")
        return found or _bounds(knob.param, values)
    if knob.layer == "compile":
        if knob.range is not None:
            return [f"compile.{knob.name}: give a list of choices, not a range"]
        return _check_compile(knob.name, values)
    problems = _check_config(knob.layer, knob.name, values)
    if problems:
        return problems
    problems = _range_ends(knob, _bounds(knob.param, values)) or _numerics(knob)
    if knob.param == "inductor.cpp.simdlen" and machine_checks and device.startswith("cpu"):
        problems += _simdlen(values)
    return problems


def knob_notes(knob: Knob, device: str) -> list[str]:
    """Remarks worth printing: knobs that do nothing on ``device``, oversubscribed threads."""
    on_cpu = device.startswith("cpu")
    name = knob.name
    if knob.param == "compile.mode" and on_cpu:
        graphs = [m for m in knob.values() if m in _CUDA_GRAPH_MODES]
        if graphs:
            return [f"compile.mode {', '.join(graphs)} add CUDA graphs, which do nothing on cpu"]
    if knob.layer != "inductor":
        return []
    if on_cpu and (name.startswith("triton.") or name in _GPU_ONLY):
        return [f"inductor.{name} does nothing on {device} (it affects Triton/GPU code only)"]
    if not on_cpu and name.startswith("cpp."):
        return [f"inductor.{name} does nothing on {device} (it affects C++/CPU code only)"]
    cores = os.cpu_count() or 1
    if knob.param in _THREAD_KNOBS and any(_over(v, cores) for v in knob.values()):
        return [f"{knob.param} above this machine's {cores} CPUs oversubscribes them"]
    return []


def _over(value: Any, cores: int) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value > cores


def describe_knob(knob: Knob) -> tuple[str, Any]:
    """The knob's type and default on the installed torch, e.g. ``("int | None", None)``."""
    if knob.layer == "compile":
        return _COMPILE_TYPES[knob.name], COMPILE_DEFAULTS[knob.name]
    if knob.layer in _levers.LAYERS:
        return _levers.describe(knob)
    declared = torch_knobs.describe(torch_knobs.declared_type(knob.layer, knob.name))
    return declared, getattr(torch_knobs.torch_config(knob.layer), knob.name)


def value_problems(layer: str, name: str, value: Any) -> list[str]:
    """Why ``layer.name`` cannot take ``value`` on the installed torch; empty if it can."""
    if layer == "compile":
        return _check_compile(name, [value])
    if layer in _levers.LAYERS:
        found = _levers.problems(Knob(layer, name, (value,)), "any")
        return found or _bounds(f"{layer}.{name}", [value])
    return _check_config(layer, name, [value]) or _bounds(f"{layer}.{name}", [value])


def _checked_values(knob: Knob) -> list[Any]:
    if knob.range is not None and knob.count > _MAX_CHECKED:
        return [knob.range.low, knob.range.high]
    return knob.values()


def _range_ends(knob: Knob, problems: list[str]) -> list[str]:
    """A range's problems said of its first and last values outside the bound, not of each."""
    return problems if knob.range is None or len(problems) <= 2 else [problems[0], problems[-1]]


def _check_compile(name: str, values: list[Any]) -> list[str]:
    import torch._dynamo

    key = f"compile.{name}"
    if name not in COMPILE_KEYS:
        return [f"unknown key {key}{did_you_mean(name, COMPILE_KEYS)}"]
    if name == "mode":
        return [
            f"{key}: {v!r} is not a mode; use one of {', '.join(MODES)}"
            for v in values
            if v not in MODES
        ]
    if name == "backend":
        known = set(torch._dynamo.list_backends(exclude_tags=()))
        return [
            f"{key}: {v!r} is not installed here ({_levers.EXTRA_BACKENDS[v]})"
            if v in _levers.EXTRA_BACKENDS
            else f"{key}: {v!r} is not a backend of this torch{did_you_mean(str(v), known)}"
            for v in values
            if v not in known or not _levers.installed(str(v))
        ]
    if name == "dynamic":
        return [
            f'{key}: {v!r} must be true, false or "auto"'
            for v in values
            if not isinstance(v, bool) and v != "auto"
        ]
    return [f"{key}: {v!r} must be true or false" for v in values if not isinstance(v, bool)]


def _check_config(layer: str, name: str, values: list[Any]) -> list[str]:
    import torch

    known = torch_knobs.known(layer)
    if name not in known:
        return [
            f"unknown key {layer}.{name}: torch {torch.__version__} has no such "
            f"torch._{layer}.config knob{did_you_mean(name, known)}"
        ]
    for value in values:
        expected = torch_knobs.wrong_type(layer, name, value)
        if expected is not None:
            return [
                f"{layer}.{name}: {value!r} is not a {expected} "
                f"(the type torch {torch.__version__} declares for this knob)"
            ]
    return []


def _bounds(param: str, values: list[Any]) -> list[str]:
    """The values outside ``param``'s bound (:data:`autotune.runtime.knobs.BOUNDS`, the same a
    best-config file is held to), its closed list or its backend list."""
    if param in _ONE_OF:
        allowed = _ONE_OF[param]
        return [
            f"{param}: {v!r} is not one of {', '.join(map(repr, allowed))}"
            for v in values
            if v not in allowed
        ]
    if param in _BACKEND_LISTS:
        return [p for v in values if isinstance(v, str) for p in _backend_list(param, v)]
    found = (torch_knobs.bound_problem(param, v) for v in values)
    return [line for line in found if line is not None]


def _backend_list(param: str, value: str) -> list[str]:
    names = [part.strip().upper() for part in value.split(",")]
    return [
        f"{param}: {name or '(empty)'!r} in {value!r} is not a GEMM backend; use a comma-"
        f"separated list of {', '.join(GEMM_BACKENDS)}{did_you_mean(name, GEMM_BACKENDS)}"
        for name in names
        if name not in GEMM_BACKENDS
    ]


def _numerics(knob: Knob) -> list[str]:
    if knob.numerics or knob.param not in NUMERICS_KNOBS:
        return []
    default = getattr(torch_knobs.torch_config(knob.layer), knob.name)
    if all(v == default for v in knob.values()):
        return []
    return [
        f"{knob.param} changes numerics: move it to [numerics.{knob.layer}], which is searched "
        "only with --allow-numerics-changes (or allow_numerics_changes = true in the space), or "
        f"keep torch's default ({default!r})"
    ]


def _simdlen(values: list[Any]) -> list[str]:
    widths = vector_widths()
    return [
        f"inductor.cpp.simdlen: {v} is not a vector width this CPU supports ({widths or 'none'}); "
        "an unsupported width silently produces scalar code, many times slower"
        for v in values
        if v is not None and v not in widths
    ]


def vector_widths() -> list[int]:
    """The SIMD widths (bits) Inductor can generate code for on this CPU."""
    from torch._inductor import cpu_vec_isa

    return sorted({isa.bit_width() for isa in cpu_vec_isa.valid_vec_isa_list()})
