"""Timing a traffic mix, driven by the fake clock: each request timed on its own, the sample
the traffic's weighted mean, and the weighted percentiles of the requests' latencies."""

from __future__ import annotations

import pytest

from autotune.measure import MeasureSettings, RequestTiming, traffic_summary, weighted_quantile
from autotune.measure.timing import interleaved_timing
from measure_tests.fakeclock import TICK, FakeClock, install


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> FakeClock:
    return install(monkeypatch)


def _per_request(clock: FakeClock, seconds: dict[str, float]):  # type: ignore[no-untyped-def]
    def call(request: str) -> None:
        clock.now += seconds[request]

    return call


def test_the_mix_is_weighted_by_its_requests_not_by_a_pass_over_them(clock: FakeClock) -> None:
    # Nine short requests in ten: eager 1 and 16 ticks, compiled 0.5 and 16 ticks. One pass
    # over the two would say 17 / 16.5 = 1.03x; the traffic sees
    # (0.9 * 1 + 0.1 * 16) / (0.9 * 0.5 + 0.1 * 16) = 2.5 / 2.05 = 1.22x.
    eager = _per_request(clock, {"short": TICK, "long": 16 * TICK})
    compiled = _per_request(clock, {"short": TICK / 2, "long": 16 * TICK})
    timing = interleaved_timing(
        eager,
        compiled,
        "cpu",
        MeasureSettings(target_seconds=0.5),
        requests=[("short", 9.0), ("long", 1.0)],
    )
    assert timing.eager.median == pytest.approx(2.5 * TICK)
    assert timing.compiled.median == pytest.approx(2.05 * TICK)
    assert timing.ratio.median == pytest.approx(2.5 / 2.05)
    short, long = timing.requests
    assert (short.weight, short.eager_s, short.compiled_s) == pytest.approx((0.9, TICK, TICK / 2))
    assert (long.weight, long.eager_s, long.compiled_s) == pytest.approx(
        (0.1, 16 * TICK, 16 * TICK)
    )


def test_without_a_mix_no_request_is_recorded(clock: FakeClock) -> None:
    timing = interleaved_timing(
        clock.costs(TICK), clock.costs(TICK), "cpu", MeasureSettings(target_seconds=0.2)
    )
    assert timing.requests == ()


def test_a_request_without_a_positive_weight_is_refused(clock: FakeClock) -> None:
    with pytest.raises(ValueError, match="positive finite weight"):
        interleaved_timing(print, print, "cpu", requests=[("a", 1.0), ("b", 0.0)])


def test_the_tail_is_the_latency_that_share_of_the_traffic_stays_within() -> None:
    values, weights = [1.0, 2.0, 10.0], [0.90, 0.08, 0.02]
    assert weighted_quantile(values, weights, 0.5) == 1.0
    assert weighted_quantile(values, weights, 0.95) == 2.0
    assert weighted_quantile(values, weights, 0.99) == 10.0
    # the order of the requests does not matter, nor the weights' scale
    assert weighted_quantile([10.0, 1.0, 2.0], [2, 90, 8], 0.98) == 2.0


def test_the_summary_gives_the_mean_and_the_tail_of_both_sides() -> None:
    requests = [RequestTiming(0.9, 0.010, 0.005), RequestTiming(0.1, 0.100, 0.080)]
    summary = traffic_summary(requests)
    assert summary["requests"] == 2
    assert summary["mean_s"] == pytest.approx(0.9 * 0.005 + 0.1 * 0.080)
    assert summary["eager_mean_s"] == pytest.approx(0.9 * 0.010 + 0.1 * 0.100)
    assert (summary["p50_s"], summary["p95_s"], summary["p99_s"]) == (0.005, 0.080, 0.080)
    assert (summary["eager_p50_s"], summary["eager_p99_s"]) == (0.010, 0.100)
