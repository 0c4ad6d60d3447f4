"""What ``autotune verify`` found: claims against measurements, pooled over repeats."""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from autotune.runtime.config import BestConfig
from autotune.trials import TrialResult
from autotune.verify._rules import VERDICT_EXIT, Spread, judge, noise_floor

NOISY = 0.10  # a noise floor above this gets a warning: small drops cannot be told apart
COMPILE_SLOWER = 1.5  # a cold compile this many times the claimed one gets a warning


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
    claimed: dict[str, float | None]
    measured: dict[str, float | None]
    repeats: list[dict[str, TrialResult]] = field(default_factory=list)

    @property
    def exit_code(self) -> int:
        return VERDICT_EXIT[self.verdict]

    @property
    def chosen(self) -> str:
        """What the file says to run: ``config``, or ``eager`` for a do_not_compile file."""
        return _chosen(self.decision)

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
                _repeat_dict(i + 1, done, self.chosen) for i, done in enumerate(self.repeats)
            ],
        }


def build_report(
    best: BestConfig, device: str, rounds: list[dict[str, TrialResult]], tolerance: float
) -> VerifyReport:
    noise = noise_floor([r["eager"] for r in rounds])
    tol = max(tolerance, noise or 0.0)
    claimed, measured = _claims(best), _measurements(best, rounds)
    verdict, reasons = judge(best, rounds, claimed, measured, tol)
    eager = rounds[0]["eager"]
    mismatches = _environment_mismatches(best, eager)
    return VerifyReport(
        verdict=verdict,
        reasons=reasons,
        warnings=mismatches
        + _workload_warnings(best, device, eager)
        + _measure_warnings(best, rounds, claimed, measured, noise, tol),
        environment_mismatches=mismatches,
        decision=best.decision,
        config=best.config.brief() if best.config is not None else None,
        device=device,
        tolerance=tol,
        noise_floor=noise,
        claimed=claimed,
        measured=measured,
        repeats=rounds,
    )


def _claims(best: BestConfig) -> dict[str, float | None]:
    """The numbers the file states about what it says to run (nothing, for eager)."""
    m = best.metrics
    compiled = best.decision == "compile"
    return {
        "speedup_vs_eager": m.get("speedup_vs_eager") if compiled else None,
        "speedup_vs_eager_q1": m.get("speedup_vs_eager_q1") if compiled else None,
        "speedup_vs_eager_q3": m.get("speedup_vs_eager_q3") if compiled else None,
        "speedup_vs_default": m.get("speedup_vs_default") if compiled else None,
        "latency_s": m.get("latency_s") if compiled else m.get("eager_latency_s"),
        "eager_latency_s": m.get("eager_latency_s"),
        "compile_time_s": _cold_compile_time(m) if compiled else None,
    }


def _cold_compile_time(metrics: dict[str, float | int | None]) -> float | int | None:
    """Verify measures the cold compile: compare with the file's cold one when it has one."""
    cold = metrics.get("cold_compile_time_s")
    return cold if cold is not None else metrics.get("compile_time_s")


def _measurements(best: BestConfig, rounds: list[dict[str, TrialResult]]) -> dict[str, Any]:
    """Pooled over repeats, for what the file says to run: its config, or eager."""
    chosen = _chosen(best.decision)
    # eager's own latency, not that of its second copy in the eager-vs-eager trial
    latency = "latency_median_s" if chosen == "config" else "eager_latency_median_s"
    mine = Spread.pooled([Spread.of(r.get(chosen)) for r in rounds])
    default = Spread.pooled([Spread.of(r.get("default")) for r in rounds])
    return {
        "speedup_vs_eager": mine.median if mine else None,
        "speedup_vs_eager_q1": mine.q1 if mine else None,
        "speedup_vs_eager_q3": mine.q3 if mine else None,
        "speedup_vs_default": _median([_vs_default(r, chosen) for r in rounds]),
        "latency_s": _median([_ok(r.get(chosen), latency) for r in rounds]),
        "eager_latency_s": _median([_ok(r["eager"], "eager_latency_median_s") for r in rounds]),
        "compile_time_s": _median([_ok(r.get("config"), "compile_time_s") for r in rounds]),
        "default_speedup_vs_eager": default.median if default else None,
        "default_speedup_vs_eager_q1": default.q1 if default else None,
        "default_speedup_vs_eager_q3": default.q3 if default else None,
        "default_compile_time_s": _median(
            [_ok(r.get("default"), "compile_time_s") for r in rounds]
        ),
    }


def _workload_warnings(best: BestConfig, device: str, eager: TrialResult) -> list[str]:
    """What was verified is not quite what was tuned: another device, model or inputs."""
    found: list[str] = []
    tuned_on = best.workload.get("device")
    if tuned_on and tuned_on != device:
        found.append(f"device: tuned on {tuned_on!r}, verified on {device!r}")
    tuned_model = best.model.get("sha256")
    if tuned_model and tuned_model != eager.model.get("sha256"):
        found.append("model: its structure differs from the one the file was tuned for")
    if best.workload.get("inputs") and best.workload["inputs"] != eager.inputs:
        found.append(f"inputs: tuned with {best.workload['inputs']}, verified with {eager.inputs}")
    return found


def _measure_warnings(
    best: BestConfig,
    rounds: list[dict[str, TrialResult]],
    claimed: dict[str, float | None],
    measured: dict[str, float | None],
    noise: float | None,
    tol: float,
) -> list[str]:
    """Findings that fail no claim: a noisy machine, default compile failing or catching up."""
    found: list[str] = []
    if noise is not None and noise > NOISY:
        found.append(
            f"noisy timing: eager timed against itself strays ±{noise:.0%} from 1.0, so only "
            "larger drops can fail a claim; verify on a quiet machine, or with --repeats"
        )
    failed = [r["default"] for r in rounds if "default" in r and not r["default"].ok]
    if failed and best.decision == "compile":
        found.append(f"default torch.compile failed here: {failed[0].failure_kind}")
    was, now = claimed["speedup_vs_default"], measured["speedup_vs_default"]
    if was and now and now < was * (1.0 - tol):
        found.append(f"speedup vs default torch.compile: claimed {was:.2f}x, measured {now:.2f}x")
    return found + _compile_warnings(best, claimed, measured)


def _compile_warnings(
    best: BestConfig, claimed: dict[str, float | None], measured: dict[str, float | None]
) -> list[str]:
    """A cold compile far above the file's (compile times vary less predictably than steady
    state: a warning), or above the compile cap its --pick rule promised."""
    was, now = claimed["compile_time_s"], measured["compile_time_s"]
    if not was or not now:
        return []
    found = []
    if now > was * COMPILE_SLOWER:
        found.append(f"cold compile: claimed {was:.1f} s, measured {now:.1f} s")
    cap = (best.source.get("pick_rule") or {}).get("max_compile_s")
    if cap is not None and now > cap:
        found.append(
            f"cold compile: measured {now:.1f} s, above the compile<={cap:g}s of the rule that "
            f"picked this config (--pick {best.source.get('pick')}); search again on this "
            "machine"
        )
    return found


def _environment_mismatches(best: BestConfig, eager: TrialResult) -> list[str]:
    from autotune.runtime.fingerprint import environment_mismatches

    return [
        f"environment: {line}"
        for line in environment_mismatches(best.environment, eager.environment)
    ]


def _vs_default(done: dict[str, TrialResult], chosen: str) -> float | None:
    """Through eager, as the search does: both were timed against eager side by side."""
    mine, default = Spread.of(done.get(chosen)), Spread.of(done.get("default"))
    return mine.median / default.median if mine and default else None


def _ok(result: TrialResult | None, name: str) -> float | None:
    return getattr(result, name) if result is not None and result.ok else None


def _median(values: Sequence[float | None]) -> float | None:
    found = [v for v in values if v is not None]
    return statistics.median(found) if found else None


def _chosen(decision: str) -> str:
    return "config" if decision == "compile" else "eager"


def _repeat_dict(repeat: int, done: dict[str, TrialResult], chosen: str) -> dict[str, Any]:
    entry: dict[str, Any] = {"repeat": repeat}
    for name, result in done.items():
        entry[name] = {
            "status": result.status,
            "failure_kind": result.failure_kind,
            "error": result.error,
            "speedup_vs_eager": result.speedup_vs_eager,
            "speedup_vs_eager_q1": result.speedup_vs_eager_q1,
            "speedup_vs_eager_q3": result.speedup_vs_eager_q3,
            "speedup_vs_eager_ci_low": result.speedup_vs_eager_ci_low,
            "speedup_vs_eager_ci_high": result.speedup_vs_eager_ci_high,
            "rounds": result.rounds,
            "latency_s": result.latency_median_s,
            "eager_latency_s": result.eager_latency_median_s,
            "compile_time_s": result.compile_time_s,
            "wall_time_s": result.wall_time_s,
        }
    entry["speedup_vs_default"] = _vs_default(done, chosen)
    return entry
