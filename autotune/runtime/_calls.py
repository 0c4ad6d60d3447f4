"""Settings that torch reads outside Inductor's own compile, set around each call of a compiled
region so that they take effect.

``torch.compile(options=...)`` patches Inductor's config only while Inductor compiles a graph.
Torch reads some Inductor options elsewhere, from the global config (torch 2.13, audited by
``benchmarks/knob_reads.py``: reads seen while compiling on CPU, and reads in the sources):

- ``freezing``, while Dynamo traces: ``is_parameter_freezing()`` decides whether the weights
  become constants of the graph or stay its inputs. Passed only as an option, freezing folds
  nothing, prepacks nothing, and max-autotune's C++ GEMM template (constant weights only)
  never engages: the compile is default compile under another name.
- ``triton.cudagraphs``, while Dynamo traces (a Python float argument stays a constant only
  when it is set; otherwise it becomes a CPU scalar tensor and Inductor skips CUDA graphs for
  the graph), and in AOTAutograd's cache-hit path where no compiler config is handed to it;
  the other CUDA-graph options at run time, in the CUDA-graph trees.
- ``fallback_random``, in a functorch pass.

Those options (:func:`read_outside_compile`), the Dynamo settings that ``torch.compile`` does
not take as arguments, and a config's ``functorch`` settings (``torch._functorch.config``:
AOTAutograd and its partitioner, which no backend takes as options) are set around every call
of the compiled region: the span of its first trace and compile, of every recompile, and of
the run. The partitioner splits the joint graph into forward and backward while the first call
traces, so ``activation_memory_budget`` (what the forward saves for the backward, and what the
backward recomputes) is decided inside that span; the backward's own compile, which torch
defers to the first backward, runs outside it. torch >= 2.12 keeps config per thread, so
only the calling thread sees them; older torch keeps it process-wide, and calls of such
regions then run one at a time.

A config's ``precision`` is set the same way: an autocast region on the module's device (kept
per thread by torch), and ``torch.set_float32_matmul_precision``, which torch keeps
process-wide on every version: calls of regions that set it run one at a time, process-wide,
and the precision is put back after each.
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
    """How a config's settings reach torch: ``arguments`` go to ``torch.compile``; ``dynamo``,
    ``inductor``, ``functorch`` and ``precision`` are set around every call of the compiled
    region."""

    arguments: dict[str, Any] = field(default_factory=dict)
    dynamo: dict[str, Any] = field(default_factory=dict)
    inductor: dict[str, Any] = field(default_factory=dict)
    precision: dict[str, Any] = field(default_factory=dict)
    functorch: dict[str, Any] = field(default_factory=dict)


def call_settings(config: CompileConfig) -> CallSettings:
    """Splits ``config``'s Dynamo settings and Inductor options by where torch reads them; its
    functorch settings are all read outside any compile's options."""
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
        if inductor.get("freezing") and config.scope.compile != ("",):
            _a_graph_per_region(config, accepted, arguments, dynamo)
    return CallSettings(
        arguments, dynamo, inductor, dict(config.precision), dict(config.functorch)
    )


def _a_graph_per_region(
    config: CompileConfig,
    accepted: frozenset[str],
    arguments: dict[str, Any],
    dynamo: dict[str, Any],
) -> None:
    """Frozen weights are constants of the graph, so identical layers compiled one by one no
    longer share a graph: each compiles its own, and Dynamo counts every one after the first
    as a recompile of the layer class's code. Past ``recompile_limit`` (8) the other layers
    would run eager. Each region gets recompiles of its own (``isolate_recompiles``, torch >=
    2.13), or else a limit as many times larger as there are regions."""
    if "isolate_recompiles" in accepted:
        arguments["isolate_recompiles"] = True
        return
    key = "recompile_limit" if hasattr(torch._dynamo.config, "recompile_limit") else None
    key = key or "cache_size_limit"  # torch before the rename
    limit = arguments.get("recompile_limit")
    for name in ("recompile_limit", "cache_size_limit"):  # the config's own, by either name
        limit = dynamo.pop(name, None) or limit
    limit = (limit or getattr(torch._dynamo.config, key)) * len(config.scope.compile)
    if "recompile_limit" in accepted:
        arguments["recompile_limit"] = limit
    else:
        dynamo[key] = limit


@functools.cache
def _compile_parameters() -> frozenset[str]:
    return frozenset(inspect.signature(torch.compile).parameters)


def around_calls(
    inner: Callable[..., Any], settings: CallSettings, device_type: str
) -> Callable[..., Any]:
    """``inner`` with ``settings.dynamo``, ``settings.inductor``, ``settings.functorch`` and
    ``settings.precision`` (autocast on ``device_type``) set around each of its calls, in the
    calling thread; ``inner`` itself when all are empty. ``inner`` is the Dynamo-wrapped
    callable: an ``OptimizedModule``'s ``forward``, or what a module compiled in place runs
    (``_compiled_call_impl``)."""
    if not any((settings.dynamo, settings.inductor, settings.functorch, settings.precision)):
        return inner
    # Torch reads its config while it traces and compiles, i.e. during the call, in the
    # calling thread: wrapping the instance `forward` (which OptimizedModule sets to the
    # Dynamo-wrapped callable) covers every compile and recompile of this region, and nothing
    # else. A value set once at apply time would not do: torch >= 2.12 keeps it in the
    # applying thread only.
    import torch._functorch.config as functorch_config
    import torch._inductor.config as inductor_config

    held: list[_Values | _Precision] = [
        _values(module, values)
        for module, values in (
            (torch._dynamo.config, settings.dynamo),
            (inductor_config, settings.inductor),
            (functorch_config, settings.functorch),
        )  # fmt: skip
        if values
    ]
    if settings.precision:
        held.append(_Precision(settings.precision, device_type))
    backwards = held[::-1]

    def call(*args: Any, **kwargs: Any) -> Any:
        states = [values.enter() for values in held]
        try:
            return inner(*args, **kwargs)
        finally:
            for values, state in zip(backwards, reversed(states), strict=True):
                values.leave(state)

    if config_is_per_thread() and "matmul" not in settings.precision:
        return functools.wraps(inner)(call)

    @functools.wraps(inner)
    def forward(*args: Any, **kwargs: Any) -> Any:
        with _one_call_at_a_time():
            return call(*args, **kwargs)

    return forward


def uses_cuda_graphs(config: CompileConfig) -> bool:
    """Whether ``config`` runs its graphs as CUDA graphs (``reduce-overhead``)."""
    return config.backend == "inductor" and bool(config.options.get("triton.cudagraphs"))


def own_outputs(inner: Callable[..., Any]) -> Callable[..., Any]:
    """``inner``, a region compiled with CUDA graphs, returning outputs of the caller's own.

    A CUDA graph's outputs live in the graph's memory pool, which its next replay overwrites:
    a caller holding an output across calls (``generate()`` keeps the prefill's logits while
    it decodes) reads garbage or fails ("accessing tensor output of CUDAGraphs that has been
    overwritten by a subsequent run", measured on an H200 with transformers 5.24). Each output
    tensor is cloned as it leaves the call, and outside autograd each call starts a new step
    (``torch.compiler.cudagraph_mark_step_begin``), as torch asks of inference loops."""
    from torch.utils import _pytree

    @functools.wraps(inner)
    def call(*args: Any, **kwargs: Any) -> Any:
        if not torch.is_grad_enabled():
            torch.compiler.cudagraph_mark_step_begin()
        out = inner(*args, **kwargs)
        return _pytree.tree_map_only(torch.Tensor, torch.clone, out)

    return call


class _Values:
    """Values of one torch config module, set for the span of a call: :meth:`enter` sets them
    and returns what :meth:`leave` needs to put back what they replaced. They run at every
    call of a compiled region, so they cost what they must. This one sets and restores
    attributes as ``patch`` does, the prior values kept by the caller (safe to re-enter); not
    ``patch`` itself, which builds a class at every use."""

    def __init__(self, module: types.ModuleType, values: dict[str, Any]) -> None:
        self.module, self.values = module, values

    def enter(self) -> Any:
        prior = {key: getattr(self.module, key) for key in self.values}
        self._assign(self.values)
        return prior

    def leave(self, state: Any) -> None:
        self._assign(state)

    def _assign(self, values: dict[str, Any]) -> None:
        for key, value in values.items():
            setattr(self.module, key, value)


class _ContextValues(_Values):
    """Where torch keeps each value in a context variable (torch >= 2.12): those are set, and
    reset to what they held (unset included), the module's cached views marked stale as its
    own ``__setattr__`` does (its copies and hash, which key Inductor's caches, must see
    them): cheaper than setting attributes."""

    def __init__(
        self, module: types.ModuleType, values: dict[str, Any], hash_dirty: Any, mark: Any
    ) -> None:
        super().__init__(module, values)
        entries = module._config
        self._variables = [(entries[key].user_override, value) for key, value in values.items()]
        self._backwards = [variable for variable, _ in reversed(self._variables)]
        self._hash_dirty, self._mark = hash_dirty, mark

    def enter(self) -> Any:
        tokens = [variable.set(value) for variable, value in self._variables]
        self._changed()
        return tokens

    def leave(self, state: Any) -> None:
        for variable, token in zip(self._backwards, reversed(state), strict=True):
            variable.reset(token)
        self._changed()

    def _changed(self) -> None:
        self._hash_dirty.set(True)
        for key in self.values:
            self._mark(key)


class _Precision:
    """A config's ``precision`` for the span of a call: an autocast region (entered and left
    like ``with torch.autocast(...)``) and the float32 matmul precision, put back after."""

    def __init__(self, precision: dict[str, Any], device_type: str) -> None:
        dtype = precision.get("autocast")
        self.autocast = (device_type, getattr(torch, dtype)) if dtype else None
        self.matmul = precision.get("matmul")

    def enter(self) -> Any:
        region = None
        if self.autocast is not None:
            region = torch.autocast(self.autocast[0], dtype=self.autocast[1])
            region.__enter__()
        prior = torch.get_float32_matmul_precision() if self.matmul else None
        if self.matmul:
            torch.set_float32_matmul_precision(self.matmul)
        return region, prior

    def leave(self, state: Any) -> None:
        region, prior = state
        if prior is not None:
            torch.set_float32_matmul_precision(prior)
        if region is not None:
            region.__exit__(None, None, None)


def _values(module: types.ModuleType, values: dict[str, Any]) -> _Values:
    entries = getattr(module, "_config", None) or {}
    hash_dirty = getattr(module, "_hash_dirty_var", None)
    mark = getattr(module, "_mark_get_dict_dirty", None)
    if (
        config_is_per_thread()
        and isinstance(hash_dirty, contextvars.ContextVar)
        and callable(mark)
        and all(key in entries and getattr(entries[key], "alias", None) is None for key in values)
    ):
        return _ContextValues(module, values, hash_dirty, mark)
    return _Values(module, values)


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
    config = ", Dynamo settings, functorch settings, freezing, CUDA graphs"
    warnings.warn(
        "calls of regions compiled by autotune.apply that set what torch keeps process-wide "
        f"(on torch {torch.__version__}: the float32 matmul precision"
        + ("" if config_is_per_thread() else config)
        + ") run one at a time: two threads would otherwise run with each other's settings."
        + ("" if config_is_per_thread() else " torch >= 2.12 keeps its config per thread."),
        RuntimeWarning,
        stacklevel=2,
    )
