"""``--pareto`` studies: the front after the search, and the config ``--pick`` chooses from it.

The rule never overrides the gates every study applies: a picked config must beat eager in
three of four paired rounds, and under the ``fastest`` goal it gives way to default
torch.compile when it does not beat it by more than the measured spread.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from autotune.decide._best import (
    against_default,
    do_not_compile,
    emit,
    refusal,
    spread,
    why_none,
)
from autotune.decide._finalists import Finalist, finalist_records
from autotune.records import TrialRecord
from autotune.runtime.config import BestConfig
from autotune.scoring import Objective, PickRule, axis_value, front
from autotune.settings import StudySettings
from autotune.storage import candidates, eager_baseline


@dataclass
class Picked:
    """The file to write, the front it was picked from, and the picked record (None: eager)."""

    best: BestConfig
    front: list[TrialRecord]
    chosen: TrialRecord | None


def study_front(
    pool: list[TrialRecord], records: list[TrialRecord], axes: list[str]
) -> list[TrialRecord]:
    """The front of ``pool`` together with the study's eager baseline (1.0x, no compile)."""
    eager = eager_baseline(records)
    return front(pool + ([eager] if eager is not None else []), axes)


def pareto_finalists(
    records: list[TrialRecord], axes: list[str], rule: PickRule, top: int
) -> list[TrialRecord]:
    """The front's configs the rule admits, its best ``top`` first, plus default compile;
    none when eager dominates every config.

    The search's compile times are optimistic (its trials share a kernel cache), so a config
    the rule rejects here would not pass it cold either; the others are re-measured."""
    points = study_front(candidates(records), records, axes)
    picked = rule.ranked([r for r in points if r.baseline is None])[:top]
    default = [r for r in records if r.baseline == "default" and r.status == "ok"]
    return picked + default if picked else []


def pick_from_front(
    records: list[TrialRecord],
    settings: StudySettings,
    study: str,
    storage: str,
    rule: PickRule,
    finalists: list[Finalist] | None = None,
) -> Picked:
    """Chooses by ``rule`` from the front of the finalists (or of the search) and eager."""
    axes = settings.pareto
    assert axes, "pick_from_front is for --pareto studies"
    objective = Objective()  # the gates judge speed
    fresh = {f.searched.trial_number: f for f in finalists or [] if f.ok}
    pool = (
        finalist_records(finalists, settings.charge_warm_compile)
        if finalists
        else candidates(records)
    )
    points = study_front(pool, records, axes)

    def eager_wins(reason: str, best: TrialRecord | None = None) -> Picked:
        made = do_not_compile(records, settings, study, storage, reason, best)
        return Picked(_sourced(made, axes, rule, points), points, None)

    if not pool:
        return eager_wins(why_none(records))
    ranked = rule.ranked(points)
    if not ranked:
        return eager_wins(f"no point of the Pareto front meets --pick {rule.describe()}")
    refused: list[str] = []
    for r in ranked:
        if r.baseline == "eager":
            return eager_wins(_eager_picked(rule, refused))
        why = refusal(r, objective, records)
        if why is None:
            break
        refused.append(why)
    else:
        return eager_wins("; ".join(refused), ranked[0])
    chosen, note = r, ""
    if rule.goal == "fastest":
        admitted = [p for p in pool if rule.admits(p)]
        best, note = against_default(r, admitted, objective, records)
        if best is None:
            return eager_wins(note, r)
        chosen = best
    reason = (
        f"trial {chosen.trial_number} was picked from the Pareto front "
        f"({', '.join(axes)}; {len(points)} points) by --pick {rule.describe()}: "
        f"{spread(chosen)}, compile {axis_value(chosen, 'compile') or 0:.1f} s{note}"
    )
    made = emit(chosen, reason, objective, pool, records, settings, study, storage, fresh)
    return Picked(_sourced(made, axes, rule, points), points, chosen)


def _eager_picked(rule: PickRule, refused: list[str]) -> str:
    why = f"--pick {rule.describe()} chooses eager (no compile) from the Pareto front"
    if refused:
        why += f" once the configs before it were refused ({'; '.join(refused)})"
    return why


def _sourced(
    made: BestConfig, axes: list[str], rule: PickRule, points: list[TrialRecord]
) -> BestConfig:
    made.workload["objective"] = "pareto:" + ",".join(axes)
    made.source["pick"] = rule.describe()
    made.source["pick_rule"] = dataclasses.asdict(rule)  # what verify checks, as data
    made.source["pareto_front"] = [r.trial_number for r in points]
    return made
