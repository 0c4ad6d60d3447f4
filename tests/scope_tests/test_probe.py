"""The isolated probe and the plan, for real: trial processes, aborts, hangs, built-in blocks."""

from __future__ import annotations

import os
import signal
from collections.abc import Iterator
from pathlib import Path

import pytest
import torch
from procs import procs_with
from torch._dynamo.utils import counters

from autotune.runtime.apply import compile_module
from autotune.runtime.config import CompileConfig, Scope
from autotune.scope import (
    PROBE_MEASURE,
    ProbeResult,
    ScopePlan,
    build_candidates,
    plan_scopes,
    probe_targets,
)
from autotune.scope._analysis import analyze_module
from autotune.trials import (
    MeasureSettings,
    PreloadedHostRunner,
    TrialResult,
    TrialRunner,
    TrialSpec,
)
from autotune.workload import build_calls, build_model, load_model_file

MODELS = Path(__file__).parents[1] / "fixtures" / "models"
BUDGET_S = 12.0  # the hang costs this much; a healthy aot_eager probe takes 3-5 s
FAST = MeasureSettings(warmup=1, min_rounds=5, max_rounds=20, target_seconds=0.2)
SLEEPER = b"scope_mixed sleeper"  # in the command line of scope_mixed's hanging grandchild


@pytest.fixture(scope="module")
def host(tmp_path_factory: pytest.TempPathFactory) -> Iterator[PreloadedHostRunner]:
    """The module's trials are forks of one preloaded host, as a study's are: these tests are
    about what a probe finds, not about the process it runs in (torch is imported once)."""
    with PreloadedHostRunner(log_dir=str(tmp_path_factory.mktemp("host"))) as warm:
        yield warm


@pytest.fixture(scope="module")
def mixed_plan(host: PreloadedHostRunner) -> ScopePlan:
    base = TrialSpec(model_path=str(MODELS / "scope_mixed.py"), device="cpu", config=None,
                     time_limit_s=BUDGET_S,
                     measure=PROBE_MEASURE)  # fmt: skip
    return plan_scopes(base, host, backend="aot_eager")


def trial(runner: TrialRunner, model: str, config: CompileConfig) -> TrialResult:
    spec = TrialSpec(
        model_path=str(MODELS / model),
        device="cpu",
        config=config.to_dict(),
        time_limit_s=60.0,
        measure=FAST,
    )
    return runner.run(spec)


def test_the_probe_records_the_abort_and_the_hang_with_their_reasons(mixed_plan):
    probes = {p.target: p for p in mixed_plan.probes}
    assert list(probes) == ["Block", "crashy", "hangs", "head"]
    assert (probes["crashy"].status, probes["crashy"].compilable) == ("crash", False)
    assert "SIGABRT" in probes["crashy"].reason
    assert probes["crashy"].brief() == "unit crashy: crash (the trial process died of SIGABRT)"
    assert (probes["hangs"].status, probes["hangs"].compilable) == ("timeout", False)
    assert f"{BUDGET_S:g} s" in probes["hangs"].reason
    assert [p.target for p in mixed_plan.excluded] == ["crashy", "hangs"]
    for healthy in (probes["Block"], probes["head"]):
        assert (healthy.status, healthy.graphs, healthy.graph_breaks) == ("ok", 1, 0)
        assert healthy.compile_time_s > 0


def test_the_probe_leaves_no_process_behind(mixed_plan):
    assert mixed_plan.probes  # the hang's probe ran, and with it its grandchild
    assert _sleepers() == []


def test_no_candidate_compiles_the_broken_children(mixed_plan):
    bad = {"crashy", "hangs"}
    assert mixed_plan.names[:3] == ["whole", "regional:Block", "children"]
    assert mixed_plan.candidate("regional:Block").scope.compile == (
        "blocks.0", "blocks.1", "blocks.2",
    )  # fmt: skip
    for candidate in mixed_plan.candidates:
        assert not bad & set(candidate.scope.compile), candidate
        if candidate.scope.compile == ("",):
            assert bad <= set(candidate.scope.disable), candidate


def test_every_candidate_compiles_and_matches_eager(host, mixed_plan):
    """The tuned model keeps both bad children eager, whichever candidate wins."""
    compiled = {}
    for candidate in mixed_plan.candidates:
        config = CompileConfig(
            backend="aot_eager", fullgraph=candidate.fullgraph, scope=candidate.scope
        )
        result = trial(host, "scope_mixed.py", config)
        assert result.status == "ok", (candidate.name, result.error, result.error_tail)
        compiled[candidate.name] = result.graphs
    # A whole-disable candidate may compile nothing at all (a disabled block called in a loop
    # makes Dynamo run the root's frame eagerly); the others compile the healthy parts.
    assert all(compiled[name] >= 1 for name in ("whole", "regional:Block", "children"))
    assert _sleepers() == []


@pytest.mark.slow  # five processes that import transformers: ~30 s, though no Inductor
def test_a_transformers_bert_gets_a_regional_candidate_of_its_encoder_layers(host):
    pytest.importorskip("transformers")
    base = TrialSpec(model_path=str(MODELS / "scope_bert.py"), device="cpu", config=None,
                     time_limit_s=120.0,
                     measure=PROBE_MEASURE)  # fmt: skip
    plan = plan_scopes(base, host, backend="aot_eager")
    assert [p.status for p in plan.probes] == ["ok"] * 4
    regional = plan.candidate("regional:BertLayer")
    assert regional.scope.compile == ("encoder.layer.0", "encoder.layer.1")
    assert regional.fullgraph
    assert {"whole", "children"} <= set(plan.names)


@pytest.mark.parametrize(
    "backend", ["aot_eager", pytest.param("inductor", marks=pytest.mark.slow)]
)
def test_regional_compile_of_builtin_blocks_really_compiles(host, backend):
    """Module.compile() on nn.TransformerEncoderLayer compiles nothing; the plan's regional
    candidate replaces each layer in its parent, and the trial counts its graphs."""
    module = load_model_file(MODELS / "scope_encoder.py")
    model = build_model(module, "cpu").eval()
    (x,) = build_calls(module, "cpu")[0].args
    targets = probe_targets(analyze_module(model))
    healthy = [ProbeResult(t.name, t.kind, t.paths, "ok", True) for t in targets]
    candidates = {c.name: c for c in build_candidates(analyze_module(model), healthy)}
    regional = candidates["regional:TransformerEncoderLayer"]
    assert regional.scope.compile == ("encoder.layers.0", "encoder.layers.1")

    torch._dynamo.reset()
    counters.clear()
    model.encoder.layers[0].compile(backend="aot_eager")
    with torch.no_grad():
        model(x)
    assert counters["stats"]["unique_graphs"] == 0  # the pitfall: silently not compiled
    torch._dynamo.reset()

    result = trial(host, "scope_encoder.py", CompileConfig(backend=backend, scope=regional.scope))
    assert result.status == "ok", result.error_tail
    assert result.graphs >= 1


def _sleepers() -> list[int]:
    return procs_with(SLEEPER)


@pytest.fixture(autouse=True, scope="module")
def _no_leftovers():
    yield
    for pid in _sleepers():
        os.kill(pid, signal.SIGKILL)


class RecordingRunner:
    """Answers every probe with an ok trial and keeps the specs it was given."""

    def __init__(self) -> None:
        self.specs: list[TrialSpec] = []

    def run(self, spec: TrialSpec) -> TrialResult:
        self.specs.append(spec)
        return TrialResult(status="ok", compile_time_s=0.1, speedup_vs_eager=1.0,
                           speedup_vs_eager_q1=1.0, speedup_vs_eager_q3=1.0, graphs=1,
                           graph_breaks=0)  # fmt: skip


@pytest.mark.parametrize("workload", ["infer", "train"])
def test_probes_run_the_studys_workload(workload):
    """A train study's probes run training steps: a part whose backward cannot compile is
    caught before the search, not by its trials."""
    runner = RecordingRunner()
    base = TrialSpec(model_path=str(MODELS / "scope_mixed.py"), device="cpu", config=None,
                     workload=workload,
                     time_limit_s=60.0, measure=PROBE_MEASURE)  # fmt: skip
    plan_scopes(base, runner, backend="aot_eager")
    assert runner.specs and {spec.workload for spec in runner.specs} == {workload}


def test_a_part_whose_backward_breaks_the_graph_is_caught_by_a_train_studys_probe(host):
    """Inference never traces the backward, so only the train study's probe sees the break,
    and only its plan keeps fullgraph=True away from that part."""
    plans = {
        workload: plan_scopes(
            TrialSpec(
                model_path=str(MODELS / "scope_backward.py"),
                device="cpu",
                config=None,
                workload=workload,
                time_limit_s=60.0,
                measure=FAST,
            ),
            host,
            backend="aot_eager",
        )  # fmt: skip
        for workload in ("infer", "train")
    }
    status = {w: {p.target: p.status for p in plan.probes} for w, plan in plans.items()}
    assert status["infer"]["fragile"] == "ok" and status["train"]["fragile"] == "graph_break"
    assert status["train"]["Block"] == "ok"
    whole = {w: next(c for c in plan.candidates if c.name == "whole") for w, plan in plans.items()}
    assert whole["infer"].fullgraph and not whole["train"].fullgraph


def test_a_part_kept_eager_in_the_convnets_sequential_leaves_the_rest_compiled():
    """Found by the README's first search: on studies/convnet.py (an nn.Sequential) the plan
    offered "the whole model with 5 kept eager", and the trial compiled no graph at all
    (Dynamo runs a frame whose loop meets a graph break eagerly, whole). The plan now compiles
    the parts around 5, and each compiles."""
    module = load_model_file(Path(__file__).parents[2] / "studies" / "convnet.py")
    model = build_model(module, "cpu").eval()
    (x,) = build_calls(module, "cpu")[0].args
    tree = analyze_module(model)
    slower = {"5"}  # AdaptiveAvgPool2d, slower compiled alone in the README's run
    probes = [
        ProbeResult(t.name, t.kind, t.paths, "ok", True,
                    speedup_vs_eager_q3=0.8 if t.name in slower else 1.3)
        for t in probe_targets(tree)
    ]  # fmt: skip
    candidate = ScopePlan(build_candidates(tree, probes)).candidate("whole-disable:5")
    assert candidate.scope.compile == ("0", "1", "2", "3", "4", "6", "7")
    assert candidate.scope.disable == ()

    def graphs(config: CompileConfig) -> int:
        torch._dynamo.reset()
        counters.clear()
        compiled = compile_module(build_model(module, "cpu").eval(), config)
        with torch.no_grad():
            compiled(x)
        return int(counters["stats"]["unique_graphs"])

    # the pitfall, as torch runs it: the whole model compiled with 5 disabled compiles nothing
    assert graphs(CompileConfig(backend="aot_eager", scope=Scope(("",), ("5",)))) == 0
    assert graphs(CompileConfig(backend="aot_eager", scope=candidate.scope)) == 7


def test_a_trial_whose_scope_compiles_no_graph_is_a_no_graph_failure_not_a_timing(host):
    """Where only the compile tells (a scope the plan could not judge), the trial stops
    before timing: it would measure eager under another name."""
    config = CompileConfig(backend="aot_eager", scope=Scope(("",), ("5",)))
    convnet = Path(__file__).parents[2] / "studies" / "convnet.py"
    spec = TrialSpec(
        model_path=str(convnet),
        device="cpu",
        config=config.to_dict(),
        time_limit_s=60.0,
        measure=FAST,
    )
    result = host.run(spec)
    assert (result.status, result.failure_kind) == ("failed", "no_graph"), result.error_tail
    assert "compiled no graph in this config's scope (compiled: <root>; kept eager: 5)" in (
        result.error or ""
    )
    assert result.latency_median_s is None and result.speedup_vs_eager is None
