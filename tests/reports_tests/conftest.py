"""A small finished study, run with the scripted runner (no compile), that every report test
reads: baselines, search trials with different speedups, a failure, recompiles and breaks in
some trials, per-shape latency in one, and a finished round of finalists."""

from __future__ import annotations

import sqlite3
import zlib
from contextlib import closing
from pathlib import Path

import homes
import pytest
import scripted

from autotune.cli import main
from autotune.trials import TrialResult, TrialSpec

STUDY = "s"


def varied(spec: TrialSpec) -> TrialResult:
    """Eager 1.0x; each config its own speedup, graph counts and (for one) a timeout."""
    if spec.config is None:
        return scripted.ok(1.0)
    fingerprint = f"{spec.config['fullgraph']}{spec.config['dynamic']}{spec.config['dynamo']}"
    n = zlib.crc32(fingerprint.encode())
    if spec.config["fullgraph"] and spec.config["dynamic"]:
        return TrialResult.failed("timeout", "compile still running after 600 s\nmore detail")
    result = scripted.ok(1.1 + (n % 60) / 100, compile_s=1.0 + n % 30)
    result.recompiles, result.graph_breaks = n % 3, n % 2
    result.graphs = 1 + result.graph_breaks
    result.cache = {"fxgraph_hit": n % 2, "fxgraph_miss": 1}
    result.phases = {"setup_s": 0.2, "compile_s": result.compile_time_s, "timing_s": 1.5}
    result.per_shape = [
        {"inputs": "(4x16:float32)", "latency_median_s": 1e-3 / 1.2,
         "eager_latency_median_s": 1e-3, "speedup_vs_eager": 1.2},
        {"inputs": "(8x16:float32)", "latency_median_s": 2e-3 / 1.3,
         "eager_latency_median_s": 2e-3, "speedup_vs_eager": 1.3},
    ]  # fmt: skip
    return result


@pytest.fixture(scope="session")
def _searched_study(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The database of one finished 8-trial study named ``s``, searched once per test run."""
    folder = tmp_path_factory.mktemp("reports-study")
    fixtures = Path(__file__).parents[1] / "fixtures"
    with pytest.MonkeyPatch.context() as mp:
        scripted.use(mp, varied)
        homes.fresh(mp, folder)
        code = main([
            "search", str(fixtures / "models" / "tiny.py"),
            "--space", str(fixtures / "spaces" / "aot_eager_16.toml"), "--trials", "8",
            "--storage", f"sqlite:///{folder}/study.db", "--study", STUDY,
            "--out", str(folder / "best.json"), "--device", "cpu", "--finalists", "2",
            "--measure-seconds", "0.2",
        ])  # fmt: skip
    assert code == 0
    return folder / "study.db"


@pytest.fixture
def study_storage(_searched_study: Path, tmp_path: Path) -> str:
    """The storage URL of a copy of that study, this test's own to change."""
    # SQLite's backup copies what the write-ahead log holds too (a file copy would not).
    with closing(sqlite3.connect(_searched_study)) as source:
        with closing(sqlite3.connect(tmp_path / "study.db")) as copy:
            source.backup(copy)
    return f"sqlite:///{tmp_path}/study.db"
