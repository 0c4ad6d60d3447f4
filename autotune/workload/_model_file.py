"""Loading a model file (or a model bundle, :mod:`autotune.workload._bundle`) and calling its
functions as the contract of :mod:`autotune.workload` says, checking what each returns."""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any

from autotune.workload._bundle import bundle_module
from autotune.workload._calls import (
    Call,
    build_calls,
    call_function,
    has_traffic,
    returned,
)
from autotune.workload._common import (
    BUNDLE_SUFFIX,
    DEFAULT_LEARNING_RATE,
    METRIC,
    REQUEST,
    REQUIRED,
    LossFn,
    WorkloadError,
    default_loss,
    one_line,
)
from autotune.workload._trace import Traffic

if TYPE_CHECKING:
    import torch


def load_model_file(path: str | Path) -> ModuleType:
    """Imports a model file and checks that it defines the required functions; a model bundle
    (``*.pt``, :func:`~autotune.workload.write_bundle`) is read on the first call of one of
    them."""
    file = Path(path).resolve()
    if file.suffix == BUNDLE_SUFFIX and file.is_file():
        return bundle_module(file)
    if file.is_dir():
        examples = sorted(p.name for p in file.glob("*.py"))[:4]
        found = f" (it holds {', '.join(examples)})" if examples else ""
        raise WorkloadError(
            f"The model file {str(path)!r} is a directory{found}, but a model is one Python "
            "file: pass the path of a .py file that defines get_model(device) and "
            "get_inputs(device)."
        )
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
            f"The model file {file} failed to import: {one_line(exc)}. Fix the file so that "
            f"`python {file}` runs without error (run with --debug for the traceback)."
        ) from exc
    finally:
        sys.path.remove(str(file.parent))
    for fn in REQUIRED:
        if fn == "get_inputs" and (
            has_traffic(module) or callable(getattr(module, REQUEST, None))
        ):
            continue  # the requests of a traffic mix, or of a recorded one, stand in for it
        if not callable(getattr(module, fn, None)):
            raise WorkloadError(
                f"The model file {file} does not define {fn}(device): the contract needs "
                "get_model(device) -> torch.nn.Module and get_inputs(device) -> a tuple of "
                "positional arguments, a dict of keyword arguments, or a list of those (or "
                "get_traffic(device) -> a list of (inputs, weight) requests)."
            )
    return module


def build_model(module: ModuleType, device: str) -> Any:
    """Calls ``get_model(device)`` and checks that it returned an ``nn.Module``."""
    import torch

    model = call_function(module, "get_model", device)
    if not isinstance(model, torch.nn.Module):
        raise WorkloadError(
            f"get_model(device) in {module.__file__} returned {type(model).__name__}, "
            "but must return a torch.nn.Module."
        )
    return model


def build_seeded(
    path: str | Path,
    device: str,
    seed: int,
    batch_size: int | None,
    traffic: Traffic | None = None,
) -> tuple[ModuleType, Any, list[Call]]:
    """The model file at ``path``, its model and its calls, each built right after
    ``torch.manual_seed(seed)``: every trial of a study sees the same weights and inputs."""
    import torch

    module = load_model_file(path)
    torch.manual_seed(seed)
    model = build_model(module, device)
    torch.manual_seed(seed)
    return module, model, build_calls(module, device, batch_size, traffic)


def accuracy_metric(module: ModuleType) -> Callable[[Any, Any], float] | None:
    """The file's ``accuracy(output, reference) -> float``, None if it defines none; the
    returned function raises :class:`WorkloadError` for an exception or a value that is not a
    finite-or-NaN real number."""
    user = getattr(module, METRIC, None)
    if user is None:
        return None
    if not callable(user):
        raise WorkloadError(
            f"{METRIC} in {module.__file__} is a {type(user).__name__}, but must be a function "
            f"{METRIC}(output, reference) -> float; define it as one, or rename it."
        )

    def metric(output: Any, reference: Any) -> float:
        try:
            value = user(output, reference)
            return float(value)
        except Exception as exc:
            raise WorkloadError(
                f"{METRIC}(output, reference) in {module.__file__} raised {one_line(exc)}; it "
                "must return a number (a float, or a one-element tensor). Fix the model file."
            ) from exc

    return metric


def _optional_function(
    module: ModuleType, name: str, signature: str, otherwise: str
) -> Callable[..., Any] | None:
    """The file's optional function ``name``, None where it defines none; anything else of
    that name raises :class:`WorkloadError` naming the ``signature`` it must have and what
    deleting it does (``otherwise``)."""
    user = getattr(module, name, None)
    if user is not None and not callable(user):
        raise WorkloadError(
            f"{name} in {module.__file__} is a {type(user).__name__}, but must be a function "
            f"{signature}; define it as one, or delete it to {otherwise}."
        )
    return user


def loss_function(module: ModuleType) -> LossFn:
    """The file's ``loss_fn(output, inputs)``, or :func:`default_loss` if it defines none.

    The returned function checks every loss it computes: a floating-point tensor of one
    element that requires grad; anything else, or an exception, raises :class:`WorkloadError`.
    """
    user = _optional_function(
        module, "loss_fn", "loss_fn(output, inputs) -> Tensor",
        "use the default loss (the mean of each floating-point output tensor, summed)",
    )  # fmt: skip
    fn: LossFn = user if user is not None else default_loss
    what = "loss_fn(output, inputs)" if user is not None else "the default loss"

    def loss(output: Any, inputs: Any) -> torch.Tensor:
        try:
            value = fn(output, inputs)
        except WorkloadError:
            raise
        except Exception as exc:
            raise WorkloadError(
                f"{what} in {module.__file__} raised {one_line(exc)}. Fix the model file "
                "(run with --debug for the traceback)."
            ) from exc
        _check_loss(module, what, value)
        return value

    return loss


StepFn = Callable[["torch.nn.Module", "torch.optim.Optimizer", Call], "torch.Tensor"]


def train_step_function(module: ModuleType) -> StepFn:
    """One training step on one call, as the file's ``train_step(model, optimizer, inputs)``
    runs it, or the fixed step if it defines none: ``loss_fn`` of the model's output,
    ``backward()``, ``optimizer.step()``, ``optimizer.zero_grad()``. Either returns the
    step's loss as a one-element floating-point tensor.

    An exception inside the step propagates as it is (a compiled model's failure inside the
    user's step is the trial's to classify); a step that returns anything but its loss (a
    one-element tensor or a number) raises :class:`WorkloadError`.
    """
    import torch

    user = _optional_function(
        module, "train_step", "train_step(model, optimizer, inputs) -> loss",
        "use the fixed step (loss_fn, backward, optimizer.step, zero_grad)",
    )  # fmt: skip
    if user is None:
        loss_fn = loss_function(module)

        def fixed(model: torch.nn.Module, optimizer: torch.optim.Optimizer, call: Call) -> Any:
            loss = loss_fn(model(*call.args, **call.kwargs), call.inputs)
            loss.backward()
            optimizer.step()
            optimizer.zero_grad()
            return loss

        return fixed

    def own(model: torch.nn.Module, optimizer: torch.optim.Optimizer, call: Call) -> Any:
        loss = user(model, optimizer, call.inputs)
        if isinstance(loss, (int, float)) and not isinstance(loss, bool):
            return torch.tensor(float(loss))
        if isinstance(loss, torch.Tensor) and loss.is_floating_point() and loss.numel() == 1:
            return loss.detach().reshape(())
        raise WorkloadError(
            f"train_step(model, optimizer, inputs) in {module.__file__} {returned(loss)}, but "
            "must return the step's loss: a one-element floating-point tensor (or a number), "
            "which the correctness gate compares with eager's. Add `return loss`."
        )

    return own


def generate_function(module: ModuleType) -> Callable[[torch.nn.Module, Call], torch.Tensor]:
    """The generate workload's unit on one request: the file's own ``generate(model, inputs)``
    (a loop as gpt-fast writes it), or else the model's ``generate(**inputs)`` (transformers'
    ``GenerationMixin``) with ``do_sample=False``, greedy, so that eager's tokens are the
    reference. Either returns the token ids, ``[batch, length]``.

    Raises:
        WorkloadError: The model has no ``generate`` and the file defines none, or it returned
            something other than token ids.
    """
    import torch

    user = _optional_function(
        module,
        "generate",
        "generate(model, inputs) -> token ids",
        "use the model's own generate()",
    )

    def ids(out: Any, what: str) -> torch.Tensor:
        out = getattr(out, "sequences", out)  # a GenerateOutput of return_dict_in_generate
        if isinstance(out, torch.Tensor) and out.dim() == 2 and not out.is_floating_point():
            return out
        raise WorkloadError(
            f"{what} {returned(out)}, but the generate workload needs the generated token ids "
            "(an integer tensor [batch, length]), which the correctness gate compares with "
            "eager's."
        )

    def step(model: torch.nn.Module, call: Call) -> torch.Tensor:
        if user is not None:
            return ids(user(model, call.inputs), f"generate(model, inputs) in {module.__file__}")
        generate = getattr(model, "generate", None)
        if not callable(generate):
            raise WorkloadError(
                f"--workload generate times generate(), but the model of {module.__file__} "
                f"({type(model).__name__}) has no generate() method and the file defines no "
                "generate(model, inputs): use a transformers model (GenerationMixin) or define "
                "generate(model, inputs) -> token ids in the model file."
            )
        out = generate(*call.args, **{**call.kwargs, "do_sample": False})
        return ids(out, f"{type(model).__name__}.generate()")

    return step


def build_optimizer(module: ModuleType, model: torch.nn.Module) -> torch.optim.Optimizer:
    """Calls the file's ``get_optimizer(model)``, or returns ``AdamW(lr=1e-3)`` over the model's
    parameters if it defines none."""
    import torch

    factory = getattr(module, "get_optimizer", None)
    what = "get_optimizer(model)" if factory is not None else "the default optimizer AdamW"
    try:
        if factory is None:
            optimizer = torch.optim.AdamW(model.parameters(), lr=DEFAULT_LEARNING_RATE)
        else:
            optimizer = factory(model)
    except Exception as exc:
        raise WorkloadError(
            f"{what} for the model of {module.__file__} raised {one_line(exc)}. A train "
            "workload needs a model with parameters and an optimizer over them; fix "
            "get_model or define get_optimizer(model) (run with --debug for the traceback)."
        ) from exc
    if not isinstance(optimizer, torch.optim.Optimizer):
        raise WorkloadError(
            f"get_optimizer(model) in {module.__file__} returned {type(optimizer).__name__}, "
            "but must return a torch.optim.Optimizer over model's parameters."
        )
    return optimizer


def _check_loss(module: ModuleType, what: str, value: Any) -> None:
    import torch

    problem = ""
    if not isinstance(value, torch.Tensor) or not value.is_floating_point() or value.numel() != 1:
        problem = returned(value)
    elif not value.requires_grad:
        problem = "returned a tensor that does not require grad (no parameter reaches it)"
    if problem:
        raise WorkloadError(
            f"{what} in {module.__file__} {problem}, but a training step needs a one-element "
            "floating-point tensor that requires grad to call backward() on."
        )
