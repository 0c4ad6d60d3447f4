"""benchmarks/search_quality.py's replay on synthetic tables: the figures it reports are
fractions of the exhaustive optimum and rates per hour, a budget as large as the space always
finds the optimum, and the searches it compares do what autotune's screening does."""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from autotune.space import load_space

ROOT = Path(__file__).parents[2]
sys.path.insert(0, str(ROOT / "benchmarks"))
import search_quality  # noqa: E402


def _table(tmp_path: Path, space_path: str, runs: bool = False) -> Path:
    """Every config of the space, 1.0x to 2.0x by a fixed rule, one of them failed. With
    ``runs``: as benchmarks/quality_table.py writes it, two runs per config, and
    ``max_fusion_size`` changes no code (each config's speed is its code's)."""
    space = load_space(space_path, "cpu")
    rows = []
    for i, (digest, (params, config)) in enumerate(search_quality.configs_of(space).items()):
        shape = config.to_dict()
        shape["options"] = {k: v for k, v in shape["options"].items() if k != "max_fusion_size"}
        code = hashlib.sha256(json.dumps(shape, sort_keys=True).encode()).hexdigest()[:16]
        speedup = 1.0 + int((code if runs else digest)[:6], 16) % 100 / 100
        failed = i == 3
        row = {
            "config_hash": digest, "brief": config.brief(), "params": json.dumps(params),
            "status": "failed" if failed else "ok", "failure_kind": "crash" if failed else None,
            "speedup": None if failed else speedup, "q1": None if failed else speedup - 0.01,
            "q3": None if failed else speedup + 0.01, "compile_s": 1.0, "wall_s": 2.0,
        }  # fmt: skip
        if runs:
            medians = [None] if failed else [speedup - 0.005, speedup + 0.005]
            each = [{"status": row["status"], "speedup": s, "q1": s and s - 0.01,
                     "q3": s and s + 0.01, "compile_s": 1.0, "timing_s": 0.5, "rounds": 10}
                    for s in medians]  # fmt: skip
            row |= {"code_hash": code, "runs": json.dumps(each), "warm_compile_s": 0.2}
        rows.append(row)
    meta = {"model": "m.py", "space": space.to_dict(), "device": "cpu", "processes": 2}
    table = pa.Table.from_pylist(rows).replace_schema_metadata({"autotune": json.dumps(meta)})
    path = tmp_path / "table.parquet"
    pq.write_table(table, path)
    return path


def test_every_assignment_counts_like_the_space(space_file):
    space = load_space(space_file("presets"), "cpu")
    assert len(search_quality.every_assignment(space)) == space.size


def test_replay_reports_fractions_of_the_optimum_and_rates(tmp_path, space_file):
    path = _table(tmp_path, space_file("presets"))
    size = len(search_quality.configs_of(load_space(space_file("presets"), "cpu")))
    result = search_quality.replay(
        str(path), seeds=3, budgets=[2, size], strategies=["random", "tpe-multivariate+presets"],
        searches=["main at issue 29", "+ halving + wide finalists"],
    )  # fmt: skip
    for by_budget in [*result["strategies"].values(), *result["searches"].values()]:
        small, whole = by_budget["2"], by_budget[str(size)]
        assert 0 < small["worst_decile_fraction"] <= small["median_fraction"] <= 1
        assert whole["median_fraction"] >= 0.99 and whole["optimum_within_noise"] == 1
        assert small["configs_per_hour"] > 0 and small["search_minutes"] > 0
    assert result["warm_start"]["budget"] == size
    text = search_quality.render(result)
    assert "| tpe-multivariate+presets |" in text and "warm start" in text
    assert "| + halving + wide finalists |" in text and "configurations per hour" in text


def test_runs_of_one_code_are_one_truth(tmp_path, space_file):
    table = search_quality.Table(str(_table(tmp_path, space_file("presets"), runs=True)))
    by_code: dict[str, set[float]] = {}
    for digest in table.rows:
        if table.true_speedup(digest):
            by_code.setdefault(table.code[digest], set()).add(table.true_speedup(digest))
    assert len(by_code) < len(table.rows)  # max_fusion_size made no code of its own
    assert all(len(truths) == 1 for truths in by_code.values())
    # two runs per config, and every config of a code adds its runs to the code's
    assert all(len(runs) >= 2 for runs in table.groups.values())


def test_the_searches_screen_as_autotune_does(tmp_path, space_file):
    path = _table(tmp_path, space_file("presets"), runs=True)
    table = search_quality.Table(str(path))
    at_filing = search_quality.SEARCHES["main at issue 29"]
    now = search_quality.SEARCHES[search_quality.NOW]
    halving = search_quality.SEARCHES["+ halving"]
    before, after, halved = [], [], []
    for seed in range(6):
        before.append(search_quality.run_study(table, "random", seed, 12, at_filing))
        after.append(search_quality.run_study(table, "random", seed, 12, now))
        halved.append(search_quality.run_study(table, "random", seed, 12, halving))
    # same code as a timed trial: compiled, not timed
    assert any(t.timing == "none" for r in before for t in r.trials)
    # once two sampled trials showed max_fusion_size changes nothing, it is left to torch
    assert sum(r.inert_left for r in before) == 0 < sum(r.inert_left for r in after)
    # successive halving stops trials below the best's reach after their first stage
    short = [t for r in halved for t in r.trials if t.timing == "short"]
    assert short and all(t.kind == "sampled" for t in short)
    assert all(t.seconds < table.cost(t.digest, "full", 2.0) for t in short)
    spared = search_quality._spared(table, halved)
    assert 0 < spared["successive halving, stopped after the short stage"]["share_of_time"] < 1
