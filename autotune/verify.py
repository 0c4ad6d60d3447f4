"""``autotune verify``: re-measure a best-config file on this machine and check its claims.

Every measurement is a trial of its own (the search's protocol: correctness gate against eager,
interleaved timing against eager) in a fresh process with a private, empty kernel cache, so its
compile time is the cold one a new machine pays. The verdict rules are in :func:`is_slower`,
:func:`reliably_faster` and the README's *autotune verify* section.
"""

from __future__ import annotations

import statistics
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from autotune.errors import UsageError
from autotune.runtime.config import BestConfig, CompileConfig
from autotune.trials import MeasureSettings, TrialResult, TrialRunner, TrialSpec

VERDICT_EXIT = {"ok": 0, "slower": 1, "incorrect": 1, "broken": 1, "compile_now_faster": 1}
DEFAULT_TOLERANCE = 0.05
NOISY = 0.10  # a noise floor above this gets a warning: small drops cannot be told apart
OnTrial = Callable[[int, str, TrialResult], None]


@dataclass(frozen=True)
class Spread:
    """A speedup over eager: the median of paired per-round ratios and their quartiles."""

    median: float
    q1: float
    q3: float

    @classmethod
    def of(cls, result: TrialResult | None) -> Spread | None:
        """The speedup a trial measured, or ``None`` when it did not run."""
        if result is None or not result.ok or result.speedup_vs_eager is None:
            return None
        median, q1, q3 = (
            result.speedup_vs_eager,
            result.speedup_vs_eager_q1,
            result.speedup_vs_eager_q3,
        )
        return cls(median, median if q1 is None else q1, median if q3 is None else q3)

    @classmethod
    def pooled(cls, spreads: Sequence[Spread | None]) -> Spread | None:
        """Repeats pooled: the median of their medians, of their q1s and of their q3s."""
        found = [s for s in spreads if s is not None]
        if not found:
            return None
        return cls(
            *(statistics.median(getattr(s, k) for s in found) for k in ("median", "q1", "q3"))
        )


def is_slower(claimed: Spread, measured: Spread, tolerance: float) -> bool:
    """A claim fails when the measured speedup is below it beyond the noise: the interquartile
    ranges do not overlap (measured q3 < claimed q1) *and* the median fell by more than
    ``tolerance`` (a fraction of the claimed median)."""
    return measured.q3 < claimed.q1 and measured.median < claimed.median * (1.0 - tolerance)


def reliably_faster(measured: Spread, tolerance: float) -> bool:
    """Faster than eager in at least three of four paired rounds (q1 > 1, the rule by which
    the search emits a compile decision) and by more than ``tolerance`` at the median."""
    return measured.q1 > 1.0 and measured.median > 1.0 + tolerance


def noise_floor(eager_vs_eager: Sequence[TrialResult]) -> float | None:
    """How far eager timed against itself strays from 1.0: per trial the larger of the
    median's distance from 1 and half the interquartile range; the median over repeats."""
    spreads = [s for s in map(Spread.of, eager_vs_eager) if s is not None]
    if not spreads:
        return None
    return statistics.median(max(abs(s.median - 1.0), (s.q3 - s.q1) / 2) for s in spreads)


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


def verify(
    best: BestConfig,
    model_path: str,
    *,
    runner: TrialRunner,
    device: str | None = None,
    repeats: int = 1,
    budget_s: float = 600.0,
    measure_seconds: float = 2.0,
    seed: int = 0,
    tolerance: float = DEFAULT_TOLERANCE,
    default: CompileConfig | None = CompileConfig(),  # noqa: B008 - frozen, never mutated
    on_trial: OnTrial | None = None,
) -> VerifyReport:
    """Re-measures ``best`` on this machine and judges its claims.

    Args:
        best: The best-config file.
        model_path: The model file it was tuned for.
        runner: Runs each measurement (a ``SubprocessRunner``: a fresh process each).
        device: Default: the file's workload device.
        repeats: Each measurement runs this many times; the repeats are pooled.
        budget_s: Compile budget of each trial.
        measure_seconds: Interleaved timing per trial.
        seed: Seeds weights and inputs, as ``autotune search --seed`` did.
        tolerance: Least relative drop of a speedup that can fail a claim.
        default: The default-compile reference; ``None`` skips it (then nothing is checked
            against it, and a ``do_not_compile`` file cannot be verified).
        on_trial: Called with (repeat, measurement, result) after each trial.

    Raises:
        UsageError: Eager itself fails on this machine, or nothing is left to verify.
    """
    device = device or str(best.workload.get("device") or "cpu")
    plan = plan_measurements(best, default)
    base = TrialSpec(
        model_path=str(Path(model_path).resolve()),
        device=device,
        config=None,
        workload=str(best.workload.get("kind") or "infer"),
        seed=seed,
        budget_s=budget_s,
        measure=MeasureSettings(target_seconds=measure_seconds),
    )
    rounds = _measure(runner, base, plan, repeats, on_trial)
    return _report(best, device, rounds, tolerance)


def plan_measurements(
    best: BestConfig, default: CompileConfig | None
) -> list[tuple[str, CompileConfig | None]]:
    """What each repeat measures, in order: (``eager`` | ``default`` | ``config``, config).

    Raises:
        UsageError: A do_not_compile file without the default compile has nothing to verify.
    """
    plan: list[tuple[str, CompileConfig | None]] = [("eager", None)]
    if default is not None:
        plan.append(("default", default))
    if best.decision == "compile" and best.config is not None:
        plan.append(("config", best.config))
    elif default is None:
        raise UsageError(
            "A do_not_compile file claims that default torch.compile is not reliably faster "
            "than eager, so verifying it needs the default compile: drop --skip-default."
        )
    return plan


def _measure(
    runner: TrialRunner,
    base: TrialSpec,
    plan: list[tuple[str, CompileConfig | None]],
    repeats: int,
    on_trial: OnTrial | None,
) -> list[dict[str, TrialResult]]:
    """Runs the plan ``repeats`` times; a failed config trial ends the measuring."""
    rounds: list[dict[str, TrialResult]] = []
    for repeat in range(1, repeats + 1):
        rounds.append({})
        for name, config in plan:
            result = rounds[-1][name] = _run_cold(runner, base, config)
            if on_trial is not None:
                on_trial(repeat, name, result)
            if name == "eager" and not result.ok:
                raise UsageError(
                    f"The model file {base.model_path} does not run in eager mode on "
                    f"{base.device} ({result.failure_kind}: {result.error}). Nothing can be "
                    "verified without the eager baseline; fix the model file or the options."
                )
            if name == "config" and not result.ok:
                return rounds
    return rounds


def _run_cold(runner: TrialRunner, base: TrialSpec, config: CompileConfig | None) -> TrialResult:
    """One trial in a private, empty kernel cache: its compile time is the cold one."""
    with tempfile.TemporaryDirectory(prefix="autotune-verify-") as cache:
        spec = replace(
            base,
            config=config.to_dict() if config is not None else None,
            cache_dir=cache,
            relaxed_numerics=config is not None and _relaxes_numerics(config),
        )
        return runner.run(spec)


def _relaxes_numerics(config: CompileConfig) -> bool:
    """A numerics knob outside torch's default can only come from a search that allowed it,
    which held the config to the looser correctness gate; verify holds it to the same."""
    from autotune.space._validate import NUMERICS_KNOBS

    present = {f"inductor.{k}" for k in config.options} | {f"dynamo.{k}" for k in config.dynamo}
    return bool(present & NUMERICS_KNOBS)


def _report(
    best: BestConfig, device: str, rounds: list[dict[str, TrialResult]], tolerance: float
) -> VerifyReport:
    noise = noise_floor([r["eager"] for r in rounds])
    tol = max(tolerance, noise or 0.0)
    claimed, measured = _claims(best), _measurements(best, rounds)
    verdict, reasons = _verdict(best, rounds, claimed, measured, tol)
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


def _verdict(
    best: BestConfig,
    rounds: list[dict[str, TrialResult]],
    claimed: dict[str, float | None],
    measured: dict[str, float | None],
    tol: float,
) -> tuple[str, list[str]]:
    failed = next((r["config"] for r in rounds if "config" in r and not r["config"].ok), None)
    if failed is not None:
        kind = "incorrect" if failed.failure_kind == "accuracy" else "broken"
        return kind, [f"the config failed here: {failed.failure_kind}: {failed.error}"]
    if best.decision == "do_not_compile":
        return _eager_verdict(measured, tol)
    claim, mine = _spread(claimed), _spread(measured)
    if claim is None or mine is None:
        return "ok", ["the config compiles and matches eager; the file claims no speedup"]
    said = f"{_x(mine)} eager, claimed {_x(claim)}"
    if is_slower(claim, mine, tol):
        why = "the interquartile ranges do not overlap and the median fell by more than"
        return "slower", [f"measured {said}: {why} {tol:.0%}"]
    if mine.median >= claim.median:
        return "ok", [f"measured {said}: the claim holds"]
    why = f"the interquartile ranges overlap or the median fell by less than {tol:.0%}"
    return "ok", [f"measured {said}: below the claim but within the noise ({why})"]


def _eager_verdict(measured: dict[str, float | None], tol: float) -> tuple[str, list[str]]:
    default = _spread(measured, "default_")
    if default is None:
        return "ok", ["default torch.compile does not run here: eager is still the right call"]
    said = f"default torch.compile measured {_x(default)} eager"
    if reliably_faster(default, tol):
        return "compile_now_faster", [
            f"{said}: reliably faster now (q1 > 1 and more than {tol:.0%}); search again"
        ]
    return "ok", [f"{said}: not reliably faster, eager is still the right call"]


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
    return found


def _environment_mismatches(best: BestConfig, eager: TrialResult) -> list[str]:
    from autotune.runtime.fingerprint import environment_mismatches

    return [
        f"environment: {line}"
        for line in environment_mismatches(best.environment, eager.environment)
    ]


def _spread(values: dict[str, float | None], prefix: str = "") -> Spread | None:
    median = values.get(f"{prefix}speedup_vs_eager")
    if median is None:
        return None
    q1, q3 = values.get(f"{prefix}speedup_vs_eager_q1"), values.get(f"{prefix}speedup_vs_eager_q3")
    return Spread(median, median if q1 is None else q1, median if q3 is None else q3)


def _vs_default(done: dict[str, TrialResult], chosen: str) -> float | None:
    """Through eager, as the search does: both were timed against eager side by side."""
    mine, default = Spread.of(done.get(chosen)), Spread.of(done.get("default"))
    return mine.median / default.median if mine and default else None


def _ok(result: TrialResult | None, name: str) -> float | None:
    return getattr(result, name) if result is not None and result.ok else None


def _median(values: Sequence[float | None]) -> float | None:
    found = [v for v in values if v is not None]
    return statistics.median(found) if found else None


def _x(s: Spread) -> str:
    return f"{s.median:.3f}x ({s.q1:.3f}x to {s.q3:.3f}x)"


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
            "latency_s": result.latency_median_s,
            "eager_latency_s": result.eager_latency_median_s,
            "compile_time_s": result.compile_time_s,
            "wall_time_s": result.wall_time_s,
        }
    entry["speedup_vs_default"] = _vs_default(done, chosen)
    return entry
