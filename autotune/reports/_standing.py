"""Where a study stands, as every process of it sees it, read from its storage: what the live
panel polls (never the running search itself)."""

from __future__ import annotations

from dataclasses import dataclass

import optuna
from optuna.trial import TrialState

from autotune.records import RecordStore
from autotune.storage import BASELINE_ATTR, METRIC_PREFIX, PRIOR_ATTR


@dataclass(frozen=True)
class Standing:
    """Search trials measured and running in every process, and the best trial told so far
    (single-objective studies; ``best_score`` is the objective's, higher is better)."""

    done: int
    running: int
    best_trial: int | None = None
    best_score: float | None = None
    best_speedup: float | None = None


def standing(records: RecordStore, study: optuna.Study, pareto: bool) -> Standing:
    """One read of the study from its records and Optuna's storage, without the search's
    retries and timings: a display's thread calls it between the search's own reads, and
    simply tries again later when it fails."""
    done = records.count_trials(study.study_name, duplicates=False)
    states = (TrialState.RUNNING,)
    trials = study.get_trials(deepcopy=False, states=states)
    running = sum(1 for t in trials if BASELINE_ATTR not in t.user_attrs)
    if pareto:
        return Standing(done, running)
    finished = study.get_trials(deepcopy=False, states=(TrialState.COMPLETE,))
    # an earlier study's results told to the sampler (--start-from) are not this study's
    own = [t for t in finished if PRIOR_ATTR not in t.user_attrs and t.value is not None]
    if not own:
        return Standing(done, running)
    best = max(own, key=lambda t: t.value or 0.0)
    speedup = best.user_attrs.get(f"{METRIC_PREFIX}speedup_vs_eager")
    return Standing(done, running, best.number, best.value, speedup)
