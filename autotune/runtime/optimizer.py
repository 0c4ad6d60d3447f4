"""A training config's optimizer step, run as the search's trial ran it (torch + stdlib).

``autotune.apply`` compiles the model; a training config may also compile the optimizer step
(its ``train.optimizer`` is ``"compiled"``). :func:`apply_optimizer` does that for the
user's optimizer, with the same function the trial used (:func:`compile_step`).
"""

from __future__ import annotations

import functools
import logging
import os
import types
from collections.abc import Mapping
from typing import Any

import torch

from autotune.runtime.config import BestConfig, CompileConfig, ConfigFile

__all__ = ["apply_optimizer", "compile_step", "compiles_step", "step_backend"]

_log = logging.getLogger("autotune")

# Set on the step method that compile_step installed, so that a second call is a no-op.
_MARK = "_autotune_compiled_step"


def apply_optimizer(
    optimizer: torch.optim.Optimizer,
    config: str | os.PathLike[str] | ConfigFile | BestConfig | CompileConfig | Mapping[str, Any],
    *,
    strict: bool = False,
    require_signature: bool | None = None,
) -> torch.optim.Optimizer:
    """Runs ``optimizer.step`` the way the search's training trials did: through
    ``torch.compile`` when the config's ``train.optimizer`` is ``"compiled"``, else as it is.

    Call it once, after building the optimizer and before building an LR scheduler over it
    (a scheduler wraps the step it finds; either order works, this one keeps the scheduler's
    call-order check). Under a scheduler, a learning rate given as a Python float is a
    constant of the first compiled step: the scheduler's first change compiles the step once
    more, with the rate as an input from then on (torch 2.13: two graphs over any number of
    changes); a rate given as a tensor (``AdamW(params, lr=torch.tensor(1e-3))``) costs no
    recompile.

    The config's precision (an autocast region) is set by :func:`autotune.apply` around each
    call of the compiled model, in training as in inference: the forward runs in it, and the
    backward follows the dtypes the forward chose, as with ``torch.autocast`` around the
    model call.

    Args:
        optimizer: The optimizer of the model :func:`autotune.apply` compiled with the same
            config; changed in place (its ``step``).
        config: What :func:`autotune.apply` takes: a best-config file, an entry, a config or
            its JSON form. A file's entry is chosen for the device of the optimizer's
            parameters, as ``apply`` chooses it for the model's.
        strict: As for :func:`autotune.apply`: raise when no entry may serve this machine.
        require_signature: As for :func:`autotune.apply`.

    Returns:
        ``optimizer`` itself.

    Example:
        >>> import torch, autotune
        >>> model = torch.nn.Linear(8, 8)
        >>> config = {"backend": "eager", "train": {"optimizer": "compiled"}}
        >>> opt = autotune.apply_optimizer(torch.optim.SGD(model.parameters(), lr=0.1), config)
        >>> compiles_step(opt)
        True
    """
    from autotune.runtime._trust import vouched
    from autotune.runtime.apply import _resolve
    from autotune.runtime.fingerprint import environment_fingerprint

    device = _device(optimizer)
    here = functools.cache(lambda: environment_fingerprint(device))
    best, compile_config, _ = _resolve(config, here, strict)
    if best is not None:
        vouched(best, require_signature)
    if compile_config is not None and compile_config.train.get("optimizer") == "compiled":
        compile_step(optimizer, step_backend(compile_config))
        _log.info("autotune.apply_optimizer: %s.step runs compiled", type(optimizer).__name__)
    return optimizer


def step_backend(config: CompileConfig) -> str:
    """The backend a config's optimizer step compiles with: the config's own, with Inductor's
    defaults (the step is elementwise work over every parameter, which Inductor fuses into a
    few loops), except OpenVINO's, which compiles inference graphs only: Inductor then."""
    return "inductor" if config.backend == "openvino" else config.backend


def compile_step(optimizer: torch.optim.Optimizer, backend: str = "inductor") -> None:
    """Replaces ``optimizer.step`` (whatever it is now: the class's, or an LR scheduler's
    wrapper of it) by a bound method that runs it through ``torch.compile`` with
    ``backend``. Idempotent."""
    if compiles_step(optimizer):
        return
    step = optimizer.step

    def run(*args: Any, **kwargs: Any) -> Any:
        return step(*args, **kwargs)

    compiled = torch.compile(run, backend=backend, fullgraph=False)

    def compiled_step(self: torch.optim.Optimizer, *args: Any, **kwargs: Any) -> Any:
        return compiled(*args, **kwargs)

    setattr(compiled_step, _MARK, True)
    # A bound method, as an LR scheduler built later expects (it wraps `step.__func__`).
    optimizer.step = types.MethodType(compiled_step, optimizer)  # type: ignore[method-assign]


def compiles_step(optimizer: torch.optim.Optimizer) -> bool:
    """Whether :func:`compile_step` compiled ``optimizer``'s step (a scheduler's wrapper
    around it included)."""
    # A scheduler's wrapper copies the marked function's attributes (functools.wraps).
    step = optimizer.step
    return bool(getattr(getattr(step, "__func__", step), _MARK, False))


def _device(optimizer: torch.optim.Optimizer) -> str:
    for group in optimizer.param_groups:
        for param in group["params"]:
            return str(param.device)
    return "cpu"
