"""A study end to end, in one call: :func:`run_study` runs the search, waits for trials other
processes still run, decides, writes the best-config file and ships what goes beside it.
``autotune search`` makes this call (and the Python API will); the command line only parses,
calls and prints. :func:`build_request` turns the options of ``autotune search`` into the
study's request (``--effort``, the model file, the device, the space, the settings)."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from autotune.pipeline._device import default_device, resolve_device
    from autotune.pipeline._request import NO_CUDA, build_request
    from autotune.pipeline._run import Finish, StudyOutcome, run_study
    from autotune.pipeline._runners import trial_runner, trial_runners
    from autotune.pipeline._search import finish_of, join_search, open_search, opening_lines

# Names load on first use: resolving a device (every subcommand) needs torch only.
_NAMES = {
    "NO_CUDA": "_request", "Finish": "_run", "StudyOutcome": "_run", "build_request": "_request",
    "default_device": "_device", "resolve_device": "_device", "run_study": "_run",
    "trial_runner": "_runners", "trial_runners": "_runners", "finish_of": "_search",
    "join_search": "_search", "open_search": "_search", "opening_lines": "_search",
}  # fmt: skip

__all__ = [
    "NO_CUDA", "Finish", "StudyOutcome", "build_request", "default_device", "finish_of",
    "join_search", "open_search", "opening_lines", "resolve_device", "run_study", "trial_runner",
    "trial_runners",
]  # fmt: skip


def __getattr__(name: str) -> Any:
    if name not in _NAMES:
        raise AttributeError(f"module 'autotune.pipeline' has no attribute {name!r}")
    return getattr(importlib.import_module(f"autotune.pipeline.{_NAMES[name]}"), name)
