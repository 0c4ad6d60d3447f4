"""Order statistics of timing samples: the median, quartiles and the median's 95% interval
of one process's rounds, and of several processes' rounds pooled (:func:`pooled`). Pure
Python: a report or ``verify`` reads them without importing torch."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace


@dataclass(frozen=True)
class Stats:
    """Order statistics of timing samples (quartiles interpolated linearly, as numpy's default).

    Example:
        >>> Stats.from_samples([1.0, 2.0, 3.0, 4.0, 5.0]).iqr
        2.0
    """

    median: float
    q1: float
    q3: float
    n: int
    min: float
    ci_low: float  # the median's 95% confidence interval, distribution-free (order statistics)
    ci_high: float

    @property
    def iqr(self) -> float:
        """The interquartile range ``q3 - q1``, a spread that ignores outliers."""
        return self.q3 - self.q1

    @property
    def ci_half_width(self) -> float:
        """Half the median's 95% confidence interval, relative to the median (0.02: +-2%)."""
        return (self.ci_high - self.ci_low) / 2 / self.median if self.median else math.inf

    @classmethod
    def from_samples(cls, samples: Sequence[float]) -> Stats:
        """Summarize ``samples`` (at least one)."""
        if not samples:
            raise ValueError("Stats needs at least one sample, but got none.")
        ordered = sorted(samples)
        low, high = median_ci(ordered)
        return cls(
            median=quantile(ordered, 0.5),
            q1=quantile(ordered, 0.25),
            q3=quantile(ordered, 0.75),
            n=len(ordered),
            min=ordered[0],
            ci_low=low,
            ci_high=high,
        )


def pooled(processes: Sequence[Sequence[float]]) -> Stats:
    """The per-round ratios of several processes that measured the same thing, as one: their
    median, quartiles and the 95% interval of the median from the rounds pooled, that interval
    widened to take in every process's own median.

    Rounds within a process are paired and many; processes are few, and a fresh process can
    land apart from the others by more than its rounds' noise (memory layout, the threads it
    was given). Where they disagree, the disagreement is the uncertainty: the pooled interval
    never claims to know the median better than the processes agree on it.

    Example:
        >>> s = pooled([[1.9, 2.0, 2.1], [2.3, 2.4, 2.5]])
        >>> round(s.median, 2), round(s.ci_low, 2), round(s.ci_high, 2)
        (2.2, 1.9, 2.5)
    """
    processes = [p for p in processes if p]
    if not processes:
        raise ValueError("pooled needs the rounds of at least one process, but got none.")
    stats = Stats.from_samples([r for p in processes for r in p])
    medians = [quantile(sorted(p), 0.5) for p in processes]
    return replace(stats, ci_low=min(stats.ci_low, *medians), ci_high=max(stats.ci_high, *medians))


def widened(
    medians: Sequence[float], lows: Sequence[float], highs: Sequence[float]
) -> tuple[float, float]:
    """Processes that carry no rounds, pooled as :func:`pooled` pools rounds: the median of
    their intervals, widened to take in every process's own median."""
    return (
        min(quantile(sorted(lows), 0.5), *medians),
        max(quantile(sorted(highs), 0.5), *medians),
    )


def quantile(ordered: Sequence[float], q: float) -> float:
    position = q * (len(ordered) - 1)
    low = math.floor(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


def median_ci(ordered: Sequence[float]) -> tuple[float, float]:
    """The median's 95% confidence interval from order statistics, which assumes nothing of the
    distribution: the ranks n/2 -+ 0.98 sqrt(n) (the binomial's normal approximation)."""
    n = len(ordered)
    spread = 0.98 * math.sqrt(n)
    low = max(0, math.floor(n / 2 - spread) - 1)
    high = min(n - 1, math.ceil(n / 2 + spread))
    return ordered[low], ordered[high]
