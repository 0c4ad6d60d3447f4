"""Tune from Python: :func:`tune` runs the study ``autotune search`` runs, on a model object
and its example inputs, and returns a :class:`TuneResult` to apply, read and report.

Example:
    >>> import autotune
    >>> result = autotune.tune(model, (x,), device="cpu", trials=8)  # doctest: +SKIP
    >>> fast = result.apply(model)  # doctest: +SKIP
"""

from __future__ import annotations

from autotune.tuning._result import TuneResult
from autotune.tuning._tune import tune

__all__ = ["TuneResult", "tune"]
