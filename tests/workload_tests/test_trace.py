"""Recorded traffic traces (--traffic): a table of shapes and counts, read as data."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from autotune.workload import (
    WorkloadError,
    build_calls,
    load_model_file,
    read_trace,
    shapes_problem,
)

FIXTURES = Path(__file__).parents[1] / "fixtures"
TRACE = FIXTURES / "traces" / "requests.csv"


def test_a_csv_trace_is_read_as_shapes_and_counts_identical_shapes_merged():
    traffic = read_trace(TRACE)
    assert traffic == [
        {"shape": {"batch": 1, "length": 16}, "weight": 120.0},
        {"shape": {"batch": 4, "length": 64}, "weight": 9.0},
        {"shape": {"batch": 8, "length": 128}, "weight": 1.0},
    ]
    assert shapes_problem(traffic) is None


def test_a_parquet_trace_reads_as_the_csv_does(tmp_path):
    table = pa.table({"seq_len": [32, 256], "dtype": ["bf16", "bf16"], "weight": [0.75, 0.25]})
    pq.write_table(table, tmp_path / "trace.parquet")
    assert read_trace(tmp_path / "trace.parquet") == [
        {"shape": {"seq_len": 32, "dtype": "bf16"}, "weight": 0.75},
        {"shape": {"seq_len": 256, "dtype": "bf16"}, "weight": 0.25},
    ]


def test_each_shape_becomes_the_request_get_request_builds_with_its_weight():
    module = load_model_file(FIXTURES / "models" / "trace_requests.py")
    calls = build_calls(module, "cpu", None, read_trace(TRACE))
    assert [c.args[0].shape for c in calls] == [(1, 16, 8), (4, 64, 8), (8, 128, 8)]
    assert [c.weight for c in calls] == [120.0, 9.0, 1.0]


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ("batch,length\n1,16\n", "exactly one of count or weight"),
        ("batch,count,weight\n1,2,3\n", "exactly one of count or weight"),
        ("count\n3\n", "at least one column"),
        ("batch size,count\n1,2\n", "named like a Python argument"),
        ("batch,count\n1,-2\n", "row 2 is '-2'"),
        ("batch,count\n1,many\n", "row 2 is 'many'"),
        ("batch,count\n,2\n", "row 2, column batch is empty"),
        ("batch,count\n1,2,3\n", "more or fewer cells"),
        ("batch,count\n1,0\n", "no shape with a count above 0"),
        ("batch,count\n", "has no rows"),
    ],
)
def test_a_broken_trace_says_the_rule_and_where(tmp_path, text, said):
    path = tmp_path / "trace.csv"
    path.write_text(text)
    with pytest.raises(WorkloadError) as info:
        read_trace(path)
    assert said in str(info.value), str(info.value)
    assert "get_request(device, **shape)" in str(info.value) or "columns" in str(info.value)


def test_too_many_shapes_are_refused_with_the_remedy(tmp_path):
    path = tmp_path / "trace.csv"
    path.write_text("length,count\n" + "".join(f"{n},1\n" for n in range(1, 300)))
    with pytest.raises(WorkloadError, match="299 distinct shapes.*round sequence lengths"):
        read_trace(path)


def test_an_unreadable_file_is_a_usage_error(tmp_path):
    with pytest.raises(WorkloadError, match="cannot be read"):
        read_trace(tmp_path / "missing.csv")
    (tmp_path / "bad.parquet").write_bytes(b"not parquet")
    with pytest.raises(WorkloadError, match="cannot be read as Parquet"):
        read_trace(tmp_path / "bad.parquet")


@pytest.mark.parametrize(
    "stored",
    [
        [],
        [{"shape": {"batch": 1}}],
        [{"shape": {"batch": 1}, "weight": -1}],
        [{"shape": {"batch": 1}, "weight": True}],
        [{"shape": {"import os": 1}, "weight": 1}],
        [{"shape": {"batch": [1]}, "weight": 1}],
        "batch,count",
    ],
)
def test_a_stored_traffic_that_breaks_the_rules_is_named(stored):
    assert shapes_problem(stored) is not None
