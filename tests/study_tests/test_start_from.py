"""--warm-start-from: an earlier study's best configs are measured first, and where the space
and objective match, the sampler is told its results (which count and report as nothing)."""

from __future__ import annotations

import pytest
import scripted
import torch

from autotune.errors import UsageError
from autotune.records import RecordStore
from autotune.reports._standing import standing
from autotune.space import load_space
from autotune.storage import StudySettings
from autotune.storage._attrs import PRIOR_ATTR, START_FROM_ATTR
from autotune.study import Search, SearchRequest, StartFrom
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


def _request(tmp_path, model_file, space_file, study, trials, space="aot_eager_16", **more):
    loaded = load_space(space_file(space), "cpu")
    settings = StudySettings(
        model_path=model_file("tiny"), device="cpu", space=loaded.to_dict(),
        space_hash=loaded.content_hash(), torch_version=torch.__version__, scope="whole",
        trials=trials, seed=1,
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
