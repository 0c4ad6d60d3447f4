"""A small MLP: the README's "do not compile" example. Its few GEMMs already run in eager's
oneDNN/MKL kernels, which Inductor's generated code does not beat on a CPU; the study says so.

autotune search studies/mlp.py --device cpu --trials 4
"""

from __future__ import annotations

import torch
from torch import nn


class MLP(nn.Module):
    def __init__(self, width: int = 512, depth: int = 4) -> None:
        super().__init__()
        layers: list[nn.Module] = []
        for _ in range(depth):
            layers += [nn.Linear(width, width), nn.GELU(), nn.LayerNorm(width)]
        self.body = nn.Sequential(*layers)
        self.head = nn.Linear(width, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        # x: [B, width]
        return self.head(self.body(x))


def get_model(device: str) -> nn.Module:
    return MLP().to(device)


def get_inputs(device: str) -> tuple[torch.Tensor]:
    return (torch.randn(64, 512, device=device),)
