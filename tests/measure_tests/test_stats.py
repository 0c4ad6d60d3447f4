from __future__ import annotations

import math

import pytest

from autotune.measure import Stats


def test_odd_count_quartiles_are_sample_values() -> None:
    stats = Stats.from_samples([5.0, 1.0, 4.0, 2.0, 3.0])
    assert (stats.median, stats.q1, stats.q3) == (3.0, 2.0, 4.0)
    assert stats.iqr == 2.0
    assert (stats.n, stats.min) == (5, 1.0)


def test_even_count_quartiles_interpolate_like_numpy() -> None:
    stats = Stats.from_samples([4.0, 3.0, 2.0, 1.0])
    assert stats.median == pytest.approx(2.5)
    assert stats.q1 == pytest.approx(1.75)
    assert stats.q3 == pytest.approx(3.25)


def test_one_sample_has_no_spread() -> None:
    stats = Stats.from_samples([0.25])
    assert (stats.median, stats.q1, stats.q3, stats.iqr, stats.n) == (0.25, 0.25, 0.25, 0.0, 1)


def test_outlier_moves_neither_median_nor_iqr_much() -> None:
    stats = Stats.from_samples([1.0] * 9 + [1000.0])
    assert stats.median == 1.0
    assert stats.iqr == 0.0


def test_no_samples_is_an_error() -> None:
    with pytest.raises(ValueError, match="at least one sample"):
        Stats.from_samples([])


def test_the_median_confidence_interval_covers_the_true_median_95_percent_of_the_time() -> None:
    import random

    rng = random.Random(0)
    true_median = math.log(2)  # of the exponential distribution with rate 1: skewed on purpose
    covered = 0
    for _ in range(1000):
        stats = Stats.from_samples([rng.expovariate(1.0) for _ in range(101)])
        assert stats.ci_low <= stats.median <= stats.ci_high
        covered += stats.ci_low <= true_median <= stats.ci_high
    assert 0.93 <= covered / 1000 <= 0.99


def test_few_samples_give_the_whole_range_as_the_interval() -> None:
    stats = Stats.from_samples([3.0, 1.0, 2.0, 5.0, 4.0])
    assert (stats.ci_low, stats.ci_high) == (1.0, 5.0)
    assert stats.ci_half_width == pytest.approx(2 / 3)


def test_the_interval_narrows_with_more_samples() -> None:
    import random

    rng = random.Random(1)
    widths = [
        Stats.from_samples([rng.gauss(1.0, 0.1) for _ in range(n)]).ci_half_width
        for n in (100, 1600)
    ]
    assert widths[1] < widths[0] / 2.5  # ~1/sqrt(n): 4x narrower in expectation
