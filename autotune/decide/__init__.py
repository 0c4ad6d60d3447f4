"""The winner's choice: finalists re-measured in fresh processes, presets beside them, the
decision (compile, which config, or do not compile) and the best-config file it writes.

It reads a study's records and settings (:mod:`autotune.storage`), never the running search, so
whoever holds the storage can decide: ``autotune search`` at its end (handing over the study as
the process that searched it holds it: :class:`Held`, :func:`finalize_held`), ``autotune
finalize`` after a fleet of workers (:func:`finalize`, the study opened from its storage).
"""

from __future__ import annotations

from autotune.decide._best import best_config
from autotune.decide._finalize import (
    Decision,
    Held,
    decide,
    finalist_candidates,
    finalize,
    finalize_held,
)
from autotune.decide._pick import Picked, pareto_finalists, pick_from_front, study_front

__all__ = [
    "Decision",
    "Picked",
    "best_config",
    "decide",
    "finalist_candidates",
    "Held",
    "finalize",
    "finalize_held",
    "pareto_finalists",
    "pick_from_front",
    "study_front",
]
