"""Rows read back are checked on every backend: a row edited by hand or written by another tool
is one StudyRowError naming the study, the row and each bad column with its value; a reader
that passes ``on_bad`` gets the other rows and the error."""

from __future__ import annotations

from collections.abc import Callable

import pytest
import sqlalchemy as sa

from autotune.records import RecordStore, StudyRowError, TrialRecord


def _execute(url: str, statement: str) -> None:
    engine = sa.create_engine(url)
    try:
        with engine.begin() as conn:
            conn.execute(sa.text(statement))
    finally:
        engine.dispose()


def test_settings_that_are_no_json_object_name_the_study_and_the_text(
    store: RecordStore, db_url: str
) -> None:
    _execute(db_url, "UPDATE autotune_studies SET settings_json = '{\"seed\": ' ")

    with pytest.raises(StudyRowError) as info:
        store.study_settings("s")

    message = str(info.value)
    assert message.startswith("Study 's': the row of its settings")
    assert "settings_json '{\"seed\": ': not valid JSON" in message
    with pytest.raises(StudyRowError):
        store.update_study_settings("s", {"trials": 3})
    assert store.study_settings_json("s") == '{"seed": '


@pytest.mark.parametrize(
    ("column", "value", "named"),
    [
        ("result_json", "'{\"cut'", "result_json '{\"cut': not valid JSON"),
        ("config_json", "'[1]'", "config_json '[1]': must be an object in JSON"),
        ("environment_json", "'null'", "environment_json 'null': must be an object"),
        ("status", "'weird'", "`status` must be one of ('ok', 'failed'), but got 'weird'"),
        ("failure_kind", "'gremlins'", "`failure_kind` must be one of"),
    ],
)
def test_a_broken_trial_row_names_the_trial_the_column_and_the_value(
    store: RecordStore,
    db_url: str,
    new_record: Callable[..., TrialRecord],
    column: str,
    value: str,
    named: str,
) -> None:
    for number in range(3):
        store.add_trial("s", new_record(number))
    _execute(db_url, f"UPDATE autotune_trials SET {column} = {value} WHERE trial_number = 1")

    with pytest.raises(StudyRowError) as info:
        store.trials("s")
    skipped: list[StudyRowError] = []
    rest = store.trials("s", on_bad=skipped.append)

    assert "Study 's': the row of trial 1 in autotune_trials" in str(info.value)
    assert named in str(info.value)
    assert "WHERE study_name = 's' AND trial_number = 1" in str(info.value)
    assert [r.trial_number for r in rest] == [0, 2]
    assert [str(e) for e in skipped] == [str(info.value)]
    with pytest.raises(StudyRowError):
        store.trial("s", 1)
    assert store.trial("s", 2) is not None


def test_sqlite_columns_holding_the_wrong_type_are_named(
    tmp_path, new_record: Callable[..., TrialRecord]
) -> None:
    """SQLite keeps whatever is written in a column; the types are checked on the way out."""
    url = f"sqlite:///{tmp_path / 'typed.db'}"
    with RecordStore(url) as store:
        store.save_study("s", optuna_study_id=1, settings={})
        store.add_trial("s", new_record(0))
        _execute(url, "UPDATE autotune_trials SET latency_median_s = 'fast', graphs = 1.5, "
                      "created_at = 'soon', brief = X'00'")  # fmt: skip

        with pytest.raises(StudyRowError) as info:
            store.trials("s")

    assert info.value.problems == [
        "latency_median_s 'fast': must be a number or null",
        "graphs 1.5: must be a whole number or null",
        "brief b'\\x00': must be text",
        "created_at 'soon': must be a time",
    ]


def test_a_broken_finalist_round_names_the_round_and_its_results(
    store: RecordStore, db_url: str
) -> None:
    first = store.start_finalist_round("s", [1, 2], owner="a")
    store.add_finalist_result(first, 1, "cold", {"ok": True})
    second = store.start_finalist_round("s", [3], owner="b")
    store.add_finalist_result(second, 3, "warm", {"ok": True})
    _execute(db_url, f"UPDATE autotune_finalist_rounds SET finalists_json = '[\"x\"]', "
                     f"state = 'maybe' WHERE id = {first}")  # fmt: skip
    _execute(db_url, "UPDATE autotune_finalist_results SET result_json = '7' "
                     f"WHERE round_id = {first}")  # fmt: skip

    with pytest.raises(StudyRowError) as info:
        store.finalist_rounds("s")
    skipped: list[StudyRowError] = []
    rest = store.finalist_rounds("s", on_bad=skipped.append)

    assert f"the row of finalist round {first} in autotune_finalist_rounds" in str(info.value)
    assert info.value.problems == [
        "finalists_json ['x']: must list trial numbers",
        "state 'maybe': must be one of measuring, done",
        "its result of trial 1, run 'cold': result_json '7': must be an object in JSON",
    ]
    assert [r.id for r in rest] == [second] and len(skipped) == 1
