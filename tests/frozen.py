"""A model where freezing shows: shared by the tests that prove freezing takes effect."""

from __future__ import annotations

import torch
from torch import nn


class Scaled(nn.Module):
    """``relu(x @ (2w).T)``: freezing makes ``w`` a constant and folds ``2w`` at compile time."""

    def __init__(self) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.randn(32, 32))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(x @ (self.weight * 2).t())
