"""Candidate scopes from a tree and its probe results; their encoding as one Optuna parameter."""

from __future__ import annotations

import json

import optuna
import pytest

from autotune.runtime.config import Scope
from autotune.scope import (
    SCOPE_PARAM,
    BlockClass,
    ModelTree,
    ModulePart,
    ProbeResult,
    ScopePlan,
    build_plan,
    probe_targets,
)


def tree(layers: int = 4, extra_units: tuple[str, ...] = ()) -> ModelTree:
    """embed, encoder (holding `layers` Layer blocks), chatty, bad, head, and extra units."""
    blocks = tuple(
        ModulePart(f"encoder.layer.{i}", "Layer", 10, 1, 0.8 / layers) for i in range(layers)
    )
    units = tuple(
        ModulePart(path, "Part", 1, 1, 0.01)
        for path in ("embed", "encoder", "chatty", "bad", "head", *extra_units)
    )
    return ModelTree("Net", 100, units, units, (BlockClass("Layer", blocks),), 1e-3)


def probe(target: str, status: str = "ok", q3: float | None = 1.1, **kw) -> ProbeResult:
    kind = "block" if target == "Layer" else "unit"
    paths = kw.pop("paths", (target,))
    compilable = status in ("ok", "graph_break")
    return ProbeResult(target, kind, paths, status, compilable, reason=kw.pop("reason", None),
                       speedup_vs_eager_q3=q3, **kw)  # fmt: skip


def layer_probe(status: str = "ok", layers: int = 4) -> ProbeResult:
    return probe("Layer", status, paths=tuple(f"encoder.layer.{i}" for i in range(layers)))


def healthy_probes(layers: int = 4) -> list[ProbeResult]:
    return [layer_probe(layers=layers)] + [
        probe(p) for p in ("embed", "encoder", "chatty", "bad", "head")
    ]


def mixed_probes() -> list[ProbeResult]:
    return [
        layer_probe(),
        probe("embed"),
        probe("encoder"),
        probe("chatty", "graph_break", reason="compiles, but in 2 graphs"),
        probe("bad", "crash", reason="the trial process died of SIGABRT"),
        probe("head"),
    ]


def by_name(plan: ScopePlan) -> dict[str, Scope]:
    return {c.name: c.scope for c in plan.candidates}


def test_the_probe_targets_are_each_block_class_then_each_other_unit():
    targets = probe_targets(tree())
    assert [(t.name, t.kind) for t in targets] == [
        ("Layer", "block"), ("embed", "unit"), ("encoder", "unit"), ("chatty", "unit"),
        ("bad", "unit"), ("head", "unit"),
    ]  # fmt: skip
    assert targets[0].paths == tuple(f"encoder.layer.{i}" for i in range(4))


def test_a_broken_part_is_never_compiled_and_is_disabled_in_whole_model_scopes():
    plan = build_plan(tree(), mixed_probes(), "inductor")
    assert [p.target for p in plan.excluded] == ["bad"]
    for candidate in plan.candidates:
        assert "bad" not in candidate.scope.compile
        if candidate.scope.compile == ("",):
            assert "bad" in candidate.scope.disable, candidate
    assert by_name(plan)["whole"] == Scope(("",), ("bad",))
    assert by_name(plan)["regional:Layer"] == Scope(tuple(f"encoder.layer.{i}" for i in range(4)))
    assert by_name(plan)["children"] == Scope(("embed", "encoder", "chatty", "head"))


def test_a_part_that_only_breaks_its_graph_stays_compiled_without_fullgraph():
    plan = build_plan(tree(), mixed_probes(), "inductor")
    fullgraph = {c.name: c.fullgraph for c in plan.candidates}
    # A disabled module inside a fullgraph region is itself a graph break.
    assert fullgraph == {
        "whole": False, "regional:Layer": True, "children": False,
        "whole-disable:chatty": False,
    }  # fmt: skip
    assert by_name(plan)["whole-disable:chatty"] == Scope(("",), ("bad", "chatty"))
    assert "breaks the graph" in plan.candidate("whole-disable:chatty").note


def test_a_broken_unit_lends_its_healthy_blocks_to_the_children_candidate():
    probes = healthy_probes()
    probes[2] = probe("encoder", "timeout", reason="still compiling after 12 s")
    plan = build_plan(tree(), probes, "inductor")
    layers = tuple(f"encoder.layer.{i}" for i in range(4))
    assert by_name(plan)["children"] == Scope(("embed", *layers, "chatty", "bad", "head"))
    assert by_name(plan)["whole"] == Scope(("",), ("encoder",))
    assert by_name(plan)["regional:Layer"] == Scope(layers)


def test_a_broken_block_class_in_a_loop_leaves_its_region_compiled_around_it():
    """encoder.layer.N are elements of a ModuleList: encoder's loop would meet the disabled
    layers and run eager whole, so no region holds them; the parts around them compile."""
    probes = healthy_probes()
    probes[0] = layer_probe("compile_error")
    plan = build_plan(tree(), probes, "inductor")
    assert not any(name.startswith("regional") for name in plan.names)
    whole = plan.candidate("whole")
    assert whole.scope == Scope(("embed", "chatty", "bad", "head"))
    assert "compiled part by part around encoder.layer.0" in whole.note
    assert "children" not in plan.names  # the same scope: kept once, as "whole"


def test_a_broken_part_outside_any_loop_is_disabled_inside_the_region_that_holds_it():
    """A named (not indexed) part is called once from straight-line code: the graph breaks
    around it and the rest of the region stays compiled."""
    layers = tuple(ModulePart(f"encoder.layer.{i}", "Layer", 10, 1, 0.2) for i in range(4))
    attention = tuple(ModulePart(f"encoder.layer.{i}.attn", "Attn", 5, 1, 0.1) for i in range(4))
    units = tuple(ModulePart(p, "Part", 1, 1, 0.01) for p in ("embed", "encoder", "head"))
    blocks = (BlockClass("Layer", layers), BlockClass("Attn", attention))
    probes = [
        probe("Layer", paths=tuple(p.path for p in layers)),
        probe("Attn", "compile_error", paths=tuple(p.path for p in attention)),
        *(probe(p) for p in ("embed", "encoder", "head")),
    ]
    plan = build_plan(ModelTree("Net", 100, units, units, blocks, 1e-3), probes, "inductor")
    assert by_name(plan)["whole"] == Scope(("",), tuple(p.path for p in attention))
    assert by_name(plan)["regional:Layer"] == Scope(
        tuple(p.path for p in layers), tuple(p.path for p in attention)
    )


def test_parts_that_were_reliably_slower_compiled_alone_may_be_kept_eager():
    probes = [probe(p.target, q3=0.5, paths=p.paths) for p in healthy_probes()]
    plan = build_plan(tree(), probes, "inductor")
    extra = [name for name in plan.names if name.startswith("whole-disable:")]
    assert extra == ["whole-disable:Layer", "whole-disable:embed", "whole-disable:encoder",
                     "whole-disable:chatty"]  # fmt: skip
    assert "0.50x eager" in plan.candidate("whole-disable:embed").note


def test_a_big_model_is_still_one_categorical_parameter_over_a_few_choices():
    units = tuple(f"extra{i}" for i in range(10))
    probes = healthy_probes(layers=48) + [probe(p) for p in units]
    plan = build_plan(tree(layers=48, extra_units=units), probes, "inductor")
    assert plan.names == ["whole", "regional:Layer", "children"]
    study = optuna.create_study(sampler=optuna.samplers.RandomSampler(seed=0))
    drawn = set()
    for _ in range(30):
        trial = study.ask()
        scope = plan.suggest(trial)
        assert list(trial.params) == [SCOPE_PARAM]
        assert plan.scope_from_params(trial.params) == scope
        drawn.add(trial.params[SCOPE_PARAM])
        study.tell(trial, 1.0)
    assert drawn == set(plan.names)


def test_a_model_without_children_has_one_fixed_candidate():
    plan = build_plan(ModelTree("Lin", 3, (), ()), [], "inductor")
    trial = optuna.create_study().ask()
    assert plan.suggest(trial) == Scope() and trial.params == {}
    assert plan.size == 1


def test_the_plan_is_plain_json_and_keeps_its_choices():
    plan = build_plan(tree(), mixed_probes(), "aot_eager")
    again = ScopePlan.from_dict(json.loads(json.dumps(plan.to_dict())))
    assert again == plan
    assert again.content_hash() == plan.content_hash()
    with pytest.raises(KeyError, match="'regional:Nope' is not in this plan"):
        plan.candidate("regional:Nope")


def test_a_region_split_around_a_looped_part_never_compiles_a_broken_one():
    """Found by the probe tests: splitting the whole model around slower Layer blocks once
    compiled the broken part beside them."""
    probes = [probe(p.target, q3=0.5, paths=p.paths) for p in healthy_probes()]
    probes[4] = probe("bad", "crash", reason="the trial process died of SIGABRT")
    plan = build_plan(tree(), probes, "inductor")
    for candidate in plan.candidates:
        assert "bad" not in candidate.scope.compile, candidate
    split = plan.candidate("whole-disable:Layer").scope
    assert split == Scope(("embed", "chatty", "head"))


def test_a_slower_looped_block_beside_only_broken_parts_adds_no_candidate_that_compiles_nothing():
    """Found by CI on a loaded machine (issue 39's aborting-part model): when the repeated
    blocks, run in a loop, compiled alone slower and every other part is broken, keeping them
    eager leaves the whole model nothing to compile; that candidate is dropped, not an
    invalid scope that ends the search."""
    chains = tuple(ModulePart(f"blocks.{i}", "Chain", 0, 1, 0.3) for i in range(3))
    units = tuple(ModulePart(p, "Part", 0, 1, 0.05) for p in ("crashy", "hangs"))
    model = ModelTree("Model", 0, units, units, (BlockClass("Chain", chains),), 1e-3)
    probes = [
        ProbeResult(
            "Chain", "block", tuple(c.path for c in chains), "ok", True, speedup_vs_eager_q3=0.6
        ),  # fmt: skip
        probe("crashy", "crash", reason="the trial process died of SIGABRT"),
        probe("hangs", "timeout", reason="killed after its compile budget"),
    ]
    plan = build_plan(model, probes, "inductor")
    assert not any(name.startswith("whole-disable") for name in plan.names)
    assert by_name(plan)["whole"] == Scope(("",), ("crashy", "hangs"))
    for candidate in plan.candidates:
        assert candidate.scope.compile and not {"crashy", "hangs"} & set(candidate.scope.compile)
