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
        "slower: 2.00x (1.90x to 2.10x, 3 repeats) vs claimed 2.30x (claim +15%)"
    )
    eager = {"verdict": "ok", "measured": 1.0, "claimed": None, "default": 1.02}
    assert suite._verified(eager) == "ok: default compile now 1.02x"
