"""--effort sets the space, trials, compile budget and finalists together; explicit options
win, and the choice is printed."""

from __future__ import annotations

from autotune.cli import build_parser, parse
from autotune.cli.search import search_options
from autotune.search import build_request
from autotune.search._open import effort_line
from autotune.settings import THOROUGH_TRIALS


def _settings(*argv: str):
    parser, commands = build_parser()
    args = search_options(parse(parser, commands, ["search", *argv]))
    return build_request(args).settings, args


def test_quick_effort_sets_everything_and_says_so(model_file):
    settings, args = _settings(model_file("tiny"), "--effort", "quick")
    assert settings.space["name"] == "quick"
    assert (settings.trials, settings.compile_budget, settings.finalists) == (8, 300.0, 2)
    request = build_request(args)
    assert "effort quick: space 'quick', 8 trials, compile budget 300 s, 2 finalists" in (
        effort_line(args.effort, request)
    )


def test_explicit_options_win_over_the_effort(model_file):
    settings, args = _settings(model_file("tiny"), "--effort", "quick", "--trials", "3",
                               "--space", "cpu")  # fmt: skip
    assert (settings.trials, settings.space["name"], settings.finalists) == (3, "cpu", 2)
    assert {"trials", "finalists"} <= args.given  # a resumed study takes them like options


def test_thorough_sizes_the_trials_from_the_space(model_file):
    settings, _ = _settings(model_file("tiny"), "--effort", "thorough")
    low, high = THOROUGH_TRIALS
    assert settings.space["name"] == "cpu" and low <= settings.trials <= high
    assert (settings.compile_budget, settings.finalists) == (900.0, 5)


def test_without_effort_the_defaults_stand(model_file):
    settings, args = _settings(model_file("tiny"))
    assert (settings.trials, settings.compile_budget, settings.finalists) == (20, 600.0, 3)
    assert settings.compile_budget_factor == 5.0 and args.effort is None
