"""``autotune report``'s text: a study's settings and environment, its trials as a table, the
finalists and the decision, the Pareto front, failures by kind and knob importance, all read
from the storage (see :func:`~autotune.reports._study.load_study_data`)."""

from __future__ import annotations

import textwrap
from collections.abc import Sequence

from autotune._secrets import mask_text
from autotune.records import TrialRecord
from autotune.reports._format import clip, ms, times
from autotune.reports._study import StudyData, TrialRow
from autotune.scope import SCOPE_PARAM, ScopePlan
from autotune.scoring import front
from autotune.storage import describe_inert, inert_in, screened

_CONFIG_MIN_WIDTH = 30


def render(data: StudyData, width: int = 160) -> str:
    """The whole report, lines at most ``width`` characters wide (the config column is cut
    to fit; ``autotune export`` has every config in full)."""
    tables = [trial_table(data.rows, width), shape_table(data.rows), traffic_table(data.rows)]
    prose = [finalists(data), pareto(data), decision(data), failures(data), scope(data),
             importance(data), no_effect(data)]  # fmt: skip
    sections = [fit(header(data), width), *tables, *(fit(p, width) for p in prose)]
    return "\n\n".join(s for s in sections if s)


def fit(text: str, width: int) -> str:
    """``text`` with every line longer than ``width`` wrapped, its continuation indented
    two more than the line."""
    lines = []
    for line in text.splitlines():
        if len(line) <= width:
            lines.append(line)
            continue
        indent = " " * (len(line) - len(line.lstrip()) + 2)
        lines.append(textwrap.fill(line, width, subsequent_indent=indent, break_on_hyphens=False))
    return "\n".join(lines)


def header(data: StudyData) -> str:
    s = data.settings
    searched = len(data.searched)
    baselines = sum(1 for r in data.records if r.baseline)
    reused = sum(1 for r in data.records if r.duplicate_of is not None)
    same_code, pruned = screened(data.records)
    running = f", {data.running} running" if data.running else ""
    lines = [
        f"Study {data.name!r} in {data.storage}: {data.state()}, {searched} of {s.trials} "
        f"search trials measured{running} ({len(data.rows)} trials in all: {baselines} "
        f"baselines, {reused} reused a measured config; of the search trials, {same_code} "
        f"generated code already timed and {pruned} stopped timing early)"
    ]
    env = _environment(data.records)
    facts = [
        ("model", f"{s.model_path} (sha256 {(s.model_sha256 or '?')[:12]})"),
        ("device", f"{s.device}{env}"),
        (
            "space",
            f"{s.space.get('name', '?')} ({s.space_hash}), workload {s.workload}, "
            f"scope {s.scope}, sampler {s.sampler}, seed {s.seed}",
        ),
        ("objective", _objective(data)),
        (
            "budgets",
            f"compile {s.compile_budget:g} s per trial, timing "
            f"{s.measure.target_seconds:g} s per trial, {s.finalists} finalists",
        ),
        ("created", _created(data)),
        ("workers", _workers(data)),
    ]
    lines += [f"  {name:<10} {value}" for name, value in facts]
    lines += [f"  note: {note}" for note in data.notes]
    return "\n".join(lines)


def _objective(data: StudyData) -> str:
    s = data.settings
    text = data.objective.describe()
    if s.pareto:
        text = f"Pareto front of {', '.join(s.pareto)}, pick {s.pick or 'fastest'}"
    if s.memory_budget_bytes:
        text += f", memory budget {s.memory_budget_bytes / 2**20:,.0f} MiB"
    if s.batch_sizes:
        text += f", batch sizes {', '.join(map(str, s.batch_sizes))}"
    return text


def _environment(records: Sequence[TrialRecord]) -> str:
    env = next((r.environment for r in records if r.environment), {})
    if not env:
        return ""
    parts = [str(env.get("device_name") or env.get("cpu_model") or "")]
    parts += [f"{key} {env[key]}" for key in ("torch", "triton", "cuda", "python") if env.get(key)]
    return " (" + ", ".join(p for p in parts if p) + ")"


def _created(data: StudyData) -> str:
    when = data.created_at.strftime("%Y-%m-%d %H:%M UTC") if data.created_at else "?"
    return f"{when} by autotune {data.autotune_version}"


def _workers(data: StudyData) -> str:
    if not data.workers:
        return "none yet"
    live = sum(1 for w in data.workers if w.stopped_at is None)
    # How a worker ended may quote a database error: shown with its secrets masked.
    ends = sorted({mask_text(w.ended) for w in data.workers if w.ended})
    hosts = sorted({w.host for w in data.workers})
    text = f"{_plural(len(data.workers), 'process', 'es')} on {_plural(len(hosts), 'host')} "
    text += f"({', '.join(hosts[:4])})"
    if live:
        text += f", {live} not stopped (running, or died without saying)"
    if ends:
        text += f"; ended: {'; '.join(ends[:3])}"
    return text


HEAD = (
    "trial",
    "status",
    "compile",
    "latency",
    "vs eager (q1-q3)",
    "vs default",
    "peak MiB",
    "graphs",
    "breaks",
    "recomp",
    "fx hit",
    "config",
)


def trial_table(rows: Sequence[TrialRow], width: int = 160) -> str:
    """One line per trial: status or failure kind, compile time, latency with its spread,
    speedups, memory, graph counts, Inductor cache hits and the config (what differs from
    the defaults)."""
    if not rows:
        return "No trials yet."
    table = [list(HEAD)] + [trial_cells(row) for row in rows]
    widths = [max(len(line[i]) for line in table) for i in range(len(HEAD) - 1)]
    used = sum(widths) + 2 * len(widths) + 2
    config_width = max(_CONFIG_MIN_WIDTH, width - used)
    lines = ["Trials (speedups: medians of paired eager/compiled rounds, quartiles in brackets)"]
    for line in table:
        cells = [
            f"{cell:<{w}}" if i in (0, 1) else f"{cell:>{w}}"
            for i, (cell, w) in enumerate(zip(line, widths, strict=False))
        ]
        lines.append("  " + "  ".join(cells) + "  " + clip(line[-1], config_width))
    return "\n".join(line.rstrip() for line in lines)


def trial_cells(row: TrialRow) -> list[str]:
    r = row.record
    if r is None:
        return [row.label, row.status, *[""] * 9, ""]
    if r.duplicate_of is not None:  # its figures are the earlier trial's: not repeated
        return [row.label, f"reused #{r.duplicate_of}", *["-"] * 9, r.brief]
    status = row.status
    if r.equivalent_of is not None:  # timed as the earlier trial: its figures, said so
        status = f"code of #{r.equivalent_of}"
    elif r.pruned:
        status = "stopped early"
    speedup = "-"
    if r.speedup_vs_eager is not None:
        speedup = times(r.speedup_vs_eager, 2)
        if r.speedup_vs_eager_q1 is not None and r.speedup_vs_eager_q3 is not None:
            speedup += f" ({r.speedup_vs_eager_q1:.2f}-{r.speedup_vs_eager_q3:.2f})"
    latency = ms(r.latency_median_s)
    if r.latency_median_s is not None and r.latency_iqr_s is not None:
        latency += f" ±{ms(r.latency_iqr_s, 2)}"
    cache = (r.result.get("cache") or {}).get("fxgraph_hit")
    config = r.brief if r.status == "ok" else f"{r.brief}  [{_first_line(r.error)}]"
    return [
        row.label,
        status,
        "-" if r.compile_time_s is None else f"{r.compile_time_s:.1f}s",
        latency,
        speedup,
        times(r.speedup_vs_default, 2),
        "-" if r.peak_memory_bytes is None else f"{r.peak_memory_bytes / 2**20:,.0f}",
        _int(r.graphs),
        _int(r.graph_breaks),
        _int(r.recompiles),
        _int(cache),
        config,
    ]


def shape_table(rows: Sequence[TrialRow]) -> str:
    """Latency per input shape, for studies over a shape distribution (a traffic mix has
    :func:`traffic_table`)."""
    shaped = [(row, row.record.per_shape) for row in rows if row.record and not row.record.traffic]
    shaped = [(row, shapes) for row, shapes in shaped if shapes]
    if not shaped:
        return ""
    names = [str(s.get("inputs")) for s in shaped[0][1]]
    lines = ["Latency per input shape (speedup vs eager)"]
    lines += [f"  shape {i}: {clip(name, 100)}" for i, name in enumerate(names)]
    head = "  " + f"{'trial':<9}" + "".join(f"{f'shape {i}':>20}" for i in range(len(names)))
    lines.append(head)
    for row, shapes in shaped:
        cells = [
            f"{ms(s.get('latency_median_s'))} {times(s.get('speedup_vs_eager'), 2)}"
            for s in shapes
        ]
        lines.append("  " + f"{row.label:<9}" + "".join(f"{c:>20}" for c in cells))
    return "\n".join(lines)


def traffic_table(rows: Sequence[TrialRow]) -> str:
    """For a study over a traffic mix: each trial's weighted mean latency per request and its
    p50/p95/p99, beside eager's, and its start-up (the first call of every request, which
    compiles every shape the traffic brings)."""
    mixed = [(row, row.record.traffic) for row in rows if row.record and row.record.traffic]
    if not mixed:
        return ""
    count = int(mixed[0][1].get("requests") or 0)
    lines = [f"Latency per request of the traffic ({count} requests, weighted), and start-up"]
    names = ("mean", "p50", "p95", "p99")
    wide = max(9, *(len(row.label) + 1 for row, _ in mixed))
    head = f"  {'trial':<{wide}}" + "".join(f"{n:>10}" for n in names)
    lines.append(head + f"{'eager p99':>11}{'p99 gain':>10}{'start-up':>10}")
    for row, t in mixed:
        p99, eager_p99 = t.get("p99_s"), t.get("eager_p99_s")
        eager = row.record is not None and row.record.baseline == "eager"  # timed against itself
        gain = eager_p99 / p99 if p99 and eager_p99 and not eager else None
        startup = t.get("startup_s")
        cells = "".join(f"{ms(t.get(f'{n}_s')):>10}" for n in names)
        lines.append(
            f"  {row.label:<{wide}}{cells}{ms(eager_p99):>11}{times(gain, 2):>10}"
            + f"{'-' if startup is None else f'{startup:.1f}s':>10}"
        )
    return "\n".join(lines)


def finalists(data: StudyData) -> str:
    made = data.decision
    if made is None or not made.finalists:
        if data.settings.finalists and data.decision is not None:
            return "Finalists: not measured yet (the decision below is on the search's trials)."
        return ""
    when = ""
    if made.round is not None:
        at = made.round.finished_at or made.round.created_at
        when = f" (round {made.round.id}, {at:%Y-%m-%d %H:%M} UTC, by {made.round.owner})"
    lines = [
        f"Finalists re-measured cold and warm in fresh processes{when}: speedup over eager "
        "(quartiles) [95% interval of the median], the two processes pooled"
    ]
    figures = data.round_figures()
    for f in made.finalists:
        searched = f.searched
        label = f"[{searched.baseline}]" if searched.baseline else f"#{searched.trial_number}"
        if not f.ok:
            bad = f.cold if not f.cold.ok else f.warm
            lines.append(f"  {label:<10} {bad.failure_kind}: {_first_line(bad.error)}")
            continue
        fresh = f.record()
        known = _known(figures.get(searched.trial_number, {}), "finalist_")
        lines.append(
            f"  {label:<10} {times(fresh.speedup_vs_eager, 2)} eager "
            f"({times(fresh.speedup_vs_eager_q1, 2)}-{times(fresh.speedup_vs_eager_q3, 2)}) "
            f"{known}, compile cold {f.cold.compile_time_s or 0:.1f}s "
            + ("warm not run " if f.cold_only else f"warm {f.warm.compile_time_s or 0:.1f}s ")
            + f" {clip(searched.brief, 70)}"
        )
    return "\n".join(lines + _confirmation(data, figures))


def _confirmation(data: StudyData, figures: dict[int, dict[str, float | None]]) -> list[str]:
    """The confirmation round's lines: each config it measured, its runs pooled."""
    made = data.decision
    confirmed = made.confirmation if made is not None else None
    if confirmed is None:
        return []
    lines = [
        f"Confirmation round, apart from the choice ({confirmed.processes()}): what the file "
        "claims"
    ]
    for r in filter(None, (confirmed.chosen, confirmed.default)):
        label = f"[{r.baseline}]" if r.baseline else f"#{r.trial_number}"
        mine = figures.get(r.trial_number, {})
        if mine.get("confirmed_speedup_vs_eager") is None:
            failed = next((x for x in confirmed.of(r) if not x.ok), None)
            why = f"{failed.failure_kind}: {_first_line(failed.error)}" if failed else "no run"
            lines.append(f"  {label:<10} {why}")
            continue
        lines.append(
            f"  {label:<10} {times(mine['confirmed_speedup_vs_eager'], 2)} eager "
            f"{_known(mine, 'confirmed_')}  {clip(r.brief, 70)}"
        )
    return lines


def _known(figures: dict[str, float | None], prefix: str) -> str:
    """``[2.05x, 2.19x]``: the 95% interval of a round's median, ``[-]`` when not known."""
    low = figures.get(f"{prefix}speedup_vs_eager_ci_low")
    high = figures.get(f"{prefix}speedup_vs_eager_ci_high")
    return f"[{times(low, 2)}, {times(high, 2)}]" if low and high else "[-]"


def pareto(data: StudyData) -> str:
    axes = data.settings.pareto
    if not axes:
        return ""
    from autotune.reports.terminal import pareto_table
    from autotune.storage import candidates

    made = data.decision
    if made is not None and made.front is not None:
        title = "finalists" if made.finalists else "search"
        return pareto_table(made.front, axes, title, made.chosen)
    points = front(candidates(data.records), axes)
    return pareto_table(points, axes, "search") if points else ""


def decision(data: StudyData) -> str:
    made = data.decision
    if made is None:
        return f"Decision: none yet. {data.decision_note}"
    best = made.best
    basis = "the finalists' fresh measurements" if made.finalists else "the search's trials"
    lines = [f"Decision (as `autotune finalize` would make it now, from {basis}):"]
    if best.decision == "inconclusive":
        lines.append("  inconclusive: the confirmation round did not resolve the lead")
    if best.config is not None:
        from autotune.reports.terminal import claimed

        lines.append(f"  compile with trial {best.source.get('trial')}: {best.config.brief()}")
        lines.append(f"  {claimed(best)}")
    else:
        lines.append("  do not compile: run the model eager")
    lines.append(f"  why: {best.reason}.")
    return "\n".join(lines)


def failures(data: StudyData) -> str:
    kinds = data.failures()
    if not kinds:
        return ""
    lines = ["Failures by kind"]
    for kind, n in kinds.most_common():
        failed = [
            r
            for r in data.records
            if (r.failure_kind or "failed") == kind and r.status != "ok" and r.duplicate_of is None
        ]
        numbers = ", ".join(
            f"[{r.baseline}]" if r.baseline else f"#{r.trial_number}" for r in failed[:8]
        )
        more = f" and {len(failed) - 8} more" if len(failed) > 8 else ""
        lines.append(f"  {kind:<16} {n:>3}  {numbers}{more}")
        lines.append(f"  {'':<16}      first error: {clip(_first_line(failed[0].error), 110)}")
    return "\n".join(lines)


def scope(data: StudyData) -> str:
    """The scope search's findings, beside the failures: each part the probes kept eager and
    why, the parts that compiled alone, the candidates, and the scope the best trial ran."""
    stored = data.settings.scope_plan
    if not stored:
        return ""
    plan = ScopePlan.from_dict(stored)
    lines = ["Scope (each part of the model compiled alone by a probe)"]
    for probe in plan.excluded:
        lines.append(f"  kept eager everywhere: {probe.brief()}")
    fine = [f"{p.kind} {p.target}" for p in plan.probes if not p.excluded]
    if fine:
        lines.append(f"  compiled alone: {', '.join(fine)}")
    lines.append(f"  candidates: {', '.join(plan.names)}")
    made = data.decision.best if data.decision is not None else None
    number = made.source.get("trial") if made is not None and made.config is not None else None
    chosen = next((row for row in data.rows if row.number == number and row.record), None)
    if chosen is not None and chosen.record is not None:
        kind = chosen.params.get(SCOPE_PARAM)
        named = f"{kind}: " if kind else ""
        lines.append(f"  the decision, trial {number}, compiles {named}{_scope(chosen.record)}")
    return "\n".join(lines)


def _scope(r: TrialRecord) -> str:
    compiled = r.config["scope"].get("compile") or [""]
    eager = r.config["scope"].get("disable") or []
    where = ", ".join(p or "<root>" for p in compiled)
    return where + (f", kept eager: {', '.join(eager)}" if eager else "")


def importance(data: StudyData) -> str:
    if data.importance is None:
        return f"Knob importance: not shown ({data.importance_note})."
    lines = ["Knob importance", f"  {data.importance_note}"]
    top = max(data.importance.values(), default=0.0) or 1.0
    for knob, value in data.importance.items():
        bar = "#" * max(1 if value > 0 else 0, round(30 * value / top))
        lines.append(f"  {knob:<44} {value:6.3f}  {bar}")
    return "\n".join(lines)


def _first_line(text: str | None) -> str:
    text = (text or "").strip()
    return text.splitlines()[0] if text else "(no message)"


def _int(value: int | None) -> str:
    return "-" if value is None else str(value)


def _plural(n: int, word: str, suffix: str = "s") -> str:
    return f"{n} {word}{'' if n == 1 else suffix}"


def no_effect(data: StudyData) -> str:
    """The knobs two trials showed to change nothing on this model (the search left them to
    torch from then on)."""
    trials = [row.trial for row in data.rows if row.trial is not None]
    inert = inert_in(trials, data.records)
    if not inert:
        return ""
    return f"No effect on this model (left to torch in later trials): {describe_inert(inert)}."
