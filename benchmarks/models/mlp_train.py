"""A training step of our own: a small MLP classifier whose model file defines its own
``train_step``, as users write theirs: the batch of 128 split in 2 micro-batches whose
gradients accumulate, the gradient norm clipped to 1, then AdamW steps and the gradients are
set to None.

autotune search benchmarks/models/mlp_train.py --workload train --device cpu --trials 10
"""

import torch
from torch import nn

BATCH, FEATURES, WIDTH, CLASSES, MICRO_BATCHES = 128, 256, 1024, 10, 2


class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = nn.Sequential(
            nn.Linear(FEATURES, WIDTH), nn.GELU(), nn.Linear(WIDTH, WIDTH), nn.GELU(),
            nn.Linear(WIDTH, CLASSES),
        )  # fmt: skip

    def forward(self, x):
        return self.layers(x)


def get_model(device):
    return MLP().to(device)


def get_inputs(device):
    # x: [batch 128, features 256]; target: [128] class indices
    return {
        "x": torch.randn(BATCH, FEATURES, device=device),
        "target": torch.randint(0, CLASSES, (BATCH,), device=device),
    }


def get_optimizer(model):
    return torch.optim.AdamW(model.parameters(), lr=1e-3)


def train_step(model, optimizer, inputs):
    total = 0.0
    for x, target in zip(
        inputs["x"].chunk(MICRO_BATCHES), inputs["target"].chunk(MICRO_BATCHES), strict=True
    ):
        loss = nn.functional.cross_entropy(model(x), target) / MICRO_BATCHES
        loss.backward()
        total += loss.detach()
    torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm=1.0)
    optimizer.step()
    optimizer.zero_grad(set_to_none=True)
    return total


def units(inputs):
    # What one step processes: the reports and the best-config file give samples/s.
    return inputs["x"].shape[0], "samples"
