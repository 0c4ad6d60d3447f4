"""What an option of the settings table is (:class:`Option`), the constants its rows use, and
``--effort``'s presets. Standard library only."""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

STORAGE_ENV = "AUTOTUNE_STORAGE"
DEFAULT_STORAGE = "sqlite:///autotune.db"
# The values of the options that take one of a few (what --help lists and every caller checks).
TRIAL_HOSTS = ("preloaded", "fresh")
WORKLOADS = ("infer", "train", "generate")
SAMPLERS = ("tpe", "random")
SCOPES = ("search", "whole")
PRESET_FINALISTS = ("best", "all")
OBJECTIVES = ("latency", "throughput", "amortized")


def storage_url(given: str | None) -> str:
    """The storage a search uses: the one given (``--storage``, ``storage=``), else
    ``$AUTOTUNE_STORAGE`` (keeps passwords off the command line, where ps shows them), else the
    SQLite file in this folder."""
    return given or os.environ.get(STORAGE_ENV) or DEFAULT_STORAGE


# What --effort sets, unless given explicitly: (space or None for the device's, trials or None
# for sized from the space, compile budget in seconds, finalists).
EFFORTS: dict[str, dict[str, Any]] = {
    "quick": {"space": "quick", "trials": 8, "compile_budget": 300.0, "finalists": 2},
    "default": {"space": None, "trials": 20, "compile_budget": 600.0, "finalists": 3},
    "thorough": {"space": None, "trials": None, "compile_budget": 900.0, "finalists": 5},
}


@dataclass(frozen=True)
class Option:
    """One option.

    Attributes:
        flag: ``--compile-budget`` (a name without dashes is positional: ``model``).
        help: What ``--help`` says.
        dest: Its name, where not the flag's (``--no-prune`` sets ``prune``).
        action: ``store_true``/``store_false`` for a switch.
        kind: The kind of its value (:data:`autotune.settings._kinds.KINDS`), None for text.
        choices: The values it takes, where they are few.
        default: Its value when not given (None: off, or derived).
        metavar: What ``--help`` calls its value.
        field: The study setting it sets, if any: what a resumed study compares.
        changeable: That setting may change when a study is resumed: it decides how many
            trials run or how the winner is chosen, never what a trial measures.
        label: What messages call the setting (default: the flag).
        in_files: A study file may set it (not so for how this process runs or prints).
        in_tune: ``autotune.tune`` takes it as a keyword (its model is its first argument).
        elsewhere: For a caller that may not set it (``in_files``, ``in_tune``), what to do
            instead.
        stored: The form its setting is stored in where that is not what the option reads
            (``autotune.storage``'s ``STORED_FORMS``: ``axes`` for --pareto's, ``bytes`` for
            --memory-budget's, ...); None: the option's own kind reads the stored value.
        annotation: The Python type of its value (``"int"``, ``"float | None"``) in the
            classes that carry it (:class:`~autotune.settings.StudyFields`, ``TrialFields``,
            ``RequestFields``, ``FinishFields``), which are written
            from the table (``python -m autotune.settings._generate``). A type without None
            and an option without a default: every study's settings hold it.
    """

    flag: str
    help: str
    dest: str | None = None
    action: str | None = None
    kind: str | None = None
    choices: tuple[str, ...] | None = None
    default: Any = None
    metavar: str | None = None
    field: str | None = None
    changeable: bool = False
    label: str | None = None
    in_files: bool = True
    in_tune: bool = True
    stored: str | None = None
    elsewhere: str | None = None
    annotation: str | None = None

    @property
    def name(self) -> str:
        """Its destination: ``--compile-budget`` is ``compile_budget``."""
        return self.dest or self.flag.lstrip("-").replace("-", "_")

    @property
    def positional(self) -> bool:
        return not self.flag.startswith("-")

    @property
    def switch(self) -> bool:
        return self.action in ("store_true", "store_false")


# --effort thorough: 2 % of the space's configurations, within these bounds.
THOROUGH_TRIALS = (40, 100)


def thorough_trials(space_size: int) -> int:
    """--effort thorough's trial budget for a space of ``space_size`` configurations."""
    low, high = THOROUGH_TRIALS
    return min(high, max(low, round(space_size * 0.02)))
