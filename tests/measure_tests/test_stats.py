from __future__ import annotations

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
