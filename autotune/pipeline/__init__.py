"""A study end to end, in one call: :func:`run_study` runs the search, waits for trials other
processes still run, decides, writes the best-config file and ships what goes beside it.
``autotune search`` and :func:`autotune.tune` make this call; the command line only parses,
calls and prints. :func:`build_request` turns the options of ``autotune search`` into the
study's request (``--effort``, the model file, the device, the space, the settings)."""

from __future__ import annotations

from autotune.pipeline._request import NO_CUDA, build_request
from autotune.pipeline._run import Finish, StudyOutcome, run_study
from autotune.pipeline._runners import trial_runner, trial_runners
from autotune.pipeline._search import finish_of, join_search, open_search, opening_lines

__all__ = [
    "NO_CUDA", "Finish", "StudyOutcome", "build_request", "finish_of", "join_search",
    "open_search", "opening_lines", "run_study", "trial_runner", "trial_runners",
]  # fmt: skip
