"""Trials: one isolated process each, measured and classified into plain data."""

from __future__ import annotations

from autotune.trials._runner import SubprocessRunner, TrialRunner, kill_all_trials
from autotune.trials._spec import FAILURE_KINDS, MeasureSettings, TrialResult, TrialSpec
from autotune.trials._warm import WarmHostRunner

__all__ = [
    "FAILURE_KINDS",
    "MeasureSettings",
    "SubprocessRunner",
    "TrialResult",
    "TrialRunner",
    "TrialSpec",
    "WarmHostRunner",
    "kill_all_trials",
]
