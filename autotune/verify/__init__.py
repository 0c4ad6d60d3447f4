"""``autotune verify``: re-measure a best-config file on this machine and check its claims.

``_run`` measures (the plan of each repeat, in ABBA order), ``_claims`` sets the file's claims
beside the measurements pooled over repeats, ``_rules`` judges them, ``_warnings`` adds what
fails nothing, and ``_report`` holds the result and its ``--json`` form.
"""

from __future__ import annotations

from autotune.verify._rules import (
    DEFAULT_REPEATS,
    DEFAULT_TOLERANCE,
    VERDICT_EXIT,
    Spread,
    is_slower,
    noise_floor,
    reliably_faster,
)
from autotune.verify._run import plan_measurements, verify
from autotune.verify._verdict import VerifyReport

__all__ = [
    "DEFAULT_REPEATS",
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
