"""A benchmark-only trial runner: each trial sleeps a fixed time instead of compiling.

The study's storage, heartbeats, sampler, budget and records run as in any study; only the
trial body is replaced, so a benchmark of many workers measures what they cost each other.
The speedup it reports is a fixed function of the configuration, so the sampler has a
landscape to learn. Use it from the command line with
``AUTOTUNE_TRIAL_RUNNER=sleep_runner:make AUTOTUNE_SLEEP_S=30`` (benchmarks/ on PYTHONPATH).
"""

from __future__ import annotations

import hashlib
import json
import os
import time

from autotune.trials import TrialResult, TrialSpec


class SleepRunner:
    """Sleeps ``seconds`` per trial and reports a speedup of 0.8x to 1.6x drawn from the
    configuration's hash (the same configuration always measures the same)."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds

    def run(self, spec: TrialSpec) -> TrialResult:
        started = time.monotonic()
        time.sleep(self.seconds)
        speedup = 1.0 if spec.config is None else _speedup(spec.config)
        eager_s = 1e-3
        return TrialResult(
            status="ok", compile_time_s=0.0, latency_median_s=eager_s / speedup,
            latency_iqr_s=eager_s * 0.02, eager_latency_median_s=eager_s,
            speedup_vs_eager=speedup, speedup_vs_eager_q1=speedup - 0.02,
            speedup_vs_eager_q3=speedup + 0.02, peak_memory_bytes=2**20, graphs=1,
            graph_breaks=0, recompiles=0, environment={"device_name": "sleep"},
            wall_time_s=time.monotonic() - started,
        )  # fmt: skip

    def close(self) -> None:
        """Nothing to close."""


def _speedup(config: dict[str, object]) -> float:
    digest = hashlib.sha256(json.dumps(config, sort_keys=True).encode()).digest()
    return 0.8 + 0.8 * digest[0] / 255


def make() -> SleepRunner:
    """The factory ``$AUTOTUNE_TRIAL_RUNNER`` names; ``$AUTOTUNE_SLEEP_S`` seconds a trial."""
    return SleepRunner(float(os.environ.get("AUTOTUNE_SLEEP_S") or 1.0))
