"""``autotune verify``: re-measure a best-config file on this machine and check its claims."""

from __future__ import annotations

from autotune.verify._report import VerifyReport
from autotune.verify._rules import (
    DEFAULT_TOLERANCE,
    VERDICT_EXIT,
    Spread,
    is_slower,
    noise_floor,
    reliably_faster,
)
from autotune.verify._run import plan_measurements, verify

__all__ = [
    "DEFAULT_TOLERANCE",
    "VERDICT_EXIT",
    "Spread",
    "VerifyReport",
    "is_slower",
    "noise_floor",
    "plan_measurements",
    "reliably_faster",
    "verify",
]
