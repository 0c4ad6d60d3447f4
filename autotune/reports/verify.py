"""``autotune verify``'s printed report: a progress line per measurement, then claimed against
measured, the noise and the verdict."""

from __future__ import annotations

from typing import TextIO

from autotune._printable import say
from autotune.reports._format import clip, interval, ms, seconds, spread, times
from autotune.trials import TrialResult
from autotune.verify import VerifyReport

_LABELS = {"eager": "eager vs eager", "default": "default compile", "config": "the file's config"}


def progress(out: TextIO, repeat: int, name: str, result: TrialResult) -> None:
    """One line as each measurement ends."""
    head = f"  repeat {repeat}  {_LABELS[name]:<18}"
    if not result.ok:
        say(f"{head} {result.failure_kind}: {clip(result.error or '', 100)}", file=out, flush=True)
        return
    compile_s = f"  compile {result.compile_time_s:.1f}s" if result.compile_time_s else ""
    speedup = spread(
        result.speedup_vs_eager, result.speedup_vs_eager_q1, result.speedup_vs_eager_q3
    )
    known = f"  median {result.precision_note()}" if result.precision_note() else ""
    say(f"{head} ok  {speedup} eager{known}{compile_s}", file=out, flush=True)


def render(report: VerifyReport) -> str:
    """The human report: claimed vs measured (each speedup's quartiles, then its median's 95%
    interval), the noise, warnings and the verdict line."""
    c, m = report.claimed, report.measured
    rows = [
        ("", "claimed", "measured"),
        (
            "speedup vs eager",
            spread(c["speedup_vs_eager"], c["speedup_vs_eager_q1"], c["speedup_vs_eager_q3"]),
            spread(m["speedup_vs_eager"], m["speedup_vs_eager_q1"], m["speedup_vs_eager_q3"]),
        ),
        (
            "  95% interval",
            interval(c["speedup_vs_eager_ci_low"], c["speedup_vs_eager_ci_high"]),
            interval(m["speedup_vs_eager_ci_low"], m["speedup_vs_eager_ci_high"]),
        ),
        ("speedup vs default", times(c["speedup_vs_default"]), times(m["speedup_vs_default"])),
        (
            "  95% interval",
            "",
            interval(m["speedup_vs_default_ci_low"], m["speedup_vs_default_ci_high"]),
        ),
        ("latency", ms(c["latency_median_s"]), ms(m["latency_median_s"])),
        ("eager latency", ms(c["eager_latency_median_s"]), ms(m["eager_latency_median_s"])),
        ("compile time", seconds(c["compile_time_s"]), seconds(m["compile_time_s"], " (cold)")),
    ]
    if m["default_speedup_vs_eager"] is not None:
        default = spread(
            m["default_speedup_vs_eager"],
            m["default_speedup_vs_eager_q1"],
            m["default_speedup_vs_eager_q3"],
        )
        rows.append(("default vs eager", "", default))
    widths = [max(len(row[i]) for row in rows) for i in range(2)]
    lines = [f"{r[0]:<{widths[0]}}  {r[1]:<{widths[1]}}  {r[2]}".rstrip() for r in rows]
    noise = "-" if report.noise_floor is None else f"±{report.noise_floor:.1%}"
    lines.append(f"noise floor (eager vs eager): {noise}; tolerance {report.tolerance:.1%}")
    lines += [f"warning: {w}" for w in report.warnings]
    lines.append(f"Verdict: {report.verdict}: {'; '.join(report.reasons)}.")
    return "\n".join(lines)
