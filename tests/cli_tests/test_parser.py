"""The command line itself: help that shows every default, errors in the subcommand's own
usage with a "did you mean", and numbers checked before anything runs."""

from __future__ import annotations

import re

import pytest

from autotune.cli import COMMANDS, build_parser, main


def _help(capsys, *argv: str) -> str:
    with pytest.raises(SystemExit) as info:
        main([*argv, "--help"])
    assert info.value.code == 0
    return " ".join(capsys.readouterr().out.split())  # one line: help wraps anywhere


def test_every_subcommand_has_a_module_with_a_parser_and_a_run():
    parser, commands = build_parser()
    assert (
        set(commands)
        == set(COMMANDS)
        == {
            "search",
            "worker",
            "finalize",
            "report",
            "studies",
            "export",
            "show",
            "merge",
            "cache",
            "spaces",
            "verify",
        }
    )
    for module in COMMANDS.values():
        assert callable(module.run) and module.INTERRUPTED


@pytest.mark.parametrize(
    "shown",
    [
        "--trials TRIALS trial budget of the study, baselines excluded; a later run may raise "
        "it (default: 20)",
        "(default: 600.0)",  # --compile-budget
        "--seed SEED seeds the sampler, the weights and the inputs (default: 0)",
        "--sampler {tpe,random} Optuna sampler (default: tpe)",
        "--finalists N",
        "(default: 3)",
        "default: $AUTOTUNE_STORAGE, else sqlite:///autotune.db",
        "(default: best_config.json)",
        "(default: 0.02)",  # --precision
        "(default: infer)",  # --workload
        "(default: search)",  # --scope
        "a built-in space (cpu, cuda, quick) or a .toml path",
        "--timeout SECONDS wall clock of this whole command",
    ],
)
def test_search_help_shows_the_defaults_and_the_builtin_spaces(capsys, shown):
    assert shown in _help(capsys, "search")


def test_options_off_unless_given_show_no_default(capsys):
    text = _help(capsys, "search")
    assert "(default: None)" not in text and "(default: False)" not in text


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_no_option_states_its_default_twice(capsys, command):
    """--warm-start-top said "(default 5) (default: 5)": the formatter adds the default, so an
    option's own help never states it."""
    assert not re.search(r"\(default[^)]*\) \(default", _help(capsys, command))


def test_verify_help_says_the_seed_comes_from_the_file(capsys):
    assert "(default: the seed the file was tuned with)" in _help(capsys, "verify")


def test_a_misspelled_option_gets_the_subcommands_usage_and_a_suggestion(capsys):
    code = _exit_code(main, ["search", "m.py", "--trails", "3"])
    err = capsys.readouterr().err
    assert code == 2
    assert err.startswith("usage: autotune search ")
    assert "unrecognized arguments: --trails (did you mean --trials?)" in err


def test_a_misspelled_option_with_a_value_is_matched_without_it(capsys):
    assert _exit_code(main, ["verify", "b.json", "m.py", "--repeets=3"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("usage: autotune verify ")
    assert "--repeets=3 (did you mean --repeats?)" in err


def test_a_misspelled_command_gets_a_suggestion(capsys):
    assert _exit_code(main, ["serch", "m.py"]) == 2
    assert "invalid choice: 'serch'" in capsys.readouterr().err
    assert _exit_code(main, ["serch", "m.py"]) == 2
    assert "(did you mean search?)" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("option", "value", "says"),
    [
        ("--finalists", "-1", "must be 0 or more, got -1"),
        ("--trials", "0", "must be at least 1, got 0"),
        ("--trials", "many", "must be a whole number, got 'many'"),
        ("--seed", "-1", "must be in 0 to 4294967295, got -1"),
        ("--seed", str(2**32), "must be in 0 to 4294967295"),
        ("--timeout", "0", "must be a positive number, got 0"),
        ("--timeout", "nan", "must be a number, got 'nan'"),
        ("--compile-budget", "-5", "must be a positive number"),
        ("--measure-seconds", "inf", "must be a positive number, got inf"),
        ("--precision", "1.5", "must be a fraction in [0, 1)"),
        ("--calls", "0", "must be at least 1"),
        ("--jobs", "0", "must be at least 1"),
        ("--memory-budget", "lots", "must be a size such as 8GiB"),
        ("--batch-sizes", "8,8", "must be distinct positive integers"),
        ("--batch-sizes", "0,8", "must be at least 1, got 0"),
        ("--max-latency-ms", "-1", "must be a positive number"),
    ],
)
def test_every_number_is_checked_at_parse_time(capsys, option, value, says):
    assert _exit_code(main, ["search", "m.py", option, value]) == 2
    err = capsys.readouterr().err
    assert err.startswith("usage: autotune search ") and says in err


def test_given_names_only_the_options_on_the_command_line():
    parser, commands = build_parser()
    argv = ["m.py", "--trials", "5", "--seed=3", "--charge-warm-compile"]
    given = commands["search"].given(argv)
    assert given == {"model", "trials", "seed", "charge_warm_compile"}
    assert commands["search"].given(["m.py"]) == {"model"}
    # An appending option counts too (it once raised AttributeError on the sentinel).
    repeated = ["f.json", "m.py", "--allow-unsafe-knob", "inductor.cpp.cxx",
                "--allow-unsafe-knob", "backend.tvm"]  # fmt: skip
    assert "allow_unsafe_knobs" in commands["verify"].given(repeated)
    assert "allow_unsafe_knobs" not in commands["verify"].given(["f.json", "m.py"])


def _exit_code(fn, argv) -> int:
    try:
        return int(fn(argv))
    except SystemExit as exit_:
        return int(exit_.code or 0)
