"""Chooses what the best-config file says: the winning config, or "do not compile"."""

from __future__ import annotations

import datetime as dt
from collections import Counter
from typing import Any

from autotune.records import TrialRecord, redact_url
from autotune.runtime.config import SCHEMA_VERSION, BestConfig, CompileConfig
from autotune.study._settings import StudySettings


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


def best_config(
    records: list[TrialRecord], settings: StudySettings, study: str, storage: str
) -> BestConfig:
    """The file a study emits. Never a config slower than eager or one that changed outputs:
    a winner must be faster than eager in at least three of four paired rounds (q1 > 1)."""
    pool = candidates(records)
    if not pool:
        return _do_not_compile(records, settings, study, storage, _why_none(records), None)
    best = max(pool, key=lambda r: r.speedup_vs_eager or 0.0)
    q1, q3 = best.speedup_vs_eager_q1 or 0.0, best.speedup_vs_eager_q3 or 0.0
    if q1 <= 1.0:
        reason = (
            f"the fastest correct compiled configuration (trial {best.trial_number}: "
            f"{best.brief}) ran {best.speedup_vs_eager:.3f}x eager, but its paired rounds "
            f"spread {q1:.3f}x to {q3:.3f}x: not reliably faster than eager"
        )
        return _do_not_compile(records, settings, study, storage, reason, best)
    config = CompileConfig.from_dict(best.config)
    reason = (
        f"trial {best.trial_number} was the fastest correct configuration: "
        f"{best.speedup_vs_eager:.3f}x eager (paired rounds {q1:.3f}x to {q3:.3f}x)"
    )
    return _file(settings, study, storage, best, "compile", reason, config)


def _do_not_compile(
    records: list[TrialRecord],
    settings: StudySettings,
    study: str,
    storage: str,
    reason: str,
    best: TrialRecord | None,
) -> BestConfig:
    eager = _eager(records)
    made = _file(settings, study, storage, best or eager, "do_not_compile", reason, None)
    if eager is not None:
        made.metrics["eager_latency_s"] = eager.latency_median_s
    if best is not None:
        made.metrics["best_compiled_trial"] = best.trial_number
        made.metrics["best_compiled_speedup_vs_eager"] = best.speedup_vs_eager
    return made


def _file(
    settings: StudySettings,
    study: str,
    storage: str,
    record: TrialRecord | None,
    decision: str,
    reason: str,
    config: CompileConfig | None,
) -> BestConfig:
    from autotune import __version__

    result: dict[str, Any] = record.result if record is not None else {}
    return BestConfig(
        schema_version=SCHEMA_VERSION,
        autotune_version=__version__,
        decision=decision,
        reason=reason,
        config=config,
        config_hash=config.config_hash() if config is not None else None,
        metrics=_metrics(record) if config is not None else {},
        environment=dict(result.get("environment") or {}),
        model={**(result.get("model") or {}), "source": settings.model_path},
        workload={
            "kind": settings.workload,
            "device": settings.device,
            "inputs": list(result.get("inputs") or []),
        },
        source={
            "study": study,
            "trial": record.trial_number if record is not None and config else None,
            "storage": redact_url(storage),
        },
        created_at=dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
    )


def _metrics(r: TrialRecord | None) -> dict[str, float | int | None]:
    if r is None:
        return {}
    return {
        "latency_s": r.latency_median_s,
        "latency_iqr_s": r.latency_iqr_s,
        "eager_latency_s": r.eager_latency_median_s,
        "speedup_vs_eager": r.speedup_vs_eager,
        "speedup_vs_eager_q1": r.speedup_vs_eager_q1,
        "speedup_vs_eager_q3": r.speedup_vs_eager_q3,
        "speedup_vs_default": r.speedup_vs_default,
        "compile_time_s": r.compile_time_s,
        "peak_memory_bytes": r.peak_memory_bytes,
    }


def _eager(records: list[TrialRecord]) -> TrialRecord | None:
    return next((r for r in records if r.baseline == "eager" and r.status == "ok"), None)


def _why_none(records: list[TrialRecord]) -> str:
    kinds = Counter(r.failure_kind for r in records if r.baseline != "eager" and r.failure_kind)
    if not kinds:
        return "no compiled configuration was measured"
    listed = ", ".join(f"{n} {kind}" for kind, n in kinds.most_common())
    return f"no compiled configuration both ran and matched eager ({listed})"
