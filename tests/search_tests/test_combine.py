"""Combinations of the presets that win: queued once the presets have run, measured before
the sampler draws, each the union of what its presets set."""

from __future__ import annotations

import dataclasses

import pytest

from autotune.reports import load_study_data
from autotune.search import Search
from autotune.search._combine import Levers, combinations
from autotune.space import space_from_dict
from autotune.storage._attrs import (
    COMBINATION_ATTR,
    PRESET_ATTR,
    PRESETS_TOLD_ATTR,
    PRIOR_ATTR,
    PRIOR_OF_ATTR,
)
from autotune.trials import TrialResult, TrialSpec
from search_tests.test_presets import ByPreset, _request


def test_the_presets_that_beat_default_are_measured_together_before_sampling(
    tmp_path, model_file, space_file
):
    runner, notes = ByPreset(), []
    request = _request(tmp_path, model_file, space_file, trials=8)
    search = Search(request, runner, on_note=notes.append)
    search.run()

    trials = search.session.study.get_trials()
    order = [t.user_attrs.get(PRESET_ATTR) or t.user_attrs.get(COMBINATION_ATTR) for t in trials]
    # eager, default (1.1x), the presets (mode 1.1x, freezing 1.5x, fusion 1.3x), then the two
    # that beat default, together, and the better of them beside the mode that tied default,
    # before the first sampled trial (a quarter of 8 trials go to combinations)
    assert order[:7] == [
        None, None, "max-autotune-no-cudagraphs", "freezing", "fusion", ["freezing", "fusion"],
        ["freezing", "max-autotune-no-cudagraphs"],
    ]  # fmt: skip
    combined = runner.specs[5].config
    assert combined["options"] == {"freezing": True, "max_fusion_size": 128}
    assert combined["dynamic"] is True  # fusion's, beside freezing's
    assert any(
        "combinations: measuring freezing & fusion, freezing & max-autotune-no-cudagraphs "
        "(presets faster than default compile: freezing 1.36x, fusion 1.18x; beside them: "
        "max-autotune-no-cudagraphs 1.00x)" in n
        for n in notes
    ), notes
    label = next(r.label for r in load_study_data(request.storage, "s").rows if r.number == 5)
    assert label == "#5 combination freezing & fusion"

    # a second run of the same study queues it no more
    Search(request, ByPreset()).run()
    again = [t for t in search.session.study.get_trials() if COMBINATION_ATTR in t.user_attrs]
    assert len(again) == 2


class ModeTimedBefore(ByPreset):
    """ByPreset, but the mode preset generates default compile's code (its timing reused, as
    max-autotune's on a CPU without freezing), or runs clearly slower than default."""

    def __init__(self, how: str) -> None:
        super().__init__()
        self.how = how

    def run(self, spec: TrialSpec) -> TrialResult:
        result = super().run(spec)
        if spec.config is None or spec.config["mode"] == "default":
            return result
        if self.how == "same code":
            return dataclasses.replace(result, equivalent_of=1)
        return dataclasses.replace(
            result, speedup_vs_eager=0.95, speedup_vs_eager_q1=0.94, speedup_vs_eager_q3=0.96
        )


@pytest.mark.parametrize("how", ["same code", "slower"])
def test_a_winner_alone_is_combined_with_the_preset_the_budget_left_out(
    tmp_path, model_file, space_file, how
):
    notes: list[str] = []
    request = _request(tmp_path, model_file, space_file, trials=4)
    search = Search(request, ModeTimedBefore(how), on_note=notes.append)
    search.run()
    trials = search.session.study.get_trials()
    order = [t.user_attrs.get(PRESET_ATTR) or t.user_attrs.get(COMBINATION_ATTR) for t in trials]
    # half of 4 trials to presets (the mode, freezing), a quarter to combinations: freezing won
    # alone; the mode is no partner (default's code, or slower), fusion was not measured
    assert order[:5] == [None, None, "max-autotune-no-cudagraphs", "freezing",
                         ["freezing", "fusion"]]  # fmt: skip
    assert any(
        "combinations: measuring freezing & fusion (presets faster than default compile: "
        "freezing 1.36x; beside them: fusion (not measured))" in n
        for n in notes
    ), notes


def test_a_small_budget_measures_no_combination_and_says_why(tmp_path, model_file, space_file):
    notes: list[str] = []
    request = _request(tmp_path, model_file, space_file, trials=3)
    search = Search(request, ByPreset(), on_note=notes.append)
    search.run()
    assert not any(COMBINATION_ATTR in t.user_attrs for t in search.session.study.get_trials())
    # with 3 trials one preset runs (half the budget): no two winners to combine
    assert not any(n.startswith("combinations:") for n in notes)


class ByDynamic(ByPreset):
    """Speedup by the config's dynamic: True 1.3x, False 1.2x, torch's choice (None) 1.1x."""

    def run(self, spec: TrialSpec) -> TrialResult:
        result = super().run(spec)
        if spec.config is None:
            return result
        speedup = {True: 1.3, False: 1.2, None: 1.1}[spec.config["dynamic"]]
        return dataclasses.replace(
            result, latency_median_s=1e-3 / speedup, speedup_vs_eager=speedup,
            speedup_vs_eager_q1=speedup - 0.01, speedup_vs_eager_q3=speedup + 0.01,
        )  # fmt: skip


def test_winners_that_do_not_combine_are_said_once(tmp_path, model_file):
    space = tmp_path / "dynamic.toml"
    space.write_text(
        'name = "dynamic"\n[compile]\nbackend = ["inductor"]\nmode = ["default"]\n'
        "dynamic = [false, true]\n[inductor]\nmax_fusion_size = [64, 128]\n[presets]\n"
        '"dynamic" = { "compile.dynamic" = true }\n"static" = { "compile.dynamic" = false }\n'
    )
    notes: list[str] = []
    request = _request(tmp_path, model_file, lambda _: str(space), trials=8)
    search = Search(request, ByDynamic(), on_note=notes.append)
    search.run()
    trials = search.session.study.get_trials()
    assert not any(COMBINATION_ATTR in t.user_attrs for t in trials)
    assert len(trials) > 5  # sampled trials followed, each asking for combinations again
    said = [n for n in notes if n.startswith("combinations:")]
    assert said == [
        "combinations: not measured, none of them combine (presets faster than default "
        "compile: dynamic 1.18x, static 1.09x)"
    ], notes


SPACE = {
    "compile": {"mode": ["default", "max-autotune-no-cudagraphs", "reduce-overhead"]},
    "inductor": {"freezing": [False, True], "max_fusion_size": [64, 128],
                 "epilogue_fusion": [True, False]},
    "presets": {
        "max-autotune-no-cudagraphs+freezing": {
            "compile.mode": "max-autotune-no-cudagraphs", "inductor.freezing": True,
        },
        "freezing": {"inductor.freezing": True},
        "fusion": {"inductor.max_fusion_size": 128},
        "no-epilogue": {"inductor.epilogue_fusion": False},
    },
}  # fmt: skip


def test_combinations_are_the_pairs_and_the_union_most_promising_first():
    space = space_from_dict(SPACE, "cpu")
    won = Levers([("freezing", 1.4), ("fusion", 1.2), ("no-epilogue", 1.1)], partners=[])
    chosen = combinations(space, won, limit=10)
    assert [names for _, names in chosen] == [
        ["freezing", "fusion", "no-epilogue"], ["freezing", "fusion"],
        ["freezing", "no-epilogue"], ["fusion", "no-epilogue"],
    ]  # fmt: skip
    assert dict(chosen[0][0].values) == {
        "inductor.freezing": True, "inductor.max_fusion_size": 128,
        "inductor.epilogue_fusion": False,
    }  # fmt: skip
    assert len(combinations(space, won, limit=2)) == 2
    assert combinations(space, Levers(won.won[:1], partners=[]), limit=10) == []
    assert combinations(space, won, limit=0) == []


def test_two_modes_do_not_combine_and_a_preset_is_not_measured_again():
    space = space_from_dict(SPACE, "cpu")
    won = [("max-autotune-no-cudagraphs", 1.3), ("reduce-overhead", 1.2), ("freezing", 1.1)]
    chosen = combinations(space, Levers(won, partners=[]), limit=10)
    # the two modes set compile.mode apart; max-autotune + freezing is a preset of the space
    assert [names for _, names in chosen] == [["reduce-overhead", "freezing"]]
    assert space.combine(["freezing", "no-such-preset"]) is None


def test_a_winner_is_combined_with_each_partner_after_the_winners_together():
    space = space_from_dict(SPACE, "cpu")
    # fusion ran as fast as default compile, no-epilogue was left out by the budget: either may
    # pay beside freezing (freezing's weight prepacking pays for bf16 GEMMs above all)
    found = Levers([("freezing", 1.4)], partners=[("fusion", 0.98), ("no-epilogue", None)])
    chosen = combinations(space, found, limit=10)
    assert [names for _, names in chosen] == [["freezing", "no-epilogue"], ["freezing", "fusion"]]
    # partners alone are not combined: nothing of theirs won
    assert combinations(space, Levers([], partners=found.partners), limit=10) == []
    with_two = Levers([("freezing", 1.4), ("fusion", 1.2)], partners=[("no-epilogue", None)])
    assert [names for _, names in combinations(space, with_two, limit=10)] == [
        ["freezing", "fusion"], ["freezing", "no-epilogue"], ["fusion", "no-epilogue"],
    ]  # fmt: skip


def test_presets_on_two_backends_do_not_combine():
    space = space_from_dict({
        "accuracy_contract": True,
        "compile": {"backend": ["inductor", "aot_eager"]},
        "precision": {"autocast": ["none", "bfloat16"]},
        "inductor": {"freezing": [False, True]},
        "presets": {
            "aot": {"compile.backend": "aot_eager"}, "bf16": {"precision.autocast": "bfloat16"},
            "freezing": {"inductor.freezing": True},
        },
    }, "cpu")  # fmt: skip
    # the space can express bf16 autocast around another backend (a config setting both), but
    # a backend's levers are its own: bf16 autocast around OpenVINO left a Llama's outputs at
    # cosine 0.85
    both = {"precision.autocast": "bfloat16", "compile.backend": "aot_eager"}
    assert space.config_from_params(both).backend == "aot_eager"
    assert space.combine(["bf16", "aot"]) is None
    found = Levers([("bf16", 1.9), ("aot", 1.2)], partners=[("freezing", None)])
    assert [names for _, names in combinations(space, found, limit=10)] == [["bf16", "freezing"]]


def test_the_sampler_is_told_each_preset_and_combination_as_a_prior(
    tmp_path, model_file, space_file
):
    notes: list[str] = []
    request = _request(tmp_path, model_file, space_file, trials=8)
    search = Search(request, ByPreset(), on_note=notes.append)
    search.run()
    study = search.session.study
    priors = [t for t in study.get_trials() if PRIOR_ATTR in t.user_attrs]
    # The fusion preset (#4) and the combination (#5), with the params the sampler would have
    # drawn; the mode (#2) and freezing (#3) presets leave dynamic to torch ("auto"), which
    # this space does not offer: their params could not say what they measured.
    assert sorted(t.user_attrs[PRIOR_OF_ATTR] for t in priors) == [4, 5]
    by_of = {t.user_attrs[PRIOR_OF_ATTR]: t for t in priors}
    assert by_of[5].params == {
        "compile.mode": "default", "compile.dynamic": True, "inductor.freezing": True,
        "inductor.max_fusion_size": 128,
    }  # fmt: skip
    assert by_of[4].params["inductor.freezing"] is False
    # valued as the study's own trials are: the objective's score of each record
    trials = {t.number: t for t in study.get_trials()}
    assert all(by_of[n].value == trials[n].value for n in (4, 5))
    assert study.user_attrs[PRESETS_TOLD_ATTR] == 2
    assert any("the sampler is told what 2 presets and combinations measured" in n for n in notes)
    # priors are no trials of the study: the budget and the reports leave them out
    rows = load_study_data(request.storage, "s").rows
    assert all(PRIOR_ATTR not in (r.trial.user_attrs if r.trial else {}) for r in rows)
    assert sum(r.record is not None and r.record.baseline is None for r in rows) >= 8
