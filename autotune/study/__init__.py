"""Studies: Optuna's search over compile configurations, recorded beside Optuna's tables."""

from __future__ import annotations

from autotune.study._best import best_config
from autotune.study._objective import OBJECTIVES, Objective, break_even_calls
from autotune.study._pareto import PickRule, front, parse_axes
from autotune.study._pick import Picked, pareto_finalists, pick_from_front
from autotune.study._records import candidates
from autotune.study._search import BASELINE_ATTR, Search, SearchRequest
from autotune.study._settings import StudySettings

__all__ = [
    "BASELINE_ATTR",
    "OBJECTIVES",
    "Objective",
    "Picked",
    "PickRule",
    "break_even_calls",
    "Search",
    "SearchRequest",
    "StudySettings",
    "best_config",
    "candidates",
    "front",
    "parse_axes",
    "pareto_finalists",
    "pick_from_front",
]
