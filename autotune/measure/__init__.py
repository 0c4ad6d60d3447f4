"""Measurements of a trial: interleaved timing, peak memory and the correctness gate.

Runs inside the trial's child process and needs only torch and the standard library.
"""

from __future__ import annotations

from autotune.measure.accuracy import (
    TOLERANCES,
    AccuracyReport,
    clone_outputs,
    compare_outputs,
    tolerance_for,
)
from autotune.measure.memory import peak_memory_bytes, reset_peak_memory
from autotune.measure.timing import Stats, Timing, interleaved_timing, time_first_call

__all__ = [
    "TOLERANCES",
    "AccuracyReport",
    "Stats",
    "Timing",
    "clone_outputs",
    "compare_outputs",
    "interleaved_timing",
    "peak_memory_bytes",
    "reset_peak_memory",
    "time_first_call",
    "tolerance_for",
]
