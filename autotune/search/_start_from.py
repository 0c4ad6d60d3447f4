"""``--start-from STUDY``: a new study starts from what an earlier one learned.

The earlier study's best configurations (by this study's objective) are queued first, to be
measured here: the same model on other hardware or torch, or a similar model, often wins with
the same knobs. Where the two studies search the same space for the same objective, the
sampler is also told every result the earlier study measured (Optuna ``add_trial``), so TPE
starts from its model of the space instead of ten random draws. Those prior trials carry
``autotune.prior``: no record of this study belongs to them, nothing reports or ships them,
and they do not count against the budget.

Only what this study offers is borrowed: a knob's value the space holds, and a scope that is
one of this study's candidates (known once its parts are probed; a study of another model
names other candidates). Anything else is left to the sampler, with a note: Optuna would take
a queued value outside the space, and a scope outside the candidates would end the search.
"""

from __future__ import annotations

import copy
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import optuna
from optuna.distributions import CategoricalDistribution
from optuna.trial import TrialState

from autotune.errors import UsageError
from autotune.records import RecordStore, TrialRecord, redact_url
from autotune.scope import SCOPE_PARAM, ScopePlan
from autotune.scoring import Objective, scored_trial
from autotune.settings import StudySettings
from autotune.space import Knob, SearchSpace
from autotune.storage import (
    PRIOR_ATTR,
    START_FROM_ATTR,
    STARTED_FROM_ATTR,
    open_optuna_storage,
    settings_from_dict,
)

# The parameters of an earlier trial that this study does not offer: (name, value).
_Dropped = list[tuple[str, Any]]


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
    earlier = settings_from_dict(stored)
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
    fit = _Fit.of(space, settings, earlier, scope_param)
    queued: list[TrialRecord] = []
    left: list[tuple[int, str, Any]] = []
    for record in best:
        trial = trials.get(record.trial_number)
        params, dropped = fit.queued(trial) if trial is not None else ({}, [])
        left += [(record.trial_number, name, value) for name, value in dropped]
        if params:
            study.enqueue_trial(params, {START_FROM_ATTR: f"{source.study}#{record.trial_number}"})
            queued.append(record)
    same = (
        earlier.space_hash == settings.space_hash
        and earlier.objective == settings.objective
        and not settings.pareto
        and not earlier.pareto
    )
    told = _tell(study, measured, trials, objective, fit) if same else 0
    study.set_user_attr(STARTED_FROM_ATTR, f"{source.study}@{redact_url(url)}")
    on_note(_summary(source, queued, told, same, objective, earlier, settings))
    if left:
        on_note(fit.left_note(left))


@dataclass(frozen=True)
class _Fit:
    """What of an earlier study's parameters this one takes: a knob's value its space offers,
    a scope among its candidates where it searches scopes (``scopes``: None until it has
    probed them), and the batch size where both studies search the same ones."""

    knobs: dict[str, Knob]
    scoped: bool
    scopes: tuple[str, ...] | None
    same_batches: bool

    @classmethod
    def of(
        cls,
        space: SearchSpace,
        settings: StudySettings,
        earlier: StudySettings,
        scope_param: str | None,
    ) -> _Fit:
        plan = settings.scope_plan
        names = tuple(ScopePlan.from_dict(plan).names) if plan and scope_param else None
        knobs = {k.param: k for k in space.knobs}
        return cls(knobs, scope_param is not None, names, _batches(earlier, settings))

    def takes(self, name: str, value: Any) -> bool:
        if name in self.knobs:
            return self.knobs[name].offers(value)
        if name == SCOPE_PARAM:  # drawn only where there are two candidates or more
            return self.scopes is not None and len(self.scopes) > 1 and value in self.scopes
        return self.same_batches  # the one other parameter a study draws: the batch size

    def queued(self, trial: optuna.trial.FrozenTrial) -> tuple[dict[str, Any], _Dropped]:
        """The earlier trial's knobs (and scope, where this study searches one) that this
        study takes, to be queued (the batch size is drawn here), and those it leaves to the
        sampler."""
        wanted = {
            n: v for n, v in trial.params.items()
            if n in self.knobs or (n == SCOPE_PARAM and self.scoped)
        }  # fmt: skip
        params = {n: v for n, v in wanted.items() if self.takes(n, v)}
        return params, [(n, v) for n, v in wanted.items() if n not in params]

    def prior(self, trial: optuna.trial.FrozenTrial) -> optuna.trial.FrozenTrial:
        """``trial`` with the parameters this study takes, its scope drawn from this study's
        candidates: the sampler refuses one parameter drawn from two sets of choices."""
        kept = {n: v for n, v in trial.params.items() if self.takes(n, v)}
        fitted = copy.copy(trial)
        fitted.params = kept
        fitted.distributions = {n: trial.distributions[n] for n in kept}
        if SCOPE_PARAM in kept and self.scopes is not None:
            fitted.distributions[SCOPE_PARAM] = CategoricalDistribution(self.scopes)
        return fitted

    def left_note(self, left: list[tuple[int, str, Any]]) -> str:
        """The note on what the queued configurations leave to the sampler, and why."""
        listed = [f"#{number} {name} = {value!r}" for number, name, value in left]
        shown = ", ".join(listed[:8]) + (f" and {len(left) - 8} more" if len(left) > 8 else "")
        text = f"start from: left to the sampler, as this study does not offer them: {shown}"
        if not any(name == SCOPE_PARAM for _, name, _ in left):
            return text
        if self.scopes is None:
            return text + " (no scope is borrowed before this study has probed its candidates)"
        return text + f" (this study's scope candidates are {', '.join(self.scopes)})"


def _batches(earlier: StudySettings, settings: StudySettings) -> bool:
    return list(earlier.batch_sizes or []) == list(settings.batch_sizes or [])


def _optuna_trials(name: str, url: str) -> list[optuna.trial.FrozenTrial]:
    try:
        earlier = optuna.load_study(study_name=name, storage=open_optuna_storage(url))
    except KeyError:
        return []
    return earlier.get_trials(deepcopy=False, states=(TrialState.COMPLETE,))


def _tell(
    study: optuna.Study,
    measured: list[TrialRecord],
    trials: dict[int, optuna.trial.FrozenTrial],
    objective: Objective,
    fit: _Fit,
) -> int:
    """Adds the earlier results as finished trials of this study (the sampler's prior), with
    the parameters this study takes."""
    told = 0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
        for record in measured:
            trial = trials.get(record.trial_number)
            attrs = {PRIOR_ATTR: True, START_FROM_ATTR: f"#{record.trial_number}"}
            fitted = fit.prior(trial) if trial is not None else None
            prior = scored_trial(fitted, record, objective, attrs) if fitted is not None else None
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
