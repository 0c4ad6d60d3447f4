"""Torch's own knobs as the installed torch declares them: which exist, the type each declares,
whether a value fits it, and the bound of each number (:data:`BOUNDS`). One rule for both
readers: :func:`autotune.apply` checks a best-config file with it, and :mod:`autotune.space` a
space file (torch and the standard library only)."""

from __future__ import annotations

import difflib
import functools
import warnings
from collections.abc import Collection
from typing import Any

from autotune.runtime import safety as _safety
from autotune.runtime._bounds import BOUNDS
from autotune.runtime._bounds import problem as bound_problem
from autotune.runtime._compile_config import CompileConfig, ConfigError, UnsafeKnobError
from autotune.runtime._schema import knob_bound_problems
from autotune.runtime.safety import GEMM_BACKEND_LISTS, GEMM_BACKENDS, accepts, describe

__all__ = [
    "BOUNDS", "GEMM_BACKENDS", "GEMM_BACKEND_LISTS", "accepts", "bound_problem", "check_config",
    "declared_type", "describe", "known", "near", "torch_config", "warn_if_fast_math",
    "wrong_type",
]  # fmt: skip


def torch_config(layer: str) -> Any:
    """``torch._inductor.config`` (layer ``"inductor"``), ``torch._dynamo.config`` or
    ``torch._functorch.config`` (AOTAutograd and its partitioner)."""
    if layer == "inductor":
        import torch._inductor.config as inductor_config

        return inductor_config
    if layer == "functorch":
        import torch._functorch.config as functorch_config

        return functorch_config
    import torch._dynamo.config as dynamo_config

    return dynamo_config


@functools.cache
def known(layer: str) -> frozenset[str]:
    """Every knob of ``layer`` the installed torch has (Inductor's ``list_options()``, and each
    config module's own table: a knob either lists is known). Read once per process: a space
    file asks for each of its knobs."""
    config = torch_config(layer)
    names = set(getattr(config, "_config", None) or {}) | set(config.get_config_copy())
    if layer == "inductor":
        from torch import _inductor

        names |= set(_inductor.list_options())
    return frozenset(names)


def declared_type(layer: str, name: str) -> Any:
    """The type torch declares for ``layer.name``; None when it declares none (or no knob)."""
    get_type = getattr(torch_config(layer), "get_type", None)
    try:
        return get_type(name) if get_type is not None else None
    except (AttributeError, KeyError):
        return None


def wrong_type(layer: str, name: str, value: Any) -> str | None:
    """The declared type ``value`` does not fit, described (e.g. ``"int | None"``); None when it
    fits, or when the type is too rich to judge."""
    declared = declared_type(layer, name)
    if declared is None or accepts(declared, value) is not False:
        return None
    return describe(declared)


def near(layer: str, name: str) -> str | None:
    """The known knob of ``layer`` closest to ``name``, if one is close."""
    found = difflib.get_close_matches(name, sorted(known(layer)), n=1)
    return found[0] if found else None


def check_config(config: CompileConfig, allow_unsafe_knobs: bool | Collection[str]) -> None:
    """Raises :class:`ConfigError` when ``config`` sets a number outside its bound (see
    :mod:`autotune.runtime._bounds`) or does not fit the installed torch (unknown Inductor,
    Dynamo or functorch knobs, values of the wrong type, an unknown backend),
    :class:`~autotune.runtime.quantize.QuantizeError` when it quantizes with a torchao that
    is not installed or lacks its scheme, and
    :class:`UnsafeKnobError` when it sets knobs refused from data that ``allow_unsafe_knobs``
    does not name. Nothing is compiled or allocated before it returns."""
    import torch

    _raise_out_of_bounds(config)
    problems = _backend_problems(config.backend)
    if config.backend == "openvino":
        from autotune.runtime import openvino_backend as _openvino

        problems += _openvino.option_problems(config.options)
    options = config.options if config.backend == "inductor" else {}
    if options:
        problems += _knob_problems(options, "inductor", "options")
    if config.dynamo:
        problems += _knob_problems(config.dynamo, "dynamo", "dynamo")
    if config.functorch:
        problems += _knob_problems(config.functorch, "functorch", "functorch")
    if problems:
        lines = "\n".join(f"  - {p}" for p in problems)
        raise ConfigError(
            f"config {config.config_hash()} does not fit the installed torch "
            f"{torch.__version__}:\n{lines}\nRe-run the search with this torch, or remove "
            "these keys from the config."
        )
    from autotune.runtime.quantize import QuantizeError, scheme_problems

    quantize = scheme_problems(config.precision)
    if quantize:
        raise QuantizeError(f"config {config.config_hash()}: " + " ".join(quantize))
    unsafe = _safety.config_problems(config, allow_unsafe_knobs, declared_type)
    if unsafe:
        raise UnsafeKnobError(_safety.explain(unsafe, f"config {config.config_hash()}"))
    for part in config.parts:  # each part's config is held to the same rules
        if part.config is not None:
            check_config(part.config, allow_unsafe_knobs)


def _raise_out_of_bounds(config: CompileConfig) -> None:
    """The schema's bounds, again: a config unpickled or changed in place skipped the check
    its constructor makes."""
    problems = knob_bound_problems(config.to_dict(), "config")
    if problems:
        lines = "\n".join(f"  - {p}" for p in problems)
        raise ConfigError(
            f"config {config.config_hash()} sets numbers outside their bounds (each a size or "
            f"count that reaches a thread pool, an allocation or generated code):\n{lines}"
        )


def _backend_problems(backend: str) -> list[str]:
    from torch._dynamo.backends.registry import lookup_backend
    from torch._dynamo.exc import InvalidBackend

    try:
        lookup_backend(backend)
    except InvalidBackend:
        if backend == "openvino":
            return [
                "backend: 'openvino' is not installed here; install it with "
                "`pip install 'autotune[openvino]'` (or `pip install openvino`), or apply "
                "another entry of the file"
            ]
        return [f"backend: {backend!r} is not a registered torch.compile backend"]
    return []


def _knob_problems(settings: dict[str, Any], layer: str, where: str) -> list[str]:
    import torch

    names = known(layer)
    problems = []
    for key, value in sorted(settings.items()):
        if key not in names:
            close = near(layer, key)
            hint = f"; did you mean {close!r}?" if close else ""
            problems.append(f"{where}.{key}: unknown to torch {torch.__version__}{hint}")
            continue
        expected = wrong_type(layer, key, value)
        if expected is not None:
            problems.append(f"{where}.{key}: expected {expected}, got {value!r}")
    return problems


# GCC links a shared object built with -ffast-math with crtfastmath.o, whose constructor
# sets the x86 MXCSR's flush-to-zero and denormals-are-zero bits when the object loads.
FAST_MATH_LINE = (
    "this config builds its CPU kernels with fast math (inductor option "
    "cpp.enable_unsafe_math_opt_flag): GCC links them with start-up code that sets "
    "flush-to-zero and denormals-are-zero for the whole process when a kernel loads, so from "
    "the first compiled call on every float operation of this process, Python's and other "
    "models' included, treats subnormal numbers as zero. torch.set_flush_denormal(False) after "
    "that call restores them until another kernel loads; the compiled model stays fast-math "
    "either way. A config that leaves the option off changes nothing outside its own kernels."
)


_fast_math_warned = False


def _fast_math(config: CompileConfig) -> bool:
    configs = [config, *(part.config for part in config.parts if part.config is not None)]
    return any(
        c.backend == "inductor" and c.options.get("cpp.enable_unsafe_math_opt_flag") is True
        for c in configs
    )


def warn_if_fast_math(config: CompileConfig) -> None:
    """Warns once per process (:data:`FAST_MATH_LINE`) when ``config``, applied on CPU, builds
    kernels with fast math: the flag's effect is the process's, not one model's."""
    global _fast_math_warned
    if _fast_math(config) and not _fast_math_warned:
        _fast_math_warned = True
        warnings.warn(FAST_MATH_LINE, RuntimeWarning, stacklevel=3)
