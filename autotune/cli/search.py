"""``autotune search MODEL.py``: run or resume a study, then choose the winner and write it."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from autotune._printable import say
from autotune.cli import _options as options
from autotune.settings import CLI, SEARCH_OPTIONS, SearchOptions, changeable_options, resolve

if TYPE_CHECKING:
    from autotune.decide import Decision
    from autotune.records import TrialRecord
    from autotune.search import Search

INTERRUPTED = "every finished trial is saved. Run the same command to resume the study."


def add_parser(sub: argparse._SubParsersAction) -> options.Parser:
    """The parser of ``autotune search``: every option of the settings table
    (:mod:`autotune.settings`)."""
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
    from autotune.reports import terminal
    from autotune.reports.progress import Progress
    from autotune.search import finish_of, open_search, opening_lines, run_study

    chosen = search_options(args)
    progress = Progress(quiet=chosen.quiet)
    search = open_search(chosen, progress.note, runners=not chosen.no_worker)
    if chosen.no_worker:
        return _create_only(search)
    search.show_in(progress, "search")

    def front(records: list[TrialRecord], axes: list[str]) -> None:
        progress.note(terminal.pareto_table(records, axes, "search"))

    def decided(decision: Decision) -> None:
        progress.finish()  # the panel stops before the decision is printed
        say(terminal.decision(decision, chosen.out), flush=True)

    with progress:
        for line in opening_lines(search):
            progress.note(line)
        outcome = run_study(search, finish_of(chosen), on_front=front, on_decision=decided)
    if outcome.decision is None:
        say(
            "No best-config file was written: the eager baseline was not measured before the "
            "run stopped. Run the same command again to continue the study.",
            flush=True,
        )
        return 1
    if outcome.not_shipped:
        say(outcome.not_shipped, flush=True)
    return 0


def search_options(args: argparse.Namespace) -> SearchOptions:
    """The options of the search this command line asks for (the storage resolved)."""
    values = {o.name: getattr(args, o.name) for o in SEARCH_OPTIONS}
    values["storage"] = options.storage(args)
    return resolve(values, given=args.given, language=CLI)


def _create_only(search: Search) -> int:
    from autotune.records import redact_url

    search.prepare()
    session, request = search.session, search.request
    s = session.settings
    what = "created" if session.created else "ready"
    say(
        f"study {request.study_name!r} {what} ({s.model_path} on {s.device}, space "
        f"{session.space.name!r}, {s.trials} trials); no trial ran (--no-worker). Start workers:"
        f"\n  autotune worker --study {request.study_name} --storage "
        f"{redact_url(request.storage)} --model {s.model_path}\nthen write the file with:\n"
        f"  autotune finalize --study {request.study_name} --storage "
        f"{redact_url(request.storage)} --model {s.model_path}"
    )
    return 0
