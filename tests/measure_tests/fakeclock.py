"""A fake clock for `autotune.measure.timing`: time passes only when a timed function says so.

The timing module calls ``time.perf_counter()`` and ``time.monotonic()``; a test replaces its
``time`` with a :class:`FakeClock`, whose functions both read one number that only the timed
functions advance. Every measurement is then known in advance, on any machine in any state.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable

import pytest

from autotune.measure import timing

# ~0.98 ms. A power of two: clock readings, their differences and their ratios are exact.
TICK = 2.0**-10


class FakeClock:
    """Stands in for the ``time`` module of `autotune.measure.timing`."""

    def __init__(self, start: float = 1000.0) -> None:
        self.now = start

    def perf_counter(self) -> float:
        return self.now

    def monotonic(self) -> float:
        return self.now

    def costs(self, *seconds: float) -> Callable[[], None]:
        """A function whose calls advance the clock by ``seconds``, in turn and over again."""
        each = itertools.cycle(seconds)

        def call() -> None:
            self.now += next(each)

        return call


def install(monkeypatch: pytest.MonkeyPatch) -> FakeClock:
    """Make `autotune.measure.timing` read a new fake clock until the test ends."""
    clock = FakeClock()
    monkeypatch.setattr(timing, "time", clock)
    return clock
