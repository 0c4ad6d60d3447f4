"""The one table of a study's settings: for each, the ``StudySettings`` field, its default, the
command-line option messages name it by, the ``autotune search`` options that set it, and
whether it may change when a study is resumed; and ``--effort``'s presets. ``StudySettings``
takes its defaults from here, the command line its defaults and its record of what was given,
the resume rules (``autotune.study.settle``) what may change. Standard library only: the
command line reads it before anything heavy is imported."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Setting:
    """One study setting.

    Attributes:
        field: Its :class:`~autotune.study.StudySettings` field.
        option: What messages call it (``--trials``, ``the model file``).
        dests: The ``autotune search`` options (argparse destinations) that set it.
        changeable: May change when a study is resumed: it decides how many trials run or
            how the winner is chosen, never what a trial measures.
        default: Its value when not given (None: off, or derived).
    """

    field: str
    option: str
    dests: tuple[str, ...]
    changeable: bool = False
    default: Any = None


SETTINGS: tuple[Setting, ...] = (
    Setting("model_path", "the model file", ("model",)),
    Setting("device", "--device", ("device",)),
    Setting("space_hash", "--space", ("space", "allow_numerics_changes")),
    Setting("workload", "--workload", ("workload",), default="infer"),
    Setting("seed", "--seed", ("seed",), default=0),
    Setting("compile_budget_s", "--compile-budget", ("compile_budget",), default=600.0),
    Setting(
        "compile_budget_factor",
        "--compile-budget-factor",
        ("compile_budget_factor",),
        True,
        default=5.0,
    ),
    Setting("measure", "--measure-seconds", ("measure_seconds",)),
    Setting("sampler", "--sampler", ("sampler",), default="tpe"),
    Setting("scope", "--scope", ("scope",), default="search"),
    Setting("objective", "--objective", ("objective",), default="latency"),
    Setting("calls", "--calls", ("calls",)),
    Setting("memory_budget_bytes", "--memory-budget", ("memory_budget",)),
    Setting("pareto", "--pareto-axes", ("pareto", "pareto_axes")),
    Setting("finalist_precision", "--precision", ("precision",), True, default=0.02),
    Setting("trials", "--trials", ("trials",), True, default=20),
    Setting("finalists", "--finalists", ("finalists",), True, default=3),
    Setting("preset_finalists", "--preset-finalists", ("preset_finalists",), True, default="best"),
    Setting("prune", "--no-prune", ("prune",), True, default=True),
    Setting("pick", "--pick", ("pick",), True),
    Setting("warm_start", "--charge-warm-compile", ("charge_warm_compile",), True, default=False),
    Setting("batch_sizes", "--batch-sizes", ("batch_sizes",)),
    Setting("max_latency_s", "--max-latency-ms", ("max_latency_ms",)),
    Setting("accuracy", "--accuracy", ("accuracy",)),
)

# Each setting's default, where it has one.
DEFAULT: dict[str, Any] = {s.field: s.default for s in SETTINGS if s.default is not None}
# The timing of each trial (MeasureSettings.target_seconds, --measure-seconds).
MEASURE_SECONDS = 2.0
# The command-line option that sets each setting, for messages.
OPTIONS = {s.field: s.option for s in SETTINGS}
# What may change when a study is resumed: how many trials it runs and how the winner is
# chosen from them. Every other setting decides what a trial measures, so a trial measured
# under another value would not compare with the others.
CHANGEABLE = tuple(s.field for s in SETTINGS if s.changeable)
# The setting each option of `autotune search` sets: what a resumed study compares.
SETTINGS_OF = {dest: s.field for s in SETTINGS for dest in s.dests}

# What --effort sets, unless given explicitly: (space or None for the device's, trials or None
# for sized from the space, compile budget in seconds, finalists).
EFFORTS: dict[str, dict[str, Any]] = {
    "quick": {"space": "quick", "trials": 8, "compile_budget": 300.0, "finalists": 2},
    "default": {"space": None, "trials": 20, "compile_budget": 600.0, "finalists": 3},
    "thorough": {"space": None, "trials": None, "compile_budget": 900.0, "finalists": 5},
}
# --effort thorough: 2 % of the space's configurations, within these bounds.
THOROUGH_TRIALS = (40, 100)


def thorough_trials(space_size: int) -> int:
    """--effort thorough's trial budget for a space of ``space_size`` configurations."""
    low, high = THOROUGH_TRIALS
    return min(high, max(low, round(space_size * 0.02)))


def changeable_options() -> str:
    """The options that may change on resume, for prose: ``--a, --b and --c``."""
    names = sorted({OPTIONS[field] for field in CHANGEABLE})
    return f"{', '.join(names[:-1])} and {names[-1]}"
