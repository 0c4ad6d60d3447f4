"""The openvino options autotune searches take effect: each is proven by what OpenVINO or the
backend then does, not by having been passed (see tests/space_tests/knob_probes.py LEVERS)."""

from __future__ import annotations

import warnings

import pytest
import torch

import autotune

pytest.importorskip("openvino")

from autotune.runtime import openvino_backend as ov  # noqa: E402
from autotune.trials import _openvino_watch  # noqa: E402


class Conv(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 4, 3)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.conv(x).relu() * 2


@pytest.fixture(autouse=True)
def _fresh() -> None:
    torch._dynamo.reset()
    ov.reset()


def _compiled_models() -> list:  # type: ignore[type-arg]
    from openvino.frontend.pytorch.torchdynamo import execute

    return list(execute.compiled_cache.values())


@pytest.mark.parametrize(("hint", "streams"), [("LATENCY", 1), ("THROUGHPUT", None)])
def test_the_performance_hint_reaches_the_compiled_model(hint: str, streams: int | None) -> None:
    model = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU(), torch.nn.Linear(32, 8))
    config = {"backend": "openvino", "dynamic": False, "options": {"PERFORMANCE_HINT": hint}}
    compiled = autotune.apply(model.eval(), config)
    with torch.no_grad():
        compiled(torch.randn(4, 16))
    (model_,) = _compiled_models()
    assert str(model_.get_property("PERFORMANCE_HINT")) == hint
    assert "float32" in str(model_.get_property("INFERENCE_PRECISION_HINT"))  # pinned
    if streams is not None:
        assert int(model_.get_property("NUM_STREAMS")) == streams


def test_aot_autograd_compiles_what_the_default_retrace_cannot() -> None:
    x = torch.randn(1, 3, 16, 16)
    plain = autotune.apply(Conv().eval(), {"backend": "openvino", "dynamic": False})
    with warnings.catch_warnings(), torch.no_grad(), pytest.raises(Exception, match="sources"):
        warnings.simplefilter("ignore")
        plain(x)  # benchmarks/results/openvino_failures.md: the make_fx retrace breaks guards
    torch._dynamo.reset()
    ov.reset()
    config = {"backend": "openvino", "dynamic": False, "options": {"aot_autograd": True}}
    model = Conv().eval()
    with torch.no_grad():
        expected = model(x)  # apply compiles the model in place: its eager output first
    aot = autotune.apply(model, config)
    with _openvino_watch.watch() as report, torch.no_grad():
        out = aot(x)
    assert report.share == 1.0 and not report.fallback, report.summary()
    torch.testing.assert_close(out, expected, rtol=1e-4, atol=1e-4)
