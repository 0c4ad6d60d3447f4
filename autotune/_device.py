"""The device a command runs on: the default, and the check that it exists here. Every
subcommand resolves its device through :func:`resolve_device`."""

from __future__ import annotations

from autotune.errors import UsageError


def default_device() -> str:
    """``cuda`` when this torch sees a CUDA device, else ``cpu``."""
    import torch

    return "cuda" if torch.cuda.is_available() else "cpu"


def resolve_device(
    given: str | None,
    *,
    fallback: str | None = None,
    remedy: str,
    named: str | None = None,
    require_cuda: bool = True,
) -> str:
    """The device to use: ``given``, else ``fallback`` (e.g. a file's own device), else this
    machine's default. A CUDA device this torch cannot see is refused with ``remedy``, unless
    ``require_cuda`` is False (checking a space file for CUDA needs no GPU); ``named`` says
    where the device came from (default: ``--device DEVICE``)."""
    device = given or fallback or default_device()
    if require_cuda:
        _require(device, remedy, named or (None if given else f"The device {device}"))
    return device


def _require(device: str, remedy: str, named: str | None) -> None:
    if not device.startswith("cuda"):
        return
    import torch

    named = named or f"--device {device}"
    if not torch.cuda.is_available():
        raise UsageError(
            f"{named} needs CUDA, but this torch ({torch.__version__}) sees no CUDA "
            f"device. {remedy}"
        )
    index = int(device.partition(":")[2] or 0)
    count = torch.cuda.device_count()
    if index >= count:
        raise UsageError(
            f"{named} names CUDA device {index}, but this machine has {count} "
            f"(cuda:0 to cuda:{count - 1}; CUDA_VISIBLE_DEVICES may hide others). {remedy}"
        )
