"""--warm-start-from: an earlier study's best configs are measured first, and where the space
and objective match, the sampler is told its results (which count and report as nothing)."""

from __future__ import annotations

import warnings

import optuna
import pytest
import scripted
import torch

from autotune.errors import UsageError
from autotune.records import RecordStore
from autotune.reports._standing import standing
from autotune.scope import SCOPE_PARAM
from autotune.search import Ended, Search, SearchRequest, StartFrom
from autotune.settings import StudySettings
from autotune.space import load_space
from autotune.storage._attrs import PRIOR_ATTR, START_FROM_ATTR
from autotune.trials import TrialResult, TrialSpec

FASTEST = {"fullgraph": True, "dynamic": False}


class Table:
    """1.5x for the fastest config, 1.1x for the others, eager 1.0x."""

    def __init__(self) -> None:
        self.specs: list[TrialSpec] = []

    def run(self, spec: TrialSpec) -> TrialResult:
        self.specs.append(spec)
        if spec.config is None:
            return scripted.ok(1.0)
        fastest = all(spec.config[k] == v for k, v in FASTEST.items())
        return scripted.ok(1.5 if fastest and spec.config["backend"] == "aot_eager" else 1.1)

    def close(self) -> None:
        pass


def _request(
    tmp_path, model_file, space_file, study, trials, space="aot_eager_16", model="tiny",
    scope="whole", scope_plan=None, **more,
):  # fmt: skip
    loaded = load_space(space if space.endswith(".toml") else space_file(space), "cpu")
    settings = StudySettings(
        model_path=model_file(model), device="cpu", space=loaded.to_dict(),
        space_hash=loaded.content_hash(), torch_version=torch.__version__, scope=scope,
        scope_plan=scope_plan, trials=trials, seed=1,
    )  # fmt: skip
    return SearchRequest(study, f"sqlite:///{tmp_path}/t.db", settings, **more)


def test_the_best_configs_are_measured_first_and_the_sampler_is_told(
    tmp_path, model_file, space_file
):
    earlier = Search(_request(tmp_path, model_file, space_file, "a", trials=8), Table())
    earlier_records = [r for r in earlier.run() if r.baseline is None and r.duplicate_of is None]
    notes: list[str] = []
    request = _request(tmp_path, model_file, space_file, "b", trials=2,
                       start_from=StartFrom("a", top=1))  # fmt: skip
    runner = Table()
    search = Search(request, runner, on_note=notes.append)
    records = search.run()

    best_earlier = max(earlier_records, key=lambda r: r.speedup_vs_eager or 0.0)
    assert runner.specs[2].config == best_earlier.config  # right after the two baselines
    trials = search.session.study.get_trials()
    borrowed = [
        t for t in trials if t.user_attrs.get(START_FROM_ATTR) == f"a#{best_earlier.trial_number}"
    ]
    assert len(borrowed) == 1 and PRIOR_ATTR not in borrowed[0].user_attrs
    priors = [t for t in trials if PRIOR_ATTR in t.user_attrs]
    assert len(priors) == len(earlier_records)  # same space and objective: told every result
    assert any("start from: queued the 1 best configs of study 'a'" in n for n in notes)
    assert any(f"told the sampler its {len(earlier_records)} measured results" in n for n in notes)
    # priors are no records and no budget: two search trials were measured here
    measured = [r for r in records if r.baseline is None and r.duplicate_of is None]
    assert len(measured) == 2
    with RecordStore(request.storage) as store:
        assert len(store.trials("b")) == len(records)
    session = search.session
    best = standing(session.records, session.study, bool(session.settings.pareto)).best_trial
    assert best in {r.trial_number for r in records}


def test_another_space_borrows_configs_but_tells_nothing(tmp_path, model_file, space_file):
    Search(_request(tmp_path, model_file, space_file, "a", trials=4), Table()).run()
    notes: list[str] = []
    request = _request(tmp_path, model_file, space_file, "b", trials=1, space="aot_eager",
                       start_from=StartFrom("a", top=2))  # fmt: skip
    search = Search(request, Table(), on_note=notes.append)
    search.run()
    assert not [t for t in search.session.study.get_trials() if PRIOR_ATTR in t.user_attrs]
    assert any("not told to the sampler (another space)" in n for n in notes)


def test_an_unknown_study_is_refused(tmp_path, model_file, space_file):
    request = _request(tmp_path, model_file, space_file, "b", trials=1,
                       start_from=StartFrom("missing"))  # fmt: skip
    with pytest.raises(UsageError, match="there is no study 'missing'"):
        Search(request, Table()).run()


def _scoped(tmp_path, model_file, space_file, study, trials, **more):
    return _request(tmp_path, model_file, space_file, study, trials, model="scope_mixed",
                    scope="search", **more)  # fmt: skip


def _plan(study: str, tmp_path, rename: str = "") -> dict:
    """The scope plan study ``study`` probed, its candidates renamed by ``rename``: the plan
    of a model whose parts are called otherwise."""
    plan = RecordStore(f"sqlite:///{tmp_path}/t.db").study_settings(study)["scope_plan"]
    for candidate in plan["candidates"]:
        candidate["name"] += rename
    return plan


def _borrowed(search: Search) -> list[optuna.trial.FrozenTrial]:
    trials = search.session.study.get_trials()
    return [
        t for t in trials if START_FROM_ATTR in t.user_attrs and PRIOR_ATTR not in t.user_attrs
    ]


def test_a_scope_outside_this_studys_candidates_is_left_to_the_sampler(
    tmp_path, model_file, space_file
):
    """Issue 56: the earlier study's scope.kind was queued unchecked, and suggest_categorical
    refused it (ValueError): the search ended. Its priors, told with the earlier study's
    choices of scope, broke the sampler the same way."""
    Search(_scoped(tmp_path, model_file, space_file, "a", trials=6), Table()).run()
    plan = _plan("a", tmp_path, rename="-elsewhere")
    notes: list[str] = []
    request = _scoped(tmp_path, model_file, space_file, "b", trials=4, scope_plan=plan,
                      start_from=StartFrom("a", top=2))  # fmt: skip
    search = Search(request, Table(), on_note=notes.append)
    search.run()

    borrowed = _borrowed(search)
    assert borrowed and all(t.state.name == "COMPLETE" for t in borrowed)
    assert all(t.params[SCOPE_PARAM].endswith("-elsewhere") for t in borrowed)  # drawn here
    (left,) = [n for n in notes if n.startswith("start from: left to the sampler")]
    assert f"{SCOPE_PARAM} = 'whole'" in left or f"{SCOPE_PARAM} = 'regional:" in left
    assert "this study's scope candidates are whole-elsewhere" in left
    priors = [t for t in search.session.study.get_trials() if PRIOR_ATTR in t.user_attrs]
    assert priors and all(SCOPE_PARAM not in t.params for t in priors)


def test_a_scope_among_this_studys_candidates_is_borrowed_and_told(
    tmp_path, model_file, space_file
):
    earlier = Search(_scoped(tmp_path, model_file, space_file, "a", trials=6), Table())
    earlier.run()
    plan = _plan("a", tmp_path)
    request = _scoped(tmp_path, model_file, space_file, "b", trials=4, scope_plan=plan,
                      start_from=StartFrom("a", top=1))  # fmt: skip
    search = Search(request, Table())
    search.run()

    (borrowed,) = _borrowed(search)
    number = int(borrowed.user_attrs[START_FROM_ATTR].split("#")[1])
    source = earlier.session.study.trials[number]
    assert borrowed.params[SCOPE_PARAM] == source.params[SCOPE_PARAM]
    assert borrowed.params == source.params
    priors = [t for t in search.session.study.get_trials() if PRIOR_ATTR in t.user_attrs]
    drawn = borrowed.distributions[SCOPE_PARAM]  # this study's candidates
    assert priors and all(t.distributions[SCOPE_PARAM] == drawn for t in priors)


def test_a_studys_first_run_borrows_a_scope_once_its_probes_name_the_candidates(
    tmp_path, model_file, space_file
):
    """The earlier study's configurations are queued after this study's scope probes: on its
    first run, which scopes it offers is known, and a scope among them is borrowed."""
    earlier = Search(_scoped(tmp_path, model_file, space_file, "a", trials=6), Table())
    earlier.run()
    request = _scoped(tmp_path, model_file, space_file, "b", trials=4,
                      start_from=StartFrom("a", top=1))  # fmt: skip
    search = Search(request, Table())
    search.run()

    (borrowed,) = _borrowed(search)
    assert borrowed.state.name == "COMPLETE"
    number = int(borrowed.user_attrs[START_FROM_ATTR].split("#")[1])
    assert borrowed.params == earlier.session.study.trials[number].params


def test_a_knob_value_this_space_does_not_offer_is_left_out_with_a_note(
    tmp_path, model_file, space_file
):
    Search(_request(tmp_path, model_file, space_file, "a", trials=8), Table()).run()
    narrower = tmp_path / "narrower.toml"
    narrower.write_text(
        '[compile]\nbackend = ["aot_eager"]\nfullgraph = [false, true]\n'
        "dynamic = [false, true]\n\n[dynamo]\nrecompile_limit = [8]\n"
    )
    notes: list[str] = []
    request = _request(tmp_path, model_file, space_file, "b", trials=2, space=str(narrower),
                       start_from=StartFrom("a", top=4))  # fmt: skip
    search = Search(request, Table(), on_note=notes.append)
    search.run()

    knobs = {k.param: k for k in search.session.space.knobs}
    for trial in _borrowed(search):
        assert all(knobs[name].offers(value) for name, value in trial.params.items())
    (left,) = [n for n in notes if n.startswith("start from: left to the sampler")]
    assert "dynamo.recompile_limit = 16" in left or "dynamo.recompile_limit = 32" in left


def test_a_queued_trial_with_a_value_outside_the_space_fails_and_the_search_goes_on(
    tmp_path, model_file, space_file
):
    """A database row (a queued or retried trial) escaped the space: Optuna took the value
    with a warning, and a categorical one ended the search with a ValueError."""
    notes: list[str] = []
    search = Search(_request(tmp_path, model_file, space_file, "b", trials=3), Table(),
                    on_note=notes.append)  # fmt: skip
    queued = {"dynamo.recompile_limit": 1000, "compile.fullgraph": True}
    for params in (queued, {"compile.dynamic": "yes"}):
        search.session.study.enqueue_trial(params, {START_FROM_ATTR: "elsewhere#1"})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # Optuna's "out of range"
        records = search.run()

    failed = [t for t in search.session.study.get_trials() if t.state.name == "FAIL"]
    assert [t.user_attrs.get(START_FROM_ATTR) for t in failed] == ["elsewhere#1"] * 2
    assert {r.trial_number for r in records}.isdisjoint(t.number for t in failed)
    assert search.ended is Ended.BUDGET_MET  # the search went on past them
    assert any(
        f"trial {failed[0].number} fails: dynamo.recompile_limit: the trial fixes a value "
        "Optuna refuses ('1000' not in (8, 16, 32, 64))" in n
        for n in notes
    )
    assert any(f"trial {failed[1].number} fails: compile.dynamic: the trial fixes" in n
               for n in notes)  # fmt: skip
