"""What a model file's loader and a model bundle share: the contract's names, its error, the
default loss, and the one line an exception is shown as."""

from __future__ import annotations

import traceback
from collections.abc import Callable, Iterator, Mapping
from typing import TYPE_CHECKING, Any

from autotune.errors import UsageError

if TYPE_CHECKING:
    import torch

REQUIRED = ("get_model", "get_inputs")
# A served model's requests with their shares of the traffic: stands in for get_inputs.
TRAFFIC = "get_traffic"
# What builds one request of a recorded traffic's shape (--traffic): get_request(device, **shape).
REQUEST = "get_request"
# How a served model's inputs pad and its outputs cut back (autotune.runtime.shapes): data.
PADDING = "PADDING"
# The train workload's (defaults otherwise; train_step: the fixed step), the generate
# workload's own loop (default: the model's generate()), and units: what one
# call processes (tokens, samples), for throughput in the reports.
OPTIONAL = ("loss_fn", "get_optimizer", "train_step", "generate", "units")
METRIC = "accuracy"  # the task metric an accuracy contract may name
DEFAULT_LEARNING_RATE = 1e-3

LossFn = Callable[[Any, Any], "torch.Tensor"]
BUNDLE_SUFFIX = ".pt"
BUNDLE_FORMAT = "autotune.model-bundle/1"


class WorkloadError(UsageError):
    """The model file breaks the contract."""

    # Named where it is imported from: a message that shows an exception shows its module.
    __module__ = "autotune.workload"


def default_loss(output: Any, inputs: Any) -> torch.Tensor:
    """The loss of a step when the model file defines no ``loss_fn``.

    It is the sum, over every floating-point tensor leaf of ``output`` (found in nested tuples,
    lists, dicts, Hugging Face ``ModelOutput``s and dataclasses, in order), of that tensor's
    mean. ``inputs`` is not read.

    Raises:
        WorkloadError: ``output`` holds no floating-point tensor.

    Example:
        >>> import torch
        >>> default_loss((torch.ones(2, 2), {"aux": torch.zeros(3)}), ()).item()
        1.0
    """

    leaves = [t for t in _tensor_leaves(output) if t.is_floating_point()]
    if not leaves:
        raise WorkloadError(
            f"the default loss is the mean of each floating-point tensor of the model's output, "
            f"but the output ({type(output).__name__}) holds none; define "
            "loss_fn(output, inputs) -> Tensor in the model file."
        )
    total: torch.Tensor = leaves[0].mean()
    for leaf in leaves[1:]:
        total = total + leaf.mean()
    return total


def one_line(exc: BaseException) -> str:
    text = "".join(traceback.format_exception_only(type(exc), exc)).strip()
    first = text.splitlines()[-1] if text else type(exc).__name__
    return first if len(first) <= 300 else first[:297] + "..."


def _tensor_leaves(value: Any) -> Iterator[torch.Tensor]:
    import dataclasses

    import torch

    if isinstance(value, torch.Tensor):
        yield value
    elif isinstance(value, Mapping):
        for item in value.values():
            yield from _tensor_leaves(item)
    elif isinstance(value, (list, tuple)):
        for item in value:
            yield from _tensor_leaves(item)
    elif dataclasses.is_dataclass(value) and not isinstance(value, type):
        for field in dataclasses.fields(value):
            yield from _tensor_leaves(getattr(value, field.name))
