"""A model file's calls: what ``get_inputs`` returns, or the requests of a traffic mix
(``get_traffic``, or a recorded trace's shapes that ``get_request`` builds), each as a
:class:`Call`, described and counted as the reports need them."""

from __future__ import annotations

import inspect
from dataclasses import dataclass
from types import ModuleType
from typing import Any

from autotune.workload._common import PADDING, REQUEST, TRAFFIC, WorkloadError, one_line
from autotune.workload._trace import Traffic


@dataclass(frozen=True)
class Call:
    """One call of the model: positional and keyword arguments, and with a traffic mix
    (``get_traffic``) the request's weight in it."""

    args: tuple[Any, ...]
    kwargs: dict[str, Any]
    weight: float | None = None

    @property
    def inputs(self) -> Any:
        """The inputs as ``loss_fn`` receives them: the dict of keyword arguments, else the
        tuple of positional arguments (a bare tensor from ``get_inputs`` is a 1-tuple)."""
        return self.kwargs if self.kwargs else self.args


def padding_of(module: ModuleType) -> dict[str, Any] | None:
    """The file's padding declaration (``PADDING``, see :mod:`autotune.runtime.shapes`),
    checked; None when it declares none."""
    from autotune.runtime.shapes import padding_problems

    value = getattr(module, PADDING, None)
    if value is None:
        return None
    problems = padding_problems(value, PADDING)
    if problems:
        raise WorkloadError(
            f"{PADDING} in {module.__file__} declares how the model's inputs pad and its "
            f"outputs are cut back, as data: {'; '.join(problems)}. Example: {PADDING} = "
            '{"inputs": {"input_ids": {"dim": 1, "value": 0}, "attention_mask": {"dim": 1, '
            '"value": 0}}, "outputs": {"last_hidden_state": 1}}.'
        )
    import json

    return dict(json.loads(json.dumps(value)))  # plain data, as a study row stores it


def has_traffic(module: ModuleType) -> bool:
    """Whether the file declares a traffic mix (``get_traffic``)."""
    return callable(getattr(module, TRAFFIC, None))


def build_calls(
    module: ModuleType,
    device: str,
    batch_size: int | None = None,
    traffic: Traffic | None = None,
) -> list[Call]:
    """Calls ``get_inputs(device)`` (``get_inputs(device, batch_size)`` when a batch size is
    given) and normalizes it to a list of calls; a file with ``get_traffic`` gives its
    requests instead, and a recorded ``traffic`` (``--traffic``) the requests
    ``get_request(device, **shape)`` builds for its shapes, each call with its weight."""
    if traffic is not None:
        made = _requests(module, device, traffic)
        return [_request_call(module, inputs, w, i, REQUEST) for i, (inputs, w) in enumerate(made)]
    if has_traffic(module):
        return _traffic_calls(module, call_function(module, TRAFFIC, device))
    if not callable(getattr(module, "get_inputs", None)):
        raise WorkloadError(
            f"The model file {module.__file__} defines {REQUEST}(device, **shape) but no "
            "get_inputs(device): its requests come from a recorded traffic. Pass --traffic "
            "FILE (a CSV or Parquet trace of shapes and counts), or define get_inputs."
        )
    if batch_size is not None:
        require_batch_size(module)
        value = call_function(module, "get_inputs", device, batch_size)
    else:
        value = call_function(module, "get_inputs", device)
    items = value if isinstance(value, list) else [value]
    if not items:
        raise WorkloadError(
            f"get_inputs(device) in {module.__file__} returned an empty list; return at least "
            "one tuple of positional arguments or dict of keyword arguments."
        )
    return [_to_call(module, item, i) for i, item in enumerate(items)]


def _requests(module: ModuleType, device: str, traffic: Traffic) -> list[Any]:
    """``(get_request(device, **shape), weight)`` for each shape of a recorded traffic."""
    if not callable(getattr(module, REQUEST, None)):
        raise WorkloadError(
            f"A recorded traffic (--traffic) names request shapes, which the model file "
            f"{module.__file__} must build: define {REQUEST}(device, **shape) -> the inputs of "
            f"one request of that shape (the trace's columns: {sorted(traffic[0]['shape'])})."
        )
    made = []
    for entry in traffic:
        shape = entry["shape"]
        try:
            inputs = getattr(module, REQUEST)(device, **shape)
        except Exception as exc:
            shown = ", ".join(f"{k}={v!r}" for k, v in shape.items())
            raise WorkloadError(
                f"{REQUEST}({device!r}, {shown}) in {module.__file__} raised {one_line(exc)}. "
                "Fix the model file (run with --debug for the traceback)."
            ) from exc
        made.append((inputs, entry["weight"]))
    return made


def _traffic_calls(module: ModuleType, value: Any) -> list[Call]:
    rule = (
        "get_traffic(device) must return a non-empty list of (inputs, weight) pairs: inputs "
        "as get_inputs returns one call (a tuple of positional arguments, a dict of keyword "
        "arguments or a tensor), weight the request's share of the traffic (a positive count "
        "or fraction)"
    )
    if not isinstance(value, list) or not value:
        got = "returned an empty list" if isinstance(value, list) else returned(value)
        raise WorkloadError(f"{rule}; {TRAFFIC} in {module.__file__} {got}.")
    calls = []
    for i, item in enumerate(value):
        weight = item[1] if isinstance(item, tuple) and len(item) == 2 else None
        if (
            isinstance(weight, bool)
            or not isinstance(weight, (int, float))
            or not 0 < weight < float("inf")
        ):
            shown = (
                f"a {type(item).__name__} as request {i}"
                if weight is None
                else f"the weight {weight!r} for request {i}"
            )
            raise WorkloadError(f"{rule}; {TRAFFIC} in {module.__file__} returned {shown}.")
        calls.append(_request_call(module, item[0], weight, i, TRAFFIC))
    return calls


def _request_call(module: ModuleType, inputs: Any, weight: float, index: int, fn: str) -> Call:
    call = _to_call(module, inputs, index, fn)
    return Call(call.args, call.kwargs, float(weight))


def count_units(module: ModuleType, calls: list[Call]) -> dict[str, Any] | None:
    """What one pass over ``calls`` processes, as the file's ``units(inputs)`` counts it:
    ``{"name": "tokens", "per_sweep": N}``; None when the file defines no ``units``. Over a
    traffic mix, what one request processes on average (the traffic's weighted mean).

    ``units(inputs)`` returns a count (of samples), or ``(count, name)`` such as
    ``(input_ids.numel(), "tokens")``; the reports then speak in ``name`` per second.
    """
    import torch

    fn = getattr(module, "units", None)
    if fn is None:
        return None
    rule = (
        "units(inputs) must return what one call processes: a positive count (of samples), or "
        '(count, name) such as (inputs["input_ids"].numel(), "tokens")'
    )
    if not callable(fn):
        raise WorkloadError(f"units in {module.__file__} is a {type(fn).__name__}, but {rule}.")
    total, names = 0.0, set()
    shares = _shares(calls)
    for call, share in zip(calls, shares, strict=True):
        value = fn(call.inputs)
        count, name = value if isinstance(value, tuple) and len(value) == 2 else (value, "samples")
        if isinstance(count, torch.Tensor) and count.numel() == 1:
            count = count.item()
        if (
            isinstance(count, bool)
            or not isinstance(count, (int, float))
            or not 0 < count < float("inf")
            or not (isinstance(name, str) and name.strip())
        ):
            raise WorkloadError(f"{rule}; units in {module.__file__} returned {value!r}.")
        total += share * count
        names.add(name.strip())
    if len(names) > 1:
        raise WorkloadError(
            f"units(inputs) in {module.__file__} named {sorted(names)} for different calls; "
            "one model's calls are counted in one unit."
        )
    return {"name": names.pop(), "per_sweep": total} if names else None


def _shares(calls: list[Call]) -> list[float]:
    """What each call counts for in one sweep: 1 in a pass over calls, its share of the
    traffic in a traffic mix (whose latency is per request, the weighted mean)."""
    if calls[0].weight is None:
        return [1.0] * len(calls)
    total = sum(c.weight or 0.0 for c in calls)
    return [(c.weight or 0.0) / total for c in calls]


def describe_calls(calls: list[Call]) -> list[str]:
    """Short descriptions of each call's tensor shapes, e.g. ``(8x128:float32)``."""
    return [_describe(call) for call in calls]


def _to_call(module: ModuleType, item: Any, index: int, fn: str = "get_inputs") -> Call:
    import torch

    if isinstance(item, tuple):
        return Call(item, {})
    if isinstance(item, dict) and all(isinstance(k, str) for k in item):
        return Call((), dict(item))
    if isinstance(item, torch.Tensor):
        return Call((item,), {})
    where = f"element {index} of the list" if index else "its value"
    if fn in (TRAFFIC, REQUEST):
        where = f"the inputs of request {index}"
    raise WorkloadError(
        f"{fn}(device) in {module.__file__} returned {type(item).__name__} as {where}; "
        "it must be a tuple of positional arguments, a dict of keyword arguments (str keys), "
        "or a list of those (a shape distribution)."
    )


def takes_batch_size(module: ModuleType) -> bool:
    """Whether the file's ``get_inputs`` takes a second argument, the batch size."""
    try:
        signature = inspect.signature(module.get_inputs)
    except (TypeError, ValueError):
        return False
    try:
        signature.bind("cpu", 1)
    except TypeError:
        return False
    return True


def require_batch_size(module: ModuleType) -> None:
    """Refuses a model file whose ``get_inputs`` cannot be asked for a batch size."""
    if not takes_batch_size(module):
        raise WorkloadError(
            f"get_inputs in {module.__file__} takes no batch size, but --batch-sizes searches "
            "it: define get_inputs(device, batch_size=8) -> the inputs of one call with that "
            "many samples (the default is what a study without --batch-sizes measures)."
        )


def call_function(module: ModuleType, fn: str, device: str, *more: Any) -> Any:
    shown = ", ".join(repr(a) for a in (device, *more))
    try:
        return getattr(module, fn)(device, *more)
    except Exception as exc:
        raise WorkloadError(
            f"{fn}({shown}) in {module.__file__} raised {one_line(exc)}. Fix the model file "
            "(run with --debug for the traceback)."
        ) from exc


def _describe(call: Call) -> str:
    parts = [_shape(a) for a in call.args] + [f"{k}={_shape(v)}" for k, v in call.kwargs.items()]
    return "(" + ", ".join(parts) + ")"


def _shape(value: Any) -> str:
    import torch

    if isinstance(value, torch.Tensor):
        dims = "x".join(str(d) for d in value.shape) or "scalar"
        return f"{dims}:{str(value.dtype).removeprefix('torch.')}"
    return type(value).__name__


def returned(value: Any) -> str:
    """What a function returned, as a message says it: ``returned a 2x3 float32 tensor``,
    ``returned NoneType``."""
    import torch

    if not isinstance(value, torch.Tensor):
        return f"returned {type(value).__name__}"
    shape = "x".join(map(str, value.shape)) or "scalar"
    return f"returned a {shape} {str(value.dtype).removeprefix('torch.')} tensor"
