"""``--start-from STUDY``: a new study starts from what an earlier one learned.

The earlier study's best configurations (by this study's objective) are queued first, to be
measured here: the same model on other hardware or torch, or a similar model, often wins with
the same knobs. Where the two studies search the same space for the same objective, the
sampler is also told every result the earlier study measured (Optuna ``add_trial``), so TPE
starts from its model of the space instead of ten random draws. Those prior trials carry
``autotune.prior``: no record of this study belongs to them, nothing reports or ships them,
and they do not count against the budget.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import optuna
from optuna.trial import TrialState

from autotune.errors import UsageError
from autotune.records import RecordStore, TrialRecord, redact_url
from autotune.scoring import Objective, scored_trial
from autotune.space import SearchSpace, offers
from autotune.storage import (
    PRIOR_ATTR,
    START_FROM_ATTR,
    STARTED_FROM_ATTR,
    StudySettings,
    open_optuna_storage,
)


@dataclass(frozen=True)
class StartFrom:
    """Where to borrow from: a study name, its storage (None: this study's), and how many of
    its best configurations to queue."""

    study: str
    storage: str | None = None
    top: int = 5


def start_from_earlier(
    study: optuna.Study,
    space: SearchSpace,
    settings: StudySettings,
    scope_param: str | None,
    source: StartFrom,
    storage: str,
    on_note: Callable[[str], None] = lambda note: None,
) -> None:
    """Queues ``source``'s best configurations in ``study`` and, where the space and the
    objective match, tells its sampler the earlier results; once per study.

    Raises:
        UsageError: The earlier study does not exist or measured nothing to borrow.
    """
    if STARTED_FROM_ATTR in study.user_attrs:
        return
    url = source.storage or storage
    with RecordStore(url) as store:
        stored = store.study_settings(source.study)
        if stored is None:
            raise UsageError(
                f"--start-from: there is no study {source.study!r} in "
                f"{redact_url(url)}; `autotune studies --storage URL` lists them."
            )
        records = store.trials(source.study)
    earlier = StudySettings.from_dict(stored)
    objective = Objective.of(settings)
    measured = [
        r for r in records
        if r.baseline is None and r.duplicate_of is None and r.status == "ok" and r.config
        and objective.score(r) is not None
    ]  # fmt: skip
    if not measured:
        raise UsageError(
            f"--start-from: study {source.study!r} has no measured configuration to "
            "borrow yet; run it first, or start this study without --start-from."
        )
    trials = {t.number: t for t in _optuna_trials(source.study, url)}
    # The best K distinct codes: a config that generated code already timed takes no place.
    distinct = [r for r in measured if r.equivalent_of is None]
    best = sorted(distinct, key=lambda r: objective.score(r) or 0.0, reverse=True)[: source.top]
    queued = []
    for record in best:
        params = _params(trials.get(record.trial_number), space, scope_param)
        if params:
            study.enqueue_trial(params, {START_FROM_ATTR: f"{source.study}#{record.trial_number}"})
            queued.append(record)
    same = (
        earlier.space_hash == settings.space_hash
        and earlier.objective == settings.objective
        and not settings.pareto
        and not earlier.pareto
    )
    told = _tell(study, measured, trials, objective) if same else 0
    study.set_user_attr(STARTED_FROM_ATTR, f"{source.study}@{redact_url(url)}")
    on_note(_summary(source, queued, told, same, objective, earlier, settings))


def _optuna_trials(name: str, url: str) -> list[optuna.trial.FrozenTrial]:
    try:
        earlier = optuna.load_study(study_name=name, storage=open_optuna_storage(url))
    except KeyError:
        return []
    return earlier.get_trials(deepcopy=False, states=(TrialState.COMPLETE,))


def _params(
    trial: optuna.trial.FrozenTrial | None, space: SearchSpace, scope_param: str | None
) -> dict[str, Any]:
    """The earlier trial's parameters this space has, with values it offers."""
    if trial is None:
        return {}
    knobs = {k.param: k for k in space.knobs}
    params = {
        name: value
        for name, value in trial.params.items()
        if name in knobs and offers(knobs[name], value)
    }
    if scope_param is not None and scope_param in trial.params:
        params[scope_param] = trial.params[scope_param]
    return params


def _tell(
    study: optuna.Study,
    measured: list[TrialRecord],
    trials: dict[int, optuna.trial.FrozenTrial],
    objective: Objective,
) -> int:
    """Adds the earlier results as finished trials of this study (the sampler's prior)."""
    told = 0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
        for record in measured:
            trial = trials.get(record.trial_number)
            attrs = {PRIOR_ATTR: True, START_FROM_ATTR: f"#{record.trial_number}"}
            prior = scored_trial(trial, record, objective, attrs) if trial is not None else None
            if prior is None:
                continue
            study.add_trial(prior)
            told += 1
    return told


def _summary(
    source: StartFrom,
    queued: list[TrialRecord],
    told: int,
    same: bool,
    objective: Objective,
    earlier: StudySettings,
    settings: StudySettings,
) -> str:
    if queued:
        best = ", ".join(f"#{r.trial_number} ({objective.score(r) or 0.0:.3g})" for r in queued)
        text = f"start from: queued the {len(queued)} best configs of study {source.study!r} "
        text += f"to measure here first: {best}"
    else:
        text = f"start from: none of study {source.study!r}'s best configs fits this space"
    if told:
        return text + f"; told the sampler its {told} measured results (same space and objective)"
    if same:  # the same space, but none of its trials had parameters to tell
        return text
    why = (
        "another space" if earlier.space_hash != settings.space_hash
        else "another objective" if earlier.objective != settings.objective
        else "a Pareto study"
    )  # fmt: skip
    return text + f"; its results are not told to the sampler ({why})"
