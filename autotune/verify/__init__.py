"""``autotune verify``: re-measure a best-config file on this machine and check its claims.

``_run`` measures (the plan of each repeat, in ABBA order), ``_figures`` sets the file's claims
beside the measurements pooled over repeats, ``_rules`` judges them, ``_warnings`` adds what
fails nothing, and ``_verdict`` holds the result and its ``--json`` form.
"""

from __future__ import annotations

from autotune.verify._rules import (
    DEFAULT_REPEATS,
    DEFAULT_TOLERANCE,
    MAX_TOLERANCE,
    VERDICT_EXIT,
    noise_floor,
    over_claims,
    reliably_faster,
    tolerance_for,
    under_claims,
)
from autotune.verify._run import plan_measurements, verify
from autotune.verify._verdict import VerifyReport

__all__ = [
    "DEFAULT_REPEATS",
    "DEFAULT_TOLERANCE",
    "MAX_TOLERANCE",
    "VERDICT_EXIT",
    "VerifyReport",
    "over_claims",
    "tolerance_for",
    "under_claims",
    "noise_floor",
    "plan_measurements",
    "reliably_faster",
    "verify",
]
