from __future__ import annotations

import functools
import inspect
import os
import platform
import subprocess
import sys
import threading
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import torch
from torch._dynamo.backends import registry
from torch._dynamo.eval_frame import OptimizedModule
from torch._dynamo.utils import counters

import autotune
from autotune.runtime import _calls, _parts
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


# Dynamo settings the recording backend reports, as each compiling thread sees them.
_WATCHED = ("capture_scalar_outputs", "automatic_dynamic_shapes", "recompile_limit")
_PER_THREAD = _calls.config_is_per_thread()
_COMPILE_PARAMETERS = frozenset(inspect.signature(torch.compile).parameters)


@torch.compiler.disable
def _run_eagerly(step: Callable[[], object]) -> None:
    step()


class Gate(torch.nn.Module):
    """``x + 1``, then ``step()`` run eagerly, then ``x * 2``.

    The eager step is a graph break: the first call compiles one graph before it and one after
    it, and ``step`` runs outside Dynamo's compile lock, inside the call.
    """

    def __init__(self, step: Callable[[], object]) -> None:
        super().__init__()
        self.step = step

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + 1
        _run_eagerly(self.step)
        return x * 2


@pytest.fixture(autouse=True)
def _fresh_dynamo(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setattr(apply_module, "_WARNED", set())
    monkeypatch.setattr(_calls, "_SERIAL_WARNED", threading.Event())
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


def _in_threads(calls: dict[str, Callable[[], object]]) -> dict[str, object]:
    """Runs each call in its own thread, named after its key; their results, by key."""
    results: dict[str, object] = {}
    errors: list[BaseException] = []

    def run(name: str) -> None:
        try:
            results[name] = calls[name]()
        except BaseException as error:  # re-raised in the test's thread
            errors.append(error)

    threads = [threading.Thread(target=run, args=(name,), name=name) for name in calls]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    if errors:
        raise errors[0]
    assert not any(thread.is_alive() for thread in threads)
    return results


@pytest.fixture
def recorded(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, dict[str, object]]]:
    """Registers the backend ``"autotune_test_recorder"``, which records the compiling thread
    and the ``_WATCHED`` settings it sees for every graph, then runs the graph as it is."""
    seen: list[tuple[str, dict[str, object]]] = []
    # Registered into copies of the registry, restored afterwards. The built-in backends are
    # loaded into the real one first: torch loads them once, lazily.
    torch._dynamo.list_backends()
    monkeypatch.setattr(registry, "_BACKENDS", dict(registry._BACKENDS))
    monkeypatch.setattr(registry, "_COMPILER_FNS", dict(registry._COMPILER_FNS))

    def recorder(gm: torch.fx.GraphModule, example_inputs: list[torch.Tensor]) -> Callable:
        settings = {key: getattr(torch._dynamo.config, key) for key in _WATCHED}
        seen.append((threading.current_thread().name, settings))
        return gm.forward

    torch._dynamo.register_backend(recorder, name="autotune_test_recorder")
    return seen


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
    keys = list(model.state_dict())
    compiled = autotune.apply(model, CompileConfig(backend="aot_eager", dynamic=False))
    assert compiled is model and list(model.state_dict()) == keys  # compiled in place
    torch.testing.assert_close(compiled(x), expected, rtol=1e-5, atol=1e-6)
    assert counters["stats"]["unique_graphs"] == 1


class Decoder(torch.nn.Module):
    """A model with a ``generate()`` loop that calls ``self(...)``, as transformers' do; each
    step records whether Dynamo compiled it (a compiled call replays the record it traced)."""

    def __init__(self) -> None:
        super().__init__()
        self.step = torch.nn.Linear(8, 8)
        self.compiled: list[bool] = []

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self.compiled.append(torch.compiler.is_compiling())
        return torch.tanh(self.step(x))

    def generate(self, x: torch.Tensor, tokens: int) -> list[torch.Tensor]:
        out = []
        for _ in range(tokens):
            x = self(x)
            out.append(x)
        return out


def test_generate_on_the_applied_model_runs_the_compiled_code() -> None:
    """Issue 43: the OptimizedModule apply used to return for a whole-model scope reached the
    original module's ``generate``, whose ``self(...)`` ran eager: no graph in the loop."""
    torch.manual_seed(0)
    model, x = Decoder().eval(), torch.randn(2, 8)
    with torch.no_grad():
        expected = model.generate(x, 5)
        assert model.compiled == [False] * 5
        model.compiled.clear()
        fast = autotune.apply(model, CompileConfig(backend="eager", dynamic=False))
        tokens = fast.generate(x, 5)
    assert fast is model and model.compiled == [True] * 5  # every step ran compiled
    for got, want in zip(tokens, expected, strict=True):
        torch.testing.assert_close(got, want)


def test_a_whole_model_whose_forward_is_torchs_own_is_wrapped_and_compiles() -> None:
    """``nn.Sequential.compile()`` compiles no frame (Dynamo skips torch's own files at the
    top): such a model is wrapped, as before."""
    model, x = torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.ReLU()), torch.randn(2, 8)
    compiled = autotune.apply(model, CompileConfig(backend="eager", dynamic=False))
    assert isinstance(compiled, OptimizedModule)
    compiled(x)
    assert counters["stats"]["unique_graphs"] == 1


def test_do_not_compile_returns_the_same_object(tmp_path: Path) -> None:
    model = _net()
    tie = BestConfig(decision="inconclusive", reason="inconclusive: eager ships")
    assert autotune.apply(model, tie) is model  # an inconclusive file that ships eager
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
    with pytest.raises(TypeError, match="config must be a path, ConfigFile, BestConfig"):
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


def test_a_recompile_limit_above_the_default_compiles_every_shape_of_a_wide_traffic() -> None:
    # the built-in spaces' [dynamo] recompile_limit: 8 (torch's default) or 64
    shapes = [_x(batch) for batch in range(1, 11)]  # ten static shapes
    for limit, graphs in ((8, 8), (64, 10)):
        torch._dynamo.reset()
        counters.clear()
        config = CompileConfig(backend="eager", dynamic=False, dynamo={"recompile_limit": limit})
        served = autotune.apply(_net(), config)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            for x in shapes:
                served(x)
        assert counters["stats"]["unique_graphs"] == graphs  # past 8, the rest ran eager


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
    assert first is model and second is not model  # each compiled in place
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


@pytest.mark.skipif(not _PER_THREAD, reason="this torch keeps Dynamo config process-wide")
def test_two_tuned_models_in_two_threads_compile_with_their_own_settings(
    recorded: list[tuple[str, dict[str, object]]],
) -> None:
    meet = threading.Barrier(2, timeout=60)
    dynamo = {
        "a": {"capture_scalar_outputs": True, "recompile_limit": 3},
        "b": {"automatic_dynamic_shapes": False, "recompile_limit": 5},
    }
    models = {
        name: autotune.apply(
            Gate(meet.wait),
            # dynamic=None: dynamic=False would patch automatic_dynamic_shapes itself.
            CompileConfig(backend="autotune_test_recorder", dynamic=None, dynamo=settings),
            allow_unsafe_knobs=["backend.autotune_test_recorder"],  # a backend of this test's
        )
        for name, settings in dynamo.items()
    }
    # Both models run Gate.forward, whose code object holds Dynamo's graphs: distinct shapes
    # keep one model from reusing the other's graph instead of compiling its own.
    inputs = {"a": _x(2), "b": _x(3)}
    outputs = _in_threads({name: functools.partial(models[name], inputs[name]) for name in models})

    for name, x in inputs.items():
        torch.testing.assert_close(outputs[name], (x + 1) * 2)
    expected = {
        "a": {
            "capture_scalar_outputs": True,
            "automatic_dynamic_shapes": True,
            "recompile_limit": 3,
        },
        "b": {
            "capture_scalar_outputs": False,
            "automatic_dynamic_shapes": False,
            "recompile_limit": 5,
        },
    }
    # Two graphs each; the second compiled after the barrier, while both calls were running.
    by_thread = {name: [seen for thread, seen in recorded if thread == name] for name in models}
    assert by_thread == {name: [expected[name]] * 2 for name in models}
    assert not torch._dynamo.config.capture_scalar_outputs  # the test's thread: untouched


@pytest.mark.parametrize("as_argument", [True, False], ids=["compile-argument", "patched"])
def test_recompile_limit_reaches_the_compile(
    monkeypatch: pytest.MonkeyPatch, as_argument: bool
) -> None:
    if as_argument and "recompile_limit" not in _COMPILE_PARAMETERS:
        pytest.skip(f"torch.compile of torch {torch.__version__} takes no recompile_limit")
    if not as_argument:  # what torch < 2.12 offers
        parameters = _COMPILE_PARAMETERS - {"recompile_limit"}
        monkeypatch.setattr(_calls, "_compile_parameters", lambda: parameters)
    compile_kwargs: list[dict[str, object]] = []
    real_compile = torch.compile

    @functools.wraps(real_compile)
    def spy(*args: object, **kwargs: object) -> object:
        compile_kwargs.append(kwargs)
        return real_compile(*args, **kwargs)  # type: ignore[call-overload]

    monkeypatch.setattr(torch, "compile", spy)
    patched: list[dict[str, object]] = []
    real_around = _calls.around_calls

    def around_spy(
        inner: Callable[..., object], settings: _calls.CallSettings, device_type: str
    ) -> Callable[..., object]:
        if settings.dynamo:
            patched.append(settings.dynamo)
        return real_around(inner, settings, device_type)

    monkeypatch.setattr(_parts, "around_calls", around_spy)
    default_limit = torch._dynamo.config.recompile_limit
    config = CompileConfig(backend="eager", dynamic=False, dynamo={"recompile_limit": 2})
    compiled = autotune.apply(_net(), config)
    assert (compile_kwargs[0].get("recompile_limit") == 2) is as_argument
    assert patched == ([] if as_argument else [{"recompile_limit": 2}])

    shapes = [_x(batch) for batch in (1, 2, 3)]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        # Called from a thread other than the applying one, as a server does.
        outputs = _in_threads({"serve": lambda: [compiled(x) for x in shapes]})["serve"]
    assert counters["stats"]["unique_graphs"] == 2  # the third shape fell back to eager
    torch.testing.assert_close(outputs[2], _net()(shapes[2]))  # type: ignore[index]
    assert torch._dynamo.config.recompile_limit == default_limit


def test_settings_are_split_between_arguments_and_the_patch(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(_calls, "_compile_parameters", lambda: frozenset({"recompile_limit"}))

    def split(
        dynamo: dict[str, object], options: dict[str, object] | None = None
    ) -> _calls.CallSettings:
        return _calls.call_settings(CompileConfig(dynamo=dynamo, options=options or {}))

    assert split({"cache_size_limit": 4, "capture_scalar_outputs": True}) == _calls.CallSettings(
        {"recompile_limit": 4}, {"capture_scalar_outputs": True}
    )
    assert split({"cache_size_limit": 4, "recompile_limit": 6}).arguments == {"recompile_limit": 6}
    # What torch reads outside Inductor's compile is set around calls; the rest goes as options.
    options = {"freezing": True, "max_autotune": True, "triton.cudagraphs": True}
    assert split({}, options).inductor == {
        "freezing": True,
        "triton.cudagraphs": True,
    }
    # Frozen regions compile a graph each: recompiles of their own, or a limit per region.
    regions = Scope(compile=("layers.0", "layers.1", "heads.cls"))
    frozen = CompileConfig(options={"freezing": True}, scope=regions)
    assert _calls.call_settings(frozen).arguments == {"recompile_limit": 24}
    assert _calls.call_settings(CompileConfig(options={"freezing": True})).arguments == {}
    four = CompileConfig(options={"freezing": True}, scope=regions, dynamo={"recompile_limit": 4})
    assert _calls.call_settings(four).arguments == {"recompile_limit": 12}
    eager = _calls.call_settings(CompileConfig(backend="eager", options={}))
    assert eager == _calls.CallSettings()
    monkeypatch.setattr(_calls, "_compile_parameters", lambda: frozenset({"backend"}))
    assert split({"recompile_limit": 6}) == _calls.CallSettings({}, {"recompile_limit": 6})
    assert _calls.call_settings(four).dynamo == {"recompile_limit": 12}
    monkeypatch.setattr(
        _calls, "_compile_parameters", lambda: frozenset({"backend", "isolate_recompiles"})
    )
    assert _calls.call_settings(frozen).arguments == {"isolate_recompiles": True}


def test_process_wide_config_runs_calls_one_at_a_time_and_warns_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(_calls, "config_is_per_thread", lambda: False)  # torch < 2.12
    warn = _calls._warn_serialized
    a_inside, b_waits = threading.Event(), threading.Event()
    events: list[str] = []

    def warn_then_signal() -> None:  # called by b when a's call holds the lock
        warn()
        b_waits.set()

    def a_step() -> None:
        events.append("a in")
        a_inside.set()
        assert b_waits.wait(timeout=60)
        events.append("a out")

    monkeypatch.setattr(_calls, "_warn_serialized", warn_then_signal)
    b = autotune.apply(
        Gate(lambda: events.append("b in")),
        CompileConfig(backend="eager", dynamo={"automatic_dynamic_shapes": False}),
    )
    a = autotune.apply(
        Gate(a_step), CompileConfig(backend="eager", dynamo={"capture_scalar_outputs": True})
    )

    def call_b_once_a_is_inside() -> object:
        assert a_inside.wait(timeout=60)
        return b(_x())

    with pytest.warns(RuntimeWarning, match="set what torch keeps process-wide") as caught:
        _in_threads({"a": lambda: a(_x()), "b": call_b_once_a_is_inside})
        warn()  # already said: silent
    assert events == ["a in", "a out", "b in"]
    assert len([w for w in caught if issubclass(w.category, RuntimeWarning)]) == 1
    said = str(caught[0].message)
    assert f"on torch {torch.__version__}: the float32 matmul precision, Dynamo settings" in said


def test_per_thread_detection_matches_what_torch_does() -> None:
    patched, read = threading.Event(), threading.Event()
    default = torch._dynamo.config.capture_scalar_outputs

    def patch_in_another_thread() -> None:
        with torch._dynamo.config.patch(capture_scalar_outputs=not default):
            patched.set()
            assert read.wait(timeout=60)

    thread = threading.Thread(target=patch_in_another_thread)
    thread.start()
    assert patched.wait(timeout=60)
    seen_here = torch._dynamo.config.capture_scalar_outputs
    read.set()
    thread.join(timeout=60)
    assert (seen_here == default) is _calls.config_is_per_thread()


def test_warmup_compiles_before_apply_returns(caplog: pytest.LogCaptureFixture) -> None:
    torch._dynamo.reset()
    model = torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.ReLU()).eval()
    small, large = torch.randn(2, 8), torch.randn(5, 8)
    caplog.set_level("INFO", logger="autotune")

    with torch.no_grad():
        fast = autotune.apply(model, {"backend": "eager", "dynamic": False},
                              warmup=[small, (large,), {"input": small}])  # fmt: skip
        compiled = counters["stats"]["unique_graphs"]
        fast(small), fast(large)  # the shapes the server sees: no compile left to do

    assert compiled >= 2 and counters["stats"]["unique_graphs"] == compiled
    assert "warmed up with 3 call(s) in" in caplog.text


def test_warmup_of_a_do_not_compile_file_calls_nothing(tmp_path: Path) -> None:
    calls = []
    model = torch.nn.Linear(8, 8)
    model.register_forward_hook(lambda *args: calls.append(args))
    path = tmp_path / "best.json"
    autotune.BestConfig(decision="do_not_compile", reason="eager won").dump(path)

    assert autotune.apply(model, path, warmup=torch.randn(2, 8)) is model
    assert calls == []


_FAST_MATH_CHILD = """
import warnings, torch, autotune
config = {"backend": "inductor", "options": {"cpp.enable_unsafe_math_opt_flag": True}}
tiny = 5e-324  # the smallest subnormal double
print("before", tiny * 1.0 > 0)
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    model = autotune.apply(torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.Tanh()), config)
print("warned", sum("flush-to-zero" in str(w.message) for w in caught))
model(torch.randn(2, 8))
print("after", tiny * 1.0 > 0)
torch.set_flush_denormal(False)
print("restored", tiny * 1.0 > 0)
"""


@pytest.mark.skipif(platform.machine() != "x86_64", reason="the MXCSR is x86's")
def test_a_fast_math_config_says_that_its_kernels_flush_the_processs_subnormals(tmp_path):
    """What the warning says, measured: before the first compiled call Python keeps subnormal
    doubles, after it they are zero (the fast-math kernel's start-up code set the MXCSR), and
    torch.set_flush_denormal(False) gives them back. In a child: the bits are the process's."""
    env = {**os.environ, "TORCHINDUCTOR_CACHE_DIR": str(tmp_path / "inductor")}
    done = subprocess.run(
        [sys.executable, "-c", _FAST_MATH_CHILD], capture_output=True, text=True, env=env,
        timeout=300, check=True,
    )  # fmt: skip
    said = dict(line.split() for line in done.stdout.splitlines())
    assert said == {"before": "True", "warned": "1", "after": "False", "restored": "True"}


def test_a_config_without_fast_math_does_not_warn_of_it() -> None:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        autotune.apply(torch.nn.Linear(4, 4), {"backend": "inductor", "options": {}})
        off = {"cpp.enable_unsafe_math_opt_flag": False}
        autotune.apply(torch.nn.Linear(4, 4), {"backend": "inductor", "options": off})
    assert not [w for w in caught if "flush-to-zero" in str(w.message)]
