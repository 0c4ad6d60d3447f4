from __future__ import annotations

import torch


def resolve(device: str | torch.device) -> torch.device:
    """Parse ``device`` and check that it is one autotune can measure on."""
    resolved = torch.device(device)
    if resolved.type not in ("cpu", "cuda"):
        raise ValueError(
            f"device must be 'cpu' or 'cuda[:N]', but got {str(device)!r}; "
            "measure on one of those instead."
        )
    return resolved


def synchronize(device: torch.device) -> None:
    """Wait for all queued work on ``device`` (a no-op on CPU, where work is synchronous)."""
    if device.type == "cuda":
        torch.cuda.synchronize(device)
