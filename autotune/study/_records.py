"""Turns a trial's result into the row we keep for it."""

from __future__ import annotations

import statistics
from collections.abc import Callable
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


def pooled_measurements(results: list[TrialResult]) -> dict[str, Any]:
    """Several processes' steady-state figures of one config as one: the median of their
    medians and the widest quartiles. On a shared machine a config's speedup drifts over
    minutes by more than one timing window's quartiles show (seen on a 2-core CPU: default
    compile of the benchmark encoder measured 1.07x to 1.27x eager in eight processes), so the
    spread between windows is noise too, and a claim must allow for it."""
    each = [measurements(r) for r in results]

    def values(key: str) -> list[Any]:
        return [m[key] for m in each if m[key] is not None]

    def pick(key: str, how: Callable[[list[Any]], Any]) -> Any:
        found = values(key)
        return how(found) if found else None

    return {
        "latency_median_s": pick("latency_median_s", statistics.median),
        "latency_iqr_s": pick("latency_iqr_s", max),
        "eager_latency_median_s": pick("eager_latency_median_s", statistics.median),
        "speedup_vs_eager": pick("speedup_vs_eager", statistics.median),
        "speedup_vs_eager_q1": pick("speedup_vs_eager_q1", min),
        "speedup_vs_eager_q3": pick("speedup_vs_eager_q3", max),
        "peak_memory_bytes": pick("peak_memory_bytes", max),
    }


def _ratio(speedup: float | None, default: float | None, baseline: str | None) -> float | None:
    """Speedup over default torch.compile, through eager: both were timed against eager
    side by side, so the ratio of those ratios is robust to drift between trials."""
    if baseline == "default" and speedup is not None:
        return 1.0
    if speedup is None or not default:
        return None
    return speedup / default


def candidates(records: list[TrialRecord]) -> list[TrialRecord]:
    """Compiled trials that ran, passed the correctness gate, were measured (not reused) and
    compiled something (a scope whose every region fell back to eager has no graph)."""
    return [
        r
        for r in records
        if r.status == "ok"
        and r.baseline != "eager"
        and r.duplicate_of is None
        and r.config
        and (r.graphs is None or r.graphs > 0)
    ]


def eager_baseline(records: list[TrialRecord]) -> TrialRecord | None:
    """The study's measured eager baseline, if it ran."""
    return next((r for r in records if r.baseline == "eager" and r.status == "ok"), None)
