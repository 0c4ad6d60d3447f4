"""Trials on a GPU, forked from the warm host and in fresh processes: CUDA must work in the
child although the host imported torch, Dynamo and Inductor (which count CUDA devices, and torch
then refuses CUDA in a forked child unless they are counted through NVML)."""

from __future__ import annotations

import pytest
import torch

from autotune.runtime.config import CompileConfig
from autotune.trials import (
    MeasureSettings,
    PreloadedHostRunner,
    SubprocessRunner,
    TrialSpec,
)

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA"),
]

FAST = MeasureSettings(warmup=1, min_rounds=5, max_rounds=20, target_seconds=0.2)


@pytest.fixture(scope="module", params=["warm", "cold"])
def runner(request, tmp_path_factory):
    if request.param == "cold":
        yield SubprocessRunner()
        return
    with PreloadedHostRunner(log_dir=str(tmp_path_factory.mktemp("host"))) as warm:
        yield warm


def _run(runner, tmp_path_factory, model: str, config: CompileConfig | None):
    spec = TrialSpec(
        model_path=model, device="cuda",
        config=config.to_dict() if config is not None else None, time_limit_s=300.0,
        measure=FAST, cache_dir=str(tmp_path_factory.getbasetemp() / "cuda-cache"),
    )  # fmt: skip
    return runner.run(spec)


@pytest.mark.parametrize("mode", [None, "default", "reduce-overhead"])
def test_a_cuda_trial_runs_in_the_child(runner, tmp_path_factory, model_file, mode):
    config = None if mode is None else CompileConfig(mode=mode)
    result = _run(runner, tmp_path_factory, model_file("tiny"), config)
    assert result.status == "ok", result.error_tail
    assert result.environment["device_name"] == torch.cuda.get_device_name(0)
    assert result.peak_memory_bytes > 0
    if config is not None:
        assert result.graphs >= 1 and result.compile_time_s > 0
    if isinstance(runner, PreloadedHostRunner):
        assert runner._cold is None, "the warm host fell back to fresh processes"


def test_a_cuda_allocation_failure_is_oom(runner, tmp_path_factory, model_file):
    # aot_eager runs the traced allocation as written; Inductor folds ones(2**45)[:8] away (as
    # it did on the H200, where this test with the default backend found no failure at all).
    config = CompileConfig(backend="aot_eager")
    result = _run(runner, tmp_path_factory, model_file("oom_when_compiled"), config)
    assert result.failure_kind == "oom", (result.error, result.error_tail)
