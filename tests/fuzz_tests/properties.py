"""The readers' fuzz properties: any input ends in the reader's documented error or in success.

Each ``check_*`` runs one input through a reader the way autotune runs it, lets the documented
error pass (counted in :data:`OUTCOMES`), and lets every other exception through: that is the
failure Hypothesis (CI) or atheris (``benchmarks/fuzz_readers.py``) reports. Where a reader
succeeds, what autotune does next with the result must work too (a best config writes back
out and reads the same; a space counts its size and stores and reloads itself).
"""

from __future__ import annotations

import atexit
import contextlib
import io
import json
import re
import shutil
import tempfile
import warnings
from collections import Counter, defaultdict
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any
from unittest import mock

import autotune
from autotune.cli import build_parser, parse
from autotune.runtime import apply as apply_module
from autotune.runtime.config import BestConfig, CompileConfig, ConfigError, ConfigFile
from autotune.space import SpaceError, load_space, space_from_dict

# reader -> inputs checked; (reader, outcome) -> count of reader calls, where an input may
# make several (a file read by both loaders) and outcome is "ok" or the documented error.
CASES: Counter[str] = Counter()
OUTCOMES: Counter[tuple[str, str]] = Counter()
# (reader, error class) -> the distinct rules its messages stated (numbers and quotes masked).
MESSAGES: defaultdict[tuple[str, str], set[str]] = defaultdict(set)
_MAX_MESSAGES = 2_000

WORKDIR = Path(tempfile.mkdtemp(prefix="autotune-fuzz-"))
atexit.register(shutil.rmtree, WORKDIR, ignore_errors=True)


@contextlib.contextmanager
def documented(reader: str, *errors: type[BaseException]) -> Iterator[None]:
    """Counts success or one of ``errors`` (which must say something); anything else raises."""
    try:
        yield
    except errors as exc:
        assert str(exc).strip(), f"{type(exc).__name__} without a message"
        count(reader, type(exc).__name__, str(exc))
    else:
        count(reader, "ok")


def count(reader: str, outcome: str, message: str = "") -> None:
    OUTCOMES[(reader, outcome)] += 1
    seen = MESSAGES[(reader, outcome)]
    if message and len(seen) < _MAX_MESSAGES:
        seen.add(_rule(message))


def _rule(message: str) -> str:
    """The first problem a message lists, with the values masked: which rule it states."""
    lines = [line.strip() for line in message.splitlines() if line.strip()]
    first = next((line for line in lines if line.startswith("- ")), lines[0] if lines else "")
    return re.sub(r"'[^']*'|\"[^\"]*\"|\d+(\.\d+)?", "#", first)[:120]


def write_files(files: Mapping[str, bytes]) -> dict[str, Path]:
    """``files`` alone in the fuzz folder (what an earlier input wrote is removed)."""
    for old in WORKDIR.iterdir():
        shutil.rmtree(old) if old.is_dir() else old.unlink()
    paths = {}
    for name, data in files.items():
        paths[name] = WORKDIR / name
        paths[name].write_bytes(data)
    return paths


# --- the best-config reader ---


def check_best_config(case: tuple[str, Any, bool]) -> None:
    how, value, strict = case
    CASES["best_config"] += 1
    if how == "file":
        path = write_files({"best_config.json": value})["best_config.json"]
        with documented("best_config", ConfigError):
            _written_back(ConfigFile.load(path))
        with documented("best_config", ConfigError):
            autotune.load(path).to_json()
        return
    with documented("best_config", ConfigError):
        _written_back(ConfigFile.from_dict(value))
    with documented("best_config", ConfigError):
        BestConfig.from_dict(value).to_json()
    with documented("best_config", ConfigError):
        CompileConfig.from_dict(value.get("config") if isinstance(value, dict) else value).brief()
    if how == "apply" and isinstance(value, Mapping):
        with documented("best_config", ConfigError):
            apply_without_compiling(value, strict)


def _written_back(file: ConfigFile) -> None:
    """What was read writes out as JSON and reads back the same."""
    again = ConfigFile.from_dict(json.loads(file.to_json())).to_dict()
    assert again == file.to_dict(), f"read back as {again}, not {file.to_dict()}"
    for entry in file.entries:
        if entry.config is not None:
            entry.config.brief()


def apply_without_compiling(config: Mapping[str, Any], strict: bool) -> None:
    """``autotune.apply`` up to ``torch.compile``: the config resolved, an entry chosen, the
    fingerprints compared, the knobs checked against torch and the scope against a model."""
    import torch

    model = torch.nn.Sequential(
        torch.nn.Linear(2, 2), torch.nn.Sequential(torch.nn.ReLU(), torch.nn.Linear(2, 2))
    )
    apply_module._WARNED.clear()  # each input warns as if it came first
    with (
        mock.patch.object(apply_module, "_compile_one", lambda module, config, **_: module),
        warnings.catch_warnings(),
    ):
        warnings.simplefilter("ignore", autotune.EnvironmentMismatchWarning)
        autotune.apply(model, config, strict=strict)


# --- the space TOML reader ---


def check_space(case: tuple[str, dict[str, bytes], Any, str, bool]) -> None:
    how, files, raw, workload, allow = case
    CASES["space"] += 1
    paths = write_files(files)
    with documented("space", SpaceError):
        if how == "file":
            space = load_space(str(paths["space.toml"]), "cpu", workload=workload,
                               allow_numerics_changes=allow)  # fmt: skip
        else:
            with contextlib.chdir(WORKDIR):  # relative extends are read from the current folder
                space = space_from_dict(raw, "cpu", workload=workload,
                                        allow_numerics_changes=allow)  # fmt: skip
        _used(space, workload)


def _used(space: Any, workload: str) -> None:
    """What a search does with a space it read: its size, its hash, the configurations of its
    first values and of its presets, and storing it to be read back on resume."""
    assert space.size >= 1
    space.content_hash()
    space.config_from_params({})
    for preset in space.presets:
        space.preset_config(preset)
    stored = json.loads(json.dumps(space.to_dict()))
    again = space_from_dict(stored, "cpu", workload=workload)
    assert again.content_hash() == space.content_hash()


# --- the study TOML reader ---

_PARSER = build_parser()


def check_study(case: tuple[str, dict[str, bytes], list[str]]) -> None:
    """``autotune search STUDY.toml ...`` parsed as the CLI parses it; its usage error is
    argparse's: one ``error:`` line on stderr and exit code 2 (a UsageError of the study file
    becomes that too)."""
    how, files, argv = case
    CASES["study"] += 1
    paths = write_files(files)
    parser, commands = _PARSER
    stderr = io.StringIO()
    try:
        with contextlib.redirect_stderr(stderr):
            args = parse(parser, commands, ["search", str(paths["study.toml"]), *argv])
    except SystemExit as exit:
        text = stderr.getvalue()
        assert exit.code == 2 and "error:" in text, f"exit code {exit.code}: {text!r}"
        assert how != "valid", f"a valid study file was refused: {text}"
        count("study", "SystemExit(2)", text.strip().splitlines()[-1])
    else:
        assert not str(args.model).endswith(".toml"), f"the model is still a study: {args.model}"
        count("study", "ok")


# --- the settings-row reader ---


def check_settings(text: Any) -> None:
    """A study's ``settings_json`` row read back; what is read must serve the study: a trial's
    spec and budget, its objective, and the row written again."""
    from autotune.records import StudyRowError
    from autotune.scoring import Objective
    from autotune.storage._settings import settings_from_row
    from autotune.trials import TrialSpec

    CASES["settings"] += 1
    with documented("settings", StudyRowError):
        settings = settings_from_row("fuzzed", text)
        TrialSpec.from_settings(settings, None, cache_dir=None, relaxed_numerics=False)
        settings.trial_time_limit_s(1.0, 2.0)
        Objective.of(settings)
        written = json.dumps(settings.to_dict(), sort_keys=True)  # as the records write it
        again = json.dumps(settings_from_row("fuzzed", written).to_dict(), sort_keys=True)
        assert again == written, f"read back as {again}, not {written}"
