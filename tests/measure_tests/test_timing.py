"""Interleaved timing, driven by a fake clock: each assertion is exact on any machine.

One test times real work on the real clock, and asserts only the shape of what it measured.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest
import torch

from autotune.measure import MeasureSettings
from autotune.measure.timing import Timing, interleaved_timing, time_first_call
from measure_tests.fakeclock import TICK, FakeClock, install

# Per-call costs from 3 to 4 ticks, in turn: ratios that scatter as on a real machine.
JITTER = [(48 + i) * TICK / 16 for i in range(16)]


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> FakeClock:
    return install(monkeypatch)


def _assert_well_formed(timing: Timing, min_rounds: int, max_rounds: int) -> None:
    assert min_rounds <= timing.rounds <= max_rounds
    assert timing.calls_per_sample >= 1
    for stats in (timing.eager, timing.compiled, timing.ratio):
        assert stats.n == timing.rounds
        assert 0 < stats.min <= stats.q1 <= stats.median <= stats.q3


def _noop() -> None:
    pass


def test_three_times_the_work_measures_three_times_slower(clock: FakeClock) -> None:
    timing = interleaved_timing(
        clock.costs(3 * TICK), clock.costs(TICK), "cpu", MeasureSettings(target_seconds=0.5)
    )
    _assert_well_formed(timing, 10, 200)
    assert (timing.eager.median, timing.compiled.median) == (3 * TICK, TICK)
    assert (timing.ratio.median, timing.ratio.iqr) == (3.0, 0.0)


def test_same_function_twice_measures_a_ratio_of_one_while_the_machine_slows(
    clock: FakeClock,
) -> None:
    slow_from = clock.now + 0.25

    def fn() -> None:
        clock.now += TICK if clock.now < slow_from else 2 * TICK

    timing = interleaved_timing(fn, fn, "cpu", MeasureSettings(target_seconds=0.5))
    _assert_well_formed(timing, 10, 200)
    # Each function alone sees the machine halve its speed; their paired ratio does not.
    assert (timing.eager.q1, timing.eager.q3) == (TICK, 2 * TICK)
    assert timing.ratio.median == 1.0


def test_calibration_makes_samples_last_at_least_2_ms(clock: FakeClock) -> None:
    # One call of the faster lasts 0.12 ms: calibration aims at 3 ms, so 25 calls (3.05 ms).
    timing = interleaved_timing(
        clock.costs(TICK / 4), clock.costs(TICK / 8), "cpu", MeasureSettings(target_seconds=0.2)
    )
    assert timing.calls_per_sample == 25
    assert timing.calls_per_sample * timing.compiled.median >= 2e-3


def test_calibration_is_not_fooled_by_one_stalled_sample(clock: FakeClock) -> None:
    stalls = [3 * TICK]  # the first call is preempted: its sample alone would pass as 2.9 ms

    def compiled() -> None:
        clock.now += stalls.pop() if stalls else TICK / 8

    timing = interleaved_timing(clock.costs(3 * TICK), compiled, "cpu", MeasureSettings(warmup=0))
    assert timing.calls_per_sample == 25
    assert timing.calls_per_sample * timing.compiled.median >= 2e-3


def test_rounds_alternate_which_function_goes_first(clock: FakeClock) -> None:
    calls: list[str] = []

    def timed(name: str) -> Callable[[], None]:
        cost = clock.costs(3 * TICK)  # above 2.4 ms: one call per sample

        def call() -> None:
            calls.append(name)
            cost()

        return call

    timing = interleaved_timing(
        timed("e"), timed("c"), "cpu", MeasureSettings(warmup=0, min_rounds=4, max_rounds=4)
    )
    assert (timing.calls_per_sample, timing.rounds) == (1, 4)
    assert "".join(calls[-8:]) == "ecceecce"


def test_rounds_end_once_target_seconds_are_spent(clock: FakeClock) -> None:
    timing = interleaved_timing(
        clock.costs(3 * TICK), clock.costs(TICK), "cpu", MeasureSettings(target_seconds=0.5)
    )
    one_round = timing.calls_per_sample * 4 * TICK
    assert timing.rounds * one_round == 0.5


def test_stops_at_max_rounds_before_target_seconds(clock: FakeClock) -> None:
    fn = clock.costs(TICK)
    timing = interleaved_timing(
        fn, fn, "cpu", MeasureSettings(min_rounds=3, max_rounds=5, target_seconds=60)
    )
    assert timing.rounds == 5


def test_deadline_cuts_rounds_short(clock: FakeClock) -> None:
    fn = clock.costs(TICK)
    deadline = clock.now + 1.0
    timing = interleaved_timing(
        fn,
        fn,
        "cpu",
        MeasureSettings(min_rounds=1000, max_rounds=2000, target_seconds=60),
        deadline=deadline,
    )
    assert 1 <= timing.rounds < 1000
    assert timing.ratio.n == timing.rounds
    # Rounds stop when the next one, with half a round of margin, would end past the deadline.
    one_round = 2 * timing.calls_per_sample * TICK
    assert clock.now + 0.5 * one_round <= deadline < clock.now + 1.5 * one_round


def test_deadline_already_past_raises_timeout(clock: FakeClock) -> None:
    fn = clock.costs(TICK)
    with pytest.raises(TimeoutError, match="deadline passed during warm-up"):
        interleaved_timing(fn, fn, "cpu", deadline=clock.now - 1)


def test_deadline_too_near_for_one_round_raises_timeout(clock: FakeClock) -> None:
    fn = clock.costs(0.125)
    # Calibration ends at 0.25 s with one call per sample; a round of 0.25 s would end past 0.5.
    with pytest.raises(TimeoutError, match="one round .* would end past it"):
        interleaved_timing(fn, fn, "cpu", MeasureSettings(warmup=0), deadline=clock.now + 0.5)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"min_rounds": 5, "max_rounds": 4}, "min_rounds <= max_rounds"),
        ({"min_rounds": 0}, "min_rounds <= max_rounds"),
        ({"warmup": -1}, "warmup >= 0"),
        ({"target_seconds": -1.0}, "target_seconds >= 0"),
        ({"precision": 0.0}, "0 < precision < 1"),
        ({"precision": 0.02, "target_seconds": 2.0, "max_seconds": 1.0}, "max_seconds >= "),
    ],
)
def test_invalid_plan_is_rejected(kwargs: dict[str, float], match: str) -> None:
    with pytest.raises(ValueError, match=match):
        interleaved_timing(_noop, _noop, "cpu", MeasureSettings(**kwargs))  # type: ignore[arg-type]


def test_unsupported_device_is_rejected() -> None:
    with pytest.raises(ValueError, match="'cpu' or 'cuda"):
        interleaved_timing(_noop, _noop, "meta")


def test_time_first_call_returns_output_and_wall_time(clock: FakeClock) -> None:
    def compile_and_run() -> str:
        clock.now += 0.25
        return "done"

    assert time_first_call(compile_and_run, "cpu") == ("done", 0.25)


def test_stats_are_seconds_per_call_not_per_sample(clock: FakeClock) -> None:
    eager, compiled = clock.costs(3 * TICK), clock.costs(TICK)
    timing = interleaved_timing(
        eager, compiled, "cpu", MeasureSettings(min_rounds=5, max_rounds=5)
    )
    assert timing.calls_per_sample > 1
    assert (timing.eager.median, timing.compiled.median) == (3 * TICK, TICK)


def test_precision_ends_rounds_once_the_median_ratio_is_known_well_enough(
    clock: FakeClock,
) -> None:
    timing = interleaved_timing(
        clock.costs(3 * TICK),
        clock.costs(*JITTER),
        "cpu",
        MeasureSettings(
            min_rounds=10, max_rounds=5000, target_seconds=0.0, precision=0.5, max_seconds=60
        ),
    )
    # Ratios within 3/4..1: +-50% holds as soon as a confidence interval exists.
    assert timing.rounds == 10
    assert 0 < timing.ratio.ci_half_width <= 0.5


def test_precision_out_of_reach_times_until_max_seconds(clock: FakeClock) -> None:
    eager, compiled = clock.costs(3 * TICK), clock.costs(*JITTER)
    started = clock.now
    timing = interleaved_timing(
        eager,
        compiled,
        "cpu",
        MeasureSettings(
            min_rounds=10, max_rounds=100_000, target_seconds=0.1, precision=1e-9, max_seconds=0.5
        ),
    )
    spent = clock.now - started
    # Warm-up, calibration and the round that crosses max_seconds add under 50 ms.
    assert 0.5 <= spent < 0.55
    assert timing.ratio.ci_half_width > 1e-9
    short = interleaved_timing(
        eager,
        compiled,
        "cpu",
        MeasureSettings(min_rounds=10, max_rounds=100_000, target_seconds=0.1),
    )
    assert timing.rounds > 4 * short.rounds


def _matmul_loop(repeats: int) -> Callable[[], None]:
    a = torch.randn(64, 64)

    def run() -> None:
        for _ in range(repeats):
            torch.mm(a, a)

    return run


def test_real_work_on_the_real_clock_is_timed_well_formed() -> None:
    # What it measures depends on the machine's load: only the structure is asserted.
    timing = interleaved_timing(
        _matmul_loop(4),
        _matmul_loop(2),
        "cpu",
        MeasureSettings(min_rounds=3, max_rounds=50, target_seconds=0.1),
    )
    _assert_well_formed(timing, 3, 50)


def test_stop_below_ends_rounds_once_the_median_ratio_is_known_to_be_below_it(
    clock: FakeClock,
) -> None:
    # compiled 3-4x slower than eager: ratios within 1/4..1/3
    eager, compiled = clock.costs(TICK), clock.costs(*JITTER)
    stopped = interleaved_timing(
        eager, compiled, "cpu", MeasureSettings(min_rounds=10, target_seconds=0.5, stop_below=0.5)
    )
    assert stopped.stopped_early and stopped.rounds == 10
    assert stopped.ratio.ci_high < 0.5
    full = interleaved_timing(
        eager, compiled, "cpu", MeasureSettings(min_rounds=10, target_seconds=0.5, stop_below=0.2)
    )
    assert not full.stopped_early and full.rounds > 10
    plain = interleaved_timing(
        eager, compiled, "cpu", MeasureSettings(min_rounds=10, target_seconds=0.5)
    )
    assert not plain.stopped_early and plain.rounds == full.rounds


def test_stop_below_waits_for_min_rounds(clock: FakeClock) -> None:
    eager, compiled = clock.costs(TICK), clock.costs(*JITTER)
    timing = interleaved_timing(
        eager, compiled, "cpu", MeasureSettings(min_rounds=25, target_seconds=0.5, stop_below=0.5)
    )
    assert timing.stopped_early and timing.rounds == 25


def test_successive_halving_stops_a_candidate_out_of_reach_after_its_first_stage(
    clock: FakeClock,
) -> None:
    # ratios within 1/4..1/3, median about 0.29: below 0.3, but not with 95% confidence yet
    eager, compiled = clock.costs(TICK), clock.costs(*JITTER)
    plan = {"min_rounds": 10, "target_seconds": 0.5}
    halved = interleaved_timing(
        eager, compiled, "cpu", MeasureSettings(stop_below=0.3, screen_seconds=0.125, **plan)
    )
    confident = interleaved_timing(eager, compiled, "cpu", MeasureSettings(stop_below=0.3, **plan))
    assert halved.stopped_early and halved.ratio.median < 0.3
    assert halved.rounds < confident.rounds
    elapsed = halved.rounds * (TICK + sum(JITTER) / len(JITTER)) * halved.calls_per_sample
    assert 0.125 <= elapsed < 0.25  # it stopped at the end of the first stage, not later


def test_successive_halving_times_a_candidate_within_reach_in_full(clock: FakeClock) -> None:
    eager, compiled = clock.costs(TICK), clock.costs(*JITTER)
    plan = {"min_rounds": 10, "target_seconds": 0.5}
    within = interleaved_timing(
        eager, compiled, "cpu", MeasureSettings(stop_below=0.27, screen_seconds=0.125, **plan)
    )
    plain = interleaved_timing(eager, compiled, "cpu", MeasureSettings(**plan))
    assert not within.stopped_early and within.rounds == plain.rounds
    unset = interleaved_timing(
        eager, compiled, "cpu", MeasureSettings(screen_seconds=0.125, **plan)
    )
    assert not unset.stopped_early and unset.rounds == plain.rounds  # needs stop_below


def test_a_negative_first_stage_is_refused(clock: FakeClock) -> None:
    with pytest.raises(ValueError, match="screen_seconds >= 0"):
        interleaved_timing(
            _noop, _noop, "cpu", MeasureSettings(stop_below=1.0, screen_seconds=-1.0)
        )
