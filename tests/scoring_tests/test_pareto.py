"""--pareto studies: the front, the --pick rule, and what Optuna is told."""

from __future__ import annotations

import math
from dataclasses import replace

import optuna
import pytest
import torch

from autotune.decide import pick_from_front
from autotune.errors import UsageError
from autotune.records import TrialRecord
from autotune.reports.terminal import pareto_table, summary
from autotune.scoring import PickRule, front, parse_axes
from autotune.scoring._pareto import optuna_values
from autotune.search import Search, SearchRequest
from autotune.settings import StudySettings
from autotune.space import load_space
from autotune.trials import TrialResult, TrialSpec

AXES = ["latency", "compile"]


def rec(n, speedup, compile_s, *, q=0.05, memory=None, baseline=None, status="ok"):
    """A measured compiled trial (or a baseline) with a paired spread of +-q."""
    return TrialRecord(
        trial_number=n,
        config={} if baseline == "eager" else {"backend": "inductor", "mode": f"m{n}"},
        config_hash=f"h{n}",
        brief=f"config {n}",
        status=status,
        baseline=baseline,
        failure_kind=None if status == "ok" else "timeout",
        compile_time_s=None if baseline == "eager" else compile_s,
        latency_median_s=1e-3 / speedup,
        eager_latency_median_s=1e-3,
        speedup_vs_eager=speedup if status == "ok" else None,
        speedup_vs_eager_q1=speedup - q if status == "ok" else None,
        speedup_vs_eager_q3=speedup + q if status == "ok" else None,
        peak_memory_bytes=memory,
    )


EAGER = rec(0, 1.0, None, baseline="eager")
DEFAULT = rec(1, 1.20, 10.0, baseline="default")
FAST_SLOW_COMPILE = rec(2, 1.60, 40.0)
MIDDLE = rec(3, 1.40, 12.0)
CHEAP = rec(4, 1.25, 3.0)
DOMINATED = rec(5, 1.30, 50.0)  # slower and longer to compile than #2
FAILED = rec(6, 2.0, 1.0, status="failed")
RECORDS = [EAGER, DEFAULT, FAST_SLOW_COMPILE, MIDDLE, CHEAP, DOMINATED, FAILED]


def numbers(records):
    return [r.trial_number for r in records]


def test_the_front_keeps_what_no_other_config_beats_on_every_axis():
    assert numbers(front(RECORDS, AXES)) == [2, 3, 4, 0]  # fastest first; eager: 1x, 0 s


def test_a_memory_axis_brings_a_lean_config_back_to_the_front():
    lean = rec(5, 1.30, 50.0, memory=10)
    fat = [rec(n, s, c, memory=100) for n, s, c in ((2, 1.6, 40.0), (3, 1.4, 12.0))]
    eager = rec(0, 1.0, None, baseline="eager", memory=100)
    assert numbers(front([eager, *fat, lean], ["latency", "compile", "memory"])) == [2, 3, 5, 0]


def pick(rule, records=RECORDS):
    settings = StudySettings(
        model_path="m.py", device="cpu", space={}, space_hash="x", torch_version=torch.__version__,
        pareto=AXES,
    )  # fmt: skip
    return pick_from_front(records, settings, "s", "sqlite:///x.db", PickRule.parse(rule))


def test_fastest_picks_the_fastest_point_and_names_the_rule_and_the_front():
    picked = pick("fastest")
    assert picked.best.decision == "compile" and picked.best.source["trial"] == 2
    assert picked.best.source["pick"] == "fastest"
    assert picked.best.source["pick_rule"] == {
        "goal": "fastest",
        "max_compile_s": None,
        "max_memory_bytes": None,
        "min_speedup": None,
    }
    assert picked.best.source["pareto_front"] == [2, 3, 4, 0]
    assert picked.best.workload["objective"] == "pareto:latency,compile"
    assert "picked from the Pareto front (latency, compile; 4 points) by --pick fastest" in (
        picked.best.reason
    )


def test_fastest_within_a_compile_cap():
    picked = pick("fastest,compile<=15")
    assert picked.chosen is MIDDLE and picked.best.source["pick"] == "fastest,compile<=15s"


def test_the_quickest_compile_that_reaches_a_speedup():
    assert pick("min-compile,speedup>=1.3").chosen is MIDDLE
    assert pick("min-compile,speedup>=1.2").chosen is CHEAP


def test_the_quickest_compile_of_all_is_no_compile():
    picked = pick("min-compile")
    assert picked.best.decision == "do_not_compile" and picked.chosen is None
    assert "--pick min-compile chooses eager (no compile) from the Pareto front" in (
        picked.best.reason
    )


def test_no_point_meeting_the_rule_means_do_not_compile():
    picked = pick("speedup>=2")
    assert picked.best.decision == "do_not_compile"
    assert picked.best.reason == "no point of the Pareto front meets --pick fastest,speedup>=2x"


def test_a_point_not_reliably_faster_than_eager_is_passed_over():
    shaky = rec(7, 1.10, 1.0, q=0.2)  # cheapest compile, but its lower quartile is below 1x
    picked = pick("min-compile,speedup>=1.05", [*RECORDS, shaky])
    assert picked.chosen is CHEAP


def test_fastest_gives_way_to_default_compile_within_the_noise():
    close = rec(8, 1.22, 8.0, q=0.1)  # faster than default, but within its spread
    picked = pick("fastest,compile<=9", [EAGER, rec(1, 1.20, 8.5, baseline="default"), close])
    assert picked.best.source["trial"] == 1
    assert "so the default compile is recommended" in picked.best.reason
    # the default compile has no payback against itself: the summary says what it is instead
    assert "break_even_calls_vs_default" not in picked.best.metrics
    said = summary(picked.best, "best_config.json", RECORDS)
    assert "calls vs eager (it is default torch.compile)" in said
    # #8 dominates the default, so the table lists the pick below the front, marked
    table = pareto_table(picked.front, AXES, "search", picked.chosen).splitlines()
    assert [line.split()[0] for line in table[1:]] == ["#8", "[eager]", "*"]
    assert "[default] 1.20x eager" in table[-1] and table[-1].endswith("(picked off the front)")


@pytest.mark.parametrize(
    ("rule", "words"),
    [
        ("quickest", "'quickest' is neither a goal nor a limit"),
        ("compile>=3", "'compile>=3' is neither a goal nor a limit"),
        ("compile<=soon", "compile takes a number, got 'soon'"),
        ("memory<=lots", "memory takes a number, got 'lots'"),
        ("speedup>=0", "speedup must be above 0"),
    ],
)
def test_a_bad_pick_rule_says_what_a_rule_is(rule, words):
    with pytest.raises(UsageError) as info:
        PickRule.parse(rule)
    assert words in str(info.value) and "e.g. --pick 'fastest,compile<=60'" in str(info.value)


def test_pick_rule_units():
    rule = PickRule.parse("min-memory, memory<=2GiB, compile<=90s, speedup>=1.1x")
    assert (rule.goal, rule.max_memory_bytes, rule.max_compile_s, rule.min_speedup) == (
        "min-memory",
        2 * 2**30,
        90.0,
        1.1,
    )


@pytest.mark.parametrize("axes", ["compile,memory", "latency", "latency,speed", "latency,latency"])
def test_pareto_axes_must_be_latency_and_others(axes):
    with pytest.raises(UsageError, match="--pareto-axes takes two or three distinct axes"):
        parse_axes(axes)


def test_a_failed_trial_is_told_the_worst_values():
    assert optuna_values(FAILED, AXES) == [0.0, math.inf]
    assert optuna_values(EAGER, AXES) == [1.0, 0.0]
    lean = rec(9, 1.5, 2.0, memory=3 * 2**20)
    assert optuna_values(lean, ["latency", "compile", "memory"]) == [1.5, 2.0, 3.0]


class CompileTimeRunner:
    """Speedup and compile time by (fullgraph, dynamic): a real trade-off between them."""

    TABLE = {(False, False): (1.5, 20.0), (True, False): (1.3, 4.0),
             (False, True): (1.2, 30.0), (True, True): (1.1, 2.0)}  # fmt: skip

    def run(self, spec: TrialSpec) -> TrialResult:
        speedup, compile_s, key = 1.0, 0.0, None
        if spec.config is not None:
            key = (spec.config["fullgraph"], spec.config["dynamic"])
            speedup, compile_s = self.TABLE.get(key, (1.2, 10.0))
        if key == (False, True):
            return TrialResult.failed("timeout", "compile budget spent", error_tail="")
        return TrialResult(
            status="ok", compile_time_s=compile_s, latency_median_s=1e-3 / speedup,
            latency_iqr_s=1e-5, eager_latency_median_s=1e-3, speedup_vs_eager=speedup,
            speedup_vs_eager_q1=speedup - 0.02, speedup_vs_eager_q3=speedup + 0.02,
            peak_memory_bytes=2**20, environment={"host": "h"}, inputs=["(4x16:float32)"],
        )  # fmt: skip


def test_a_pareto_study_is_multi_objective_and_fails_infeasible_trials(tmp_path, model_file,
                                                                      space_file):  # fmt: skip
    space = load_space(space_file("aot_eager"), "cpu")
    settings = StudySettings(
        model_path=model_file("tiny"), device="cpu", space=space.to_dict(),
        space_hash=space.content_hash(), torch_version=torch.__version__, scope="whole",
        pareto=AXES, trials=20,
    )  # fmt: skip
    request = SearchRequest("p", f"sqlite:///{tmp_path}/t.db", settings)
    search = Search(request, CompileTimeRunner())
    records = search.run()
    study = optuna.load_study(study_name="p", storage=request.storage)
    assert [d.name for d in study.directions] == ["MAXIMIZE", "MINIMIZE"]
    told = {t.number: t for t in study.trials}
    timed_out = next(r for r in records if r.failure_kind == "timeout")
    assert told[timed_out.trial_number].values == [0.0, math.inf]
    # a failed trial is on no front Optuna computes: optuna-dashboard, study.best_trials
    assert timed_out.trial_number not in {t.number for t in study.best_trials}
    assert numbers(front(records, AXES))[-1] == 0  # eager closes every front
    picked = pick_from_front(records, search.session.settings, "p", request.storage,
                             PickRule.parse("fastest,compile<=10"))  # fmt: skip
    assert picked.chosen is not None and picked.chosen.compile_time_s == 4.0

    single = replace(settings, pareto=None)
    with pytest.raises(UsageError, match="already exists with other settings"):
        Search(SearchRequest("p", request.storage, single), CompileTimeRunner())


def result(speedup, compile_s, q=0.05):
    return TrialResult(
        status="ok", compile_time_s=compile_s, latency_median_s=1e-3 / speedup,
        latency_iqr_s=1e-5, eager_latency_median_s=1e-3, speedup_vs_eager=speedup,
        speedup_vs_eager_q1=speedup - q, speedup_vs_eager_q3=speedup + q,
        peak_memory_bytes=2**20,
    )  # fmt: skip


def test_the_rule_is_applied_to_the_finalists_cold_compiles_and_pooled_speedups():
    from autotune.decide._finalists import Finalist

    settings = StudySettings(
        model_path="m.py", device="cpu", space={}, space_hash="x", torch_version=torch.__version__,
        pareto=AXES,
    )  # fmt: skip
    # In the search (shared kernel cache) #3 compiled in 12 s; cold, it takes 20 s.
    finalists = [
        Finalist(MIDDLE, cold=result(1.38, 20.0), warm=result(1.42, 2.0)),
        Finalist(CHEAP, cold=result(1.24, 3.5), warm=result(1.26, 0.5)),
        Finalist(DEFAULT, cold=result(1.05, 10.0), warm=result(1.07, 1.0)),
    ]
    rule = PickRule.parse("fastest,compile<=15")
    picked = pick_from_front(RECORDS, settings, "s", "x", rule, finalists=finalists)
    assert picked.chosen is not None and picked.chosen.trial_number == CHEAP.trial_number
    # pooled over the cold and the warm process: median speedup, widest quartiles
    assert picked.best.metrics["speedup_vs_eager"] == pytest.approx(1.25)
    assert picked.best.metrics["speedup_vs_eager_q1"] == pytest.approx(1.19)
    assert picked.best.metrics["speedup_vs_eager_q3"] == pytest.approx(1.31)
    assert picked.best.metrics["cold_compile_time_s"] == 3.5
    assert picked.best.metrics["speedup_vs_default"] == pytest.approx(1.25 / 1.06)
    charging = replace(settings, charge_warm_compile=True)
    warm = pick_from_front(RECORDS, charging, "s", "x", rule, finalists=finalists)
    assert warm.chosen is not None and warm.chosen.trial_number == MIDDLE.trial_number
