"""The shape plan: how a served model's calls meet the compiled code when their shapes vary.

A config's ``shapes`` holds the ``plan`` and the model's **padding declaration** (which input
dimensions vary from request to request, what value pads each, which output dimensions come
back padded), all of it data, so that production reproduces the plan from the best-config file
alone:

- ``marked``: the declared dimensions are marked dynamic on every call
  (``torch._dynamo.maybe_mark_dynamic``): one dynamic graph from the first call, where torch's
  automatic dynamic shapes would compile a static graph first and a dynamic one on the second
  length;
- ``pad-pow2``: every declared input is padded along its dimension to the next power of two
  (at least :data:`PAD_FLOOR`), ``pad-N`` to the next multiple of N; the compiled code sees a
  few static shapes (``dynamic=False``: one graph per bucket), and each declared output is cut
  back to the request's length. The correctness gate compares the cut outputs with eager's on
  the unpadded request.

Without a plan (``"auto"``: the key absent) the calls reach the compiled code as they come.
The plan runs outside the compiled region, around each call of the model: a padded length is
what Dynamo sees, so it guards on the bucket, not on the request.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, MutableMapping, Sequence
from dataclasses import dataclass
from typing import Any

import torch

from autotune.runtime._compile_config import ConfigError
from autotune.runtime._shape_rules import (
    AUTO,
    EAGER_ABOVE,
    MAX_WARMUP_CALLS,
    PAD_FLOOR,
    SHAPE_PLANS,
    WARMUP_DTYPES,
    bucket,
    call_problems,
    padding_problems,
    pads,
    shapes_problems,
    warmup_problems,
)

__all__ = [
    "AUTO", "EAGER_ABOVE", "MAX_WARMUP_CALLS", "PAD_FLOOR", "SHAPE_PLANS", "WARMUP_DTYPES",
    "Call", "bucket", "call_spec", "cut", "padding_problems", "pads", "plan_root", "plan_warmup",
    "planned", "shapes_problems", "synthesized", "warm_up", "warmup_problems",
]  # fmt: skip

# The closed list of dtype names a warm-up may name, as this torch's dtypes, by the names
# call_spec writes: a name read from a file is looked up here, never on the torch module.
_DTYPES: dict[str, torch.dtype] = {
    name: dtype
    for dtype in vars(torch).values()
    if isinstance(dtype, torch.dtype)
    and (name := str(dtype).removeprefix("torch.")) in WARMUP_DTYPES
}


def planned(
    call: Callable[..., Any],
    shapes: Mapping[str, Any],
    eager: Callable[..., Any] | None = None,
) -> Callable[..., Any]:
    """``call`` with ``shapes``' plan around it: the declared dimensions marked, or the
    declared inputs padded and the declared outputs cut back; with a compile threshold
    (``eager_above``), a call whose batch is larger runs ``eager`` instead."""
    plan, inputs = str(shapes["plan"]), dict(shapes["inputs"])
    outputs = dict(shapes.get("outputs") or {})
    threshold = shapes.get(EAGER_ABOVE)
    if threshold is not None and eager is None:
        raise ValueError(
            f"a compile threshold ({EAGER_ABOVE} {threshold}) runs larger batches on the eager "
            "model, which only a whole-model scope keeps; compile the whole model"
        )

    def run(*args: Any, **kwargs: Any) -> Any:
        found = _declared(args, kwargs, inputs)
        if not found:
            return call(*args, **kwargs)
        if threshold is not None and eager is not None and _batch(found) > threshold:
            return eager(*args, **kwargs)
        if plan == AUTO:
            return call(*args, **kwargs)
        if plan == "marked":
            for tensor, dim, _ in found.values():
                torch._dynamo.maybe_mark_dynamic(tensor, dim)
            return call(*args, **kwargs)
        length = _length(found)
        target = bucket(length, plan)
        if target == length:
            return call(*args, **kwargs)
        padded = {k: _pad(t, dim, value, target) for k, (t, dim, value) in found.items()}
        new_args = tuple(padded.get(str(i), a) for i, a in enumerate(args))
        new_kwargs = {k: padded.get(k, v) for k, v in kwargs.items()}
        return cut(call(*new_args, **new_kwargs), outputs, length)

    return run


def cut(out: Any, outputs: Mapping[str, int], length: int) -> Any:
    """``out`` with each declared output cut to ``length`` along its dimension."""
    for key, dim in outputs.items():
        if key == "":
            out = out.narrow(dim, 0, length)
        elif isinstance(out, MutableMapping) and key in out:
            out[key] = out[key].narrow(dim, 0, length)  # a dict or a ModelOutput the call made
        elif isinstance(out, (tuple, list)) and key.isdigit() and int(key) < len(out):
            items = list(out)
            items[int(key)] = items[int(key)].narrow(dim, 0, length)
            out = type(out)(items) if isinstance(out, list) else tuple(items)
        else:
            raise ValueError(
                f"the padding declaration cuts the output {key!r}, which the model's output "
                f"({type(out).__name__}) does not have; declare the outputs' keys (a dict's or "
                "ModelOutput's), positions (a tuple's, '0') or '' for a bare tensor"
            )
    return out


def plan_root(model: torch.nn.Module, compiled: torch.nn.Module, shapes: Mapping[str, Any]
              ) -> torch.nn.Module:  # fmt: skip
    """Puts ``shapes``' plan around every call of the compiled model (``compiled``: ``model``
    compiled in place or with compiled children, or a wrapper of it): outside the compiled
    region, so that Dynamo sees the padded shapes."""
    if compiled is not model:  # an OptimizedModule whose forward the caller set
        compiled.__dict__["forward"] = planned(compiled.forward, shapes, model.forward)
        return compiled
    inner = model._compiled_call_impl
    # compiled in place: the eager path is the module's own; a regional scope keeps none
    eager = model._call_impl if inner is not None else None
    model._compiled_call_impl = planned(inner or model._call_impl, shapes, eager)
    return model


def call_spec(args: Sequence[Any], kwargs: Mapping[str, Any]) -> dict[str, Any]:
    """A call's inputs as data (each tensor's shape and dtype, None for anything else), from
    which :func:`synthesized` makes a call of the same shapes for a warm-up. A call that the
    warm-up rules refuse (a dtype outside their list, a shape past their caps) is written
    without its tensors, so that a file holding it stays valid and the warm-up skips it."""
    spec = {"args": [_spec(a) for a in args], "kwargs": {k: _spec(v) for k, v in kwargs.items()}}
    if call_problems(spec, "call"):
        return {"args": [None] * len(args), "kwargs": dict.fromkeys(kwargs)}
    return spec


@dataclass(frozen=True)
class Call:
    """One call's positional and keyword arguments, as :func:`warm_up` makes it."""

    args: tuple[Any, ...]
    kwargs: dict[str, Any]


def synthesized(spec: Mapping[str, Any], device: str | torch.device) -> Call | None:
    """A call of :func:`call_spec`'s shapes, its tensors filled with ones (None when it holds
    anything but tensors: such a call cannot be made from data).

    Raises:
        ConfigError: ``spec`` breaks the warm-up rules (:func:`call_problems`: a dtype outside
            their list, a shape past their caps); nothing is allocated.
    """
    problems = call_problems(spec, "warm-up call")
    if problems:
        raise ConfigError("invalid warm-up call:\n" + "\n".join(f"  - {p}" for p in problems))
    values = [*spec.get("args", []), *spec.get("kwargs", {}).values()]
    if any(v is None for v in values):
        return None
    return Call(
        tuple(_ones(v, device) for v in spec.get("args", [])),
        {k: _ones(v, device) for k, v in spec.get("kwargs", {}).items()},
    )


def plan_warmup(workload: Mapping[str, Any], device: str | torch.device) -> list[Call]:
    """The calls ``apply(..., warmup="plan")`` makes: one of each shape a best-config entry's
    ``workload.warmup`` lists (every shape the search measured), tensors of ones on
    ``device``; a shape holding anything but tensors is skipped.

    Raises:
        ValueError: The entry lists no shapes (a file written before they were recorded, or
            a decision not to compile).
    """
    specs = workload.get("warmup")
    if not isinstance(specs, list) or not specs:
        raise ValueError(
            'warmup="plan" compiles every shape the best-config file lists (workload.warmup), '
            "and this entry lists none; re-run the search to write them, or pass the calls "
            "themselves: warmup=[inputs, ...]"
        )
    made = [synthesized(spec, device) for spec in specs if isinstance(spec, Mapping)]
    return [call for call in made if call is not None]


def warm_up(model: torch.nn.Module, inputs: Any) -> tuple[int, float]:
    """Calls ``model`` with each of ``inputs`` (see :func:`autotune.apply`'s ``warmup``: one
    call's inputs, a list of them, or :class:`Call` s) and waits for the device; returns the
    number of calls and the seconds they took."""
    calls = inputs if isinstance(inputs, list) else [inputs]
    started = time.perf_counter()
    for call in calls:
        if isinstance(call, Call):
            model(*call.args, **call.kwargs)
        elif isinstance(call, tuple):
            model(*call)
        elif isinstance(call, Mapping):
            model(**call)
        else:
            model(call)
    if torch.cuda.is_available() and torch.cuda.is_initialized():
        torch.cuda.synchronize()
    return len(calls), time.perf_counter() - started


def _ones(tensor: Mapping[str, Any], device: str | torch.device) -> torch.Tensor:
    dtype = _DTYPES.get(tensor["dtype"])
    if dtype is None:  # in the list, but this torch lacks it
        raise ConfigError(
            f"the warm-up dtype {tensor['dtype']!r} is not in torch {torch.__version__}; "
            "upgrade torch, or warm up with the calls themselves (warmup=[inputs, ...])"
        )
    return torch.ones(list(tensor["shape"]), dtype=dtype, device=device)


def _spec(value: Any) -> dict[str, Any] | None:
    if isinstance(value, torch.Tensor):
        return {"shape": list(value.shape), "dtype": str(value.dtype).removeprefix("torch.")}
    return None


def _declared(
    args: tuple[Any, ...], kwargs: Mapping[str, Any], inputs: Mapping[str, Any]
) -> dict[str, tuple[torch.Tensor, int, float]]:
    found = {}
    for name, spec in inputs.items():
        value = args[int(name)] if name.isdigit() and int(name) < len(args) else kwargs.get(name)
        if isinstance(value, torch.Tensor) and value.dim() > spec["dim"]:
            found[name] = (value, int(spec["dim"]), spec["value"])
    return found


def _batch(found: Mapping[str, tuple[torch.Tensor, int, float]]) -> int:
    return int(next(iter(found.values()))[0].shape[0])


def _length(found: Mapping[str, tuple[torch.Tensor, int, float]]) -> int:
    lengths = {name: t.shape[dim] for name, (t, dim, _) in found.items()}
    if len(set(lengths.values())) > 1:
        raise ValueError(
            f"the padded inputs' declared dimensions differ in length ({lengths}); a padding "
            "declaration names dimensions of one length (a sequence's tokens and its mask)"
        )
    return next(iter(lengths.values()))


def _pad(tensor: torch.Tensor, dim: int, value: float, target: int) -> torch.Tensor:
    shape = list(tensor.shape)
    shape[dim] = target - shape[dim]
    return torch.cat([tensor, tensor.new_full(shape, value)], dim=dim)
