"""Module-tree analysis: top-level parts, repeated blocks, parameter counts, eager time shares."""

from __future__ import annotations

import json

import pytest
import torch
from measure_tests.fakeclock import TICK, FakeClock
from torch import nn

from autotune.scope import ModelTree, ScopeAnalysisError, _analysis, analyze_model_file
from autotune.scope._analysis import analyze_module
from autotune.workload import build_calls, build_model, load_model_file

BLOCK = 64 * 256 + 256 + 256 * 64 + 64  # scope_mixed's Block: Linear(64, 256), Linear(256, 64)
SMALL = 64 * 64 + 64  # Crashy and Hangs: Linear(64, 64)


def analyze(path: str) -> ModelTree:
    """Builds a fixture model in this process and analyzes it with a profile."""
    module = load_model_file(path)
    torch.manual_seed(0)
    model = build_model(module, "cpu").eval()
    calls = build_calls(module, "cpu")
    with torch.no_grad():
        return analyze_module(model, lambda: [model(*c.args, **c.kwargs) for c in calls])


def test_finds_the_repeated_blocks_and_the_children_with_parameter_counts(model_file):
    tree = analyze(model_file("scope_mixed"))
    assert [(b.name, b.paths) for b in tree.blocks] == [
        ("Block", ("blocks.0", "blocks.1", "blocks.2"))
    ]
    assert [p.parameters for p in tree.blocks[0].instances] == [BLOCK] * 3
    assert [(c.path, c.module_class, c.parameters) for c in tree.children] == [
        ("blocks", "ModuleList", 3 * BLOCK),
        ("crashy", "Crashy", SMALL),
        ("hangs", "Hangs", SMALL),
        ("head", "Linear", 64 * 4 + 4),
    ]
    assert tree.parameters == sum(c.parameters for c in tree.children)
    # A ModuleList has no forward: compiling "the children" means compiling its elements.
    units = ["blocks.0", "blocks.1", "blocks.2", "crashy", "hangs", "head"]
    assert [u.path for u in tree.units] == units


class _Work(nn.Module):
    """A layer whose forward lasts ``seconds`` of the fake clock, and nothing else."""

    def __init__(self, clock: FakeClock, seconds: float) -> None:
        super().__init__()
        self.clock, self.seconds = clock, seconds

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self.clock.now += self.seconds
        return x


class _Block(nn.Module):
    def __init__(self, clock: FakeClock) -> None:
        super().__init__()
        self.work = _Work(clock, 2 * TICK)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.work(x)


class _Timed(nn.Module):
    """Per forward: 1 tick of its own, 3 blocks of 2 ticks, a head of 1 tick (8 ticks)."""

    def __init__(self, clock: FakeClock) -> None:
        super().__init__()
        self.clock = clock
        self.blocks = nn.ModuleList([_Block(clock) for _ in range(3)])
        self.head = _Work(clock, TICK)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self.clock.now += TICK
        for block in self.blocks:
            x = block(x)
        return self.head(x)


def test_time_shares_come_from_one_profile_and_cover_the_forward(monkeypatch):
    clock = FakeClock()
    monkeypatch.setattr(_analysis, "time", clock)
    model = _Timed(clock)
    x = torch.ones(1)
    tree = analyze_module(model, lambda: model(x))
    assert tree.profiled and tree.eager_time_s == 8 * TICK
    # The root's own tick is in no child: the children cover 7 of its 8 ticks.
    assert [(c.path, c.time_share, c.calls) for c in tree.children] == [
        ("blocks", 6 / 8, 3),
        ("head", 1 / 8, 1),
    ]
    # The ModuleList is never called itself: its share is that of its blocks.
    assert [(b.name, b.time_share) for b in tree.blocks] == [("_Block", 6 / 8)]
    assert [(u.path, u.time_share, u.calls) for u in tree.units] == [
        ("blocks.0", 2 / 8, 1),
        ("blocks.1", 2 / 8, 1),
        ("blocks.2", 2 / 8, 1),
        ("head", 1 / 8, 1),
    ]


def test_a_real_profile_is_well_formed(model_file):
    # Shares on the real clock depend on the machine's load: only their form is asserted.
    tree = analyze(model_file("scope_mixed"))
    assert tree.profiled and tree.eager_time_s > 0
    shares = [c.time_share for c in tree.children]
    assert all(share > 0 for share in shares) and sum(shares) <= 1.0 + 1e-9, shares
    assert tree.children[0].time_share == pytest.approx(tree.blocks[0].time_share)
    assert tree.children[0].calls == 3
    assert all(u.calls == 1 and u.time_share > 0 for u in tree.units)


def test_nested_repeats_count_once_at_the_outermost_level():
    class Inner(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.lin = nn.Linear(4, 4)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return self.lin(x)

    class Outer(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.inner = nn.ModuleList([Inner(), Inner()])

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return self.inner[1](self.inner[0](x))

    class Net(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.layers = nn.Sequential(Outer(), Outer(), Outer())
            self.heads = nn.ModuleDict({"a": Inner(), "b": nn.Linear(4, 2)})

    tree = analyze_module(Net())
    assert [(b.name, b.paths) for b in tree.blocks] == [
        ("Outer", ("layers.0", "layers.1", "layers.2"))
    ]
    assert [u.path for u in tree.units] == ["layers", "heads.a", "heads.b"]
    assert not tree.profiled and all(u.time_share is None for u in tree.units)


def test_builtin_layers_are_no_blocks_but_builtin_composites_are():
    model = nn.Sequential(
        nn.Sequential(nn.Linear(8, 8), nn.ReLU(), nn.Linear(8, 8)),
        nn.TransformerEncoder(nn.TransformerEncoderLayer(8, 2, 16), 3, enable_nested_tensor=False),
    )
    tree = analyze_module(model)
    assert [(b.name, b.paths) for b in tree.blocks] == [
        ("TransformerEncoderLayer", ("1.layers.0", "1.layers.1", "1.layers.2"))
    ]


def test_a_transformers_bert_has_its_encoder_layers_as_blocks(model_file):
    pytest.importorskip("transformers")
    tree = analyze(model_file("scope_bert"))
    assert [(b.name, b.paths) for b in tree.blocks] == [
        ("BertLayer", ("encoder.layer.0", "encoder.layer.1"))
    ]
    assert [c.path for c in tree.children] == ["embeddings", "encoder", "pooler"]
    shares = [c.time_share for c in tree.children]
    assert all(share > 0 for share in shares) and sum(shares) <= 1.0 + 1e-9, shares


def test_the_tree_is_plain_json(model_file):
    tree = analyze(model_file("scope_mixed"))
    assert ModelTree.from_dict(json.loads(json.dumps(tree.to_dict()))) == tree


def test_the_analysis_runs_in_a_child_process(model_file):
    tree = analyze_model_file(model_file("scope_mixed"), "cpu", seed=0, time_limit_s=120)
    assert tree.root_class == "Mixed" and tree.profiled
    assert tree.blocks[0].paths == ("blocks.0", "blocks.1", "blocks.2")


def test_a_model_that_does_not_build_cannot_be_analyzed(model_file):
    with pytest.raises(ScopeAnalysisError, match="returned str, but must return") as info:
        analyze_model_file(model_file("returns_wrong_thing"), "cpu", time_limit_s=120)
    assert "Traceback" in info.value.tail
