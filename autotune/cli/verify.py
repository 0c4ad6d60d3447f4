"""``autotune verify BEST_CONFIG.json MODEL.py``: re-measure a best-config file on this machine."""

from __future__ import annotations

import argparse
import json
import sys
from typing import TYPE_CHECKING

from autotune._device import resolve_device
from autotune._printable import say
from autotune.cli import _options as options
from autotune.errors import UsageError
from autotune.verify import DEFAULT_REPEATS, DEFAULT_TOLERANCE

if TYPE_CHECKING:
    from autotune.runtime.config import BestConfig, ConfigFile

INTERRUPTED = "verify stopped; nothing was written."


def add_parser(sub: argparse._SubParsersAction) -> options.Parser:
    """Adds ``autotune verify BEST_CONFIG.json MODEL.py [options]`` to the subcommands."""
    p = options.add_subcommand(
        sub,
        "verify",
        help="re-measure a best-config file on this machine and check its claims",
        description="Measure eager against itself (the noise floor), default torch.compile and "
        "the file's config, each in a fresh process with an empty kernel cache, and compare "
        "with the speedups the file claims. Exit code 0: the claims hold; 1: the config is "
        "slower than claimed beyond the noise, incorrect or broken, or (do_not_compile file) "
        "default torch.compile is now reliably faster than eager; 2: bad input. A file with "
        "entries for several machines is verified on the entry for this one (as "
        "autotune.apply picks it).",
    )
    p.add_argument("best_config", help="the best-config file written by `autotune search`")
    options.add(p, "model", help="the model file it was tuned for")
    options.add_device(p, "where to measure (default: the file's device)")
    options.add_compile_budget(
        p, "per measurement: still compiling or running after it is `broken`"
    )
    options.add_measure_seconds(p, "interleaved eager/compiled timing per measurement")
    options.add_precision(p, "measurements")
    p.add_argument(
        "--repeats",
        type=options.argtype("positive_int"),
        default=DEFAULT_REPEATS,
        metavar="N",
        help="run each measurement N times and pool them (the medians)",
    )
    p.add_argument(
        "--tolerance",
        type=options.argtype("fraction"),
        default=DEFAULT_TOLERANCE,
        metavar="F",
        help="least relative drop of the speedup that fails a claim, raised to the "
        "measured noise floor",
    )
    options.add_seed(
        p, "seeds weights and inputs (default: the seed the file was tuned with)", None
    )
    p.add_argument(
        "--skip-default",
        action="store_true",
        help="do not measure default torch.compile (saves its cold compile; the speedup vs "
        "default is then not checked)",
    )
    p.add_argument("--json", action="store_true", help="print one JSON object (the report)")
    options.add_allow_unsafe(p, "the file's config")
    options.add_debug(p)
    return p


def run(args: argparse.Namespace) -> int:
    """Runs ``autotune verify``; returns the verdict's exit code (bad input: UsageError)."""
    from autotune.reports.verify import progress, render
    from autotune.runtime.config import CompileConfig, ConfigError, ConfigFile
    from autotune.trials import SubprocessRunner
    from autotune.verify import plan_measurements, verify
    from autotune.workload import load_model_file

    try:
        file = ConfigFile.load(args.best_config)
    except ConfigError as exc:
        remedy = "" if "autotune search" in str(exc) else ". Pass a file `autotune search` wrote."
        raise UsageError(f"{exc}{remedy}") from exc
    load_model_file(args.model)
    best = _entry_here(file, args.device, args.best_config)
    device = resolve_device(
        args.device,
        fallback=str(best.workload.get("device") or "cpu"),
        remedy="Pass --device cpu (the file's claims were measured on its own device), or run "
        "on a GPU machine with a CUDA build of torch.",
        named=None if args.device else f"The file's device {best.workload.get('device')}",
    )
    seed = args.seed if args.seed is not None else int(best.workload.get("seed") or 0)
    default = None if args.skip_default else CompileConfig()
    plan_measurements(best, default)  # refuses what cannot be verified before any output
    out = sys.stderr if args.json else sys.stdout
    if not args.json:
        say(_heading(args, best, seed), flush=True)
    runner = options.trial_runner() or SubprocessRunner()
    try:
        report = verify(
            best, args.model, runner=runner, device=device, repeats=args.repeats,
            compile_budget=args.compile_budget, measure_seconds=args.measure_seconds,
            precision=args.precision or None, seed=seed, tolerance=args.tolerance,
            default=default, allow_unsafe_knobs=args.allow_unsafe_knobs,
            on_trial=lambda repeat, name, result: progress(out, repeat, name, result),
        )  # fmt: skip
    finally:
        runner.close()
    say(json.dumps(report.to_dict(), indent=2) if args.json else render(report))
    return report.exit_code


def _entry_here(file: ConfigFile, device: str | None, path: str) -> BestConfig:
    """The entry of ``file`` for this machine, as :func:`autotune.apply` would pick it; a
    line on stderr says so when it is not this machine's own."""
    if len(file.entries) == 1:
        return file.entries[0]
    import torch

    from autotune.runtime.fingerprint import environment_fingerprint
    from autotune.runtime.select import choose

    if device is None:
        gpu = any(str(e.workload.get("device", "")).startswith("cuda") for e in file.entries)
        device = "cuda" if gpu and torch.cuda.is_available() else "cpu"
    choice = choose(file.entries, environment_fingerprint(device))
    if choice.entry is None:
        raise UsageError(f"{path}: {choice.why}.")
    if not choice.exact:
        say(f"verify: {choice.why}.", file=sys.stderr, flush=True)
    return choice.entry


def _heading(args: argparse.Namespace, best: BestConfig, seed: int) -> str:
    what = f"compile {best.config.brief()}" if best.config is not None else "do not compile"
    repeats = f"{args.repeats} repeat" + ("s" if args.repeats > 1 else "")
    return (
        f"verify {args.best_config} ({what}) with {args.model}: {repeats}, seed {seed}, each "
        "measurement in a fresh process with an empty kernel cache"
    )
