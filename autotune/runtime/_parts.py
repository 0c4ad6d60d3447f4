"""A model compiled in parts: each call goes, by the first rule it matches, to its part's
compiled code (or eager), and a call no part takes to the config the parts belong to.

``generate()`` calls the model for its prefill (the prompt) and then once per new token; a
config whose ``decode`` part takes ``input_ids.shape[1] == 1`` gives those calls their own
compiled code (``reduce-overhead`` on CUDA, say) while the prefill compiles as the rest of the
config says. Every part compiles the same module in place, through the same code object
(``Module._call_impl``): Dynamo keeps one cache entry per backend, so the parts never share a
graph, and each part's settings are set around its own calls only.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

from autotune.runtime._calls import (
    around_calls,
    call_settings,
    own_outputs,
    uses_cuda_graphs,
)
from autotune.runtime.config import CompileConfig, When

__all__ = ["backend_options", "compile_in_parts", "compile_region", "openvino_options"]


def compile_region(
    target: Any, config: CompileConfig, device_type: str
) -> tuple[Any, Callable[..., Any]]:
    """``target`` (a module or a callable) through ``torch.compile`` as ``config`` says, and
    the callable that runs it: the compiled callable (an ``OptimizedModule``'s ``forward``)
    with the config's settings set around each call, its outputs the caller's own under CUDA
    graphs on CUDA (see :func:`~autotune.runtime._calls.own_outputs`)."""
    settings = call_settings(config)
    kwargs = {**config.compile_kwargs(), **settings.arguments, **backend_options(config)}
    compiled = torch.compile(target, **kwargs)
    call = compiled.forward if isinstance(compiled, torch.nn.Module) else compiled
    call = around_calls(call, settings, device_type)
    if config.backend == "openvino":  # it compiles during the calls (each partition at its first)
        from autotune.runtime.openvino_backend import signal_stack_kept

        call = signal_stack_kept()(call)
    if device_type == "cuda" and uses_cuda_graphs(config):
        call = own_outputs(call)
    return compiled, call


def compile_in_parts(
    module: torch.nn.Module, config: CompileConfig, device_type: str
) -> torch.nn.Module:
    """``module`` compiled in place in ``config``'s parts: ``module(...)`` (and so
    ``generate()``) runs the first matching part's code, else the rest of the config's."""
    eager = module._call_impl
    routes: list[tuple[When, Callable[..., Any]]] = [
        (
            part.when,
            eager if part.config is None
            else compile_region(eager, part.config, device_type)[1],
        )
        for part in config.parts
    ]  # fmt: skip
    _, rest = compile_region(eager, config, device_type)

    def call(*args: Any, **kwargs: Any) -> Any:
        for when, compiled in routes:
            if when.matches(args, kwargs):
                return compiled(*args, **kwargs)
        return rest(*args, **kwargs)

    # What Module.compile sets: nn.Module.__call__ runs it instead of _call_impl.
    module._compiled_call_impl = call
    return module


def backend_options(config: CompileConfig) -> dict[str, Any]:
    """``torch.compile`` arguments of a backend's own (OpenVINO's options)."""
    return {"options": openvino_options(config)} if config.backend == "openvino" else {}


def openvino_options(config: CompileConfig, cache_dir: str | None = None) -> dict[str, Any]:
    """What ``torch.compile(backend="openvino", options=...)`` gets for ``config``: its
    inference precision pinned to f32 unless the config sets one (OpenVINO's CPU plugin
    computes in bf16 on AMX CPUs by default, which a config that claims no precision change
    must not do)."""
    from autotune.runtime import openvino_backend as _openvino

    options = {"INFERENCE_PRECISION_HINT": "f32", **config.options}
    return _openvino.compile_options(options, cache_dir)
