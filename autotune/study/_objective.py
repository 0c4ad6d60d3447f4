"""What a study optimizes: steady-state speed, or speed with the compile time paid back.

Every objective is a score where higher is better and eager scores 1.0, so Optuna's direction
never changes and scores compare across trials (each is paired with eager inside its trial):

- ``latency`` (default) and ``throughput``: the speedup over eager. For one fixed workload the
  two rank configurations identically; ``throughput`` reports calls per second.
- ``amortized`` with ``calls = N``: the time eager needs for N calls over the time the compiled
  model needs for them, its compile included: ``N * eager / (compile + N * latency)``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from autotune.errors import UsageError
from autotune.records import TrialRecord

OBJECTIVES = ("latency", "throughput", "amortized")


@dataclass(frozen=True)
class Objective:
    """An objective and, for ``amortized``, the number of calls the compile must pay back."""

    kind: str = "latency"
    calls: int | None = None

    def __post_init__(self) -> None:
        if self.kind not in OBJECTIVES:
            raise UsageError(
                f"--objective must be one of {', '.join(OBJECTIVES)}, got {self.kind!r}."
            )
        if (self.kind == "amortized") != (self.calls is not None):
            raise UsageError(
                "--calls N goes with --objective amortized, and only with it: the amortized "
                "objective charges the compile time to N calls (e.g. --objective amortized "
                f"--calls 100000); got objective {self.kind!r} with calls {self.calls}."
            )

    def score(self, r: TrialRecord) -> float | None:
        """Higher is better; eager is 1.0; None when the trial has nothing to score."""
        if r.status != "ok" or r.speedup_vs_eager is None:
            return None
        if self.kind != "amortized":
            return r.speedup_vs_eager
        assert self.calls is not None
        eager, latency = r.eager_latency_median_s, r.latency_median_s
        if not eager or not latency:
            return None
        return self.calls * eager / ((r.compile_time_s or 0.0) + self.calls * latency)

    def describe(self) -> str:
        if self.kind == "amortized":
            return f"amortized over {self.calls} calls (compile time included)"
        return self.kind


def break_even_calls(r: TrialRecord, against: TrialRecord | None = None) -> float | None:
    """Calls after which compiling ``r`` has paid back its compile time, against eager (or
    against ``against``, e.g. the default compile). ``inf`` when it never does."""
    if r.status != "ok" or not r.latency_median_s or r.compile_time_s is None:
        return None
    if against is None:
        their_latency, their_compile = r.eager_latency_median_s, 0.0
    else:
        if against.status != "ok" or not against.latency_median_s:
            return None
        # through eager: both latencies scaled to the eager latency of r's own trial
        their_latency = _paired_latency(r, against)
        their_compile = against.compile_time_s or 0.0
    if not their_latency:
        return None
    gain = their_latency - r.latency_median_s
    extra = r.compile_time_s - their_compile
    if extra <= 0:
        return 0.0 if gain >= 0 else math.inf
    return extra / gain if gain > 0 else math.inf


def _paired_latency(r: TrialRecord, other: TrialRecord) -> float | None:
    if not r.eager_latency_median_s or not other.speedup_vs_eager:
        return None
    return r.eager_latency_median_s / other.speedup_vs_eager
