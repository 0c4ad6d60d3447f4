"""benchmarks/decode_suite.py's pure parts: its arguments, the decode/prefill split of the
compiled variants, the tuned config's own graph and the report, on hand-built figures and a
stand-in model (nothing compiles)."""

from __future__ import annotations

import sys
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch

pytest.importorskip("transformers")
sys.path.insert(0, str(Path(__file__).parents[2] / "benchmarks"))
import decode_suite as ds  # noqa: E402

import autotune  # noqa: E402


def test_arguments_pick_variants_and_refuse_unknown_ones(capsys):
    args = ds.parse_args(["--device", "cpu"])
    assert args.variants.split(",") == ["eager", "hf", "default", "gpt-fast", "int8", "tuned"]
    assert args.out.name == "decode_cpu.md" and args.config is None and args.model == "llama"
    gpt2 = ds.parse_args(["--device", "cpu", "--model", "gpt2"])
    assert gpt2.out.name == "decode_cpu_gpt2.md"
    assert ds.model_file("gpt2").model_config("cpu").n_layer == 6
    with pytest.raises(SystemExit):
        ds.parse_args(["--device", "cpu", "--variants", "eager,vllm"])
    assert "unknown variant(s) vllm" in capsys.readouterr().err


def test_compiled_variants_run_the_decode_step_only_and_clone_its_logits():
    seen, held = [], torch.zeros(1, 1, 4)

    class Out(dict):
        def __getattr__(self, name):
            return self[name]

        def __setattr__(self, name, value):
            self[name] = value

    def eager(**kwargs):
        seen.append(("eager", kwargs["input_ids"].shape[1]))
        return Out(logits=torch.zeros(1, kwargs["input_ids"].shape[1], 4))

    def compiled(**kwargs):
        seen.append(("compiled", kwargs["input_ids"].shape[1]))
        return Out(logits=held)

    llama = SimpleNamespace(forward=eager)
    ds.decode_only(llama, compiled)
    llama.forward(input_ids=torch.zeros(1, 32, dtype=torch.long))  # the prefill
    out = llama.forward(input_ids=torch.zeros(1, 1, dtype=torch.long))  # a decode step
    assert seen == [("eager", 32), ("compiled", 1)]
    assert torch.equal(out.logits, held) and out.logits.data_ptr() != held.data_ptr()


def test_the_tuned_config_compiles_its_own_graph_with_the_same_code():
    import torch._inductor.config as inductor

    config = autotune.CompileConfig(options={"triton.cudagraphs": True})
    own = ds.own_graph(config)
    default = inductor.get_config_copy()["max_fusion_size"]
    assert own.options == {"triton.cudagraphs": True, "max_fusion_size": default}
    assert ds.own_graph(own) is own
    assert ds.own_graph(autotune.CompileConfig(backend="aot_eager")).options == {}


def test_the_report_gives_each_batch_against_eager_and_the_gpt_fast_recipe():
    machine = {"device": "cuda", "date": "d", "name": "GPU", "torch": "2.11", "triton": "3.6",
               "transformers": "5.24", "extra": "", "command": "c", "params_m": 111.0,
               "new": 64, "out": "decode_cuda", "model_file": "gpt2_generate.py",
               "prompt": 32}  # fmt: skip
    row = dict(rounds=9, latency_s=0.1, ttft_ms=8.0, startup_s=5.0, startup_graphs=1,
               tokens_equal_to_eager=1.0, graphs_while_timed=0)  # fmt: skip
    rows = {
        ds.EAGER: {**row, "decode_tokens_per_s": 200.0, "aggregate_tokens_per_s": 200.0},
        ds.HF: {"error": "transformers compiles by itself on CUDA only: not run"},
        ds.GPTFAST: {**row, "decode_tokens_per_s": 600.0, "aggregate_tokens_per_s": 600.0},
        ds.TUNED: {**row, "decode_tokens_per_s": 720.0, "aggregate_tokens_per_s": 720.0},
    }
    search = {"command": "autotune search", "exit": 0, "wall_s": 90.0, "file": {"metrics": {}}}
    text = ds.report(machine, search, {1: rows})
    assert "| tuned (autotune) | 720 | 720 | 3.60x | 1.20x |" in text
    assert "| transformers' own compile | transformers compiles by itself on CUDA only" in text
    assert "Emitted: `search failed`" in text
    assert "Model: benchmarks/models/gpt2_generate.py sized for cuda (111 M" in text
