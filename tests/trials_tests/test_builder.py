"""The parent's side of a search with builders: each trial gets its place in the pipeline, its
budget does not count its waits, and builders become fewer when trials run out of memory
beside each other; then one real pipeline on CPU."""

from __future__ import annotations

import fcntl
import threading
from pathlib import Path

import pytest

from autotune._deadline import Deadline
from autotune.runtime.config import CompileConfig
from autotune.trials import (
    MeasureSettings,
    Pipeline,
    PipelinedRunner,
    PreloadedHostRunner,
    TrialResult,
    TrialSpec,
)
from autotune.trials._handover import core_lock
from autotune.trials._runner import with_waits, within_budget


class Scripted:
    def __init__(self, *answers: TrialResult) -> None:
        self.answers, self.specs = list(answers), []

    def run(self, spec: TrialSpec) -> TrialResult:
        self.specs.append(spec)
        return self.answers.pop(0)

    def close(self) -> None:
        pass


OK = TrialResult(status="ok", speedup_vs_eager=1.5)
OOM = TrialResult.failed("oom", "CUDA out of memory")


def test_a_trial_gets_its_place_in_the_pipeline_and_its_runner_a_waits_file(tmp_path):
    pipeline = Pipeline(str(tmp_path / "slot"), [[2, 3], [4, 5]], [0, 1], Deadline.after(60))
    runner = Scripted(OK)
    PipelinedRunner(runner, pipeline).run(TrialSpec("m.py", "cpu", None))
    placed = runner.specs[0]
    assert placed.measure_slot == str(tmp_path / "slot")
    assert placed.build_cores == [[2, 3], [4, 5]] and placed.measure_cores == [0, 1]
    assert 0 < placed.wall_limit_s <= 60  # what is left of the search's --timeout
    assert Pipeline("s", [[1]]).place(TrialSpec("m.py", "cpu", None)).wall_limit_s is None
    assert with_waits(placed, tmp_path).waits_path == str(tmp_path / "waits")
    assert with_waits(TrialSpec("m.py", "cpu", None), tmp_path).waits_path is None


def test_a_trial_out_of_memory_runs_again_with_one_builder_fewer_never_below_one(tmp_path):
    pipeline = Pipeline(str(tmp_path / "slot"), [[1], [2], [3]], [0])
    runner = Scripted(OOM, OK, OOM, OOM, OOM)
    job = PipelinedRunner(runner, pipeline)
    assert job.run(TrialSpec("m.py", "cuda", None)).ok  # fitted with one builder fewer
    assert pipeline.live == 2
    with open(core_lock(pipeline.slot, 2), "a+") as file:  # the last set's lock is held
        with pytest.raises(BlockingIOError):
            fcntl.flock(file, fcntl.LOCK_EX | fcntl.LOCK_NB)
    assert job.run(TrialSpec("m.py", "cuda", None)).failure_kind == "oom"  # again with 1
    assert pipeline.live == 1
    assert job.run(TrialSpec("m.py", "cuda", None)).failure_kind == "oom"  # the config's own
    assert pipeline.live == 1 and len(runner.specs) == 5
    pipeline.close()


def test_the_compile_budget_does_not_count_the_waits_for_cores_and_slot(tmp_path):
    now = [0.0]
    calls: list[float] = []

    def wait(seconds: float) -> None:  # the trial never ends: only the budget stops it
        calls.append(seconds)
        now[0] += seconds

    waits = tmp_path / "waits"
    waits.write_text("5.0 -1")  # the trial waited 5 s for locks, and waits no more
    spec = TrialSpec("m.py", "cpu", None, budget_s=3.0, waits_path=str(waits))
    assert within_budget(wait, spec, clock=lambda: now[0]) is None
    assert now[0] == 8.0  # 3 s of budget, and the 5 s of waits on top
    assert max(calls) <= 1.0  # it looks at the waits every second
    bounded = TrialSpec("m.py", "cpu", None, budget_s=3.0, waits_path=str(waits),
                        wall_limit_s=6.0)  # fmt: skip
    now[0] = 0.0
    assert within_budget(wait, bounded, clock=lambda: now[0]) is None
    assert now[0] == 6.0  # the search's timeout bounds it, waits included
    plain = TrialSpec("m.py", "cpu", None, budget_s=3.0)
    now[0], calls[:] = 0.0, []
    assert within_budget(wait, plain, clock=lambda: now[0]) is None
    assert calls == [3.0]  # without builders: one wait of the whole budget, as before


@pytest.mark.slow
def test_two_jobs_on_one_pipeline_compile_on_the_builder_core_and_measure_on_the_other(
    tmp_path: Path, model_file
):
    """One real pipeline on this 2-core machine: two trials at once, one builder core set
    ([0]) and the measuring core ([1]); one of them waits for the other, and both measure."""
    fast = MeasureSettings(warmup=1, min_rounds=5, max_rounds=20, target_seconds=0.2)
    pipeline = Pipeline(str(tmp_path / "slot"), [[0]], [1])
    configs = [CompileConfig(dynamic=False), CompileConfig(dynamic=False, fullgraph=True)]
    results: list[TrialResult] = []

    def job(config: CompileConfig) -> None:
        trial = TrialSpec(model_file("tiny"), "cpu", config.to_dict(), measure=fast,
                          budget_s=300.0, cache_dir=str(tmp_path / "cache"))  # fmt: skip
        with PreloadedHostRunner(log_dir=str(tmp_path)) as runner:
            results.append(PipelinedRunner(runner, pipeline).run(trial))

    threads = [threading.Thread(target=job, args=(c,)) for c in configs]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(600)
    assert [r.status for r in results] == ["ok", "ok"], [r.error_tail for r in results]
    assert all(r.threads == 1 for r in results)  # the measuring cores' thread count
    assert all(r.latency_median_s > 0 and r.compile_time_s > 0 for r in results)
    assert max(r.phases.get("waited_s", 0.0) for r in results) > 0  # one waited for the other
