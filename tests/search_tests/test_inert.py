"""Knobs that change nothing on this model collapse: once two sampled trials that set a knob
differently compiled the same code, later trials leave it to torch, and the report says so."""

from __future__ import annotations

from pathlib import Path

import homes
import optuna
import pytest
import scripted

from autotune.cli import main
from autotune.records import RecordStore, TrialRecord
from autotune.reports import load_study_data, render_report
from autotune.space import load_space
from autotune.storage import inert_knobs
from autotune.trials import TrialResult, TrialSpec

SPACE = """name = "inert"
[compile]
backend = ["inductor"]
mode = ["default"]
dynamic = [false]
[inductor]
aggressive_fusion = [false, true]
shape_padding = [true, false]
"""


def record(n: int, code: str | None, status: str = "ok", baseline: str | None = None):
    return TrialRecord(n, config={}, config_hash=f"h{n}", brief="", status=status,
                       baseline=baseline, result={"code_hash": code})  # fmt: skip


def test_two_trials_with_the_same_code_show_what_they_set_differently_is_inert():
    params = {
        2: {"inductor.aggressive_fusion": False, "inductor.shape_padding": True, "scope": "w"},
        3: {"inductor.aggressive_fusion": True, "inductor.shape_padding": True, "scope": "w"},
        4: {"inductor.aggressive_fusion": True, "inductor.shape_padding": False, "scope": "w"},
        5: {"compile.mode": "max-autotune", "inductor.shape_padding": False},
        6: {"compile.mode": "default", "inductor.shape_padding": False},
    }
    records = [record(0, None, baseline="eager"), record(1, "a", baseline="default"),
               record(2, "a"), record(3, "a"), record(4, "b"), record(5, "c"), record(6, "c"),
               record(7, "a", status="failed")]  # fmt: skip
    assert inert_knobs(params, records) == {"inductor.aggressive_fusion": (2, 3)}
    # compile.mode decides which knobs exist: it never collapses, whatever the code says
    assert "compile.mode" not in inert_knobs(params, records)
    assert inert_knobs(params, records[:3]) == {}  # one sampled trial of code "a": no pair yet


def test_an_activation_budget_that_compiles_the_same_code_is_inert_but_the_optimizer_is_not():
    params = {
        2: {"functorch.activation_memory_budget": 1.0, "train.optimizer": "eager"},
        3: {"functorch.activation_memory_budget": 0.5, "train.optimizer": "compiled"},
    }
    records = [record(2, "a"), record(3, "a")]
    # The partitioner's choice shows in the code; the optimizer step's effect runs beside it.
    assert inert_knobs(params, records) == {"functorch.activation_memory_budget": (2, 3)}


def test_a_knob_left_to_torch_is_neither_drawn_nor_set(tmp_path):
    path = tmp_path / "inert.toml"
    path.write_text(SPACE)
    space = load_space(str(path), "cpu")
    trial = optuna.create_study().ask()
    config = space.suggest(trial, leave=["inductor.aggressive_fusion"])
    assert "inductor.aggressive_fusion" not in trial.params
    assert "inductor.shape_padding" in trial.params
    assert "aggressive_fusion" not in config.options


def same_code_whatever_the_fusion(spec: TrialSpec) -> TrialResult:
    if spec.config is None:
        return scripted.ok(1.0)
    padding = spec.config["options"].get("shape_padding", True)
    result = scripted.ok(1.5 if padding else 1.2)
    result.code_hash = f"padding={padding}"  # aggressive_fusion changes nothing
    return result


def test_the_search_stops_drawing_an_inert_knob_and_the_report_says_so(tmp_path, monkeypatch):
    runs = scripted.use(monkeypatch, same_code_whatever_the_fusion)
    code, storage = _search(tmp_path, SPACE, "tiny", "--trials", "8", "--scope", "whole",
                            "--seed", "3")  # fmt: skip
    assert code == 0 and runs
    study = optuna.load_study(study_name="s", storage=storage)
    left = [t for t in study.trials if t.user_attrs.get("autotune.left_to_torch")]
    assert left, [t.params for t in study.trials]
    for t in left:
        assert t.user_attrs["autotune.left_to_torch"] == ["inductor.aggressive_fusion"]
        assert "inductor.aggressive_fusion" not in t.params
    report = render_report(load_study_data(storage, "s", importance=False), 200)
    assert "No effect on this model (left to torch in later trials): " in report
    assert "inductor.aggressive_fusion (#" in report


# Issue 39: 20 x 20 = 400 configurations, both knobs inert on the model.
CHUNKS = ", ".join(str(64 * i) for i in range(1, 21))
FUSIONS = ", ".join(str(i) for i in range(1, 21))
TWO_KNOBS = f"""name = "two_knobs"
[compile]
backend = ["inductor"]
mode = ["default"]
dynamic = [false]
[inductor]
"cpp.min_chunk_size" = [{CHUNKS}]
"cpp.max_horizontal_fusion_size" = [{FUSIONS}]
"""


def one_code_per_scope(spec: TrialSpec) -> TrialResult:
    """Neither knob changes the code: only the scope does."""
    if spec.config is None:
        return scripted.ok(1.0)
    result = scripted.ok(1.3)
    result.code_hash = repr(spec.config["scope"])
    return result


def test_a_space_that_collapses_below_the_trials_asked_ends_and_says_why(
    tmp_path, monkeypatch, capsys
):
    """Issue 39: once both knobs are inert, what is left is a handful of scopes; every draw
    then repeats a measured configuration (reused, not counted against --trials), and the
    loop used to run for ever. It stops once the space left is measured whole."""
    runs = scripted.use(monkeypatch, one_code_per_scope)
    code, storage = _search(tmp_path, TWO_KNOBS, "scope_mixed", "--trials", "12", "--seed", "1",
                            "--compile-budget", "20")  # fmt: skip
    printed = capsys.readouterr().out
    assert code == 0, printed
    stop = [line for line in printed.splitlines() if line.startswith("stopping: ")]
    assert len(stop) == 1, printed
    left = "(inductor.cpp.max_horizontal_fusion_size, inductor.cpp.min_chunk_size left to torch)"
    assert stop[0].startswith(f"stopping: the space left to search {left} holds "), stop
    assert stop[0].endswith(" distinct configurations, all measured"), stop
    size = int(stop[0].split(" holds ")[1].split()[0])
    study = optuna.load_study(study_name="s", storage=storage)
    collapsed = [
        t for t in study.trials if len(t.user_attrs.get("autotune.left_to_torch", ())) == 2
    ]
    assert len({t.user_attrs["autotune.key"] for t in collapsed}) == size
    with RecordStore(storage) as store:
        records = store.trials("s")
    # Far fewer records than the 2,756 of the report; fewer trials measured than asked.
    assert len(records) < 100 and store_searched(records) < 12, len(records)
    assert len(runs) < 40


def _search(tmp_path: Path, space: str, model: str, *extra: str) -> tuple[int, str]:
    """``autotune search`` of a fixture model over ``space`` (scripted trials), and its storage."""
    (tmp_path / "space.toml").write_text(space)
    storage = f"sqlite:///{tmp_path}/s.db"
    path = Path(__file__).parents[1] / "fixtures" / "models" / f"{model}.py"
    code = main([
        "search", str(path), "--space", str(tmp_path / "space.toml"), "--storage", storage,
        "--study", "s", "--out", str(tmp_path / "best.json"), "--device", "cpu",
        "--finalists", "0", *extra,
    ])  # fmt: skip
    return code, storage


def store_searched(records: list[TrialRecord]) -> int:
    return sum(r.baseline is None and r.duplicate_of is None for r in records)


@pytest.fixture(autouse=True)
def _cache(tmp_path, monkeypatch):
    homes.fresh(monkeypatch, tmp_path)
