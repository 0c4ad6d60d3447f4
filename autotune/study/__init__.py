"""Studies: Optuna's search over compile configurations, recorded beside Optuna's tables.

Two calls make a study's outcome, whoever runs them: :class:`Search` runs (or resumes) its
trials, and :func:`finalize` chooses the winner from the records and writes the file.
"""

from __future__ import annotations

from autotune.study._best import best_config
from autotune.study._borrow import WarmStart
from autotune.study._cache_export import export_cache
from autotune.study._finalize import Decision, decide, finalist_candidates, finalize
from autotune.study._merge import merge_files
from autotune.study._objective import OBJECTIVES, Objective, break_even_calls
from autotune.study._pareto import PickRule, front, parse_axes
from autotune.study._pick import Picked, pareto_finalists, pick_from_front, study_front
from autotune.study._records import candidates
from autotune.study._search import BASELINE_ATTR, Search, SearchRequest, StudyNotFound
from autotune.study._settings import CHANGEABLE, StudySettings, settle

__all__ = [
    "BASELINE_ATTR",
    "CHANGEABLE",
    "OBJECTIVES",
    "Decision",
    "Objective",
    "Picked",
    "PickRule",
    "Search",
    "SearchRequest",
    "StudyNotFound",
    "StudySettings",
    "WarmStart",
    "best_config",
    "break_even_calls",
    "candidates",
    "decide",
    "export_cache",
    "finalist_candidates",
    "finalize",
    "front",
    "merge_files",
    "parse_axes",
    "pareto_finalists",
    "pick_from_front",
    "settle",
    "study_front",
]
