"""benchmarks/builders.py: both searches run as a user would, the table says what each did
(the scripted runner stands in for the trials: nothing compiles)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parents[2] / "benchmarks"))
import builders  # noqa: E402


def test_the_same_search_with_and_without_builders(tmp_path, model_file, monkeypatch):
    tests = str(Path(__file__).parents[1])
    monkeypatch.setenv("AUTOTUNE_TRIAL_RUNNER", "scripted:make")
    monkeypatch.setenv("PYTHONPATH", tests)
    out = tmp_path / "builders_cpu"
    code = builders.main([model_file("tiny"), "--device", "cpu", "--trials", "2",
                          "--builders", "1", "--out", str(out)])  # fmt: skip
    raw = json.loads(Path(f"{out}.json").read_text())
    assert code == 0, [r["output"][-2000:] for r in raw["runs"]]
    assert [r["builders"] for r in raw["runs"]] == [0, 1]
    assert all(r["trials"] >= 4 and r["emitted"] for r in raw["runs"])  # baselines + 2
    table = Path(f"{out}.md").read_text()
    assert "| 0 | 0 |" in table and "| 1 | 0 |" in table and "without ÷ with builders" in table
