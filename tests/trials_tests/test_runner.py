"""Every trial runs in a process of its own; every way it can end becomes a failure kind."""

from __future__ import annotations

import os
import signal
import time

import pytest
from procs import procs_with, wait_for

from autotune.runtime.config import CompileConfig
from autotune.trials import MeasureSettings, PreloadedHostRunner, SubprocessRunner, TrialSpec
from autotune.trials._phase import read_phase

FAST = MeasureSettings(warmup=1, min_rounds=5, max_rounds=20, target_seconds=0.2)


@pytest.fixture(scope="module", params=["cold", "warm"])
def runner(request, tmp_path_factory):
    """Every test runs with a fresh process per trial and with forks of one warm host (the
    host is shared by the module's tests: a trial must never disturb the next)."""
    if request.param == "cold":
        yield SubprocessRunner()
        return
    with PreloadedHostRunner(log_dir=str(tmp_path_factory.mktemp("host"))) as warm:
        yield warm


@pytest.fixture
def run(runner, tmp_path_factory):
    cache = str(tmp_path_factory.getbasetemp() / "trial-cache")

    def go(model: str, config: CompileConfig | None, budget: float = 120.0):
        # torch's test-only backends are refused from data: these trials opt in by name
        testing = config is not None and "TESTING_ONLY" in config.backend
        spec = TrialSpec(
            model_path=model,
            device="cpu",
            config=config.to_dict() if config is not None else None,
            time_limit_s=budget,
            measure=FAST,
            cache_dir=cache,
            allow_unsafe_knobs=[f"backend.{config.backend}"] if testing else [],
        )
        return runner.run(spec)

    return go


def aot(**kwargs) -> CompileConfig:
    return CompileConfig(backend="aot_eager", **kwargs)


def test_eager_measured_against_itself_is_ok_and_well_formed(run, model_file):
    result = run(model_file("tiny"), None)
    assert result.status == "ok", result.error_tail
    assert result.compile_time_s is None
    # How near 1 the ratio comes depends on the machine's load: only its form is asserted.
    assert 0 < result.speedup_vs_eager_q1 <= result.speedup_vs_eager <= result.speedup_vs_eager_q3
    assert result.latency_median_s > 0 and result.eager_latency_median_s > 0
    assert FAST.min_rounds <= result.rounds <= FAST.max_rounds and result.calls_per_sample >= 1
    assert result.environment["torch"] and result.model["parameters"] == 16 * 32 + 32 + 32 * 8 + 8
    assert result.inputs == ["(4x16:float32)"]


def test_a_compiled_trial_records_its_measurements(run, model_file):
    result = run(model_file("shapes"), aot(dynamic=False))
    assert result.status == "ok", result.error_tail
    assert result.compile_time_s > 0
    assert result.latency_median_s > 0 and result.eager_latency_median_s > 0
    assert result.rounds >= 5
    assert result.graphs >= 1
    assert result.peak_memory_bytes > 0
    assert result.accuracy["max_abs_diff"] == 0.0
    assert len(result.inputs) == 3


def test_an_abort_under_the_compiler_is_a_crash_with_the_signal(run, model_file):
    result = run(model_file("crash_when_compiled"), aot())
    assert (result.status, result.failure_kind) == ("failed", "crash")
    assert "SIGABRT" in result.error


def test_a_hang_is_killed_at_the_budget_with_everything_it_started(run, model_file):
    result = run(model_file("hang_when_compiled"), aot(), budget=12.0)
    assert result.failure_kind == "timeout"
    assert "budget of 12 s" in result.error
    # Killed, not waited for: the trial and its grandchild each sleep 600 s.
    assert result.wall_time_s < 600
    assert wait_for(lambda: not _sleepers(), 30), _sleepers()


def test_an_allocation_failure_is_oom(run, model_file):
    result = run(model_file("oom_when_compiled"), aot())
    assert result.failure_kind == "oom", result.error
    assert "allocate" in result.error_tail


def test_fullgraph_on_a_breaking_model_is_a_graph_break(run, model_file):
    result = run(model_file("graph_break"), aot(fullgraph=True))
    assert result.failure_kind == "graph_break"
    assert "print" in result.error


def test_graph_breaks_are_counted_without_fullgraph(run, model_file):
    result = run(model_file("graph_break"), aot(fullgraph=False))
    assert result.status == "ok", result.error_tail
    assert result.graph_breaks >= 1 and result.graphs >= 2
    assert any("print" in reason for reason in result.graph_break_reasons)


def test_a_backend_error_is_a_compile_error(run, model_file):
    result = run(model_file("tiny"), CompileConfig(backend="relu_compile_error_TESTING_ONLY"))
    assert result.failure_kind == "compile_error"
    assert result.error_tail and "ReluCompileError" in result.error_tail


def test_outputs_that_differ_from_eager_fail_the_accuracy_gate(run, model_file):
    result = run(model_file("tiny"), CompileConfig(backend="relu_accuracy_error_TESTING_ONLY"))
    assert result.failure_kind == "accuracy"
    assert "tol" in result.error or "diff" in result.error


def test_a_nondeterministic_model_is_a_model_error(run, model_file):
    result = run(model_file("nondeterministic"), None)
    assert result.failure_kind == "model_error"
    assert "not deterministic" in result.error


def test_a_broken_model_file_is_a_model_error(run, model_file):
    result = run(model_file("returns_wrong_thing"), None)
    assert result.failure_kind == "model_error"
    assert "get_model" in result.error


def _sleepers() -> list[int]:
    """Processes still running the fixture's `time.sleep(600)` grandchild."""
    return procs_with(b"time.sleep(600)")


@pytest.fixture(autouse=True)
def _no_leftovers():
    yield
    for pid in _sleepers():
        os.kill(pid, signal.SIGKILL)


def test_a_dead_host_is_a_crash_and_the_next_trial_gets_a_new_host(tmp_path, model_file):
    with PreloadedHostRunner(log_dir=str(tmp_path)) as warm:
        spec = TrialSpec(model_path=model_file("hang_when_compiled"), device="cpu",
                         config=aot().to_dict(), time_limit_s=60, measure=FAST)  # fmt: skip
        first_host = None

        def kill_host_soon():
            nonlocal first_host
            deadline = time.monotonic() + 60
            while not _sleepers() and time.monotonic() < deadline:
                time.sleep(0.2)
            first_host = warm._host.proc.pid
            os.kill(first_host, signal.SIGKILL)

        import threading

        killer = threading.Thread(target=kill_host_soon)
        killer.start()
        result = warm.run(spec)
        killer.join()
        assert result.failure_kind == "crash" and "host" in result.error
        assert wait_for(lambda: not _sleepers(), 15)
        ok = warm.run(TrialSpec(model_path=model_file("tiny"), device="cpu", config=None,
                                measure=FAST))  # fmt: skip
        assert ok.status == "ok", ok.error_tail
        assert warm._host.proc.pid != first_host


def test_a_trial_writes_its_phase_where_its_spec_says(runner, model_file, tmp_path):
    path = str(tmp_path / "trial-0.phase")
    spec = TrialSpec(
        model_path=model_file("tiny"),
        device="cpu",
        config=aot().to_dict(),
        measure=FAST,
        progress_path=path,
    )
    result = runner.run(spec)
    assert result.status == "ok", result.error_tail
    assert read_phase(path) == "measuring"  # after "compiling"; the search removes the file


def test_a_cpu_trial_sees_no_gpu(run, tmp_path):
    # On a GPU node Dynamo would start CUDA in a CPU trial's compile, which a trial forked from
    # the warm host cannot do (measured on an H200: every compiled CPU trial failed).
    model = tmp_path / "sees.py"
    model.write_text(
        "import os\nimport torch\n\n"
        "def get_model(device):\n"
        "    assert os.environ.get('CUDA_VISIBLE_DEVICES') == '', 'a GPU is in sight'\n"
        "    assert not torch.cuda.is_available()\n"
        "    return torch.nn.Linear(4, 4)\n\n"
        "def get_inputs(device):\n"
        "    return (torch.randn(2, 4),)\n"
    )
    result = run(str(model), aot())
    assert result.status == "ok", result.error_tail


def _seeing_model(folder, imports: str = "tabnanny"):
    """A model file that records whether ``imports`` was imported before the file ran, and
    from where the file got it."""
    folder.mkdir(parents=True, exist_ok=True)
    model = folder / "model.py"
    model.write_text(
        "import json\nimport sys\n"
        f"SEEN = {imports!r} in sys.modules\n"
        f"import {imports}\nimport torch\n\n"
        "def get_model(device):\n"
        f"    with open({str(folder / 'seen.json')!r}, 'w') as f:\n"
        f"        json.dump([SEEN, {imports}.__file__], f)\n"
        "    return torch.nn.Linear(4, 4)\n\n"
        "def get_inputs(device):\n"
        "    return (torch.randn(2, 4),)\n"
    )
    return model


def _seen(folder) -> list:
    import json

    return json.loads((folder / "seen.json").read_text())


def test_the_host_imports_the_models_packages_once_unless_a_model_has_its_own_beside_it(
    tmp_path,
):
    first, second = tmp_path / "first", tmp_path / "second"
    (second / "tabnanny.py").parent.mkdir(parents=True)
    (second / "tabnanny.py").write_text("")  # this model's own tabnanny, not the standard one
    hosts = []
    with PreloadedHostRunner(log_dir=str(tmp_path)) as warm:
        for folder in (first, second):
            spec = TrialSpec(model_path=str(_seeing_model(folder)), device="cpu", config=None,
                             measure=FAST)  # fmt: skip
            assert warm.run(spec).status == "ok"
            hosts.append(warm._host.proc.pid)

    assert _seen(first)[0] is True  # imported by the host, before the forked trial ran the file
    assert _seen(second) == [False, str(second / "tabnanny.py")]
    assert hosts[0] != hosts[1]  # a new host, which did not import the standard tabnanny


def test_a_model_whose_packages_start_a_thread_gets_a_host_that_did_not_import_them(
    tmp_path, monkeypatch
):
    package = tmp_path / "site" / "threader"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text(
        "import threading, time\n"
        "threading.Thread(target=time.sleep, args=(600,), daemon=True).start()\n"
    )
    monkeypatch.setenv("PYTHONPATH", str(tmp_path / "site"))
    model = _seeing_model(tmp_path / "model", imports="threader")
    with PreloadedHostRunner(log_dir=str(tmp_path)) as warm:
        spec = TrialSpec(model_path=str(model), device="cpu", config=None, measure=FAST)
        result = warm.run(spec)
        assert result.status == "ok", result.error_tail
        assert warm._host.ready == {**warm._host.ready, "preloaded": [], "fork_safe": True}

    assert _seen(tmp_path / "model") == [False, str(package / "__init__.py")]
