"""Interleaved, paired timing of an eager and a compiled function.

An autotuner is only as good as its measurements. Timing the baseline first and the candidate
later lets machine drift (clocks, other work, thermal state) pose as a speed-up, so both
functions are timed in the same rounds, alternating which goes first (ABBA), and the speed-up is
the median of per-round ratios.

Per device:

| device | clock | one sample lasts at least | before each sample |
| --- | --- | --- | --- |
| cpu | ``time.perf_counter`` | 2 ms (timer resolution, Python overhead) | nothing |
| cuda | CUDA events on the current stream | 1 ms (launch jitter) | L2 flushed, not timed |

Python's cyclic garbage collector is paused while samples are taken, as ``timeit`` does, so that
a collection does not land in one sample.
"""

from __future__ import annotations

import bisect
import gc
import math
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar

import torch

from autotune.measure._device import resolve, synchronize
from autotune.measure._settings import MeasureSettings
from autotune.measure._stats import Stats, median_ci, quantile
from autotune.measure._traffic import RequestTiming, WeightedTimer

T = TypeVar("T")
Fn = Callable[[], object]

_MIN_SAMPLE_SECONDS = {"cpu": 2e-3, "cuda": 1e-3}
# Aim this far above the minimum: sample lengths scatter by ~20% on a busy machine.
_CALIBRATION_MARGIN = 1.5
# Accept a calibration only this far above the minimum: a sample that barely cleared it in a
# slow moment leaves the timed samples below it once the machine is quick again.
_ACCEPT_MARGIN = 1.2
# A calibration sample this many times the minimum is long enough to trust without a repeat.
_TRUSTED_SAMPLE_FACTOR = 10
_MAX_CALLS_PER_SAMPLE = 1 << 20
# As triton.testing.do_bench: a buffer larger than any current GPU's L2 cache.
_L2_FLUSH_BYTES = 256 * 1024 * 1024
# Fewer paired rounds than this give no confidence interval worth stopping on.
_MIN_ROUNDS_FOR_CI = 10
# The next round may run this much longer than the last one before the deadline counts as near.
_DEADLINE_MARGIN = 1.5


@dataclass(frozen=True)
class Timing:
    """Result of :func:`interleaved_timing`.

    Attributes:
        compiled: Seconds per call of the compiled function.
        eager: Seconds per call of the eager function.
        ratio: Per-round ``eager / compiled`` ratios: the speed-up over eager, paired by round.
        ratios: Those ratios themselves, round by round.
        calls_per_sample: Calls of each function inside one timed sample.
        rounds: Timed rounds (each holds one sample of each function).
        stopped_early: Rounds stopped at ``stop_below``: the median ratio is known to be below
            it, and known no better than that.
        requests: With a traffic mix, each request's share and median calls; else empty.
    """

    compiled: Stats
    eager: Stats
    ratio: Stats
    ratios: tuple[float, ...]
    calls_per_sample: int
    rounds: int
    stopped_early: bool = False
    requests: tuple[RequestTiming, ...] = ()


class _Timer(Protocol):
    def sample(self, fn: Fn, calls: int) -> float: ...


class _CpuTimer:
    def sample(self, fn: Fn, calls: int) -> float:
        start = time.perf_counter()
        for _ in range(calls):
            fn()
        return time.perf_counter() - start


class _CudaTimer:
    """Times on the GPU clock with events; ``fn`` must queue its work on the current stream."""

    def __init__(self, device: torch.device) -> None:
        self._device = device
        l2_bytes = getattr(torch.cuda.get_device_properties(device), "L2_cache_size", 0)
        size = max(_L2_FLUSH_BYTES, 2 * l2_bytes)
        self._flush = torch.empty(size, dtype=torch.int8, device=device)

    def sample(self, fn: Fn, calls: int) -> float:
        start = torch.cuda.Event(enable_timing=True)
        end = torch.cuda.Event(enable_timing=True)
        with torch.cuda.device(self._device):
            # Queued before `start` on the same stream: the flush ends before timing starts.
            self._flush.zero_()
            start.record()
            for _ in range(calls):
                fn()
            end.record()
            end.synchronize()
        return start.elapsed_time(end) / 1e3


def interleaved_timing(
    eager_fn: Callable[..., object],
    compiled_fn: Callable[..., object],
    device: str | torch.device,
    settings: MeasureSettings = MeasureSettings(),  # noqa: B008 (frozen: one value, shared)
    *,
    deadline: float | None = None,
    requests: Sequence[tuple[Any, float]] | None = None,
) -> Timing:
    """Time ``eager_fn`` against ``compiled_fn`` in interleaved rounds.

    Both are warmed up, then ``calls_per_sample`` is calibrated so that one sample of the faster
    function outlasts the device's minimum (2 ms on CPU, 1 ms on CUDA). Each round then times
    one sample of each, alternating which goes first. Rounds stop once ``target_seconds`` of
    rounds are spent and ``min_rounds`` are done, at ``max_rounds``, or when the next round would
    likely end past ``deadline``.

    With ``precision``, rounds go on past ``target_seconds`` until the 95% confidence interval
    of the median ratio is within ``+-precision`` of it (relative; as a stable-measurement retry,
    but on the paired ratio), or until ``max_seconds`` of rounds, ``max_rounds`` or the deadline:
    ``Timing.ratio.ci_half_width`` tells whether it got there.

    With ``stop_below``, rounds stop as soon as (after ``min_rounds``, and at least 10) the 95%
    confidence interval of the median ratio lies wholly below it: the candidate is known to be
    slower than that, and timing it longer would only say by how much
    (``Timing.stopped_early``).

    With ``stop_below`` and ``screen_seconds``, the timing is successive halving's: once
    ``screen_seconds`` of rounds (and ``min_rounds``, at least 10) are done, the rounds go on to
    ``target_seconds`` only if the median ratio so far reaches ``stop_below``; a candidate not
    within reach stops there (``Timing.stopped_early``). The check is made once, at the end of
    that first stage; the confidence rule above holds before and after it.

    With ``requests`` (a traffic mix: each request with its weight), ``eager_fn`` and
    ``compiled_fn`` take one request, and a sample times each request on its own (the
    calibrated calls of it): the sample is the traffic's weighted mean, so the times and the
    ratio are per request of the traffic, and ``Timing.requests`` holds each request's median
    calls (:mod:`autotune.measure._traffic`).

    On CUDA, a 256 MB buffer for the L2 flushes is allocated: read peak memory before timing,
    or reset it after.

    Args:
        eager_fn: The baseline; takes no arguments (wrap one sweep over the inputs).
        compiled_fn: The candidate, called the same way.
        device: ``"cpu"`` or ``"cuda[:N]"``: where the functions run.
        settings: How the rounds run and when they stop (:class:`MeasureSettings`; the
            names above are its fields).
        deadline: A ``time.monotonic()`` value that timing must end before, or None.
        requests: A traffic mix, ``(request, weight)`` pairs, or None for functions of no
            arguments.

    Returns:
        The per-call times of both functions and their per-round ratios.

    Raises:
        TimeoutError: The deadline passed before one round could be timed.
    """
    problems = settings.problems()
    if problems:
        raise ValueError(" ".join(problems))
    resolved = resolve(device)
    timer: _Timer = _CudaTimer(resolved) if resolved.type == "cuda" else _CpuTimer()
    fns: tuple[Fn, Fn] = (eager_fn, compiled_fn)
    weighted = None
    if requests is not None:
        timer = weighted = WeightedTimer(timer, requests)
        fns = weighted.sweeps(eager_fn, compiled_fn)
    _warm_up(fns, settings.warmup, resolved, deadline)
    with _gc_paused():
        min_sample = _MIN_SAMPLE_SECONDS[resolved.type]
        calls, round_estimate = _calibrate(timer, fns, min_sample, deadline)
        if weighted is not None:
            weighted.recording = True
        pairs, stopped = _run_rounds(timer, fns, calls, settings, deadline, round_estimate)
    ratios = [eager / compiled for eager, compiled in pairs]
    return Timing(
        compiled=Stats.from_samples([compiled / calls for _, compiled in pairs]),
        eager=Stats.from_samples([eager / calls for eager, _ in pairs]),
        ratio=Stats.from_samples(ratios),
        ratios=tuple(ratios),
        calls_per_sample=calls,
        rounds=len(pairs),
        stopped_early=stopped,
        requests=weighted.requests() if weighted is not None else (),
    )


def time_first_call(fn: Callable[[], T], device: str | torch.device) -> tuple[T, float]:
    """Call ``fn`` once and return its output and wall seconds, device work included.

    The compile time of a trial is the wall time of its first call: tracing, lowering, code
    generation and the first run.
    """
    resolved = resolve(device)
    synchronize(resolved)
    start = time.perf_counter()
    output = fn()
    synchronize(resolved)
    return output, time.perf_counter() - start


def _check_deadline(deadline: float | None, phase: str) -> None:
    if deadline is not None and time.monotonic() >= deadline:
        raise _deadline_error(f"the deadline passed during {phase}")


def _deadline_error(what: str) -> TimeoutError:
    return TimeoutError(
        f"timing must end before its deadline, but {what}, before any round was timed; "
        "give the trial a larger time budget."
    )


@contextmanager
def _gc_paused() -> Iterator[None]:
    was_enabled = gc.isenabled()
    gc.collect()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def _warm_up(
    fns: tuple[Fn, Fn], warmup: int, device: torch.device, deadline: float | None
) -> None:
    for _ in range(warmup):
        for fn in fns:
            _check_deadline(deadline, "warm-up")
            fn()
    synchronize(device)


def _calibrate(
    timer: _Timer, fns: tuple[Fn, Fn], min_sample: float, deadline: float | None
) -> tuple[int, float]:
    """Return calls per sample and the seconds one round of that many calls should take."""
    calls = 1
    while True:
        _check_deadline(deadline, "calibration")
        samples = [_short_sample(timer, fn, calls, min_sample) for fn in fns]
        shortest = min(samples)
        if shortest >= min_sample * _ACCEPT_MARGIN or calls >= _MAX_CALLS_PER_SAMPLE:
            return calls, sum(samples)
        growth = min_sample * _CALIBRATION_MARGIN / shortest if shortest > 0 else 100.0
        calls = min(_MAX_CALLS_PER_SAMPLE, max(2 * calls, math.ceil(calls * growth)))


def _short_sample(timer: _Timer, fn: Fn, calls: int, min_sample: float) -> float:
    # A sample stretched by noise would pass calibration with too few calls: near the
    # threshold, keep the shorter of two.
    first = timer.sample(fn, calls)
    if first >= _TRUSTED_SAMPLE_FACTOR * min_sample:
        return first
    return min(first, timer.sample(fn, calls))


def _run_rounds(
    timer: _Timer,
    fns: tuple[Fn, Fn],
    calls: int,
    plan: MeasureSettings,
    deadline: float | None,
    round_estimate: float,
) -> tuple[list[tuple[float, float]], bool]:
    """Return (eager, compiled) seconds per sample, one pair per round, and whether the rounds
    stopped early at ``plan.stop_below``."""
    pairs: list[tuple[float, float]] = []
    ratios: list[float] = []  # kept sorted, for the precision check
    started = time.monotonic()
    screened = plan.stop_below is None or plan.screen_seconds is None
    while len(pairs) < plan.max_rounds:
        now = time.monotonic()
        if len(pairs) >= plan.min_rounds and now - started >= plan.target_seconds:
            if _precise_enough(plan, ratios, now - started):
                break
        if deadline is not None and now + _DEADLINE_MARGIN * round_estimate > deadline:
            if not pairs:
                raise _deadline_error(f"one round (~{round_estimate:.3g} s) would end past it")
            break
        pairs.append(_one_round(timer, fns, calls, eager_first=len(pairs) % 2 == 0))
        eager, compiled = pairs[-1]
        bisect.insort(ratios, eager / compiled if compiled > 0 else math.inf)
        round_estimate = time.monotonic() - now
        if _out_of_reach(plan, ratios):
            return pairs, True
        if not screened and _first_stage_done(plan, ratios, time.monotonic() - started):
            screened = True
            if quantile(ratios, 0.5) < (plan.stop_below or 0.0):
                return pairs, True
    return pairs, False


def _first_stage_done(plan: MeasureSettings, ordered_ratios: list[float], spent: float) -> bool:
    """Whether successive halving's first stage (``plan.screen_seconds``) is over."""
    enough = len(ordered_ratios) >= max(plan.min_rounds, _MIN_ROUNDS_FOR_CI)
    return enough and spent >= (plan.screen_seconds or 0.0)


def _out_of_reach(plan: MeasureSettings, ordered_ratios: list[float]) -> bool:
    """Whether the median ratio is known (95%) to be below ``plan.stop_below``."""
    if plan.stop_below is None:
        return False
    if len(ordered_ratios) < max(plan.min_rounds, _MIN_ROUNDS_FOR_CI):
        return False
    return median_ci(ordered_ratios)[1] < plan.stop_below


def _precise_enough(plan: MeasureSettings, ordered_ratios: list[float], spent: float) -> bool:
    """Whether rounds may stop now that ``target_seconds`` are spent."""
    if plan.precision is None:
        return True
    if len(ordered_ratios) < _MIN_ROUNDS_FOR_CI:
        return False
    max_seconds = plan.max_seconds if plan.max_seconds is not None else 5 * plan.target_seconds
    if spent >= max_seconds:
        return True
    low, high = median_ci(ordered_ratios)
    median = quantile(ordered_ratios, 0.5)
    return median > 0 and (high - low) / 2 <= plan.precision * median


def _one_round(
    timer: _Timer, fns: tuple[Fn, Fn], calls: int, *, eager_first: bool
) -> tuple[float, float]:
    eager_fn, compiled_fn = fns
    if eager_first:
        eager = timer.sample(eager_fn, calls)
        return eager, timer.sample(compiled_fn, calls)
    compiled = timer.sample(compiled_fn, calls)
    return timer.sample(eager_fn, calls), compiled
