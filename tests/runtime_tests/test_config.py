from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from autotune.runtime.config import (
    SCHEMA_VERSION,
    BestConfig,
    CompileConfig,
    ConfigError,
    Scope,
    load,
)


def _config() -> CompileConfig:
    return CompileConfig(
        backend="inductor",
        mode="max-autotune-no-cudagraphs",
        dynamic=False,
        options={
            "max_autotune": True,
            "coordinate_descent_tuning": True,
            "freezing": True,
            "cpp.simdlen": 256,
            "max_autotune_gemm_backends": "ATEN,CPP",
        },
        dynamo={"recompile_limit": 64},
        scope=Scope(compile=("layers.0", "layers.1"), disable=("layers.0.attn",)),
    )


def _best(**overrides: Any) -> BestConfig:
    fields: dict[str, Any] = {
        "decision": "compile",
        "reason": "2.1x faster than eager",
        "config": _config(),
        "metrics": {
            "latency_median_s": 0.0123,
            "speedup_vs_eager": 2.1,
            "peak_memory_bytes": 1 << 20,
        },
        "environment": {"torch": "2.13.0", "device_name": "cpu"},
        "model": {"sha256": "0123456789abcdef", "parameters": 10, "root_class": "Net"},
        "workload": {"kind": "infer", "device": "cpu", "shapes": [[8, 128]]},
        "source": {"study": "s", "trial": 3, "storage": "sqlite:///x.db"},
    }
    return BestConfig(**{**fields, **overrides})


def test_best_config_round_trips_through_json() -> None:
    best = _best()
    text = best.to_json()
    again = BestConfig.from_dict(json.loads(text))
    assert again == best
    assert again.to_json() == text
    assert list(json.loads(text))[:3] == ["schema_version", "autotune_version", "decision"]
    assert again.config_hash == best.config.config_hash()  # type: ignore[union-attr]


def test_compile_config_round_trips_and_hash_is_canonical() -> None:
    config = _config()
    again = CompileConfig.from_dict(json.loads(json.dumps(config.to_dict())))
    assert again == config
    reordered = dict(reversed(list(config.to_dict()["options"].items())))
    assert CompileConfig(**{**_kwargs(config), "options": reordered}) == config
    assert again.config_hash() == config.config_hash()
    assert len(config.config_hash()) == 16
    assert hash(again) == hash(config)
    assert CompileConfig(dynamic=True).config_hash() != CompileConfig().config_hash()


def _kwargs(config: CompileConfig) -> dict[str, Any]:
    return {
        "backend": config.backend,
        "mode": config.mode,
        "dynamic": config.dynamic,
        "fullgraph": config.fullgraph,
        "dynamo": config.dynamo,
        "scope": config.scope,
    }


def test_compile_config_from_dict_lists_every_problem() -> None:
    bad = {
        "backend": 3,
        "dynamic": 1,
        "fullgraph": "yes",
        "options": {"max_autotune": {"x": 1}, "cpp.simdlen": float("nan")},
        "dynamo": [],
        "scope": {"compile": ["layers", 7], "disable": [""]},
        "fulgraph": True,
    }
    with pytest.raises(ConfigError) as info:
        CompileConfig.from_dict(bad)
    message = str(info.value)
    for expected in [
        "9 problems",
        "config: unknown key 'fulgraph'; did you mean 'fullgraph'?",
        "config.backend: expected a non-empty string, got 3 (int)",
        "config.dynamic: expected true, false or null, got 1 (int)",
        "config.fullgraph: expected true or false, got 'yes' (str)",
        "config.options.max_autotune: expected a JSON scalar",
        "config.options.cpp.simdlen: expected a JSON scalar",
        "config.dynamo: expected an object (dict), got [] (list)",
        "config.scope.compile[1]: expected a dotted module path",
        "config.scope.disable[0]: expected a dotted module path like \"layers.0\", got ''",
    ]:
        assert expected in message


def test_true_is_not_an_int_and_one_is_not_a_bool() -> None:
    with pytest.raises(ConfigError, match=r"config.fullgraph: expected true or false, got 1"):
        CompileConfig.from_dict({"fullgraph": 1})
    with pytest.raises(ConfigError, match=r"schema_version: expected a positive integer"):
        BestConfig.from_dict({**_best().to_dict(), "schema_version": True})


@pytest.mark.parametrize(
    ("scope", "fragment"),
    [
        ({"compile": ["", "layers.0"]}, "'' (the whole model) contains 'layers.0'"),
        ({"compile": ["layers", "layers.1"]}, "'layers' contains 'layers.1'"),
        ({"compile": ["a", "a"]}, "path 'a' is listed twice"),
        ({"compile": []}, "must name at least one path"),
        ({"compile": ["a.b"], "disable": ["a"]}, "disable path 'a' contains compile path 'a.b'"),
        ({"compile": "layers"}, "expected a list of dotted module paths"),
        ({"compile": ["a..b"]}, "expected a dotted module path"),
    ],
)
def test_scope_rules(scope: dict[str, Any], fragment: str) -> None:
    with pytest.raises(ConfigError, match="scope") as info:
        CompileConfig.from_dict({"scope": scope})
    assert fragment in str(info.value)


def test_scope_kind() -> None:
    assert Scope().kind == "whole"
    assert Scope(disable=("head",)).kind == "whole+disable"
    assert Scope(compile=("layers.0",)).kind == "regional"
    assert Scope(compile=("layers.0",), disable=("layers.0.mlp",)).kind == "regional+disable"
    with pytest.raises(ConfigError, match="Scope.compile"):
        Scope(compile="layers")  # type: ignore[arg-type]


def test_best_config_from_dict_names_source_and_every_problem() -> None:
    d = _best().to_dict()
    d["config"]["fullgraph"] = True
    d["schema_version"] = SCHEMA_VERSION + 1
    d["extra"] = 1
    d["metrics"]["correct"] = True
    d["created_at"] = "yesterday"
    with pytest.raises(ConfigError) as info:
        BestConfig.from_dict(d, source="'best.json'")
    message = str(info.value)
    assert message.startswith("invalid best-config 'best.json': 5 problems")
    assert "unknown key 'extra'" in message
    assert f"newer than the {SCHEMA_VERSION} this autotune reads; upgrade autotune" in message
    assert "metrics.correct: expected a finite number or null, got True (bool)" in message
    assert "created_at: expected an ISO 8601 time" in message
    assert "config_hash: the file says" in message


def test_hash_mismatch_is_detected() -> None:
    d = _best().to_dict()
    d["config"]["options"]["freezing"] = False
    actual = CompileConfig.from_dict(d["config"]).config_hash()
    with pytest.raises(ConfigError, match=f"set config_hash to '{actual}'"):
        BestConfig.from_dict(d)


def test_decision_and_config_must_agree() -> None:
    with pytest.raises(ConfigError, match="config: expected null"):
        _best(decision="do_not_compile")
    with pytest.raises(ConfigError, match="a 'compile' decision needs a config"):
        _best(config=None)
    with pytest.raises(
        ConfigError, match="decision: expected 'compile' or 'do_not_compile' or 'inconclusive'"
    ):
        _best(decision="maybe")
    eager = _best(decision="do_not_compile", config=None)
    assert eager.config_hash is None
    assert BestConfig.from_dict(json.loads(eager.to_json())) == eager
    # inconclusive ships the cheaper side: a config (default compile) or eager (none)
    for config in (None, CompileConfig()):
        tie = _best(decision="inconclusive", config=config)
        assert BestConfig.from_dict(json.loads(tie.to_json())) == tie


def test_dump_is_atomic_and_load_reads_it_back(tmp_path: Path) -> None:
    path = tmp_path / "best_config.json"
    best = _best()
    best.dump(path)
    best.dump(path)
    assert os.listdir(tmp_path) == ["best_config.json"]
    assert path.read_text() == best.to_json()
    assert load(path) == best


def test_load_names_the_path_and_position_of_broken_json(tmp_path: Path) -> None:
    path = tmp_path / "best_config.json"
    path.write_text('{\n  "decision": "compile",\n  oops\n}\n')
    with pytest.raises(ConfigError, match=r"best_config.json.*not valid JSON.*line 3, column 3"):
        BestConfig.load(path)
    with pytest.raises(ConfigError, match=r"missing.json' does not exist"):
        BestConfig.load(tmp_path / "missing.json")
    path.write_text("[]")
    with pytest.raises(ConfigError, match=r"invalid best-config '.*best_config.json'"):
        BestConfig.load(path)


def test_compile_kwargs_never_pass_mode_and_copy_options() -> None:
    config = _config()
    kwargs = config.compile_kwargs()
    assert set(kwargs) == {"backend", "dynamic", "fullgraph", "options"}
    kwargs["options"].pop("freezing")
    assert config.options["freezing"] is True
    eager = CompileConfig(backend="eager", options={"freezing": True})
    assert "options" not in eager.compile_kwargs()
    assert "options" not in CompileConfig().compile_kwargs()


def test_brief_is_short_and_skips_the_mode_preset() -> None:
    brief = _config().brief()
    assert brief.startswith("inductor max-autotune-no-cudagraphs dyn=False fg=False")
    assert "freezing=1" in brief and "cpp.simdlen=256" in brief
    assert "max_autotune=" not in brief and "coordinate_descent_tuning" not in brief
    assert "scope=layers.0,layers.1" in brief and "eager=layers.0.attn" in brief
    assert CompileConfig(backend="eager").brief() == "eager dyn=None fg=False"


def test_metrics_are_read_by_the_names_trials_give_them() -> None:
    best = _best(metrics={"latency_median_s": 0.0123, "speedup_vs_eager": 2.4})
    again = BestConfig.from_dict(json.loads(best.to_json()))
    assert again.metric("latency_median_s") == 0.0123 and again.metric("speedup_vs_eager") == 2.4
    assert again.metric("compile_time_s") is None and again.to_json() == best.to_json()
