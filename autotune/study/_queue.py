"""The queue every study starts with: eager and default torch.compile at each batch size it
searches (the baselines), then the space's presets, ahead of any sampled configuration."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import optuna
from optuna.trial import TrialState

from autotune.records import TrialRecord
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


def pending_presets(session: Session) -> int:
    """How many presets wait in the queue."""
    states = (TrialState.WAITING,)
    waiting = session.db(lambda: session.study.get_trials(deepcopy=False, states=states))
    return sum(PRESET_ATTR in t.user_attrs for t in waiting)


def run_queued(
    session: Session, run: Callable[[optuna.Trial], object], must_stop: Callable[[], bool]
) -> optuna.Trial | None:
    """Runs the waiting baselines, then the waiting presets (each compiles the whole model),
    until ``must_stop``: the scope probes come after them, so that a search that stops because
    compiling does not pay has probed nothing. Returns a trial asked that was neither (another
    process took the last one), for the caller to run once the scope plan is known."""
    waiting: list[tuple[Callable[[Session], object], str]] = [
        (pending_baselines, BASELINE_ATTR), (pending_presets, PRESET_ATTR),
    ]  # fmt: skip
    for pending, attr in waiting:
        while pending(session) and not must_stop():
            trial = session.ask()
            if attr not in trial.user_attrs:
                return trial
            run(trial)
    return None


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


# Below this third quartile of its paired rounds, a config ran clearly slower than eager.
CLEARLY_SLOWER_Q3 = 1.0


def clearly_slower(r: TrialRecord) -> bool:
    """Slower than eager in at least three of four paired rounds (its third quartile below
    1.0x); False for a trial without paired rounds."""
    q3 = r.speedup_vs_eager_q3
    return q3 is not None and q3 < CLEARLY_SLOWER_Q3


def compile_does_not_pay(session: Session) -> str | None:
    """Why sampling would be spent on nothing, or None: default torch.compile and every preset
    the study queued have run (at least one preset), and each ran clearly slower than eager
    (the third quartile of its paired rounds below 1.0x) or failed, while no sampled config
    ran yet. The sampled configs vary the same compiler on the same model, so the file will
    say do not compile; the search stops there. Only under the latency objective with
    screening on (``--no-prune`` searches on)."""
    settings = session.settings
    if not settings.prune or settings.objective != "latency":
        return None
    trials = session.db(lambda: session.study.get_trials(deepcopy=False))
    presets = [t for t in trials if PRESET_ATTR in t.user_attrs]
    sampled = [t for t in trials if not ({PRESET_ATTR, BASELINE_ATTR} & set(t.user_attrs))]
    if not presets or sampled or any(not t.state.is_finished() for t in presets):
        return None
    records = {r.trial_number: r for r in session.db(session.records.trials, session.name)}
    default = [r for r in records.values() if r.baseline == "default"]
    measured = default + [records[t.number] for t in presets if t.number in records]
    if not default or len(measured) < len(presets) + 1:
        return None
    timed = [r for r in measured if r.status == "ok" and r.speedup_vs_eager_q3 is not None]
    if not all(map(clearly_slower, timed)):
        return None
    best = max((r.speedup_vs_eager or 0.0 for r in measured if r.status == "ok"), default=0.0)
    which = "the preset" if len(presets) == 1 else f"all {len(presets)} presets"
    return (
        f"default torch.compile and {which} ran clearly slower than eager "
        f"(the best {best:.2f}x, each below 1.0x in three of four paired rounds): compiling "
        "does not pay on this model, so no configuration is sampled (--no-prune searches on)"
    )
