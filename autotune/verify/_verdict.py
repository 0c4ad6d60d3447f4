"""What ``autotune verify`` found: the verdict, its reasons and warnings, the claims and the
pooled measurements, and every repeat; its ``--json`` form."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from autotune.runtime.config import BestConfig
from autotune.trials import TrialResult
from autotune.verify._figures import (
    Numbers,
    Repeat,
    chosen,
    claims,
    measurements,
    spreads,
    vs_default,
)
from autotune.verify._rules import VERDICT_EXIT, judge, noise_floor, tolerance_for
from autotune.verify._warnings import environment_mismatches, measure_warnings, workload_warnings


@dataclass
class VerifyReport:
    """What ``autotune verify`` found: the verdict, its reasons, claims and measurements."""

    verdict: str
    reasons: list[str]
    warnings: list[str]
    environment_mismatches: list[str]
    decision: str
    config: str | None  # CompileConfig.brief() of the file's config
    device: str
    tolerance: float
    noise_floor: float | None
    claimed: Numbers
    measured: Numbers
    repeats: list[Repeat] = field(default_factory=list)

    @property
    def exit_code(self) -> int:
        return VERDICT_EXIT[self.verdict]

    @property
    def chosen(self) -> str:
        """What the file says to run: ``config``, or ``eager`` for a do_not_compile file."""
        return chosen(self.config is not None)

    def to_dict(self) -> dict[str, Any]:
        """The ``--json`` object: claimed_* and measured_* keys flat, then one entry per repeat."""
        return {
            "verdict": self.verdict,
            "exit_code": self.exit_code,
            "reasons": self.reasons,
            "warnings": self.warnings,
            "environment_mismatches": self.environment_mismatches,
            "decision": self.decision,
            "config": self.config,
            "device": self.device,
            "tolerance": self.tolerance,
            "noise_floor": self.noise_floor,
            **{f"claimed_{k}": v for k, v in self.claimed.items()},
            **{f"measured_{k}": v for k, v in self.measured.items()},
            "per_repeat": [
                _repeat_dict(i + 1, repeat, self.chosen) for i, repeat in enumerate(self.repeats)
            ],
        }


def build_report(
    best: BestConfig, device: str, repeats: Sequence[Repeat], tolerance: float
) -> VerifyReport:
    """Judges the measured ``repeats`` (each with an ``eager`` trial that ran) against ``best``;
    the tolerance applied is ``tolerance`` or the noise floor, whichever is larger, up to
    :data:`~autotune.verify._rules.MAX_TOLERANCE` (a floor past it: ``too_noisy``)."""
    noise = noise_floor([r["eager"] for r in repeats])
    tol, too_noisy = tolerance_for(tolerance, noise)
    claimed, measured = claims(best), measurements(best, repeats)
    verdict, reasons = judge(best, repeats, claimed, spreads(best, repeats), tol, too_noisy)
    eager = repeats[0]["eager"]
    mismatches = environment_mismatches(best, eager)
    return VerifyReport(
        verdict=verdict,
        reasons=reasons,
        warnings=mismatches
        + workload_warnings(best, device, eager)
        + measure_warnings(best, repeats, claimed, measured, noise, tol),
        environment_mismatches=mismatches,
        decision=best.decision,
        config=best.config.brief() if best.config is not None else None,
        device=device,
        tolerance=tol,
        noise_floor=noise,
        claimed=claimed,
        measured=measured,
        repeats=list(repeats),
    )


def _repeat_dict(number: int, repeat: Repeat, mine: str) -> dict[str, Any]:
    entry: dict[str, Any] = {"repeat": number}
    for name, result in repeat.items():
        entry[name] = _trial_dict(result)
    entry["speedup_vs_default"] = vs_default(repeat, mine)
    return entry


def _trial_dict(result: TrialResult) -> dict[str, Any]:
    return {
        "status": result.status,
        "failure_kind": result.failure_kind,
        "error": result.error,
        "speedup_vs_eager": result.speedup_vs_eager,
        "speedup_vs_eager_q1": result.speedup_vs_eager_q1,
        "speedup_vs_eager_q3": result.speedup_vs_eager_q3,
        "speedup_vs_eager_ci_low": result.speedup_vs_eager_ci_low,
        "speedup_vs_eager_ci_high": result.speedup_vs_eager_ci_high,
        "rounds": result.rounds,
        "speedup_rounds": result.speedup_rounds,
        "latency_median_s": result.latency_median_s,
        "eager_latency_median_s": result.eager_latency_median_s,
        "compile_time_s": result.compile_time_s,
        "wall_time_s": result.wall_time_s,
    }
