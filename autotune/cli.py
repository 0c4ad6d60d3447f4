"""The ``autotune`` command: ``autotune search MODEL.py [options]``."""

from __future__ import annotations

import argparse
import signal
import sys
import traceback
from typing import Any

from autotune import _argtypes as argtypes
from autotune.errors import UsageError
from autotune.trials._spec import DEFAULT_PRECISION

EXIT_USAGE = 2
EXIT_INTERRUPTED = 130


def main(argv: list[str] | None = None) -> int:
    """Entry point of the console script; returns the exit code."""
    parser = _parser()
    args = parser.parse_args(argv)
    if not getattr(args, "command", None):
        parser.print_help()
        return EXIT_USAGE
    from autotune.trials._runner import tracked

    signal.signal(signal.SIGTERM, _interrupt)
    before = tracked()  # an in-process caller's own trials are not ours to kill
    try:
        return int(args.run(args))
    except UsageError as exc:
        if args.debug:
            traceback.print_exc()
        print(f"autotune: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        print(
            "autotune: interrupted; every finished trial is saved. Run the same command to "
            "resume the study.",
            file=sys.stderr,
        )
        return EXIT_INTERRUPTED
    finally:
        from autotune.trials import kill_all_trials

        kill_all_trials(keep=before)


def _interrupt(signum: int, frame: Any) -> None:
    raise KeyboardInterrupt


def _parser() -> argparse.ArgumentParser:
    from autotune import __version__

    parser = argparse.ArgumentParser(
        prog="autotune",
        description="Search torch.compile configurations on this machine and emit the best.",
    )
    parser.add_argument("--version", action="version", version=f"autotune {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    search = sub.add_parser(
        "search",
        help="search compile configs for a model file",
        description="Measure eager and default torch.compile, then search the space; every "
        "trial runs in a process of its own. Re-running with the same --study and --storage "
        "resumes the study.",
    )
    _search_arguments(search)
    search.set_defaults(run=_run_search)
    from autotune.cli_spaces import add_spaces_parser
    from autotune.cli_verify import add_verify_parser

    add_spaces_parser(sub)
    add_verify_parser(sub)
    return parser


def _search_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("model", help="model file defining get_model(device) and get_inputs(device)")
    p.add_argument(
        "--trials",
        type=argtypes.positive_int,
        default=20,
        help="trial budget of the study, baselines excluded (default 20)",
    )
    p.add_argument(
        "--timeout",
        type=argtypes.positive_float,
        metavar="SECONDS",
        help="wall clock of this run: no trial starts after it",
    )
    p.add_argument(
        "--compile-budget",
        type=argtypes.positive_float,
        default=600.0,
        metavar="SECONDS",
        help="per trial: a trial still compiling or running after it is killed (default 600)",
    )
    p.add_argument(
        "--space",
        metavar="NAME_OR_PATH",
        help="built-in space name (cpu, cuda) or a .toml path (default: per device)",
    )
    p.add_argument("--study", metavar="NAME", help="study name (default: MODEL-DEVICE)")
    p.add_argument(
        "--storage",
        default="sqlite:///autotune.db",
        metavar="URL",
        help="SQLAlchemy URL for Optuna's and autotune's tables (default sqlite:///autotune.db)",
    )
    p.add_argument(
        "--out",
        default="best_config.json",
        metavar="PATH",
        help="best-config file to write (default best_config.json)",
    )
    p.add_argument(
        "--device", type=argtypes.device, help="cpu, cuda or cuda:N (default: cuda if available)"
    )
    p.add_argument("--seed", type=int, default=0, help="seeds the sampler, weights and inputs")
    p.add_argument("--sampler", choices=("tpe", "random"), default="tpe")
    p.add_argument(
        "--measure-seconds",
        type=argtypes.positive_float,
        default=2.0,
        metavar="SECONDS",
        help="time spent on interleaved eager/compiled timing per trial (default 2)",
    )
    p.add_argument(
        "--cache-dir",
        metavar="DIR",
        help="kernel cache shared by the study's trials "
        "(default: $AUTOTUNE_CACHE_DIR, else ~/.cache/autotune/STUDY-ID, one per study)",
    )
    p.add_argument(
        "--trial-host",
        choices=("warm", "cold"),
        default="warm",
        help="warm: fork each trial from a host that already imported torch and "
        "Inductor (default); cold: a fresh Python process per trial",
    )
    p.add_argument(
        "--objective",
        choices=("latency", "throughput", "amortized"),
        default="latency",
        help="latency (default) or throughput: steady-state speed; amortized: the compile "
        "time charged to --calls N calls",
    )
    p.add_argument(
        "--calls",
        type=argtypes.positive_int,
        metavar="N",
        help="with --objective amortized: the calls the compile must pay back",
    )
    p.add_argument(
        "--pareto",
        action="store_true",
        help="multi-objective study: latency against compile time (and, with --pareto-axes, "
        "memory); prints the Pareto front, --pick chooses from it",
    )
    p.add_argument(
        "--pareto-axes",
        metavar="AXES",
        help="with --pareto: latency,compile (default) or latency,compile,memory",
    )
    p.add_argument(
        "--pick",
        metavar="RULE",
        help="with --pareto: a goal (fastest, min-compile, min-memory; default fastest) and "
        "limits, quoted, e.g. 'fastest,compile<=60' or 'min-compile,speedup>=1.2'",
    )
    p.add_argument(
        "--memory-budget",
        type=argtypes.size,
        metavar="SIZE",
        help="peak memory a trial may use (e.g. 8GiB, 500MB): above it a trial is infeasible "
        "(CUDA: max allocated; CPU: peak RSS of the trial process)",
    )
    p.add_argument(
        "--finalists",
        type=int,
        default=3,
        metavar="N",
        help="re-measure the N best configs and default torch.compile in fresh processes, "
        "cold and warm, before choosing (default 3; 0 skips)",
    )
    p.add_argument(
        "--precision",
        type=argtypes.fraction,
        default=DEFAULT_PRECISION,
        metavar="F",
        help="finalists time past --measure-seconds until their median speedup is known "
        f"within +-F (95%% confidence), for at most 5x as long; 0 turns it off (default "
        f"{DEFAULT_PRECISION})",
    )
    p.add_argument(
        "--warm-start",
        action="store_true",
        help="amortized objective: charge the warm compile (a restarted process reusing its "
        "cache) instead of the cold one (a new machine)",
    )
    p.add_argument(
        "--scope",
        choices=("search", "whole"),
        default="search",
        help="search: probe the model's parts and search which to compile (whole, "
        "regional blocks, children, some kept eager; default); whole: compile "
        "the whole model only",
    )
    p.add_argument(
        "--jobs",
        type=argtypes.positive_int,
        default=1,
        help="trials run at once (CPU only; each job gets its own cores; default 1)",
    )
    p.add_argument(
        "--allow-numerics-changes",
        action="store_true",
        help="also search the space's [numerics] knobs (fast math etc.), held to a "
        "10x looser correctness tolerance",
    )
    p.add_argument(
        "--workload",
        choices=("infer", "train"),
        default="infer",
        help="infer: eval() under no_grad (default); train: one training step (forward, "
        "loss, backward, optimizer step), see the README's model file section",
    )
    p.add_argument("--debug", action="store_true", help="show tracebacks")  # fmt: skip


def _run_search(args: argparse.Namespace) -> int:
    from autotune.search import run_search

    return run_search(args)


if __name__ == "__main__":
    sys.exit(main())
