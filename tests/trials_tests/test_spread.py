"""A speedup with its spread and interval, of one process or several pooled
(autotune/trials/_spread.py): what the rounds, the file, the reports and verify all state."""

from __future__ import annotations

import pytest
import scripted

from autotune.trials import Spread, TrialResult


def spread(median: float, q1: float, q3: float, low: float, high: float) -> Spread:
    return Spread(median, q1, q3, low, high)


def measured(median: float, q1: float, q3: float, low: float, high: float) -> TrialResult:
    """A result without rounds (as one written before results carried them)."""
    return TrialResult(
        status="ok", speedup_vs_eager=median, speedup_vs_eager_q1=q1, speedup_vs_eager_q3=q3,
        speedup_vs_eager_ci_low=low, speedup_vs_eager_ci_high=high,
    )  # fmt: skip


def test_a_spread_is_what_a_trial_measured_its_interval_or_else_its_quartiles():
    spread_ = Spread.of(scripted.ok(1.5, q=0.1, ci=0.02))
    assert spread_ is not None
    assert (spread_.median, spread_.q1, spread_.q3) == pytest.approx((1.5, 1.4, 1.6))
    assert (spread_.low, spread_.high) == pytest.approx((1.48, 1.52))
    unknown = Spread.of(scripted.ok(1.5, q=0.1))  # no interval given: known to its quartiles
    assert unknown is not None and (unknown.low, unknown.high) == pytest.approx((1.4, 1.6))
    assert Spread.of(TrialResult(status="ok", speedup_vs_eager=1.5)) == spread(
        1.5, 1.5, 1.5, 1.5, 1.5
    )  # fmt: skip
    assert Spread.of(TrialResult.failed("oom", "no speedup")) is None
    assert Spread.of(None) is None
    assert Spread.pooled([None, TrialResult.failed("oom", "no speedup")]) is None


def test_processes_pool_their_rounds_and_the_interval_takes_in_each_processs_median():
    """Two processes that each know their median to +-1% but disagree by 10%: the pooled
    interval spans both medians, not the narrow interval of the rounds pooled."""
    low = [0.99 + 0.001 * i for i in range(21)]  # median 1.0
    high = [1.09 + 0.001 * i for i in range(21)]  # median 1.1
    pooled = Spread.pooled([scripted.ok(1.0, rounds=low), scripted.ok(1.1, rounds=high)])
    assert pooled is not None
    assert pooled.low <= 1.0 and pooled.high >= 1.1
    assert pooled.median == pytest.approx(1.05, abs=0.05)
    assert len(pooled.rounds) == 42


def test_processes_without_rounds_pool_figure_by_figure_with_the_widest_quartiles():
    """The median of medians, the widest quartiles, the median interval widened to take in
    every median; a failed process is left out."""
    pooled = Spread.pooled([
        measured(2.43, 2.30, 2.50, 2.40, 2.46), measured(1.10, 1.00, 2.60, 1.05, 1.15),
        measured(2.29, 2.20, 2.40, 2.27, 2.31), TrialResult.failed("oom", "no speedup"),
    ])  # fmt: skip
    assert pooled == spread(2.29, 1.00, 2.60, 1.10, 2.43)


def test_a_lead_over_default_is_the_ratio_of_medians_within_the_widest_interval():
    lead = spread(2.0, 1.9, 2.1, 1.95, 2.05).ratio(spread(1.6, 1.5, 1.7, 1.55, 1.65))
    assert lead.median == pytest.approx(1.25)
    assert (lead.q1, lead.q3) == pytest.approx((1.9 / 1.7, 2.1 / 1.5))
    assert (lead.low, lead.high) == pytest.approx((1.95 / 1.65, 2.05 / 1.55))


def test_its_figures_are_named_as_a_result_and_a_file_name_them():
    figures = spread(2.0, 1.9, 2.1, 1.95, 2.05).figures("confirmed_")
    assert figures == {
        "confirmed_speedup_vs_eager": 2.0, "confirmed_speedup_vs_eager_q1": 1.9,
        "confirmed_speedup_vs_eager_q3": 2.1, "confirmed_speedup_vs_eager_ci_low": 1.95,
        "confirmed_speedup_vs_eager_ci_high": 2.05,
    }  # fmt: skip
    assert spread(2.0, 1.9, 2.1, 1.95, 2.05).said() == "2.000x (95% interval 1.950x to 2.050x)"
