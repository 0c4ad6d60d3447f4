"""How many builders compile ahead, on which cores, and a search run through them."""

from __future__ import annotations

import threading

import pytest
import torch

from autotune.errors import UsageError
from autotune.pipeline._runners import builder_count, pipeline_cores, trial_runners
from autotune.space import load_space
from autotune.storage import StudySettings
from autotune.study import Search, SearchRequest
from autotune.trials import Pipeline, PipelinedRunner, TrialResult, TrialSpec


@pytest.mark.parametrize("cores, jobs", [(2, 1), (16, 1), (64, 1), (16, 2)])
def test_builders_are_off_unless_asked_for(cores, jobs):
    # On the one GPU node measured (H200, 16 cores) 3 builders ran the search 0.93x as fast
    assert builder_count(None, cores, jobs) == 0


def test_builders_are_refused_beside_parallel_jobs():
    with pytest.raises(UsageError, match=r"--builders 2 goes with one measuring job.*--jobs 1"):
        builder_count(2, 16, jobs=2)


def test_builders_asked_for_need_a_core_each_beside_the_runners():
    assert builder_count(1, 2) == 1  # asked for: even on this 2-core machine
    assert builder_count(0, 16) == 0
    with pytest.raises(UsageError, match=r"needs 3 CPU cores.*may use 2; pass --builders 1"):
        builder_count(2, 2)


@pytest.mark.parametrize(
    "builders, device, cores, runner, each",
    [
        (1, "cpu", 2, [0], [[1]]),
        (1, "cpu", 16, list(range(8)), [list(range(8, 16))]),  # the runner keeps half
        (2, "cpu", 9, list(range(5)), [[5, 6], [7, 8]]),
        (3, "cuda:0", 16, [0, 1], [[2, 3, 4, 5], [6, 7, 8, 9], [10, 11, 12, 13]]),
        (2, "cuda:0", 3, [0], [[1], [2]]),  # a core each, at least
    ],
)
def test_the_runner_and_each_builder_get_cores_of_their_own(builders, device, cores, runner,
                                                            each):  # fmt: skip
    got_runner, got_each = pipeline_cores(builders, device, list(range(cores)))
    assert (got_runner, got_each) == (runner, each)
    every = got_runner + [c for b in got_each for c in b]
    assert len(every) == len(set(every))  # disjoint


def test_a_search_with_builders_runs_one_job_per_builder_plus_one(monkeypatch):
    monkeypatch.setenv("AUTOTUNE_TRIAL_RUNNER", "scripted:make")
    monkeypatch.setattr("os.sched_getaffinity", lambda pid: set(range(8)))
    runners = trial_runners(1, "preloaded", "cpu", builders=2)
    assert len(runners) == 3 and all(isinstance(r, PipelinedRunner) for r in runners)
    pipeline = runners[0].pipeline
    assert all(r.pipeline is pipeline for r in runners)  # one slot, one set of builder cores
    assert pipeline.measure_cores == [0, 1, 2, 3] and pipeline.build_cores == [[4, 5], [6, 7]]
    assert pipeline.slot.endswith("measure-slot.lock")
    assert len(trial_runners(1, "preloaded", "cuda:0", builders=0)) == 1  # off: as before


class Table:
    """A speedup by fullgraph; records every spec it was asked to run, from any job."""

    def __init__(self) -> None:
        self.specs: list[TrialSpec] = []
        self.lock = threading.Lock()

    def run(self, spec: TrialSpec) -> TrialResult:
        with self.lock:
            self.specs.append(spec)
        speedup = 1.0 if spec.config is None else 1.2 + 0.1 * bool(spec.config["fullgraph"])
        return TrialResult(
            status="ok", compile_time_s=0.5, latency_median_s=1e-3 / speedup,
            latency_iqr_s=1e-5, eager_latency_median_s=1e-3, speedup_vs_eager=speedup,
            speedup_vs_eager_q1=speedup - 0.02, speedup_vs_eager_q3=speedup + 0.02,
            peak_memory_bytes=2**20, environment={"host": "h", "torch": "2.13.0"},
            model={"sha256": "abc", "parameters": 1}, inputs=["(4x16:float32)"],
            phases={"compile_s": 0.5, "timing_s": 1.0}, wall_time_s=2.0,
        )  # fmt: skip

    def close(self) -> None:
        """Nothing to close."""


def test_a_search_through_builders_places_every_trial_and_keeps_its_budget(
    tmp_path, model_file, space_file
):
    space = load_space(space_file("aot_eager"), "cpu")
    settings = StudySettings(
        model_path=model_file("tiny"), device="cpu", space=space.to_dict(),
        space_hash=space.content_hash(), torch_version=torch.__version__, scope="whole",
        trials=4,
    )  # fmt: skip
    request = SearchRequest("s", f"sqlite:///{tmp_path}/t.db", settings)
    table = Table()
    pipeline = Pipeline(str(tmp_path / "slot"), [[1]], [0])
    records = Search(request, [PipelinedRunner(table, pipeline) for _ in range(2)]).run()
    searched = [r for r in records if r.baseline is None and r.duplicate_of is None]
    assert len(searched) == 4  # the budget holds with two jobs asking
    assert all(s.measure_slot == pipeline.slot and s.build_cores == [[1]] for s in table.specs)


def test_the_finalists_go_side_by_side_only_after_a_search_with_builders_on_a_gpu(tmp_path):
    from autotune.pipeline._runners import finalist_jobs
    from autotune.trials import SubprocessRunner

    pipeline = Pipeline(str(tmp_path / "slot"), [[2, 3, 4, 5], [6, 7, 8, 9]], [0, 1])
    searched = [PipelinedRunner(Table(), pipeline) for _ in range(3)]
    jobs = finalist_jobs(searched, "cuda:0")
    assert jobs is not None and len(jobs) == 3  # one per builder, plus one
    assert all(j.pipeline is pipeline and isinstance(j.runner, SubprocessRunner) for j in jobs)
    assert finalist_jobs(searched, "cpu") is None  # timed on every core, as production runs
    assert finalist_jobs([Table()], "cuda:0") is None  # no builders: one at a time
