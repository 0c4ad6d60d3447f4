from __future__ import annotations

import dataclasses
from collections.abc import Callable
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa

from autotune.records import RecordStore, TrialRecord

Factory = Callable[..., TrialRecord]


def _full_record() -> TrialRecord:
    return TrialRecord(
        trial_number=7,
        config={"mode": "max-autotune", "options": {"coordinate_descent_tuning": True}},
        config_hash="0123456789abcdef0123456789abcdef",
        brief="mode=max-autotune +coordinate_descent_tuning",
        status="failed",
        optuna_trial_id=42,
        baseline="default",
        failure_kind="accuracy",
        error="max abs diff 0.3 > atol 1e-3 — output 0",
        error_tail="Traceback (most recent call last):\n  ...\nAssertionError: ünïcode",
        compile_time_s=12.5,
        latency_median_s=0.00123456789,
        latency_iqr_s=1.5e-5,
        eager_latency_median_s=0.002,
        speedup_vs_eager=1.62,
        speedup_vs_eager_q1=1.6,
        speedup_vs_eager_q3=1.64,
        speedup_vs_default=1.1,
        peak_memory_bytes=80 * 2**30,
        graphs=3,
        graph_breaks=2,
        recompiles=1,
        wall_time_s=30.25,
        duplicate_of=2,
        environment={
            "host": "gpu-node-17",
            "python": "3.11.7",
            "torch": "2.13.0+cu128",
            "triton": "3.5.0",
            "cuda": "12.8",
            "driver": "570.86.15",
            "device_name": "NVIDIA H100 80GB HBM3",
            "cpu_model": "AMD EPYC 9654 96-Core Processor",
        },
        result={"latencies_s": [0.0012, 0.0013], "nested": {"a": [1, None, "x"]}, "ok": False},
        created_at=datetime(2025, 3, 4, 5, 6, 7, 891011, tzinfo=timezone.utc),
    )


def test_record_with_every_field_round_trips(store: RecordStore) -> None:
    record = _full_record()

    store.add_trial("s", record)

    assert store.trials("s") == [record]


def test_environment_fills_its_columns(store: RecordStore, db_url: str) -> None:
    store.add_trial("s", _full_record())

    engine = sa.create_engine(db_url)
    with engine.connect() as conn:
        row = conn.execute(sa.text("SELECT * FROM autotune_trials")).one()._mapping
    engine.dispose()
    assert (row["host"], row["python_version"], row["torch_version"]) == (
        "gpu-node-17",
        "3.11.7",
        "2.13.0+cu128",
    )
    assert (row["triton_version"], row["cuda_version"], row["driver_version"]) == (
        "3.5.0",
        "12.8",
        "570.86.15",
    )
    assert row["device_name"] == "NVIDIA H100 80GB HBM3"
    assert row["cpu_model"] == "AMD EPYC 9654 96-Core Processor"
    assert row["study_name"] == "s"


def test_minimal_record_gets_defaults_and_utc_time(store: RecordStore) -> None:
    before = datetime.now(timezone.utc)
    record = TrialRecord(0, config={}, config_hash="h", brief="", status="ok")

    store.add_trial("s", record)

    (stored,) = store.trials("s")
    assert stored.created_at is not None
    assert stored.created_at.utcoffset() == timedelta(0)
    assert before - timedelta(seconds=1) <= stored.created_at <= datetime.now(timezone.utc)
    assert dataclasses.replace(stored, created_at=None) == record


def test_created_at_in_another_zone_reads_back_as_utc(
    store: RecordStore, new_record: Factory
) -> None:
    moment = datetime(2025, 1, 1, 12, 0, tzinfo=timezone(timedelta(hours=2)))

    store.add_trial("s", new_record(0, created_at=moment))

    (stored,) = store.trials("s")
    assert stored.created_at == moment
    assert stored.created_at is not None and stored.created_at.hour == 10


def test_nan_metric_reads_back_as_none(store: RecordStore, new_record: Factory) -> None:
    store.add_trial("s", new_record(0, speedup_vs_eager=float("nan"), wall_time_s=float("inf")))

    (stored,) = store.trials("s")
    assert stored.speedup_vs_eager is None
    assert stored.wall_time_s == float("inf")


def test_writing_a_trial_again_replaces_it(store: RecordStore, new_record: Factory) -> None:
    store.add_trial("s", new_record(3, status="failed", failure_kind="timeout"))
    store.add_trial("s", new_record(3, status="failed", failure_kind="timeout"))
    store.add_trial("s", new_record(3, latency_median_s=0.5, brief="second"))

    (stored,) = store.trials("s")
    assert (stored.status, stored.failure_kind) == ("ok", None)
    assert (stored.latency_median_s, stored.brief) == (0.5, "second")


def test_trials_come_ordered_by_number_and_per_study(
    store: RecordStore, new_record: Factory
) -> None:
    store.save_study("other", optuna_study_id=2, settings={})
    for number in (3, 1, 2, 10):
        store.add_trial("s", new_record(number))
    store.add_trial("other", new_record(5))

    assert [record.trial_number for record in store.trials("s")] == [1, 2, 3, 10]
    assert [record.trial_number for record in store.trials("other")] == [5]
    assert store.trials("missing") == []


def test_find_by_hash_returns_earliest_original(store: RecordStore, new_record: Factory) -> None:
    store.save_study("other", optuna_study_id=2, settings={})
    store.add_trial("s", new_record(0, config_hash="b"))
    store.add_trial("s", new_record(1, config_hash="a", duplicate_of=9))
    store.add_trial("s", new_record(4, config_hash="a", duplicate_of=3))
    store.add_trial("s", new_record(3, config_hash="a"))
    store.add_trial("s", new_record(5, config_hash="a"))
    store.add_trial("other", new_record(0, config_hash="c"))

    found = store.find_by_hash("s", "a")

    assert found is not None and found.trial_number == 3
    assert store.find_by_hash("s", "c") is None
    assert store.find_by_hash("missing", "a") is None


def test_find_by_hash_skips_a_study_with_only_duplicates(
    store: RecordStore, new_record: Factory
) -> None:
    store.add_trial("s", new_record(1, config_hash="a", duplicate_of=0))

    assert store.find_by_hash("s", "a") is None


def test_save_study_returns_stored_settings(store: RecordStore) -> None:
    settings = {"model": "model.py", "device": "cpu", "budgets": {"trial_s": 600}, "seed": 1}

    assert store.save_study("new", optuna_study_id=5, settings=settings) == settings
    assert store.save_study("new", optuna_study_id=5, settings={"seed": 2}) == settings
    assert store.study_settings("new") == settings
    assert store.study_settings("missing") is None


def test_add_trial_to_unrecorded_study_is_refused(store: RecordStore, new_record: Factory) -> None:
    with pytest.raises(ValueError, match=r"study 'missing' is not recorded; call save_study"):
        store.add_trial("missing", new_record(0))

    assert store.trials("missing") == []


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("status", "done", r"`status` must be one of \('ok', 'failed'\), but got 'done'"),
        ("failure_kind", "segfault", r"`failure_kind` must be one of .*'segfault'"),
        ("baseline", "compiled", r"`baseline` must be one of \('eager', 'default'\)"),
        ("config_hash", "x" * 33, r"`len\(config_hash\) <= 32` must hold"),
    ],
)
def test_record_refuses_bad_values(
    new_record: Factory, field: str, value: str, message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        new_record(0, **{field: value})


def test_unserializable_settings_are_refused(store: RecordStore, new_record: Factory) -> None:
    with pytest.raises(TypeError, match=r"`settings` must be JSON-serializable"):
        store.save_study("p", optuna_study_id=3, settings={"model": Path("model.py")})
    with pytest.raises(TypeError, match=r"`result` must be JSON-serializable"):
        store.add_trial("s", new_record(0, result={"x": {1, 2}}))

    assert store.study_settings("p") is None
    assert store.trials("s") == []


def test_context_manager_closes(db_url: str) -> None:
    with RecordStore(db_url) as store:
        store.save_study("s", optuna_study_id=1, settings={})

    with RecordStore(db_url) as reopened:
        assert reopened.study_settings("s") == {}


def test_settle_study_setting_keeps_the_first_write(store):
    store.save_study("settled", 1, {"a": 1, "plan": None})
    first = store.settle_study_setting("settled", "plan", {"v": 1})
    second = store.settle_study_setting("settled", "plan", {"v": 2})
    assert first["plan"] == second["plan"] == {"v": 1}
    assert store.study_settings("settled") == {"a": 1, "plan": {"v": 1}}


def test_a_trial_that_compiled_no_graph_does_not_count_against_the_budget(
    store: RecordStore,
) -> None:
    def record(number: int, **kw: Any) -> TrialRecord:
        return TrialRecord(number, config={}, config_hash=f"h{number}", brief="", **kw)

    store.add_trial("s", record(0, status="ok", baseline="eager"))
    store.add_trial("s", record(1, status="ok"))
    store.add_trial("s", record(2, status="failed", failure_kind="no_graph", error="none"))
    store.add_trial("s", record(3, status="failed", failure_kind="timeout", error="slow"))
    store.add_trial("s", record(4, status="ok", duplicate_of=1))
    assert store.count_trials("s", duplicates=False) == 2  # 1 measured, 3 failed timing out
    assert store.count_trials("s") == 4
