"""pytorch-autotune's own ground: the training step of a tiny MLP on a CPU, where eager wins
(its few small GEMMs already run in oneDNN/MKL kernels). benchmarks/peer_quick.py tunes it with
``autotune search --effort quick --workload train`` and with pytorch-autotune.
"""

from __future__ import annotations

import torch
from torch import nn


def get_model(device: str) -> nn.Module:
    torch.manual_seed(0)
    return nn.Sequential(
        nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 128), nn.ReLU(), nn.Linear(128, 10)
    ).to(device)


def get_inputs(device: str) -> tuple[torch.Tensor]:
    # x: [batch 32, features 64]
    return (torch.randn(32, 64, device=device),)


def loss_fn(output: torch.Tensor, inputs: tuple[torch.Tensor]) -> torch.Tensor:
    target = torch.arange(output.shape[0], device=output.device) % output.shape[1]
    return nn.functional.cross_entropy(output, target)
