"""benchmarks/fixed_finalist.py: two presets combined into a fixed finalist, measured after the
search in a round of its own beside the emitted config and default compile (a scripted
runner: nothing compiles)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from search_tests.test_presets import ByPreset, _request

from autotune.search import Search

sys.path.insert(0, str(Path(__file__).parents[2] / "benchmarks"))
import fixed_finalist as ff  # noqa: E402


def test_the_fixed_finalist_is_measured_beside_the_emitted_config(
    tmp_path, model_file, space_file, capsys
):
    request = _request(tmp_path, model_file, space_file, trials=4)
    Search(request, ByPreset()).run()
    runner = ByPreset()
    found = ff.fixed_round(request.storage, "s", ["freezing", "fusion"], runner=runner)
    rows = {str(r["label"]).split(" #")[0]: r for r in found["rows"]}
    assert set(rows) == {"emitted", "fixed freezing & fusion", "default torch.compile"}
    # each of the three twice (cold, then warm in reverse order), the combination as a preset
    # config: exactly the knobs the two set
    assert len(runner.specs) == 6
    assert {"freezing": True, "max_fusion_size": 128} in [
        s.config["options"] for s in runner.specs
    ]
    assert rows["fixed freezing & fusion"]["speedup"] == pytest.approx(1.5)
    assert rows["default torch.compile"]["speedup"] == pytest.approx(1.1)
    said = ff.verdict(found)
    assert said.startswith("holds: fixed freezing & fusion 1.50x"), said
    table = "\n".join(ff.section(found))
    assert "| fixed freezing & fusion `" in table and "(1.49-1.51)" in table
    assert "re-measuring 3 finalists" in capsys.readouterr().out


def test_the_verdict_fails_when_the_fixed_finalist_is_clearly_faster():
    found = {"presets": ["a", "b"], "rows": [
        {"label": "emitted #5", "brief": "x", "speedup": 1.2, "q1": 1.18, "q3": 1.22},
        {"label": "fixed a & b", "brief": "y", "speedup": 1.5, "q1": 1.45, "q3": 1.55},
    ]}  # fmt: skip
    assert ff.verdict(found) == "FAILS: fixed a & b 1.50x (q1 1.45) vs emitted #5 1.20x (q3 1.22)"
    # do not compile: eager is 1.0x
    found["rows"] = found["rows"][1:]
    assert ff.verdict(found).endswith("vs eager (q3 1.00)")
    found["rows"][0] = {"label": "fixed a & b", "brief": "y", "failed": True}
    assert ff.verdict(found) == "fixed a & b failed in the round"


def test_presets_that_do_not_combine_are_refused(tmp_path, model_file, space_file):
    request = _request(tmp_path, model_file, space_file, trials=2)
    Search(request, ByPreset()).run()
    with pytest.raises(SystemExit, match="freezing,nope: these presets do not combine"):
        ff.fixed_round(request.storage, "s", ["freezing", "nope"], runner=ByPreset())
