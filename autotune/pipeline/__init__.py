"""A study end to end, in one call: :func:`run_study` runs the search, waits for trials other
processes still run, decides, writes the best-config file and ships what goes beside it.
``autotune search`` makes this call (and the Python API will); the command line only parses,
calls and prints."""

from __future__ import annotations

from autotune.pipeline._run import Finish, StudyOutcome, run_study

__all__ = ["Finish", "StudyOutcome", "run_study"]
