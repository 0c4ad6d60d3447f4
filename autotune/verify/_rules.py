"""The verdict rules of ``autotune verify``: when a claim fails, and when eager is no longer
the right call. Speedups are :class:`Spread` s: a median of paired per-round ratios and its
quartiles, as every trial measures them."""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass

from autotune.runtime.config import BestConfig
from autotune.trials import TrialResult

VERDICT_EXIT = {"ok": 0, "slower": 1, "incorrect": 1, "broken": 1, "compile_now_faster": 1}
DEFAULT_TOLERANCE = 0.05
# Each measurement runs once by default; more repeats are pooled (their medians).
DEFAULT_REPEATS = 1


@dataclass(frozen=True)
class Spread:
    """A speedup over eager: the median of paired per-round ratios and their quartiles."""

    median: float
    q1: float
    q3: float

    @classmethod
    def of(cls, result: TrialResult | None) -> Spread | None:
        """The speedup a trial measured, or ``None`` when it did not run."""
        if result is None or not result.ok or result.speedup_vs_eager is None:
            return None
        median, q1, q3 = (
            result.speedup_vs_eager,
            result.speedup_vs_eager_q1,
            result.speedup_vs_eager_q3,
        )
        return cls(median, median if q1 is None else q1, median if q3 is None else q3)

    @classmethod
    def pooled(cls, spreads: Sequence[Spread | None]) -> Spread | None:
        """Repeats pooled: the median of their medians, of their q1s and of their q3s."""
        found = [s for s in spreads if s is not None]
        if not found:
            return None
        return cls(
            *(statistics.median(getattr(s, k) for s in found) for k in ("median", "q1", "q3"))
        )


def is_slower(claimed: Spread, measured: Spread, tolerance: float) -> bool:
    """A claim fails when the measured speedup is below it beyond the noise: the interquartile
    ranges do not overlap (measured q3 < claimed q1) *and* the median fell by more than
    ``tolerance`` (a fraction of the claimed median)."""
    return measured.q3 < claimed.q1 and measured.median < claimed.median * (1.0 - tolerance)


def reliably_faster(measured: Spread, tolerance: float) -> bool:
    """Faster than eager in at least three of four paired rounds (q1 > 1, the rule by which
    the search emits a compile decision) and by more than ``tolerance`` at the median."""
    return measured.q1 > 1.0 and measured.median > 1.0 + tolerance


def noise_floor(eager_vs_eager: Sequence[TrialResult]) -> float | None:
    """How far eager timed against itself strays from 1.0: per trial the larger of the
    median's distance from 1 and half the interquartile range; the median over repeats."""
    spreads = [s for s in map(Spread.of, eager_vs_eager) if s is not None]
    if not spreads:
        return None
    return statistics.median(max(abs(s.median - 1.0), (s.q3 - s.q1) / 2) for s in spreads)


def judge(
    best: BestConfig,
    repeats: Sequence[dict[str, TrialResult]],
    claimed: dict[str, float | None],
    measured: dict[str, float | None],
    tol: float,
) -> tuple[str, list[str]]:
    """The verdict and its reasons: a failed config run first, then the claims."""
    failed = next((r["config"] for r in repeats if "config" in r and not r["config"].ok), None)
    if failed is not None:
        kind = "incorrect" if failed.failure_kind == "accuracy" else "broken"
        return kind, [f"the config failed here: {failed.failure_kind}: {failed.error}"]
    if best.decision == "do_not_compile":
        return _eager_verdict(measured, tol)
    claim, mine = _spread(claimed), _spread(measured)
    if claim is None or mine is None:
        return "ok", ["the config compiles and matches eager; the file claims no speedup"]
    said = f"{_x(mine)} eager, claimed {_x(claim)}"
    if is_slower(claim, mine, tol):
        why = "the interquartile ranges do not overlap and the median fell by more than"
        return "slower", [f"measured {said}: {why} {tol:.0%}"]
    if mine.median >= claim.median:
        return "ok", [f"measured {said}: the claim holds"]
    why = f"the interquartile ranges overlap or the median fell by less than {tol:.0%}"
    return "ok", [f"measured {said}: below the claim but within the noise ({why})"]


def _eager_verdict(measured: dict[str, float | None], tol: float) -> tuple[str, list[str]]:
    default = _spread(measured, "default_")
    if default is None:
        return "ok", ["default torch.compile does not run here: eager is still the right call"]
    said = f"default torch.compile measured {_x(default)} eager"
    if reliably_faster(default, tol):
        return "compile_now_faster", [
            f"{said}: reliably faster now (q1 > 1 and more than {tol:.0%}); search again"
        ]
    return "ok", [f"{said}: not reliably faster, eager is still the right call"]


def _spread(values: dict[str, float | None], prefix: str = "") -> Spread | None:
    median = values.get(f"{prefix}speedup_vs_eager")
    if median is None:
        return None
    q1, q3 = values.get(f"{prefix}speedup_vs_eager_q1"), values.get(f"{prefix}speedup_vs_eager_q3")
    return Spread(median, median if q1 is None else q1, median if q3 is None else q3)


def _x(s: Spread) -> str:
    return f"{s.median:.3f}x ({s.q1:.3f}x to {s.q3:.3f}x)"
