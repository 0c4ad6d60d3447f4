"""The verdict rules of `autotune verify` on given numbers (autotune/verify/_rules.py)."""

from __future__ import annotations

import pytest
import scripted

from autotune.trials import TrialResult
from autotune.verify import (
    MAX_TOLERANCE,
    VERDICT_EXIT,
    Spread,
    noise_floor,
    over_claims,
    reliably_faster,
    tolerance_for,
    under_claims,
)


def spread(median: float, q1: float, q3: float, low: float | None = None,
           high: float | None = None) -> Spread:  # fmt: skip
    return Spread(median, q1, q3, q1 if low is None else low, q3 if high is None else high)


@pytest.mark.parametrize(
    ("measured", "tolerance", "fails"),
    [
        (spread(1.40, 1.30, 1.50, 1.38, 1.42), 0.05, False),  # as claimed
        (spread(1.34, 1.30, 1.40, 1.33, 1.35), 0.05, False),  # 1.40 within 5% above 1.35
        (spread(1.30, 1.20, 1.40, 1.29, 1.31), 0.05, True),  # above 1.31 by 6.9%: the
        # quartiles overlap the claim, the old rule passed it
        (spread(1.20, 1.15, 1.25, 1.19, 1.21), 0.20, False),  # ... within a noisy floor of 20%
    ],
)
def test_a_claim_fails_when_it_lies_above_the_interval_by_more_than_the_tolerance(
    measured, tolerance, fails
):
    assert over_claims(1.40, measured, tolerance) is fails
    assert not under_claims(1.40, measured, tolerance)
    assert under_claims(1.10, spread(1.30, 1.20, 1.40, 1.25, 1.35), 0.05)


def test_the_noise_floor_raises_the_tolerance_up_to_a_cap_past_which_it_is_too_noisy():
    assert tolerance_for(0.05, None) == (0.05, False)
    assert tolerance_for(0.05, 0.02) == (0.05, False)
    assert tolerance_for(0.05, 0.08) == (0.08, False)
    assert tolerance_for(0.05, MAX_TOLERANCE) == (MAX_TOLERANCE, False)
    assert tolerance_for(0.05, 0.15) == (MAX_TOLERANCE, True)
    assert tolerance_for(0.20, 0.15) == (0.20, False)  # --tolerance above the cap accepts it


@pytest.mark.parametrize(
    ("measured", "faster"),
    [
        (spread(1.20, 1.10, 1.30), True),
        (spread(1.20, 0.98, 1.30), False),  # slower than eager in a quarter of the rounds
        (spread(1.03, 1.01, 1.05), False),  # faster in every quartile, within the tolerance
    ],
)
def test_reliably_faster_needs_q1_above_one_and_the_median_above_the_tolerance(measured, faster):
    assert reliably_faster(measured, 0.05) is faster


def test_the_noise_floor_is_the_median_over_repeats_of_drift_or_the_median_s_interval():
    eager = [
        scripted.ok(1.00, q=0.03),  # no interval given: half the IQR, 0.03
        scripted.ok(1.08, q=0.01),  # the median's drift: 0.08
        scripted.ok(0.98, q=0.05),  # half the IQR: 0.05
        TrialResult.failed("crash", "not counted"),
    ]
    assert noise_floor(eager) == pytest.approx(0.05)
    assert noise_floor([TrialResult.failed("crash", "nothing measured")]) is None
    # The convnet on the 2-core EPYC, idle: single rounds of eager against itself spread
    # 0.87x to 1.22x, and the median was known to +-5%: the floor is 5%, not 17%.
    assert noise_floor([scripted.ok(0.989, q=0.17, ci=0.05)]) == pytest.approx(0.05)


def test_a_spread_is_what_a_trial_measured_its_interval_or_else_its_quartiles():
    spread_ = Spread.of(scripted.ok(1.5, q=0.1, ci=0.02))
    assert spread_ is not None
    assert (spread_.median, spread_.q1, spread_.q3) == pytest.approx((1.5, 1.4, 1.6))
    assert (spread_.low, spread_.high) == pytest.approx((1.48, 1.52))
    unknown = Spread.of(scripted.ok(1.5, q=0.1))  # no interval given: known to its quartiles
    assert unknown is not None and (unknown.low, unknown.high) == pytest.approx((1.4, 1.6))
    assert Spread.of(TrialResult(status="ok", speedup_vs_eager=1.5)) == spread(1.5, 1.5, 1.5)
    assert Spread.of(TrialResult.failed("oom", "no speedup")) is None
    assert Spread.of(None) is None
    assert Spread.pooled([None]) is None


def test_repeats_pool_their_rounds_and_the_interval_takes_in_each_repeats_median():
    """Two processes that each know their median to +-1% but disagree by 10%: the pooled
    interval spans both medians, not the narrow interval of the rounds pooled."""
    low = [0.99 + 0.001 * i for i in range(21)]  # median 1.0
    high = [1.09 + 0.001 * i for i in range(21)]  # median 1.1
    pooled = Spread.pooled([Spread.of(scripted.ok(1.0, rounds=low)),
                            Spread.of(scripted.ok(1.1, rounds=high))])  # fmt: skip
    assert pooled is not None
    assert pooled.low <= 1.0 and pooled.high >= 1.1
    assert pooled.median == pytest.approx(1.05, abs=0.05)
    # Repeats without rounds pool figure by figure, widened to every median the same way.
    pooled = Spread.pooled(
        [spread(2.43, 2.30, 2.50, 2.40, 2.46), spread(1.10, 1.00, 2.60, 1.05, 1.15),
         spread(2.29, 2.20, 2.40, 2.27, 2.31), None]
    )  # fmt: skip
    assert pooled == spread(2.29, 2.20, 2.50, 1.10, 2.43)


def test_a_lead_over_default_is_the_ratio_of_medians_within_the_widest_interval():
    lead = spread(2.0, 1.9, 2.1, 1.95, 2.05).ratio(spread(1.6, 1.5, 1.7, 1.55, 1.65))
    assert lead.median == pytest.approx(1.25)
    assert (lead.low, lead.high) == pytest.approx((1.95 / 1.65, 2.05 / 1.55))


def test_a_failed_verdict_exits_1_and_a_machine_too_noisy_to_judge_exits_3():
    assert VERDICT_EXIT == {
        "ok": 0,
        "slower": 1,
        "behind_default": 1,
        "incorrect": 1,
        "broken": 1,
        "compile_now_faster": 1,
        "too_noisy": 3,
    }
