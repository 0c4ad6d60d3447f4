"""Timing a traffic mix: requests of different shapes, each with its share of the traffic.

A served model's latency is per request, and a mix where nine requests in ten are short is not
one pass over a list where a batch of 32 weighs as much as a batch of 1. So each sample of the
paired rounds times every request on its own (the calibrated number of calls of it) and is the
traffic's weighted mean of those times; the rounds, their ABBA order, the speed-up's median
and its confidence interval are :func:`~autotune.measure.timing.interleaved_timing`'s. Each
request's own samples are kept too: its latency is their median, and the weighted percentiles
of those latencies say what the tail of the traffic sees (:func:`traffic_summary`).
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any, Protocol

# The percentiles a traffic's summary gives, as (name, fraction).
PERCENTILES = (("p50", 0.5), ("p95", 0.95), ("p99", 0.99))


@dataclass(frozen=True)
class RequestTiming:
    """One request of a traffic mix, timed.

    Attributes:
        weight: Its share of the traffic (the shares sum to 1).
        eager_s: The median seconds of one eager call of it.
        compiled_s: The median seconds of one compiled call of it.
    """

    weight: float
    eager_s: float
    compiled_s: float


class _Timer(Protocol):
    def sample(self, fn: Callable[[], object], calls: int) -> float: ...


@dataclass(frozen=True)
class _Sweep:
    """One side (eager or compiled) over the traffic: calling it runs each request once (the
    warm-up); the weighted timer times each request on its own."""

    fn: Callable[[Any], object]
    side: int  # 0 eager, 1 compiled
    requests: tuple[Any, ...]

    def __call__(self) -> None:
        for request in self.requests:
            self.fn(request)


class WeightedTimer:
    """A timer whose sample of a :class:`_Sweep` is the traffic's weighted mean of each
    request's sample (times ``calls``), as the rounds of interleaved timing expect."""

    def __init__(self, base: _Timer, requests: Sequence[tuple[Any, float]]) -> None:
        weights = [float(w) for _, w in requests]
        if not requests or any(not (w > 0 and math.isfinite(w)) for w in weights):
            raise ValueError(
                f"a traffic mix needs at least one request, each with a positive finite weight; "
                f"got weights {weights}"
            )
        total = sum(weights)
        self._base = base
        self._requests = tuple(r for r, _ in requests)
        self._weights = tuple(w / total for w in weights)
        self._samples: tuple[list[list[float]], ...] = tuple(
            [[] for _ in self._requests] for _ in range(2)
        )
        self.recording = False  # calibration's samples are not kept; the rounds' are

    def sweeps(self, eager_one: Callable[[Any], object], compiled_one: Callable[[Any], object]
               ) -> tuple[_Sweep, _Sweep]:  # fmt: skip
        return _Sweep(eager_one, 0, self._requests), _Sweep(compiled_one, 1, self._requests)

    def sample(self, fn: Callable[[], object], calls: int) -> float:
        assert isinstance(fn, _Sweep), "a weighted timer times the sweeps it made"
        total = 0.0
        for i, (request, weight) in enumerate(zip(self._requests, self._weights, strict=True)):
            seconds = self._base.sample(partial(fn.fn, request), calls)
            if self.recording:
                self._samples[fn.side][i].append(seconds / calls)
            total += weight * seconds
        return total

    def requests(self) -> tuple[RequestTiming, ...]:
        """Each request's median eager and compiled call, from the rounds' samples."""
        eager, compiled = self._samples
        return tuple(
            RequestTiming(w, statistics.median(e), statistics.median(c))
            for w, e, c in zip(self._weights, eager, compiled, strict=True)
            if e and c
        )


def weighted_quantile(values: Sequence[float], weights: Sequence[float], q: float) -> float:
    """The smallest value whose cumulative weight reaches ``q`` of the total: the latency that
    ``q`` of the traffic's requests stay within.

    Example:
        >>> weighted_quantile([1.0, 10.0], [0.98, 0.02], 0.95), weighted_quantile(
        ...     [1.0, 10.0], [0.98, 0.02], 0.99)
        (1.0, 10.0)
    """
    if not values or len(values) != len(weights) or not 0.0 <= q <= 1.0:
        raise ValueError(f"weighted_quantile needs values, as many weights and 0 <= q <= 1; "
                         f"got {len(values)} values, {len(weights)} weights, q={q}")  # fmt: skip
    ordered = sorted(zip(values, weights, strict=True))
    total = sum(weights)
    reached = 0.0
    for value, weight in ordered:
        reached += weight
        if reached >= q * total * (1 - 1e-12):
            return value
    return ordered[-1][0]


def traffic_summary(requests: Sequence[RequestTiming]) -> dict[str, float]:
    """The traffic's weighted mean latency and its p50/p95/p99, compiled and eager, in
    seconds (``mean_s``, ``p99_s``, ``eager_p99_s``, ...), and the number of requests."""
    weights = [r.weight for r in requests]
    summary: dict[str, float] = {"requests": len(requests)}
    for prefix, values in (("", [r.compiled_s for r in requests]),
                           ("eager_", [r.eager_s for r in requests])):  # fmt: skip
        summary[f"{prefix}mean_s"] = sum(w * v for w, v in zip(weights, values, strict=True)) / (
            sum(weights)
        )
        for name, q in PERCENTILES:
            summary[f"{prefix}{name}_s"] = weighted_quantile(values, weights, q)
    return summary
