"""Presets in the search: queued after the baselines, measured as written, and the best of
them re-measured beside the winner."""

from __future__ import annotations

import dataclasses

import torch

from autotune.decide import best_config, finalist_candidates
from autotune.decide._finalists import Finalist
from autotune.decide._presets import preset_hashes
from autotune.records import RecordStore, TrialRecord
from autotune.reports import load_study_data, render_report
from autotune.search import Ended, Search, SearchRequest
from autotune.settings import StudySettings
from autotune.space import load_space
from autotune.storage._attrs import PRESET_ATTR
from autotune.trials import TrialResult, TrialSpec


class ByPreset:
    """Speedup by what a config sets: freezing 1.5x, a larger fusion size 1.3x, else 1.1x."""

    def __init__(self) -> None:
        self.specs: list[TrialSpec] = []

    def run(self, spec: TrialSpec) -> TrialResult:
        self.specs.append(spec)
        if spec.config is None:
            speedup = 1.0
        elif spec.config["options"] == {"freezing": True}:
            speedup = 1.5 if spec.config["dynamic"] is None else 1.505  # within the spread
        elif spec.config["options"].get("freezing"):
            speedup = 1.5
        elif spec.config["options"].get("max_fusion_size") == 128:
            speedup = 1.3
        else:
            speedup = 1.1
        return TrialResult(
            status="ok", compile_time_s=0.5, latency_median_s=1e-3 / speedup,
            latency_iqr_s=1e-5, eager_latency_median_s=1e-3, speedup_vs_eager=speedup,
            speedup_vs_eager_q1=speedup - 0.01, speedup_vs_eager_q3=speedup + 0.01,
            peak_memory_bytes=1, environment={"host": "h", "torch": "2.13.0"},
            model={"sha256": "abc", "parameters": 1}, inputs=["(4x16:float32)"],
        )  # fmt: skip


def _request(tmp_path, model_file, space_file, trials: int) -> SearchRequest:
    space = load_space(space_file("presets"), "cpu")
    settings = StudySettings(
        model_path=model_file("tiny"), device="cpu", space=space.to_dict(),
        space_hash=space.content_hash(), torch_version=torch.__version__, scope="whole",
        trials=trials, finalists=1,
    )  # fmt: skip
    return SearchRequest("s", f"sqlite:///{tmp_path}/t.db", settings)


def _searched(
    request: SearchRequest, first: dict | None = None
) -> tuple[Search, list[TrialRecord]]:
    """The study searched with ByPreset (``first``: params queued before it runs), and its
    records."""
    search = Search(request, ByPreset())
    if first is not None:
        search.session.study.enqueue_trial(first)
    search.run()
    with RecordStore(request.storage) as store:
        return search, store.trials("s")


def test_presets_run_after_the_baselines_each_as_written(tmp_path, model_file, space_file):
    runner, notes = ByPreset(), []
    request = _request(tmp_path, model_file, space_file, trials=6)
    search = Search(request, runner, on_note=notes.append)
    records = search.run()

    presets = [t.user_attrs.get(PRESET_ATTR) for t in search.session.study.get_trials()]
    assert presets[:5] == [None, None, "max-autotune-no-cudagraphs", "freezing", "fusion"]
    configs = [s.config for s in runner.specs[2:5]]
    assert configs[0]["mode"] == "max-autotune-no-cudagraphs" and configs[0]["dynamic"] is None
    assert configs[1]["options"] == {"freezing": True}
    assert configs[2]["options"] == {"max_fusion_size": 128} and configs[2]["dynamic"] is True
    assert any(
        "presets: measuring max-autotune-no-cudagraphs, freezing, fusion" in n for n in notes
    )
    assert sum(r.baseline is None for r in records if r.duplicate_of is None) == 6

    # a second run of the same study queues them no more
    Search(request, ByPreset()).run()
    again = [t for t in search.session.study.get_trials() if PRESET_ATTR in t.user_attrs]
    assert len(again) == 3


def test_the_budget_gives_presets_at_most_half(tmp_path, model_file, space_file):
    notes: list[str] = []
    search = Search(_request(tmp_path, model_file, space_file, trials=2), ByPreset(),
                    on_note=notes.append)  # fmt: skip
    search.run()
    queued = [
        t.user_attrs[PRESET_ATTR]
        for t in search.session.study.get_trials()
        if PRESET_ATTR in t.user_attrs
    ]
    assert queued == ["max-autotune-no-cudagraphs"]
    assert any("freezing, fusion not measured" in n for n in notes)


def test_the_best_preset_is_always_a_finalist(tmp_path, model_file, space_file):
    request = _request(tmp_path, model_file, space_file, trials=6)
    search, records = _searched(request)
    chosen = finalist_candidates(records, search.session.settings)
    # one finalist by the budget, default compile, and the best preset: freezing (1.5x)
    assert any(r.config and r.config["options"] == {"freezing": True} for r in chosen)
    assert any(r.baseline == "default" for r in chosen)


def test_a_tuned_config_within_the_spread_of_a_preset_gives_way_to_it(
    tmp_path, model_file, space_file
):
    request = _request(tmp_path, model_file, space_file, trials=4)
    tuned = {"compile.mode": "default", "compile.dynamic": True, "inductor.freezing": True,
             "inductor.max_fusion_size": 64}  # fmt: skip
    search, records = _searched(request, tuned)  # 1.505x: a hair above the freezing preset's 1.5x
    best = best_config(records, search.session.settings, "s", request.storage)
    assert best.config is not None and best.config.options == {"freezing": True}
    assert best.config.dynamic is None
    assert "did not beat the preset 'freezing'" in best.reason


def test_a_preset_the_finalist_round_left_clearly_behind_does_not_take_the_win(
    tmp_path, model_file, space_file
):
    """ViT at 8 trials (benchmarks/results/suite_cpu_levers_8.md): the round did not run the
    bf16 preset warm, its cold run clearly behind the tuned config's; the tuned config's warm
    run then widened its pooled quartiles down to the preset's one-process upper quartile."""
    request, search, records, (mine, preset, default) = _tied(tmp_path, model_file, space_file)
    behind = _ran(1.9, 1.8, 1.95)
    round_ = [
        Finalist(mine, _ran(2.2, 2.1, 2.3), _ran(1.95, 1.85, 2.05)),
        Finalist(preset, behind, behind),  # its cold run stands for both
        Finalist(default, _ran(1.1, 1.05, 1.15), _ran(1.1, 1.05, 1.15)),
    ]
    settings = search.session.settings
    best = best_config(records, settings, "s", request.storage, finalists=round_)
    assert best.source["trial"] == mine.trial_number, best.reason
    assert "did not beat the preset" not in best.reason
    # run warm (a run of its own, nearly the same), the preset is within the spread and wins
    round_[1] = Finalist(preset, behind, _ran(1.9, 1.8, 1.96))
    best = best_config(records, settings, "s", request.storage, finalists=round_)
    assert best.source["trial"] == preset.trial_number
    assert "did not beat the preset 'freezing'" in best.reason


def _tied(tmp_path, model_file, space_file):
    """A search whose tuned config (1.505x) ties the freezing preset (1.5x): the request, the
    search, its records, and the tuned, preset and default-compile records."""
    request = _request(tmp_path, model_file, space_file, trials=4)
    tuned = {"compile.mode": "default", "compile.dynamic": True, "inductor.freezing": True,
             "inductor.max_fusion_size": 64}  # fmt: skip
    search, records = _searched(request, tuned)
    mine = next(r for r in records if r.speedup_vs_eager == 1.505)
    preset = next(r for r in records if r.config_hash in preset_hashes(search.session.settings)
                  and r.config["options"] == {"freezing": True})  # fmt: skip
    default = next(r for r in records if r.baseline == "default")
    return request, search, records, (mine, preset, default)


def _ran(speedup: float, q1: float, q3: float) -> TrialResult:
    return TrialResult(
        status="ok", compile_time_s=0.5, latency_median_s=1e-3 / speedup, latency_iqr_s=1e-5,
        eager_latency_median_s=1e-3, speedup_vs_eager=speedup, speedup_vs_eager_q1=q1,
        speedup_vs_eager_q3=q3, environment={"host": "h", "torch": "2.13.0"},
        model={"sha256": "abc", "parameters": 1}, inputs=["(4x16:float32)"],
    )  # fmt: skip


def test_preset_finalists_all_puts_every_measured_preset_beside_the_winner(
    tmp_path, model_file, space_file
):
    request = _request(tmp_path, model_file, space_file, trials=6)
    search, records = _searched(request)
    best_only = finalist_candidates(records, search.session.settings)
    every = finalist_candidates(records, dataclasses.replace(search.session.settings,
                                                             preset_finalists="all"))  # fmt: skip
    names = preset_hashes(search.session.settings)
    assert sum(r.config_hash in names for r in best_only) == 1
    assert {r.config_hash for r in every if r.config_hash in names} == {
        r.config_hash for r in records if r.config_hash in names and r.status == "ok"
    }
    assert len({r.config_hash for r in every}) == len(every)  # none twice


class Slower(ByPreset):
    """Every compiled config ``speedup`` x eager, clearly (quartiles +-0.01); ``fast`` presets
    (by their options) 1.2x."""

    def __init__(self, speedup: float = 0.8, fast: dict | None = None) -> None:
        super().__init__()
        self.speedup, self.fast = speedup, fast

    def run(self, spec: TrialSpec) -> TrialResult:
        result = super().run(spec)
        if spec.config is not None:
            s = (
                1.2
                if self.fast is not None and spec.config["options"] == self.fast
                else self.speedup
            )
            result.speedup_vs_eager, result.latency_median_s = s, 1e-3 / s
            result.speedup_vs_eager_q1, result.speedup_vs_eager_q3 = s - 0.01, s + 0.01
        return result


def test_when_default_and_every_preset_run_clearly_slower_nothing_is_sampled(
    tmp_path, model_file, space_file
):
    """pytorch-autotune's ground (a tiny model where eager wins): the search stops once
    default compile and the presets have shown compiling does not pay, and says so."""
    runner, notes = Slower(), []
    search = Search(_request(tmp_path, model_file, space_file, trials=8), runner,
                    on_note=notes.append)  # fmt: skip
    records = search.run()
    assert search.ended is Ended.COMPILE_DOES_NOT_PAY
    assert len(runner.specs) == 5  # eager, default and the three presets: no sampled trial
    said = "stopping: default torch.compile and all 3 presets ran clearly slower than eager"
    assert any(n.startswith(f"{said} (the best 0.80x") for n in notes), notes
    made = best_config(records, search.session.settings, "s", "sqlite://")
    assert made.decision == "do_not_compile"


def test_a_search_that_stops_there_probes_no_part_of_the_model(tmp_path, model_file, space_file):
    """The presets run before the scope probes: on a model where compiling does not pay, no
    part is probed; where a preset pays, the probes run after the presets."""
    request = _request(tmp_path, model_file, space_file, trials=8)
    request = dataclasses.replace(
        request, settings=dataclasses.replace(request.settings, scope="search")
    )
    runner = Slower()
    search = Search(request, runner)
    search.run()
    assert search.ended is Ended.COMPILE_DOES_NOT_PAY
    assert len(runner.specs) == 5 and search.trials.plan is None  # nothing probed
    (tmp_path / "b").mkdir()
    request = dataclasses.replace(request, storage=f"sqlite:///{tmp_path}/b/t.db")
    runner = Slower(fast={"freezing": True})
    search = Search(request, runner)
    search.run()
    assert search.trials.plan is not None
    probes = [i for i, spec in enumerate(runner.specs) if _probe(spec)]
    # after eager, default, the three presets and freezing beside each of the two that tied
    # default compile (the mode and fusion: partners)
    assert probes and min(probes) == 7, probes
    assert [s.config["options"] for s in runner.specs[5:7]] == [
        {"freezing": True, "max_autotune": True, "coordinate_descent_tuning": True},
        {"freezing": True, "max_fusion_size": 128},
    ]


def _probe(spec: TrialSpec) -> bool:
    return bool(spec.config) and spec.config["scope"]["compile"] not in ([], [""])


def test_one_preset_that_pays_or_no_prune_keeps_the_search_going(tmp_path, model_file, space_file):
    runner = Slower(fast={"freezing": True})
    search = Search(_request(tmp_path, model_file, space_file, trials=8), runner)
    search.run()
    assert search.ended is not Ended.COMPILE_DOES_NOT_PAY and len(runner.specs) > 5
    request = _request(tmp_path / "b", model_file, space_file, trials=8)
    request = dataclasses.replace(
        request, settings=dataclasses.replace(request.settings, prune=False)
    )
    (tmp_path / "b").mkdir()
    runner = Slower()
    search = Search(request, runner)
    search.run()
    assert search.ended is not Ended.COMPILE_DOES_NOT_PAY and len(runner.specs) > 5


def test_no_finalist_is_remeasured_when_every_candidate_ran_clearly_slower(
    tmp_path, model_file, space_file
):
    """Re-measuring configs that lost to eager in three of four paired rounds cannot make
    compiling pay: the decision rests on the search's rounds (on pytorch-autotune's ground,
    the finalist round was most of the wall time)."""
    search = Search(_request(tmp_path, model_file, space_file, trials=8), Slower())
    records = search.run()
    settings = search.session.settings
    assert settings.finalists == 1 and finalist_candidates(records, settings) == []
    close = [dataclasses.replace(r, speedup_vs_eager_q3=1.01) if r.baseline == "default" else r
             for r in records]  # fmt: skip
    assert [r.baseline for r in finalist_candidates(close, settings)] == [None, "default"]


class WholeModelBreaks(ByPreset):
    """scope_mixed's parts as the compiler meets them: a scope that compiles ``crashy`` (the
    whole model, unless it is kept eager) aborts, one that compiles ``hangs`` runs out of its
    budget, and everything else runs 1.8x eager."""

    def run(self, spec: TrialSpec) -> TrialResult:
        result = super().run(spec)
        if spec.config is None:
            return result
        scope = spec.config["scope"]
        compiled, eager = set(scope["compile"]), set(scope.get("disable", ()))
        for part, kind, error in (
            ("crashy", "crash", "the trial process died of SIGABRT"),
            ("hangs", "timeout", "still compiling or running after its compile budget"),
        ):
            if part in compiled or ("" in compiled and part not in eager):
                return TrialResult.failed(kind, error)
        result.speedup_vs_eager, result.latency_median_s = 1.8, 1e-3 / 1.8
        result.speedup_vs_eager_q1, result.speedup_vs_eager_q3 = 1.79, 1.81
        return result


def test_a_whole_model_that_fails_everywhere_sends_the_search_to_its_parts(
    tmp_path, model_file, space_file
):
    """Issue 39: default compile and every preset abort on the whole model. None of them was
    timed, so nothing says compiling does not pay: the search says the whole model failed,
    probes the parts, samples scopes, and its best config compiles the healthy parts only."""
    request = _request(tmp_path, model_file, space_file, trials=8)
    settings = dataclasses.replace(
        request.settings, scope="search", model_path=model_file("scope_mixed")
    )
    request = dataclasses.replace(request, settings=settings)
    runner, notes = WholeModelBreaks(), []
    search = Search(request, runner, on_note=notes.append)
    records = search.run()
    assert search.ended is Ended.BUDGET_MET, notes
    assert not [n for n in notes if "does not pay" in n], notes
    failed = [n for n in notes if n.startswith("the whole model failed")]
    assert failed == [
        "the whole model failed under default torch.compile and all 3 presets (4 crash (the "
        "trial process died of SIGABRT)): probing the model's parts one by one, to compile "
        "those that work"
    ], notes
    assert notes.index(failed[0]) < next(i for i, n in enumerate(notes) if n.startswith("scope:"))
    plan = search.trials.plan
    assert plan is not None and {p.paths[0] for p in plan.excluded} == {"crashy", "hangs"}
    sampled = [r for r in records if r.baseline is None and PRESET_ATTR not in _attrs(search, r)]
    assert len({r.config["scope"]["compile"][0] for r in sampled}) >= 2  # scopes are searched
    assert all(r.status == "ok" for r in sampled)
    made = best_config(records, search.session.settings, "s", "sqlite://")
    assert made.decision == "compile" and made.config is not None
    scope = made.config.scope
    assert not {"crashy", "hangs"} & set(scope.compile)
    assert scope.compile != ("",) or {"crashy", "hangs"} <= set(scope.disable)
    # The report keeps why the whole model failed beside the scope that worked.
    report = render_report(load_study_data(request.storage, "s", importance=False), 200)
    failures, scoped = report.index("Failures by kind"), report.index("Scope (each part")
    assert "crash              4  [default], #2, #3, #4" in report[failures:scoped]
    assert "kept eager everywhere: unit crashy: crash (the trial process" in report[scoped:]
    assert "kept eager everywhere: unit hangs: timeout" in report[scoped:]
    assert f"  the decision, trial {made.source['trial']}, compiles " in report[scoped:]


def _attrs(search: Search, record: TrialRecord) -> dict:
    return search.session.study.trials[record.trial_number].user_attrs


class SlowerOrFailing(Slower):
    """Slower, except that the configs setting ``failing`` options fail to compile."""

    def __init__(self, failing: dict) -> None:
        super().__init__()
        self.failing = failing

    def run(self, spec: TrialSpec) -> TrialResult:
        if spec.config is not None and spec.config["options"] == self.failing:
            self.specs.append(spec)
            return TrialResult.failed("compile_error", "InductorError: boom")
        return super().run(spec)


def test_a_failed_preset_is_no_evidence_either_way(tmp_path, model_file, space_file):
    """Whatever failed says nothing of speed: with the scope fixed, the stop rests on the
    timed ones and its message says how many ran and what failed; with the scope searched,
    a whole-model failure sends the search to the probes instead."""
    runner, notes = SlowerOrFailing({"freezing": True}), []
    search = Search(_request(tmp_path, model_file, space_file, trials=8), runner,
                    on_note=notes.append)  # fmt: skip
    search.run()
    assert search.ended is Ended.COMPILE_DOES_NOT_PAY and len(runner.specs) == 5
    assert [n for n in notes if n.startswith("stopping: ")] == [
        "stopping: of default torch.compile and all 3 presets, 3 ran, each clearly slower than "
        "eager, and 1 failed (1 compile_error (InductorError: boom)), which says nothing of "
        "speed (the best 0.80x, each that ran below 1.0x in three of four paired rounds): "
        "compiling does not pay on this model, so no configuration is sampled (--no-prune "
        "searches on)"
    ]
    (tmp_path / "b").mkdir()
    request = _request(tmp_path / "b", model_file, space_file, trials=8)
    request = dataclasses.replace(
        request, settings=dataclasses.replace(request.settings, scope="search")
    )
    runner = SlowerOrFailing({"freezing": True})
    search = Search(request, runner)
    search.run()
    assert search.ended is not Ended.COMPILE_DOES_NOT_PAY and search.trials.plan is not None


def test_a_tie_goes_to_the_narrower_spread_before_the_fewer_knobs(
    tmp_path, model_file, space_file
):
    """The tuned config and the preset tie within the spread; the tuned config's rounds
    spread a third as wide (2% of its median against 6%): under the latency objective it
    wins, and the reason states the rule."""
    request, search, records, (mine, preset, default) = _tied(tmp_path, model_file, space_file)
    narrow, wide = _ran(1.95, 1.93, 1.97), _ran(1.94, 1.88, 2.0)
    round_ = [
        Finalist(mine, narrow, narrow),
        Finalist(preset, wide, wide),
        Finalist(default, _ran(1.1, 1.05, 1.15), _ran(1.1, 1.05, 1.15)),
    ]
    best = best_config(records, search.session.settings, "s", request.storage, finalists=round_)
    assert best.source["trial"] == mine.trial_number, best.reason
    assert "the narrower spread wins before the fewer-knobs rule does" in best.reason
    round_[0] = Finalist(mine, wide, wide)  # as wide as the preset's: fewer knobs win
    best = best_config(records, search.session.settings, "s", request.storage, finalists=round_)
    assert best.source["trial"] == preset.trial_number
