"""autotune.runtime.openvino_backend: options of the openvino backend and its silent fallbacks."""

from __future__ import annotations

import ctypes
import subprocess
import sys

import pytest
import torch
from torch import nn

pytest.importorskip("openvino")

from autotune.runtime import openvino_backend as ov  # noqa: E402
from autotune.trials import _openvino_watch  # noqa: E402


class MLP(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.a = nn.Linear(8, 16)
        self.b = nn.Linear(16, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.b(torch.relu(self.a(x)))


class Lgamma(MLP):
    """aten.lgamma is not in openvino's op_support: it is left to torch between two partitions."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.b(torch.lgamma(self.a(x).abs() + 1).relu())


@pytest.fixture(autouse=True)
def _fresh() -> None:
    torch._dynamo.reset()
    ov.reset()


def _run(
    model: nn.Module, x: torch.Tensor, **kwargs: object
) -> tuple[_openvino_watch.ConversionReport, torch.Tensor]:
    with _openvino_watch.watch() as report, torch.no_grad():
        y = torch.compile(model, backend="openvino", **kwargs)(x)
    return report, y


# --- options ---------------------------------------------------------------------------------


def test_version() -> None:
    assert ov.version() is not None
    assert ov.version().startswith("20")  # type: ignore[union-attr]


def test_valid_options_have_no_problems() -> None:
    options = {
        "PERFORMANCE_HINT": "THROUGHPUT",
        "INFERENCE_PRECISION_HINT": "bf16",
        "NUM_STREAMS": "AUTO",
        "INFERENCE_NUM_THREADS": 2,
        "device": "CPU",
        "model_caching": False,
        "aot_autograd": True,
    }
    assert ov.option_problems(options) == []
    assert ov.option_problems({"NUM_STREAMS": 4}) == []
    assert ov.option_problems({}) == []


@pytest.mark.parametrize(
    ("options", "expected"),
    [
        ({"PERFORMANCE_HINT": "FAST"}, "openvino.PERFORMANCE_HINT: expected one of 'LATENCY', "),
        ({"INFERENCE_PRECISION_HINT": "f16"}, "expected one of 'f32', 'bf16', got 'f16'"),
        ({"NUM_STREAMS": 0}, "openvino.NUM_STREAMS: expected one of 'AUTO' or a positive int"),
        ({"NUM_STREAMS": True}, "got True"),
        ({"NUM_STREAMS": "4"}, "got '4'"),
        ({"model_caching": 1}, "openvino.model_caching: expected a bool, got 1"),
        ({"performance_hint": "LATENCY"}, "unknown option; did you mean PERFORMANCE_HINT?"),
        ({"NUM_STREAM": 2}, "did you mean NUM_STREAMS?"),
        ({"cache_dir": "/tmp/x"}, "openvino.cache_dir: not allowed"),
        ({"config": {"CACHE_DIR": "/tmp/x"}}, "openvino.config: not allowed"),
        ({"disabled_ops": []}, "openvino.disabled_ops: not allowed"),
    ],
)
def test_option_problems(options: dict, expected: str) -> None:
    problems = ov.option_problems(options)
    assert len(problems) == 1
    assert expected in problems[0]


def test_option_problems_lists_every_problem() -> None:
    problems = ov.option_problems({"PERFORMANCE_HINT": 1, "zzz_unknown": 1, "NUM_STREAMS": -1})
    assert len(problems) == 3
    assert ov.option_problems(["PERFORMANCE_HINT"]) == [
        "openvino: options must be a dict, got list"
    ]


def test_compile_options_shape() -> None:
    flat = {"PERFORMANCE_HINT": "LATENCY", "NUM_STREAMS": 1, "model_caching": True}
    out = ov.compile_options(flat, "/somewhere/ov")
    assert out == {
        "device": "CPU",
        "config": {"PERFORMANCE_HINT": "LATENCY", "NUM_STREAMS": "1"},
        "model_caching": True,
        "cache_dir": "/somewhere/ov",
    }
    assert ov.compile_options({}, "/somewhere") == {"device": "CPU", "config": {}}
    assert ov.compile_options({"device": "GPU", "aot_autograd": True}, None) == {
        "device": "GPU",
        "config": {},
        "aot_autograd": True,
    }
    # the backend writes CACHE_DIR into "config": every call gives a fresh dict
    assert ov.compile_options(flat, "/a")["config"] is not ov.compile_options(flat, "/a")["config"]


def test_compile_options_refuses() -> None:
    with pytest.raises(ValueError, match="PERFORMANCE_HINT"):
        ov.compile_options({"PERFORMANCE_HINT": "FAST"}, None)
    with pytest.raises(ValueError, match="needs a cache_dir"):
        ov.compile_options({"model_caching": True}, None)


def test_a_config_turning_model_caching_on_is_refused_before_any_compile(tmp_path) -> None:
    """Issue 41, item 9: such an entry validated, then apply raised a bare ValueError (apply
    gives the backend no cache folder); now it is one refusal, with the reason."""
    import autotune
    from autotune.runtime import CompileConfig, ConfigError

    config = CompileConfig(backend="openvino", options={"model_caching": True})
    assert ov.option_problems(config.options) == [
        f"openvino.model_caching: not allowed: {ov._NOT_FROM_A_CONFIG['model_caching']}"
    ]
    with pytest.raises(ConfigError, match="openvino.model_caching: not allowed: autotune gives"):
        autotune.apply(MLP().eval(), config)
    assert ov.option_problems({"model_caching": False}) == []


def test_importing_registers_nothing() -> None:
    import importlib
    import sys

    sys.modules.pop("autotune.runtime.openvino_backend", None)
    before = set(sys.modules)
    importlib.import_module("autotune.runtime.openvino_backend")
    assert not any(m.startswith("openvino") for m in set(sys.modules) - before)


# --- fallback detection ----------------------------------------------------------------------


def test_mlp_fully_converted() -> None:
    model = MLP().eval()
    x = torch.randn(2, 8)
    options = ov.compile_options({"INFERENCE_PRECISION_HINT": "f32", "NUM_STREAMS": 1}, None)
    report, y = _run(model, x, options=options)
    assert report.known
    assert report.graphs_seen == 1
    assert report.graphs_converted == 1
    assert report.graphs_fallback == []
    assert report.ops_openvino > 0 and report.ops_torch == 0
    assert report.share == 1.0
    assert report.fallback is False
    assert report.graphs[0].partitions == 1
    torch.testing.assert_close(y, model(x), atol=1e-5, rtol=1e-5)  # f32 reached OpenVINO


def test_unsupported_op_left_to_torch() -> None:
    model = Lgamma().eval()
    x = torch.randn(2, 8)
    report, y = _run(model, x)
    (graph,) = report.graphs
    assert graph.fate == "partial"
    assert graph.partitions == 2  # linear+abs+add | lgamma in torch | relu+linear
    assert graph.partitions_failed == 0
    assert report.ops_torch == 1
    assert report.ops_openvino >= 4
    assert report.graphs_converted == 0 and report.graphs_fallback == []
    assert report.fallback is True
    assert 0.5 < report.share < 1.0  # type: ignore[operator]
    torch.testing.assert_close(y, model(x), atol=5e-2, rtol=5e-2)


def test_custom_op_left_to_torch() -> None:
    name = "autotune_test_ov::twice"
    if not hasattr(torch.ops.autotune_test_ov, "twice"):
        torch.library.define(name, "(Tensor x) -> Tensor")
        torch.library.impl(name, "CPU")(lambda x: x * 2)
        torch.library.register_fake(name)(lambda x: torch.empty_like(x))

    def fn(x: torch.Tensor) -> torch.Tensor:
        return torch.ops.autotune_test_ov.twice(x.relu() + 1).tanh() * 3

    report, y = _run(fn, torch.randn(4, 4))  # type: ignore[arg-type]
    assert report.graphs[0].fate == "partial"
    assert report.ops_torch == 1
    assert report.fallback is True


def test_conversion_failure_falls_back_to_eager() -> None:
    # openvino 2026.4's openvino_compile has no bfloat16 in its dtype map: the partition raises
    # KeyError on its first call and runs in eager torch from then on.
    model = MLP().eval().to(torch.bfloat16)
    x = torch.randn(2, 8, dtype=torch.bfloat16)
    report, y = _run(model, x)
    (graph,) = report.graphs
    assert graph.fate == "eager"
    assert graph.partitions == 1 and graph.partitions_failed == 1
    assert graph.error is not None and "bfloat16" in graph.error
    assert report.ops_openvino == 0 and report.ops_torch > 0
    assert report.share == 0.0
    assert report.fallback is True
    assert report.graphs_fallback == [graph]
    torch.testing.assert_close(y, model(x))


@pytest.mark.slow
def test_whole_graph_falls_back_to_inductor() -> None:
    # Any exception while partitioning hands the whole graph to Inductor; an unknown name in
    # the backend's own disabled_ops option (which autotune refuses) is one.
    report, _ = _run(MLP().eval(), torch.randn(2, 8), options={"disabled_ops": ["no.such_op"]})
    (graph,) = report.graphs
    assert graph.fate == "inductor"
    assert graph.error is not None and graph.error.startswith("KeyError")
    assert graph.ops_openvino == 0 and graph.ops_torch > 0
    assert report.share == 0.0 and report.fallback is True


def test_watch_restores_internals() -> None:
    import openvino.frontend.pytorch.torchdynamo.backend as backend
    import openvino.frontend.pytorch.torchdynamo.execute as execute

    before = (backend.fx_openvino, backend.Partitioner, backend.compile_fx)
    before_execute = execute.openvino_execute
    with _openvino_watch.watch():
        assert backend.fx_openvino is not before[0]
    assert (backend.fx_openvino, backend.Partitioner, backend.compile_fx) == before
    assert execute.openvino_execute is before_execute


def test_watch_degrades_to_unknown(monkeypatch: pytest.MonkeyPatch) -> None:
    import openvino.frontend.pytorch.torchdynamo.backend as backend

    monkeypatch.delattr(backend, "Partitioner")
    with _openvino_watch.watch() as report:
        pass
    assert report.known is False
    assert "Partitioner" in (report.why_unknown or "")
    assert report.share is None and report.fallback is None
    assert "unknown" in report.summary()


def test_nothing_compiled_inside_watch() -> None:
    with _openvino_watch.watch() as report:
        pass
    assert report.known and report.graphs_seen == 0
    assert report.share is None and report.fallback is False


# --- model caching ---------------------------------------------------------------------------


def test_model_caching_writes_into_cache_dir(tmp_path, monkeypatch) -> None:
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    monkeypatch.chdir(cwd)  # the backend's own default is ./cache
    cache_dir = tmp_path / "ov-cache"
    options = ov.compile_options({"model_caching": True}, str(cache_dir))
    model = MLP().eval()
    x = torch.randn(2, 8)
    report, y = _run(model, x, options=options)
    assert report.graphs[0].fate == "openvino" and not report.graphs[0].cached
    assert list((cache_dir / "model").glob("*.xml")) and list((cache_dir / "model").glob("*.bin"))
    assert list(cwd.iterdir()) == []

    # A second compile finds the converted model on disk. openvino 2026.4 with torch 2.13 then
    # fails in openvino_compile (UnboundLocalError on `decoder`: it reads the .xml back but
    # still uses the decoder it did not build) and runs the partition in eager torch; watch
    # must say so. A fixed openvino reads it back and runs it in OpenVINO.
    torch._dynamo.reset()
    ov.reset()
    report, y2 = _run(
        model, x, options=ov.compile_options({"model_caching": True}, str(cache_dir))
    )
    (graph,) = report.graphs
    if graph.fate == "eager":
        assert "decoder" in (graph.error or "") and report.fallback is True
    else:
        assert graph.fate == "openvino" and report.share == 1.0
    torch.testing.assert_close(y2, y, atol=5e-2, rtol=5e-2)
    assert list(cwd.iterdir()) == []


# --- the thread's signal stack ---------------------------------------------------------------


def _signal_stack() -> tuple[int, int, int]:
    stack = ov._Stack()
    assert ctypes.CDLL(None, use_errno=True).sigaltstack(None, ctypes.byref(stack)) == 0
    return stack.ss_sp or 0, stack.ss_flags, stack.ss_size


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="sigaltstack is read on Linux")
def test_a_region_applied_for_openvino_leaves_the_threads_signal_stack_as_it_found_it() -> None:
    import autotune
    from autotune.runtime import CompileConfig

    before = _signal_stack()
    model = autotune.apply(MLP().eval(), CompileConfig(backend="openvino"), cache=False)
    with torch.no_grad():
        model(torch.randn(2, 8))
    assert _signal_stack() == before

    # What it is kept from: openvino's CPU plugin moves the thread to a stack of its own for
    # each model it compiles (the conftest fixture puts it back after this test). If this
    # fails, openvino no longer does, and signal_stack_kept can go.
    torch._dynamo.reset()
    with torch.no_grad():
        torch.compile(MLP().eval(), backend="openvino")(torch.randn(2, 8))
    assert _signal_stack() != before, "openvino left the thread's signal stack alone"


CTRL_C_AFTER_FREEING = """
import gc, os, signal, time, torch
import autotune
from autotune.runtime import openvino_backend as ov
from autotune.runtime.config import CompileConfig
from torch import nn

def mlp():
    return nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 4)).eval()

with torch.no_grad():
    for _ in range(2):  # two models compiled, each freed after the next was made
        autotune.apply(mlp(), CompileConfig(backend="openvino"), cache=False)(torch.randn(2, 8))
        torch._dynamo.reset()
ov.reset()
gc.collect()
# Ctrl-C as Python's own handler takes it (a pytest-xdist worker starts its children with SIGINT
# ignored, which Python then leaves alone).
signal.signal(signal.SIGINT, signal.default_int_handler)
try:
    os.kill(os.getpid(), signal.SIGINT)
    time.sleep(5)
except KeyboardInterrupt:
    print("interrupted cleanly")
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="OpenVINO's setup is Linux-only")
def test_ctrl_c_after_openvino_models_are_freed_is_a_keyboard_interrupt(tmp_path) -> None:
    # Without signal_stack_kept this process ended with SIGSEGV (openvino 2026.4, torch 2.13,
    # 2-core EPYC): the second model's destructor put back the first's stack, already freed.
    done = subprocess.run(
        [sys.executable, "-X", "faulthandler", "-c", CTRL_C_AFTER_FREEING],
        capture_output=True, text=True, timeout=300, cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    assert "interrupted cleanly" in done.stdout
