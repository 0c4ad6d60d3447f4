"""Inside a trial of a search with builders: it compiles on a builder core set, then waits for
the measuring slot and moves there, so the next trial compiles while it is measured. Threads
stand in for trial processes here (each opens its own lock files, as a process would); the
pinning is recorded, not done."""

from __future__ import annotations

import fcntl
import threading

import pytest
import torch
import torch._inductor.compile_fx as compile_fx_module

from autotune.runtime.config import CompileConfig
from autotune.trials import TrialSpec, _handover
from autotune.trials._handover import Handover, _device_work_while_compiling, waited_s


@pytest.fixture
def pinned(monkeypatch):
    """Where each trial (thread) pinned itself and sized its threads, in order."""
    seen: list[tuple[str, str, object]] = []
    monkeypatch.setattr(
        _handover,
        "pin_process",
        lambda cores: seen.append((threading.current_thread().name, "pin", cores)),
    )
    monkeypatch.setattr(
        _handover,
        "_size_threads",
        lambda m, compile_threads: seen.append(
            (threading.current_thread().name, "threads", (len(m), compile_threads))
        ),
    )
    return seen  # fmt: skip


def spec(tmp_path, name: str, device: str = "cpu", config=None, **fields) -> TrialSpec:
    return TrialSpec(
        "m.py", device, (config or CompileConfig()).to_dict(),
        measure_slot=str(tmp_path / "slot"), build_cores=[[0, 1]], measure_cores=[2, 3, 4],
        waits_path=str(tmp_path / f"{name}.waits"), **fields,
    )  # fmt: skip


def free(path) -> bool:
    """Whether another process (another open file) could take the lock now."""
    with open(path, "a+") as other:
        try:
            fcntl.flock(other, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return False
        fcntl.flock(other, fcntl.LOCK_UN)
        return True


def test_the_next_trial_compiles_while_this_one_is_measured(tmp_path, pinned):
    # A is measured until B has started compiling, and B compiles only once A has given its
    # builder cores back: run one after the other, they would wait for each other forever.
    a_measuring, b_compiling, log = threading.Event(), threading.Event(), []

    def trial_a() -> None:
        with Handover(spec(tmp_path, "a")) as place:
            log.append("a compiles")
            place.measure()
            log.append("a measures")
            a_measuring.set()
            assert b_compiling.wait(10), "b never compiled while a was measured"
            log.append("a done")

    def trial_b() -> None:
        assert a_measuring.wait(10)  # b is asked once a is measured (its cores are free)
        with Handover(spec(tmp_path, "b")) as place:
            log.append("b compiles")
            b_compiling.set()
            place.measure()  # waits for a to finish measuring
            log.append("b measures")

    threads = [
        threading.Thread(target=trial_a, name="a"),
        threading.Thread(target=trial_b, name="b"),
    ]
    threads[0].start()
    threads[1].start()
    for thread in threads:
        thread.join(20)
    assert log == ["a compiles", "a measures", "b compiles", "a done", "b measures"]
    # each compiled on the builder cores with the measuring cores' thread count, then moved
    assert [p for p in pinned if p[0] == "b"] == [
        ("b", "pin", [0, 1]), ("b", "threads", (3, 2)), ("b", "pin", [2, 3, 4])
    ]  # fmt: skip


def test_a_trial_waits_for_a_free_builder_core_set_and_says_so(tmp_path, pinned):
    first = Handover(spec(tmp_path, "a")).__enter__()  # holds the only builder core set
    entered = threading.Event()

    def second() -> None:
        with Handover(spec(tmp_path, "b")):
            entered.set()

    thread = threading.Thread(target=second, name="b")
    thread.start()
    while waited_s(str(tmp_path / "b.waits")) == 0:  # the wait goes on, and is on file
        thread.join(0.05)
    assert not entered.is_set()
    first.measure()  # compiled: its builder cores go to the next trial
    thread.join(10)
    assert entered.is_set()
    first.__exit__(None, None, None)


def test_a_trial_outside_a_pipeline_takes_nothing(tmp_path):
    with _handover.handover(TrialSpec("m.py", "cpu", None)):
        assert _handover.take_measuring_slot() == (0.0, 0.0)
    assert list(tmp_path.iterdir()) == []
    assert waited_s(None) == 0.0 and waited_s(str(tmp_path / "none")) == 0.0


BENCHMARKS = _handover._benchmarks()


@pytest.mark.parametrize(
    "config, held",
    [
        (CompileConfig(), []),
        (CompileConfig(options={"coordinate_descent_tuning": True}), []),  # tunes when it runs
        (CompileConfig(mode="max-autotune-no-cudagraphs"), BENCHMARKS),
        (CompileConfig(options={"max_autotune_gemm": True}), BENCHMARKS),
        (CompileConfig(options={"freezing": True}), None),  # folds constants on the device
        (CompileConfig(mode="max-autotune", options={"freezing": True}), None),
        (CompileConfig(backend="cudagraphs"), None),
    ],
)
def test_on_a_gpu_the_slot_is_held_while_compiling_only_where_kernels_run_on_the_device(
    config, held
):
    assert _device_work_while_compiling(TrialSpec("m.py", "cuda", config.to_dict())) == held


def test_this_torch_names_the_kernel_benchmarks_of_max_autotune():
    # Else max-autotune trials keep the slot through their compile (safe, and slow): a torch
    # upgrade that moves them must show here.
    assert BENCHMARKS is not None
    assert [name for _, name in BENCHMARKS][:2] == ["benchmark", "benchmark_gpu"]


def test_on_a_gpu_max_autotune_takes_the_slot_for_each_kernel_benchmark_only(
    tmp_path, monkeypatch, pinned
):
    from torch._inductor import select_algorithm
    from torch._inductor.runtime import benchmarking

    slot, seen = tmp_path / "slot", []
    monkeypatch.setattr(select_algorithm.AlgorithmSelectorCache, "benchmark",
                        lambda self, *a: seen.append(("choices", free(slot))) or {})  # fmt: skip
    real_gpu = benchmarking.benchmarker.benchmark_gpu

    def compile_fx(gm, inputs):
        seen.append(("compiling", free(slot)))
        select_algorithm.AlgorithmSelectorCache.benchmark(object(), [])
        benchmarking.benchmarker.benchmark_gpu(lambda: None)
        seen.append(("between", free(slot)))

    monkeypatch.setattr(benchmarking.benchmarker, "benchmark_gpu",
                        lambda fn: seen.append(("benchmarker", free(slot))) or 1.0)  # fmt: skip
    monkeypatch.setattr(compile_fx_module, "compile_fx", compile_fx)
    tuned = spec(tmp_path, "a", device="cuda", config=CompileConfig(mode="max-autotune"))
    with Handover(tuned) as place:
        compile_fx_module.compile_fx(None, [])
        benchmarking.benchmarker.benchmark_gpu(lambda: None)  # the first run's: slot held
        place.measure()
    assert seen == [("compiling", True), ("choices", False), ("benchmarker", False),
                    ("between", True), ("benchmarker", False)]  # fmt: skip
    assert compile_fx_module.compile_fx is compile_fx  # every patch undone
    monkeypatch.undo()
    assert benchmarking.benchmarker.benchmark_gpu == real_gpu


def test_on_a_gpu_the_slot_is_free_while_inductor_compiles_and_held_around_it(
    tmp_path, monkeypatch, pinned
):
    slot, seen = tmp_path / "slot", []

    def compile_fx(gm, inputs, depth=0):  # Inductor's compile_fx calls itself for some graphs
        seen.append(free(slot))
        if depth == 0:
            compile_fx_module.compile_fx(gm, inputs, depth=1)
        seen.append(free(slot))

    monkeypatch.setattr(compile_fx_module, "compile_fx", compile_fx)
    with Handover(spec(tmp_path, "a", device="cuda")) as place:
        assert not free(slot)  # set-up runs eager on the device: held
        compile_fx_module.compile_fx(None, [])
        assert not free(slot)  # the compiled graph runs next: held again
        place.measure()
        assert compile_fx_module.compile_fx is compile_fx  # the patch is undone once compiled
    assert seen == [True, True, True, True]  # free throughout the outermost compile
    assert free(slot)  # the process's end (here: the block's) lets it go


def test_on_a_gpu_a_freezing_trial_holds_the_slot_while_compiling(tmp_path, monkeypatch,
                                                                  pinned):  # fmt: skip
    slot, seen = tmp_path / "slot", []
    monkeypatch.setattr(compile_fx_module, "compile_fx", lambda *a: seen.append(free(slot)))
    frozen = CompileConfig(mode="max-autotune", options={"freezing": True})
    tuned = spec(tmp_path, "a", device="cuda", config=frozen)
    with Handover(tuned):
        compile_fx_module.compile_fx(None, [])
    assert seen == [False]


@pytest.mark.slow
def test_a_real_inductor_compile_lets_the_slot_go_and_the_compiled_call_takes_it_back(
    tmp_path, monkeypatch
):
    # torch.compile reaches Inductor through compile_fx, looked up when it compiles: the patch
    # must sit on that path. The graph runs on the GPU where there is one, else on this CPU
    # (the trial's device, "cuda", is what decides the slot's handling).
    slot, seen = tmp_path / "slot", []
    real = compile_fx_module.compile_fx

    def watched(*args, **kwargs):
        seen.append(free(slot))
        return real(*args, **kwargs)

    monkeypatch.setattr(compile_fx_module, "compile_fx", watched)
    trial = TrialSpec("m.py", "cuda", CompileConfig().to_dict(), measure_slot=str(slot),
                      waits_path=str(tmp_path / "waits"))  # fmt: skip
    where = "cuda" if torch.cuda.is_available() else "cpu"
    with Handover(trial) as place:
        compiled = torch.compile(lambda x: (x * 2).sin() + 1)
        x = torch.randn(16, device=where)
        assert torch.allclose(compiled(x), (x * 2).sin() + 1)
        assert not free(slot)  # taken back before the compiled graph ran
        place.measure()
    assert seen and all(seen), "Inductor compiled while the slot was held"
    assert compile_fx_module.compile_fx is watched
