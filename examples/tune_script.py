"""Tune a model from a training script, then use the result in the same process.

    python examples/tune_script.py

The model's class lives in this script (``__main__``): ``autotune.tune`` hands it to the trial
processes by value, so nothing has to be importable. Each trial compiles in a process of its
own; the study is recorded in ``autotune.db`` and the decision written to
``best_config.json``, which production applies with ``autotune.apply(model, path)``.
"""

from __future__ import annotations

import torch
from torch import nn

import autotune


class Classifier(nn.Module):
    """A small MLP classifier: 128 features in, 10 classes out."""

    def __init__(self) -> None:
        super().__init__()
        self.body = nn.Sequential(nn.Linear(128, 256), nn.GELU(), nn.Linear(256, 256), nn.GELU())
        self.head = nn.Linear(256, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.body(x)).softmax(dim=-1)


def main() -> None:
    torch.manual_seed(0)
    model = Classifier().eval()
    batch = torch.randn(64, 128)  # x: [batch 64, features 128]

    # The options of `autotune search`, by their Python names: a short study on this CPU.
    result = autotune.tune(
        model, (batch,), device="cpu", space="quick", trials=2, finalists=0,
        measure_seconds=0.5,
    )  # fmt: skip
    print(result)

    with torch.no_grad():
        expected = model(batch)  # eager, before apply compiles the model in place
    fast = result.apply(model)  # compiled as the file says, or the model itself: eager won
    with torch.no_grad():
        torch.testing.assert_close(fast(batch), expected, rtol=1e-4, atol=1e-5)
    print(f"applied {result.out}: {result.best.decision}")


if __name__ == "__main__":
    main()
