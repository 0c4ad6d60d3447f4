"""What a study optimizes: steady-state speed, samples per second, or speed with the compile
time paid back.

Every objective is a score where higher is better, so Optuna's direction never changes:

- ``latency`` (default): the speedup over eager, paired inside each trial (eager is 1.0).
- ``throughput``: samples per second, where the batch size is searched too (``--batch-sizes``,
  with a model file whose ``get_inputs(device, batch_size)`` builds a batch of that size):
  a larger batch may serve more samples per second at a longer latency per call, which
  ``--max-latency-ms`` caps, as NVIDIA's Triton Model Analyzer does for serving. With one
  fixed batch, samples per second rank exactly as latency, so the option is refused there.
- ``amortized`` with ``calls = N``: the time eager needs for N calls over the time the compiled
  model needs for them, its compile included: ``N * eager / (compile + N * latency)``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import optuna

from autotune.errors import UsageError
from autotune.records import TrialRecord
from autotune.settings import OBJECTIVES


class ObjectiveSettings(Protocol):
    """What a study's settings say of its objective (``StudySettings`` has these)."""

    @property
    def objective(self) -> str: ...
    @property
    def calls(self) -> int | None: ...
    @property
    def batch_sizes(self) -> list[int] | None: ...
    @property
    def max_latency_s(self) -> float | None: ...


@dataclass(frozen=True)
class Objective:
    """An objective and what it needs: the calls that pay back the compile (``amortized``),
    the batch sizes searched and the latency cap (``throughput``)."""

    kind: str = "latency"
    calls: int | None = None
    batch_sizes: Sequence[int] | None = None
    max_latency_s: float | None = None

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
        if self.kind == "throughput" and not self.batch_sizes:
            raise UsageError(
                "--objective throughput ranks by samples per second, which differs from "
                "latency only when the batch size may change: pass --batch-sizes (e.g. "
                "--batch-sizes 1,8,32) with a model file whose get_inputs(device, batch_size) "
                "builds a batch of that size. For one fixed batch, --objective latency ranks "
                "configurations identically."
            )
        if self.kind != "throughput" and self.batch_sizes:
            raise UsageError(
                f"--batch-sizes {','.join(map(str, self.batch_sizes))} searches the batch size, "
                "which only a throughput study ranks by (samples per second; a larger batch "
                f"always takes longer per call); got --objective {self.kind}. Add --objective "
                "throughput, or drop --batch-sizes."
            )
        if self.kind != "throughput" and self.max_latency_s is not None:
            raise UsageError(
                f"--max-latency-ms caps the latency a throughput study may trade for samples "
                f"per second; got --objective {self.kind}. Add --objective throughput "
                "--batch-sizes ..., or drop --max-latency-ms."
            )

    @classmethod
    def of(cls, settings: ObjectiveSettings) -> Objective:
        """The objective a study's settings describe."""
        return cls(
            settings.objective, settings.calls, settings.batch_sizes, settings.max_latency_s
        )

    def score(self, r: TrialRecord) -> float | None:
        """Higher is better; None when the trial has nothing to score."""
        if r.status != "ok" or r.speedup_vs_eager is None:
            return None
        if self.kind == "throughput":
            return r.samples_per_s(1.0 if r.baseline == "eager" else None)
        if self.kind == "latency":
            return r.speedup_vs_eager
        assert self.calls is not None
        eager, latency = r.eager_latency_median_s, r.latency_median_s
        if not eager or not latency:
            return None
        return self.calls * eager / ((r.compile_time_s or 0.0) + self.calls * latency)

    def spread(self, r: TrialRecord) -> tuple[float, float]:
        """The score's paired spread (lower and upper quartile), in the units the gates
        compare: speedup over eager, or samples per second for ``throughput``."""
        q1, q3 = r.speedup_vs_eager_q1 or 0.0, r.speedup_vs_eager_q3 or 0.0
        if self.kind != "throughput":
            return q1, q3
        return r.samples_per_s(q1) or 0.0, r.samples_per_s(q3) or 0.0

    def describe(self) -> str:
        if self.kind == "amortized":
            return f"amortized over {self.calls} calls (compile time included)"
        if self.kind == "throughput":
            cap = f", at most {self.max_latency_s * 1e3:g} ms a call" if self.max_latency_s else ""
            sizes = ",".join(map(str, self.batch_sizes or ()))
            return f"throughput: samples per second over batch sizes {sizes}{cap}"
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


def scored_trial(
    trial: optuna.trial.FrozenTrial,
    record: TrialRecord,
    objective: Objective,
    user_attrs: dict[str, Any],
) -> optuna.trial.FrozenTrial | None:
    """A finished trial with ``trial``'s parameters, valued by ``objective``'s score of its
    ``record`` (0 when it failed): what Optuna's tools (the sampler's prior, importance, the
    plots) are given. None when ``trial`` drew no parameters (a baseline or a preset)."""
    if not trial.params:
        return None
    return optuna.trial.create_trial(
        params=trial.params,
        distributions=trial.distributions,
        value=objective.score(record) or 0.0,
        user_attrs=user_attrs,
    )


# Below this third quartile of its paired rounds, a config ran clearly slower than eager.
CLEARLY_SLOWER_Q3 = 1.0


def clearly_slower(r: TrialRecord) -> bool:
    """Slower than eager in at least three of four paired rounds (its third quartile below
    1.0x); False for a trial without paired rounds."""
    q3 = r.speedup_vs_eager_q3
    return q3 is not None and q3 < CLEARLY_SLOWER_Q3
