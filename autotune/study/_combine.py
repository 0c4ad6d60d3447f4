"""Combinations of the presets that win: once the baselines and presets have run, the presets
that each ran faster than default torch.compile are measured together (the best pairs, and all
of them where they combine) before the sampler draws at random.

Levers that pay on their own often pay more together, and the sampler finds them late: on the
AMX Xeon's levers suite (issue 45) bf16 autocast + freezing beat the best single preset by
1.17-1.20x on a Llama prefill and a ResNet, while 12 sampled trials shipped a preset on every
model. A combination is a tuned config like a sampled one (the decision holds it to the best
preset), measured once per study, in the queue after the presets, and counts against
``--trials``: at most a quarter of them go to combinations.

Then the sampler is told what the presets and combinations measured: each becomes a prior
(Optuna ``add_trial``, the user attribute ``autotune.prior``) with the params the sampler would
have drawn for it, so that TPE starts from where the levers won rather than from random draws.
A prior is no record of the study and counts against no budget.
"""

from __future__ import annotations

import itertools
import math
import warnings
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import optuna
from optuna.trial import FrozenTrial, TrialState

from autotune.space import Preset, SearchSpace
from autotune.storage import (
    COMBINATION_ATTR,
    PRESET_ATTR,
    PRESETS_TOLD_ATTR,
    PRIOR_ATTR,
    PRIOR_OF_ATTR,
)
from autotune.study._queue import run_waiting, whole_model_trials
from autotune.study._session import Session

__all__ = [
    "combinations", "combine_and_tell", "enqueue_combinations", "pending_combinations",
    "preset_of", "run_combinations", "tell_sampler", "winners",
]  # fmt: skip


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


def preset_of(space: SearchSpace, attrs: Mapping[str, Any]) -> Preset | None:
    """The preset a trial measures (its ``autotune.preset``), or the presets it combines as
    one (its ``autotune.combination``); None for any other trial."""
    if COMBINATION_ATTR in attrs:
        return space.combine(list(attrs[COMBINATION_ATTR]))
    return space.preset(str(attrs[PRESET_ATTR])) if PRESET_ATTR in attrs else None


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


def tell_sampler(session: Session) -> int:
    """Tells the sampler what every preset and combination measured, as priors, once per
    study and once none of them waits or runs; returns how many were told. A study with more
    than one objective (``--pareto``) is told nothing, as with ``--start-from``; nor is a
    preset whose config the space's params cannot express."""
    study = session.study
    if len(study.directions) != 1 or PRESETS_TOLD_ATTR in study.user_attrs:
        return 0
    trials = session.db(lambda: study.get_trials(deepcopy=False))
    fixed = [t for t in trials if {PRESET_ATTR, COMBINATION_ATTR} & set(t.user_attrs)]
    if not fixed or any(not t.state.is_finished() for t in fixed):
        return 0
    records = {r.trial_number: r for r in session.db(session.records.trials, session.name)}
    priors = []
    for t in fixed:
        record = records.get(t.number)
        preset = preset_of(session.space, t.user_attrs)
        if record is None or record.duplicate_of is not None or preset is None:
            continue
        params, distributions = session.space.preset_params(preset)
        # told only where the params say the config measured: a space that does not offer a
        # value the preset leaves to torch (dynamic "auto") cannot say it
        if params and session.space.config_from_params(params) == session.space.preset_config(
            preset
        ):
            priors.append(optuna.trial.create_trial(
                params=params, distributions=distributions,
                value=session.objective.score(record) or 0.0,
                user_attrs={PRIOR_ATTR: True, PRIOR_OF_ATTR: t.number},
            ))  # fmt: skip
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
        for prior in priors:
            session.db(study.add_trial, prior)
    session.db(study.set_user_attr, PRESETS_TOLD_ATTR, len(priors))
    if priors:
        session.events.on_note(
            f"the sampler is told what {len(priors)} presets and combinations measured (priors: "
            "no trials of the study, no budget)"
        )
    return len(priors)


def run_combinations(
    session: Session,
    run: Callable[[optuna.Trial], object],
    must_stop: Callable[[], bool],
    drain: Callable[[], None] = lambda: None,
) -> optuna.Trial | None:
    """After the presets: queues the winners' combinations, runs them until ``must_stop`` (a
    ``run`` that returns at once runs them on several jobs, ``drain`` waits for them), then
    tells the sampler; returns a trial asked that was none of them (for the caller to run)."""
    if must_stop():
        return None
    enqueue_combinations(session)
    early = run_waiting(session, pending_combinations, COMBINATION_ATTR, run, must_stop)
    drain()
    tell_sampler(session)
    return early


def combine_and_tell(session: Session) -> None:
    """Both steps, each once per study, for a process that asks its next trial while another
    process ran the last preset or combination."""
    enqueue_combinations(session)
    tell_sampler(session)
