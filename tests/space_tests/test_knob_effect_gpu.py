"""The knob-effect tests of the cuda and quick spaces, on a GPU (see test_knob_effect.py):
each knob changes the Triton code on its probe, CUDA graphs replay, and the GEMM search space
changes what max-autotune benchmarks."""

from __future__ import annotations

import copy
import re
from pathlib import Path
from typing import Any

import pytest
import torch
from torch import nn

from autotune.runtime.apply import compile_module
from autotune.runtime.config import CompileConfig
from space_tests.knob_probes import (
    CPU_INERT,
    GPU_EFFECTS,
    TRITON_GEMM,
    FloatScaled,
    Mm,
    Pointwise,
    config,
    generated_code,
    on,
    searched_knobs,
    with_value,
)

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA"),
]


@pytest.mark.parametrize("param", sorted(GPU_EFFECTS))
def test_the_knob_changes_the_generated_code_on_a_gpu(param: str) -> None:
    effect = GPU_EFFECTS[param]
    a = generated_code(effect.probe, config(effect.a), "cuda")
    b = generated_code(effect.probe, config(effect.b), "cuda")
    assert a != b, f"{param} generated the same code on its probe; expected: {effect.why}"


@pytest.mark.parametrize("param", sorted(set(CPU_INERT) & set(searched_knobs("cuda"))))
def test_a_knob_listed_inert_generates_the_same_code_on_a_gpu(param: str) -> None:
    inert = CPU_INERT[param]
    values = searched_knobs("cuda")[param]
    codes = [generated_code(inert.probe, with_value(inert.base, param, v), "cuda") for v in values]
    assert all(code == codes[0] for code in codes), f"{param} changes the Triton code"


def _graph_launches(compiled: nn.Module, *args: Any) -> int:
    with torch.no_grad():
        for _ in range(3):  # CUDA-graph trees warm up, record, then replay
            compiled(*args)
        torch.cuda.synchronize()
        with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as prof:
            compiled(*args)
            torch.cuda.synchronize()
    return sum(1 for e in prof.events() if "cudaGraphLaunch" in e.name)


@pytest.mark.parametrize(
    "config",
    [
        CompileConfig(options={"triton.cudagraphs": True}),
        CompileConfig(mode="reduce-overhead", options={"triton.cudagraphs": True}),
    ],
    ids=["triton.cudagraphs", "reduce-overhead"],
)
def test_cuda_graphs_replay(config: CompileConfig) -> None:
    """CUDA graphs change how the code runs: the call replays a graph, without them none."""
    model, (x,) = on("cuda", Pointwise(), (1024, 1024))
    torch._dynamo.reset()
    assert _graph_launches(compile_module(copy.deepcopy(model), config), x) >= 1
    torch._dynamo.reset()
    assert _graph_launches(compile_module(copy.deepcopy(model), CompileConfig()), x) == 0


def test_cuda_graphs_replay_a_model_called_with_a_python_float() -> None:
    """Dynamo reads triton.cudagraphs while it traces: only when it sees it does it keep a
    float argument a constant, instead of a CPU scalar tensor that makes Inductor skip CUDA
    graphs. Passed only as an option, the graph would run without them."""
    model, (x,) = on("cuda", FloatScaled(), (1024, 1024))
    config = CompileConfig(mode="reduce-overhead", options={"triton.cudagraphs": True})
    torch._dynamo.reset()
    assert _graph_launches(compile_module(copy.deepcopy(model), config), x, 0.5) >= 1


def test_cuda_graphs_survive_a_warm_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """AOTAutograd decides on CUDA graphs when it loads a cached graph, possibly outside
    Inductor's options: a second compile, from the caches the first filled, must still replay
    a graph."""
    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", str(tmp_path))
    model, (x,) = on("cuda", Pointwise(), (1024, 1024))
    config = CompileConfig(mode="reduce-overhead", options={"triton.cudagraphs": True})
    for _ in range(2):  # cold, then from the caches the first compile filled
        torch._dynamo.reset()
        assert _graph_launches(compile_module(copy.deepcopy(model), config), x) >= 1


@pytest.mark.slow  # EXHAUSTIVE compiles every GEMM config: past 2 minutes on an H200
def test_the_gemm_search_space_benchmarks_more_choices(capfd: pytest.CaptureFixture[str]) -> None:
    from torch._inductor import utils

    fresh_cache = getattr(utils, "fresh_cache", None) or utils.fresh_inductor_cache  # torch < 2.8
    model, (x,) = on("cuda", Mm(512), (512, 512))
    counts = []
    for space in ("DEFAULT", "EXHAUSTIVE"):
        torch._dynamo.reset()
        options = {**TRITON_GEMM, "max_autotune_gemm_search_space": space}
        with fresh_cache(), torch.no_grad():
            compile_module(copy.deepcopy(model), config({"options": options}))(x)
        err = capfd.readouterr().err
        counts.append(sum(int(n) for n in re.findall(r"precompiling for (\d+) choices", err)))
    assert 0 < counts[0] < counts[1], counts
