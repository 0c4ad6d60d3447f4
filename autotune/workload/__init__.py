"""The model-file contract: ``get_model(device)``, ``get_inputs(device)``, and for training
``loss_fn(output, inputs)`` and ``get_optimizer(model)``.

A model file is a Python file that defines:

- ``get_model(device: str) -> torch.nn.Module`` (required);
- ``get_inputs(device: str)`` (required): a tuple of positional arguments for one call, or a dict
  of keyword arguments; a list of such tuples/dicts is a *shape distribution* and every trial
  runs all of them. ``get_inputs(device, batch_size=N)`` may take the batch size as a second
  argument: ``--objective throughput --batch-sizes 1,8,32`` then searches it;
- ``loss_fn(output, inputs) -> Tensor`` (optional, training only): the loss of one step;
  default :func:`default_loss`;
- ``get_optimizer(model) -> torch.optim.Optimizer`` (optional, training only): default
  ``torch.optim.AdamW(model.parameters(), lr=1e-3)``;
- ``train_step(model, optimizer, inputs) -> loss`` (optional, training only): the user's own
  step (clipping, accumulation, a scheduler), timed as written; default: ``loss_fn`` of the
  output, ``backward()``, ``optimizer.step()``, ``optimizer.zero_grad()``;
- ``generate(model, inputs) -> token ids`` (optional, the generate workload only): the
  file's own generation loop; default: the model's ``generate(**inputs, do_sample=False)``;
- ``get_traffic(device)`` (optional, the infer workload): a served model's traffic, a list of
  ``(inputs, weight)`` requests (inputs as ``get_inputs`` gives one call, weight its share of
  the traffic: a count or a fraction); it stands in for ``get_inputs``, which is then not
  called. Each request is timed on its own and the study ranks by the traffic's weighted mean
  latency, recording its p50/p95/p99 (:mod:`autotune.measure._traffic`);
- ``PADDING`` (optional, the infer workload): how the model's inputs pad and its outputs are
  cut back, as data (:mod:`autotune.runtime.shapes`); the space's ``[shapes]`` plans (marked
  dynamic dimensions, padding to buckets) are then searched;
- ``units(inputs)`` (optional): what one call processes, a count of samples or ``(count,
  "tokens")``: the reports then give throughput in that unit per second;
- ``accuracy(output, reference) -> float`` (optional): a task metric an accuracy contract may
  name (``--accuracy 'accuracy>=0.99'``): top-1 agreement, a perplexity delta.

The parent of trials only imports the file and checks that both functions exist (it must not
touch CUDA); building the model and its inputs happens in the trial child, which reports a
broken contract as the failure kind ``model_error``.

``autotune.tune(model, inputs)`` hands trials a *model bundle* instead (:func:`write_bundle`):
one ``.pt`` file the study owns, holding the model (or a factory), its example inputs and the
optional functions above, pickled with cloudpickle (a class defined in a notebook cell or in
``__main__`` travels by value) and saved with ``torch.save`` (the weights as tensors, once).
A bundle is code like a model file: hashed like one, and run only where a model file would be.

The modules: ``_model_file`` loads a model file and calls its functions, ``_bundle`` writes and
reads bundles, ``_common`` holds what both use (the contract's names, :class:`WorkloadError`,
the default loss); the loader calls into the bundle, never the other way.
"""

from __future__ import annotations

from autotune.workload._bundle import write_bundle
from autotune.workload._calls import (
    Call,
    build_calls,
    count_units,
    describe_calls,
    has_traffic,
    padding_of,
    require_batch_size,
    takes_batch_size,
)
from autotune.workload._common import (
    BUNDLE_FORMAT,
    BUNDLE_SUFFIX,
    DEFAULT_LEARNING_RATE,
    METRIC,
    OPTIONAL,
    REQUEST,
    REQUIRED,
    TRAFFIC,
    LossFn,
    WorkloadError,
    default_loss,
    one_line,
)
from autotune.workload._model_file import (
    StepFn,
    accuracy_metric,
    build_model,
    build_optimizer,
    build_seeded,
    generate_function,
    load_model_file,
    loss_function,
    train_step_function,
)
from autotune.workload._preload import found_beside, preload
from autotune.workload._trace import Traffic, read_trace, shapes_problem

__all__ = [
    "BUNDLE_FORMAT",
    "BUNDLE_SUFFIX",
    "DEFAULT_LEARNING_RATE",
    "METRIC",
    "OPTIONAL",
    "REQUEST",
    "REQUIRED",
    "TRAFFIC",
    "Traffic",
    "Call",
    "LossFn",
    "StepFn",
    "WorkloadError",
    "accuracy_metric",
    "build_calls",
    "build_model",
    "build_optimizer",
    "build_seeded",
    "count_units",
    "default_loss",
    "describe_calls",
    "found_beside",
    "generate_function",
    "has_traffic",
    "padding_of",
    "preload",
    "read_trace",
    "shapes_problem",
    "load_model_file",
    "loss_function",
    "one_line",
    "require_batch_size",
    "takes_batch_size",
    "train_step_function",
    "write_bundle",
]
