"""What :func:`autotune.tune` returns: the decision, the file, the records, and the ways to
use them (apply, report, show in a notebook)."""

from __future__ import annotations

import html
import os
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from autotune import reports

if TYPE_CHECKING:
    import torch

    from autotune.decide import Decision
    from autotune.records import TrialRecord
    from autotune.runtime.config import BestConfig

# Rows of the notebook table: the baselines and the best searched trials.
_SHOWN = 8


@dataclass
class TuneResult:
    """A finished :func:`autotune.tune` call.

    Attributes:
        study: The study's name in ``storage`` (``autotune report --study NAME`` reads it).
        storage: Where the study's trials are recorded.
        out: The best-config file written (``autotune.apply(model, out)`` in production).
        decision: The decision, with the finalists it was made on.
        records: Every trial of the study.
        not_shipped: Why nothing shipped beside the file, when a cache or package was asked
            for and none could be.
    """

    study: str
    storage: str
    out: str
    decision: Decision
    records: list[TrialRecord]
    not_shipped: str | None = None

    @property
    def best(self) -> BestConfig:
        """The best-config file's content: ``decision`` (``compile`` or ``do_not_compile``),
        ``reason``, ``config`` and ``metrics``."""
        return self.decision.best

    @property
    def speedup(self) -> float | None:
        """What the file claims over eager (None when it runs eager)."""
        value = self.best.metric("speedup_vs_eager") if self.best.config is not None else None
        return None if value is None else float(value)

    def apply(self, model: torch.nn.Module, **options: Any) -> torch.nn.Module:
        """``autotune.apply(model, out, **options)``: the model compiled as the file says (or
        returned as it is, when the file says not to compile)."""
        from autotune.runtime.apply import apply

        return apply(model, self.out, **options)

    def report(self, width: int = 120) -> str:
        """``autotune report``'s text: settings, every trial, the finalists and the decision."""
        return reports.render_report(reports.load_study_data(self.storage, self.study), width)

    def write_html(self, path: str | os.PathLike[str]) -> int:
        """``autotune report --html``'s page (self-contained, with its plots); its size."""
        return reports.write_html(reports.load_study_data(self.storage, self.study), path)

    def __repr__(self) -> str:
        claim = f"{self.speedup:.2f}x eager" if self.speedup else "do not compile"
        return f"TuneResult(study={self.study!r}, {claim}, out={self.out!r})"

    def _repr_html_(self) -> str:
        """A notebook's view: the decision and its reason, then the baselines and the best
        trials (``write_html`` writes the whole report with its plots)."""
        made = self.best
        head = (
            f"<b>{html.escape(made.decision)}</b>"
            + (f" ({self.speedup:.2f}x eager)" if self.speedup else "")
            + f": {html.escape(made.reason)}"
        )
        ok = [r for r in self.records if r.status == "ok" and r.duplicate_of is None]
        baselines = [r for r in ok if r.baseline]
        searched = sorted(
            (r for r in ok if not r.baseline),
            key=lambda r: r.speedup_vs_eager or 0.0,
            reverse=True,
        )
        rows = "".join(_row(r) for r in [*baselines, *searched[: _SHOWN - len(baselines)]])
        failed = sum(1 for r in self.records if r.status != "ok" and r.duplicate_of is None)
        return (
            f"<div><p>Study <code>{html.escape(self.study)}</code>: {len(self.records)} trials"
            f" ({failed} failed); file <code>{html.escape(self.out)}</code>.</p><p>{head}</p>"
            "<table><tr><th>trial</th><th>config</th><th>compile (s)</th><th>latency (ms)</th>"
            f"<th>vs eager</th></tr>{rows}</table></div>"
        )


def _row(r: TrialRecord) -> str:
    label = f"[{r.baseline}]" if r.baseline else f"#{r.trial_number}"
    compile_s = "-" if r.compile_time_s is None else f"{r.compile_time_s:.1f}"
    latency = "-" if r.latency_median_s is None else f"{r.latency_median_s * 1e3:.3f}"
    speedup = "-" if r.speedup_vs_eager is None else f"{r.speedup_vs_eager:.2f}x"
    return (
        f"<tr><td>{label}</td><td>{html.escape(r.brief)}</td><td>{compile_s}</td>"
        f"<td>{latency}</td><td>{speedup}</td></tr>"
    )
