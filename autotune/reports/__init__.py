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

from autotune.reports._standing import Standing, standing
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

__all__ = [
    "Standing", "StudyData", "TrialRow", "export_study", "knob_importance", "list_studies",
    "load_study_data", "render_report", "render_studies", "study_names", "study_table",
    "standing", "write_html",
]  # fmt: skip
