"""The shape plan searched and shipped: a study of a served encoder with a padding declaration
draws the [shapes] plans, the best-config file carries the plan (the declaration with it) and
the shapes the traffic brought, and autotune.apply reproduces it: requests padded to buckets,
outputs cut back equal to eager's, every bucket compiled by warmup="plan" before traffic."""

from __future__ import annotations

import json

import pytest
import scripted
import torch

import autotune
from autotune.decide import best_config
from autotune.reports import show
from autotune.runtime.config import ConfigError
from autotune.runtime.shapes import call_spec
from autotune.search import Search, SearchRequest
from autotune.settings import StudySettings
from autotune.space import load_space
from autotune.trials import TrialResult, TrialSpec
from autotune.workload import build_calls, build_model, load_model_file, padding_of


@pytest.fixture
def encoder(model_file):
    module = load_model_file(model_file("padded_encoder"))
    torch.manual_seed(0)
    model = build_model(module, "cpu").eval()
    return module, model, build_calls(module, "cpu")


def _script(calls):
    warmup = [call_spec(c.args, c.kwargs) for c in calls]

    def script(spec: TrialSpec) -> TrialResult:
        if spec.config is None:
            result = scripted.ok(1.0)
        else:
            plan = (spec.config.get("shapes") or {}).get("plan")
            result = scripted.ok(1.6 if plan == "pad-pow2" else 1.1)
        result.warmup = warmup
        return result

    return script


def test_the_plan_is_searched_shipped_and_reproduced(tmp_path, encoder, space_file, model_file):
    module, model, calls = encoder
    space = load_space(space_file("aot_eager_shapes"), "cpu", padding=padding_of(module))
    settings = StudySettings(
        model_path=model_file("padded_encoder"), device="cpu", space=space.to_dict(),
        space_hash=space.content_hash(), torch_version=torch.__version__, scope="whole",
        trials=6, finalists=0,
    )  # fmt: skip
    request = SearchRequest("served", f"sqlite:///{tmp_path}/t.db", settings)
    search = Search(request, _Runner(_script(calls)))
    records = search.run()
    plans = {(r.config or {}).get("shapes", {}).get("plan") for r in records}
    assert {"pad-pow2", None} <= plans  # the preset, and the sampler's draws

    best = best_config(records, search.session.settings, "served", request.storage)
    assert best.decision == "compile" and best.config.shapes["plan"] == "pad-pow2"
    assert best.config.shapes["inputs"] == module.PADDING["inputs"]
    path = tmp_path / "best.json"
    path.write_text(json.dumps({"schema_version": 1, **best.to_dict()}))
    shown = " ".join(show.render(show.explain(best, str(path))).split())
    assert "Shape plan pad-pow2: attention_mask (dim 1, pad 0), input_ids (dim 1, pad 0) " in shown
    assert "padded to the next power of two, compiled static (a graph per bucket)" in shown
    assert 'warmup="plan" compiles the 8 shapes it was measured on' in shown

    with torch.no_grad():
        expected = [model(*c.args, **c.kwargs) for c in calls]
        torch._dynamo.reset()
        torch._dynamo.utils.counters.clear()
        fast = autotune.apply(model, str(path), warmup="plan", check_environment=False)
        compiled = torch._dynamo.utils.counters["stats"]["unique_graphs"]
        outputs = [fast(*c.args, **c.kwargs) for c in calls]
    assert compiled == 4  # buckets 8, 16, 32 and 64, all before the first request
    assert torch._dynamo.utils.counters["stats"]["unique_graphs"] == 4
    for got, want in zip(outputs, expected, strict=True):
        assert got["last_hidden_state"].shape == want["last_hidden_state"].shape
        torch.testing.assert_close(got["last_hidden_state"], want["last_hidden_state"])
        torch.testing.assert_close(got["pooled"], want["pooled"])


def test_a_plan_warm_up_needs_the_shapes_the_file_lists():
    model = torch.nn.Linear(4, 4)
    config = {"backend": "eager", "dynamic": None}
    with pytest.raises((ConfigError, ValueError), match='warmup="plan"'):
        autotune.apply(model, config, warmup="plan")


class _Runner:
    def __init__(self, script):
        self.script = script

    def run(self, spec: TrialSpec) -> TrialResult:
        return self.script(spec)

    def close(self) -> None:
        pass


def test_a_regional_scope_draws_no_compile_threshold(space_file):
    import optuna

    from autotune.runtime.config import Scope
    from autotune.scope import ScopePlan
    from autotune.scope._candidates import NamedScope
    from autotune.search._trial_path import config_for
    from autotune.space import space_from_dict

    padding = {"inputs": {"0": {"dim": 0, "value": 0}}, "outputs": {}}
    raw = {"name": "s", "compile": {"backend": ["aot_eager"]},
           "shapes": {"plan": ["auto", "marked"], "eager_above": ["none", 8]}}  # fmt: skip
    space = space_from_dict({**raw, "padding": padding}, "cpu")
    plan = ScopePlan([NamedScope("whole", Scope()), NamedScope("regional:a", Scope(("a",)))])
    study = optuna.create_study(sampler=optuna.samplers.RandomSampler(seed=1))
    drawn = [config_for(study.ask(), None, space, plan) for _ in range(60)]
    regional = [c for c in drawn if c.scope.compile != ("",)]
    whole = [c for c in drawn if c.scope.compile == ("",)]
    assert regional and all("eager_above" not in c.shapes for c in regional)
    assert any(c.shapes.get("eager_above") == 8 for c in whole)
    assert all(c.shapes.get("plan") != "auto" for c in regional if c.shapes)
