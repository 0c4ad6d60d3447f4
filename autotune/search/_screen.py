"""Screening spends a study's seconds where configurations can differ.

Three rules for the configurations the sampler draws; the first also for presets and their
combinations (baselines and start-from configs are always timed in full, and presets and
combinations time any new code in full, since the decision compares the others with them):

- **Same code, one timing.** A trial whose generated code is identical to a trial already
  measured (see autotune.trials._code) is compiled, checked against eager, and not timed: it
  takes that trial's measurement, is recorded as its equivalent, and Optuna is told the same
  value. It still counts toward ``--trials``: it compiled. A preset that generates default
  compile's code (``max-autotune-no-cudagraphs`` on the CPUs here) costs its compile only.
- **Successive halving.** Once the best trial so far is known, a trial times a first stage of
  a quarter of ``--measure-seconds`` (at least ten rounds), and goes on to the full timing
  only if its median speedup so far reaches the best's lower quartile: only the trials within
  reach of the best are timed in full.
- **Clearly slower stops early.** At any round from the tenth, a trial whose running median
  speedup is below the best's lower quartile with 95% confidence stops timing.

Either way the median it reached is its measurement: Optuna is told it as the value, which
ranks it where it belongs, and the decision still rests on the finalists' paired, re-measured
rounds. ``--no-prune`` turns both off. Only for objectives that rank trials by their speedup
at one batch size (latency, throughput): under ``amortized`` a slower steady state can still
win on compile time.
"""

from __future__ import annotations

import dataclasses

from autotune.records import TrialRecord
from autotune.storage import MEASUREMENTS, candidates
from autotune.trials import MeasureSettings, TrialResult

PRUNED_OBJECTIVES = ("latency", "throughput")
# What an equivalent trial takes from the trial that timed its code: the steady state.
_TIMED = (
    *MEASUREMENTS,
    "speedup_vs_eager_ci_low", "speedup_vs_eager_ci_high", "speedup_rounds",
    "eager_latency_iqr_s", "rounds",
    "calls_per_sample", "per_shape", "pruned",
)  # fmt: skip


def known_code(records: list[TrialRecord], batch_size: int | None) -> dict[str, int]:
    """The code identities the study has timed (at this batch size), each to the earliest
    trial that timed it."""
    known: dict[str, int] = {}
    for r in sorted(_timed(records, batch_size), key=lambda r: r.trial_number):
        code = r.result.get("code_hash")
        if code:
            known.setdefault(code, r.trial_number)
    return known


def stop_below(records: list[TrialRecord], objective: str, batch_size: int | None) -> float | None:
    """The speedup a sampled trial must be able to reach to keep timing: the lower quartile
    of the best trial measured so far at this batch size (default compile included); None
    when the objective does not rank by it or nothing compiled was measured yet."""
    if objective not in PRUNED_OBJECTIVES:
        return None
    best = max(_timed(records, batch_size), key=lambda r: r.speedup_vs_eager or 0.0, default=None)
    return best.speedup_vs_eager_q1 if best is not None else None


SCREEN_SHARE = 0.25  # successive halving's first stage: this share of --measure-seconds


def screen_seconds(measure: MeasureSettings) -> float:
    """Successive halving's first stage for a trial timing by ``measure``."""
    return measure.target_seconds * SCREEN_SHARE


def reuse_timing(result: TrialResult, timed: TrialRecord) -> TrialResult:
    """``result`` (compiled, checked, not timed) with the steady state of ``timed``, the trial
    that ran the same code."""
    earlier = TrialResult.from_dict(timed.result)
    taken = dataclasses.replace(result, **{name: getattr(earlier, name) for name in _TIMED})
    if earlier.traffic is not None:  # the steady state is the same code's; start-up its own
        taken.traffic = {**earlier.traffic, "startup_s": result.compile_time_s}
    return taken


def _timed(records: list[TrialRecord], batch_size: int | None) -> list[TrialRecord]:
    """Compiled trials that timed their own code and passed, at this batch size."""
    return [r for r in candidates(records) if r.batch_size == batch_size]
