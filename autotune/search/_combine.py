"""Combinations of the presets that win: once the baselines and presets have run, the presets
that each ran faster than default torch.compile are measured together (the best pairs, and all
of them where they combine) before the sampler draws at random, and so is each of them beside
every preset that may pay only in its company.

Levers that pay on their own often pay more together, and the sampler finds them late: on the
AMX Xeon's levers suite (issue 45) bf16 autocast + freezing beat the best single preset by
1.17-1.20x on a Llama prefill and a ResNet, while 12 sampled trials shipped a preset on every
model. Some levers pay only beside another: on a Llama prefill in float32, freezing and
max-autotune's GEMM templates ran as fast as default compile (0.99x, on the 2-core AMD EPYC),
and freezing's weight prepacking is for bf16 GEMMs above all. So a winner is also combined with
each *partner*: a preset that ran within 5% of default compile with code of its own, or that the
budget left unmeasured; a preset that failed, ran clearly slower or generated code timed before
(the mode preset that generates default compile's code on a CPU) is no partner. Presets on two
backends do not combine: a backend's levers are its own (bf16 autocast around OpenVINO, which
has its own inference precision, left a Llama's outputs at cosine 0.85).

A combination is a tuned config like a sampled one (the decision holds it to the best
preset), measured once per study, in the queue after the presets, and counts against
``--trials``: at most a quarter of them go to combinations, the most promising first (the
product of their presets' speed-ups over default; a partner not measured counts as 1).

Then the sampler is told what the presets and combinations measured: each becomes a prior
(Optuna ``add_trial``, the user attribute ``autotune.prior``) with the params the sampler would
have drawn for it, so that TPE starts from where the levers won rather than from random draws.
A prior is no record of the study and counts against no budget.
"""

from __future__ import annotations

import itertools
import math
import warnings
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import optuna
from optuna.trial import FrozenTrial, TrialState

from autotune.records import TrialRecord
from autotune.search._queue import run_waiting, whole_model_trials
from autotune.search._session import Session
from autotune.space import Preset, SearchSpace
from autotune.storage import (
    COMBINATION_ATTR,
    PRESET_ATTR,
    PRESETS_TOLD_ATTR,
    PRIOR_ATTR,
    PRIOR_OF_ATTR,
)

__all__ = [
    "Levers", "combinations", "combine_and_tell", "enqueue_combinations", "levers",
    "pending_combinations", "preset_of", "run_combinations", "tell_sampler",
]  # fmt: skip


# A preset that ran within this share of default compile's speed may pay beside a winner: the
# spread of one process's median (the convnet's second process over its first: quartiles 0.937
# to 1.050, benchmarks/results/search_quality_cpu.md).
PARTNER_FLOOR = 0.95


@dataclass(frozen=True)
class Levers:
    """What the presets measured, for combining: each by name with its median over default
    torch.compile's, best first."""

    won: list[tuple[str, float]]
    """The presets that ran faster than default compile."""
    partners: list[tuple[str, float | None]]
    """The presets that may pay beside a winner: within :data:`PARTNER_FLOOR` of default
    compile with code of their own, then those the budget left unmeasured (None)."""


def levers(session: Session, trials: list[FrozenTrial]) -> Levers | None:
    """The winning presets and their partners; None while a preset or default compile has
    yet to run."""
    found = whole_model_trials(session, trials)
    if found is None:
        return None
    records = {r.trial_number: r for r in found[0]}
    measured: set[str] = set()
    won: list[tuple[str, float]] = []
    partners: list[tuple[str, float | None]] = []
    for t in trials:
        name, record = t.user_attrs.get(PRESET_ATTR), records.get(t.number)
        if name is None:
            continue
        measured.add(str(name))
        if record is None or record.status != "ok" or _timed_before(record):
            continue
        speedup = float(record.speedup_vs_default or 0.0)
        if speedup > 1.0:
            won.append((str(name), speedup))
        elif speedup >= PARTNER_FLOOR:
            partners.append((str(name), speedup))
    partners.sort(key=lambda p: -(p[1] or 0.0))
    partners += [(p.name, None) for p in session.space.presets if p.name not in measured]
    return Levers(sorted(won, key=lambda w: -w[1]), partners)


def _timed_before(record: TrialRecord) -> bool:
    """The trial reused another's measurement: the same config, or the same generated code."""
    return record.duplicate_of is not None or record.equivalent_of is not None


def combinations(space: SearchSpace, found: Levers, limit: int) -> list[tuple[Preset, list[str]]]:
    """Up to ``limit`` combinations, most promising first (the product of their presets'
    speed-ups over default): every pair of winners that combines, all of them (each added in
    order while it combines) where more than two do, and each winner with each partner. A
    combination setting exactly what a preset of the space sets is that preset, measured
    already, and is left out; so are presets that do not combine (see
    :meth:`~autotune.space.SearchSpace.combine`: two modes, or two backends)."""
    won = found.won
    if limit <= 0 or not won:
        return []
    pairs = [*itertools.combinations(won, 2), *itertools.product(won, found.partners)]
    scored: list[tuple[float, Preset, list[str]]] = []
    for (a, sa), (b, sb) in pairs:
        merged = space.combine([a, b])
        if merged is not None:
            scored.append((sa * (sb or 1.0), merged, [a, b]))
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
    run and been recorded; a note says what is measured, or once why nothing is."""
    trials = session.db(lambda: session.study.get_trials(deepcopy=False))
    if any(COMBINATION_ATTR in t.user_attrs for t in trials):
        return
    if not any(PRESET_ATTR in t.user_attrs for t in trials):
        return
    found = levers(session, trials)
    if found is None or not found.won or len(found.won) + len(found.partners) < 2:
        return
    limit = session.settings.trials // 4
    chosen = combinations(session.space, found, limit)
    for _, names in chosen:
        session.db(session.study.enqueue_trial, {}, {COMBINATION_ATTR: names})
    what = _measured(found)
    if chosen:
        listed = ", ".join(merged.name for merged, _ in chosen)
        session.events.on_note(f"combinations: measuring {listed} ({what})")
    else:
        # Nothing is queued, so each later trial asks again: the note is said once.
        why = "none of them combine" if limit else f"--trials {session.settings.trials} < 4"
        session.events.note_once(f"combinations: not measured, {why} ({what})")


def _measured(found: Levers) -> str:
    """``presets faster than default compile: a 1.88x; beside them: b 0.99x, c (not
    measured)``."""
    faster = ", ".join(f"{name} {speedup:.2f}x" for name, speedup in found.won)
    beside = ", ".join(
        f"{name} (not measured)" if speedup is None else f"{name} {speedup:.2f}x"
        for name, speedup in found.partners
    )
    return f"presets faster than default compile: {faster}" + (
        f"; beside them: {beside}" if beside else ""
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
