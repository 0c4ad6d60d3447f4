"""autotune.apply_optimizer: a training config's optimizer step, compiled as the trial did."""

from __future__ import annotations

import json

import pytest
import torch
from torch._dynamo import utils

import autotune
from autotune.runtime.config import ConfigError
from autotune.runtime.optimizer import compiles_step

COMPILED = {"backend": "eager", "train": {"optimizer": "compiled"}}


def _model_and_optimizer(lr=0.1):
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.Tanh(), torch.nn.Linear(8, 1))
    return model, torch.optim.SGD(model.parameters(), lr=lr, momentum=0.9)


def _steps(model, optimizer, n=3, scheduler=None):
    x = torch.randn(4, 8, generator=torch.Generator().manual_seed(1))
    for _ in range(n):
        model(x).square().mean().backward()
        optimizer.step()
        optimizer.zero_grad()
        if scheduler is not None:
            scheduler.step()
    return [p.detach().clone() for p in model.parameters()]


def test_a_compiled_step_runs_through_dynamo_and_updates_as_eager():
    eager_model, eager_opt = _model_and_optimizer()
    model, optimizer = _model_and_optimizer()
    assert autotune.apply_optimizer(optimizer, COMPILED) is optimizer
    assert compiles_step(optimizer) and not compiles_step(eager_opt)
    torch._dynamo.reset()
    utils.counters.clear()
    after = _steps(model, optimizer)
    assert utils.counters["stats"]["unique_graphs"] >= 1  # the step itself was traced
    for got, want in zip(after, _steps(eager_model, eager_opt), strict=True):
        torch.testing.assert_close(got, want)


def test_a_config_without_a_compiled_optimizer_leaves_the_step_alone():
    _, optimizer = _model_and_optimizer()
    step = optimizer.step
    autotune.apply_optimizer(optimizer, {"backend": "eager"})
    assert optimizer.step == step and not compiles_step(optimizer)


def test_it_is_idempotent_and_a_scheduler_built_after_it_wraps_the_compiled_step():
    model, optimizer = _model_and_optimizer()
    autotune.apply_optimizer(optimizer, COMPILED)
    compiled = optimizer.step
    autotune.apply_optimizer(optimizer, COMPILED)
    assert optimizer.step == compiled
    scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=1, gamma=0.5)
    assert compiles_step(optimizer)  # the scheduler's wrapper keeps the mark
    _steps(model, optimizer, n=3, scheduler=scheduler)
    assert optimizer.param_groups[0]["lr"] == pytest.approx(0.1 * 0.5**3)


def test_a_best_config_file_is_read_for_the_optimizers_device(tmp_path):
    from autotune.runtime.config import BestConfig, CompileConfig, ConfigFile

    best = BestConfig(
        decision="compile",
        reason="test",
        config=CompileConfig(backend="eager", train={"optimizer": "compiled"}),
    )
    path = tmp_path / "best.json"
    path.write_text(json.dumps(ConfigFile(entries=(best,)).to_dict()))
    _, optimizer = _model_and_optimizer()
    autotune.apply_optimizer(optimizer, path)
    assert compiles_step(optimizer)


def test_a_wrong_train_setting_is_a_config_error():
    _, optimizer = _model_and_optimizer()
    with pytest.raises(ConfigError, match=r"train\.optimizer: expected 'compiled'"):
        autotune.apply_optimizer(optimizer, {"train": {"optimizer": "fused"}})


def test_a_training_config_is_reproduced_by_apply_and_apply_optimizer():
    # What the trial ran: the model compiled under bf16 autocast, the optimizer step compiled.
    config = {"backend": "aot_eager", "precision": {"autocast": "bfloat16"},
              "functorch": {"activation_memory_budget": 0.5},
              "train": {"optimizer": "compiled"}}  # fmt: skip
    model, optimizer = _model_and_optimizer()
    model = autotune.apply(model.train(), config)
    autotune.apply_optimizer(optimizer, config)
    x = torch.randn(4, 8)
    out = model(x)
    assert out.dtype == torch.bfloat16  # the forward ran in the autocast region
    out.float().square().mean().backward()
    assert all(p.grad.dtype == torch.float32 for p in model.parameters())  # fp32 master weights
    optimizer.step()
    assert compiles_step(optimizer)
