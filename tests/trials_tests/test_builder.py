"""Builders compile the next trials while the one measuring runner times a trial: the overlap,
what reaches the runner, and the result the two make (scripted runners on a fake clock), then
one real pool on CPU."""

from __future__ import annotations

import threading
from dataclasses import dataclass, field

import pytest
from scripted import ok

from autotune.runtime.config import CompileConfig
from autotune.trials import (
    BuilderPool,
    Measurer,
    MeasureSettings,
    PipelinedRunner,
    PreloadedHostRunner,
    TrialResult,
    TrialSpec,
)

COMPILED = CompileConfig().to_dict()


def spec(tag: int, config: dict | None = COMPILED) -> TrialSpec:
    return TrialSpec("model.py", "cpu", config, seed=tag)


class Clock:
    """A fake clock: scripted runners move it; nothing sleeps."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


@dataclass
class Scripted:
    """A runner answering from ``answer(spec)``, logging ``(name, seed, build_only)`` as it
    starts and ends each run, and (``hold``) waiting on an event before it answers."""

    name: str
    log: list[tuple[str, str, int, bool]]
    answer: object = None
    hold: dict[int, threading.Event] = field(default_factory=dict)
    closed: int = 0

    def run(self, s: TrialSpec) -> TrialResult:
        self.log.append(("start", self.name, s.seed, s.build_only))
        if s.seed in self.hold:
            assert self.hold[s.seed].wait(10), f"{self.name} waited in vain for trial {s.seed}"
        result = self.answer(s) if callable(self.answer) else ok(1.5, compile_s=1.0)
        self.log.append(("end", self.name, s.seed, s.build_only))
        return result

    def close(self) -> None:
        self.closed += 1


def built(compile_s: float = 9.0, wall_s: float = 10.0) -> TrialResult:
    """What a builder reports: compiled and checked, not timed."""
    return TrialResult(
        status="ok", compile_time_s=compile_s, wall_time_s=wall_s,
        phases={"setup_s": 0.5, "compile_s": compile_s}, code_hash="abc",
    )  # fmt: skip


def test_a_builder_compiles_the_next_trial_while_the_runner_measures_this_one():
    # Trial 1's measurement does not end until trial 2's build has started, and trial 2's
    # build does not end until trial 1's measurement has: run one after the other, the two
    # would wait for each other forever (the scripted runners give up after 10 s).
    log: list = []
    measuring_1, building_2 = threading.Event(), threading.Event()
    builder = Scripted("builder", log, lambda s: built(), hold={2: measuring_1})
    runner = Scripted("runner", log, hold={1: building_2})
    pool, measurer = BuilderPool([builder]), Measurer(runner)
    jobs = [PipelinedRunner(pool, measurer) for _ in range(2)]

    def watch() -> None:  # sets each event once the other side has started
        while not (measuring_1.is_set() and building_2.is_set()):
            for entry in list(log):
                if entry == ("start", "runner", 1, False):
                    measuring_1.set()
                if entry == ("start", "builder", 2, True):
                    building_2.set()

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    results: dict[int, TrialResult] = {}
    threads = [
        threading.Thread(target=lambda j=j, n=n: results.__setitem__(n, j.run(spec(n))))
        for n, j in ((1, jobs[0]), (2, jobs[1]))
    ]
    threads[0].start()
    while ("end", "builder", 1, True) not in log:  # trial 1 is built first
        threading.Event().wait(0.01)
    threads[1].start()
    for thread in threads:
        thread.join(20)
    assert results[1].ok and results[2].ok
    # Overlapped: trial 2 was built while trial 1 was measured; the runner ran one at a time.
    assert log.index(("start", "builder", 2, True)) < log.index(("end", "runner", 1, False))
    runs = [e for e in log if e[1] == "runner"]
    assert runs == [("start", "runner", n, False) if i % 2 == 0 else ("end", "runner", n, False)
                    for n in (1, 2) for i in (0, 1)]  # fmt: skip


def test_the_trial_records_the_builders_cold_compile_and_the_runners_warm_one():
    clock = Clock()
    log: list = []

    def measure(s: TrialSpec) -> TrialResult:
        result = ok(2.0, compile_s=0.4)
        result.phases = {"setup_s": 0.5, "compile_s": 0.4, "timing_s": 3.0}
        result.traffic = {"mean_s": 0.01, "startup_s": 0.4}
        return result

    runner = Scripted("runner", log, measure)
    measurer = Measurer(runner)
    job = PipelinedRunner(BuilderPool([Scripted("builder", log, lambda s: built())]), measurer,
                          clock=clock)  # fmt: skip
    measurer.lock.acquire()  # another trial is being measured: this one waits 7 s for it
    waiter = threading.Thread(target=lambda: setattr(job, "result", job.run(spec(1))))
    waiter.start()
    while ("end", "builder", 1, True) not in log:
        threading.Event().wait(0.01)
    clock.now += 7.0
    measurer.lock.release()
    waiter.join(10)
    result: TrialResult = job.result  # type: ignore[attr-defined]
    assert result.ok and result.speedup_vs_eager == 2.0  # the runner's timing
    assert result.compile_time_s == 9.0  # the builder's cold compile is the trial's
    assert result.phases["compile_s"] == 9.0 and result.phases["warm_compile_s"] == 0.4
    assert result.phases["build_s"] == 10.0 and result.phases["waited_s"] == 7.0
    assert result.traffic["startup_s"] == 9.0 and result.traffic["warm_startup_s"] == 0.4
    assert result.wall_time_s == 10.0 + 1.0  # both processes' work, not the wait


@pytest.mark.parametrize(
    "answer",
    [
        TrialResult.failed("compile_error", "the backend raised"),
        TrialResult.failed("timeout", "still compiling after its compile budget of 60 s"),
        TrialResult.failed("accuracy", "out[0]: max abs diff 1.0"),
        TrialResult(status="ok", compile_time_s=3.0, equivalent_of=4, code_hash="same"),
    ],
    ids=["compile_error", "timeout", "accuracy", "same-code"],
)
def test_a_config_that_fails_to_build_or_builds_timed_code_never_reaches_the_runner(answer):
    log: list = []
    runner = Scripted("runner", log)
    job = PipelinedRunner(BuilderPool([Scripted("builder", log, lambda s: answer)]),
                          Measurer(runner))  # fmt: skip
    assert job.run(spec(1)) is answer
    assert [e for e in log if e[1] == "runner"] == []


def test_eager_is_measured_without_a_build():
    log: list = []
    job = PipelinedRunner(BuilderPool([Scripted("builder", log)]), Measurer(Scripted("r", log)))
    assert job.run(spec(1, config=None)).ok
    assert [e[1] for e in log] == ["r", "r"]


def test_a_build_out_of_memory_is_run_again_alone_and_the_pool_shrinks():
    log: list = []
    oom = TrialResult.failed("oom", "CUDA out of memory")
    builders = [Scripted("b1", log, lambda s: oom), Scripted("b2", log, lambda s: oom)]
    pool = BuilderPool(builders)
    job = PipelinedRunner(pool, Measurer(Scripted("runner", log)))
    result = job.run(spec(1))
    assert result.ok  # judged alone, as without builders: the config did not run out
    assert ("start", "runner", 1, False) in log  # the whole trial, compile and timing
    assert pool.live == 1 and sum(b.closed for b in builders) == 1
    job.run(spec(2))
    assert pool.live == 1  # never below one builder


def test_the_measuring_trial_gets_the_device_slot_and_the_build_no_display():
    seen: list[TrialSpec] = []

    def keep(s: TrialSpec) -> TrialResult:
        seen.append(s)
        return built() if s.build_only else ok(1.5)

    job = PipelinedRunner(BuilderPool([Scripted("b", [], keep)]),
                          Measurer(Scripted("r", [], keep)), slot="/tmp/slot.lock")  # fmt: skip
    job.run(TrialSpec("model.py", "cuda", COMPILED, progress_path="/tmp/phase"))
    build, measure = seen
    assert build.build_only and build.progress_path is None and build.device_slot
    assert not measure.build_only and measure.progress_path == "/tmp/phase"
    assert measure.device_slot == "/tmp/slot.lock"


@pytest.mark.slow
def test_a_real_builder_fills_the_cache_the_runner_compiles_from(tmp_path, model_file):
    """One real pool on CPU: the builder compiles with Inductor (a cache miss), the runner's
    compile of the same config is served from the study's cache the builder filled."""
    fast = MeasureSettings(warmup=1, min_rounds=5, max_rounds=20, target_seconds=0.2)
    config = CompileConfig(dynamic=False).to_dict()
    trial = TrialSpec(model_file("tiny"), "cpu", config, measure=fast, budget_s=300.0,
                      cache_dir=str(tmp_path / "cache"))  # fmt: skip
    with (
        PreloadedHostRunner(log_dir=str(tmp_path), cores=[0]) as builder,
        PreloadedHostRunner(log_dir=str(tmp_path), cores=[1]) as runner,
    ):
        result = PipelinedRunner(BuilderPool([builder]), Measurer(runner)).run(trial)
    assert result.ok, result.error_tail
    assert result.cache["fxgraph_hit"] >= 1 and result.cache["fxgraph_miss"] == 0
    assert result.cache["build_fxgraph_miss"] >= 1  # the builder compiled cold
    assert 0 < result.compile_time_s <= result.phases["compile_s"]  # the builder's phase
    assert result.phases["warm_compile_s"] > 0 and result.latency_median_s > 0
