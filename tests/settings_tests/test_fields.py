"""StudyFields is written from the settings table (autotune/settings/_generate.py)."""

from __future__ import annotations

import dataclasses

import pytest

from autotune.settings import DEFAULT, SEARCH_OPTIONS, Option, StudyFields, _generate
from autotune.storage import StudySettings


def test_the_written_module_is_what_the_table_says_today():
    """Run `python -m autotune.settings._generate` when this fails: a row changed."""
    assert _generate.TARGET.read_text() == _generate.source()


def test_every_setting_an_option_sets_is_a_field_with_the_tables_default():
    fields = {f.name: f for f in dataclasses.fields(StudySettings)}
    assert {o.field for o in SEARCH_OPTIONS if o.field} <= set(fields)
    for option in _generate.rows():  # the row that writes each field (the first that sets it)
        declared = fields[option.field]
        expected = dataclasses.MISSING if option.default is None else DEFAULT[option.name]
        if expected is dataclasses.MISSING and "None" in str(option.annotation):
            expected = None
        assert declared.default == expected, option.flag
    (measure,) = [f for f in fields.values() if f.name == "measure"]  # the trials' own object
    assert measure.default_factory().target_seconds == DEFAULT["measure_seconds"]  # type: ignore[misc]


def test_a_field_takes_its_rows_type_and_none_only_where_the_row_allows_it():
    typed = {f.name: f.type for f in dataclasses.fields(StudyFields)}
    assert typed["compile_budget"] == "float" and typed["calls"] == "int | None"
    required = [
        f.name for f in dataclasses.fields(StudyFields) if f.default is dataclasses.MISSING
    ]
    assert required == ["model_path", "space_hash", "device"]
    with pytest.raises(TypeError, match="space_hash"):
        StudyFields(model_path="m.py", device="cpu")  # type: ignore[call-arg]


def test_a_new_row_without_a_type_is_refused_by_name(monkeypatch):
    row = Option("--new-setting", help="h", field="new_setting", kind="positive_int")
    monkeypatch.setattr(_generate, "SEARCH_OPTIONS", (*SEARCH_OPTIONS, row))
    with pytest.raises(
        ValueError, match="--new-setting sets 'new_setting' and gives no annotation"
    ):
        _generate.source()
    typed = Option("--new-setting", help="h", field="new_setting", annotation="int", default=3)
    monkeypatch.setattr(_generate, "SEARCH_OPTIONS", (*SEARCH_OPTIONS, typed))
    assert '    new_setting: int = DEFAULT["new_setting"]\n' in _generate.source()
