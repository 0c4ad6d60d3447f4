"""Inside a trial process: what its compile time is."""

from __future__ import annotations

import torch

from autotune.runtime.config import CompileConfig
from autotune.trials import TrialSpec, _measure_trial
from autotune.workload import Call


def test_the_compile_time_is_the_first_call_of_every_input_shape(monkeypatch):
    monkeypatch.setattr(_measure_trial, "compile_module", lambda model, config, **_: model)
    monkeypatch.setattr(_measure_trial, "time_first_call", lambda fn, _: (fn(), 10.0))
    calls = [Call((torch.ones(2, 4),), {}), Call((torch.ones(3, 4),), {})]
    work = _measure_trial.Workload(torch.nn.Linear(4, 4), calls, reference=None)
    spec = TrialSpec(model_path="m.py", device="cuda", config=CompileConfig().to_dict())
    target, seconds = _measure_trial._compile(spec, CompileConfig(), work)
    assert seconds == 10.0 + 10.0  # each shape compiles on its first call
    assert [o.shape[0] for o in target.outputs] == [2, 3]
