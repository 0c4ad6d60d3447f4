"""The verdict rules of `autotune verify` on given numbers (autotune/verify/_rules.py)."""

from __future__ import annotations

import pytest
import scripted

from autotune.trials import TrialResult
from autotune.verify import VERDICT_EXIT, Spread, is_slower, noise_floor, reliably_faster

CLAIMED = Spread(1.40, 1.35, 1.45)


@pytest.mark.parametrize(
    ("measured", "tolerance", "slower"),
    [
        (Spread(1.40, 1.30, 1.50), 0.05, False),  # as claimed
        (Spread(1.36, 1.30, 1.40), 0.05, False),  # the IQRs overlap
        (Spread(1.34, 1.33, 1.34), 0.05, False),  # disjoint, but fell by less than 5%
        (Spread(1.20, 1.15, 1.25), 0.05, True),  # disjoint and fell by 14%
        (Spread(1.20, 1.15, 1.25), 0.20, False),  # ... within a noisy floor of 20%
    ],
)
def test_a_claim_fails_only_on_disjoint_quartiles_and_a_drop_beyond_the_tolerance(
    measured, tolerance, slower
):
    assert is_slower(CLAIMED, measured, tolerance) is slower


@pytest.mark.parametrize(
    ("measured", "faster"),
    [
        (Spread(1.20, 1.10, 1.30), True),
        (Spread(1.20, 0.98, 1.30), False),  # slower than eager in a quarter of the rounds
        (Spread(1.03, 1.01, 1.05), False),  # faster in every quartile, within the tolerance
    ],
)
def test_reliably_faster_needs_q1_above_one_and_the_median_above_the_tolerance(measured, faster):
    assert reliably_faster(measured, 0.05) is faster


def test_the_noise_floor_is_the_median_over_repeats_of_drift_or_half_the_iqr():
    eager = [
        scripted.ok(1.00, q=0.03),  # half the IQR: 0.03
        scripted.ok(1.08, q=0.01),  # the median's drift: 0.08
        scripted.ok(0.98, q=0.05),  # half the IQR: 0.05
        TrialResult.failed("crash", "not counted"),
    ]
    assert noise_floor(eager) == pytest.approx(0.05)
    assert noise_floor([TrialResult.failed("crash", "nothing measured")]) is None


def test_a_spread_is_what_a_trial_measured_and_pools_by_the_median_of_each_figure():
    spread = Spread.of(scripted.ok(1.5, q=0.1))
    assert spread is not None
    assert (spread.median, spread.q1, spread.q3) == pytest.approx((1.5, 1.4, 1.6))
    assert Spread.of(TrialResult(status="ok", speedup_vs_eager=1.5)) == Spread(1.5, 1.5, 1.5)
    assert Spread.of(TrialResult.failed("oom", "no speedup")) is None
    assert Spread.of(None) is None
    pooled = Spread.pooled(
        [Spread(2.43, 2.30, 2.50), Spread(1.10, 1.00, 2.60), Spread(2.29, 2.20, 2.40), None]
    )
    assert pooled == Spread(2.29, 2.20, 2.50)  # figure by figure, not one repeat's spread
    assert Spread.pooled([None]) is None


def test_every_verdict_but_ok_exits_1():
    assert VERDICT_EXIT == {
        "ok": 0,
        "slower": 1,
        "incorrect": 1,
        "broken": 1,
        "compile_now_faster": 1,
    }
