"""Knobs that change nothing on this model: two sampled trials that set a knob differently
compiled the same code (their code identities are equal, see :mod:`autotune.trials._code`), so
the knob (and every other that differs between them) had no effect. The search stops drawing
such a knob: it is left to torch (its default, or the mode's value) in later trials, so no
trial is spent telling its values apart, and the report says "no effect on this model".

Only Inductor, Dynamo and functorch knobs collapse (a partitioner setting such as
``activation_memory_budget`` shows in the forward and backward code a training trial records):
the compile mode, the backend, ``dynamic``, the precision and the training step's optimizer
decide which other knobs exist and how the code runs, beyond what the code shows.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from autotune.records import TrialRecord
from autotune.storage._attrs import (
    BASELINE_ATTR,
    COMBINATION_ATTR,
    LEFT_ATTR,
    PRESET_ATTR,
    PRIOR_ATTR,
    START_FROM_ATTR,
)

COLLAPSING = ("inductor.", "dynamo.", "functorch.")


def sampled(trial: Any) -> bool:
    """Whether the sampler drew ``trial`` (an Optuna trial): not a baseline, a preset, a
    combination of presets, a config borrowed from an earlier study or a prior."""
    return not any(a in trial.user_attrs for a in _NOT_SAMPLED)


_NOT_SAMPLED = (BASELINE_ATTR, PRESET_ATTR, COMBINATION_ATTR, START_FROM_ATTR, PRIOR_ATTR)


def sampled_params(trials: Iterable[Any]) -> dict[int, dict[str, Any]]:
    """The Optuna params of the trials the sampler drew, by trial number."""
    return {t.number: dict(t.params) for t in trials if sampled(t)}


def inert_knobs(
    params: Mapping[int, Mapping[str, Any]], records: Iterable[TrialRecord]
) -> dict[str, tuple[int, int]]:
    """Each knob shown to change nothing, with the two trials that showed it (the earliest
    pair): ``params`` are the sampled trials' Optuna params by trial number; ``records`` the
    study's trials (a trial counts once it ran, matched eager and recorded its code)."""
    by_code: dict[str, list[int]] = {}
    for r in records:
        code = r.result.get("code_hash")
        if r.status == "ok" and code and r.baseline is None and r.trial_number in params:
            by_code.setdefault(str(code), []).append(r.trial_number)
    found: dict[str, tuple[int, int]] = {}
    for numbers in by_code.values():
        numbers.sort()
        for i, a in enumerate(numbers):
            for b in numbers[i + 1 :]:
                for knob in _differing(params[a], params[b]):
                    found.setdefault(knob, (a, b))
    return dict(sorted(found.items(), key=lambda item: (item[1], item[0])))


def inert_in(trials: Iterable[Any], records: Iterable[TrialRecord]) -> dict[str, tuple[int, int]]:
    """:func:`inert_knobs` of a study: its Optuna trials and its records."""
    return inert_knobs(sampled_params(trials), records)


def measured_leaving(
    trials: Iterable[Any], records: Iterable[TrialRecord], inert: Iterable[str]
) -> int:
    """How many distinct configurations of the space left to search (the ``inert`` knobs left
    to torch) the study has measured: the keys of the recorded trials, neither baselines nor
    presets, that left exactly those knobs to torch (a reused one counts: its key was
    measured). With ``inert`` empty, the whole space's."""
    recorded = {r.trial_number: r.config_hash for r in records if r.baseline is None}
    left = sorted(inert)
    return len({
        recorded[t.number] for t in trials
        if t.number in recorded and not {PRESET_ATTR, COMBINATION_ATTR} & set(t.user_attrs)
        and sorted(t.user_attrs.get(LEFT_ATTR, ())) == left
    })  # fmt: skip


def _differing(a: Mapping[str, Any], b: Mapping[str, Any]) -> list[str]:
    return [
        k for k in a if k.startswith(COLLAPSING) and k in b and a[k] != b[k]
    ]  # fmt: skip


def describe(inert: Mapping[str, tuple[int, int]]) -> str:
    """``inductor.epilogue_fusion (#4 and #9 compiled the same code), ...``."""
    return ", ".join(f"{k} (#{a} and #{b} compiled the same code)" for k, (a, b) in inert.items())
