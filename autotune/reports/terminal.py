"""Plain-text lines for the terminal: one per finished trial, the Pareto front, and the
closing summary."""

from __future__ import annotations

import statistics
from collections import Counter

from autotune.decide import Decision
from autotune.records import TrialRecord
from autotune.reports._format import calls as _calls
from autotune.reports._format import clip as _clip
from autotune.reports._format import ms as _ms
from autotune.runtime.config import BestConfig
from autotune.scoring import Objective, axis_value, break_even_calls
from autotune.storage import screened

_BRIEF_WIDTH = 58


def trial_line(r: TrialRecord, objective: Objective | None = None) -> str:
    """``#  7 inductor max-autotune… ok  compile 9.8s  0.412ms ±0.010  1.31x eager  1.05x default
    graphs 1 breaks 0 recompiles 2`` (one line); a failed trial's line ends in its error."""
    label = f"[{r.baseline}] " if r.baseline else ""
    brief = _clip(label + r.brief, _BRIEF_WIDTH)
    head = f"#{r.trial_number:>3} {brief:<{_BRIEF_WIDTH}}"
    # A reused trial carries its source's result, screening marks and all: it says "reused".
    reused = ""
    if r.duplicate_of is not None:
        reused = f"  (same config as #{r.duplicate_of}: reused)"
    elif r.equivalent_of is not None:
        reused = f"  (same code as #{r.equivalent_of}: its timing)"
    elif r.pruned:
        reused = "  (clearly slower than the best: stopped timing early)"
    if r.status != "ok":
        batch = f"(batch {r.batch_size}) " if r.batch_size is not None else ""
        return f"{head} {r.failure_kind:<13} {batch}{_clip(r.error or '', 100)}{reused}"
    compile_s = f"compile {r.compile_time_s:6.1f}s" if r.compile_time_s is not None else " " * 14
    latency = f"{_ms(r.latency_median_s)} ±{_ms(r.latency_iqr_s, 3)}"
    default = f"  {r.speedup_vs_default:5.2f}x default" if r.speedup_vs_default else ""
    payback = ""
    if objective is not None and objective.kind == "amortized" and r.compile_time_s:
        payback = f"  pays back after {_calls(break_even_calls(r))} calls"
    if r.batch_size is not None and objective is not None:
        payback += f"  batch {r.batch_size} {objective.score(r) or 0:,.0f} samples/s"
    return (
        f"{head} {'ok':<13} {compile_s}  {latency}  {r.speedup_vs_eager or 0:5.2f}x eager"
        f"{default}{_graph_facts(r)}{_error(r)}{payback}{reused}"
    )


def _error(r: TrialRecord) -> str:
    """Under an accuracy contract, the error each trial measured against eager fp32."""
    accuracy = r.result.get("accuracy")
    if not isinstance(accuracy, dict) or "contract" not in accuracy:
        return ""
    shown = []
    for name, label, form in (
        ("cosine", "cos", ".6f"), ("max_abs", "abs", ".1e"),
        ("loss_rel", "loss", ".1e"), ("grad_cosine", "grad cos", ".6f"),
    ):  # fmt: skip
        value = accuracy.get(name)
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            shown.append(f"{label} {value:{form}}")
    return f"  err {' '.join(shown)}" if shown else ""


def _screening(records: list[TrialRecord]) -> str:
    """How many trials screening spared: same code as a timed trial, or stopped early."""
    same, early = screened(records)
    parts = [f"{same} generated code already timed"] if same else []
    parts += [f"{early} stopped timing early (clearly slower)"] if early else []
    return f"; {' and '.join(parts)}" if parts else ""


def _graph_facts(r: TrialRecord) -> str:
    """What users tune against: graphs, graph breaks, recompiles (eager compiles none)."""
    facts = (r.graphs, r.graph_breaks, r.recompiles)
    if r.baseline == "eager" or all(f is None for f in facts):
        return ""
    graphs, breaks, recompiles = ("-" if f is None else f for f in facts)
    return f"  graphs {graphs} breaks {breaks} recompiles {recompiles}"


def pareto_table(
    points: list[TrialRecord], axes: list[str], title: str, chosen: TrialRecord | None = None
) -> str:
    """The Pareto front, fastest first; ``*`` marks the picked config, which is listed below the
    front when it is not on it (default compile, picked within the noise of the fastest)."""
    count = f"{len(points)} point{'s' if len(points) != 1 else ''}"
    lines = [f"Pareto front of the {title} ({', '.join(axes)}): {count}"]
    numbers = {r.trial_number for r in points}
    for r in points:
        picked = chosen is not None and r.trial_number == chosen.trial_number
        lines.append(_front_row(r, "*" if picked else " "))
    if chosen is not None and chosen.trial_number not in numbers:
        lines.append(_front_row(chosen, "*") + "  (picked off the front)")
    return "\n".join(lines)


def _front_row(r: TrialRecord, mark: str) -> str:
    label = f"[{r.baseline}]" if r.baseline else f"#{r.trial_number}"
    speed = f"{axis_value(r, 'latency') or 0:.2f}x eager"
    spread = ""
    if r.baseline != "eager" and r.speedup_vs_eager_q1 and r.speedup_vs_eager_q3:
        spread = f" ({r.speedup_vs_eager_q1:.2f}-{r.speedup_vs_eager_q3:.2f})"
    compile_s = axis_value(r, "compile") or 0.0
    memory = f"  peak {r.peak_memory_bytes / 2**20:.0f}MiB" if r.peak_memory_bytes else ""
    return (
        f" {mark} {label:>9} {speed}{spread:<12}  compile {compile_s:6.1f}s{memory}  "
        f"{_clip(r.brief, _BRIEF_WIDTH)}"
    )


def decision(made: Decision, out: str) -> str:
    """What :func:`autotune.decide.finalize` decided: the front it picked from (``--pareto``),
    then the summary."""
    lines = []
    objective = str(made.best.workload.get("objective") or "")
    if made.front is not None and objective.startswith("pareto:"):
        title = "finalists" if made.finalists else "search"
        axes = objective.removeprefix("pareto:").split(",")
        lines.append(pareto_table(made.front, axes, title, made.chosen))
    lines.append(summary(made.best, out, made.records))
    drift = eager_drift(made)
    if drift:
        lines.insert(len(lines) - 1, drift)
    return "\n".join(lines)


def eager_drift(made: Decision) -> str:
    """Eager's latency in each stage of the run (the search's baseline, the finalists' rounds,
    the confirmation's), said once: how far the machine drifted while the figures above were
    taken; ``""`` when only one stage measured it."""
    stages: list[tuple[str, list[float]]] = [
        ("the search", [r.latency_median_s for r in made.records
                        if r.baseline == "eager" and r.latency_median_s]),
        ("the finalists", [x.eager_latency_median_s for f in made.finalists or []
                           for x in (f.cold, f.warm) if x.ok and x.eager_latency_median_s]),
        ("the confirmation", [x.eager_latency_median_s for runs in (
            made.confirmation.runs.values() if made.confirmation else ()) for x in runs
            if x.ok and x.eager_latency_median_s]),
    ]  # fmt: skip
    found = [(name, values) for name, values in stages if values]
    if len(found) < 2:
        return ""
    every = [v for _, values in found for v in values]
    middle = statistics.median(every)
    drift = max(abs(v - middle) for v in every) / middle
    said = ", ".join(f"{_span(values)} in {name}" for name, values in found)
    return f"Eager measured {said}: the machine drifted ±{drift:.0%} over the run."


def _span(values: list[float]) -> str:
    low, high = min(values), max(values)
    return _ms(low) if high - low < 0.005 * low else f"{_ms(low)} to {_ms(high)}"


def summary(best: BestConfig, out: str, records: list[TrialRecord]) -> str:
    """What was decided, why, and where the file is."""
    kinds = Counter(r.failure_kind or "ok" for r in records if r.duplicate_of is None)
    counts = ", ".join(f"{n} {k}" for k, n in kinds.most_common())
    baselines = sum(1 for r in records if r.baseline is not None)
    searched = f", {baselines} of them baselines" if baselines else ""
    lines = [f"{len(records)} trials{searched} ({counts}){_screening(records)}."]
    if best.decision == "inconclusive":
        lines.append(f"Inconclusive: ships {_ships(best)}; see the file's reason.")
    if best.config is not None:
        m = best.metrics
        lines.append(f"Best: trial {best.source.get('trial')}: {best.config.brief()}")
        lines.append(f"      {claimed(best)}")
        vs_eager, vs_default = (
            m.get("break_even_calls_vs_eager"),
            m.get("break_even_calls_vs_default"),
        )
        against_default = (
            f", {_calls(vs_default)} vs default torch.compile"
            if "break_even_calls_vs_default" in m
            else " (it is default torch.compile)"
        )
        lines.append(
            f"      pays back its compile time after {_calls(vs_eager)} calls vs eager"
            + against_default
        )
        if m.get("samples_per_s"):
            batch = best.workload.get("batch_size")
            lines.append(f"      {m['samples_per_s']:,.0f} samples/s at batch size {batch}")
        if m.get("units_per_s") and best.workload.get("units"):
            unit = best.workload["units"]
            lines.append(
                f"      {m['units_per_s']:,.0f} {unit}/s (eager "
                f"{m.get('eager_units_per_s') or 0:,.0f} {unit}/s)"
            )
    else:
        eager = "do not compile" if best.decision == "do_not_compile" else "run the model eager"
        lines.append(f"Decision: {eager}.")
        if best.metrics.get("eager_samples_per_s"):
            batch = best.workload.get("batch_size")
            lines.append(
                f"Serve eager at batch size {batch}: "
                f"{best.metrics['eager_samples_per_s']:,.0f} samples/s."
            )
    lines.append(f"Why: {best.reason}.")
    lines.append(f"Wrote {out} (apply it with autotune.apply(model, {out!r})).")
    return "\n".join(lines)


def _ships(best: BestConfig) -> str:
    return "eager" if best.config is None else f"trial {best.source.get('trial')}"


def claimed(best: BestConfig) -> str:
    """The winner's figures: ``12.3ms vs eager 30.2ms: 2.30x eager (95% interval 2.25x to
    2.41x), 1.00x default ...``. The speedup is the median of paired per-round ratios, the
    latencies the medians of the same processes' rounds."""
    m = best.metric
    low, high = m("speedup_vs_eager_ci_low"), m("speedup_vs_eager_ci_high")
    known = f" (95% interval {_x(low)} to {_x(high)})" if low and high else ""
    said = (
        f"{_ms(m('latency_median_s'))} vs eager {_ms(m('eager_latency_median_s'))}: "
        f"{_x(m('speedup_vs_eager'))} eager{known}, {_x(m('speedup_vs_default'))} default "
        f"torch.compile, compile {m('compile_time_s') or 0:.1f}s"
    )
    if m("traffic_p99_s") is not None:
        said += (
            f"; per request of the traffic p50 {_ms(m('traffic_p50_s'))}, p99 "
            f"{_ms(m('traffic_p99_s'))} (eager {_ms(m('traffic_eager_p99_s'))}), start-up "
            f"{m('traffic_startup_s') or 0:.1f}s"
        )
    return said


def _x(value: float | int | None) -> str:
    return f"{value:.2f}x" if value else "-"
