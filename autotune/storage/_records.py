"""Turns a trial's result into the row we keep for it."""

from __future__ import annotations

import statistics
from collections.abc import Callable
from dataclasses import dataclass, fields, replace
from typing import Any

from autotune.records import TrialRecord
from autotune.runtime.config import CompileConfig
from autotune.trials import Spread, TrialFigures, TrialResult

EAGER_HASH = "eager"

# The steady-state figures of a trial (TrialResult fields, TrialRecord fields of the same
# name), each with how several processes' values of one config are pooled into one: the
# median of their medians, the widest quartiles, the largest peak; the speedups, where the
# processes carry their rounds, as Spread.pooled pools them.
MEASUREMENTS: dict[str, Callable[[list[Any]], Any]] = {
    "latency_median_s": statistics.median,
    "latency_iqr_s": max,
    "eager_latency_median_s": statistics.median,
    "speedup_vs_eager": statistics.median,
    "speedup_vs_eager_q1": min,
    "speedup_vs_eager_q3": max,
    "peak_memory_bytes": max,
}
_SPEEDUPS = ("speedup_vs_eager", "speedup_vs_eager_q1", "speedup_vs_eager_q3")
# What else a record copies from its trial's result: the rest of the figures both carry.
_COPIED = ("status", *(f.name for f in fields(TrialFigures) if f.name not in MEASUREMENTS))


def trial_key(config: CompileConfig | None, batch_size: int | None = None) -> str:
    """What makes two trials the same measurement: the config's hash (``eager`` for none),
    and the batch size when the study searches it."""
    key = config.config_hash() if config is not None else EAGER_HASH
    return key if batch_size is None else f"{key}@{batch_size}"


@dataclass(frozen=True)
class Ran:
    """What the process that ran a trial knows of it beside the trial's own result: the batch
    size it asked for, the bytes the trial added to the kernel cache, the worker it ran in."""

    batch_size: int | None
    cache_bytes_written: int
    worker: dict[str, Any]


def to_record(
    number: int,
    optuna_trial_id: int | None,
    baseline: str | None,
    config: CompileConfig | None,
    key: str,
    result: TrialResult,
    duplicate_of: int | None,
    default_speedup: float | None,
    ran: Ran | None = None,
) -> TrialRecord:
    """One record: the config, how the trial ended, its measurements and where it ran (what
    the running process knew of it, ``ran``, beside the trial's own result; a reused result
    carries its source's)."""
    if ran is not None:
        environment = {**result.environment, "worker": ran.worker}
        result = replace(result, batch_size=ran.batch_size, environment=environment,
                         cache_bytes_written=ran.cache_bytes_written)  # fmt: skip
    measured = measurements(result)
    return TrialRecord(
        trial_number=number,
        optuna_trial_id=optuna_trial_id,
        baseline=baseline,
        config=config.to_dict() if config is not None else {},
        config_hash=key,
        brief=config.brief() if config is not None else "eager (no compile)",
        **{name: getattr(result, name) for name in _COPIED},
        **measured,
        speedup_vs_default=_ratio(measured["speedup_vs_eager"], default_speedup, baseline),
        duplicate_of=duplicate_of,
        result=result.to_dict(),
    )


def measurements(result: TrialResult) -> dict[str, Any]:
    """The steady-state figures of a trial, as record fields (speedups only when it ran ok)."""
    return {
        name: getattr(result, name) if result.ok or name not in _SPEEDUPS else None
        for name in MEASUREMENTS
    }


def pooled_measurements(results: list[TrialResult]) -> dict[str, Any]:
    """Several processes' steady-state figures of one config as one (see MEASUREMENTS). On a
    shared machine a config's speedup drifts over minutes by more than one timing window's
    quartiles show (seen on a 2-core CPU: default compile of the benchmark encoder measured
    1.07x to 1.27x eager in eight processes), so the spread between windows is noise too, and
    a claim must allow for it."""
    each = [measurements(r) for r in results]
    pooled = {}
    for name, how in MEASUREMENTS.items():
        found = [m[name] for m in each if m[name] is not None]
        pooled[name] = how(found) if found else None
    speedup = Spread.pooled(results)  # their rounds as one, where they carry them
    if speedup is not None:
        pooled.update({k: v for k, v in speedup.figures().items() if k in _SPEEDUPS})
    return pooled


def _ratio(speedup: float | None, default: float | None, baseline: str | None) -> float | None:
    """Speedup over default torch.compile, through eager: both were timed against eager
    side by side, so the ratio of those ratios is robust to drift between trials."""
    if baseline == "default" and speedup is not None:
        return 1.0
    if speedup is None or not default:
        return None
    return speedup / default


def candidates(records: list[TrialRecord]) -> list[TrialRecord]:
    """Compiled trials that ran, passed the correctness gate, were measured (not reused, for
    the same config or the same generated code) and compiled something (a scope whose every
    region fell back to eager has no graph)."""
    return [
        r
        for r in records
        if r.status == "ok"
        and r.baseline != "eager"
        and r.duplicate_of is None
        and r.equivalent_of is None
        and r.config
        and (r.graphs is None or r.graphs > 0)
    ]


def screened(records: list[TrialRecord]) -> tuple[int, int]:
    """How many trials took an earlier trial's timing for the same code, and how many (of the
    others) stopped timing early."""
    own = [r for r in records if r.duplicate_of is None]  # a reused trial carries its source's
    same = sum(1 for r in own if r.equivalent_of is not None)
    early = sum(1 for r in own if r.pruned and r.equivalent_of is None)
    return same, early


def eager_baselines(records: list[TrialRecord]) -> list[TrialRecord]:
    """The study's measured eager baselines (one per batch size it searches)."""
    return [r for r in records if r.baseline == "eager" and r.status == "ok"]


def eager_baseline(records: list[TrialRecord]) -> TrialRecord | None:
    """The study's measured eager baseline, if it ran."""
    return next(iter(eager_baselines(records)), None)
