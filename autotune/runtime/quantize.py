"""A config's changes to the model's own weights, made once, in place, before it compiles.

``precision.weights`` casts the model (``"bfloat16"``, ``"float16"``): its parameters and
buffers, and the floating-point inputs of each call, so that it computes in that dtype end to
end (autocast instead recasts float32 weights at every call). ``precision.quantize`` replaces
the weights of its ``Linear`` layers by torchao's quantized tensors (:data:`SCHEMES`);
``precision.quantize_layers = "except-last"`` keeps the last ``Linear`` the model registers
(its output head: ``lm_head``, ``classifier``, ``fc``) in full precision. Embeddings,
convolutions and norms are never quantized.

torchao is imported only for a config that quantizes; without it such a config is refused in
one paragraph naming the extra that installs it (:data:`INSTALL`). A scheme the installed
torchao or this device does not have is a :class:`QuantizeError` before anything changes.
"""

from __future__ import annotations

import dataclasses
import importlib.metadata
import itertools
import logging
from collections.abc import Mapping
from typing import Any

import torch

from autotune.runtime._compile_config import QuantizeError
from autotune.runtime._schema import QUANTIZE_SCHEMES

__all__ = [
    "INSTALL",
    "SCHEMES",
    "QuantizeError",
    "change_weights",
    "scheme_problems",
    "torchao_version",
    "weights_bytes",
]

INSTALL = "pip install 'autotune[quantize]'"
# The first torchao with the config classes SCHEMES names (quantize_(model, Int8...Config())):
# read from its version, so that checking a space or a config never imports torchao (1.3 s).
OLDEST_TORCHAO = (0, 12)  # as pyproject.toml's quantize extra asks

# Each scheme: torchao's config class, the device types it runs on, the lowest CUDA capability
# (declared with the file's schema, which validates a file without torch).
SCHEMES = QUANTIZE_SCHEMES


def torchao_version() -> str | None:
    """The installed torchao's version, None where it is not installed."""
    try:
        return importlib.metadata.version("torchao")
    except importlib.metadata.PackageNotFoundError:
        return None


def scheme_problems(
    precision: Mapping[str, Any],
    device_type: str | None = None,
    capability: tuple[int, int] | None = None,
) -> list[str]:
    """Why ``precision.quantize`` cannot run here: torchao not installed, a scheme the
    installed torchao lacks, or one this device type (or CUDA ``capability``) does not run
    (not checked when None)."""
    scheme = precision.get("quantize")
    if scheme is None or scheme not in SCHEMES:
        return []
    version = torchao_version()
    if version is None:
        return [
            f"precision.quantize: {scheme!r} quantizes the model's Linear layers with torchao, "
            f"which is not installed here; install it with `{INSTALL}` (or `pip install "
            "torchao`), or apply an entry of the file that does not quantize"
        ]
    name, devices, lowest = SCHEMES[scheme]
    if device_type is not None and device_type not in devices:
        return [
            f"precision.quantize: {scheme!r} runs on {' or '.join(devices)}, not on "
            f"{device_type}; on {device_type} use one of {', '.join(_schemes_for(device_type))}"
        ]
    if lowest is not None and capability is not None and capability < lowest:
        return [
            f"precision.quantize: {scheme!r} needs CUDA compute capability "
            f"{lowest[0]}.{lowest[1]} or higher; this GPU has {capability[0]}.{capability[1]}"
        ]
    if _release(version) < OLDEST_TORCHAO:
        oldest = ".".join(map(str, OLDEST_TORCHAO))
        return [
            f"precision.quantize: {scheme!r} needs torchao {oldest} or newer (its {name}), and "
            f"torchao {version} is installed; `pip install -U torchao`"
        ]
    return []


def _release(version: str) -> tuple[int, ...]:
    numbers = []
    for part in version.split("+")[0].split(".")[:2]:
        digits = "".join(itertools.takewhile(str.isdigit, part))
        numbers.append(int(digits or 0))
    return tuple(numbers)


def _schemes_for(device_type: str) -> list[str]:
    return [repr(s) for s, (_, devices, _) in SCHEMES.items() if device_type in devices]


def _torchao_quantization() -> Any:
    """``torchao.quantization``, imported without the lines torchao logs about its CUDA-only
    kernels it cannot load on this machine (and torch about its enum registration)."""
    quiet = [logging.getLogger(name) for name in ("torchao", "torch.utils._pytree")]
    levels = [logger.level for logger in quiet]
    for logger in quiet:
        logger.setLevel(logging.ERROR)
    try:
        import torchao.quantization
    finally:
        for logger, level in zip(quiet, levels, strict=True):
            logger.setLevel(level)
    return torchao.quantization


def change_weights(model: torch.nn.Module, precision: Mapping[str, Any]) -> None:
    """Casts and quantizes ``model`` in place as ``precision`` says (see the module's docs);
    nothing when it changes no weights.

    Raises:
        QuantizeError: The scheme cannot run here (:func:`scheme_problems`); the model is
            left untouched.
    """
    if "weights" not in precision and "quantize" not in precision:
        return
    device = _device_of(model)
    capability = torch.cuda.get_device_capability(device) if device.type == "cuda" else None
    problems = scheme_problems(precision, device.type, capability)
    if problems:
        raise QuantizeError(" ".join(problems))
    dtype = precision.get("weights")
    if dtype is not None:
        model.to(getattr(torch, dtype))
        model.register_forward_pre_hook(_cast_inputs(getattr(torch, dtype)), with_kwargs=True)
    scheme = precision.get("quantize")
    if scheme is not None:
        _quantize(model, scheme, keep_last=precision.get("quantize_layers") == "except-last")


def _quantize(model: torch.nn.Module, scheme: str, keep_last: bool) -> None:
    quantization = _torchao_quantization()
    linears = [m for m in model.modules() if isinstance(m, torch.nn.Linear)]
    kept = {id(m) for m in linears[-1:]} if keep_last else set()

    def chosen(module: torch.nn.Module, fqn: str) -> bool:
        return isinstance(module, torch.nn.Linear) and id(module) not in kept

    name = SCHEMES[scheme][0]
    if not hasattr(quantization, name):
        raise QuantizeError(
            f"precision.quantize: {scheme!r} needs torchao's {name}, which the installed torchao "
            f"{torchao_version()} does not have; `pip install -U torchao`"
        )
    config_class = getattr(quantization, name)
    # torchao's default sets Inductor's config process-wide (coordinate descent tuning, int_mm
    # fusion, ...) and never puts it back: the config's knobs would no longer be what was
    # measured, and every other model of the process would compile differently.
    fields = {f.name for f in dataclasses.fields(config_class)}
    settings = {"set_inductor_config": False} if "set_inductor_config" in fields else {}
    quantization.quantize_(model, config_class(**settings), filter_fn=chosen)


def _cast_inputs(dtype: torch.dtype) -> Any:
    """A forward pre-hook: the call's floating-point tensors (positional and keyword, one
    level of lists and tuples) in ``dtype``, as the cast weights expect them."""

    def cast(value: Any) -> Any:
        if isinstance(value, torch.Tensor) and value.is_floating_point():
            return value.to(dtype)
        if isinstance(value, (list, tuple)):
            return type(value)(cast(v) for v in value)
        return value

    def hook(
        module: torch.nn.Module, args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> tuple[tuple[Any, ...], dict[str, Any]]:
        return tuple(cast(a) for a in args), {k: cast(v) for k, v in kwargs.items()}

    return hook


def _device_of(model: torch.nn.Module) -> torch.device:
    for tensor in [*model.parameters(), *model.buffers()]:
        return tensor.device
    return torch.device("cpu")


def weights_bytes(model: torch.nn.Module) -> int:
    """The bytes of the model's parameters and buffers as stored: a quantized tensor's own
    data and scales (torchao's tensor subclasses), not its logical shape at float32."""
    seen: set[int] = set()
    total = 0
    for tensor in [*model.parameters(), *model.buffers()]:
        if id(tensor) not in seen:
            seen.add(id(tensor))
            total += _tensor_bytes(tensor)
    return total


def _tensor_bytes(tensor: Any) -> int:
    from torch.utils._python_dispatch import is_traceable_wrapper_subclass

    data = tensor.data if isinstance(tensor, torch.nn.Parameter) else tensor
    if is_traceable_wrapper_subclass(data):
        names, _ = data.__tensor_flatten__()
        return sum(_tensor_bytes(getattr(data, name)) for name in names)
    return int(data.numel() * data.element_size())
