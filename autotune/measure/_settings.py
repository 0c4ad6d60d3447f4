"""How :func:`~autotune.measure.timing.interleaved_timing` times a pair of functions: plain
data that a trial's spec carries and a study stores (no torch here: the command line builds
it)."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

# The seconds of rounds each trial times (--measure-seconds).
MEASURE_SECONDS = 2.0
# A round is two samples, at least 4 ms on a CPU and 2 ms on CUDA: 10 s of them fit.
_PRECISE_MAX_ROUNDS = 5000


@dataclass(frozen=True)
class MeasureSettings:
    """How the rounds of an interleaved timing run, and when they stop.

    Attributes:
        warmup: Untimed calls of each function first.
        min_rounds: Rounds to run before ``target_seconds`` may end the timing.
        max_rounds: Rounds at most.
        target_seconds: Wall time to spend on rounds (warm-up and calibration not counted).
        precision: The relative half-width of the median ratio's 95% confidence interval to
            time on for, or None to stop at ``target_seconds``.
        max_seconds: With ``precision``, wall time on rounds at most.
        stop_below: A median ratio that, once known (95%) to be out of reach, ends the rounds:
            the trial is clearly slower than the best so far (see ``autotune.search._screen``).
            None: never.
        screen_seconds: With ``stop_below``, successive halving's first stage, in seconds of
            rounds: a median below ``stop_below`` at its end ends the rounds.
    """

    warmup: int = 3
    min_rounds: int = 10
    max_rounds: int = 200
    target_seconds: float = MEASURE_SECONDS
    precision: float | None = None
    max_seconds: float | None = None
    stop_below: float | None = None
    screen_seconds: float | None = None

    def precise(self, precision: float | None) -> MeasureSettings:
        """These settings, timing on past ``target_seconds`` until the 95% confidence interval
        of the median speedup is within ``+-precision`` (relative), for at most five times as
        long: how finalists and ``autotune verify`` time. ``None``: these settings as they are."""
        if precision is None:
            return self
        return dataclasses.replace(
            self,
            precision=precision,
            max_seconds=5 * self.target_seconds,
            max_rounds=max(self.max_rounds, _PRECISE_MAX_ROUNDS),
        )

    def problems(self) -> list[str]:
        """What makes these settings impossible to time with, one line each (empty: none)."""
        out = []
        if self.warmup < 0:
            out.append(f"`warmup >= 0` must hold, but got warmup={self.warmup}.")
        if not 1 <= self.min_rounds <= self.max_rounds:
            out.append(
                "`1 <= min_rounds <= max_rounds` must hold, but got "
                f"(min_rounds={self.min_rounds}, max_rounds={self.max_rounds}); raise max_rounds."
            )
        if self.target_seconds < 0:
            out.append(f"`target_seconds >= 0` must hold, but got {self.target_seconds}.")
        if self.precision is not None and not 0 < self.precision < 1:
            out.append(f"`0 < precision < 1` must hold, but got precision={self.precision}.")
        if self.screen_seconds is not None and self.screen_seconds < 0:
            out.append(f"`screen_seconds >= 0` must hold, but got {self.screen_seconds}.")
        if self.max_seconds is not None and self.max_seconds < self.target_seconds:
            out.append(
                "`max_seconds >= target_seconds` must hold, but got "
                f"(max_seconds={self.max_seconds}, target_seconds={self.target_seconds})."
            )
        return out
