"""Turns a trial's result into the row we keep for it."""

from __future__ import annotations

from typing import Any

from autotune.records import TrialRecord
from autotune.runtime.config import CompileConfig
from autotune.trials import TrialResult

EAGER_HASH = "eager"


def to_record(
    number: int,
    optuna_trial_id: int | None,
    baseline: str | None,
    config: CompileConfig | None,
    result: TrialResult,
    duplicate_of: int | None,
    default_speedup: float | None,
) -> TrialRecord:
    """One record: the config, how the trial ended, its measurements and where it ran."""
    measured = measurements(result)
    return TrialRecord(
        trial_number=number,
        optuna_trial_id=optuna_trial_id,
        baseline=baseline,
        config=config.to_dict() if config is not None else {},
        config_hash=config.config_hash() if config is not None else EAGER_HASH,
        brief=config.brief() if config is not None else "eager (no compile)",
        status=result.status,
        failure_kind=result.failure_kind,
        error=result.error,
        error_tail=result.error_tail,
        compile_time_s=result.compile_time_s,
        **measured,
        speedup_vs_default=_ratio(measured["speedup_vs_eager"], default_speedup, baseline),
        graphs=result.graphs,
        graph_breaks=result.graph_breaks,
        recompiles=result.recompiles,
        wall_time_s=result.wall_time_s,
        duplicate_of=duplicate_of,
        environment=result.environment,
        result=result.to_dict(),
    )


def measurements(result: TrialResult) -> dict[str, Any]:
    """The steady-state figures of a trial, as record fields (speedups only when it ran ok)."""
    ok = result.ok
    return {
        "latency_median_s": result.latency_median_s,
        "latency_iqr_s": result.latency_iqr_s,
        "eager_latency_median_s": result.eager_latency_median_s,
        "speedup_vs_eager": result.speedup_vs_eager if ok else None,
        "speedup_vs_eager_q1": result.speedup_vs_eager_q1 if ok else None,
        "speedup_vs_eager_q3": result.speedup_vs_eager_q3 if ok else None,
        "peak_memory_bytes": result.peak_memory_bytes,
    }


def _ratio(speedup: float | None, default: float | None, baseline: str | None) -> float | None:
    """Speedup over default torch.compile, through eager: both were timed against eager
    side by side, so the ratio of those ratios is robust to drift between trials."""
    if baseline == "default" and speedup is not None:
        return 1.0
    if speedup is None or not default:
        return None
    return speedup / default
