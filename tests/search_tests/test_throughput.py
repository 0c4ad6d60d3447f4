"""--objective throughput: samples per second over searched batch sizes, under a latency cap.

Results are scripted by (config, batch size): eager takes 0.5 ms + 0.1 ms per sample, so a
larger batch serves more samples per second at a longer latency per call; config A
(fullgraph) gains most at batch 1, config B (no fullgraph) at batch 32."""

from __future__ import annotations

import pytest
import scripted
import torch

from autotune.decide import best_config
from autotune.errors import UsageError
from autotune.records import RecordStore
from autotune.search import Search, SearchRequest
from autotune.settings import StudySettings
from autotune.space import load_space
from autotune.trials import TrialResult, TrialSpec

SPEEDUPS = {  # (fullgraph, batch size) -> speedup over eager at that batch size
    (True, 1): 1.6,
    (True, 32): 1.05,
    (False, 1): 1.2,
    (False, 32): 1.5,
}


def eager_s(batch: int | None) -> float:
    return 5e-4 + 1e-4 * (batch or 1)


def table(spec: TrialSpec) -> TrialResult:
    batch = spec.batch_size
    if spec.config is None:
        return scripted.ok(1.0, eager_s=eager_s(batch))
    if spec.config["backend"] == "inductor":  # the default-compile baseline
        return scripted.ok(1.1, eager_s=eager_s(batch))
    speedup = SPEEDUPS[(spec.config["fullgraph"], batch or 1)]
    return scripted.ok(speedup, eager_s=eager_s(batch))


class Runner:
    def __init__(self, script=table):
        self.script = script
        self.specs: list[TrialSpec] = []

    def run(self, spec: TrialSpec) -> TrialResult:
        self.specs.append(spec)
        result = self.script(spec)
        result.batch_size = spec.batch_size
        return result

    def close(self) -> None:
        pass


@pytest.fixture
def study(tmp_path, model_file, space_file):
    """Runs a whole-scope study of the batched model, 30 trials (its space is exhausted
    first), and returns its best-config file."""

    def run(name: str, script=table, **settings):
        space = load_space(space_file("aot_eager"), "cpu")
        study_settings = StudySettings(
            model_path=model_file("batched"), device="cpu", space=space.to_dict(),
            space_hash=space.content_hash(), torch_version=torch.__version__, scope="whole",
            trials=30, finalists=0, **settings,
        )  # fmt: skip
        request = SearchRequest(name, f"sqlite:///{tmp_path}/t.db", study_settings)
        runner = Runner(script)
        search = Search(request, runner)
        records = search.run()
        return (
            best_config(records, search.session.settings, name, request.storage),
            records,
            runner,
        )

    return run


def test_latency_and_throughput_pick_differently(study):
    by_latency, _, _ = study("latency")
    by_throughput, records, runner = study("throughput", objective="throughput",
                                           batch_sizes=[1, 32])  # fmt: skip

    assert by_latency.decision == by_throughput.decision == "compile"
    assert by_latency.config.fullgraph is True  # A: fastest per call at the file's own batch
    assert by_latency.workload["batch_size"] is None
    assert by_throughput.config.fullgraph is False  # B at batch 32: the most samples per second
    assert by_throughput.workload["batch_size"] == 32
    assert by_throughput.metrics["samples_per_s"] == pytest.approx(32 * 1.5 / eager_s(32))
    assert "samples per second over batch sizes 1,32" in by_throughput.reason
    # Both baselines were measured at both batch sizes, and no (config, batch) twice.
    baselines = {(r.baseline, r.batch_size) for r in records if r.baseline}
    assert baselines == {("eager", 1), ("default", 1), ("eager", 32), ("default", 32)}
    searched = [
        (s.config["fullgraph"], s.config["dynamic"], s.batch_size)
        for s in runner.specs
        if s.config and s.config["backend"] == "aot_eager"
    ]
    assert len(searched) == len(set(searched)) and {b for *_, b in searched} == {1, 32}


def test_a_latency_cap_makes_large_batches_infeasible(study):
    best, records, _ = study("capped", objective="throughput", batch_sizes=[1, 32],
                             max_latency_s=2e-3)  # fmt: skip
    over = [r for r in records if r.failure_kind == "latency_budget"]
    assert over and all(r.batch_size == 32 for r in over)
    assert "exceeds --max-latency-ms 2" in over[0].error
    assert best.decision == "compile" and best.workload["batch_size"] == 1
    assert best.config.fullgraph is True and best.workload["max_latency_s"] == 2e-3


def test_eager_at_a_larger_batch_beating_every_compiled_config_is_do_not_compile(study):
    def only_small_batches_gain(spec):
        result = table(spec)
        if spec.config is not None and spec.batch_size == 32:
            return scripted.ok(0.9, eager_s=eager_s(32))
        return result

    best, _, _ = study("eager", only_small_batches_gain, objective="throughput",
                       batch_sizes=[1, 32])  # fmt: skip
    assert best.decision == "do_not_compile"
    assert best.reason.startswith("eager at batch size 32 serves")
    assert best.workload["batch_size"] == 32
    assert best.metrics["eager_samples_per_s"] == pytest.approx(32 / eager_s(32))


@pytest.mark.parametrize(
    ("settings", "says"),
    [
        ({"objective": "throughput"}, "--objective throughput ranks by samples per second"),
        ({"batch_sizes": [1, 8]}, "--batch-sizes 1,8 searches the batch size"),
        ({"max_latency_s": 0.01}, "--max-latency-ms caps the latency a throughput study"),
    ],
)
def test_throughput_settings_go_together(study, settings, says):
    with pytest.raises(UsageError, match=says):
        study("bad", **settings)


def test_records_keep_the_batch_size(study, tmp_path):
    study("kept", objective="throughput", batch_sizes=[1, 32])
    with RecordStore(f"sqlite:///{tmp_path}/t.db") as store:
        rows = store.trials("kept")
    assert {r.batch_size for r in rows} == {1, 32}
    assert all(r.config_hash.endswith(f"@{r.batch_size}") for r in rows)
