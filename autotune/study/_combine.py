"""Combinations of the presets that win: once the baselines and presets have run, the presets
that each ran faster than default torch.compile are measured together (the best pairs, and all
of them where they combine) before the sampler draws at random.

Levers that pay on their own often pay more together, and the sampler finds them late: on the
AMX Xeon's levers suite (issue 45) bf16 autocast + freezing beat the best single preset by
1.17-1.20x on a Llama prefill and a ResNet, while 12 sampled trials shipped a preset on every
model. A combination is a tuned config like a sampled one (the decision holds it to the best
preset), measured once per study, in the queue after the presets, and counts against
``--trials``: at most a quarter of them go to combinations.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence

from optuna.trial import FrozenTrial, TrialState

from autotune.space import SearchSpace
from autotune.space._presets import Preset
from autotune.storage import COMBINATION_ATTR, PRESET_ATTR
from autotune.study._queue import whole_model_trials
from autotune.study._session import Session

__all__ = ["combinations", "enqueue_combinations", "pending_combinations", "winners"]


def winners(session: Session, trials: list[FrozenTrial]) -> list[tuple[str, float]] | None:
    """The presets that ran faster than default torch.compile (their median over default's),
    best first, with that speed-up; None while a preset or default compile has yet to run."""
    found = whole_model_trials(session, trials)
    if found is None:
        return None
    records = {r.trial_number: r for r in found[0]}
    won = []
    for t in trials:
        name, record = t.user_attrs.get(PRESET_ATTR), records.get(t.number)
        if name is None or record is None or record.status != "ok":
            continue
        if record.duplicate_of is None and (record.speedup_vs_default or 0.0) > 1.0:
            won.append((str(name), float(record.speedup_vs_default or 0.0)))
    return sorted(won, key=lambda w: -w[1])


def combinations(
    space: SearchSpace, won: Sequence[tuple[str, float]], limit: int
) -> list[tuple[Preset, list[str]]]:
    """Up to ``limit`` combinations of the winning presets, most promising first (the product
    of their speed-ups over default): every pair that combines, and all of them (each added
    in order while it combines) where more than two do. A combination setting exactly what
    a preset of the space sets is that preset, measured already, and is left out."""
    if limit <= 0 or len(won) < 2:
        return []
    scored: list[tuple[float, Preset, list[str]]] = []
    for (a, sa), (b, sb) in itertools.combinations(won, 2):
        merged = space.combine([a, b])
        if merged is not None:
            scored.append((sa * sb, merged, [a, b]))
    if len(won) > 2:
        names = [won[0][0]]
        for name, _ in won[1:]:
            if space.combine([*names, name]) is not None:
                names.append(name)
        merged = space.combine(names) if len(names) > 2 else None
        if merged is not None:
            speedups = dict(won)
            scored.append((math.prod(speedups[n] for n in names), merged, names))
    known = [dict(p.values) for p in space.presets]
    out: list[tuple[Preset, list[str]]] = []
    for _, merged, names in sorted(scored, key=lambda s: -s[0]):
        if dict(merged.values) not in known:
            known.append(dict(merged.values))
            out.append((merged, names))
    return out[:limit]


def pending_combinations(session: Session) -> int:
    """How many combinations wait in the queue."""
    states = (TrialState.WAITING,)
    waiting = session.db(lambda: session.study.get_trials(deepcopy=False, states=states))
    return sum(COMBINATION_ATTR in t.user_attrs for t in waiting)


def enqueue_combinations(session: Session) -> None:
    """Queues the combinations of the winning presets, once per study, when every preset has
    run and been recorded; a note says what is measured, or why nothing is."""
    trials = session.db(lambda: session.study.get_trials(deepcopy=False))
    if any(COMBINATION_ATTR in t.user_attrs for t in trials):
        return
    if not any(PRESET_ATTR in t.user_attrs for t in trials):
        return
    won = winners(session, trials)
    if won is None or len(won) < 2:
        return
    limit = session.settings.trials // 4
    chosen = combinations(session.space, won, limit)
    for _, names in chosen:
        session.db(session.study.enqueue_trial, {}, {COMBINATION_ATTR: names})
    faster = ", ".join(f"{name} {speedup:.2f}x" for name, speedup in won)
    if chosen:
        listed = ", ".join(merged.name for merged, _ in chosen)
        session.events.on_note(
            f"combinations: measuring {listed} (presets faster than default compile: {faster})"
        )
    else:
        why = "none of them combine" if limit else f"--trials {session.settings.trials} < 4"
        session.events.on_note(
            f"combinations: not measured, {why} (presets faster than default compile: {faster})"
        )
