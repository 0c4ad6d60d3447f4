from __future__ import annotations

import json

from autotune.cli import main
from autotune.reports.show import explain, render
from autotune.runtime import BestConfig, CompileConfig, Scope


def _best(**config) -> BestConfig:
    compiled = CompileConfig(
        backend="inductor", mode="max-autotune-no-cudagraphs", dynamic=False,
        options={"freezing": True, "max_fusion_size": 128, "max_autotune": True},
        dynamo={"recompile_limit": 16}, scope=Scope(compile=("encoder",), disable=("head",)),
        **config,
    )  # fmt: skip
    return BestConfig(
        decision="compile", reason="trial 7 was the best correct configuration", config=compiled,
        metrics={"speedup_vs_eager": 1.5, "speedup_vs_eager_q1": 1.4, "speedup_vs_eager_q3": 1.6,
                 "speedup_vs_default": 1.1, "latency_median_s": 0.002,
                 "eager_latency_median_s": 0.003,
                 "cold_compile_time_s": 20.0, "warm_compile_time_s": 2.0,
                 "break_even_calls_vs_eager": 20000.0},
        environment={"device": "cpu", "device_name": "Some CPU", "torch": "2.0.0", "host": "h"},
        workload={"kind": "infer", "device": "cpu", "inputs": ["(4x16:float32)"],
                  "objective": "latency", "seed": 3, "relaxed_numerics": False},
        source={"study": "s", "trial": 7, "storage": "postgresql+psycopg://u:***@db/x"},
    )  # fmt: skip


def test_a_file_is_explained_knob_by_knob_with_what_each_does():
    words = render(explain(_best(), "best.json", here={"torch": "2.13.0"}))
    text = " ".join(words.split())  # lines are wrapped at 100 columns
    assert all(len(line) <= 100 for line in words.splitlines())

    assert "compile the model" in text and "trial 7 was the best" in text
    assert "each of these submodules compiled on its own, the rest eager: encoder" in text
    assert "kept eager inside it (torch.compiler.disable): head" in text
    assert "dynamic=False (static shapes: a new shape recompiles)" in text
    # max_autotune comes with the mode: not listed; freezing is, with its meaning
    assert "inductor.max_autotune " not in text
    assert "inductor.freezing = True: Inference only: constant-folds the weights" in text
    assert "Frozen weights: the first call under torch.no_grad() folds the model's" in text
    assert "dynamo.recompile_limit = 16" in text
    assert "1.50x eager (quartiles 1.40x to 1.60x), 1.10x default" in text
    assert "20.0 s cold (a new machine), 2.0 s warm" in text
    assert "after 20,000 calls vs eager" in text
    assert "u:***@db" in text and "seed 3" in text
    assert "torch: tuned with '2.0.0', running with '2.13.0'" in text


def test_show_prints_words_and_json_and_refuses_what_is_no_file(tmp_path, capsys):
    path = tmp_path / "best.json"
    _best().dump(path)

    assert main(["show", str(path)]) == 0
    assert "Knobs set beyond the mode's preset (3):" in capsys.readouterr().out
    assert main(["show", str(path), "--json"]) == 0
    facts = json.loads(capsys.readouterr().out)
    assert facts["decision"] == "compile" and facts["scope"]["disable"] == ["head"]
    assert {k["knob"] for k in facts["knobs"]} == {
        "inductor.freezing", "inductor.max_fusion_size", "dynamo.recompile_limit"
    }  # fmt: skip

    assert main(["show", str(tmp_path / "nope.json")]) == 2
    assert "does not exist" in capsys.readouterr().err
    (tmp_path / "bad.json").write_text('{"schema_version": 1}')
    assert main(["show", str(tmp_path / "bad.json")]) == 2
    assert "not a valid best-config file" in capsys.readouterr().err


def test_a_do_not_compile_file_says_so(tmp_path, capsys):
    best = BestConfig(decision="do_not_compile", reason="eager won", metrics={},
                      workload={"kind": "infer", "device": "cpu"})  # fmt: skip
    text = render(explain(best, "f.json"))

    assert "do not compile: serve the model eager" in text and "Scope" not in text


def test_a_password_a_file_carries_in_its_storage_is_not_shown(tmp_path, capsys):
    """A file written before storage URLs were masked whole may hold a password in the
    URL's query string; `autotune show` masks it, in words and as JSON."""
    best = _best()
    best.source["storage"] = "postgresql+psycopg://u:hunter2@db/x?sslpassword=k3yk3y"
    path = tmp_path / "best.json"
    path.write_text(json.dumps(best.to_dict()))

    assert main(["show", str(path)]) == 0
    assert main(["show", str(path), "--json"]) == 0

    out = capsys.readouterr().out
    assert "postgresql+psycopg://u:***@db/x?sslpassword=***" in out
    assert "hunter2" not in out and "k3yk3y" not in out


def test_show_names_unsafe_knobs_and_says_shipped_artifacts_are_native_code(tmp_path, capsys):
    from autotune.cli import main
    from autotune.runtime import BestConfig, CompileConfig
    from autotune.ship._archive import pack

    (tmp_path / "filled").mkdir()
    (tmp_path / "filled" / "k.so").write_bytes(b"x")
    cache = {**pack(tmp_path / "filled", tmp_path / "best.cache.tar.gz"), "valid_for": {}}
    config = CompileConfig(options={"cpp.cxx": [None, "/opt/g++"]})
    BestConfig(decision="compile", reason="r", config=config, cache=cache).dump(
        tmp_path / "best.json"
    )

    assert main(["show", str(tmp_path / "best.json")]) == 0
    text = " ".join(capsys.readouterr().out.split())
    assert "Unsafe knobs:" in text and "options.cpp.cxx: names a program" in text
    assert "Native code: the cache and the package hold pickles and shared objects" in text

    with open(tmp_path / "best.cache.tar.gz", "ab") as f:
        f.write(b"\0")
    assert main(["show", str(tmp_path / "best.json")]) == 0
    text = " ".join(capsys.readouterr().out.split())
    assert "its SHA-256 is not the one recorded" in text and "never loaded" in text


def test_a_plan_in_parts_says_which_calls_each_part_takes_and_the_generation_figures():
    from autotune.runtime.config import Part, When, for_generate

    config = for_generate(CompileConfig(fullgraph=True))
    assert config.parts == (Part("prefill", When("input_ids", 1, min=2), None),)
    assert for_generate(config) is config  # a plan already
    best = BestConfig(
        decision="compile", reason="r", config=config,
        metrics={"speedup_vs_eager": 1.5, "decode_tokens_per_s": 1234.0,
                 "eager_decode_tokens_per_s": 800.0, "ttft_s": 0.0071, "eager_ttft_s": 0.0069},
        workload={"kind": "generate", "device": "cpu", "objective": "latency"},
    )  # fmt: skip
    text = " ".join(render(explain(best, "best.json")).split())
    assert (
        "Part 'prefill': calls where input_ids.shape[1] >= 2 run eager; the other calls run "
        "the config below."
    ) in text
    figures = "decode 1,234 tokens/s against 800 eager; time to first token 7.1 ms against 6.9 ms"
    assert figures in text
