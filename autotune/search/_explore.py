"""A sampler that explores after a duplicate.

A configuration already measured in the study is never compiled again: its proposal reuses the
recorded result and does not count against the budget. A sampler that has converged (TPE on
its best point, say) would then propose the same point over and over and spin the loop, so a
duplicate marks this process's next trial to be drawn at random instead.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any

import optuna
from optuna.distributions import BaseDistribution
from optuna.trial import FrozenTrial, TrialState

# The explorer's seed is the study's, moved: TPE's first trials are drawn by a RandomSampler of
# the study's own seed, and an explorer of the same seed replayed them one by one, each a
# duplicate that marked the next trial to explore again (seen: 9 duplicates in a row).
_SEED_OFFSET = 0x9E3779B9


class ExploringSampler(optuna.samplers.BaseSampler):
    """The study's sampler, except for trials marked to explore: those are drawn at random.

    The mark is taken by the next trial asked in this process (``before_trial`` runs inside
    ``Study.ask``, before any parameter is suggested); trials enqueued with fixed parameters
    (baselines, retries) keep them either way.
    """

    def __init__(self, base: optuna.samplers.BaseSampler, seed: int | None = None) -> None:
        self.base = base
        explore_seed = None if seed is None else (seed + _SEED_OFFSET) % 2**32
        self._random = optuna.samplers.RandomSampler(seed=explore_seed)
        self._lock = threading.Lock()
        self._pending = False
        self._exploring: set[int] = set()

    def explore_next(self) -> None:
        """Draws the next trial asked in this process at random."""
        with self._lock:
            self._pending = True

    def _explores(self, trial: FrozenTrial) -> bool:
        with self._lock:
            return trial._trial_id in self._exploring

    def before_trial(self, study: optuna.Study, trial: FrozenTrial) -> None:
        with self._lock:
            if self._pending:
                self._pending = False
                self._exploring.add(trial._trial_id)
        self.base.before_trial(study, trial)

    def infer_relative_search_space(
        self, study: optuna.Study, trial: FrozenTrial
    ) -> dict[str, BaseDistribution]:
        if self._explores(trial):
            return {}
        return self.base.infer_relative_search_space(study, trial)

    def sample_relative(
        self, study: optuna.Study, trial: FrozenTrial, search_space: dict[str, BaseDistribution]
    ) -> dict[str, Any]:
        if self._explores(trial):
            return {}
        return self.base.sample_relative(study, trial, search_space)

    def sample_independent(
        self,
        study: optuna.Study,
        trial: FrozenTrial,
        param_name: str,
        param_distribution: BaseDistribution,
    ) -> Any:
        sampler = self._random if self._explores(trial) else self.base
        return sampler.sample_independent(study, trial, param_name, param_distribution)

    def after_trial(
        self,
        study: optuna.Study,
        trial: FrozenTrial,
        state: TrialState,
        values: Sequence[float] | None,
    ) -> None:
        with self._lock:
            self._exploring.discard(trial._trial_id)
        self.base.after_trial(study, trial, state, values)

    def reseed_rng(self) -> None:
        self.base.reseed_rng()
        self._random.reseed_rng()
