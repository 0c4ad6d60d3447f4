"""Measurements of a trial: interleaved timing, peak memory, the correctness gate, and the
accuracy contract a user states (``--accuracy``).

Runs inside the trial's child process and needs only torch and the standard library. This
package's own names need no torch, so reading an accuracy contract (the command line, a stored
study) imports none; the parts that run on tensors are its public modules, imported by name:
:mod:`autotune.measure.timing` (``interleaved_timing``, ``time_first_call``),
:mod:`autotune.measure.accuracy` (``compare_outputs``, ``clone_outputs``, the tolerances) and
:mod:`autotune.measure.memory` (peak memory).
"""

from __future__ import annotations

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

__all__ = [
    "INFERENCE_METRICS", "MEASURE_SECONDS", "PERCENTILES", "TRAINING_METRICS", "Contract",
    "ContractError", "MeasureSettings", "RequestTiming", "Stats", "Verdict", "parse_contract",
    "pooled", "report_errors", "traffic_summary", "training_errors", "weighted_quantile",
    "widened", "workload_problems",
]  # fmt: skip
