"""The device a command runs on: the default, and the check that it exists here."""

from __future__ import annotations

from autotune.errors import UsageError


def default_device() -> str:
    """``cuda`` when this torch sees a CUDA device, else ``cpu``."""
    import torch

    return "cuda" if torch.cuda.is_available() else "cpu"


def require(device: str, remedy: str, named: str | None = None) -> None:
    """Refuses a CUDA device this torch cannot see (no CUDA, or no such index); ``named`` says
    where the device came from (default: ``--device DEVICE``)."""
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
