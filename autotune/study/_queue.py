"""The queue every study starts with: eager and default torch.compile at each batch size it
searches (the baselines), then the space's presets, ahead of any sampled configuration."""

from __future__ import annotations

from typing import Any

from optuna.trial import TrialState

from autotune.study._attrs import BASELINE_ATTR, BATCH_ATTR, PRESET_ATTR
from autotune.study._session import Session
from autotune.study._settings import StudySettings

BASELINES = ("eager", "default")


def batches(settings: StudySettings) -> list[int | None]:
    """The batch sizes the study measures (None: the model file's own inputs)."""
    return list(settings.batch_sizes) if settings.batch_sizes else [None]


def pending_baselines(session: Session) -> list[tuple[str, int | None]]:
    """The baselines waiting in the queue, as (name, batch size)."""
    states = (TrialState.WAITING,)
    waiting = session.db(lambda: session.study.get_trials(deepcopy=False, states=states))
    return [
        (t.user_attrs[BASELINE_ATTR], t.user_attrs.get(BATCH_ATTR))
        for t in waiting
        if BASELINE_ATTR in t.user_attrs
    ]


def enqueue_missing_baselines(session: Session) -> None:
    """Eager and default torch.compile are measured first in every study, at every batch
    size it searches (and again when an earlier attempt did not succeed). A baseline
    running or waiting anywhere is not enqueued again; two processes that race here both
    enqueue it, and the second trial then reuses the first one's result."""
    records = session.db(session.records.baselines, session.name)
    done = {(r.baseline, r.batch_size) for r in records if r.status == "ok"}
    running = {
        (t.user_attrs[BASELINE_ATTR], t.user_attrs.get(BATCH_ATTR))
        for t in session.running()
        if BASELINE_ATTR in t.user_attrs
    }
    pending = set(pending_baselines(session)) | running
    for batch in batches(session.settings):
        for name in BASELINES:
            if (name, batch) not in done and (name, batch) not in pending:
                attrs: dict[str, Any] = {BASELINE_ATTR: name, BATCH_ATTR: batch}
                session.db(session.study.enqueue_trial, {}, attrs)


def enqueue_presets(session: Session) -> None:
    """The space's presets (each mode on its own, then its ``[presets]``) are queued once
    per study, after the baselines, so that the tuned config is measured against what a
    user would try by hand; at most half the trial budget goes to them."""
    presets = list(session.space.presets)
    if not presets:
        return
    trials = session.db(lambda: session.study.get_trials(deepcopy=False))
    if any(PRESET_ATTR in t.user_attrs for t in trials):
        return
    room = session.settings.trials // 2
    chosen, left = presets[:room], presets[room:]
    for preset in chosen:
        session.db(session.study.enqueue_trial, {}, {PRESET_ATTR: preset.name})
    if chosen:
        names = ", ".join(p.name for p in chosen)
        session.events.on_note(f"presets: measuring {names} (after the baselines)")
    if left:
        session.events.on_note(
            f"presets: {', '.join(p.name for p in left)} not measured: the budget of "
            f"{session.settings.trials} trials gives at most half of them to presets"
        )
