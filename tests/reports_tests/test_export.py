from __future__ import annotations

import duckdb
import pyarrow.parquet as pq
import pytest

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
    assert {types[k] for k in KNOBS} == {"BOOLEAN", "BIGINT"}
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
