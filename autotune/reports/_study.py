"""A study as the reports read it: autotune's records joined with Optuna's trials, loaded from
the storage alone, so a report reads the same whether the study ran here, on a cluster, or is
still running (its running trials have an Optuna trial and no record yet)."""

from __future__ import annotations

import datetime as dt
import warnings
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import optuna
from optuna.trial import FrozenTrial, TrialState

from autotune._secrets import mask_text
from autotune.decide import Decision, decide
from autotune.errors import UsageError
from autotune.records import (
    EmptyStorageError,
    FinalistRound,
    RecordStore,
    StudyRowError,
    TrialRecord,
    Worker,
    redact_url,
)
from autotune.scoring import Objective, scored_trial
from autotune.settings import StudySettings
from autotune.storage import (
    COMBINATION_ATTR,
    PRESET_ATTR,
    PRIOR_ATTR,
    candidates,
    open_optuna_storage,
    settings_from_row,
)
from autotune.trials import Spread

# Optuna's trial states, as a report names a trial that has no record.
_STATES = {
    TrialState.RUNNING: "running",
    TrialState.WAITING: "waiting",
    TrialState.FAIL: "failed",
    TrialState.PRUNED: "pruned",
    TrialState.COMPLETE: "complete",
}
# The figures a round gives each of its configs (StudyData.round_figures), after a prefix.
CLAIMED = ("speedup_vs_eager", "speedup_vs_eager_ci_low", "speedup_vs_eager_ci_high")
IMPORTANCE_EVALUATOR = "PED-ANOVA (optuna.importance.PedAnovaImportanceEvaluator)"
_MIN_IMPORTANCE_TRIALS = 3


@dataclass
class TrialRow:
    """One trial of the study: Optuna's trial and, once it finished, autotune's record.

    Attributes:
        number: The trial number (Optuna's and autotune's).
        status: ``ok``, the failure kind of a failed trial, or for a trial without a record,
            Optuna's state (``running``, ``waiting``, ``failed``), or ``stale``: RUNNING in
            Optuna, but its process stopped beating (it died; the next process of the study
            fails and retries it).
        record: autotune's record; None while the trial runs, or when its process died
            before writing it.
        trial: Optuna's trial (None: a record whose Optuna trial is gone).
    """

    number: int
    status: str
    record: TrialRecord | None
    trial: FrozenTrial | None = None

    @property
    def params(self) -> dict[str, Any]:
        """The knob values Optuna drew (``inductor.freezing``: True, ...); empty for
        baselines, which run fixed configs."""
        return dict(self.trial.params) if self.trial is not None else {}

    @property
    def started(self) -> dt.datetime | None:
        return self.trial.datetime_start if self.trial is not None else None

    @property
    def finished(self) -> dt.datetime | None:
        return self.trial.datetime_complete if self.trial is not None else None

    @property
    def label(self) -> str:
        """``[eager]``, ``[default]``, ``#7``, ``#3 preset NAME`` for a space preset, or
        ``#9 combination A & B`` for presets measured together."""
        if self.record is not None and self.record.baseline:
            return f"[{self.record.baseline}]"
        attrs = self.trial.user_attrs if self.trial is not None else {}
        if attrs.get(COMBINATION_ATTR):
            return f"#{self.number} combination {' & '.join(attrs[COMBINATION_ATTR])}"
        preset = attrs.get(PRESET_ATTR)
        return f"#{self.number} preset {preset}" if preset else f"#{self.number}"


@dataclass
class StudyData:
    """Everything the reports show of one study.

    Attributes:
        name: The study's name.
        storage: The storage URL, its password masked.
        settings: The study's stored settings.
        rows: Every trial, by number: recorded ones and those Optuna knows only.
        workers: Every process that ran trials of the study.
        rounds: The recorded rounds of finalists, oldest first.
        decision: What ``autotune finalize`` would decide now (None: nothing to decide yet,
            ``decision_note`` says why).
        importance: Knob -> importance (fraction of the score's variance), most important
            first; None when it cannot be computed (``importance_note`` says why).
        metric_names: The names of the Optuna study's values.
        notes: What the reports must say beside the data: rows left out because they break
            autotune's rules (each names the row and what is wrong with it).
    """

    name: str
    storage: str
    settings: StudySettings
    created_at: dt.datetime | None
    autotune_version: str
    rows: list[TrialRow]
    workers: list[Worker]
    rounds: list[FinalistRound]
    decision: Decision | None
    decision_note: str
    importance: dict[str, float] | None
    importance_note: str
    metric_names: list[str]
    optuna_study: optuna.Study
    notes: list[str] = field(default_factory=list)

    @property
    def records(self) -> list[TrialRecord]:
        return [row.record for row in self.rows if row.record is not None]

    @property
    def objective(self) -> Objective:
        return Objective.of(self.settings)

    @property
    def searched(self) -> list[TrialRecord]:
        """Search trials measured (baselines and reused duplicates left out): the budget's."""
        return [r for r in self.records if r.baseline is None and r.duplicate_of is None]

    @property
    def running(self) -> int:
        return sum(1 for row in self.rows if row.status == "running")

    def baseline(self, name: str) -> TrialRecord | None:
        """The measured ``eager`` or ``default`` baseline, if it ran."""
        return next((r for r in self.records if r.baseline == name and r.status == "ok"), None)

    def best(self) -> TrialRecord | None:
        """The search's best measured config by the study's objective (finalists aside)."""
        scored = [r for r in candidates(self.records) if self.objective.score(r) is not None]
        return max(scored, key=lambda r: self.objective.score(r) or 0.0, default=None)

    def failures(self) -> Counter[str]:
        """Failed measured trials by kind."""
        return Counter(
            r.failure_kind or "failed"
            for r in self.records
            if r.status != "ok" and r.duplicate_of is None
        )

    def state(self) -> str:
        """``running`` (a trial runs now), ``done`` (its budget is measured) or ``stopped``
        (neither: resume it, or add workers)."""
        if self.running:
            return "running"
        if len(self.searched) >= self.settings.trials:
            return "done"
        return "stopped"

    def round_figures(self) -> dict[int, dict[str, float | None]]:
        """The decision's own figures of each trial that reached it, by trial number: its
        speedup over eager in the finalist round that chose (``finalist_*``: its cold and
        warm processes pooled) and in the confirmation round (``confirmed_*``: its runs
        pooled), each with the 95% interval of the median; a trial that did not reach a round
        has no entry, or none for that round."""
        made = self.decision
        found: list[tuple[int, str, Spread | None]] = []
        if made is not None:
            found += [(f.searched.trial_number, "finalist_", f.speedup())
                      for f in made.finalists or [] if f.ok]  # fmt: skip
            runs = made.confirmation.runs if made.confirmation is not None else {}
            found += [(n, "confirmed_", Spread.pooled(ran)) for n, ran in runs.items()]
        figures: dict[int, dict[str, float | None]] = {}
        for number, prefix, pooled in found:
            if pooled is not None:
                every = pooled.figures(prefix)
                figures.setdefault(number, {}).update({prefix + k: every[prefix + k]
                                                       for k in CLAIMED})  # fmt: skip
        return figures

    def device_names(self) -> list[str]:
        return sorted(
            {
                str(r.environment["device_name"])
                for r in self.records
                if r.environment.get("device_name")
            }
        )


def load_study_data(storage: str, study: str, *, importance: bool = True) -> StudyData:
    """Reads study ``study`` from ``storage``: its settings, trials, workers, finalists, the
    decision as :func:`autotune.decide.decide` makes it, and (``importance``) knob importance.

    Nothing is created or written: the storage is opened read-only (a SQLite file that does
    not exist is refused, not created). A trial or finalist round whose row breaks autotune's
    rules is left out, and ``notes`` says which and why.

    Raises:
        UsageError: The storage holds no autotune study of that name.
        StudyRowError: The study's settings row breaks autotune's rules.
    """
    notes: list[str] = []

    def skip(error: StudyRowError) -> None:
        notes.append(f"left out: {error}")

    with RecordStore(storage, read_only=True) as store:
        text = store.study_settings_json(study)
        if text is None:
            known = ", ".join(sorted(store.study_names())) or "none"
            raise UsageError(
                f"The storage {redact_url(storage)} holds no autotune study named {study!r} "
                f"(its studies: {known}); pass --study with one of them, or --storage with "
                "the database the study was run on."
            )
        settings = settings_from_row(study, text)
        created_at, version = store.study_created(study)
        records = {r.trial_number: r for r in store.trials(study, on_bad=skip)}
        workers = store.workers(study)
        rounds = store.finalist_rounds(study, on_bad=skip)
        try:
            decision, decision_note = decide(storage, study, store), ""
        except UsageError as exc:
            decision, decision_note = None, mask_text(exc, [storage])
    optuna_study = optuna.load_study(
        study_name=study, storage=open_optuna_storage(storage, read_only=True)
    )
    rows = _rows(optuna_study.get_trials(deepcopy=False), records)
    rdb: Any = optuna_study._storage
    stale = set(rdb._get_stale_trial_ids(optuna_study._study_id))
    for row in rows:
        if row.status == "running" and row.trial is not None and row.trial._trial_id in stale:
            row.status = "stale"  # its process stopped beating: a worker died mid-trial
    data = StudyData(
        name=study,
        storage=redact_url(storage),
        settings=settings,
        created_at=created_at,
        autotune_version=version,
        rows=rows,
        workers=workers,
        rounds=rounds,
        decision=decision,
        decision_note=decision_note,
        importance=None,
        importance_note="not computed",
        metric_names=list(optuna_study.metric_names or []),
        optuna_study=optuna_study,
        notes=notes,
    )
    if importance:
        data.importance, data.importance_note = knob_importance(data)
    return data


def list_studies(storage: str) -> list[StudyData]:
    """Every autotune study in ``storage``, oldest first, without knob importance; none when
    the storage has no autotune tables. Nothing is created or written.

    Raises:
        StorageError: The storage cannot be opened (a SQLite file that does not exist).
        StudyRowError: A study's settings row breaks autotune's rules.
    """
    return [load_study_data(storage, name, importance=False) for name in study_names(storage)]


def study_names(storage: str) -> list[str]:
    """The names of the autotune studies in ``storage``, oldest first; none when the storage
    has no autotune tables. Nothing is created or written.

    Raises:
        StorageError: The storage cannot be opened (a SQLite file that does not exist).
    """
    try:
        with RecordStore(storage, read_only=True) as store:
            return store.study_names()
    except EmptyStorageError:
        return []


def _rows(trials: list[FrozenTrial], records: dict[int, TrialRecord]) -> list[TrialRow]:
    rows = []
    for t in trials:
        if PRIOR_ATTR in t.user_attrs:  # an earlier study's result told to the sampler
            continue
        record = records.pop(t.number, None)
        if record is not None:
            status = "ok" if record.status == "ok" else (record.failure_kind or "failed")
        else:
            status = _STATES.get(t.state, t.state.name.lower())
        rows.append(TrialRow(t.number, status, record, t))
    # Records whose Optuna trial is gone (an older storage, a trial deleted by hand).
    rows += [
        TrialRow(n, "ok" if r.status == "ok" else (r.failure_kind or "failed"), r)
        for n, r in records.items()
    ]
    return sorted(rows, key=lambda row: row.number)


def searched_study(data: StudyData) -> optuna.Study | None:
    """An in-memory study of the search trials only (baselines and reused duplicates left
    out), valued by the study's objective (failed trials 0): what importance and Optuna's
    plots are computed on. None when fewer than two such trials finished."""
    trials = []
    objective = data.objective
    for row in data.rows:
        r, frozen = row.record, row.trial
        if r is None or frozen is None or r.baseline is not None or r.duplicate_of is not None:
            continue
        scored = scored_trial(frozen, r, objective, {"number": row.number})
        if scored is not None:
            trials.append(scored)
    if len(trials) < 2:
        return None
    study = optuna.create_study(direction="maximize")
    study.add_trials(trials)
    return study


def knob_importance(data: StudyData) -> tuple[dict[str, float] | None, str]:
    """Each knob's importance for reaching the study's best scores, and a note saying how it
    was computed, or why it was not.

    PED-ANOVA (Watanabe et al., 2023) measures how far each knob's values among the top
    trials are from its values among all of them; unlike fANOVA it needs no scikit-learn and
    is meant for few trials. The top is the best 10% of trials, and at least two."""
    study = searched_study(data)
    n = 0 if study is None else len(study.trials)
    if study is None or n < _MIN_IMPORTANCE_TRIALS:
        return None, f"needs {_MIN_IMPORTANCE_TRIALS} measured search trials, the study has {n}"
    top = max(0.1, 2 / n)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            evaluator = optuna.importance.PedAnovaImportanceEvaluator(target_quantile=top)
            found = optuna.importance.get_param_importances(study, evaluator=evaluator)
    except (RuntimeError, ValueError) as exc:
        return None, f"Optuna could not compute it: {exc}"
    if not found:
        return None, "no knob was drawn in every search trial (conditional knobs only)"
    rough = "; rough with fewer than 20 trials" if n < 20 else ""
    note = (
        f"{IMPORTANCE_EVALUATOR}: how far each knob's values in the best {top:.0%} of the "
        f"{n} measured search trials (by {data.objective.kind} score, failed trials as 0) are "
        f"from its values in all of them; knobs not drawn in every trial are left out{rough}"
    )
    return dict(found), note
