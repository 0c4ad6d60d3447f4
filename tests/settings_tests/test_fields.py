"""The classes that carry settings down the flow (StudyFields, TrialFields, RequestFields,
FinishFields) are written from the settings table (autotune/settings/_generate.py)."""

from __future__ import annotations

import dataclasses

import pytest

from autotune.search import Finish, SearchRequest
from autotune.settings import (
    DEFAULT,
    SEARCH_OPTIONS,
    FinishFields,
    Option,
    RequestFields,
    StudyFields,
    StudySettings,
    TrialFields,
    _generate,
)
from autotune.trials import TrialSpec


def test_the_written_module_is_what_the_table_says_today():
    """Run `python -m autotune.settings._generate` when this fails: a row changed."""
    assert _generate.TARGET.read_text() == _generate.source()


def test_every_setting_an_option_sets_is_a_field_with_the_tables_default():
    fields = {f.name: f for f in dataclasses.fields(StudySettings)}
    assert {o.field for o in SEARCH_OPTIONS if o.field} <= set(fields)
    for name, option in _generate.rows():  # the row that writes each field (the first)
        declared = fields[name]
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


@pytest.mark.parametrize(
    ("carrier", "carried_by"),
    [(TrialFields, TrialSpec), (RequestFields, SearchRequest), (FinishFields, Finish)],
)
def test_a_carrier_holds_its_settings_typed_as_the_rows_say_and_its_class_none_again(
    carrier, carried_by
):
    (declared,) = [c for c in _generate.CARRIERS if c.name == carrier.__name__]
    fields = {f.name: f for f in dataclasses.fields(carrier)}
    assert list(fields) == list(declared.fields or ())
    for name, option in _generate.rows(declared):
        line = _generate.field(name, option, declared.given)
        assert line.startswith(f"    {name}: {fields[name].type}"), line
    assert issubclass(carried_by, carrier)
    own = {f.name for f in dataclasses.fields(carried_by)} - set(fields)
    assert not own & set(_generate.CARRIERS[1].fields or ()), own  # a trial setting, again


def test_a_trial_spec_takes_the_tables_defaults_and_needs_its_model_and_device():
    spec = TrialSpec(model_path="m.py", device="cpu", config=None)
    assert (spec.workload, spec.seed) == (DEFAULT["workload"], DEFAULT["seed"])
    assert spec.cache_dir is None and spec.accuracy is None and spec.traffic is None
    assert TrialSpec.from_dict(spec.to_dict()) == spec
    with pytest.raises(TypeError, match="device"):
        TrialSpec(model_path="m.py", config=None)  # type: ignore[call-arg]


def test_what_a_request_was_not_told_is_none_and_a_finish_writes_the_tables_out():
    assert RequestFields().device is None and RequestFields().trust_model_path is False
    assert FinishFields().out == DEFAULT["out"] == "best_config.json"
    assert SEARCH_OPTIONS  # the rows the carriers read


def test_a_carrier_naming_a_setting_no_row_declares_is_refused():
    bad = _generate.Carrier("Bad", "A carrier.", ("workload", "no_such_setting"))
    with pytest.raises(ValueError, match="Bad carries 'no_such_setting', which no table row"):
        _generate.rows(bad)
