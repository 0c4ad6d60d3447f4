from __future__ import annotations

import warnings
from collections.abc import Iterator
from pathlib import Path

import pytest
import torch
from torch._dynamo.eval_frame import OptimizedModule
from torch._dynamo.utils import counters

import autotune
from autotune.runtime import apply as apply_module
from autotune.runtime.config import (
    BestConfig,
    CompileConfig,
    ConfigError,
    EnvironmentMismatchWarning,
    Scope,
    ScopeError,
)
from autotune.runtime.fingerprint import environment_fingerprint, model_fingerprint


class Probe(torch.nn.Module):
    """Records, at each run of its forward, whether Dynamo was tracing it."""

    def __init__(self) -> None:
        super().__init__()
        self.seen: list[bool] = []

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self.seen.append(torch.compiler.is_compiling())
        return x * 2


class Block(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.attn = torch.nn.Linear(8, 8)
        self.probe = Probe()
        self.mlp = torch.nn.Sequential(
            torch.nn.Linear(8, 16), torch.nn.GELU(), torch.nn.Linear(16, 8)
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + self.mlp(self.probe(torch.relu(self.attn(x))))


class Net(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.layers = torch.nn.ModuleList([Block(), Block()])
        self.heads = torch.nn.ModuleDict({"cls": torch.nn.Linear(8, 3)})

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for layer in self.layers:
            x = layer(x)
        return self.heads["cls"](x)


@pytest.fixture(autouse=True)
def _fresh_dynamo(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setattr(apply_module, "_WARNED", set())
    torch._dynamo.reset()
    counters.clear()
    yield
    torch._dynamo.reset()


def _net() -> Net:
    torch.manual_seed(0)
    return Net().eval()


def _probe(model: torch.nn.Module, path: str = "layers.0.probe") -> Probe:
    # Looks through the wrappers apply() puts in place (their `_orig_mod`).
    module = model
    for part in path.split("."):
        module = module.get_submodule(part)
        while isinstance(module, OptimizedModule):
            module = module._orig_mod
    assert isinstance(module, Probe)
    return module


def _x(batch: int = 4) -> torch.Tensor:
    return torch.randn(batch, 8, generator=torch.Generator().manual_seed(1))


def _compile_best(model: torch.nn.Module, **overrides: object) -> BestConfig:
    fields: dict[str, object] = {
        "decision": "compile",
        "reason": "test",
        "config": CompileConfig(backend="eager"),
        "environment": environment_fingerprint("cpu"),
        "model": model_fingerprint(model),
    }
    return BestConfig(**{**fields, **overrides})  # type: ignore[arg-type]


def test_apply_whole_model_matches_eager() -> None:
    model, x = _net(), _x()
    expected = model(x)
    compiled = autotune.apply(model, CompileConfig(backend="aot_eager", dynamic=False))
    assert isinstance(compiled, OptimizedModule)
    torch.testing.assert_close(compiled(x), expected, rtol=1e-5, atol=1e-6)
    assert counters["stats"]["unique_graphs"] == 1


def test_do_not_compile_returns_the_same_object(tmp_path: Path) -> None:
    model = _net()
    best = BestConfig(decision="do_not_compile", reason="eager was fastest")
    assert autotune.apply(model, best) is model
    best.dump(tmp_path / "best_config.json")
    assert autotune.apply(model, tmp_path / "best_config.json") is model
    assert autotune.apply(model, str(tmp_path / "best_config.json")) is model
    assert autotune.apply(model, best.to_dict()) is model
    assert counters["stats"]["unique_graphs"] == 0


def test_apply_reads_a_file_and_a_dict(tmp_path: Path) -> None:
    model, x = _net(), _x()
    expected = model(x)
    _compile_best(model).dump(tmp_path / "best.json")
    compiled = autotune.apply(model, tmp_path / "best.json")
    torch.testing.assert_close(compiled(x), expected)
    again = autotune.apply(_net(), {"backend": "eager", "scope": {"compile": ["layers.1"]}})
    assert isinstance(again.get_submodule("layers.1"), OptimizedModule)
    with pytest.raises(TypeError, match="config must be a path, BestConfig"):
        autotune.apply(model, 42)  # type: ignore[arg-type]


def test_builtin_child_in_a_sequential_really_compiles() -> None:
    model = torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.ReLU(), torch.nn.Linear(8, 2))
    x = _x()
    expected = model(x)
    out = autotune.apply(model, CompileConfig(backend="eager", scope=Scope(compile=("0",))))
    assert out is model
    assert isinstance(model[0], OptimizedModule)
    torch.testing.assert_close(model(x), expected)
    assert counters["stats"]["unique_graphs"] == 1
    assert counters["stats"]["calls_captured"] == 1  # the linear; relu and the head stay eager


def test_regional_scope_replaces_list_and_dict_children() -> None:
    model, x = _net(), _x()
    expected = model(x)
    scope = Scope(compile=("layers.0", "layers.1", "heads.cls"))
    assert autotune.apply(model, CompileConfig(backend="eager", scope=scope)) is model
    assert all(isinstance(layer, OptimizedModule) for layer in model.layers)
    assert isinstance(model.heads["cls"], OptimizedModule)
    torch.testing.assert_close(model(x), expected)
    assert counters["stats"]["unique_graphs"] >= 2


def test_disable_keeps_a_child_eager() -> None:
    traced = _net()
    autotune.apply(traced, CompileConfig(backend="eager"))(_x())
    assert _probe(traced).seen == [True]
    torch._dynamo.reset()
    counters.clear()

    model, x = _net(), _x()
    expected = model(x)
    probe = _probe(model)
    probe.seen.clear()
    config = CompileConfig(backend="eager", scope=Scope(disable=("layers.0.probe",)))
    compiled = autotune.apply(model, config)
    torch.testing.assert_close(compiled(x), expected)
    compiled(x)
    assert probe.seen == [False, False]
    reasons = " ".join(counters["graph_break"])
    assert "torch.compiler.disable" in reasons


def test_disable_inside_a_regional_scope() -> None:
    model, x = _net(), _x()
    expected = model(x)
    scope = Scope(compile=("layers.0",), disable=("layers.0.probe",))
    autotune.apply(model, CompileConfig(backend="eager", scope=scope))
    probe = _probe(model)
    assert isinstance(model.layers[0], OptimizedModule)
    assert isinstance(model.layers[0]._orig_mod.probe, OptimizedModule)
    probe.seen.clear()
    torch.testing.assert_close(model(x), expected)
    assert probe.seen == [False]


def test_wrong_scope_path_raises_and_leaves_the_model_alone() -> None:
    model = _net()
    config = CompileConfig(backend="eager", scope=Scope(compile=("layers.0", "layer.1")))
    with pytest.raises(ScopeError) as info:
        autotune.apply(model, config)
    message = str(info.value)
    assert "'layer.1': nearest existing paths: 'layers.1'" in message
    assert "Net does not have" in message and "tuned for a different model" in message
    assert isinstance(info.value, ConfigError)
    assert not isinstance(model.layers[0], OptimizedModule)


def test_dynamo_settings_apply_during_the_call_only() -> None:
    default_limit = torch._dynamo.config.recompile_limit
    shapes = [_x(batch) for batch in (1, 2, 3)]
    plain = autotune.apply(_net(), CompileConfig(backend="eager", dynamic=False))
    for x in shapes:
        plain(x)
    assert counters["stats"]["unique_graphs"] == 3  # one graph per static shape
    torch._dynamo.reset()
    counters.clear()

    config = CompileConfig(backend="eager", dynamic=False, dynamo={"recompile_limit": 1})
    limited = autotune.apply(_net(), config)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        outputs = [limited(x) for x in shapes]
    assert counters["stats"]["unique_graphs"] == 1  # the limit held: later shapes ran eager
    assert torch._dynamo.config.recompile_limit == default_limit
    torch.testing.assert_close(outputs[2], _net()(shapes[2]))


def test_knobs_missing_from_the_installed_torch_are_config_errors() -> None:
    config = CompileConfig(
        options={"not_a_knob": 1, "freezing": "yes", "max_autotune_gemm_search_space": "FAST"},
        dynamo={"recompile_limt": 3},
    )
    with pytest.raises(ConfigError) as info:
        autotune.apply(_net(), config)
    message = str(info.value)
    assert f"does not fit the installed torch {torch.__version__}" in message
    assert "options.not_a_knob: unknown to torch" in message
    assert "options.freezing: expected bool, got 'yes'" in message
    assert "options.max_autotune_gemm_search_space: expected Literal" in message
    assert "dynamo.recompile_limt: unknown to torch" in message
    assert "did you mean 'recompile_limit'?" in message
    with pytest.raises(ConfigError, match="'nope' is not a registered torch.compile backend"):
        autotune.apply(_net(), CompileConfig(backend="nope"))


def test_environment_mismatch_warns_once_and_still_applies() -> None:
    model, x = _net(), _x()
    expected = model(x)
    env = {**environment_fingerprint("cpu"), "torch": "1.0.0", "device_name": "Other CPU"}
    best = _compile_best(model, environment=env)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        first = autotune.apply(model, best)
        second = autotune.apply(_net(), best)
    mismatches = [w for w in caught if issubclass(w.category, EnvironmentMismatchWarning)]
    assert len(mismatches) == 1
    message = str(mismatches[0].message)
    assert "torch: tuned with '1.0.0'" in message
    assert "device_name: tuned with 'Other CPU'" in message
    assert isinstance(first, OptimizedModule) and isinstance(second, OptimizedModule)
    torch.testing.assert_close(first(x), expected)


def test_model_mismatch_warns_and_matching_environment_is_silent() -> None:
    model = _net()
    best = _compile_best(model)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        autotune.apply(model, best)
        autotune.apply(torch.nn.Linear(8, 8), best, check_environment=False)
    with pytest.warns(EnvironmentMismatchWarning, match="model: tuned on structure"):
        autotune.apply(torch.nn.Linear(8, 8), best)


@pytest.mark.slow
# Inductor's own imports trip torch's deprecation of torch.jit.script_method.
@pytest.mark.filterwarnings("ignore:`torch.jit.script_method` is deprecated:DeprecationWarning")
def test_inductor_compile_with_options_and_dynamo_settings() -> None:
    from torch._inductor import metrics

    metrics.reset()
    model, x = _net(), _x()
    expected = model(x)
    config = CompileConfig(
        backend="inductor",
        dynamic=False,
        options={"max_fusion_size": 32, "epilogue_fusion": True},
        dynamo={"recompile_limit": 4},
    )
    compiled = autotune.apply(model, config)
    with torch.no_grad():
        torch.testing.assert_close(compiled(x), expected, rtol=1e-4, atol=1e-5)
    assert metrics.generated_kernel_count > 0
