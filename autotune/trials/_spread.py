"""A speedup over eager as autotune states it: the median of paired per-round ratios, their
quartiles (the config's own spread) and the 95% interval of the median (how well it is
known), of one process or of several pooled. The finalist round, the confirmation round, the
file's claim, the reports and ``autotune verify`` all read speedups through it, so a figure
pooled in one place is pooled the same way everywhere."""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass, field

from autotune.measure import pooled, widened
from autotune.trials._spec import TrialResult


@dataclass(frozen=True)
class Spread:
    """A speedup over eager: median, quartiles and the median's 95% interval (``low``,
    ``high``), and the per-round ratios it came from, when known."""

    median: float
    q1: float
    q3: float
    low: float
    high: float
    rounds: tuple[float, ...] = field(default=(), compare=False, repr=False)

    @classmethod
    def of(cls, result: TrialResult | None) -> Spread | None:
        """The speedup a trial measured, or ``None`` when it did not run. A result that gives
        no interval (written before results carried one) is known to its quartiles."""
        if result is None or not result.ok or result.speedup_vs_eager is None:
            return None
        median = result.speedup_vs_eager
        q1 = _or(result.speedup_vs_eager_q1, median)
        q3 = _or(result.speedup_vs_eager_q3, median)
        low = _or(result.speedup_vs_eager_ci_low, q1)
        high = _or(result.speedup_vs_eager_ci_high, q3)
        return cls(median, q1, q3, low, high, tuple(result.speedup_rounds))

    @classmethod
    def pooled(cls, results: Sequence[TrialResult | None]) -> Spread | None:
        """Several processes' speedup of one config as one (:func:`autotune.measure.pooled`):
        the median, quartiles and interval of their rounds pooled, the interval widened to take
        in each process's own median (where processes disagree by more than their rounds'
        noise, the disagreement is the uncertainty). Processes that carry no rounds pool figure
        by figure: the median of their medians, the widest quartiles, the median of their
        intervals widened the same way. ``None`` when none ran."""
        found = [s for s in map(cls.of, results) if s is not None]
        if not found:
            return None
        if all(s.rounds for s in found):
            stats = pooled([s.rounds for s in found])
            rounds = tuple(r for s in found for r in s.rounds)
            return cls(stats.median, stats.q1, stats.q3, stats.ci_low, stats.ci_high, rounds)
        medians = [s.median for s in found]
        low, high = widened(medians, [s.low for s in found], [s.high for s in found])
        q1, q3 = min(s.q1 for s in found), max(s.q3 for s in found)
        return cls(statistics.median(medians), q1, q3, low, high)

    def ratio(self, other: Spread) -> Spread:
        """This speedup over ``other`` (both against eager, measured apart): the ratio of the
        medians, its quartiles and interval the widest the two allow."""
        return Spread(
            self.median / other.median, self.q1 / other.q3, self.q3 / other.q1,
            self.low / other.high, self.high / other.low,
        )  # fmt: skip

    def figures(self, prefix: str = "") -> dict[str, float]:
        """The speedup as a result, a record and a file name its figures: ``speedup_vs_eager``,
        ``_q1``, ``_q3``, ``_ci_low``, ``_ci_high``, each after ``prefix``."""
        return {
            f"{prefix}speedup_vs_eager": self.median,
            f"{prefix}speedup_vs_eager_q1": self.q1,
            f"{prefix}speedup_vs_eager_q3": self.q3,
            f"{prefix}speedup_vs_eager_ci_low": self.low,
            f"{prefix}speedup_vs_eager_ci_high": self.high,
        }

    def said(self) -> str:
        """``2.300x (95% interval 2.250x to 2.410x)``."""
        return f"{self.median:.3f}x (95% interval {self.low:.3f}x to {self.high:.3f}x)"


def _or(value: float | None, default: float) -> float:
    return default if value is None else value
