from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from datetime import timezone
from pathlib import Path

import pytest

from autotune.records import RecordStore, TrialRecord, export_parquet

pq = pytest.importorskip("pyarrow.parquet")


def test_export_writes_one_row_per_trial(
    store: RecordStore, new_record: Callable[..., TrialRecord], tmp_path: Path
) -> None:
    store.add_trial("s", new_record(0, peak_memory_bytes=5 * 2**32, graphs=2))
    store.add_trial("s", new_record(1, status="failed", failure_kind="oom", duplicate_of=0))
    path = tmp_path / "s.parquet"

    assert export_parquet(store, "s", path) == 2

    table = pq.read_table(path)
    rows = table.to_pylist()
    assert [row["trial_number"] for row in rows] == [0, 1]
    assert rows[0]["peak_memory_bytes"] == 5 * 2**32
    assert (rows[1]["failure_kind"], rows[1]["duplicate_of"]) == ("oom", 0)
    assert json.loads(rows[0]["config_json"]) == {"mode": "default", "trial": 0}
    assert json.loads(rows[0]["environment_json"])["host"] == "node-1"
    assert (rows[0]["host"], rows[0]["torch_version"]) == ("node-1", "2.13.0")
    assert rows[0]["created_at"].tzinfo is not None
    assert rows[0]["created_at"].utcoffset() == timezone.utc.utcoffset(None)
    assert {row["study_name"] for row in rows} == {"s"}


def test_export_of_an_empty_study_keeps_the_columns(store: RecordStore, tmp_path: Path) -> None:
    path = tmp_path / "empty.parquet"

    assert export_parquet(store, "s", path) == 0

    schema = pq.read_schema(path)
    assert str(schema.field("speedup_vs_eager").type) == "double"
    assert str(schema.field("graph_breaks").type) == "int64"
    assert {"config_json", "result_json", "cpu_model", "created_at"} <= set(schema.names)


def test_importing_records_leaves_pyarrow_and_optuna_unloaded() -> None:
    code = (
        "import sys, autotune.records; "
        "print(sorted({'pyarrow', 'optuna', 'torch'} & set(sys.modules)))"
    )
    root = Path(__file__).parents[2]
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=root
    )

    assert done.stdout.strip() == "[]"
