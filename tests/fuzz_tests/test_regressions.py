"""The inputs the fuzzing of the readers found, each of which ended in another exception than
the reader's documented one (or in none, or in hours of work): now each ends in that error,
with a message that states the rule, or is read as it should be."""

from __future__ import annotations

import contextlib
import io
import time
from pathlib import Path

import pytest

import autotune
from autotune.cli import build_parser, parse
from autotune.runtime.config import BestConfig, CompileConfig, ConfigError, ConfigFile
from autotune.space import SpaceError, load_space, space_from_dict
from fuzz_tests import strategies
from fuzz_tests.strategies import BEST_DOCUMENTS

# --- the best-config reader ---


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ("9" * 5000, "holds an integer longer than Python reads (4300 digits)"),  # ValueError
        ("[" * 100_000, "nests too deeply"),  # RecursionError
    ],
)
def test_a_best_config_file_python_cannot_decode_is_a_config_error(tmp_path, text, why):
    path = tmp_path / "best_config.json"
    path.write_text(text)

    for read in (autotune.load, ConfigFile.load):
        with pytest.raises(ConfigError, match="regenerate it") as info:
            read(path)
        assert why in str(info.value)


def _nested(depth: int) -> list:
    value: list = []
    for _ in range(depth):
        value = [value]
    return value


@pytest.mark.parametrize("depth", [65, 1_000, 5_000])
def test_a_config_nested_deeper_than_64_levels_is_refused_before_any_rule_recurses(depth):
    config = {"backend": "inductor", "scope": {"compile": [""], "disable": _nested(depth)}}

    with pytest.raises(ConfigError, match="nested more than 64 levels deep"):
        CompileConfig.from_dict(config)  # was RecursionError in repr()
    with pytest.raises(ConfigError, match="nested more than 64 levels deep"):
        autotune.apply(_model(), config)


def test_a_best_config_nested_deeply_anywhere_is_refused_for_every_entry_point():
    best = {**BEST_DOCUMENTS[1], "environment": {"torch": _nested(5_000)}}
    fleet = {**BEST_DOCUMENTS[4], "entries": [best]}

    for read, value in ((BestConfig.from_dict, best), (ConfigFile.from_dict, fleet)):
        with pytest.raises(ConfigError, match="nested more than 64 levels deep"):
            read(value)  # was RecursionError in _is_json_tree


def test_an_integer_too_long_to_write_as_json_is_refused_not_a_value_error():
    config = {"options": {"max_fusion_size": 10**5000}}

    with pytest.raises(ConfigError, match="too long to write as JSON"):
        CompileConfig.from_dict(config)  # was ValueError computing the config hash


def test_metrics_keys_must_be_strings_or_the_file_would_not_read_back_the_same():
    best = {**BEST_DOCUMENTS[1], "metrics": {-167355: 0.002}}

    with pytest.raises(ConfigError, match="metrics: keys must be strings, got -167355"):
        BestConfig.from_dict(best)  # was accepted, then written back as "-167355"


@pytest.mark.parametrize(
    "kind",
    [
        [{(-170141163177843230358305861107705708544,): "compile"}],  # TypeError in to_json
        [{-164824230754055244834021970209749996244: float("nan")}, []],  # ValueError in to_json
        [{-164824230833281995360708126591971970304: "compile"}],  # read back as {"-1648...": ..}
    ],
)
def test_an_artifacts_kind_must_be_a_string_or_the_file_would_not_write_back(kind):
    best = {**BEST_DOCUMENTS[0], "aot": {**BEST_DOCUMENTS[0]["aot"], "kind": kind}}

    with pytest.raises(ConfigError, match="aot.kind: expected a non-empty string"):
        ConfigFile.from_dict(best)  # was read, then failed (or changed) when written back


def _model():
    import torch

    return torch.nn.Sequential(torch.nn.Linear(2, 2), torch.nn.ReLU())


# --- the space TOML reader ---


def _space(tmp_path: Path, data: bytes | str) -> Path:
    path = tmp_path / "space.toml"
    path.write_bytes(data if isinstance(data, bytes) else data.encode())
    return path


@pytest.mark.parametrize(
    ("data", "why"),
    [
        (b'\x80name" = "cpu"\n', "byte 0 is not UTF-8"),  # UnicodeDecodeError
        ("a = " + "[" * 5000, "it nests too deeply"),  # RecursionError
        ("a = " + "9" * 5000, "an integer longer than Python reads"),  # ValueError
        ("a." * 100_000 + "b = 1\n", "more than the 4,096 autotune reads"),  # 40 GB in tomllib
    ],
)
def test_a_space_file_python_cannot_decode_is_a_space_error(tmp_path, data, why):
    with pytest.raises(SpaceError, match="cannot be read as TOML") as info:
        load_space(str(_space(tmp_path, data)), "cpu")
    assert why in str(info.value)


@pytest.mark.parametrize(
    "table",
    [
        # (high - low) / step overflowed to inf: OverflowError in round()
        "{ low = -1.7e308, high = 1.7e308, step = 1e-300 }",
        # a float range of 1e300 values
        "{ low = 1.0, high = 1e300, step = 1e-300 }",
        # 2**63 values: the presets listed them all (hours)
        "{ low = 1, high = 9223372036854775807 }",
        # an integer past a float: OverflowError in math.isfinite
        "{ low = 1, high = 1" + "0" * 400 + " }",
    ],
)
def test_a_range_of_more_than_a_million_values_is_refused_at_once(tmp_path, table):
    preset = '[presets]\nx = { "inductor.max_fusion_size" = 1 }\n'
    text = f"[inductor]\nmax_fusion_size = {table}\n{preset}"
    started = time.perf_counter()

    with pytest.raises(SpaceError, match="a range holds at most 1,000,000 values"):
        load_space(str(_space(tmp_path, text)), "cpu")
    assert time.perf_counter() - started < 10


@pytest.mark.parametrize(
    ("when", "why"),
    [
        ("not " * 1500 + "device", "it nests 1501 expressions deep"),  # RecursionError in _check
        ("a." * 1500 + "b == 1", "it nests 1502 expressions deep"),  # RecursionError in _dotted
        ("-" * 2000 + "1", "it nests 2001 expressions deep"),  # RecursionError in ast.unparse
        ("not " * 5000 + "device", "it is 20,006 characters long"),
    ],
)
def test_a_condition_nested_thousands_deep_is_a_space_error(tmp_path, when, why):
    text = f'[inductor]\nfreezing = {{ choices = [false, true], when = "{when}" }}\n'
    raw = {"inductor": {"freezing": {"choices": [False, True], "when": when}}}

    with pytest.raises(SpaceError, match="inductor.freezing: when = ") as info:
        load_space(str(_space(tmp_path, text)), "cpu")
    assert why in str(info.value)
    with pytest.raises(SpaceError, match="inductor.freezing: when = ") as info:
        space_from_dict(raw, "cpu")
    assert why in str(info.value)


def test_a_condition_over_31_knobs_is_refused_before_the_space_is_counted():
    """Its 2**31 combinations passed validation; the size each reader computes next, and each
    worker's check that the space is spent, ran for days (10**9 memo entries)."""
    wide = strategies.wide_document(31, " or ", negated=False)

    with pytest.raises(SpaceError, match=r"its conditions read 31 knobs .* 2,147,483,648 ways"):
        space_from_dict(wide, "cpu")


def test_a_stored_space_with_an_integer_past_a_float_is_a_space_error():
    raw = {"inductor": {"max_fusion_size": {"low": 1, "high": 10**400}}}

    with pytest.raises(SpaceError, match="at most 1,000,000 values"):
        space_from_dict(raw, "cpu")  # was OverflowError


def test_presets_that_are_no_table_are_refused_not_merged_with_the_base_ones(tmp_path):
    base = '[compile]\nmode = ["default"]\n[presets]\nplain = { "compile.mode" = "default" }\n'
    (tmp_path / "base.toml").write_text(base)
    path = _space(tmp_path, 'extends = "base.toml"\npresets = ["inductor"]\n')

    with pytest.raises(SpaceError, match=r"\[presets\] must be a table"):
        load_space(str(path), "cpu")  # was TypeError: 'list' object is not a mapping


def test_extends_naming_a_file_longer_than_the_file_system_takes_is_a_space_error(tmp_path):
    path = _space(tmp_path, f'extends = "{"not " * 300}device"\n')

    with pytest.raises(SpaceError, match="File name too long"):
        load_space(str(path), "cpu")  # was OSError from Path.exists()


# --- the study TOML reader ---


def _search(tmp_path: Path, data: bytes | str, *argv: str):
    path = tmp_path / "study.toml"
    path.write_bytes(data if isinstance(data, bytes) else data.encode())
    parser, commands = build_parser()
    with contextlib.redirect_stderr(io.StringIO()) as stderr:
        try:
            return parse(parser, commands, ["search", str(path), *argv]), ""
        except SystemExit as exit:
            assert exit.code == 2
            return None, stderr.getvalue()


@pytest.mark.parametrize(
    ("data", "why"),
    [
        (b"\x80", "byte 0 is not UTF-8"),  # UnicodeDecodeError
        ("model = " + "[" * 5000, "it nests too deeply"),  # RecursionError
        ("a." * 100_000 + 'model = "m.py"\n', "more than the 4,096 autotune reads"),  # OOM
    ],
)
def test_a_study_file_python_cannot_decode_is_the_clis_usage_error(tmp_path, data, why):
    args, stderr = _search(tmp_path, data)

    assert args is None and "cannot be read as TOML" in stderr and why in stderr


def test_a_size_too_large_for_a_float_is_a_usage_error(tmp_path):
    for data, argv in [
        (f'model = "m.py"\ncache_limit = "{"9" * 400}"\n', ()),  # OverflowError in parse_size
        ('model = "m.py"\n', ("--cache-limit", "9" * 400)),
    ]:
        args, stderr = _search(tmp_path, data, *argv)

        assert args is None and "must be a size below 1.8e308 bytes" in stderr


def test_a_study_file_naming_a_study_file_as_its_model_is_refused(tmp_path):
    # It was taken as the model (itself), or expanded again and again (../d/study.toml).
    for model in ("study.toml", f"../{tmp_path.name}/study.toml"):
        args, stderr = _search(tmp_path, f'model = "{model}"\n')

        assert args is None and "not another study file" in stderr


@pytest.mark.parametrize(("value", "prune"), [("false", False), ("true", True)])
def test_prune_in_a_study_file_sets_the_switch(tmp_path, value, prune):
    args, stderr = _search(tmp_path, f'model = "m.py"\nprune = {value}\n')

    assert stderr == "" and args.prune is prune  # was "`prune` must be a string or a number"


def test_a_value_starting_with_a_dash_is_a_value_not_an_option(tmp_path):
    args, stderr = _search(tmp_path, 'model = "m.py"\nstudy = "-x"\nout = "--help"\n')

    assert stderr == "" and (args.study, args.out) == ("-x", "--help")
