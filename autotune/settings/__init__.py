"""The settings of a search, declared once.

:data:`SEARCH_OPTIONS` holds every option of ``autotune search`` (its flag, kind of value,
default, help, the study setting it sets, whether that may change on resume, whether a study
file or ``autotune.tune`` may set it); :func:`resolve` is the one entry point from a caller's
values (command line, keywords, study file) to a search's :class:`SearchOptions`. The command
line's parsers, study files, ``tune()``, the stored settings' defaults and the resume rules are
derived from the table; :class:`StudySettings` is what a study stores, the table's settings
and what the study was made with. Standard library only.
"""

from autotune.settings._fields import FinishFields, RequestFields, StudyFields, TrialFields
from autotune.settings._kinds import KINDS, Kind, shown
from autotune.settings._local import (
    check_joining,
    device_type,
    local_device_name,
    local_model_path,
    local_settings,
    model_sha256,
    triton_version,
)
from autotune.settings._option import (
    DEFAULT_STORAGE,
    EFFORTS,
    OBJECTIVES,
    STORAGE_ENV,
    THOROUGH_TRIALS,
    TRIAL_HOSTS,
    WORKLOADS,
    Option,
    storage_url,
    thorough_trials,
)
from autotune.settings._resolve import (
    CLI,
    FILE,
    PYTHON,
    Language,
    SearchOptions,
    kind_of,
    pareto_problems,
    read_values,
    resolve,
)
from autotune.settings._study import ADAPTIVE_FLOOR_S, StudySettings, settle
from autotune.settings._table import (
    BY_FLAG,
    BY_NAME,
    CHANGEABLE,
    DEFAULT,
    LABELS,
    SEARCH_OPTIONS,
    SETTINGS_OF,
    changeable_options,
)
from autotune.settings.rules import RuleError

__all__ = [
    "ADAPTIVE_FLOOR_S", "StudySettings", "settle", "check_joining", "device_type",
    "local_device_name", "local_model_path", "local_settings", "model_sha256", "triton_version",
    "BY_FLAG", "BY_NAME", "CHANGEABLE", "CLI", "DEFAULT", "DEFAULT_STORAGE", "EFFORTS", "FILE",
    "KINDS", "LABELS", "OBJECTIVES", "PYTHON", "SEARCH_OPTIONS", "SETTINGS_OF",
    "STORAGE_ENV", "THOROUGH_TRIALS", "TRIAL_HOSTS", "WORKLOADS", "Kind", "Language", "Option",
    "FinishFields", "RequestFields", "StudyFields", "TrialFields",
    "RuleError", "SearchOptions", "changeable_options", "kind_of", "pareto_problems",
    "read_values", "resolve", "shown", "storage_url", "thorough_trials",
]  # fmt: skip
