"""Settings that torch reads outside Inductor's own compile, set around each call of a compiled
region so that they take effect.

``torch.compile(options=...)`` patches Inductor's config only while Inductor compiles a graph.
Torch reads some Inductor options elsewhere, from the global config (measured on torch 2.13
with ``benchmarks/knob_reads.py``):

- ``freezing``, while Dynamo traces: ``is_parameter_freezing()`` decides whether the weights
  become constants of the graph or stay its inputs. Passed only as an option, freezing folds
  nothing, prepacks nothing, and max-autotune's C++ GEMM template (constant weights only)
  never engages: the compile is default compile under another name.
- ``triton.cudagraphs``, while Dynamo traces (floats are specialized for CUDA graphs) and
  when AOTAutograd loads a graph from its cache (whether the loaded graph runs as a CUDA
  graph); the other CUDA-graph options, at run time, in the CUDA-graph trees.
- ``fallback_random``, in a functorch pass.

Those options (:func:`read_outside_compile`) and the Dynamo settings that ``torch.compile``
does not take as arguments are set around every call of the compiled region: the span of its
first trace and compile, of every recompile, and of the run. torch >= 2.12 keeps config per
thread, so only the calling thread sees them; older torch keeps it process-wide, and calls of
such regions then run one at a time.
"""

from __future__ import annotations

import contextlib
import contextvars
import functools
import inspect
import threading
import types
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import torch
import torch._dynamo

from autotune.runtime.config import CompileConfig

# Inductor options torch reads outside the options patch, besides every CUDA-graph option.
_READ_OUTSIDE_COMPILE = frozenset({"freezing", "fallback_random"})

# Dynamo settings that torch.compile also takes as arguments (torch >= 2.12), by config key:
# torch then applies them itself to this region's compiles, in whichever thread compiles.
_COMPILE_ARGUMENTS = {"cache_size_limit": "recompile_limit", "recompile_limit": "recompile_limit"}

# Where torch keeps its config process-wide, calls that set it run one at a time.
_SERIAL_CALLS = threading.RLock()
_SERIAL_WARNED = threading.Event()


def read_outside_compile(key: str) -> bool:
    """Whether torch reads the Inductor option ``key`` outside Inductor's own compile."""
    return key in _READ_OUTSIDE_COMPILE or "cudagraph" in key


@dataclass(frozen=True)
class CallSettings:
    """How a config's settings reach torch: ``arguments`` go to ``torch.compile``; ``dynamo``
    and ``inductor`` are set around every call of the compiled region."""

    arguments: dict[str, Any] = field(default_factory=dict)
    dynamo: dict[str, Any] = field(default_factory=dict)
    inductor: dict[str, Any] = field(default_factory=dict)


def call_settings(config: CompileConfig) -> CallSettings:
    """Splits ``config``'s Dynamo settings and Inductor options by where torch reads them."""
    accepted = _compile_parameters()
    arguments: dict[str, Any] = {}
    dynamo: dict[str, Any] = {}
    # Sorted: `recompile_limit` comes after its alias `cache_size_limit`, so it wins.
    for key, value in sorted(config.dynamo.items()):
        argument = _COMPILE_ARGUMENTS.get(key)
        if argument in accepted:
            arguments[argument] = value
        else:
            dynamo[key] = value
    inductor = {}
    if config.backend == "inductor":
        inductor = {k: v for k, v in config.options.items() if read_outside_compile(k)}
    return CallSettings(arguments, dynamo, inductor)


@functools.cache
def _compile_parameters() -> frozenset[str]:
    return frozenset(inspect.signature(torch.compile).parameters)


def set_around_calls(compiled: torch.nn.Module, settings: CallSettings) -> None:
    """Sets ``settings.dynamo`` and ``settings.inductor`` around every call of ``compiled``
    (an ``OptimizedModule``), in the calling thread; nothing when both are empty."""
    if not settings.dynamo and not settings.inductor:
        return
    # Torch reads its config while it traces and compiles, i.e. during the call, in the
    # calling thread: wrapping the instance `forward` (which OptimizedModule sets to the
    # Dynamo-wrapped callable) covers every compile and recompile of this region, and nothing
    # else. A value set once at apply time would not do: torch >= 2.12 keeps it in the
    # applying thread only.
    import torch._inductor.config as inductor_config

    inner: Callable[..., Any] = compiled.forward
    guard: Callable[[], contextlib.AbstractContextManager[Any]] = (
        contextlib.nullcontext if config_is_per_thread() else _one_call_at_a_time
    )
    modules = [
        (module, values)
        for module, values in (
            (torch._dynamo.config, settings.dynamo),
            (inductor_config, settings.inductor),
        )  # fmt: skip
        if values
    ]

    @functools.wraps(inner)
    def forward(*args: Any, **kwargs: Any) -> Any:
        with guard():
            prior = [_set(module, values) for module, values in modules]
            try:
                return inner(*args, **kwargs)
            finally:
                for (module, _), values in zip(modules, prior, strict=True):
                    _set(module, values)

    compiled.__dict__["forward"] = forward


def _set(module: types.ModuleType, values: dict[str, Any]) -> dict[str, Any]:
    """Sets ``values`` on a torch config module the way its ``patch`` does; returns the values
    they replace. Not ``patch`` itself: it builds a class at every use, and the prior values
    kept here in the caller's frame make this safe to re-enter and to run in many threads."""
    prior = {key: getattr(module, key) for key in values}
    for key, value in values.items():
        setattr(module, key, value)
    return prior


@functools.cache
def config_is_per_thread() -> bool:
    """Whether torch keeps config overrides per thread (ContextVars: torch >= 2.12)."""
    entries = getattr(torch._dynamo.config, "_config", None) or {}
    entry = next(iter(entries.values()), None)
    # An unknown layout counts as process-wide: serializing calls costs concurrency, not results.
    return isinstance(getattr(entry, "user_override", None), contextvars.ContextVar)


@contextlib.contextmanager
def _one_call_at_a_time() -> Iterator[None]:
    # With process-wide config, a value set in one thread is seen by every other one, and
    # values restored out of order leave the wrong one for good: such calls must not overlap.
    if not _SERIAL_CALLS.acquire(blocking=False):
        _warn_serialized()
        _SERIAL_CALLS.acquire()
    try:
        yield
    finally:
        _SERIAL_CALLS.release()


def _warn_serialized() -> None:
    if _SERIAL_WARNED.is_set():
        return
    _SERIAL_WARNED.set()
    warnings.warn(
        f"torch {torch.__version__} keeps its config process-wide, so calls of regions compiled "
        "by autotune.apply with settings torch reads outside Inductor's compile (Dynamo "
        "settings, freezing, CUDA graphs) run one at a time: two threads would otherwise "
        "compile with each other's settings. Upgrade to torch >= 2.12 (per-thread config) to "
        "run them concurrently.",
        RuntimeWarning,
        stacklevel=2,
    )
