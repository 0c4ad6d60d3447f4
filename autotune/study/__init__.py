"""The search loop: Optuna's search over compile configurations, recorded beside Optuna's tables.

:class:`Search` runs (or resumes) a study's trials; :mod:`autotune.decide` chooses the winner
from the records, and :mod:`autotune.ship` builds what ships beside the file.
"""

from __future__ import annotations

from autotune.study._attrs import BASELINE_ATTR, PRESET_ATTR, PRIOR_ATTR
from autotune.study._borrow import WarmStart
from autotune.study._objective import OBJECTIVES, Objective, break_even_calls
from autotune.study._pareto import PickRule, front, parse_axes
from autotune.study._records import candidates
from autotune.study._search import Search, SearchRequest, StudyNotFound
from autotune.study._settings import CHANGEABLE, StudySettings, settle

__all__ = [
    "BASELINE_ATTR",
    "CHANGEABLE",
    "OBJECTIVES",
    "PRESET_ATTR",
    "PRIOR_ATTR",
    "Objective",
    "PickRule",
    "Search",
    "SearchRequest",
    "StudyNotFound",
    "StudySettings",
    "WarmStart",
    "break_even_calls",
    "candidates",
    "front",
    "parse_axes",
    "settle",
]
