"""The queue every study starts with: eager and default torch.compile at each batch size it
searches (the baselines), then the space's presets, ahead of any sampled configuration."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import optuna
from optuna.trial import FrozenTrial, TrialState

from autotune.records import TrialRecord
from autotune.scoring import clearly_slower
from autotune.search._session import Session
from autotune.settings import StudySettings
from autotune.storage import BASELINE_ATTR, BATCH_ATTR, PRESET_ATTR

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
    session: Session,
    run: Callable[[optuna.Trial], object],
    must_stop: Callable[[], bool],
    start: Callable[[optuna.Trial], object] | None = None,
    drain: Callable[[], None] = lambda: None,
) -> optuna.Trial | None:
    """Runs the waiting baselines with ``run``, then the waiting presets (each compiles the
    whole model) with ``start`` (default ``run``; a start that returns at once runs them on
    several jobs, and ``drain`` waits for them), until ``must_stop``: the scope probes come
    after them, so that a search that stops because compiling does not pay has probed
    nothing. Returns a trial asked that was neither (another process took the last one), for
    the caller to run once the scope plan is known."""
    early = run_waiting(session, pending_baselines, BASELINE_ATTR, run, must_stop)
    if early is not None:
        return early
    early = run_waiting(session, pending_presets, PRESET_ATTR, start or run, must_stop)
    drain()
    return early


def run_waiting(
    session: Session,
    pending: Callable[[Session], object],
    attr: str,
    run: Callable[[optuna.Trial], object],
    must_stop: Callable[[], bool],
) -> optuna.Trial | None:
    """Runs the waiting trials that carry ``attr`` while ``pending`` says some wait, until
    ``must_stop``; returns a trial asked that carries none (another process took the last)."""
    while pending(session) and not must_stop():
        trial = session.ask()
        try:
            theirs = attr not in trial.user_attrs  # a storage read: a stop may land in it
        except BaseException:
            session.fail(trial)
            raise
        if theirs:
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


def _timed(r: TrialRecord) -> bool:
    """Ran, matched eager and has paired rounds: the only kind of trial that says anything
    about speed. A failed trial (crash, hang, compile error, accuracy, ...) says nothing."""
    return r.status == "ok" and r.speedup_vs_eager_q3 is not None


def whole_model_trials(
    session: Session, trials: list[FrozenTrial] | None = None
) -> tuple[list[TrialRecord], int] | None:
    """The records of default torch.compile (at every batch size) and of every preset, each of
    which compiles the whole model, with how many presets there are, once all of them have
    run and been recorded; None before (another process may still run one). ``trials``: the
    study's, when the caller has read them already."""
    if trials is None:
        trials = session.db(lambda: session.study.get_trials(deepcopy=False))
    default = [t for t in trials if t.user_attrs.get(BASELINE_ATTR) == "default"]
    presets = [t for t in trials if PRESET_ATTR in t.user_attrs]
    if not default or any(not t.state.is_finished() for t in default + presets):
        return None
    records = {r.trial_number: r for r in session.db(session.records.trials, session.name)}
    measured = [records[t.number] for t in default + presets if t.number in records]
    if len(measured) < len(default) + len(presets):
        return None
    return measured, len(presets)


def _which(presets: int) -> str:
    """``default torch.compile and all 4 presets`` (or ``and the preset``, or alone)."""
    if not presets:
        return "default torch.compile"
    return "default torch.compile and " + (
        "the preset" if presets == 1 else f"all {presets} presets"
    )


def _failures(records: list[TrialRecord]) -> str:
    """``3 crash (the trial process died of SIGABRT), 1 compile_error (...)``: each kind of
    failure with how many trials met it and the first one's reason."""
    kinds: dict[str, list[TrialRecord]] = {}
    for r in records:
        kinds.setdefault(r.failure_kind or "failed", []).append(r)
    return ", ".join(
        f"{len(rs)} {kind} ({_reason(rs[0])})" if rs[0].error else f"{len(rs)} {kind}"
        for kind, rs in kinds.items()
    )


def _reason(r: TrialRecord) -> str:
    first = (r.error or "").strip().splitlines()[0] if r.error else ""
    return first if len(first) <= 80 else first[:79] + "…"


def whole_model_failed(session: Session) -> str | None:
    """What the search says, and does next, when default torch.compile and every preset failed
    on the whole model (no one of them timed): a part of the model breaks the compiler, so the
    scope search probes the parts (with ``--scope whole`` the sampler goes on with other
    configurations of the whole model). None otherwise."""
    found = whole_model_trials(session)
    if found is None or any(map(_timed, found[0])):
        return None
    measured, presets = found
    if session.settings.scope == "search":
        then = "probing the model's parts one by one, to compile those that work"
    else:
        then = (
            "sampling other configurations of the whole model (--scope search would probe "
            "its parts and compile those that work)"
        )
    return f"the whole model failed under {_which(presets)} ({_failures(measured)}): {then}"


def compile_does_not_pay(session: Session) -> str | None:
    """Why sampling would be spent on nothing, or None: default torch.compile and every preset
    the study queued have run (at least one preset) while no sampled config ran yet, at least
    one of them was timed, and each one timed ran clearly slower than eager (the third
    quartile of its paired rounds below 1.0x). A failed trial is no evidence either way: with
    the scope searched, a whole-model failure sends the search to the scope probes instead
    (a part may break the compiler where the rest pays). The sampled configs vary the same
    compiler on the same model, so the file will say do not compile; the search stops there.
    Only under the latency objective with screening on (``--no-prune`` searches on)."""
    settings = session.settings
    if not settings.prune or settings.objective != "latency":
        return None
    trials = session.db(lambda: session.study.get_trials(deepcopy=False))
    if any(not ({PRESET_ATTR, BASELINE_ATTR} & set(t.user_attrs)) for t in trials):
        return None  # a sampled config ran: too late to stop before sampling
    found = whole_model_trials(session, trials)
    if found is None or not found[1]:
        return None
    measured, presets = found
    timed = [r for r in measured if _timed(r)]
    failed = [r for r in measured if not _timed(r)]
    if not timed or not all(map(clearly_slower, timed)):
        return None
    if failed and settings.scope == "search":
        return None
    best = max(r.speedup_vs_eager or 0.0 for r in timed)
    if not failed:
        ran = f"{_which(presets)} ran clearly slower than eager"
        each = "each below 1.0x in three of four paired rounds"
    else:
        ran = (
            f"of {_which(presets)}, {len(timed)} ran, each clearly slower than eager, and "
            f"{len(failed)} failed ({_failures(failed)}), which says nothing of speed"
        )
        each = "each that ran below 1.0x in three of four paired rounds"
    return (
        f"{ran} (the best {best:.2f}x, {each}): compiling does not pay on this model, so no "
        "configuration is sampled (--no-prune searches on)"
    )
