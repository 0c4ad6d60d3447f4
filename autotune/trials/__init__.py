"""Trials: one isolated process each, measured and classified into plain data."""

from __future__ import annotations

from autotune.measure import MeasureSettings
from autotune.trials._cores import split_cores, usable_cores
from autotune.trials._phase import read_phase
from autotune.trials._pool import RunnerPool
from autotune.trials._preloaded import HOST_LOG_PREFIX, PreloadedHostRunner
from autotune.trials._runner import (
    CACHE_PARTS,
    SubprocessRunner,
    TrialRunner,
    child_env,
)
from autotune.trials._spec import (
    DEFAULT_PRECISION,
    FAILURE_KINDS,
    TrialFigures,
    TrialResult,
    TrialSpec,
)
from autotune.trials._spread import Spread

__all__ = [
    "RunnerPool",
    "Spread",
    "split_cores",
    "usable_cores",
    "CACHE_PARTS",
    "DEFAULT_PRECISION",
    "HOST_LOG_PREFIX",
    "FAILURE_KINDS",
    "child_env",
    "read_phase",
    "MeasureSettings",
    "SubprocessRunner",
    "TrialFigures",
    "TrialResult",
    "TrialRunner",
    "TrialSpec",
    "PreloadedHostRunner",
]
