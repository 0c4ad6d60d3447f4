"""This process's trial runners: one per --jobs, each on CPU cores of its own, and a search run
through several."""

from __future__ import annotations

import threading

import pytest
import torch

from autotune.errors import UsageError
from autotune.search import Search, SearchRequest
from autotune.search._runners import trial_runners
from autotune.settings import StudySettings
from autotune.space import load_space
from autotune.trials import PreloadedHostRunner, SubprocessRunner, TrialResult, TrialSpec


def test_each_job_gets_cores_of_its_own(monkeypatch):
    monkeypatch.setattr("os.sched_getaffinity", lambda pid: set(range(8)))
    runners = trial_runners(2, "fresh", "cpu")
    assert all(isinstance(r, SubprocessRunner) for r in runners)
    assert [r.cores for r in runners] == [[0, 1, 2, 3], [4, 5, 6, 7]]
    one = trial_runners(1, "preloaded", "cuda:0")  # one job: every core, any device
    assert len(one) == 1 and isinstance(one[0], PreloadedHostRunner) and one[0].cores is None


def test_parallel_jobs_are_refused_on_a_gpu_and_past_the_cores(monkeypatch):
    monkeypatch.setattr("os.sched_getaffinity", lambda pid: set(range(2)))
    with pytest.raises(UsageError, match=r"--jobs 2 needs --device cpu"):
        trial_runners(2, "fresh", "cuda:0")
    with pytest.raises(UsageError, match=r"--jobs 3 is more than the 2 CPU cores.*--jobs 2"):
        trial_runners(3, "fresh", "cpu")


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


def test_a_search_through_two_jobs_runs_on_both_and_keeps_its_budget(
    tmp_path, model_file, space_file
):
    space = load_space(space_file("aot_eager"), "cpu")
    settings = StudySettings(
        model_path=model_file("tiny"), device="cpu", space=space.to_dict(),
        space_hash=space.content_hash(), torch_version=torch.__version__, scope="whole",
        trials=4,
    )  # fmt: skip
    request = SearchRequest("s", f"sqlite:///{tmp_path}/t.db", settings)
    tables = [Table(), Table()]
    records = Search(request, tables).run()
    searched = [r for r in records if r.baseline is None and r.duplicate_of is None]
    assert len(searched) == 4  # the budget holds with two jobs asking
    assert all(t.specs for t in tables)  # both jobs ran trials
