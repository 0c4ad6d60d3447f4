"""Screening: a sampled trial whose code the study already timed takes that timing, and one
clearly slower than the best so far is asked to stop timing early; baselines, presets and
warm-start configs are always timed in full."""

from __future__ import annotations

import dataclasses

import torch

from autotune.records import RecordStore, TrialRecord
from autotune.reports import terminal
from autotune.search import Search, SearchRequest
from autotune.search._screen import known_code, stop_below
from autotune.settings import StudySettings
from autotune.space import load_space
from autotune.storage import candidates
from autotune.storage._attrs import BASELINE_ATTR, COMBINATION_ATTR, PRESET_ATTR, PRIOR_ATTR
from autotune.trials import TrialResult, TrialSpec


class ByCode:
    """A scripted runner whose generated code depends on freezing and dynamic only (the mode
    and max_fusion_size change nothing), as Inductor's does for many knobs. Freezing is 1.5x,
    the rest 1.1x; code the spec says is known comes back untimed, as the trial child does."""

    def __init__(self) -> None:
        self.specs: list[TrialSpec] = []

    def run(self, spec: TrialSpec) -> TrialResult:
        self.specs.append(spec)
        facts = {"environment": {"host": "h", "torch": "2.13.0"}, "inputs": ["(4x16:float32)"],
                 "compile_time_s": 0.5, "model": {"sha256": "abc", "parameters": 1}}  # fmt: skip
        if spec.config is None:
            return _timed(1.0, None, facts)
        options = spec.config["options"]
        code = f"{'frozen' if options.get('freezing') else 'plain'}-{spec.config['dynamic']}"
        code = code.ljust(32, "0")
        if code in spec.known_code:
            return TrialResult(status="ok", code_hash=code,
                               equivalent_of=spec.known_code[code], **facts)  # fmt: skip
        speedup = 1.5 if options.get("freezing") else 1.1
        return _timed(speedup, code, facts)


def _timed(speedup: float, code: str | None, facts: dict) -> TrialResult:
    return TrialResult(
        status="ok", latency_median_s=1e-3 / speedup, latency_iqr_s=1e-5,
        eager_latency_median_s=1e-3, speedup_vs_eager=speedup,
        speedup_vs_eager_q1=speedup - 0.01, speedup_vs_eager_q3=speedup + 0.01,
        peak_memory_bytes=1, rounds=40, code_hash=code, **facts,
    )  # fmt: skip


def _request(tmp_path, model_file, space_file, trials: int, prune: bool = True) -> SearchRequest:
    space = load_space(space_file("presets"), "cpu")
    settings = StudySettings(
        model_path=model_file("tiny"), device="cpu", space=space.to_dict(),
        space_hash=space.content_hash(), torch_version=torch.__version__, scope="whole",
        trials=trials, finalists=1, prune=prune,
    )  # fmt: skip
    return SearchRequest("s", f"sqlite:///{tmp_path}/t.db", settings)


def test_a_sampled_trial_whose_code_was_timed_takes_that_timing(tmp_path, model_file, space_file):
    runner = ByCode()
    search = Search(_request(tmp_path, model_file, space_file, trials=10), runner)
    search.run()
    with RecordStore(search.request.storage) as store:
        records = store.trials("s")
    by_number = {r.trial_number: r for r in records}
    same = [r for r in records if r.equivalent_of is not None]
    # 7 sampled trials over 4 codes (freezing x dynamic): at least 3 generate a timed code
    assert len(same) >= 3
    for r in same:
        timed = by_number[r.equivalent_of]
        assert r.result["code_hash"] == timed.result["code_hash"]
        assert r.config_hash != timed.config_hash and r.duplicate_of is None
        assert (r.speedup_vs_eager, r.speedup_vs_eager_q1, r.latency_median_s) == (
            timed.speedup_vs_eager,
            timed.speedup_vs_eager_q1,
            timed.latency_median_s,
        )
        assert r.compile_time_s == 0.5 and r.result["rounds"] == 40
        assert r not in candidates(records)
    # they compiled: they count toward --trials
    assert sum(1 for r in records if r.baseline is None and r.duplicate_of is None) == 10
    # the sampler is told the timed trial's value
    values = {t.number: t.value for t in search.session.study.get_trials()}
    assert all(values[r.trial_number] == values[r.equivalent_of] for r in same)
    assert f"{len(same)} generated code already timed" in terminal.summary(
        _best(search, records), "best.json", records
    )


def test_baselines_are_timed_in_full_and_presets_time_only_new_code(
    tmp_path, model_file, space_file
):
    runner = ByCode()
    search = Search(_request(tmp_path, model_file, space_file, trials=10), runner)
    search.run()
    with RecordStore(search.request.storage) as store:
        records = store.trials("s")
        reused = {r.trial_number for r in records if r.duplicate_of is not None}
    by_number = {r.trial_number: r for r in records}
    # the max-autotune-no-cudagraphs preset (#2) generates default compile's code (#1): it
    # takes that timing; the freezing preset (#3) generates new code and is timed
    assert by_number[2].equivalent_of == 1 and by_number[3].equivalent_of is None
    fixed = {BASELINE_ATTR, PRESET_ATTR, COMBINATION_ATTR}
    kinds = [  # in the order run; a config already measured is not run again
        "fixed" if fixed & set(t.user_attrs) else "sampled"
        for t in sorted(search.session.study.get_trials(), key=lambda t: t.number)
        if t.number not in reused and PRIOR_ATTR not in t.user_attrs  # priors: told, not run
    ]
    assert len(kinds) == len(runner.specs)
    for kind, spec in zip(kinds, runner.specs, strict=True):
        if kind == "fixed":  # timed in full, unless a preset's code was timed already
            assert spec.measure.stop_below is None and spec.measure.screen_seconds is None
        else:  # default compile (1.1x, q1 1.09) was timed first: the floor is known
            assert spec.known_code and spec.measure.stop_below is not None
            assert spec.measure.stop_below >= 1.09
            # successive halving: a quarter of the timing first, the rest only within reach
            assert spec.measure.screen_seconds == spec.measure.target_seconds / 4


def test_no_prune_times_every_trial_to_the_end(tmp_path, model_file, space_file):
    runner = ByCode()
    Search(_request(tmp_path, model_file, space_file, trials=6, prune=False), runner).run()
    assert all(spec.measure.stop_below is None for spec in runner.specs)
    assert all(spec.measure.screen_seconds is None for spec in runner.specs)


def _record(number: int, speedup: float, q1: float, **fields) -> TrialRecord:
    result = {"code_hash": fields.pop("code", None), "batch_size": fields.pop("batch", None)}
    return TrialRecord(
        trial_number=number, config={"options": {}}, config_hash=f"h{number}", brief="b",
        status="ok", speedup_vs_eager=speedup, speedup_vs_eager_q1=q1, result=result, **fields,
    )  # fmt: skip


def test_the_floor_is_the_best_lower_quartile_at_this_batch_size():
    records = [
        dataclasses.replace(_record(0, 1.0, 0.9), baseline="eager", config={}),
        _record(1, 1.2, 1.1),
        _record(2, 1.6, 1.4),
        _record(3, 2.0, 1.9, batch=8),  # another batch size
        _record(4, 1.8, 1.7, duplicate_of=2),  # not its own measurement
    ]
    assert stop_below(records, "latency", None) == 1.4
    assert stop_below(records, "throughput", 8) == 1.9
    # amortized: a slower steady state may still win on compile time
    assert stop_below(records, "amortized", None) is None
    assert stop_below(records[:1], "latency", None) is None


def test_known_code_maps_each_code_to_the_earliest_trial_that_timed_it():
    records = [
        _record(5, 1.2, 1.1, code="a" * 32),
        _record(3, 1.2, 1.1, code="a" * 32),
        _record(4, 1.3, 1.2, code="b" * 32, batch=8),
        dataclasses.replace(
            _record(6, 1.2, 1.1, code="c" * 32), status="failed", failure_kind="accuracy"
        ),  # fmt: skip
    ]
    assert known_code(records, None) == {"a" * 32: 3}
    assert known_code(records, 8) == {"b" * 32: 4}


def _best(search: Search, records: list[TrialRecord]):
    from autotune.decide import best_config

    return best_config(records, search.session.settings, "s", search.request.storage)
