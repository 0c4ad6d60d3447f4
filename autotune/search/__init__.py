"""The search end to end: :func:`run_study` runs a study in one call (the search, the wait for
trials other processes still run, the decision, the best-config file and what ships beside
it); ``autotune search``, ``autotune worker`` and :func:`tune` (the same study from Python, on a
model object and its example inputs) make it. The command line only parses, calls and prints.
:func:`build_request` turns the options of ``autotune search`` into the study's request
(``--effort``, the model file, the device, the space, the settings). The loop itself is
:class:`Search`: it runs (or resumes, or joins) a study's trials on Optuna, each in a process of
its own, and records them beside Optuna's tables (the study as stored is
:mod:`autotune.storage`, how trials are scored :mod:`autotune.scoring`;
:mod:`autotune.decide` chooses the winner from the records).

Example:
    >>> import autotune
    >>> result = autotune.tune(model, (x,), device="cpu", trials=8)  # doctest: +SKIP
    >>> fast = result.apply(model)  # doctest: +SKIP
"""

from __future__ import annotations

from autotune.search._ends import Ended
from autotune.search._events import Events
from autotune.search._open import finish_of, join_search, open_search, opening_lines
from autotune.search._request import NO_CUDA, build_request
from autotune.search._result import TuneResult
from autotune.search._run import Finish, StudyOutcome, run_study
from autotune.search._runners import trial_runner, trial_runners
from autotune.search._search import Search
from autotune.search._session import SearchRequest, Session, StudyNotFound
from autotune.search._start_from import StartFrom
from autotune.search._tune import tune

__all__ = [
    "NO_CUDA", "Ended", "Events", "Finish", "Search", "SearchRequest", "Session", "StartFrom",
    "StudyNotFound", "StudyOutcome", "TuneResult", "build_request", "finish_of",
    "join_search", "open_search", "opening_lines", "run_study", "trial_runner", "trial_runners",
    "tune",
]  # fmt: skip
