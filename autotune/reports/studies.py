"""``autotune studies``' table: one line per study of a storage."""

from __future__ import annotations

from collections.abc import Sequence

from autotune.reports._format import clip, times
from autotune.reports._study import StudyData


def render_studies(studies: Sequence[StudyData]) -> str:
    """Name, model and device, trials measured of the budget, running, the best speedup the
    search measured, what the best-config file ships (the decision `autotune finalize` makes
    now: finalists re-measured, default compile unless beaten beyond the spread), state."""
    if not studies:
        return "No autotune studies in this storage yet (`autotune search MODEL.py` makes one)."
    head = ("study", "model", "device", "trials", "running", "best searched", "the file ships",
            "state", "created")  # fmt: skip
    rows = [head]
    for data in studies:
        best = data.best()
        created = data.created_at.strftime("%Y-%m-%d %H:%M") if data.created_at else "?"
        rows.append(
            (
                data.name,
                clip(data.settings.model_path.rsplit("/", 1)[-1], 30),
                data.settings.device,
                f"{len(data.searched)}/{data.settings.trials}",
                str(data.running),
                "-"
                if best is None
                else f"{times(best.speedup_vs_eager, 2)} (#{best.trial_number})",
                _ships(data),
                data.state(),
                created,
            )
        )
    widths = [max(len(row[i]) for row in rows) for i in range(len(head))]
    lines = [
        "  ".join(f"{cell:<{w}}" for cell, w in zip(row, widths, strict=True)).rstrip()
        for row in rows
    ]
    count = f"{len(studies)} stud{'y' if len(studies) == 1 else 'ies'}"
    lines.append(f"({count}; `autotune report --study NAME` shows one in full)")
    lines += [f"note: {note}" for data in studies for note in data.notes]
    return "\n".join(lines)


def _ships(data: StudyData) -> str:
    """``1.62x (#1, default compile)``, ``eager``, or ``-`` with nothing to decide yet."""
    if data.decision is None:
        return "-"
    made = data.decision.best
    if made.config is None:
        return (
            "eager (inconclusive)" if made.decision == "inconclusive" else "eager (do not compile)"
        )
    trial = made.source.get("trial")
    baseline = next((r.baseline for r in data.records if r.trial_number == trial), None)
    what = f"#{trial}" + (f", {baseline} compile" if baseline == "default" else "")
    return f"{times(made.metric('speedup_vs_eager'), 2)} ({what})"
