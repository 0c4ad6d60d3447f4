"""Studies as files: ``autotune search studies/convnet.toml``.

A study file holds the options of ``autotune search`` as TOML keys (``trials = 20``,
``batch_sizes = [1, 8]``, ``allow_numerics_changes = true``) and the model file, relative to the
TOML. It is turned into command-line options placed before those typed on the command line,
so that options typed there override it, and every value goes through the same checks as
the command line's.
"""

from __future__ import annotations

import argparse
import difflib
import sys
from pathlib import Path
from typing import Any

from autotune._printable import say
from autotune._search_options import RENAMED
from autotune._toml import read as read_toml
from autotune.errors import UsageError

MODEL_KEY = "model"
# Options that say how this process runs or prints, not what the study is.
_NOT_IN_FILES = {"help", "debug", "quiet", "model", "no_worker", "remeasure"}
_NOT_A_STUDY = "; a study file names a model file (*.py), not another study file"


def expand(argv: list[str], parser: argparse.ArgumentParser) -> list[str]:
    """``search``'s arguments with a study file's settings in place of its path: the file's
    options first, then the command line's own (which therefore win). Arguments that name no
    study file come back unchanged.

    Raises:
        UsageError: The file cannot be read, or holds unknown keys or values of the wrong
            type (all of them listed).
    """
    known, _ = parser.parse_known_args(argv)
    path = getattr(known, MODEL_KEY, None)
    if not path or not str(path).endswith(".toml"):
        return argv
    index = _positional_index(argv, str(path), parser)
    study = Path(path)
    return [*study_options(study, parser), *argv[:index], *argv[index + 1 :]]


def study_options(path: Path, parser: argparse.ArgumentParser) -> list[str]:
    """The command-line form of study file ``path``: the model file's path first."""
    remedy = "a study file is `model = ...` and options of `autotune search`, one per line."
    try:
        data = read_toml(path, "The study file", remedy, UsageError)
    except FileNotFoundError:
        raise UsageError(
            f"The study file {path} does not exist; pass a model file (*.py) or a study file "
            "(*.toml) that names one."
        ) from None
    except OSError as exc:
        raise UsageError(f"The study file {path} is not valid TOML: {exc}.") from exc
    actions = {
        a.dest: a
        for a in parser._actions
        if a.option_strings and a.dest not in _NOT_IN_FILES and a.help is not argparse.SUPPRESS
    }
    problems, options = [], []
    model = data.pop(MODEL_KEY, None)
    if not isinstance(model, str) or model.endswith(".toml"):
        problems.append(
            f"`{MODEL_KEY}` must be the model file's path (relative to the study file), got "
            f"{model!r}{_NOT_A_STUDY if isinstance(model, str) else ''}"
        )
    for key, value in data.items():
        name = key.replace("-", "_")
        if name in RENAMED:  # a key's former name: read as today's, said once
            say(f"note: {path}: `{key}` is now `{RENAMED[name]}` (same meaning)", file=sys.stderr)
            name = RENAMED[name]
        action = actions.get(name)
        if action is None:
            near = difflib.get_close_matches(key, list(actions), n=1)
            hint = f" (did you mean `{near[0]}`?)" if near else ""
            problems.append(f"unknown key `{key}`{hint}")
            continue
        problem, words = _option(action, key, value)
        if problem:
            problems.append(problem)
        options += words
    if problems:
        listed = "; ".join(problems)
        raise UsageError(
            f"The study file {path} has {len(problems)} problem(s): {listed}. Its keys are "
            f"`{MODEL_KEY}` and the options of `autotune search` with underscores "
            f"({', '.join(sorted(actions))})."
        )
    assert isinstance(model, str)
    model_path = Path(model) if Path(model).is_absolute() else path.parent / model
    return [str(model_path), *options]


def _option(action: argparse.Action, key: str, value: Any) -> tuple[str, list[str]]:
    """The command-line words for one key, or a problem saying why there are none."""
    flag = action.option_strings[-1]
    if isinstance(action, (argparse._StoreTrueAction, argparse._StoreFalseAction)):
        if not isinstance(value, bool):
            return f"`{key}` must be true or false, got {value!r}", []
        # `prune = false` is --no-prune: the switch is given when the value is its const.
        return "", [flag] if value == action.const else []
    if isinstance(value, list):
        if not value or not all(isinstance(v, int) and not isinstance(v, bool) for v in value):
            return f"`{key}` must be a number or a list of whole numbers, got {value!r}", []
        return "", [f"{flag}={','.join(str(v) for v in value)}"]
    if isinstance(value, bool) or not isinstance(value, (str, int, float)):
        return f"`{key}` must be a string or a number, got {value!r}", []
    # One word: a value that starts with "-" (a study named "-x") is not read as an option.
    return "", [f"{flag}={value}"]


def _positional_index(argv: list[str], value: str, parser: argparse.ArgumentParser) -> int:
    """Where the positional ``value`` is in ``argv`` (not as the value of an option)."""
    takes_value = {
        s for a in parser._actions if a.option_strings and a.nargs != 0 for s in a.option_strings
    }
    for i, word in enumerate(argv):
        if word == value and (i == 0 or argv[i - 1] not in takes_value):
            return i
    raise UsageError(f"Cannot find the study file {value!r} among the arguments {argv}.")
