"""What the commands print and write: terminal lines and tables, the HTML report and the
exports. Everything here is fed by the records in the storage (or by a finished result),
never by the running search loop, so a report reads the same whether the study ran here, on a
cluster, or is still running.

Example:
    >>> from autotune.reports import load_study_data, render_report, write_html
    >>> data = load_study_data("sqlite:///autotune.db", "convnet-cpu")  # doctest: +SKIP
    >>> print(render_report(data))  # doctest: +SKIP
    >>> write_html(data, "report.html")  # doctest: +SKIP
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from autotune.reports._study import (
        StudyData,
        TrialRow,
        knob_importance,
        list_studies,
        load_study_data,
        study_names,
    )
    from autotune.reports.export import export_study, study_table
    from autotune.reports.html import write_html
    from autotune.reports.studies import render_studies
    from autotune.reports.study_report import render as render_report

# Loaded on first use: `autotune verify` and the per-trial lines need none of Optuna's study
# reading, pyarrow or plotly.
_LAZY = {
    "StudyData": ("_study", "StudyData"),
    "TrialRow": ("_study", "TrialRow"),
    "knob_importance": ("_study", "knob_importance"),
    "list_studies": ("_study", "list_studies"),
    "load_study_data": ("_study", "load_study_data"),
    "study_names": ("_study", "study_names"),
    "export_study": ("export", "export_study"),
    "study_table": ("export", "study_table"),
    "write_html": ("html", "write_html"),
    "render_studies": ("studies", "render_studies"),
    "render_report": ("study_report", "render"),
}


def __getattr__(name: str) -> Any:
    if name not in _LAZY:
        raise AttributeError(f"module 'autotune.reports' has no attribute {name!r}")
    module, attr = _LAZY[name]
    return getattr(importlib.import_module(f"autotune.reports.{module}"), attr)


__all__ = [
    "StudyData",
    "TrialRow",
    "export_study",
    "knob_importance",
    "list_studies",
    "load_study_data",
    "render_report",
    "render_studies",
    "study_names",
    "study_table",
    "write_html",
]
