"""What a trial of several calls records of them for production."""

from __future__ import annotations

import torch

from autotune.runtime.shapes import MAX_WARMUP_CALLS, warmup_problems
from autotune.trials._many import warmup_specs
from autotune.workload import Call


def test_the_warmup_plan_stops_at_what_a_best_config_file_holds():
    """A model whose inputs hold more distinct shapes than a file's warm-up plan may list
    still ends its search with a file that loads: the plan keeps the first shapes."""
    calls = [Call((torch.ones(1, n + 1),), {}) for n in range(MAX_WARMUP_CALLS + 6)]
    calls.append(calls[0])  # a shape seen again is listed once
    specs = warmup_specs(calls)
    assert len(specs) == MAX_WARMUP_CALLS
    assert specs[0]["args"][0]["shape"] == [1, 1] and specs[-1]["args"][0]["shape"][1] == 1024
    assert warmup_problems(specs, "workload.warmup") == []
