"""benchmarks/train_suite.py's pure parts: the bf16 flags it reads, its arguments, the loss
drift, the geomean and the tables, on hand-built figures (nothing compiles)."""

from __future__ import annotations

import math
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parents[2] / "benchmarks"))
import train_suite as ts  # noqa: E402
from suite import ModelRun, Row  # noqa: E402

CPUINFO = """processor\t: 0
model name\t: Some CPU
flags\t\t: fpu avx2 avx512f avx512_bf16 amx_tile amx_bf16 amx_int8
processor\t: 1
flags\t\t: fpu avx2
"""


def test_the_bf16_flags_come_from_the_first_flags_line():
    assert ts.bf16_flags(CPUINFO) == ["avx512_bf16", "amx_bf16"]
    assert ts.bf16_flags("flags\t: fpu avx2 avx512f avx512_bf16_x\n") == []
    assert ts.bf16_flags("model name\t: an ARM board\nFeatures\t: fp asimd bf16\n") == []


def test_arguments_default_to_the_contract_and_refuse_unknown_models(capsys):
    args = ts.parse_args([])
    assert args.models == "llama,vit,mlp" and args.trials == 8 and args.seconds == 20.0
    assert args.accuracy == "loss_rel<=0.02,grad_cosine>=0.99"
    assert args.out.name == "train_suite_cpu.md"
    with pytest.raises(SystemExit):
        ts.parse_args(["--models", "mlp,gpt5"])
    assert "unknown model(s) gpt5" in capsys.readouterr().err
    assert args.searches == "fp32-exact,contract" and args.front
    cuda = ts.parse_args(["--device", "cuda:0", "--searches", "contract", "--no-front"])
    assert cuda.out.name == "train_suite_cuda.md" and not cuda.front
    with pytest.raises(SystemExit):
        ts.parse_args(["--device", "mps"])
    assert "--device mps: the train suite runs on cpu or cuda" in capsys.readouterr().err


def test_drift_is_the_largest_relative_loss_difference():
    assert ts.drift([2.0, 1.1], [2.0, 1.0]) == pytest.approx(0.1)
    assert ts.drift([1.0], [1.0]) == 0.0


def _m(label: str, step_ms: float, **kw) -> ts.Measured:
    return ts.Measured(label, kw.pop("config", "c"), step_ms=step_ms, q1_ms=step_ms - 1,
                       q3_ms=step_ms + 1, **kw)  # fmt: skip


def _model(default_ms: float, tuned_ms: float, exact_ms: float) -> dict:
    rows = [_m(ts.EAGER, 2 * default_ms), _m(ts.DEFAULT, default_ms), _m(ts.TUNED, tuned_ms),
            _m(ts.EXACT, exact_ms)]  # fmt: skip
    return {"side_by_side": rows, "searches": [], "per_step": 512, "unit": "tokens"}


def test_geomeans_are_over_the_models_against_default_compile():
    means = ts.geomeans({"a": _model(10.0, 5.0, 10.0), "b": _model(10.0, 20.0, 8.0)})
    assert means[ts.TUNED] == pytest.approx(1.0)  # 2x and 0.5x
    assert means[ts.EXACT] == pytest.approx(math.sqrt(1.25))
    assert ts.geomeans({"a": {"side_by_side": [_m(ts.EAGER, 1.0)]}})[ts.TUNED] is None


def test_the_side_table_shows_speedups_throughput_and_a_failure():
    rows = [
        _m(ts.EAGER, 20.0, first_step_s=0.3, peak_rss_mib=900.0, step_mib=40.0, drift=0.0),
        _m(ts.DEFAULT, 10.0, peak_rss_mib=950.0, step_mib=30.0, drift=1e-7),
        ts.Measured(ts.TUNED, "bf16", error="RuntimeError: boom"),
    ]
    table = ts.side_table(rows, 512, "tokens")
    assert "| tokens/s |" in table
    assert (
        "| eager fp32 | `c` | 20.0 (19.0-21.0) | 0.50x | 1.00x | 25600 | 0.3 s | 900 MiB" in table
    )
    assert "| default torch.compile | `c` | 10.0 (9.0-11.0) | 1.00x | 2.00x | 51200 | - |" in table
    assert "| tuned under the contract | `bf16` | failed: RuntimeError: boom |" in table


def test_the_round_table_shows_the_training_errors_of_each_finalist():
    run = ModelRun("mlp", 61.0, "compile", "fastest", {}, rows=[
        Row("default torch.compile", "default", 1.2, 1.1, 1.3, 5.0, 2.0),
        Row("preset bf16-autocast", "bf16", 1.8, 1.7, 1.9, 6.0, 2.0, emitted=True, exact=False),
    ])  # fmt: skip
    search = ts.Search("contract", run, {"precision": {"autocast": "bfloat16"}}, {
        "bf16": {"config": {}, "loss_rel": 0.004, "grad_cosine": 0.9991},
        "default": {"config": {}, "loss_rel": 0.0, "grad_cosine": 1.0},
    })  # fmt: skip
    table = ts.round_table(search)
    assert "contract search (61 s): decision **compile**: fastest" in table
    assert "| preset bf16-autocast | `bf16` | 1.80x (1.70-1.90) | 1.50x | 4.0e-03 | 0.999100 " \
           "| **yes** |" in table  # fmt: skip
    assert ts.best_preset(search) == ("preset bf16-autocast", "bf16", {})


def test_the_report_states_the_machine_and_the_geomeans(tmp_path):
    machine = {"date": "2025-01-01T00:00:00+00:00", "device": "cpu", "cpu": "X, 2 cores",
               "bf16_flags": [], "torch": "2.13", "cores": 2, "threads": 2,
               "load_start": (0.5, 0.4, 0.3), "command": "python benchmarks/train_suite.py",
               "accuracy": None, "seconds": 20.0}  # fmt: skip
    model = _model(10.0, 5.0, 8.0)
    model["front"] = [_m("1.0", 10.0, step_mib=300.0), ts.Measured("0.2", "", error="E: x")]
    model["front_of"] = ts.DEFAULT
    text = ts.report(machine, {"llama": model})
    assert "bf16 flags: none (bf16 emulated: contract search skipped)" in text
    assert "Load average (1, 5, 15 min) at start: 0.50, 0.40, 0.30" in text
    assert "tuned under the contract **2.00x**, tuned fp32-exact **1.25x**" in text
    assert "| 1.0 | 10.0 (9.0-11.0) | - | 300 MiB |" in text and "| 0.2 | failed: E: x |" in text
    out = tmp_path / "r.md"
    ts.write_text(out, text)
    assert out.read_text() == text and [p.name for p in tmp_path.iterdir()] == ["r.md"]


def test_a_config_differing_only_around_calls_gets_its_own_graph():
    ts._COMPILED.clear()
    default = {"backend": "inductor", "options": {}}
    budget = {**default, "functorch": {"activation_memory_budget": 0.5}}
    lower = {**default, "functorch": {"activation_memory_budget": 0.2}}
    assert ts.distinct("m", default) == (default, "")
    first, note = ts.distinct("m", budget)
    assert set(first["options"]) == {"max_fusion_size"} and "own graph" in note
    second, _ = ts.distinct("m", lower)
    assert len(second["options"]) == 2
    assert ts.distinct("m", budget)[0] == first  # the same config: the same graph
    assert ts.distinct("other", budget) == (budget, "")  # another model compiles its own
    assert ts.distinct("m", None) == (None, "")
    ts._COMPILED.clear()
