"""The verdict rules of `autotune verify` on given numbers (autotune/verify/_rules.py)."""

from __future__ import annotations

import pytest
import scripted

from autotune.trials import Spread, TrialResult
from autotune.verify import (
    MAX_TOLERANCE,
    VERDICT_EXIT,
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
