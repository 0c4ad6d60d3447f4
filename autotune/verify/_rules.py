"""The verdict rules of ``autotune verify``: when a claim fails, when the machine is too noisy
to judge one, and when eager is no longer the right call. Speedups are
:class:`~autotune.trials.Spread` s: a median of paired per-round ratios, its quartiles and its
95% interval, as every trial measures them, pooled over repeats."""

from __future__ import annotations

import statistics
from collections.abc import Sequence

from autotune.runtime.config import BestConfig
from autotune.trials import Spread, TrialResult

VERDICT_EXIT = {
    "ok": 0, "slower": 1, "behind_default": 1, "incorrect": 1, "broken": 1,
    "compile_now_faster": 1, "too_noisy": 3,
}  # fmt: skip
DEFAULT_TOLERANCE = 0.05
# The noise floor raises the tolerance up to this (or to --tolerance, if larger); a machine
# noisier than that cannot judge a claim, and verify says so instead of passing it.
MAX_TOLERANCE = 0.10
# Each measurement runs once by default; more repeats are pooled (their rounds).
DEFAULT_REPEATS = 1


def over_claims(claimed: float, measured: Spread, tolerance: float) -> bool:
    """A claim fails when it lies above the measured median's 95% interval by more than
    ``tolerance`` (a fraction of the interval's upper end)."""
    return claimed > measured.high * (1.0 + tolerance)


def under_claims(claimed: float, measured: Spread, tolerance: float) -> bool:
    """The claim lies below the measured interval by more than ``tolerance``: it holds, and
    understates (reported, never a failure)."""
    return claimed < measured.low * (1.0 - tolerance)


def tolerance_for(tolerance: float, noise: float | None) -> tuple[float, bool]:
    """The tolerance a verdict applies, and whether the machine is too noisy to judge: the
    noise floor raises ``tolerance`` up to :data:`MAX_TOLERANCE` (or ``tolerance``, if larger);
    a floor beyond that cap is too noisy."""
    cap = max(MAX_TOLERANCE, tolerance)
    floor = noise or 0.0
    return min(max(tolerance, floor), cap), floor > cap


def reliably_faster(measured: Spread, tolerance: float) -> bool:
    """Faster than eager in at least three of four paired rounds (q1 > 1, the rule by which
    the search emits a compile decision) and by more than ``tolerance`` at the median."""
    return measured.q1 > 1.0 and measured.median > 1.0 + tolerance


def noise_floor(eager_vs_eager: Sequence[TrialResult]) -> float | None:
    """How far a median measured here strays when nothing differs: eager timed against
    itself, per trial the larger of its median's distance from 1 and the half-width of the
    median's 95% interval (half the interquartile range for a result that gives no interval);
    the median over repeats. A model whose single calls vary widely has wide quartiles and
    still a median known to a few percent: the verdicts compare medians."""
    spreads = [s for s in map(Spread.of, eager_vs_eager) if s is not None]
    if not spreads:
        return None
    return statistics.median(max(abs(s.median - 1.0), (s.high - s.low) / 2) for s in spreads)


def judge(
    best: BestConfig,
    repeats: Sequence[dict[str, TrialResult]],
    claimed: dict[str, float | None],
    measured: dict[str, Spread | None],
    tol: float,
    too_noisy: bool,
) -> tuple[str, list[str]]:
    """The verdict and its reasons, by rules in this order: a failed config run; a file that
    claims nothing; a machine too noisy to judge; a do_not_compile file's call; the speedup
    over eager; the lead over default torch.compile."""
    failed = next((r["config"] for r in repeats if "config" in r and not r["config"].ok), None)
    if failed is not None:
        kind = "incorrect" if failed.failure_kind == "accuracy" else "broken"
        return kind, [f"the config failed here: {failed.failure_kind}: {failed.error}"]
    claim, mine = claimed.get("speedup_vs_eager"), measured.get("config")
    if best.config is not None and (claim is None or mine is None):
        return "ok", ["the config compiles and matches eager; the file claims no speedup"]
    if too_noisy:
        return "too_noisy", [
            f"eager timed against itself strays more than {tol:.0%} from 1.0 here, so no "
            "claim can be judged: verify on a quiet machine (nothing else running), or raise "
            "--tolerance to accept a coarser verdict"
        ]
    if best.config is None or claim is None or mine is None:
        return _eager_verdict(measured.get("default"), tol)
    said = f"measured {mine.said()} eager, claimed {claim:.3f}x"
    if over_claims(claim, mine, tol):
        return "slower", [f"{said}: the claim lies above the interval by more than {tol:.0%}"]
    reasons = [
        f"{said}: "
        + ("the claim understates it" if under_claims(claim, mine, tol) else "the claim holds")
    ]
    lead, default = claimed.get("speedup_vs_default"), measured.get("default")
    if lead is None or default is None:
        return "ok", reasons
    ahead = mine.ratio(default)
    said = f"measured {ahead.said()} default torch.compile, claimed {lead:.3f}x"
    if over_claims(lead, ahead, tol):
        return "behind_default", [
            f"{said}: the claimed lead lies above the interval by more than {tol:.0%}"
        ]
    return "ok", [*reasons, f"{said}: the lead holds"]


def _eager_verdict(default: Spread | None, tol: float) -> tuple[str, list[str]]:
    if default is None:
        return "ok", ["default torch.compile does not run here: eager is still the right call"]
    said = f"default torch.compile measured {default.said()} eager"
    if reliably_faster(default, tol):
        return "compile_now_faster", [
            f"{said}: reliably faster now (q1 > 1 and more than {tol:.0%}); search again"
        ]
    return "ok", [f"{said}: not reliably faster, eager is still the right call"]
