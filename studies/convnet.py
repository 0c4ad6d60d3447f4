"""A small convnet (conv-bn-relu stages, pooling, a linear head): the README's first example,
a model that compiling speeds up on a CPU (Inductor fuses each conv's batch norm and ReLU).

autotune search studies/convnet.py --device cpu --trials 4
"""

from __future__ import annotations

import torch
from torch import nn


def _stage(cin: int, cout: int) -> nn.Module:
    return nn.Sequential(nn.Conv2d(cin, cout, 3, padding=1), nn.BatchNorm2d(cout), nn.ReLU())


def get_model(device: str) -> nn.Module:
    return nn.Sequential(
        _stage(3, 32), _stage(32, 32), nn.MaxPool2d(2),
        _stage(32, 64), _stage(64, 64), nn.AdaptiveAvgPool2d(1),
        nn.Flatten(), nn.Linear(64, 10),
    ).to(device)  # fmt: skip


def get_inputs(device: str) -> tuple[torch.Tensor]:
    # x: [batch 16, channels 3, 64 x 64]
    return (torch.randn(16, 3, 64, 64, device=device),)
