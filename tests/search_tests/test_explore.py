"""ExploringSampler: after a duplicate, the next trial of this process is drawn at random."""

from __future__ import annotations

import optuna

from autotune.search._explore import ExploringSampler


class Stuck(optuna.samplers.BaseSampler):
    def infer_relative_search_space(self, study, trial):
        return {}

    def sample_relative(self, study, trial, search_space):
        return {}

    def sample_independent(self, study, trial, name, distribution):
        return distribution.low


def _draw(study: optuna.Study) -> int:
    trial = study.ask()
    value = trial.suggest_int("x", 0, 10**6)
    study.tell(trial, 1.0)
    return value


def test_only_the_trial_after_the_mark_is_drawn_at_random():
    sampler = ExploringSampler(Stuck(), seed=0)
    study = optuna.create_study(sampler=sampler)
    assert _draw(study) == 0
    sampler.explore_next()
    assert _draw(study) != 0  # one in a million to collide with the stuck point
    assert [_draw(study) for _ in range(3)] == [0, 0, 0]


def test_enqueued_parameters_are_kept_when_exploring():
    sampler = ExploringSampler(Stuck(), seed=0)
    study = optuna.create_study(sampler=sampler)
    study.enqueue_trial({"x": 7})
    sampler.explore_next()
    assert _draw(study) == 7


def test_exploring_does_not_replay_the_draws_of_a_base_sampler_of_the_same_seed():
    """TPE's first trials come from a RandomSampler of the study's seed: an explorer seeded
    alike replayed them, each a duplicate of an earlier trial."""
    base = optuna.create_study(sampler=optuna.samplers.RandomSampler(seed=0))
    drawn = {_draw(base) for _ in range(5)}
    sampler = ExploringSampler(Stuck(), seed=0)
    study = optuna.create_study(sampler=sampler)
    explored = set()
    for _ in range(5):
        sampler.explore_next()
        explored.add(_draw(study))
    assert not explored & drawn
