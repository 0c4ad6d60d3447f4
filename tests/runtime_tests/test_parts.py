"""A config in parts (runtime/_parts.py, ``CompileConfig.parts``): the rule, the schema, and
``autotune.apply`` sending each call of ``generate()`` to its part's compiled code."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
import torch
from torch._dynamo.backends import registry
from torch._dynamo.utils import counters

import autotune
from autotune.runtime import _calls
from autotune.runtime.config import (
    BestConfig,
    CompileConfig,
    ConfigError,
    Part,
    When,
    for_generate,
    prefill_config,
)

DECODE = When("input_ids", 1, max=1)


@pytest.fixture(autouse=True)
def _fresh_dynamo() -> Iterator[None]:
    torch._dynamo.reset()
    counters.clear()
    yield
    torch._dynamo.reset()


def test_a_rule_takes_calls_by_one_dimension_of_one_input() -> None:
    ids = torch.zeros(2, 1, dtype=torch.long)
    assert DECODE.matches((), {"input_ids": ids})
    assert not DECODE.matches((), {"input_ids": torch.zeros(2, 32, dtype=torch.long)})
    assert not DECODE.matches((ids,), {})  # a keyword rule reads keywords only
    assert When("0", 1, max=1).matches((ids,), {})  # digits: a positional argument
    assert not DECODE.matches((), {"input_ids": [[1]]})  # no shape: no match
    assert not When("input_ids", 2, min=1).matches((), {"input_ids": ids})  # no such dim
    assert When("input_ids", 1, min=2, max=64).describe() == "2 <= input_ids.shape[1] <= 64"
    assert DECODE.describe() == "input_ids.shape[1] <= 1"
    assert When("x", 0, min=1, max=1).describe() == "x.shape[0] == 1"


def test_parts_round_trip_and_hash_apart_from_a_config_without_them() -> None:
    decode = CompileConfig(fullgraph=True, options={"triton.cudagraphs": True})
    config = CompileConfig(dynamic=True, parts=(Part("decode", DECODE, decode),))
    d = config.to_dict()
    assert d["parts"] == [{"name": "decode",
                           "when": {"input": "input_ids", "dim": 1, "min": None, "max": 1},
                           "config": decode.to_dict()}]  # fmt: skip
    assert CompileConfig.from_dict(json.loads(json.dumps(d))) == config
    assert "parts" not in CompileConfig(dynamic=True).to_dict()
    assert config.config_hash() != CompileConfig(dynamic=True).config_hash()
    assert config.brief().endswith("decode[inductor default dyn=None fg=True triton.cudagraphs=1]")
    eager = CompileConfig(parts=({"name": "decode", "when": DECODE.to_dict(), "config": None},))
    assert eager.parts == (Part("decode", DECODE, None),) and "decode[eager]" in eager.brief()


def test_the_schema_names_every_problem_of_the_parts() -> None:
    bad = {
        "scope": {"compile": ["layers.0"]},
        "parts": [
            {"name": "decode", "when": {"input": "input_ids", "dim": 1}, "config": None},
            {"name": "decode", "when": {"input": "", "dim": -1, "min": 9, "max": 2},
             "config": {"parts": []}},
            {"name": "two words", "when": "always", "config": {"scope": {"compile": ["a"]}}},
        ],
    }  # fmt: skip
    with pytest.raises(ConfigError) as raised:
        CompileConfig.from_dict(bad)
    message = str(raised.value)
    for expected in (
        "config.parts: a config with parts compiles the whole model",
        "config.parts[0].when: a rule needs a size: min, max or both",
        "config.parts[1].name: 'decode' names two parts",
        "config.parts[1].when.input: expected an argument's name or index",
        "config.parts[1].when.dim: expected an integer >= 0, got -1",
        "config.parts[1].when: min 9 is above max 2",
        "config.parts[1].config: a part's config has no parts of its own",
        'config.parts[2].name: expected a name like "decode"',
        "config.parts[2].when: expected an object like",
        "config.parts[2].config.scope: a part compiles the whole model",
    ):
        assert expected in message, expected


def test_an_entry_with_parts_is_written_at_version_2(tmp_path: Path) -> None:
    """An older autotune refuses it, saying to upgrade; an entry without parts stays version 1,
    readable by every autotune since the first."""
    parted = CompileConfig(parts=(Part("decode", DECODE, CompileConfig(fullgraph=True)),))
    for config, version in ((CompileConfig(), 1), (parted, 2)):
        best = BestConfig(decision="compile", reason="test", config=config)
        best.dump(tmp_path / "best.json")
        assert json.loads((tmp_path / "best.json").read_text())["schema_version"] == version
        assert autotune.load(tmp_path / "best.json").config == config


class Generator(torch.nn.Module):
    """A ``generate()`` loop as transformers writes it: ``self(...)`` for the prompt, then once
    per new token with one position per sequence. Each call records its length, whether Dynamo
    compiled it and whether autocast was on (what the decode part sets)."""

    def __init__(self) -> None:
        super().__init__()
        self.proj = torch.nn.Linear(8, 8)
        self.calls: list[tuple[int, bool, bool]] = []

    def forward(self, input_ids: torch.Tensor) -> torch.Tensor:
        on = torch.is_autocast_enabled("cpu")
        self.calls.append((input_ids.shape[1], torch.compiler.is_compiling(), on))
        return torch.tanh(self.proj(input_ids))

    def generate(self, prompt: torch.Tensor, new: int) -> torch.Tensor:
        x = self(input_ids=prompt)[:, -1:]
        out = [x]
        for _ in range(new - 1):
            x = self(input_ids=x)
            out.append(x)
        return torch.cat(out, dim=1)


def test_generate_runs_the_prefill_and_each_decode_step_in_its_own_part() -> None:
    torch.manual_seed(0)
    model, prompt = Generator().eval(), torch.randn(2, 6, 8)
    decode = CompileConfig(backend="eager", precision={"autocast": "bfloat16"})
    config = CompileConfig(backend="eager", parts=(Part("decode", DECODE, decode),))
    with torch.no_grad():
        expected = model.generate(prompt, 5)
        model.calls.clear()
        fast = autotune.apply(model, config)
        got = fast.generate(prompt, 5)
    assert fast is model and list(model.state_dict()) == ["proj.weight", "proj.bias"]
    # The prefill compiled in fp32, every decode step compiled under the part's autocast.
    assert model.calls == [(6, True, False)] + [(1, True, True)] * 4
    torch.testing.assert_close(got, expected, rtol=2e-2, atol=2e-2)  # bf16 decode


def test_a_part_without_a_config_runs_its_calls_eager() -> None:
    model, prompt = Generator().eval(), torch.randn(1, 3, 8)
    config = CompileConfig(backend="eager", parts=(Part("decode", DECODE, None),))
    with torch.no_grad():
        autotune.apply(model, config).generate(prompt, 3)
    assert model.calls == [(3, True, False), (1, False, False), (1, False, False)]


def test_parts_refuse_a_model_whose_forward_is_torchs_own() -> None:
    config = CompileConfig(backend="eager", parts=(Part("decode", DECODE, None),))
    with pytest.raises(ConfigError, match="Sequential's forward is torch's own"):
        autotune.apply(torch.nn.Sequential(torch.nn.Linear(2, 2)), config)


def test_a_parts_knobs_are_checked_like_the_configs_own() -> None:
    part = Part("decode", DECODE, CompileConfig(options={"not_a_knob_of_inductor": 1}))
    with pytest.raises(ConfigError, match="not_a_knob_of_inductor"):
        autotune.apply(Generator(), CompileConfig(parts=(part,)))


def test_outputs_of_a_cuda_graph_region_are_the_callers_own(monkeypatch) -> None:
    """Measured on an H200 (benchmarks/results/decode_cuda_h200.md): a CUDA graph's outputs
    are overwritten by its next replay, and generate() held the prefill's while it decoded.
    Each output tensor leaves the region as a clone; outside autograd each call starts a new
    CUDA-graph step."""
    held, steps = torch.ones(2, 3), []
    monkeypatch.setattr(torch.compiler, "cudagraph_mark_step_begin", lambda: steps.append(1))
    call = _calls.own_outputs(lambda: {"logits": held, "cache": "kept", "n": 3})
    with torch.no_grad():
        out = call()
    assert out["cache"] == "kept" and out["n"] == 3 and steps == [1]
    assert torch.equal(out["logits"], held) and out["logits"].data_ptr() != held.data_ptr()
    call()  # under autograd: a step may span a forward and its backward
    assert steps == [1]
    assert _calls.uses_cuda_graphs(CompileConfig(options={"triton.cudagraphs": True}))
    assert not _calls.uses_cuda_graphs(CompileConfig(mode="max-autotune-no-cudagraphs"))


@pytest.fixture
def counting_backend(monkeypatch) -> list[int]:
    """A torch.compile backend named ``autotune_test_counting`` that runs each graph as
    traced and counts the calls of its graphs (one entry per call: its graph's number)."""
    torch._dynamo.list_backends()  # the built-in ones into the real registry first
    monkeypatch.setattr(registry, "_BACKENDS", dict(registry._BACKENDS))
    monkeypatch.setattr(registry, "_COMPILER_FNS", dict(registry._COMPILER_FNS))
    calls: list[int] = []
    graphs = iter(range(1000))

    @registry.register_backend(name="autotune_test_counting")
    def counting(gm, example_inputs):  # noqa: ARG001
        number = next(graphs)

        def run(*args):
            calls.append(number)
            return gm.forward(*args)

        return run

    return calls


def _static_llama():
    """A 2-layer transformers Llama with a static cache (transformers' own compile off) and a
    greedy ``generate`` of 6 new tokens after a prompt of a given length."""
    transformers = pytest.importorskip("transformers")
    config = transformers.LlamaConfig(
        vocab_size=64, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64,
    )  # fmt: skip
    torch.manual_seed(0)
    llama = transformers.LlamaForCausalLM(config).eval()
    llama.generation_config.cache_implementation = "static"
    llama.generation_config.disable_compile = True  # transformers' own compile: never nested

    def generate(model, length=7):
        prompt = torch.randint(0, 64, (1, length), generator=torch.Generator().manual_seed(length))
        return model.generate(prompt, attention_mask=torch.ones_like(prompt), do_sample=False,
                              max_new_tokens=6, min_new_tokens=6, pad_token_id=0)  # fmt: skip

    return llama, generate


def test_generate_of_a_transformers_llama_runs_every_decode_step_compiled(
    counting_backend: list[int],
) -> None:
    """Issue 43's test: ``model.generate()`` with a static cache on the applied model runs
    the decode part's graph at every new token but the first (the prefill's), and compiles
    nothing more in a second ``generate()`` (no recompile per token)."""
    llama, generate = _static_llama()
    with torch.no_grad():
        expected = generate(llama)
        decode = CompileConfig(backend="autotune_test_counting", fullgraph=True)
        parts = CompileConfig(backend="eager", parts=(Part("decode", DECODE, decode),))
        fast = autotune.apply(llama, parts, allow_unsafe_knobs=["backend.autotune_test_counting"])
        assert torch.equal(generate(fast), expected)  # greedy fp32: the same tokens
        assert len(counting_backend) == 5 and len(set(counting_backend)) == 1
        graphs = counters["stats"]["unique_graphs"]
        assert torch.equal(generate(fast), expected)
    assert len(counting_backend) == 10 and counters["stats"]["unique_graphs"] == graphs


def test_a_compiled_prefill_runs_its_own_graph_and_goes_dynamic_over_prompt_lengths(
    counting_backend: list[int],
) -> None:
    """The generate plan with its prefill compiled (``for_generate(config, "compiled")``):
    each ``generate()`` runs one prefill graph call and five decode graph calls, on graphs
    of their own; prompts of a second and a third length cost one more prefill graph (torch's
    automatic dynamic shapes), not one per length."""
    llama, generate = _static_llama()
    with torch.no_grad():
        expected = [generate(llama, n) for n in (7, 9, 11)]
        decode = CompileConfig(backend="autotune_test_counting", fullgraph=True, dynamic=False)
        plan = for_generate(decode, "compiled")
        fast = autotune.apply(llama, plan, allow_unsafe_knobs=["backend.autotune_test_counting"])
        assert torch.equal(generate(fast, 7), expected[0])
        prefill, *decodes = counting_backend
        assert len(decodes) == 5 and set(decodes) == {decodes[0]} and prefill != decodes[0]
        again = [generate(fast, n) for n in (9, 11)]
        assert all(torch.equal(a, e) for a, e in zip(again, expected[1:], strict=True))
    assert len(counting_backend) == 18
    assert len(set(counting_backend)) == 3  # decode, prefill at 7, prefill dynamic after


def test_the_prefill_compiles_the_decodes_knobs_without_cuda_graphs() -> None:
    decode = CompileConfig(
        mode="reduce-overhead", dynamic=False, fullgraph=True, precision={"autocast": "bfloat16"},
        options={"triton.cudagraphs": True, "max_fusion_size": 32},
    )  # fmt: skip
    prefill = prefill_config(decode)
    assert prefill == CompileConfig(
        mode="default", dynamic=None, fullgraph=True, options={"max_fusion_size": 32},
        precision={"autocast": "bfloat16"},
    )  # fmt: skip
    assert not _calls.uses_cuda_graphs(prefill)
    assert prefill_config(CompileConfig(mode="max-autotune", dynamic=True)).mode == (
        "max-autotune-no-cudagraphs"
    )
    assert prefill_config(CompileConfig(dynamic=True)).dynamic is True
    plan = for_generate(decode, "compiled")
    assert [p.config for p in plan.parts] == [prefill] and for_generate(plan) == plan
    assert for_generate(decode).parts[0].config is None
    with pytest.raises(ConfigError, match="prefill must be one of 'eager', 'compiled'"):
        for_generate(decode, "static")
