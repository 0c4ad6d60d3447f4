"""Trials whose process died: finished from their record when it was written, else failed and
retried once, so that nothing of a study stays RUNNING."""

from __future__ import annotations

import datetime as dt
import warnings
from typing import Any

import optuna
from optuna.trial import TrialState

from autotune.records import RecordStore, TrialRecord
from autotune.scoring import Objective, optuna_values
from autotune.storage._attrs import CONSTRAINT_ATTR, METRIC_PREFIX, WORKER_ATTR
from autotune.storage._optuna import grace_s

# What Optuna raises when told to finish a trial that is finished already.
TELL_REFUSED = (optuna.exceptions.UpdateFinishedTrialError, ValueError, RuntimeError)


def finished_state(study: optuna.Study, trial: optuna.Trial) -> TrialState | None:
    """After a refused tell: the state the trial already has (told before a lost connection,
    or failed by another process), or None if it still runs (the refusal was something else)."""
    storage: Any = study._storage
    state: TrialState = storage.get_trial(trial._trial_id).state
    return state if state.is_finished() else None


def tell_record(
    study: optuna.Study,
    trial: optuna.Trial,
    record: TrialRecord,
    objective: Objective,
    axes: list[str] | None,
) -> bool:
    """Tells Optuna a recorded trial: its score by the objective, or, failed (timeout, crash,
    broken memory or latency budget, ...), an infeasible trial, so the sampler learns to avoid
    it. Told again after a lost connection, an already finished trial is left as it is.

    Returns False when the trial had been failed meanwhile: its process was cut off from the
    database past the grace period, and another process failed it as stale (and re-queued its
    configuration) before the record was written."""
    score = objective.score(record)
    violation = 0.0 if score is not None else 1.0
    values: float | list[float] = (
        optuna_values(record, axes) if axes else (score if score is not None else 0.0)
    )
    try:
        for name, value in metric_attrs(record).items():
            trial.set_user_attr(name, value)
        trial.set_user_attr(CONSTRAINT_ATTR, [violation])
        if hasattr(trial, "set_constraint"):  # Optuna >= 5; older ones: constraints_func
            trial.set_constraint("feasible", violation)
        study.tell(trial, values)
    except TELL_REFUSED:
        state = finished_state(study, trial)
        if state is None:
            raise
        return state != TrialState.FAIL
    return True


def metric_attrs(record: TrialRecord) -> dict[str, Any]:
    """autotune's measurements of a trial as Optuna user attributes, so that Optuna's own tools
    (optuna-dashboard, ``study.trials_dataframe()``) show them beside the params: the outcome,
    times, speedups and the compile's graph counts, each under the name its record gives it.
    Figures a trial did not produce are left out rather than stored as None."""
    attrs: dict[str, Any] = {
        "status": record.failure_kind or record.status,
        "config": record.brief,
        "compile_time_s": record.compile_time_s,
        "latency_median_s": record.latency_median_s,
        "eager_latency_median_s": record.eager_latency_median_s,
        "speedup_vs_eager": record.speedup_vs_eager,
        "speedup_vs_default": record.speedup_vs_default,
        "peak_memory_bytes": record.peak_memory_bytes,
        "graphs": record.graphs,
        "graph_breaks": record.graph_breaks,
        "recompiles": record.recompiles,
        "duplicate_of": record.duplicate_of,
        "equivalent_of": record.equivalent_of,
        "pruned": record.pruned or None,
    }
    if record.error:
        attrs["error"] = record.error.splitlines()[0][:300] if record.error.strip() else ""
    return {f"{METRIC_PREFIX}{k}": v for k, v in attrs.items() if v is not None}


def recover_stale(
    study: optuna.Study,
    records: RecordStore,
    objective: Objective,
    axes: list[str] | None,
) -> None:
    """Trials whose owner died: no heartbeat for the grace period (or, for one that died
    between Optuna creating the trial and its first heartbeat, none at all since it started).

    One whose result was recorded before its process died is told to Optuna from the record
    (:func:`tell_record`), so nothing measured is lost; the others are failed and retried once
    (Optuna's retry callback), by whichever process asks next.
    """
    storage: Any = study._storage
    stale = list(storage._get_stale_trial_ids(study._study_id))
    stale += [t._trial_id for t in _orphans(study)]
    for trial_id in stale:
        frozen = storage.get_trial(trial_id)
        if frozen.state != TrialState.RUNNING:
            continue
        record = records.trial(study.study_name, frozen.number)
        if record is not None:
            tell_record(study, optuna.Trial(study, trial_id), record, objective, axes)
        else:
            _fail_and_retry(study, trial_id)


def _orphans(study: optuna.Study) -> list[optuna.trial.FrozenTrial]:
    """RUNNING trials that no process ever claimed (no worker attribute) for the grace period."""
    now = dt.datetime.now()
    limit = dt.timedelta(seconds=grace_s())
    return [
        t
        for t in study.get_trials(deepcopy=False, states=(TrialState.RUNNING,))
        if WORKER_ATTR not in t.user_attrs
        and t.datetime_start is not None
        and now - t.datetime_start > limit
    ]


def _fail_and_retry(study: optuna.Study, trial_id: int) -> None:
    storage: Any = study._storage
    try:
        if not storage.set_trial_state_values(trial_id, state=TrialState.FAIL):
            return
    except optuna.exceptions.UpdateFinishedTrialError:
        return
    callback = storage.get_heartbeat_stale_trial_callback()
    if callback is not None:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
            callback(study, storage.get_trial(trial_id))
