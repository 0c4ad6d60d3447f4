"""Shape distributions: every trial runs every input; recompiles, per-shape latency, storms."""

from __future__ import annotations

import pytest

from autotune.runtime.config import CompileConfig
from autotune.trials import MeasureSettings, PreloadedHostRunner, TrialSpec

FAST = MeasureSettings(warmup=1, min_rounds=5, max_rounds=20, target_seconds=0.3)


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    cache = str(tmp_path_factory.mktemp("cache"))
    with PreloadedHostRunner(log_dir=cache) as warm:

        def go(config: CompileConfig):
            spec = TrialSpec(model_path=_shapes(), device="cpu", config=config.to_dict(),
                             measure=FAST, cache_dir=cache)  # fmt: skip
            return warm.run(spec)

        yield go


def _shapes() -> str:
    from pathlib import Path

    return str(Path(__file__).parents[1] / "fixtures" / "models" / "shapes.py")


def test_recompiles_fall_with_dynamic_true(run):
    static = run(CompileConfig(backend="aot_eager", dynamic=False))
    dynamic = run(CompileConfig(backend="aot_eager", dynamic=True))
    assert static.status == dynamic.status == "ok", (static.error, dynamic.error)
    assert static.recompiles == 2 and static.graphs == 3  # one graph per batch size
    # dynamic: one graph for both positional calls; the keyword call is another frame guard
    assert dynamic.recompiles < static.recompiles and dynamic.graphs < static.graphs


def test_each_shape_gets_its_own_latency(run):
    result = run(CompileConfig(backend="aot_eager", dynamic=True))
    assert [s["inputs"] for s in result.per_shape] == result.inputs
    assert len(result.inputs) == 3
    for shape in result.per_shape:
        assert shape["latency_median_s"] > 0 and shape["eager_latency_median_s"] > 0
        assert shape["speedup_vs_eager"] > 0


def test_hitting_the_recompile_limit_is_a_recompile_storm(run):
    config = CompileConfig(backend="aot_eager", dynamic=False, dynamo={"recompile_limit": 2})
    result = run(config)
    assert result.failure_kind == "recompile_storm", result.error_tail
    assert "recompile limit" in result.error and "dynamic=true" in result.error
