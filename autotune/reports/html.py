"""``autotune report --html``: one self-contained page (plotly.js embedded, so it opens
offline) with the study's plots and tables, built from Optuna's visualization module and
plotly figures over the same data as the terminal report."""

from __future__ import annotations

import html
import os
import warnings
from typing import TYPE_CHECKING, Any

from autotune._atomic import write_text
from autotune.records import TrialRecord
from autotune.reports import study_report
from autotune.reports._study import StudyData
from autotune.scoring import front
from autotune.storage import PRIOR_ATTR, candidates

if TYPE_CHECKING:
    import optuna
    import plotly.graph_objects as go

_BASELINE_COLORS = {"eager": "#7f7f7f", "default": "#d62728"}
_STATUS_COLORS = {"ok": "#1f77b4", "reused": "#aec7e8"}
_FAILED_COLOR = "#ff7f0e"
_SLICE_KNOBS = 8


def write_html(data: StudyData, path: str | os.PathLike[str]) -> int:
    """Writes the report of ``data`` to ``path``; returns its size in bytes.

    Raises:
        ImportError: plotly is not installed (it comes with autotune's dependencies).
    """
    page = render_html(data)
    write_text(path, page)  # an existing page stays whole until the new one is
    return len(page.encode("utf-8"))


def render_html(data: StudyData) -> str:
    """The page: settings, decision, every plot, the trial table and the full text report."""
    try:
        import plotly.offline
    except ImportError:
        raise ImportError(
            "autotune report --html needs plotly, which is not installed; run "
            "`pip install plotly` (it is one of autotune's dependencies)."
        ) from None
    figures = [(title, note, fig) for title, note, fig in _figures(data) if fig is not None]
    body = [
        f"<h1>Study {_e(data.name)}</h1>",
        f"<pre class='facts'>{_e(study_report.header(data))}</pre>",
        f"<h2>Decision</h2><pre>{_e(study_report.decision(data))}</pre>",
    ]
    for section in (study_report.finalists(data), study_report.failures(data)):
        if section:
            body.append(f"<pre>{_e(section)}</pre>")
    for i, (title, note, fig) in enumerate(figures):
        div = fig.to_html(
            full_html=False,
            include_plotlyjs=False,
            div_id=f"plot{i}",
            config={"displaylogo": False, "responsive": True},
        )
        body.append(f"<h2>{_e(title)}</h2><p class='note'>{_e(note)}</p>{div}")
    body.append("<h2>Trials</h2>" + _trial_table(data))
    body.append(
        "<details><summary>The text report (as <code>autotune report</code> prints it)"
        f"</summary><pre>{_e(study_report.render(data, width=220))}</pre></details>"
    )
    script = plotly.offline.get_plotlyjs()
    return (
        "<!DOCTYPE html>\n<html lang='en'><head><meta charset='utf-8'>"
        f"<title>autotune report: {_e(data.name)}</title><style>{_CSS}</style>"
        f"<script type='text/javascript'>{script}</script></head><body>"
        + "\n".join(body)
        + "</body></html>\n"
    )


def _figures(data: StudyData) -> list[tuple[str, str, Any]]:
    return [
        ("Optimization history", _history_note(data), _history(data)),
        ("Speedup against compile time", _scatter_note(data), _speedup_vs_compile(data)),
        ("Knob importance", data.importance_note, _importance(data)),
        ("Per-knob slices", _slice_note(data), _slices(data)),
        (
            "Latency per input shape",
            "Median latency of each input of the shape distribution, "
            "paired with eager like the sweep; log scale.",
            _per_shape(data),
        ),
        (
            "Failures by kind",
            "Measured trials that failed, by kind (reused results left out).",
            _failures(data),
        ),
    ]


def _history_note(data: StudyData) -> str:
    return (
        f"Every trial's {_score_name(data)} in trial order (baselines included, failed trials "
        "at 0), and the best so far; dashed lines: eager and default torch.compile. Drawn by "
        "optuna.visualization.plot_optimization_history."
    )


def _history(data: StudyData) -> go.Figure | None:
    import optuna

    study, numbers = _own_trials(data.optuna_study)
    if not any(t.values for t in study.get_trials(deepcopy=False)):
        return None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if len(study.directions) > 1:
            fig = optuna.visualization.plot_optimization_history(
                study, target=lambda t: t.values[0], target_name=_score_name(data)
            )
        else:
            fig = optuna.visualization.plot_optimization_history(
                study, target_name=_score_name(data)
            )
    for trace in fig.data:  # the copy numbered its trials from 0: back to the study's numbers
        if getattr(trace, "x", None) is not None:
            trace.x = [numbers[int(x)] for x in trace.x]
    _baseline_lines(fig, data)
    fig.update_layout(xaxis_title="trial number", yaxis_title=_score_name(data))
    return fig


def _own_trials(study: optuna.Study) -> tuple[optuna.Study, list[int]]:
    """An in-memory copy of the study's finished trials without the priors a start-from study told
    the sampler (another study's results, not measured here), and each copied trial's number
    in the study."""
    import optuna
    from optuna.trial import TrialState

    finished = (TrialState.COMPLETE, TrialState.FAIL, TrialState.PRUNED)
    own = [t for t in study.get_trials(deepcopy=False, states=finished)
           if PRIOR_ATTR not in t.user_attrs]  # fmt: skip
    copy = optuna.create_study(directions=study.directions)
    copy.add_trials(own)
    return copy, [t.number for t in own]


def _scatter_note(data: StudyData) -> str:
    return (
        "Each measured trial's median speedup over eager (bars: the quartiles of its paired "
        "rounds) against its cold compile time; the line joins the Pareto front (faster or "
        "quicker to compile than every other trial). Reused results are not drawn twice."
    )


def _speedup_vs_compile(data: StudyData) -> go.Figure | None:
    import plotly.graph_objects as go

    points = [
        r
        for r in data.records
        if r.status == "ok"
        and r.duplicate_of is None
        and r.baseline != "eager"
        and r.speedup_vs_eager
        and r.compile_time_s
    ]
    if not points:
        return None
    fig = go.Figure()
    searched = [r for r in points if r.baseline is None]
    fig.add_trace(_points(searched, "search trials", _STATUS_COLORS["ok"]))
    for r in points:
        if r.baseline:
            fig.add_trace(
                _points(
                    [r],
                    f"{r.baseline} torch.compile",
                    _BASELINE_COLORS["default"],
                    symbol="diamond",
                    size=13,
                )
            )
    on_front = front(candidates(data.records), ["latency", "compile"])
    if on_front:
        ordered = sorted(on_front, key=lambda r: r.compile_time_s or 0.0)
        fig.add_trace(
            go.Scatter(
                x=[r.compile_time_s for r in ordered],
                y=[r.speedup_vs_eager for r in ordered],
                mode="lines",
                line={"shape": "hv", "color": "#2ca02c", "width": 2},
                name="Pareto front",
                hoverinfo="skip",
            )
        )
    _eager_line(fig, "eager (1.0x)")
    compile_times = [r.compile_time_s or 0.0 for r in points]
    log_x = min(compile_times) > 0 and max(compile_times) / min(compile_times) > 30
    fig.update_layout(
        xaxis={
            "title": "cold compile time (s)" + (", log scale" if log_x else ""),
            "type": "log" if log_x else "linear",
        },
        yaxis={"title": "speedup over eager (x, median)"},
        legend={"orientation": "h"},
        height=480,
    )
    return fig


def _points(
    records: list[TrialRecord], name: str, color: str, symbol: str = "circle", size: int = 9
) -> go.Scatter:
    import plotly.graph_objects as go

    up = [
        (r.speedup_vs_eager_q3 or r.speedup_vs_eager or 0) - (r.speedup_vs_eager or 0)
        for r in records
    ]
    down = [
        (r.speedup_vs_eager or 0) - (r.speedup_vs_eager_q1 or r.speedup_vs_eager or 0)
        for r in records
    ]
    return go.Scatter(
        x=[r.compile_time_s for r in records],
        y=[r.speedup_vs_eager for r in records],
        error_y={"type": "data", "array": up, "arrayminus": down, "thickness": 1},
        mode="markers",
        name=name,
        marker={"color": color, "symbol": symbol, "size": size},
        text=[f"{_label(r)}: {r.brief}" for r in records],
        hovertemplate="%{text}<br>compile %{x:.1f} s<br>%{y:.3f}x eager<extra></extra>",
    )


def _importance(data: StudyData) -> go.Figure | None:
    import plotly.graph_objects as go

    if not data.importance:
        return None
    knobs = list(data.importance)[::-1]  # most important on top
    fig = go.Figure(
        go.Bar(
            x=[data.importance[k] for k in knobs],
            y=knobs,
            orientation="h",
            marker_color="#1f77b4",
            hovertemplate="%{y}: %{x:.3f}<extra></extra>",
        )
    )
    fig.update_layout(
        xaxis_title="importance (share of the total, PED-ANOVA)",
        yaxis_title="knob",
        height=max(300, 28 * len(knobs) + 120),
        margin={"l": 260},
    )
    return fig


def _slice_note(data: StudyData) -> str:
    which = (
        f"the {_SLICE_KNOBS} most important knobs"
        if data.importance
        else f"the first {_SLICE_KNOBS} knobs by name: no importance to rank them by, "
        f"{data.importance_note}"
    )
    return (
        f"The {_score_name(data)} of every search trial against each knob's value ({which}); "
        "drawn by optuna.visualization.plot_slice."
    )


def _slices(data: StudyData) -> go.Figure | None:
    import optuna

    study = data.optuna_study
    drawn = {k for t in study.get_trials(deepcopy=False) if t.values for k in t.params}
    if not drawn:
        return None
    ranked = [k for k in (data.importance or {}) if k in drawn] or sorted(drawn)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        kwargs: dict[str, Any] = {
            "params": ranked[:_SLICE_KNOBS],
            "target_name": _score_name(data),
        }
        if len(study.directions) > 1:
            kwargs["target"] = lambda t: t.values[0]
        fig = optuna.visualization.plot_slice(study, **kwargs)
    fig.update_layout(height=420, width=None, autosize=True)  # fits the page, not 300px a knob
    return fig


def _per_shape(data: StudyData) -> go.Figure | None:
    import plotly.graph_objects as go

    shaped = [r for r in data.records if r.per_shape and r.duplicate_of is None]
    if not shaped:
        return None
    scored = [r for r in shaped if r.baseline is None and data.objective.score(r) is not None]
    scored.sort(key=lambda r: data.objective.score(r) or 0.0, reverse=True)
    shown = [r for r in shaped if r.baseline] + scored[:5]
    fig = go.Figure()
    eager_drawn = False
    for r in shown:
        shapes = r.per_shape
        names = [f"shape {i}: {s.get('inputs')}"[:60] for i, s in enumerate(shapes)]
        if not eager_drawn:
            fig.add_trace(
                go.Bar(
                    x=names,
                    y=[(s.get("eager_latency_median_s") or 0) * 1e3 for s in shapes],
                    name="eager",
                    marker_color=_BASELINE_COLORS["eager"],
                )
            )
            eager_drawn = True
        if r.baseline == "eager":
            continue
        fig.add_trace(
            go.Bar(
                x=names,
                y=[(s.get("latency_median_s") or 0) * 1e3 for s in shapes],
                name=f"{_label(r)} {r.brief}"[:60],
            )
        )
    fig.update_layout(
        barmode="group",
        yaxis={"title": "median latency (ms), log scale", "type": "log"},
        height=460,
    )
    return fig


def _failures(data: StudyData) -> go.Figure | None:
    import plotly.graph_objects as go

    kinds = data.failures()
    if not kinds:
        return None
    ordered = kinds.most_common()
    fig = go.Figure(
        go.Bar(x=[k for k, _ in ordered], y=[n for _, n in ordered], marker_color=_FAILED_COLOR)
    )
    fig.update_layout(xaxis_title="failure kind", yaxis_title="trials", height=360)
    return fig


def _eager_line(fig: go.Figure, text: str) -> None:
    fig.add_hline(
        y=1.0,
        line_dash="dash",
        line_color=_BASELINE_COLORS["eager"],
        annotation_text=text,
        annotation_position="bottom right",
    )


def _baseline_lines(fig: go.Figure, data: StudyData) -> None:
    """Eager and default torch.compile as dashed horizontal lines (latency scores only)."""
    if data.objective.kind != "latency":
        return
    _eager_line(fig, "eager")
    default = data.baseline("default")
    if default is not None and default.speedup_vs_eager:
        fig.add_hline(
            y=default.speedup_vs_eager,
            line_dash="dash",
            line_color=_BASELINE_COLORS["default"],
            annotation_text=f"default torch.compile ({default.speedup_vs_eager:.2f}x)",
            annotation_position="top left",
        )


def _trial_table(data: StudyData) -> str:
    head = "".join(f"<th>{_e(h)}</th>" for h in study_report.HEAD)
    rows = []
    for row in data.rows:
        cells = study_report.trial_cells(row)
        kind = "failed" if row.record is not None and row.record.status != "ok" else row.status
        tds = "".join(f"<td>{_e(c)}</td>" for c in cells)
        rows.append(f"<tr class='{_e(kind.split()[0])}'>{tds}</tr>")
    return f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table>"


def _score_name(data: StudyData) -> str:
    kind = data.objective.kind
    if data.settings.pareto or kind == "latency":
        return "speedup over eager (x)"
    if kind == "throughput":
        return "samples per second"
    return f"speedup over eager amortized over {data.settings.calls} calls (x)"


def _label(r: TrialRecord) -> str:
    return f"[{r.baseline}]" if r.baseline else f"#{r.trial_number}"


def _e(text: object) -> str:
    return html.escape(str(text), quote=True)


_CSS = """
body { font-family: system-ui, sans-serif; margin: 2em auto; max-width: 1400px; color: #222; }
pre { background: #f6f8fa; padding: .8em; overflow-x: auto; font-size: 12px; }
p.note { color: #555; font-size: 13px; max-width: 70em; }
table { border-collapse: collapse; font-size: 12px; }
th, td { border-bottom: 1px solid #ddd; padding: 3px 8px; text-align: right;
         white-space: nowrap; }
td:last-child, th:last-child { text-align: left; white-space: normal; }
tr.failed td { color: #b35900; } tr.reused td { color: #888; } tr.running td { color: #1f77b4; }
"""
