from __future__ import annotations

import time
from collections.abc import Callable, Iterator

import pytest
import torch

from autotune.measure import Timing, interleaved_timing, time_first_call


@pytest.fixture(autouse=True)
def _one_thread() -> Iterator[None]:
    # Two intra-op threads on a busy 2-core machine wait on each other for whole scheduler
    # slices; one thread keeps the known costs of these tests proportional to their work.
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


def _matmul_loop(repeats: int) -> Callable[[], None]:
    a = torch.randn(128, 128)

    def run() -> None:
        for _ in range(repeats):
            torch.mm(a, a)

    return run


def _assert_well_formed(timing: Timing, min_rounds: int, max_rounds: int) -> None:
    assert min_rounds <= timing.rounds <= max_rounds
    assert timing.calls_per_sample >= 1
    for stats in (timing.eager, timing.compiled, timing.ratio):
        assert stats.n == timing.rounds
        assert 0 < stats.min <= stats.q1 <= stats.median <= stats.q3


def test_three_times_the_work_measures_about_three_times_slower() -> None:
    # Samples of several ms: each gets its fair share of a busy machine rather than a whole
    # preemption or none.
    timing = interleaved_timing(_matmul_loop(300), _matmul_loop(100), "cpu", target_seconds=1)
    _assert_well_formed(timing, 10, 200)
    assert 2.0 < timing.ratio.median < 4.0
    assert timing.eager.median > timing.compiled.median


def test_same_function_twice_measures_a_ratio_near_one() -> None:
    fn = _matmul_loop(100)
    timing = interleaved_timing(fn, fn, "cpu", target_seconds=1)
    _assert_well_formed(timing, 10, 200)
    assert 0.7 < timing.ratio.median < 1.4


def test_calibration_makes_samples_last_at_least_2_ms() -> None:
    x = torch.ones(8)
    timing = interleaved_timing(lambda: x.add(1), lambda: x.mul(2), "cpu", target_seconds=0.2)
    assert timing.calls_per_sample > 1
    faster = min(timing.eager.median, timing.compiled.median)
    assert timing.calls_per_sample * faster >= 2e-3


def test_rounds_alternate_which_function_goes_first() -> None:
    calls: list[str] = []

    def eager() -> None:
        calls.append("e")
        time.sleep(0.003)

    def compiled() -> None:
        calls.append("c")
        time.sleep(0.003)

    timing = interleaved_timing(eager, compiled, "cpu", warmup=0, min_rounds=4, max_rounds=4)
    assert (timing.calls_per_sample, timing.rounds) == (1, 4)
    assert "".join(calls[-8:]) == "ecceecce"


def test_stops_at_max_rounds_before_target_seconds() -> None:
    fn = _matmul_loop(1)
    timing = interleaved_timing(fn, fn, "cpu", min_rounds=3, max_rounds=5, target_seconds=60)
    assert timing.rounds == 5


def test_deadline_cuts_rounds_short() -> None:
    fn = _matmul_loop(2)
    deadline = time.monotonic() + 1.0
    timing = interleaved_timing(
        fn, fn, "cpu", min_rounds=1000, max_rounds=2000, target_seconds=60, deadline=deadline
    )
    assert time.monotonic() < deadline + 0.1
    assert 1 <= timing.rounds < 1000
    assert timing.ratio.n == timing.rounds


def test_deadline_already_past_raises_timeout() -> None:
    fn = _matmul_loop(1)
    with pytest.raises(TimeoutError, match="deadline passed during warm-up"):
        interleaved_timing(fn, fn, "cpu", deadline=time.monotonic() - 1)


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
    fn = _matmul_loop(1)
    with pytest.raises(ValueError, match=match):
        interleaved_timing(fn, fn, "cpu", **kwargs)  # type: ignore[arg-type]


def test_unsupported_device_is_rejected() -> None:
    fn = _matmul_loop(1)
    with pytest.raises(ValueError, match="'cpu' or 'cuda"):
        interleaved_timing(fn, fn, "meta")


def test_time_first_call_returns_output_and_wall_time() -> None:
    def slow() -> str:
        time.sleep(0.02)
        return "done"

    output, seconds = time_first_call(slow, "cpu")
    assert output == "done"
    assert 0.02 <= seconds < 1.0


def test_stats_are_seconds_per_call_not_per_sample() -> None:
    fn = _matmul_loop(1)
    timing = interleaved_timing(fn, fn, "cpu", min_rounds=5, max_rounds=5)
    start = time.perf_counter()
    for _ in range(200):
        fn()
    one_call = (time.perf_counter() - start) / 200
    assert timing.calls_per_sample >= 5
    assert one_call / 3 < timing.compiled.median < 3 * one_call


def test_precision_ends_rounds_once_the_median_ratio_is_known_well_enough() -> None:
    fn = _matmul_loop(1)
    timing = interleaved_timing(
        fn, fn, "cpu", min_rounds=10, max_rounds=5000, target_seconds=0.0, precision=0.5
    )
    # The same function twice: ratios near 1, so +-50% holds as soon as a CI exists.
    assert timing.rounds == 10
    assert timing.ratio.ci_half_width <= 0.5


def test_precision_out_of_reach_times_until_max_seconds() -> None:
    fn = _matmul_loop(1)
    started = time.monotonic()
    timing = interleaved_timing(fn, fn, "cpu", min_rounds=10, max_rounds=100_000,
                                target_seconds=0.1, precision=1e-9, max_seconds=0.5)  # fmt: skip
    spent = time.monotonic() - started
    assert 0.5 <= spent < 3.0  # warm-up and calibration come on top of the rounds
    assert timing.ratio.ci_half_width > 1e-9
    short = interleaved_timing(fn, fn, "cpu", min_rounds=10, max_rounds=100_000,
                               target_seconds=0.1)  # fmt: skip
    assert timing.rounds > 2 * short.rounds
