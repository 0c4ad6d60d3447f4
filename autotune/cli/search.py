"""``autotune search MODEL.py``: run or resume a study, then choose the winner and write it."""

from __future__ import annotations

import argparse
import os
from typing import TYPE_CHECKING

from autotune._search_options import SEARCH_OPTIONS
from autotune._settings_table import (
    changeable_options,
)
from autotune.cli import _options as options
from autotune.errors import UsageError

if TYPE_CHECKING:
    from collections.abc import Callable

    from autotune.decide import Decision
    from autotune.records import TrialRecord
    from autotune.study import Search
    from autotune.trials import TrialRunner

INTERRUPTED = "every finished trial is saved. Run the same command to resume the study."


def add_parser(sub: argparse._SubParsersAction) -> options.Parser:
    """The parser of ``autotune search``: every option from :mod:`autotune._search_options`."""
    from autotune.space import builtin_names

    p = options.add_subcommand(
        sub,
        "search",
        help="search compile configs for a model file",
        description="Measure eager and default torch.compile, then search the space; every "
        "trial runs in a process of its own. Re-running with the same --study and --storage "
        "resumes the study under its stored settings: options left out keep the stored "
        f"values, and only {changeable_options()} may change.",
    )
    p.add_argument(
        "model",
        help="model file (*.py) defining get_model(device) and get_inputs(device), or a study "
        "file (*.toml) naming one and the study's options (options given here override it)",
    )
    for option in SEARCH_OPTIONS:
        if option.flag == "--space":
            options.add(
                p, option.flag, help=option.help.format(builtin_spaces=", ".join(builtin_names()))
            )
        else:
            options.add(p, option.flag)
    return p


def run(args: argparse.Namespace) -> int:
    """Runs or resumes a study, then writes its best-config file; returns the exit code."""
    from autotune._deadline import Deadline
    from autotune.pipeline import NO_CUDA, Finish, build_request, resolve_device, run_study
    from autotune.reports import terminal
    from autotune.reports.progress import Progress
    from autotune.study import Events, Search, Session

    progress = Progress(quiet=args.quiet)
    args.storage = options.storage(args)
    request = build_request(args, Deadline.after(args.timeout))
    if getattr(args, "effort_line", None):
        progress.note(args.effort_line)
    session = Session(request, Events(on_note=progress.note))
    if args.no_worker:
        return _create_only(Search(session))
    device = session.local.device
    resolve_device(device, remedy=NO_CUDA, named=f"The study's device {device}")
    search = Search(session, trial_runners(args, device))
    progress.attach(search, "search")
    finish = Finish(
        args.out, remeasure=args.remeasure, for_device=args.for_device,
        save_cache=args.save_cache, save_aot=args.save_aot,
        finalist_runner=options.trial_runner(),
    )  # fmt: skip

    def front(records: list[TrialRecord], axes: list[str]) -> None:
        progress.note(terminal.pareto_table(records, axes, "search"))

    def decided(decision: Decision) -> None:
        progress.finish()  # the panel stops before the decision is printed
        print(terminal.decision(decision, args.out), flush=True)

    with progress:
        _header(search, progress.note)
        outcome = run_study(search, finish, on_front=front, on_decision=decided)
    if outcome.decision is None:
        print(
            "No best-config file was written: the eager baseline was not measured before the "
            "run stopped. Run the same command again to continue the study.",
            flush=True,
        )
        return 1
    if outcome.not_shipped:
        print(outcome.not_shipped, flush=True)
    return 0


def _create_only(search: Search) -> int:
    from autotune.records import redact_url

    search.prepare()
    session, request = search.session, search.request
    s = session.settings
    what = "created" if session.created else "ready"
    print(
        f"study {request.study_name!r} {what} ({s.model_path} on {s.device}, space "
        f"{session.space.name!r}, {s.trials} trials); no trial ran (--no-worker). Start workers:"
        f"\n  autotune worker --study {request.study_name} --storage "
        f"{redact_url(request.storage)} --model {s.model_path}\nthen write the file with:\n"
        f"  autotune finalize --study {request.study_name} --storage "
        f"{redact_url(request.storage)} --model {s.model_path}"
    )
    return 0


def _header(search: Search, say: Callable[[str], None]) -> None:
    space = search.session.space
    for note in space.notes:
        say(f"note: {note}")
    s, done = search.session.settings, search.done()
    what = f"{s.model_path} on {s.device}, space {space.name!r} ({space.size:,} configurations)"
    if done:
        say(f"study {search.request.study_name!r} (resumed, {done} of {s.trials} trials done): "
            f"{what}")  # fmt: skip
    else:
        say(f"study {search.request.study_name!r}: {what}, {s.trials} trials")


def trial_runners(args: argparse.Namespace, device: str) -> list[TrialRunner]:
    """This process's trial runners: one per --jobs, the warm host or cold processes (or the
    runner $AUTOTUNE_TRIAL_RUNNER names)."""
    from autotune.trials import SubprocessRunner, WarmHostRunner

    cores = _core_sets(args.jobs, device)
    replaced = [options.trial_runner() for _ in cores]
    if all(replaced):
        return [r for r in replaced if r is not None]
    kind = WarmHostRunner if args.trial_host == "warm" else SubprocessRunner
    return [kind(cores=c) for c in cores]


def _core_sets(jobs: int, device: str) -> list[list[int] | None]:
    """Disjoint CPU cores per job, so parallel trials neither oversubscribe nor share cores."""
    if jobs == 1:
        return [None]
    if not device.startswith("cpu"):
        raise UsageError(
            f"--jobs {jobs} needs --device cpu: trials sharing one GPU would time each other. "
            "Run one worker per GPU (autotune worker --gpus 0,1,...) on one --study and "
            "--storage instead."
        )
    cores = sorted(os.sched_getaffinity(0))
    if jobs > len(cores):
        raise UsageError(
            f"--jobs {jobs} is more than the {len(cores)} CPU cores this process may use; "
            f"pass --jobs {len(cores)} or fewer (each job gets cores of its own)."
        )
    share = len(cores) // jobs
    return [cores[i * share : (i + 1) * share] for i in range(jobs)]
