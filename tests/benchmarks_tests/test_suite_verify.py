"""benchmarks/suite.py's verify column: one `autotune verify --repeats N` of the emitted file,
its pooled figure and interval beside the claim, and how far the claim is off."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parents[2] / "benchmarks"))
import suite  # noqa: E402


def test_the_verify_column_sets_the_pooled_interval_beside_the_claim():
    run = {"verdict": "slower", "repeats": 3, "measured": 2.0, "low": 1.9, "high": 2.1,
           "claimed": 2.3, "default": 1.5}  # fmt: skip
    assert suite._verified(run) == (
        "slower: 2.00x (1.90x to 2.10x, 3 repeats) vs claimed 2.30x (claim +15%); raised 15% "
        "(2.64x) it fails (tolerance 5% to 10%)"  # a run that did not record it: both ends
    )


def test_the_claim_raised_by_15_percent_is_judged_by_verifys_rule_at_its_tolerance():
    """1.15 x 2.0 = 2.30 against the interval's top 2.1: above it by 9.5%, so it fails at
    verify's 5% and passes at a 10% tolerance."""
    run = {"verdict": "ok", "repeats": 3, "measured": 2.0, "low": 1.9, "high": 2.1,
           "claimed": 2.0, "tolerance": 0.05}  # fmt: skip
    assert suite._verified(run).endswith("raised 15% (2.30x) it fails (tolerance 5%)")
    assert suite._verified({**run, "tolerance": 0.10}).endswith("it PASSES (tolerance 10%)")
    unknown = {**run, "tolerance": None}
    assert suite._verified(unknown).endswith(
        "it fails at 5%, PASSES at 10% (the tolerance verify applied was not recorded)"
    )
    eager = {"verdict": "ok", "measured": 1.0, "claimed": None, "default": 1.02}
    assert suite._verified(eager) == "ok: default compile now 1.02x"
