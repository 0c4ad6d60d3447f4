"""``autotune verify BEST_CONFIG.json MODEL.py``: re-measure a best-config file on this machine."""

from __future__ import annotations

import argparse
import json
import sys
from typing import TYPE_CHECKING, TextIO

from autotune import _argtypes as argtypes
from autotune.errors import UsageError
from autotune.trials._spec import DEFAULT_PRECISION

if TYPE_CHECKING:
    from autotune.runtime.config import BestConfig
    from autotune.trials import TrialResult
    from autotune.verify import VerifyReport

EXIT_INTERRUPTED = 130
_LABELS = {"eager": "eager vs eager", "default": "default compile", "config": "the file's config"}


def add_verify_parser(sub: argparse._SubParsersAction) -> None:
    """Adds ``autotune verify BEST_CONFIG.json MODEL.py [options]`` to the subcommands."""
    p = sub.add_parser(
        "verify",
        help="re-measure a best-config file on this machine and check its claims",
        description="Measure eager against itself (the noise floor), default torch.compile and "
        "the file's config, each in a fresh process with an empty kernel cache, and compare "
        "with the speedups the file claims. Exit code 0: the claims hold; 1: the config is "
        "slower than claimed beyond the noise, incorrect or broken, or (do_not_compile file) "
        "default torch.compile is now reliably faster than eager; 2: bad input.",
    )
    p.add_argument("best_config", help="the best-config file written by `autotune search`")
    p.add_argument("model", help="the model file it was tuned for")
    p.add_argument(
        "--device", type=argtypes.device, help="cpu, cuda or cuda:N (default: the file's)"
    )
    p.add_argument(
        "--compile-budget",
        type=argtypes.positive_float,
        default=600.0,
        metavar="SECONDS",
        help="per measurement: still compiling or running after it is `broken` (default 600)",
    )
    p.add_argument(
        "--measure-seconds",
        type=argtypes.positive_float,
        default=2.0,
        metavar="SECONDS",
        help="interleaved eager/compiled timing per measurement (default 2)",
    )
    p.add_argument(
        "--precision",
        type=argtypes.fraction,
        default=DEFAULT_PRECISION,
        metavar="F",
        help="time each measurement past --measure-seconds until its median speedup is known "
        f"within +-F (95%% confidence), for at most 5x as long; 0 turns it off (default "
        f"{DEFAULT_PRECISION})",
    )
    p.add_argument(
        "--repeats",
        type=argtypes.positive_int,
        default=1,
        metavar="N",
        help="run each measurement N times and pool them (the medians; default 1)",
    )
    p.add_argument(
        "--tolerance",
        type=argtypes.fraction,
        default=0.05,
        metavar="F",
        help="least relative drop of the speedup that fails a claim, raised to the "
        "measured noise floor (default 0.05)",
    )
    p.add_argument("--seed", type=int, default=0, help="seeds weights and inputs (default 0)")
    p.add_argument(
        "--skip-default",
        action="store_true",
        help="do not measure default torch.compile (saves its cold compile; the speedup vs "
        "default is then not checked)",
    )
    p.add_argument("--json", action="store_true", help="print one JSON object (the report)")
    p.add_argument("--debug", action="store_true", help="show tracebacks")
    p.set_defaults(run=run_verify)


def run_verify(args: argparse.Namespace) -> int:
    """Runs ``autotune verify``; returns the verdict's exit code (bad input: UsageError)."""
    from autotune.runtime.config import BestConfig, CompileConfig, ConfigError
    from autotune.trials import SubprocessRunner
    from autotune.verify import plan_measurements, verify
    from autotune.workload import load_model_file

    try:
        best = BestConfig.load(args.best_config)
    except ConfigError as exc:
        remedy = "" if "autotune search" in str(exc) else ". Pass a file `autotune search` wrote."
        raise UsageError(f"{exc}{remedy}") from exc
    load_model_file(args.model)
    device = args.device or str(best.workload.get("device") or "cpu")
    _check_device(device, None if args.device else f"The file's device {device}")
    default = None if args.skip_default else CompileConfig()
    plan_measurements(best, default)  # refuses what cannot be verified before any output
    progress = sys.stderr if args.json else sys.stdout
    if not args.json:
        print(_heading(args, best), flush=True)
    try:
        with SubprocessRunner() as runner:
            report = verify(
                best, args.model, runner=runner, device=device, repeats=args.repeats,
                budget_s=args.compile_budget, measure_seconds=args.measure_seconds,
                precision=args.precision or None,
                seed=args.seed, tolerance=args.tolerance,
                default=default,
                on_trial=lambda repeat, name, result: _progress(progress, repeat, name, result),
            )  # fmt: skip
    except KeyboardInterrupt:
        print("autotune: verify interrupted; nothing was written.", file=sys.stderr)
        return EXIT_INTERRUPTED
    print(json.dumps(report.to_dict(), indent=2) if args.json else render(report))
    return report.exit_code


def _check_device(device: str, named: str | None) -> None:
    from autotune._device import require

    require(
        device,
        "Pass --device cpu (the file's claims were measured on its own device), or run on a "
        "GPU machine with a CUDA build of torch.",
        named,
    )


def _heading(args: argparse.Namespace, best: BestConfig) -> str:
    what = f"compile {best.config.brief()}" if best.config is not None else "do not compile"
    repeats = f"{args.repeats} repeat" + ("s" if args.repeats > 1 else "")
    return (
        f"verify {args.best_config} ({what}) with {args.model}: {repeats}, each measurement "
        "in a fresh process with an empty kernel cache"
    )


def _progress(out: TextIO, repeat: int, name: str, result: TrialResult) -> None:
    head = f"  repeat {repeat}  {_LABELS[name]:<18}"
    if not result.ok:
        error = _clip(result.error or "", 100)
        print(f"{head} {result.failure_kind}: {error}", file=out, flush=True)
        return
    compile_s = f"  compile {result.compile_time_s:.1f}s" if result.compile_time_s else ""
    speedup = _spread(
        result.speedup_vs_eager, result.speedup_vs_eager_q1, result.speedup_vs_eager_q3
    )
    known = f"  median {result.precision_note()}" if result.precision_note() else ""
    print(f"{head} ok  {speedup} eager{known}{compile_s}", file=out, flush=True)


def render(report: VerifyReport) -> str:
    """The human report: claimed vs measured, the noise, warnings and the verdict line."""
    c, m = report.claimed, report.measured
    rows = [
        ("", "claimed", "measured"),
        (
            "speedup vs eager",
            _spread(c["speedup_vs_eager"], c["speedup_vs_eager_q1"], c["speedup_vs_eager_q3"]),
            _spread(m["speedup_vs_eager"], m["speedup_vs_eager_q1"], m["speedup_vs_eager_q3"]),
        ),
        ("speedup vs default", _times(c["speedup_vs_default"]), _times(m["speedup_vs_default"])),
        ("latency", _ms(c["latency_s"]), _ms(m["latency_s"])),
        ("eager latency", _ms(c["eager_latency_s"]), _ms(m["eager_latency_s"])),
        ("compile time", _seconds(c["compile_time_s"]), _seconds(m["compile_time_s"], " (cold)")),
    ]
    if m["default_speedup_vs_eager"] is not None:
        default = _spread(
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


def _spread(median: float | None, q1: float | None, q3: float | None) -> str:
    if median is None:
        return "-"
    if q1 is None or q3 is None:
        return f"{median:.3f}x"
    return f"{median:.3f}x ({q1:.3f}x to {q3:.3f}x)"


def _times(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}x"


def _ms(seconds: float | None) -> str:
    return "-" if seconds is None else f"{seconds * 1e3:.4g}ms"


def _seconds(value: float | None, suffix: str = "") -> str:
    return "-" if value is None else f"{value:.1f}s{suffix}"


def _clip(text: str, width: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= width else text[: width - 1] + "…"


__all__ = ["add_verify_parser", "render", "run_verify"]
