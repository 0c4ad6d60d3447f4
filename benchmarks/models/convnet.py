"""A small convnet: conv-bn-relu stages, then pooling and a linear head."""

import torch
from torch import nn


def _stage(cin, cout):
    return nn.Sequential(nn.Conv2d(cin, cout, 3, padding=1), nn.BatchNorm2d(cout), nn.ReLU())


def get_model(device):
    return nn.Sequential(
        _stage(3, 32), _stage(32, 32), nn.MaxPool2d(2),
        _stage(32, 64), _stage(64, 64), nn.AdaptiveAvgPool2d(1),
        nn.Flatten(), nn.Linear(64, 10),
    ).to(device)  # fmt: skip


def get_inputs(device):
    # x: [batch 16, channels 3, 64 x 64]
    return (torch.randn(16, 3, 64, 64, device=device),)
