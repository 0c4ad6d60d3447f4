"""The model-file contract: ``get_model(device)`` and ``get_inputs(device)``.

A model file is a Python file that defines:

- ``get_model(device: str) -> torch.nn.Module`` (required);
- ``get_inputs(device: str)`` (required): a tuple of positional arguments for one call, or a dict
  of keyword arguments; a list of such tuples/dicts is a *shape distribution* and every trial
  runs all of them.

The parent of trials only imports the file and checks that both functions exist (it must not
touch CUDA); building the model and its inputs happens in the trial child, which reports a
broken contract as the failure kind ``model_error``.
"""

from __future__ import annotations

import importlib.util
import sys
import traceback
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

from autotune.errors import UsageError

REQUIRED = ("get_model", "get_inputs")


class WorkloadError(UsageError):
    """The model file breaks the contract."""


@dataclass(frozen=True)
class Call:
    """One call of the model: positional and keyword arguments."""

    args: tuple[Any, ...]
    kwargs: dict[str, Any]


def load_model_file(path: str | Path) -> ModuleType:
    """Imports a model file and checks that it defines the required functions."""
    file = Path(path).resolve()
    if not file.is_file():
        raise WorkloadError(
            f"The model file {str(path)!r} does not exist (looked for {file}). "
            "Pass the path of a Python file that defines get_model(device) and get_inputs(device)."
        )
    name = f"autotune_user_model_{abs(hash(str(file)))}"
    spec = importlib.util.spec_from_file_location(name, file)
    if spec is None or spec.loader is None:
        raise WorkloadError(f"The model file {file} cannot be imported: it is not a Python file.")
    module = importlib.util.module_from_spec(spec)
    sys.path.insert(0, str(file.parent))
    try:
        spec.loader.exec_module(module)
    except BaseException as exc:  # noqa: B036 - a model file may even call sys.exit
        raise WorkloadError(
            f"The model file {file} failed to import: {_one_line(exc)}. Fix the file so that "
            f"`python {file}` runs without error (run with --debug for the traceback)."
        ) from exc
    finally:
        sys.path.remove(str(file.parent))
    for fn in REQUIRED:
        if not callable(getattr(module, fn, None)):
            raise WorkloadError(
                f"The model file {file} does not define {fn}(device): the contract needs "
                "get_model(device) -> torch.nn.Module and get_inputs(device) -> a tuple of "
                "positional arguments, a dict of keyword arguments, or a list of those."
            )
    return module


def build_model(module: ModuleType, device: str) -> Any:
    """Calls ``get_model(device)`` and checks that it returned an ``nn.Module``."""
    import torch

    model = _call(module, "get_model", device)
    if not isinstance(model, torch.nn.Module):
        raise WorkloadError(
            f"get_model(device) in {module.__file__} returned {type(model).__name__}, "
            "but must return a torch.nn.Module."
        )
    return model


def build_calls(module: ModuleType, device: str) -> list[Call]:
    """Calls ``get_inputs(device)`` and normalizes it to a list of calls."""
    value = _call(module, "get_inputs", device)
    items = value if isinstance(value, list) else [value]
    if not items:
        raise WorkloadError(
            f"get_inputs(device) in {module.__file__} returned an empty list; return at least "
            "one tuple of positional arguments or dict of keyword arguments."
        )
    return [_to_call(module, item, i) for i, item in enumerate(items)]


def describe_calls(calls: list[Call]) -> list[str]:
    """Short descriptions of each call's tensor shapes, e.g. ``(8x128:float32)``."""
    return [_describe(call) for call in calls]


def _to_call(module: ModuleType, item: Any, index: int) -> Call:
    import torch

    if isinstance(item, tuple):
        return Call(item, {})
    if isinstance(item, dict) and all(isinstance(k, str) for k in item):
        return Call((), dict(item))
    if isinstance(item, torch.Tensor):
        return Call((item,), {})
    where = f"element {index} of the list" if index else "its value"
    raise WorkloadError(
        f"get_inputs(device) in {module.__file__} returned {type(item).__name__} as {where}; "
        "it must be a tuple of positional arguments, a dict of keyword arguments (str keys), "
        "or a list of those (a shape distribution)."
    )


def _call(module: ModuleType, fn: str, device: str) -> Any:
    try:
        return getattr(module, fn)(device)
    except Exception as exc:
        raise WorkloadError(
            f"{fn}({device!r}) in {module.__file__} raised {_one_line(exc)}. Fix the model file "
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


def _one_line(exc: BaseException) -> str:
    text = "".join(traceback.format_exception_only(type(exc), exc)).strip()
    first = text.splitlines()[-1] if text else type(exc).__name__
    return first if len(first) <= 300 else first[:297] + "..."
