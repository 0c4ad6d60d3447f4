"""benchmarks/search_quality.py's replay on a synthetic table: the figures it reports are
fractions of the exhaustive optimum, and a budget as large as the space always finds it."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from autotune.space import load_space

ROOT = Path(__file__).parents[2]
sys.path.insert(0, str(ROOT / "benchmarks"))
import search_quality  # noqa: E402


def _table(tmp_path: Path, space_path: str) -> Path:
    """Every config of the space, 1.0x to 2.0x by a fixed rule, one of them failed."""
    space = load_space(space_path, "cpu")
    rows = []
    for i, (digest, (params, config)) in enumerate(search_quality.configs_of(space).items()):
        speedup = 1.0 + int(digest[:6], 16) % 100 / 100
        failed = i == 3
        rows.append({
            "config_hash": digest, "brief": config.brief(), "params": json.dumps(params),
            "status": "failed" if failed else "ok", "failure_kind": "crash" if failed else None,
            "speedup": None if failed else speedup, "q1": None if failed else speedup - 0.01,
            "q3": None if failed else speedup + 0.01, "compile_s": 1.0, "wall_s": 2.0,
        })  # fmt: skip
    meta = {"model": "m.py", "space": space.to_dict(), "device": "cpu"}
    table = pa.Table.from_pylist(rows).replace_schema_metadata({"autotune": json.dumps(meta)})
    path = tmp_path / "table.parquet"
    pq.write_table(table, path)
    return path


def test_every_assignment_counts_like_the_space(space_file):
    space = load_space(space_file("presets"), "cpu")
    assert len(search_quality.every_assignment(space)) == space.size


def test_replay_reports_fractions_of_the_optimum(tmp_path, space_file):
    path = _table(tmp_path, space_file("presets"))
    size = len(search_quality.configs_of(load_space(space_file("presets"), "cpu")))
    result = search_quality.replay(
        str(path), seeds=3, budgets=[2, size], strategies=["random", "tpe-multivariate+presets"]
    )
    for by_budget in result["strategies"].values():
        small, whole = by_budget["2"], by_budget[str(size)]
        assert 0 < small["worst_decile_fraction"] <= small["median_fraction"] <= 1
        assert whole["median_fraction"] == 1 and whole["optimum_within_noise"] == 1
    assert result["warm_start"]["budget"] == size
    text = search_quality.render(result)
    assert "| tpe-multivariate+presets |" in text and "warm start" in text
