"""benchmarks/screening.py's summary of a study: what each kind of trial spent timing, and
what screening spared by that measure."""

from __future__ import annotations

import sys
from pathlib import Path

from autotune.records import TrialRecord

sys.path.insert(0, str(Path(__file__).parents[2] / "benchmarks"))
import screening  # noqa: E402


def _trial(number: int, timing_s: float, **result) -> TrialRecord:
    return TrialRecord(
        trial_number=number, config={"options": {}}, config_hash=f"h{number}", brief=f"c{number}",
        status="ok", speedup_vs_eager=1.2, result={"phases": {"timing_s": timing_s}, **result},
    )  # fmt: skip


def test_the_summary_counts_each_kind_and_what_screening_spared():
    records = [
        _trial(2, 2.0),
        _trial(3, 4.0),
        _trial(4, 0.0, equivalent_of=2),
        _trial(5, 0.5, pruned=True, rounds=10),
    ]
    text = screening._section("m", records, 60.0, left=[5])
    assert "4 search trials in 60 s" in text
    # median full timing 3.0 s: 3.0 for the equivalent, 3.0 - 0.5 for the early stop; the
    # search would have taken 60 + 5.5 s
    assert "spared about 6 s of timing, 8% of what the search would have taken" in text
    assert (
        "| same code as an earlier trial (not timed) | 1 | 25% | 0.00 | 0.0 | 3.0 (5%) |" in text
    )
    assert "| 1 | 25% | 0.50 | 0.5 | 2.5 (4%) |" in text  # stopped timing early
    assert "left a knob shown inert to torch: 1 (#5)" in text
    assert "#4 = #2" in text and "#5 stopped after 10 rounds" in text
