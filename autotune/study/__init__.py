"""The search loop: Optuna's search over compile configurations, recorded beside Optuna's tables.

:class:`Search` runs (or resumes) a study's trials; :mod:`autotune.decide` chooses the winner
from the records, and :mod:`autotune.ship` builds what ships beside the file.
"""

from __future__ import annotations

from autotune.study._attrs import BASELINE_ATTR, METRIC_PREFIX, PRESET_ATTR, PRIOR_ATTR
from autotune.study._borrow import WarmStart
from autotune.study._events import Events
from autotune.study._identity import (
    local_device_name,
    local_settings,
    model_sha256,
    triton_version,
)
from autotune.study._inert import describe as describe_inert
from autotune.study._inert import inert_in, inert_knobs
from autotune.study._objective import OBJECTIVES, Objective, break_even_calls, scored_trial
from autotune.study._pareto import PickRule, axis_value, front, parse_axes
from autotune.study._queue import clearly_slower
from autotune.study._records import (
    candidates,
    eager_baseline,
    eager_baselines,
    pooled_measurements,
)
from autotune.study._screen import screened
from autotune.study._search import Search, SearchRequest, StudyNotFound
from autotune.study._session import Session
from autotune.study._settings import CHANGEABLE, StudySettings, settings_from_row, settle
from autotune.study._stale import recover_stale
from autotune.study._storage import grace_s, open_optuna_storage

__all__ = [
    "BASELINE_ATTR",
    "CHANGEABLE",
    "METRIC_PREFIX",
    "OBJECTIVES",
    "PRESET_ATTR",
    "PRIOR_ATTR",
    "axis_value",
    "break_even_calls",
    "candidates",
    "clearly_slower",
    "describe_inert",
    "eager_baseline",
    "eager_baselines",
    "front",
    "grace_s",
    "inert_in",
    "inert_knobs",
    "local_device_name",
    "local_settings",
    "model_sha256",
    "open_optuna_storage",
    "parse_axes",
    "pooled_measurements",
    "recover_stale",
    "scored_trial",
    "screened",
    "settings_from_row",
    "settle",
    "triton_version",
    "Events",
    "Objective",
    "PickRule",
    "Search",
    "SearchRequest",
    "Session",
    "StudyNotFound",
    "StudySettings",
    "WarmStart",
]
