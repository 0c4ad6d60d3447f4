"""Finalists: the order of their fresh processes, and what a failure does to the rest."""

from __future__ import annotations

import os
from dataclasses import replace

import homes
import pytest

from autotune.decide._finalists import Finalist, left_behind, remeasure
from autotune.records import TrialRecord
from autotune.settings import StudySettings
from autotune.trials import MeasureSettings, TrialResult, TrialSpec
from autotune.trials._spec import DEFAULT_PRECISION

SETTINGS = StudySettings(
    model_path="m.py", device="cpu", space={}, space_hash="x", torch_version="2.13.0"
)


def searched(n: int, baseline: str | None = None) -> TrialRecord:
    return TrialRecord(
        trial_number=n, config={"backend": "inductor", "mode": f"m{n}"}, config_hash=f"h{n}",
        brief=f"config {n}", status="ok", baseline=baseline,
    )  # fmt: skip


class OrderRunner:
    """Records which config ran, in which cache, and whether that cache was still empty;
    ``speedups`` by mode (default 1.2x, quartiles +-0.1)."""

    def __init__(
        self, fail: frozenset[str] = frozenset(), speedups: dict[str, float] | None = None
    ) -> None:
        self.runs: list[tuple[str, bool]] = []
        self.fail = fail
        self.speedups = speedups or {}
        self.precision: set[float | None] = set()
        self.relaxed: dict[str, bool] = {}

    def run(self, spec: TrialSpec) -> TrialResult:
        assert spec.config is not None and spec.cache_dir is not None
        mode = spec.config["mode"]
        cold = not os.listdir(spec.cache_dir)
        self.precision.add(spec.measure.precision)
        self.relaxed[mode] = spec.relaxed_numerics
        self.runs.append((mode, cold))
        if mode in self.fail:
            return TrialResult.failed("timeout", "compile budget spent", error_tail="")
        open(os.path.join(spec.cache_dir, "kernel"), "w").close()  # what a compile leaves
        speedup = self.speedups.get(mode, 1.2)
        return TrialResult(
            status="ok", compile_time_s=10.0 if cold else 1.0, latency_median_s=1e-3,
            latency_iqr_s=1e-5, eager_latency_median_s=1e-3 * speedup, speedup_vs_eager=speedup,
            speedup_vs_eager_q1=speedup - 0.1, speedup_vs_eager_q3=speedup + 0.1,
        )  # fmt: skip


def test_finalists_run_all_cold_then_all_warm_in_reverse_order():
    runner = OrderRunner()
    notes: list[str] = []
    finalists = [searched(3), searched(5), searched(1, baseline="default")]

    done = remeasure(finalists, SETTINGS, on_note=notes.append, runner=runner)

    # ABBA over processes: machine drift during the passes lands on every finalist alike.
    assert runner.runs == [("m3", True), ("m5", True), ("m1", True),
                           ("m1", False), ("m5", False), ("m3", False)]  # fmt: skip
    assert [f.searched.trial_number for f in done] == [3, 5, 1]
    assert all(f.cold.compile_time_s == 10.0 and f.warm.compile_time_s == 1.0 for f in done)
    assert notes[0].startswith("re-measuring 3 finalists in fresh processes")
    summaries = [n for n in notes if n.startswith("finalist ")]
    assert summaries[0].startswith("finalist #3: cold compile 10.0s")
    assert summaries[2].startswith("finalist [default]: ")


def test_a_finalist_that_fails_cold_is_not_run_warm():
    runner = OrderRunner(fail=frozenset({"m5"}))
    notes: list[str] = []

    done = remeasure([searched(3), searched(5)], SETTINGS, on_note=notes.append, runner=runner)

    assert runner.runs == [("m3", True), ("m5", True), ("m3", False)]
    assert done[0].ok and not done[1].ok and done[1].warm is done[1].cold
    assert "finalist #5: timeout: compile budget spent" in notes


def test_a_finalist_the_cold_pass_left_clearly_behind_is_not_run_warm():
    # #5 (1.3x, q3 1.4x) is clearly behind #3 (2.0x, q1 1.9x); #7 (1.85x, q3 1.95x) overlaps
    # it; default torch.compile (1.0x) is always run twice: every speedup over it needs it.
    runner = OrderRunner(speedups={"m3": 2.0, "m5": 1.3, "m7": 1.85, "m1": 1.0})
    notes: list[str] = []
    finalists = [searched(3), searched(5), searched(7), searched(1, baseline="default")]

    done = remeasure(finalists, SETTINGS, on_note=notes.append, runner=runner)

    assert [m for m, cold in runner.runs if not cold] == ["m1", "m7", "m3"]  # no warm m5
    behind = done[1]
    assert behind.ok and behind.warm is behind.cold  # its cold run stands for both
    assert any(n.startswith("  warm #5: not run: its cold run (1.30x eager, q3 1.40x) is "
                            "clearly behind #3's (2.00x, q1 1.90x)") for n in notes)  # fmt: skip
    assert behind.cold_only and not done[0].cold_only
    assert "finalist #5: cold compile 10.0s (1.30x eager), not run warm (clearly behind): " in (
        "\n".join(notes)
    )


def test_left_behind_names_the_finalists_a_config_s_cold_run_left_clearly_behind():
    runner = OrderRunner(speedups={"m3": 2.0, "m5": 1.3, "m7": 1.85, "m1": 1.0})
    finalists = [searched(3), searched(5), searched(7), searched(1, baseline="default")]
    done = remeasure(finalists, SETTINGS, runner=runner)
    # #5 ran cold only; #3's cold run and #7's (1.85x, q1 1.75x) both leave it clearly behind
    assert left_behind(done, searched(3)) == {5} == left_behind(done, searched(7))
    assert left_behind(done, searched(1, baseline="default")) == set()  # 1.0x: not ahead of it
    assert left_behind(done, searched(9)) == set()  # no finalist


def test_only_the_latency_objective_leaves_a_finalist_behind():
    speedups = {"m3": 2.0, "m5": 1.3}
    for settings in (
        replace(SETTINGS, objective="amortized", calls=1000),  # compile times count there
        replace(SETTINGS, pareto=["latency", "compile"]),  # a front keeps slower configs
    ):
        runner = OrderRunner(speedups=speedups)
        remeasure([searched(3), searched(5)], settings, runner=runner)
        assert len(runner.runs) == 4


def test_finalists_time_to_the_study_precision():
    runner = OrderRunner()
    remeasure([searched(3)], SETTINGS, runner=runner)
    assert runner.precision == {DEFAULT_PRECISION}

    runner = OrderRunner()
    remeasure([searched(3)], replace(SETTINGS, finalist_precision=None), runner=runner)
    assert runner.precision == {None}


def test_precise_settings_time_longer_and_old_settings_still_load():
    precise = MeasureSettings(target_seconds=2.0).precise(0.01)
    assert (precise.precision, precise.max_seconds, precise.target_seconds) == (0.01, 10.0, 2.0)
    assert precise.max_rounds >= 2500  # 10 s of 4 ms rounds
    stored = {"warmup": 3, "min_rounds": 10, "max_rounds": 200, "target_seconds": 2.0}
    assert TrialSpec.from_dict({"model_path": "m.py", "device": "cpu", "config": None,
                                "measure": stored}).measure.precision is None  # fmt: skip


def test_finalists_are_held_to_the_gate_their_search_trial_was_held_to():
    runner = OrderRunner()
    loose = replace(searched(3), result={"accuracy": {"relaxed": True}})
    remeasure([loose, searched(1, baseline="default")], SETTINGS, runner=runner)
    assert runner.relaxed == {"m3": True, "m1": False}


def _known_to(precision: float, speedup: float = 2.0) -> TrialResult:
    half = precision * speedup
    return TrialResult(
        status="ok", speedup_vs_eager=speedup, speedup_vs_eager_ci_low=speedup - half,
        speedup_vs_eager_ci_high=speedup + half, rounds=40,
    )  # fmt: skip


def test_a_round_short_of_its_precision_says_so_with_the_range_it_reached():
    """On a busy machine finalists ended at +-5.7% to +-25.4% of a +-2% target, and the
    decision rested on them without a word."""
    from autotune.decide._finalists import Finalist, imprecise_round

    busy = [
        Finalist(searched(3), _known_to(0.057), _known_to(0.09)),
        Finalist(searched(1, "default"), _known_to(0.254), _known_to(0.1)),
    ]
    note = imprecise_round(busy, 0.02)
    assert note.startswith(
        "; mind the noise: the finalists' medians were known to ±5.7% to ±25.4%"
    )
    assert "short of the ±2.0% asked for (--precision)" in note
    assert "autotune finalize --remeasure" in note
    quiet = [Finalist(searched(3), _known_to(0.012), _known_to(0.019))]
    assert imprecise_round(quiet, 0.02) == ""
    assert imprecise_round(busy, None) == "" and imprecise_round([], 0.02) == ""
    failed = Finalist(searched(4), TrialResult.failed("timeout", "slow"), _known_to(0.5))
    assert imprecise_round([failed, *quiet], 0.02) == ""  # a failed finalist was not decided on


def test_the_decision_of_an_imprecise_round_says_so_in_its_reason(tmp_path, monkeypatch, capsys):
    import json
    from pathlib import Path

    import scripted

    from autotune.cli import main
    from autotune.reports import load_study_data, render_report

    def noisy(spec: TrialSpec) -> TrialResult:
        result = scripted.ok(1.0 if spec.config is None else 1.5)
        half = 0.1 * (result.speedup_vs_eager or 1.0)  # +-10% where +-2% was asked
        result.speedup_vs_eager_ci_low = (result.speedup_vs_eager or 1.0) - half
        result.speedup_vs_eager_ci_high = (result.speedup_vs_eager or 1.0) + half
        return result

    scripted.use(monkeypatch, noisy)
    homes.fresh(monkeypatch, tmp_path)
    fixtures = Path(__file__).parents[1] / "fixtures"
    storage = f"sqlite:///{tmp_path}/s.db"
    code = main([
        "search", str(fixtures / "models" / "tiny.py"), "--space",
        str(fixtures / "spaces" / "aot_eager_16.toml"), "--trials", "3", "--storage", storage,
        "--study", "s", "--out", str(tmp_path / "best.json"), "--device", "cpu",
        "--finalists", "1", "--measure-seconds", "0.2", "--scope", "whole",
    ])  # fmt: skip
    assert code == 0
    written = json.loads((tmp_path / "best.json").read_text())
    assert (
        "mind the noise: the finalists' medians were known to ±10.0% to ±10.0%"
        in (written["reason"])
    )
    # The file carries the interval of the round that measured its config, not the search's.
    metrics = written["metrics"]
    interval = (metrics["speedup_vs_eager_ci_low"], metrics["speedup_vs_eager_ci_high"])
    assert interval == pytest.approx((1.35, 1.65))
    assert main(["show", str(tmp_path / "best.json")]) == 0
    assert "1.50x eager (95% interval 1.35x to 1.65x)" in capsys.readouterr().out
    report = render_report(load_study_data(storage, "s", importance=False), 200)
    assert "mind the noise" in report


def test_a_finalist_claims_the_interval_of_its_cold_and_warm_rounds_pooled():
    """Two processes that each know their median to about +-1% and disagree by 10%: the
    record's interval takes in both medians (autotune.measure.pooled)."""
    cold = TrialResult(status="ok", speedup_vs_eager=2.0, speedup_vs_eager_ci_low=1.98,
                       speedup_vs_eager_ci_high=2.02,
                       speedup_rounds=[1.97 + 0.003 * i for i in range(21)])  # fmt: skip
    warm = replace(
        cold, speedup_vs_eager=2.2, speedup_rounds=[2.17 + 0.003 * i for i in range(21)]
    )
    trial = replace(searched(1), result={"speedup_vs_eager_ci_low": 1.0})  # the search's
    record = Finalist(trial, cold, warm).record()
    low, high = record.result["speedup_vs_eager_ci_low"], record.result["speedup_vs_eager_ci_high"]
    assert low == pytest.approx(2.0) and high == pytest.approx(2.2)  # the two medians
