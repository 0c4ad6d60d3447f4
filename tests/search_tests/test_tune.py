"""autotune.tune: a model object and its inputs tuned in one call, trials in processes of their
own (the model reaches them as a bundle, a class defined in a function by value), the same
options as `autotune search` in their Python names, and a result to apply and read."""

from __future__ import annotations

from pathlib import Path

import homes
import pytest
import torch
from torch import nn

import autotune
from autotune.errors import UsageError

AOT_EAGER = Path(__file__).parents[1] / "fixtures" / "spaces" / "aot_eager.toml"
FAST = {"device": "cpu", "space": str(AOT_EAGER), "trials": 2, "finalists": 0,
        "measure_seconds": 0.2, "scope": "whole", "quiet": True}  # fmt: skip


def _model() -> tuple[nn.Module, torch.Tensor]:
    class Local(nn.Module):  # defined here: cloudpickle sends it by value, as from a notebook
        def __init__(self) -> None:
            super().__init__()
            self.a, self.b = nn.Linear(16, 32), nn.Linear(32, 4)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return self.b(torch.relu(self.a(x)))

    torch.manual_seed(0)
    return Local().eval(), torch.randn(8, 16)


def _measured(records):
    """The searched trials the budget counts: a draw of a configuration measured before is
    reused and recorded as a duplicate, not counted."""
    return [r for r in records if not r.baseline and r.duplicate_of is None]


@pytest.fixture(scope="module")
def tuned(tmp_path_factory):
    folder = tmp_path_factory.mktemp("tune")
    with pytest.MonkeyPatch.context() as mp:
        mp.chdir(folder)
        # The tests' kernel cache (set up before conftest's for this test): default compile's
        # graph, and the C++ toolchain's probes, come from the run's earlier studies
        homes.shared(mp, tmp_path_factory.getbasetemp())
        model, x = _model()
        result = autotune.tune(model, (x,), **FAST)
    return folder, model, x, result


def test_tune_runs_the_study_in_trial_processes_and_writes_the_file(tuned):
    folder, model, x, result = tuned
    assert result.study.startswith("Local-") and result.study.endswith("-cpu")
    assert (folder / "best_config.json").is_file() and result.out == "best_config.json"
    (bundle,) = (folder / ".autotune" / "models").iterdir()
    assert bundle.name.startswith("Local-") and bundle.suffix == ".pt"
    baselines = {r.baseline: r for r in result.records if r.baseline}
    assert baselines["eager"].status == "ok" and baselines["default"].status == "ok", [
        (r.brief, r.error) for r in result.records
    ]
    assert len(_measured(result.records)) == 2
    assert result.best.decision in ("compile", "do_not_compile") and result.best.reason


def test_the_result_applies_reports_and_shows_itself(tuned, monkeypatch):
    folder, model, x, result = tuned
    monkeypatch.chdir(folder)
    with torch.no_grad():
        expected = model(x)  # apply compiles a whole model in place: eager first
        fast = result.apply(model, check_environment=False)
        torch.testing.assert_close(fast(x), expected)
    assert "Decision (as `autotune finalize` would make it now" in result.report()
    shown = result._repr_html_()
    assert result.study in shown and "<table>" in shown and "[eager]" in shown
    assert repr(result).startswith(f"TuneResult(study={result.study!r}, ")
    assert result.write_html(folder / "report.html") > 20_000


def test_the_same_model_resumes_its_study(tuned, monkeypatch):
    folder, model, x, result = tuned
    monkeypatch.chdir(folder)
    again = autotune.tune(model, (x,), **{**FAST, "trials": 3})
    assert again.study == result.study  # the same bundle: the same study, one more trial
    assert len(_measured(again.records)) == 3


@pytest.mark.parametrize(
    ("options", "said"),
    [
        ({"trails": 3}, "unknown option trails=3 (did you mean trials=?)"),
        ({"trials": 0}, "autotune.tune: trials=: must be at least 1, got 0"),
        ({"prune": "no"}, "prune=: must be true or false, got 'no'"),
        ({"no_worker": True}, "takes no no_worker="),
        ({"sampler": "grid"}, "sampler=: must be one of tpe, random, got 'grid'"),
        (
            {"trials": 0, "trails": 3},
            "autotune.tune: 2 problems: trials=: must be at least 1, got 0; unknown option",
        ),
    ],
)
def test_a_bad_option_is_one_usage_error_in_python_words(tmp_path, monkeypatch, options, said):
    monkeypatch.chdir(tmp_path)
    model, x = _model()
    with pytest.raises(UsageError) as raised:
        autotune.tune(model, (x,), **options)
    assert said in str(raised.value)
    assert not (tmp_path / "autotune.db").exists()  # refused before anything was written


def test_what_cannot_be_pickled_is_refused_with_the_remedy(tmp_path, monkeypatch):
    import threading

    monkeypatch.chdir(tmp_path)
    model, _ = _model()
    with pytest.raises(UsageError, match="cannot be saved for the trial processes"):
        autotune.tune(model, (threading.Lock(),), **FAST)


def test_a_served_models_traffic_is_tuned_per_request_with_its_tail(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    model, x = _model()
    traffic = [((x[:1],), 9), ((torch.randn(256, 16),), 1)]  # nine short requests in ten
    result = autotune.tune(model, traffic=traffic, **{**FAST, "trials": 1})
    eager = next(r for r in result.records if r.baseline == "eager")
    assert eager.status == "ok", eager.error
    assert [s["weight"] for s in eager.per_shape] == pytest.approx([0.9, 0.1])
    short, long = eager.per_shape  # nine in ten short: p50 is the short one's, p99 the long's
    assert eager.traffic["requests"] == 2 and eager.traffic["p50_s"] == short["latency_median_s"]
    assert eager.traffic["p99_s"] == long["latency_median_s"]
    assert "Latency per request of the traffic (2 requests, weighted)" in result.report()
    with pytest.raises(UsageError, match="inputs or its traffic, one of them"):
        autotune.tune(model, (x,), traffic=traffic, **FAST)


def test_a_users_train_step_is_tuned_under_a_training_contract(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    model, x = _model()
    target = torch.randn(8, 4)

    def train_step(model, optimizer, inputs):  # accumulation over two halves, clipping
        total = 0.0
        for half, want in zip(inputs[0].chunk(2), target.chunk(2), strict=True):
            loss = nn.functional.mse_loss(model(half), want) / 2
            loss.backward()
            total += loss.detach()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        optimizer.zero_grad()
        return total

    space = AOT_EAGER.with_name("aot_eager_train.toml")
    options = {**FAST, "space": str(space), "trials": 3, "prune": False}
    result = autotune.tune(
        model.train(), (x,), workload="train", train_step=train_step,
        units=lambda inputs: (inputs[0].shape[0], "rows"),
        accuracy="loss_rel<=0.05,grad_cosine>=0.99", **options,
    )  # fmt: skip
    ok = [r for r in result.records if r.status == "ok" and r.duplicate_of is None]
    preset = next(r for r in ok if r.config and r.config.get("train"))
    assert preset.config["precision"] == {"autocast": "bfloat16"}
    assert preset.result["accuracy"]["held_to"] == "contract"
    assert 0 < preset.result["accuracy"]["loss_rel"] <= 0.05
    assert preset.units == "rows" and preset.units_per_s() > 0
    assert all("grad_cosine" in r.result["accuracy"] for r in ok)
    assert result.best.workload["kind"] == "train" and result.best.workload["units"] == "rows"


def test_a_models_generate_is_tuned_and_the_plan_applied(tmp_path, monkeypatch):
    """``workload="generate"``: a transformers model object and its requests, tuned as
    ``autotune search --workload generate`` tunes a model file; the file applies to it."""
    transformers = pytest.importorskip("transformers")
    monkeypatch.chdir(tmp_path)
    # The model and request of tests/fixtures/models/generate_llama_short.py, which the generate
    # search of trials_tests runs first: default compile's graphs are kernel-cache hits here.
    config = transformers.LlamaConfig(
        vocab_size=64, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64,
    )  # fmt: skip
    torch.manual_seed(0)
    llama = transformers.LlamaForCausalLM(config).eval()
    llama.generation_config.cache_implementation = "static"
    llama.generation_config.pad_token_id = 0
    prompt = torch.randint(1, 64, (1, 7))
    request = {"input_ids": prompt, "attention_mask": torch.ones_like(prompt),
               "max_new_tokens": 16, "min_new_tokens": 16}  # fmt: skip
    space = AOT_EAGER.with_name("aot_eager_generate.toml")
    result = autotune.tune(llama, request, workload="generate", **{**FAST, "space": str(space)})
    ok = [r for r in result.records if r.status == "ok" and r.duplicate_of is None]
    assert all(r.result["accuracy"]["held_to"] == "tokens" for r in ok)
    assert any(r.config.get("parts") for r in ok)  # a compiled prefill was measured
    assert result.best.workload["kind"] == "generate"
    with torch.no_grad():
        expected = llama.generate(**request, do_sample=False)
        fast = result.apply(llama)
        assert torch.equal(fast.generate(**request, do_sample=False), expected)
