"""Measurements of a trial: interleaved timing, peak memory, the correctness gate, and the
accuracy contract a user states (``--accuracy``).

Runs inside the trial's child process and needs only torch and the standard library. Names load
on first use: reading an accuracy contract (the command line, a stored study) imports no torch.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from autotune.measure._contract import (
        INFERENCE_METRICS,
        TRAINING_METRICS,
        Contract,
        ContractError,
        Verdict,
        parse_contract,
        report_errors,
        training_errors,
        workload_problems,
    )
    from autotune.measure._settings import MEASURE_SECONDS, MeasureSettings
    from autotune.measure._stats import Stats, pooled, widened
    from autotune.measure._traffic import (
        PERCENTILES,
        RequestTiming,
        traffic_summary,
        weighted_quantile,
    )
    from autotune.measure.accuracy import (
        TOLERANCES,
        AccuracyReport,
        clone_outputs,
        compare_outputs,
        tolerance_for,
    )
    from autotune.measure.memory import peak_memory_bytes, reset_peak_memory
    from autotune.measure.timing import Timing, interleaved_timing, time_first_call

_NAMES = {
    "Contract": "_contract", "ContractError": "_contract", "Verdict": "_contract",
    "parse_contract": "_contract", "report_errors": "_contract",
    "INFERENCE_METRICS": "_contract", "TRAINING_METRICS": "_contract",
    "training_errors": "_contract", "workload_problems": "_contract",
    "TOLERANCES": "accuracy", "AccuracyReport": "accuracy", "clone_outputs": "accuracy",
    "compare_outputs": "accuracy", "tolerance_for": "accuracy",
    "peak_memory_bytes": "memory", "reset_peak_memory": "memory",
    "MEASURE_SECONDS": "_settings", "MeasureSettings": "_settings",
    "Stats": "_stats", "pooled": "_stats", "widened": "_stats", "Timing": "timing",
    "interleaved_timing": "timing",
    "time_first_call": "timing", "PERCENTILES": "_traffic", "RequestTiming": "_traffic",
    "traffic_summary": "_traffic", "weighted_quantile": "_traffic",
}  # fmt: skip

__all__ = [
    "INFERENCE_METRICS", "MEASURE_SECONDS", "PERCENTILES", "TOLERANCES", "TRAINING_METRICS",
    "AccuracyReport", "Contract", "ContractError", "MeasureSettings", "RequestTiming", "Stats",
    "Timing", "Verdict", "clone_outputs",
    "compare_outputs", "interleaved_timing", "parse_contract", "peak_memory_bytes", "pooled",
    "report_errors", "reset_peak_memory", "time_first_call", "tolerance_for", "traffic_summary",
    "training_errors", "weighted_quantile", "widened", "workload_problems",
]  # fmt: skip


def __getattr__(name: str) -> Any:
    if name not in _NAMES:
        raise AttributeError(f"module 'autotune.measure' has no attribute {name!r}")
    return getattr(importlib.import_module(f"autotune.measure.{_NAMES[name]}"), name)
