from __future__ import annotations

from pathlib import Path

import duckdb
import homes
import pyarrow.parquet as pq
import pytest
import scripted

from autotune.cli import main
from autotune.reports import export_study, load_study_data

from .conftest import STUDY

KNOBS = ("knob.compile.fullgraph", "knob.compile.dynamic", "knob.dynamo.recompile_limit")


@pytest.mark.parametrize("fmt", ["parquet", "csv"])
def test_duckdb_reads_a_column_per_knob_and_the_metrics(study_storage, tmp_path, fmt):
    data = load_study_data(study_storage, STUDY, importance=False)
    path = tmp_path / f"s.{fmt}"

    assert export_study(data, path, fmt) == len(data.rows)

    rel = duckdb.sql(f"SELECT * FROM '{path}' ORDER BY trial_number")
    types = dict(zip(rel.columns, [str(t) for t in rel.types], strict=True))
    # compile.dynamic: the space's false/true, and default compile's "auto".
    assert [types[k] for k in KNOBS] == ["BOOLEAN", "VARCHAR", "BIGINT"]
    assert types["compile_time_s"] == types["latency_median_s"] == "DOUBLE"
    assert types["status"] == "VARCHAR" and types["recompiles"] == "BIGINT"
    # Timestamps with a time zone come back to Python through pytz: not needed here.
    rel = rel.select("* EXCLUDE (started_at, finished_at)")
    rows = [dict(zip(rel.columns, r, strict=True)) for r in rel.fetchall()]
    eager = rows[0]
    assert eager["baseline"] == "eager" and all(eager[k] is None for k in KNOBS)
    searched = [r for r in rows if r["baseline"] is None]
    assert all(isinstance(r["knob.compile.fullgraph"], bool) for r in searched)
    failed = [r for r in searched if r["status"] == "timeout"]
    assert failed and failed[0]["error"] == "compile still running after 600 s"
    ok = [r for r in searched if r["status"] == "ok" and r["duplicate_of"] is None]
    assert all(r["shape1.latency_median_s"] == pytest.approx(2e-3 / 1.3) for r in ok)
    assert all(r["worker_pid"] is not None and r["torch_version"] for r in ok)


def test_each_trial_carries_its_interval_and_the_rounds_figures_that_the_file_claims(
    study_storage, tmp_path
):
    data = load_study_data(study_storage, STUDY, importance=False)
    path = tmp_path / "s.parquet"
    export_study(data, path)

    rows = {r["trial_number"]: r for r in pq.read_table(path).to_pylist()}

    made = data.decision
    assert made is not None and made.finalists and made.confirmation is not None
    for row in rows.values():  # a trial's own interval, where the result gives one
        if row["status"] == "ok" and row["duplicate_of"] is None:
            assert row["speedup_vs_eager_ci_low"] is None or (
                row["speedup_vs_eager_ci_low"] <= row["speedup_vs_eager"]
                <= row["speedup_vs_eager_ci_high"]
            )  # fmt: skip
    finalists = {f.searched.trial_number for f in made.finalists}
    assert {n for n, r in rows.items() if r["finalist_speedup_vs_eager"]} == finalists
    for n in finalists:
        row = rows[n]
        assert row["finalist_speedup_vs_eager_ci_low"] <= row["finalist_speedup_vs_eager"]
        assert row["finalist_speedup_vs_eager"] <= row["finalist_speedup_vs_eager_ci_high"]
    confirmed = {n for n, r in rows.items() if r["confirmed_speedup_vs_eager"]}
    chosen = made.confirmation.chosen.trial_number
    assert chosen in confirmed and confirmed <= finalists
    if made.best.decision == "compile":  # the claim is the confirmation round's figure
        claim = made.best.metrics
        assert rows[chosen]["confirmed_speedup_vs_eager"] == claim["speedup_vs_eager"]
        assert rows[chosen]["confirmed_speedup_vs_eager_ci_low"] == (
            claim["speedup_vs_eager_ci_low"]
        )  # fmt: skip


def test_parquet_keeps_times_with_their_time_zone(study_storage, tmp_path):
    path = tmp_path / "s.parquet"
    export_study(load_study_data(study_storage, STUDY, importance=False), path)

    schema = pq.read_schema(path)

    assert str(schema.field("started_at").type) == "timestamp[us, tz=UTC]"
    assert str(schema.field("speedup_vs_eager").type) == "double"


@pytest.mark.parametrize(("fmt", "writer"), [("parquet", "pyarrow.parquet.write_table"),
                                             ("csv", "pyarrow.csv.write_csv")])  # fmt: skip
def test_a_writer_that_fails_midway_leaves_the_existing_file_whole(
    study_storage, tmp_path, monkeypatch, fmt, writer
):
    data = load_study_data(study_storage, STUDY, importance=False)
    (tmp_path / "out").mkdir()
    path = tmp_path / "out" / f"s.{fmt}"
    export_study(data, path, fmt)
    before = path.read_bytes()

    def half_then_full_disk(table, where, *args, **kwargs):
        with open(where, "wb") as f:
            f.write(b"PAR1 half a file")
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(writer, half_then_full_disk)
    with pytest.raises(OSError, match="No space left"):
        export_study(data, path, fmt)

    assert path.read_bytes() == before
    assert [p.name for p in path.parent.iterdir()] == [path.name]  # no temporary file left


@pytest.fixture
def unsampled_storage(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """A study that stopped before sampling: eager, default compile and the three presets of
    tests/fixtures/spaces/presets.toml, every compiled one clearly slower than eager."""
    fixtures = Path(__file__).parents[1] / "fixtures"
    runs = scripted.use(monkeypatch, scripted.by_config(default=0.8))
    homes.fresh(monkeypatch, tmp_path)
    storage = f"sqlite:///{tmp_path}/study.db"
    code = main([
        "search", str(fixtures / "models" / "tiny.py"),
        "--space", str(fixtures / "spaces" / "presets.toml"), "--trials", "6",
        "--storage", storage, "--study", "p", "--out", str(tmp_path / "best.json"),
        "--device", "cpu", "--scope", "whole", "--finalists", "0", "--measure-seconds", "0.2",
    ])  # fmt: skip
    assert code == 0 and len(runs) == 5  # eager, default, 3 presets: nothing sampled
    return storage


@pytest.mark.parametrize("fmt", ["parquet", "csv"])
def test_baselines_and_presets_fill_the_knob_columns_from_their_configs(
    unsampled_storage, tmp_path, fmt
):
    data = load_study_data(unsampled_storage, "p", importance=False)
    assert all(not row.params for row in data.rows)  # the sampler drew nothing
    path = tmp_path / f"p.{fmt}"

    export_study(data, path, fmt)

    knobs = ["compile.backend", "compile.mode", "compile.dynamic", "compile.fullgraph",
             "inductor.freezing", "inductor.max_fusion_size", "inductor.max_autotune",
             "scope.compile"]  # fmt: skip
    columns = ", ".join(f'"knob.{k}"' for k in knobs)
    rel = duckdb.sql(f"SELECT baseline, {columns} FROM '{path}' ORDER BY trial_number")
    types = dict(zip(rel.columns, [str(t) for t in rel.types], strict=True))
    assert types["knob.compile.fullgraph"] == types["knob.inductor.freezing"] == "BOOLEAN"
    assert types["knob.inductor.max_fusion_size"] == "BIGINT"
    rows = rel.fetchall()
    assert rows == [
        # baseline, backend, mode, dynamic, fullgraph, freezing, max_fusion_size, max_autotune
        ("eager", None, None, None, None, None, None, None, None),
        ("default", "inductor", "default", "auto", False, None, None, None, "<root>"),
        (None, "inductor", "max-autotune-no-cudagraphs", "auto", False, None, None, True,
         "<root>"),
        (None, "inductor", "default", "auto", False, True, None, None, "<root>"),  # freezing
        (None, "inductor", "default", "True", False, None, 128, None, "<root>"),  # fusion
    ]  # fmt: skip


def test_a_traffic_mix_exports_its_weighted_figures_and_each_requests_share(
    tmp_path, model_file, space_file
):
    import torch

    from autotune.search import Search, SearchRequest
    from autotune.settings import StudySettings
    from autotune.space import load_space

    class Served:
        def run(self, spec):
            result = scripted.ok(1.0 if spec.config is None else 1.25)
            result.traffic = {
                "requests": 2,
                "mean_s": 1e-3,
                "p50_s": 5e-4,
                "p95_s": 5e-3,
                "p99_s": 5e-3,
                "startup_s": None if spec.config is None else 2.5,
            }
            result.per_shape = [{"inputs": "(1x16:float32)", "weight": 0.9},
                                {"inputs": "(64x16:float32)", "weight": 0.1}]  # fmt: skip
            return result

        def close(self):
            pass

    space = load_space(space_file("aot_eager"), "cpu")
    settings = StudySettings(
        model_path=model_file("traffic"), device="cpu", space=space.to_dict(),
        space_hash=space.content_hash(), torch_version=torch.__version__, scope="whole",
        trials=1, finalists=0,
    )  # fmt: skip
    request = SearchRequest("served", f"sqlite:///{tmp_path}/t.db", settings)
    Search(request, Served()).run()
    path = tmp_path / "served.parquet"
    export_study(load_study_data(request.storage, "served", importance=False), path)

    rows = pq.read_table(path).to_pylist()
    default = next(r for r in rows if r["baseline"] == "default")
    assert (default["traffic_p99_s"], default["traffic_startup_s"]) == (5e-3, 2.5)
    assert (default["shape0.weight"], default["shape1.weight"]) == (0.9, 0.1)
