"""A study's settings row read back: every setting checked by the command line's rules for its
option (:mod:`autotune.storage._settings_check`) before it becomes
:class:`~autotune.settings.StudySettings`."""

from __future__ import annotations

import dataclasses
from typing import Any

from autotune.records import SETTINGS_REMEDY, SETTINGS_ROW, StudyRowError, settings_dict
from autotune.settings import StudySettings
from autotune.storage._settings_check import field_rules, measure_settings, setting_problems

# One rule per setting (tests/storage_tests/test_settings_rows.py holds them to the fields):
# those whose type takes None may be null in a row.
RULES = field_rules([f.name for f in dataclasses.fields(StudySettings) if "None" in str(f.type)])


def settings_from_row(study: str, text: Any) -> StudySettings:
    """The settings of study ``study`` from the JSON text of its row
    (``autotune_studies.settings_json``), checked as :func:`settings_from_dict` checks
    them: what every read of a study's settings (studies, report, export, a worker joining,
    finalize) goes through.

    Raises:
        StudyRowError: The only exception for bad input: the text is not a JSON object, or
            its settings break their rules; the message names the study, every bad setting
            and its value, and the remedy.
    """
    return settings_from_dict(settings_dict(study, text), study)


def settings_from_dict(data: Any, study: str | None = None) -> StudySettings:
    """The settings ``data`` (:meth:`StudySettings.to_dict`'s, as stored with study ``study``;
    default: the study the records read them from) hold, each checked by the command line's
    rules for its option; settings that a newer autotune added are left out.

    Raises:
        StudyRowError: Settings are missing, of the wrong type or break their rule (all
            of them named, with their values).
    """
    problems = setting_problems(data, RULES)
    if problems:
        study = study or getattr(data, "study", None)
        raise StudyRowError(study, SETTINGS_ROW, problems, SETTINGS_REMEDY)
    names = {f.name for f in dataclasses.fields(StudySettings)}
    known = {k: v for k, v in data.items() if k in names}
    return StudySettings(**{**known, "measure": measure_settings(data["measure"])})
