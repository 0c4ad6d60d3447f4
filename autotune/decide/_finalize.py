"""Choose a study's winner and write the best-config file: one function for every process that
may do it (the one that searched, the last worker, a later ``autotune finalize``).

Everything comes from the storage: the study's stored settings (objective, --pick rule, how
many finalists, their precision) and its records. The finalists' measurements are recorded
too, round by round, so a later call decides again from what is recorded and re-measures only
when asked to (``remeasure``) or when the study's finalists changed since.
"""

from __future__ import annotations

import datetime as dt
import os
from collections.abc import Callable, Collection
from dataclasses import dataclass

from autotune._deadline import Deadline, DeadlineReached
from autotune._scratch import owner_gone, process_owner
from autotune.decide._best import best_config
from autotune.decide._confirm import (
    Confirmation,
    applies,
    confirm_choice,
    recorded_confirmation,
    settle,
)
from autotune.decide._finalists import (
    Finalist,
    OnResult,
    imprecise_round,
    pick_finalists,
    remeasure,
)
from autotune.decide._pick import pareto_finalists, pick_from_front
from autotune.decide._presets import measured_presets
from autotune.errors import UsageError
from autotune.records import Claim, FinalistRound, RecordStore, TrialRecord, redact_url
from autotune.runtime.config import BestConfig, ConfigError
from autotune.scoring import Objective, PickRule, clearly_slower
from autotune.settings import StudySettings, local_device_name, local_settings
from autotune.ship import existing_file, vouch, write_entry
from autotune.storage import (
    beating,
    eager_baseline,
    grace_s,
    open_optuna_storage,
    recover_stale,
    settings_from_dict,
)
from autotune.trials import TrialResult, TrialRunner

# A finalist run takes about its search trial's wall time, cold compiles and finer timing on
# top: 1.23x in the CPU decode suite's study (a round of 4 finalists ran 362 s where 2.0x
# estimated 588 s), and the levers suite's rounds ran about 30% under 2.0x (issue 45). At 2.0x
# a round that fits was skipped; 1.5x covers both with room.
_RUN_ESTIMATE_FACTOR = 1.5
FINALISTS_CLAIM = "finalists"


@dataclass
class Decision:
    """What :func:`finalize` decided, and from what.

    Attributes:
        best: The best-config file's content (written to ``out``, when given).
        records: The study's trials.
        finalists: The finalists the decision was made on (None: on the search's trials).
        round: The recorded round they come from.
        remeasured: Whether this call measured them (False: read from the records).
        front: ``--pareto`` studies: the front the config was picked from.
        chosen: ``--pareto`` studies: the picked record (None: eager).
        confirmation: The confirmation round the claim comes from (None: none ran).
    """

    best: BestConfig
    records: list[TrialRecord]
    finalists: list[Finalist] | None = None
    round: FinalistRound | None = None
    remeasured: bool = False
    front: list[TrialRecord] | None = None
    chosen: TrialRecord | None = None
    confirmation: Confirmation | None = None


def finalize(
    storage: str,
    study: str,
    out: str | os.PathLike[str] | None = None,
    *,
    remeasure_finalists: bool = False,
    deadline: Deadline = Deadline(),  # noqa: B008 - frozen
    runner: TrialRunner | None = None,
    on_note: Callable[[str], None] = lambda note: None,
    device: str | None = None,
    model_path: str | None = None,
    for_device: str | None = None,
    trust_model_path: bool = False,
    allow_version_mismatch: bool = False,
    allow_unsafe_knobs: Collection[str] = (),
) -> Decision:
    """Chooses the winner of ``study`` in ``storage`` and writes it to ``out``.

    The study's best candidates and default torch.compile are re-measured cold and warm in
    fresh processes on ``device`` (default: the study's), unless a finished round of the same
    finalists is recorded and ``remeasure_finalists`` is False; one process does so at a time
    (a claim in the storage). With too little of ``deadline`` left, the finalists are skipped
    and the choice is made on the search's measurements, with a note saying so.

    Measuring finalists runs the model file ``model_path`` (the operator names it; the study's
    row never does) and their configs with only the knobs refused from data that
    ``allow_unsafe_knobs`` names (see :mod:`autotune.runtime.safety`).

    On a study whose trials ran on several kinds of hardware, only the trials of
    ``for_device`` (a device name, e.g. ``NVIDIA H100 80GB HBM3``; default: this machine's)
    are candidates: the file is for that hardware.

    Raises:
        UsageError: The storage holds no such study, it has no eager baseline yet, another
            process is measuring its finalists, or this process may not run its model file.
    """
    with RecordStore(storage) as store:
        settings = _settings(store, storage, study)
        _recover(storage, study, store, settings)

        def local() -> StudySettings:
            return local_settings(
                study, settings, device or settings.device, model_path,
                trust_model_path=trust_model_path,
                allow_version_mismatch=allow_version_mismatch, on_note=on_note,
            )  # fmt: skip

        held = Held(store, storage, study, settings, local, tuple(allow_unsafe_knobs))
        return finalize_held(held, out, remeasure_finalists, deadline, runner, on_note, device,
                             for_device)  # fmt: skip


@dataclass(frozen=True)
class Held:
    """The study a decision is made for, however it was opened: its records, where it is
    stored, its name and settings, the settings this process runs its finalists under
    (checked when first needed), and the knobs refused from data its operator vouches for."""

    store: RecordStore
    storage: str
    study: str
    settings: StudySettings
    local: Callable[[], StudySettings]
    allow_unsafe_knobs: tuple[str, ...]


def finalize_held(
    held: Held,
    out: str | os.PathLike[str] | None,
    remeasure_finalists: bool,
    deadline: Deadline,
    runner: TrialRunner | None,
    on_note: Callable[[str], None],
    device: str | None,
    for_device: str | None,
) -> Decision:
    """The decision for the study ``held`` (see :func:`finalize`), written to ``out``."""
    if out is not None:
        _check_out(out)
    store, study, settings = held.store, held.study, held.settings
    everywhere = store.trials(study)
    records = _for_device(everywhere, settings, device, for_device, on_note)
    _require_eager(study, everywhere, "; run its search (autotune search) first")
    chosen = _candidates(records, settings)
    if _all_clearly_slower(chosen, settings):
        on_note(
            "finalists skipped: every candidate ran clearly slower than eager in the "
            "search's paired rounds, so re-measuring them cannot make compiling pay"
        )
        chosen = []
    finalists: list[Finalist] | None = None
    confirmation: Confirmation | None = None
    found = _recorded(store, study, chosen, remeasure_finalists) if chosen else None
    if found is not None:
        on_note(_reused_note(found, chosen))
        finalists = _from_round(found, records)
        choice = _decide(records, settings, study, held.storage, finalists).best
        confirmation = recorded_confirmation(found, finalists, choice, settings)
    elif chosen:

        def then(done: list[Finalist], record: OnResult) -> Confirmation | None:
            choice = _decide(records, settings, study, held.storage, done).best
            return confirm_choice(
                choice, done, held.local(), runner, record, deadline, on_note,
                held.allow_unsafe_knobs, _RUN_ESTIMATE_FACTOR,
            )  # fmt: skip

        measured = _measure(store, study, chosen, held.local(), runner, deadline, on_note,
                            held.allow_unsafe_knobs, then)  # fmt: skip
        if measured is not None:
            finalists, confirmation = measured
    decision = _decide(records, settings, study, held.storage, finalists, confirmation)
    decision.round = found
    decision.remeasured = finalists is not None and found is None
    made = decision.best
    if made.config is not None:  # a row is data: its config passes the file's rules first
        vouch(
            made, held.allow_unsafe_knobs, f"trial {made.source.get('trial')} of study {study!r}"
        )
    if out is not None:
        written = write_entry(out, decision.best)
        if not written.startswith("wrote "):  # a new file is said by the caller's summary
            on_note(written)
    return decision


def _check_out(out: str | os.PathLike[str]) -> None:
    """An existing ``out`` must be a best-config file: the entry for this machine is written
    into it (checked before any finalist is measured)."""
    try:
        existing_file(out)
    except ConfigError as e:
        raise UsageError(str(e)) from e


def decide(storage: str, study: str, store: RecordStore | None = None) -> Decision:
    """What :func:`finalize` would decide now, from the records alone: nothing is measured,
    recovered or written, so a report may call it on a study that is still running.

    The finalists' measurements are those of the latest finished round of the finalists the
    study has now; when there is none (not measured yet, or the finalists changed since), the
    decision is made on the search's measurements and ``Decision.finalists`` is None.

    Raises:
        UsageError: The storage holds no such study, or it has no eager baseline yet.
    """
    if store is None:
        with RecordStore(storage) as opened:
            return decide(storage, study, opened)
    settings = _settings(store, storage, study)
    everywhere = store.trials(study)
    records = _for_device(everywhere, settings, None, None, lambda note: None)
    _require_eager(study, everywhere)
    chosen = finalist_candidates(records, settings)
    found = _recorded(store, study, chosen, False) if chosen else None
    finalists = _from_round(found, records) if found is not None else None
    confirmation = None
    if found is not None and finalists is not None:
        choice = _decide(records, settings, study, storage, finalists).best
        confirmation = recorded_confirmation(found, finalists, choice, settings)
    decision = _decide(records, settings, study, storage, finalists, confirmation)
    decision.round = found
    return decision


def _settings(store: RecordStore, storage: str, study: str) -> StudySettings:
    stored = store.study_settings(study)
    if stored is None:
        raise UsageError(
            f"The storage {redact_url(storage)} holds no study named {study!r} (`autotune "
            "studies --storage URL` lists those it holds); run `autotune search MODEL.py "
            "--study NAME --storage URL` to create it."
        )
    return settings_from_dict(stored)


def _recover(storage: str, study: str, store: RecordStore, settings: StudySettings) -> None:
    """Trials left RUNNING by processes that died are finished from their record, or failed,
    before the decision: it sees everything that was measured, and nothing stays RUNNING."""
    import optuna

    optuna_study = optuna.load_study(study_name=study, storage=open_optuna_storage(storage))
    recover_stale(optuna_study, store, Objective.of(settings), settings.pareto)


def _for_device(
    records: list[TrialRecord],
    settings: StudySettings,
    device: str | None,
    for_device: str | None,
    on_note: Callable[[str], None],
) -> list[TrialRecord]:
    """The records of one kind of hardware, when the study's trials ran on several. A trial
    killed before it said where it ran (at its compile budget, say) names no device: it is not
    another kind, and it stays with the records the file is chosen from."""
    names = {name for r in records if (name := r.environment.get("device_name"))}
    if for_device is None and len(names) <= 1:
        return records
    target = for_device or local_device_name(device or settings.device)
    mine = [r for r in records if r.environment.get("device_name") in (target, None)]
    others = sorted(str(n) for n in names if n != target)
    on_note(
        f"the study's trials ran on {len(names)} kinds of device; the file is for {target!r} "
        f"({len(mine)} of {len(records)} trials; --for-device picks another of: "
        f"{', '.join(others) or 'none'})"
    )
    return mine


def finalist_candidates(records: list[TrialRecord], settings: StudySettings) -> list[TrialRecord]:
    """:func:`_candidates`, none when every one ran clearly slower than eager (the third
    quartile of its paired rounds below 1.0x) under the latency objective with screening on
    (``--no-prune`` re-measures them all the same): re-measuring cannot make compiling pay,
    and the file says do not compile on the search's rounds."""
    chosen = _candidates(records, settings)
    return [] if _all_clearly_slower(chosen, settings) else chosen


def _all_clearly_slower(chosen: list[TrialRecord], settings: StudySettings) -> bool:
    screened = settings.prune and settings.objective == "latency"
    return bool(chosen) and screened and all(map(clearly_slower, chosen))


def _candidates(records: list[TrialRecord], settings: StudySettings) -> list[TrialRecord]:
    """The records :func:`finalize` re-measures: the best ``settings.finalists`` configs (for
    ``--pareto``, those on the front the --pick rule admits) and default compile; none when
    ``settings.finalists`` is 0 or no compiled config qualifies. No configuration is in it
    twice (its key: the config, and the batch size where searched). The best preset of the
    space measured is always among them, so the winner is re-measured beside it; with
    ``preset_finalists="all"``, every measured preset is."""
    if not settings.finalists:
        return []
    if settings.pareto:
        rule = PickRule.parse(settings.pick or "fastest")
        chosen = pareto_finalists(records, settings.pareto, rule, settings.finalists)
    else:
        chosen = pick_finalists(
            records, Objective.of(settings), settings.finalists, settings.accuracy is not None
        )
    presets = measured_presets(records, settings)
    if chosen:
        chosen += presets if settings.preset_finalists == "all" else presets[:1]
    unique: dict[str, TrialRecord] = {}
    for r in chosen:
        unique.setdefault(r.config_hash, r)
    return list(unique.values())


def _recorded(
    store: RecordStore, study: str, chosen: list[TrialRecord], remeasure_finalists: bool
) -> FinalistRound | None:
    """The latest finished round of exactly these finalists, unless asked to measure anew."""
    if remeasure_finalists:
        return None
    wanted = [r.trial_number for r in chosen]
    done = [r for r in store.finalist_rounds(study) if r.done and r.finalists == wanted]
    return done[-1] if done else None


def _reused_note(found: FinalistRound, chosen: list[TrialRecord]) -> str:
    when = (found.finished_at or found.created_at).strftime("%Y-%m-%d %H:%M UTC")
    names = ", ".join(f"[{r.baseline}]" if r.baseline else f"#{r.trial_number}" for r in chosen)
    return (
        f"finalists {names}: using their cold and warm measurements of {when} (recorded "
        f"round {found.id}, by {found.owner}); pass --remeasure to measure them again"
    )


def _from_round(found: FinalistRound, records: list[TrialRecord]) -> list[Finalist]:
    by_number = {r.trial_number: r for r in records}
    return [
        Finalist(
            by_number[n],
            TrialResult.from_dict(found.results[(n, "cold")]),
            TrialResult.from_dict(found.results[(n, "warm")]),
        )
        for n in found.finalists
    ]


def _measure(
    store: RecordStore,
    study: str,
    chosen: list[TrialRecord],
    settings: StudySettings,
    runner: TrialRunner | None,
    deadline: Deadline,
    on_note: Callable[[str], None],
    allow_unsafe_knobs: Collection[str],
    then: Callable[[list[Finalist], OnResult], Confirmation | None],
) -> tuple[list[Finalist], Confirmation | None] | None:
    """Measures a new round and records it as it goes, then, still holding the round, its
    confirmation (``then``: recorded in the same round); None when the deadline does not leave
    the time the finalists need (the decision is then made on the search's measurements)."""
    need = _RUN_ESTIMATE_FACTOR * 2 * sum(r.wall_time_s or settings.compile_budget for r in chosen)
    if deadline.left() < need:
        on_note(
            f"finalists skipped: the timeout leaves {deadline.left():.0f} s and re-measuring "
            f"{len(chosen)} finalists cold and warm needs about {need:.0f} s; the winner is "
            "chosen from the search's measurements (run `autotune finalize` later to "
            "re-measure them)"
        )
        return None
    owner = process_owner()
    if not store.claim(study, FINALISTS_CLAIM, owner, grace_s()):
        held = store.claim_of(study, FINALISTS_CLAIM)
        if held is not None and owner_gone(held.owner):
            # its process died on this host (SIGKILL): nobody waits out its grace period
            if store.claim(study, FINALISTS_CLAIM, owner, 0.0):
                on_note(f"finalists: took over the round of {held.owner}, which is gone")
                held = None
        if held is not None:
            raise UsageError(_held_message(study, held))
    round_id = store.start_finalist_round(study, [r.trial_number for r in chosen], owner)

    def record(r: TrialRecord, run: str, result: TrialResult) -> None:
        store.add_finalist_result(round_id, r.trial_number, run, result.to_dict())

    try:  # the claim beats while the round runs: one finalist may outlast the grace period
        with beating(lambda: store.beat_claim(study, FINALISTS_CLAIM, owner)):
            try:
                done = remeasure(
                    chosen, settings, on_note=on_note, runner=runner, on_result=record,
                    deadline=deadline, allow_unsafe_knobs=allow_unsafe_knobs,
                )  # fmt: skip
            except DeadlineReached as reached:
                on_note(f"finalists stopped: {reached}; the winner is chosen from the search")
                return None
            try:
                confirmation = then(done, record)
            except DeadlineReached as reached:  # the round stands; its choice goes unconfirmed
                on_note(
                    f"confirmation stopped: {reached}; the file claims the finalist round "
                    "that chose it, unconfirmed"
                )
                confirmation = None
    finally:
        store.release_claim(study, FINALISTS_CLAIM, owner)
    store.finish_finalist_round(round_id)
    return done, confirmation


def _held_message(study: str, held: Claim) -> str:
    """Who holds the finalists' round, and when a dead holder's claim lapses."""
    lapses = held.heartbeat_at + dt.timedelta(seconds=grace_s())
    return (
        f"Another process ({held.owner}) is measuring the finalists of study {study!r} (its "
        f"last heartbeat {held.heartbeat_at:%H:%M:%S} UTC). Wait for it to write the file; if "
        f"that process died on another machine, its claim lapses at {lapses:%H:%M:%S} UTC "
        f"($AUTOTUNE_GRACE_S after its last heartbeat): run `autotune finalize --study {study}` "
        "then (one that died on this machine is taken over at once)."
    )


def _decide(
    records: list[TrialRecord],
    settings: StudySettings,
    study: str,
    storage: str,
    finalists: list[Finalist] | None,
    confirmation: Confirmation | None = None,
) -> Decision:
    noise = imprecise_round(finalists or [], settings.finalist_precision)
    if not settings.pareto:
        best = best_config(records, settings, study, storage, finalists=finalists)
        best.reason += noise
        if confirmation is not None:
            best = settle(best, confirmation)
        elif finalists and applies(settings) and best.decision == "compile":
            best.reason += (
                "; not confirmed apart from the choice (no confirmation round ran): the claim "
                "comes from the round that chose it, which favours the luckiest finalist"
            )
        return Decision(best, records, finalists, confirmation=confirmation)
    rule = PickRule.parse(settings.pick or "fastest")
    picked = pick_from_front(records, settings, study, storage, rule, finalists=finalists)
    picked.best.reason += noise
    return Decision(picked.best, records, finalists, front=picked.front, chosen=picked.chosen)


__all__ = ["Decision", "decide", "finalist_candidates", "finalize"]


def _require_eager(study: str, records: list[TrialRecord], remedy: str = "") -> None:
    if eager_baseline(records) is None:
        raise UsageError(
            f"Study {study!r} has no measured eager baseline yet, so nothing can be compared "
            f"with eager{remedy}."
        )
