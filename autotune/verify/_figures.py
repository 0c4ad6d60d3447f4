"""The numbers ``autotune verify`` compares: what the file claims, and what was measured here,
pooled over repeats (their rounds as one, :meth:`~autotune.trials.Spread.pooled`)."""

from __future__ import annotations

import statistics
from collections.abc import Sequence

from autotune.runtime.config import BestConfig
from autotune.trials import Spread, TrialResult

Repeat = dict[str, TrialResult]  # one pass over the plan: "eager", "default", "config"
Numbers = dict[str, float | None]


def chosen(has_config: bool) -> str:
    """What the file says to run: ``config``, or ``eager`` for a file without one
    (do_not_compile, or an inconclusive decision that ships eager)."""
    return "config" if has_config else "eager"


def claims(best: BestConfig) -> Numbers:
    """The numbers the file states about what it says to run (nothing, for eager)."""
    m = best.metrics
    compiled = best.config is not None
    return {
        "speedup_vs_eager": m.get("speedup_vs_eager") if compiled else None,
        "speedup_vs_eager_q1": m.get("speedup_vs_eager_q1") if compiled else None,
        "speedup_vs_eager_q3": m.get("speedup_vs_eager_q3") if compiled else None,
        "speedup_vs_default": m.get("speedup_vs_default") if compiled else None,
        "latency_median_s": (
            best.metric("latency_median_s") if compiled else best.metric("eager_latency_median_s")
        ),
        "eager_latency_median_s": best.metric("eager_latency_median_s"),
        "compile_time_s": _cold_compile_time(m) if compiled else None,
        **{
            f"speedup_vs_eager_ci_{end}": m.get(f"speedup_vs_eager_ci_{end}") if compiled else None
            for end in ("low", "high")
        },
    }


def spreads(best: BestConfig, repeats: Sequence[Repeat]) -> dict[str, Spread | None]:
    """The pooled speedups over eager of what the file says to run (``config``: its config, or
    eager against itself) and of default torch.compile (``default``)."""
    mine = chosen(best.config is not None)
    return {
        "config": Spread.pooled([r.get(mine) for r in repeats]),
        "default": Spread.pooled([r.get("default") for r in repeats]),
    }


def measurements(best: BestConfig, repeats: Sequence[Repeat]) -> Numbers:
    """Pooled over repeats, for what the file says to run (its config, or eager), then for
    default torch.compile."""
    mine = chosen(best.config is not None)
    # eager's own latency, not that of its second copy in the eager-vs-eager trial
    latency = "latency_median_s" if mine == "config" else "eager_latency_median_s"
    pooled = spreads(best, repeats)
    config, default = pooled["config"], pooled["default"]
    lead = config.ratio(default) if config is not None and default is not None else None
    return {
        **_speedups("", config),
        "speedup_vs_default": lead.median if lead else None,
        "speedup_vs_default_ci_low": lead.low if lead else None,
        "speedup_vs_default_ci_high": lead.high if lead else None,
        "latency_median_s": _median([_ok(r.get(mine), latency) for r in repeats]),
        "eager_latency_median_s": _median(
            [_ok(r["eager"], "eager_latency_median_s") for r in repeats]
        ),
        "compile_time_s": _median([_ok(r.get("config"), "compile_time_s") for r in repeats]),
        **_speedups("default_", default),
        "default_compile_time_s": _median(
            [_ok(r.get("default"), "compile_time_s") for r in repeats]
        ),
    }


def vs_default(repeat: Repeat, mine: str) -> float | None:
    """Through eager, as the search does: both were timed against eager side by side."""
    measured, default = Spread.of(repeat.get(mine)), Spread.of(repeat.get("default"))
    return measured.median / default.median if measured and default else None


def _speedups(prefix: str, pooled: Spread | None) -> Numbers:
    return {
        f"{prefix}speedup_vs_eager": pooled.median if pooled else None,
        f"{prefix}speedup_vs_eager_q1": pooled.q1 if pooled else None,
        f"{prefix}speedup_vs_eager_q3": pooled.q3 if pooled else None,
        f"{prefix}speedup_vs_eager_ci_low": pooled.low if pooled else None,
        f"{prefix}speedup_vs_eager_ci_high": pooled.high if pooled else None,
    }


def _cold_compile_time(metrics: dict[str, float | int | None]) -> float | None:
    """Verify measures the cold compile: compare with the file's cold one when it has one."""
    cold = metrics.get("cold_compile_time_s")
    return cold if cold is not None else metrics.get("compile_time_s")


def _ok(result: TrialResult | None, name: str) -> float | None:
    return getattr(result, name) if result is not None and result.ok else None


def _median(values: Sequence[float | None]) -> float | None:
    found = [v for v in values if v is not None]
    return statistics.median(found) if found else None
