"""The one call that runs a study to its file."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from autotune.decide import Decision, Held, finalist_candidates, finalize_held, study_front
from autotune.records import TrialRecord
from autotune.search._search import Search
from autotune.settings import FinishFields
from autotune.ship import ship_cache
from autotune.storage import candidates, eager_baseline, grace_s
from autotune.trials import TrialRunner


@dataclass(frozen=True, kw_only=True)
class Finish(FinishFields):
    """How a study's file is written once its search ends.

    Attributes:
        out: The best-config file (an entry for this machine is added or replaced).
        remeasure: Re-measure the finalists even when a finished round is recorded.
        for_device: The device name the file is for, when the study ran on several.
        save_cache: Ship the compile cache of the winning config beside the file.
        save_aot: Ship its AOTInductor package (with ``save_cache``, both).
        finalist_runner: Runs the finalists (None: fresh processes, as the decision needs).
        last_process: Write the file only when the search ended the study (its budget met,
            or the space exhausted) and no other process of the study is writing it: a
            worker's ``--out``.
    """

    finalist_runner: TrialRunner | None = None
    last_process: bool = False


# The claim a process holds while it writes a study's file (Finish.last_process).
FILE_CLAIM = "best_config_file"


@dataclass
class StudyOutcome:
    """What :func:`run_study` did: ``decision`` is None when no file was written, and
    ``not_written`` says why when it is not that the eager baseline was never measured;
    ``not_shipped`` says why nothing shipped beside the file when a cache or package was asked
    for."""

    decision: Decision | None
    records: list[TrialRecord]
    not_shipped: str | None = None
    not_written: str | None = None


def run_study(
    search: Search,
    finish: Finish,
    *,
    on_front: Callable[[list[TrialRecord], list[str]], None] = lambda front, axes: None,
    on_decision: Callable[[Decision], None] = lambda decision: None,
) -> StudyOutcome:
    """Runs ``search`` with its runners (closed at the end), waits for the trials other
    processes of the study still run, finalizes into ``finish.out`` and ships the cache and
    package it asks for. ``search.events`` hears every record, note and phase; ``on_front``
    gets a --pareto study's front before the finalists, ``on_decision`` the decision before
    anything ships beside the file."""
    events = search.events
    try:
        search.run()
    finally:
        for runner in search.runners:
            runner.close()
    search.wait_for_others(
        lambda running: events.on_phase("waiting", f"{running} trials in other processes")
    )
    session = search.session
    records = session.records.trials(search.request.study_name)
    if eager_baseline(records) is None:
        return StudyOutcome(None, records)
    owner, name = session.owner(), search.request.study_name
    if finish.last_process:
        if not search.ended.study_ended:
            why = f"the study did not end here ({search.ended_text}): no file was written"
            return StudyOutcome(None, records, not_written=why)
        if not session.db(session.records.claim, name, FILE_CLAIM, owner, grace_s()):
            why = "another process of the study is writing the file"
            return StudyOutcome(None, records, not_written=why)
    try:
        decision = _finalize(search, finish, records, on_front)
    finally:  # a later run of the study (a raised budget) writes it again
        if finish.last_process:
            session.db(session.records.release_claim, name, FILE_CLAIM, owner)
    on_decision(decision)
    if finish.save_cache or finish.save_aot:
        if decision.best.config is None:
            why = "No compile cache was exported: the file runs the model eager."
            return StudyOutcome(decision, records, not_shipped=why)
        ship_cache(
            finish.out, session.local.model_path, on_note=events.on_note,
            cache=finish.save_cache, aot=True, allow_unsafe_knobs=session.space.unsafe_knobs,
        )  # fmt: skip
    return StudyOutcome(decision, records)


def _finalize(
    search: Search,
    finish: Finish,
    records: list[TrialRecord],
    on_front: Callable[[list[TrialRecord], list[str]], None],
) -> Decision:
    session, events = search.session, search.events
    settings = session.settings
    if settings.pareto and finalist_candidates(records, settings):
        on_front(study_front(candidates(records), records, settings.pareto), settings.pareto)
    if settings.finalists:
        presets = (
            "every measured preset" if settings.preset_finalists == "all" else "the best preset"
        )
        best = f"the {settings.finalists} best configs, {presets} and default torch.compile"
        events.on_phase("finalists", f"re-measuring {best}, cold and warm")
    else:
        events.on_phase("deciding", "from the search's measurements")
    # The study as this process settled and checked it (its settings, device and model file,
    # the knobs its operator vouches for, its deadline): nothing is reopened or checked again;
    # trials left running by processes that died are recovered first, as ever.
    session.recover_stale()
    held = Held(session.records, session.request.storage, session.name, session.settings,
                lambda: session.local, session.space.unsafe_knobs)  # fmt: skip
    return finalize_held(
        held, finish.out, finish.remeasure, session.request.deadline, finish.finalist_runner,
        session.events.on_note, session.local.device, finish.for_device,
    )  # fmt: skip
