"""``autotune studies``: the studies in a storage, with their progress and best speedup."""

from __future__ import annotations

import argparse

from autotune._printable import say
from autotune.cli import _options as options

INTERRUPTED = "nothing was changed."


def add_parser(sub: argparse._SubParsersAction) -> options.Parser:
    p = options.add_subcommand(
        sub,
        "studies",
        help="list the studies in a storage: trials done, best speedup, state",
        description="List the autotune studies in a storage, oldest first: model and device, "
        "search trials measured of the budget, trials running now, the best speedup over "
        "eager measured so far, and the state (running, done: its budget is measured, "
        "stopped: resume it or start workers).",
    )
    options.add_storage(p)
    options.add_debug(p)
    return p


def run(args: argparse.Namespace) -> int:
    from autotune.reports import list_studies, render_studies

    say(render_studies(list_studies(options.storage(args))), flush=True)
    return 0
