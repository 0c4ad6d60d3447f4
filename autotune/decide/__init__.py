"""The winner's choice: finalists re-measured in fresh processes, presets beside them, the
decision (compile, which config, or do not compile) and the best-config file it writes.

It reads a study's records and settings (:mod:`autotune.storage`), never the running search, so
whoever holds the storage can decide: ``autotune search`` at its end (handing over the session
that searched: :func:`finalize_session`), ``autotune finalize`` after a fleet of workers
(:func:`finalize`, the study opened from its storage).
"""

from __future__ import annotations

from autotune.decide._best import best_config
from autotune.decide._finalize import (
    Decision,
    decide,
    finalist_candidates,
    finalize,
    finalize_session,
)
from autotune.decide._pick import Picked, pareto_finalists, pick_from_front, study_front

__all__ = [
    "Decision",
    "Picked",
    "best_config",
    "decide",
    "finalist_candidates",
    "finalize",
    "finalize_session",
    "pareto_finalists",
    "pick_from_front",
    "study_front",
]
