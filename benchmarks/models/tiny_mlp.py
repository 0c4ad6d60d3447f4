"""A tiny MLP: the model of the per-trial overhead benchmark (its compile is mostly fixed cost)."""

import torch
from torch import nn


def get_model(device):
    return nn.Sequential(nn.Linear(64, 128), nn.GELU(), nn.Linear(128, 64)).to(device)


def get_inputs(device):
    return (torch.randn(16, 64, device=device),)
