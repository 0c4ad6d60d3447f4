"""Finalist rounds in the records, on every backend: claimed, filled result by result, done."""

from __future__ import annotations

import pytest

from autotune.records import RecordStore


def test_a_round_is_recorded_result_by_result_and_marked_done(store: RecordStore) -> None:
    round_id = store.start_finalist_round("s", [7, 2, 0], owner="node-1:123")
    store.add_finalist_result(round_id, 7, "cold", {"status": "ok", "compile_time_s": 9.5})
    (measuring,) = store.finalist_rounds("s")
    assert (measuring.id, measuring.finalists) == (round_id, [7, 2, 0])
    assert measuring.state == "measuring"
    assert not measuring.done and measuring.finished_at is None
    assert measuring.owner == "node-1:123"

    store.add_finalist_result(round_id, 7, "warm", {"status": "ok", "compile_time_s": 1.5})
    store.finish_finalist_round(round_id)

    (done,) = store.finalist_rounds("s")
    assert done.done and done.finished_at is not None and done.finished_at >= done.created_at
    assert done.results == {
        (7, "cold"): {"status": "ok", "compile_time_s": 9.5},
        (7, "warm"): {"status": "ok", "compile_time_s": 1.5},
    }


def test_rounds_come_oldest_first_and_per_study(store: RecordStore) -> None:
    store.save_study("other", optuna_study_id=2, settings={})
    first = store.start_finalist_round("s", [1], owner="a")
    second = store.start_finalist_round("s", [2], owner="b")
    store.start_finalist_round("other", [3], owner="c")
    assert [r.id for r in store.finalist_rounds("s")] == [first, second]
    assert [r.finalists for r in store.finalist_rounds("other")] == [[3]]
    assert store.finalist_rounds("missing") == []


def test_a_run_is_recorded_once_and_named_cold_or_warm(store: RecordStore) -> None:
    round_id = store.start_finalist_round("s", [1], owner="a")
    with pytest.raises(ValueError, match="`run` must be one of"):
        store.add_finalist_result(round_id, 1, "lukewarm", {})
    store.add_finalist_result(round_id, 1, "cold", {})
    with pytest.raises(Exception):  # noqa: B017 - the backend's IntegrityError
        store.add_finalist_result(round_id, 1, "cold", {})


def test_update_study_settings_changes_only_the_given_keys(store: RecordStore) -> None:
    store.save_study("u", optuna_study_id=3, settings={"trials": 20, "seed": 1})
    assert store.update_study_settings("u", {"trials": 40}) == {"trials": 40, "seed": 1}
    assert store.study_settings("u") == {"trials": 40, "seed": 1}
    with pytest.raises(ValueError, match="is not recorded"):
        store.update_study_settings("missing", {"trials": 1})
