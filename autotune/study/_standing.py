"""Where a study stands, as every process of it sees it: what a live display polls."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from optuna.trial import TrialState

from autotune.study._attrs import BASELINE_ATTR, METRIC_PREFIX, PRIOR_ATTR

if TYPE_CHECKING:
    from autotune.study._search import Search


@dataclass(frozen=True)
class Standing:
    """Search trials measured and running in every process, and the best trial told so far
    (single-objective studies; ``best_score`` is the objective's, higher is better)."""

    done: int
    running: int
    best_trial: int | None = None
    best_score: float | None = None
    best_speedup: float | None = None


def standing(search: Search) -> Standing:
    """One read of the study, without the search's retries and timings: a display's thread
    calls it between the search's own reads, and simply tries again later when it fails."""
    name = search.request.study_name
    done = search.session.records.count_trials(name, duplicates=False)
    states = (TrialState.RUNNING,)
    trials = search.session.study.get_trials(deepcopy=False, states=states)
    running = sum(1 for t in trials if BASELINE_ATTR not in t.user_attrs)
    if search.session.settings.pareto:
        return Standing(done, running)
    finished = search.session.study.get_trials(deepcopy=False, states=(TrialState.COMPLETE,))
    # an earlier study's results told to the sampler (--warm-start-from) are not this study's
    own = [t for t in finished if PRIOR_ATTR not in t.user_attrs and t.value is not None]
    if not own:
        return Standing(done, running)
    best = max(own, key=lambda t: t.value or 0.0)
    speedup = best.user_attrs.get(f"{METRIC_PREFIX}speedup_vs_eager")
    return Standing(done, running, best.number, best.value, speedup)
