"""The search loop: Optuna's search over compile configurations, recorded beside Optuna's tables.

:class:`Search` runs (or resumes) a study's trials; the study as stored (its settings, records
and Optuna storage) is :mod:`autotune.storage`, how trials are scored :mod:`autotune.scoring`;
:mod:`autotune.decide` chooses the winner from the records, and :mod:`autotune.ship` builds
what ships beside the file.
"""

from __future__ import annotations

from autotune.study._ends import Ended
from autotune.study._events import Events
from autotune.study._identity import (
    local_device_name,
    local_settings,
    model_sha256,
    triton_version,
)
from autotune.study._inert import describe as describe_inert
from autotune.study._inert import inert_in, inert_knobs
from autotune.study._screen import screened
from autotune.study._search import Search, SearchRequest, StudyNotFound
from autotune.study._session import Session
from autotune.study._start_from import StartFrom

__all__ = [
    "Ended",
    "Events",
    "Search",
    "SearchRequest",
    "Session",
    "StudyNotFound",
    "StartFrom",
    "describe_inert",
    "inert_in",
    "inert_knobs",
    "local_device_name",
    "local_settings",
    "model_sha256",
    "screened",
    "triton_version",
]
