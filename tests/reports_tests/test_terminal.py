"""The search's closing lines (autotune/reports/terminal.py): eager's drift over the run, said
once, and an inconclusive decision's summary."""

from __future__ import annotations

import scripted

from autotune.decide import Decision
from autotune.decide._confirm import Confirmation
from autotune.decide._finalists import Finalist
from autotune.records import TrialRecord
from autotune.reports.terminal import decision, eager_drift
from autotune.runtime.config import BestConfig, CompileConfig

EAGER = TrialRecord(trial_number=0, config={}, config_hash="eager", brief="eager", status="ok",
                    baseline="eager", latency_median_s=0.040)  # fmt: skip
TUNED = TrialRecord(trial_number=3, config=CompileConfig().to_dict(), config_hash="x",
                    brief="inductor", status="ok")  # fmt: skip


def test_eager_drift_is_said_once_across_the_stages_that_measured_it():
    finalist = Finalist(TUNED, scripted.ok(2.0, eager_s=0.046), scripted.ok(2.0, eager_s=0.050))
    confirmed = Confirmation(TUNED, None, {3: [scripted.ok(2.0, eager_s=0.048)] * 2})
    best = BestConfig(decision="do_not_compile", reason="eager won")
    made = Decision(best, [EAGER], [finalist], confirmation=confirmed)
    assert eager_drift(made) == (
        "Eager measured 40ms in the search, 46ms to 50ms in the finalists, 48ms in the "
        "confirmation: the machine drifted ±17% over the run."
    )
    assert eager_drift(Decision(best, [EAGER])) == ""  # one stage: nothing to compare
    printed = decision(made, "best_config.json").splitlines()
    assert printed[0].startswith("Eager measured ") and printed[-1].startswith("Wrote ")


def test_an_inconclusive_decision_that_ships_eager_says_so():
    best = BestConfig(decision="inconclusive", reason="inconclusive: a tie")
    printed = decision(Decision(best, [EAGER]), "best_config.json")
    assert "Inconclusive: ships eager; see the file's reason." in printed
    assert "Decision: run the model eager." in printed
