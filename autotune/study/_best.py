"""Chooses what the best-config file says: the winning config, or "do not compile"."""

from __future__ import annotations

import datetime as dt
import math
from collections import Counter
from typing import Any

from autotune.records import TrialRecord, redact_url
from autotune.runtime.config import SCHEMA_VERSION, BestConfig, CompileConfig
from autotune.study._finalists import Finalist, finalist_records
from autotune.study._objective import Objective, break_even_calls
from autotune.study._records import candidates, eager_baseline
from autotune.study._settings import StudySettings


def best_config(
    records: list[TrialRecord],
    settings: StudySettings,
    study: str,
    storage: str,
    finalists: list[Finalist] | None = None,
    warm_start: bool = False,
) -> BestConfig:
    """The file a study emits. Never a config slower than eager or one that changed outputs:
    a winner must be faster than eager in at least three of four paired rounds (q1 > 1), and
    under the amortized objective it must also pay its compile time back within the calls.

    With ``finalists`` (re-measured cold and warm in fresh processes), the choice is made on
    their measurements, and a winner whose gain over default torch.compile is within the noise
    gives way to the default compile."""
    objective = Objective(settings.objective, settings.calls)
    fresh = {f.searched.trial_number: f for f in finalists or [] if f.ok}
    pool = finalist_records(finalists, warm_start) if finalists else candidates(records)
    pool = [r for r in pool if objective.score(r) is not None]
    if not pool:
        return do_not_compile(records, settings, study, storage, why_none(records), None)
    best = max(pool, key=lambda r: objective.score(r) or 0.0)
    refused = refusal(best, objective, settings.calls)
    if refused is not None:
        return do_not_compile(records, settings, study, storage, refused, best)
    chosen, note = against_default(best, pool, objective, settings.calls)
    if chosen is None:
        return do_not_compile(records, settings, study, storage, note, best)
    reason = f"trial {chosen.trial_number} was the best correct configuration "
    reason += f"({objective.describe()}): {spread(chosen)}{note}"
    return emit(chosen, reason, objective, pool, records, settings, study, storage, fresh)


def emit(
    best: TrialRecord,
    reason: str,
    objective: Objective,
    pool: list[TrialRecord],
    records: list[TrialRecord],
    settings: StudySettings,
    study: str,
    storage: str,
    fresh: dict[int, Finalist],
) -> BestConfig:
    """The file that says: compile ``best`` (its reason, metrics and compile payback)."""
    config = CompileConfig.from_dict(best.config)
    made = _file(settings, study, storage, best, "compile", reason, config)
    default = next((r for r in pool if r.baseline == "default"), None)
    default = default or next((r for r in records if r.baseline == "default"), None)
    made.metrics["objective_score"] = objective.score(best) or 0.0
    made.metrics["break_even_calls_vs_eager"] = _finite(break_even_calls(best))
    if best.baseline != "default":  # the default compile does not pay back against itself
        made.metrics["break_even_calls_vs_default"] = _finite(break_even_calls(best, default))
    if best.trial_number in fresh:
        made.metrics["cold_compile_time_s"] = fresh[best.trial_number].cold.compile_time_s
        made.metrics["warm_compile_time_s"] = fresh[best.trial_number].warm.compile_time_s
    return made


def refusal(best: TrialRecord, objective: Objective, calls: int | None) -> str | None:
    """Why ``best`` must not be shipped, or None: it must beat eager in three of four paired
    rounds, and under the amortized objective pay its compile back within the calls."""
    q1, q3 = best.speedup_vs_eager_q1 or 0.0, best.speedup_vs_eager_q3 or 0.0
    which = f"trial {best.trial_number}: {best.brief}"
    if q1 <= 1.0:
        return (
            f"the best correct compiled configuration ({which}) ran "
            f"{best.speedup_vs_eager:.3f}x eager, but its paired rounds spread {q1:.3f}x to "
            f"{q3:.3f}x: not reliably faster than eager"
        )
    if objective.kind == "amortized" and (objective.score(best) or 0.0) <= 1.0:
        return (
            f"over {calls} calls no configuration pays back its compile time: the "
            f"best ({which}) runs {best.speedup_vs_eager:.3f}x eager but compiles in "
            f"{best.compile_time_s or 0:.1f} s, so it breaks even only after "
            f"{_calls(break_even_calls(best))} calls"
        )
    return None


def against_default(
    best: TrialRecord, pool: list[TrialRecord], objective: Objective, calls: int | None
) -> tuple[TrialRecord | None, str]:
    """A tuned config must beat default torch.compile by more than the measured spread (its
    lower quartile above the default's upper one). Otherwise the default compile is
    recommended when it passes on its own, and no compile when it does not."""
    default = next((r for r in pool if r.baseline == "default"), None)
    if default is None or best is default:
        return best, ""
    if (best.speedup_vs_eager_q1 or 0.0) > (default.speedup_vs_eager_q3 or 0.0):
        return best, ""
    within = (
        f"the tuned trial {best.trial_number} ({best.speedup_vs_eager:.3f}x eager) did not "
        f"beat default torch.compile ({default.speedup_vs_eager:.3f}x eager) by more than "
        "the measured spread"
    )
    if refusal(default, objective, calls) is None:
        return default, f"; {within}, so the default compile is recommended"
    return None, f"{within}, and the default compile is not reliably faster than eager"


def spread(r: TrialRecord) -> str:
    q1, q3 = r.speedup_vs_eager_q1 or 0.0, r.speedup_vs_eager_q3 or 0.0
    return f"{r.speedup_vs_eager:.3f}x eager (paired rounds {q1:.3f}x to {q3:.3f}x)"


def _calls(n: float | None) -> str:
    if n is None or math.isinf(n):
        return "never"
    return f"{math.ceil(n):,}"


def _finite(n: float | None) -> float | None:
    return None if n is None or math.isinf(n) else n


def do_not_compile(
    records: list[TrialRecord],
    settings: StudySettings,
    study: str,
    storage: str,
    reason: str,
    best: TrialRecord | None,
) -> BestConfig:
    eager = eager_baseline(records)
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
            # the config was held to the looser gate of --allow-numerics-changes
            "relaxed_numerics": record is not None and record.relaxed_numerics,
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


def why_none(records: list[TrialRecord]) -> str:
    kinds = Counter(r.failure_kind for r in records if r.baseline != "eager" and r.failure_kind)
    if not kinds:
        return "no compiled configuration was measured"
    listed = ", ".join(f"{n} {kind}" for kind, n in kinds.most_common())
    return f"no compiled configuration both ran and matched eager ({listed})"
