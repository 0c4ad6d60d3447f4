"""A trial runner that answers from a script instead of compiling and timing.

For tests about what autotune does with results (decisions, records, resumes, output), so
that no assertion depends on how fast this machine is. The command line picks it up through
``AUTOTUNE_TRIAL_RUNNER=scripted:make`` (see :func:`use`); a test sets
``scripted.SCRIPT`` to say what each trial measures.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass

import pytest

from autotune.trials import TrialResult, TrialSpec

Script = Callable[[TrialSpec], TrialResult]


def ok(
    speedup: float,
    *,
    q: float = 0.02,
    compile_s: float = 0.5,
    eager_s: float = 1e-3,
    memory: int = 100 * 2**20,
    wall_s: float = 1.0,
    ci: float | None = None,
    rounds: list[float] | None = None,
) -> TrialResult:
    """A trial that ran and matched eager: ``speedup`` over eager, quartiles at +-``q``, the
    median's 95% interval at +-``ci`` (None: none given, as a result before intervals), and
    ``rounds`` as its per-round ratios."""
    return TrialResult(
        status="ok",
        compile_time_s=compile_s,
        latency_median_s=eager_s / speedup,
        latency_iqr_s=eager_s * q,
        eager_latency_median_s=eager_s,
        speedup_vs_eager=speedup,
        speedup_vs_eager_q1=speedup - q,
        speedup_vs_eager_q3=speedup + q,
        speedup_vs_eager_ci_low=None if ci is None else speedup - ci,
        speedup_vs_eager_ci_high=None if ci is None else speedup + ci,
        speedup_rounds=list(rounds or []),
        peak_memory_bytes=memory,
        graphs=1,
        graph_breaks=0,
        recompiles=0,
        environment={"host": "scripted", "torch": "2.13.0"},
        model={"sha256": "scripted", "parameters": 1, "root_class": "Tiny"},
        inputs=["(4x16:float32)"],
        wall_time_s=wall_s,
    )


def by_config(default: float = 1.2, **speedups: float) -> Script:
    """Eager measures 1.0x; a compiled config ``speedups[key]`` where ``key`` is
    ``fg{fullgraph}_dyn{dynamic}`` (e.g. ``fgTrue_dynFalse``), else ``default``."""

    def script(spec: TrialSpec) -> TrialResult:
        if spec.config is None:
            return ok(1.0)
        return ok(speedups.get(key(spec), default))

    return script


def key(spec: TrialSpec) -> str:
    assert spec.config is not None
    return f"fg{spec.config['fullgraph']}_dyn{spec.config['dynamic']}"


SCRIPT: Script = by_config()


@dataclass
class ScriptedRunner:
    """Runs every spec through :data:`SCRIPT`, keeping each in :data:`RUNS`."""

    pause_s: float = 0.0

    def run(self, spec: TrialSpec) -> TrialResult:
        RUNS.append(spec)
        if self.pause_s:
            time.sleep(self.pause_s)
        result = SCRIPT(spec)
        result.batch_size = spec.batch_size
        return result

    def close(self) -> None:
        """Nothing to close."""


RUNS: list[TrialSpec] = []  # every spec any ScriptedRunner ran, in order


def use(monkeypatch: pytest.MonkeyPatch, script: Script, pause_s: float = 0.0) -> list[TrialSpec]:
    """Makes the command line run ``script`` instead of trials; returns the list of specs run."""
    monkeypatch.setenv("AUTOTUNE_TRIAL_RUNNER", "scripted:make")
    monkeypatch.setattr(sys.modules[__name__], "SCRIPT", script)
    monkeypatch.setattr(sys.modules[__name__], "PAUSE_S", pause_s)
    RUNS.clear()
    return RUNS


# A pause per trial, for the command lines of other processes (tests of several workers).
PAUSE_S = float(os.environ.get("AUTOTUNE_SCRIPTED_PAUSE_S") or 0.0)


def make() -> ScriptedRunner:
    """The factory ``$AUTOTUNE_TRIAL_RUNNER`` names."""
    return ScriptedRunner(pause_s=PAUSE_S)
