"""Chooses what the best-config file says: the winning config, or "do not compile"."""

from __future__ import annotations

import datetime as dt
import math
from collections import Counter
from typing import Any

from autotune.records import TrialRecord, redact_url
from autotune.runtime.config import SCHEMA_VERSION, BestConfig, CompileConfig
from autotune.study._objective import Objective, break_even_calls
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
    a winner must be faster than eager in at least three of four paired rounds (q1 > 1), and
    under the amortized objective it must also pay its compile time back within the calls."""
    objective = Objective(settings.objective, settings.calls)
    pool = [r for r in candidates(records) if objective.score(r) is not None]
    if not pool:
        return _do_not_compile(records, settings, study, storage, _why_none(records), None)
    best = max(pool, key=lambda r: objective.score(r) or 0.0)
    q1, q3 = best.speedup_vs_eager_q1 or 0.0, best.speedup_vs_eager_q3 or 0.0
    which = f"trial {best.trial_number}: {best.brief}"
    if q1 <= 1.0:
        reason = (
            f"the best correct compiled configuration ({which}) ran "
            f"{best.speedup_vs_eager:.3f}x eager, but its paired rounds spread {q1:.3f}x to "
            f"{q3:.3f}x: not reliably faster than eager"
        )
        return _do_not_compile(records, settings, study, storage, reason, best)
    score = objective.score(best) or 0.0
    if objective.kind == "amortized" and score <= 1.0:
        reason = (
            f"over {settings.calls} calls no configuration pays back its compile time: the "
            f"best ({which}) runs {best.speedup_vs_eager:.3f}x eager but compiles in "
            f"{best.compile_time_s or 0:.1f} s, so it breaks even only after "
            f"{_calls(break_even_calls(best))} calls"
        )
        return _do_not_compile(records, settings, study, storage, reason, best)
    reason = (
        f"trial {best.trial_number} was the best correct configuration "
        f"({objective.describe()}): {best.speedup_vs_eager:.3f}x eager (paired rounds "
        f"{q1:.3f}x to {q3:.3f}x)"
    )
    made = _file(
        settings, study, storage, best, "compile", reason, CompileConfig.from_dict(best.config)
    )
    default = next((r for r in records if r.baseline == "default"), None)
    made.metrics["objective_score"] = score
    made.metrics["break_even_calls_vs_eager"] = _finite(break_even_calls(best))
    made.metrics["break_even_calls_vs_default"] = _finite(break_even_calls(best, default))
    return made


def _calls(n: float | None) -> str:
    if n is None or math.isinf(n):
        return "never"
    return f"{math.ceil(n):,}"


def _finite(n: float | None) -> float | None:
    return None if n is None or math.isinf(n) else n


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
            "objective": settings.objective,
            "calls": settings.calls,
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
