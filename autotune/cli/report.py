"""``autotune report --study NAME``: a study's settings, trials, finalists, decision, failures
and knob importance, in the terminal or (``--html``) as a page with plots."""

from __future__ import annotations

import argparse
import shutil

from autotune._printable import say
from autotune.cli import _options as options

INTERRUPTED = "nothing was written."


def add_parser(sub: argparse._SubParsersAction) -> options.Parser:
    p = options.add_subcommand(
        sub,
        "report",
        help="print a study's trials, decision and knob importance; --html writes a page",
        description="Report on a study from its storage alone: it may have run here or on a "
        "cluster, be finished, still running, or have lost its workers. Prints the settings "
        "and environment, every trial (status or failure kind, compile time, latency with "
        "spread, speedups vs eager and vs default torch.compile, peak memory, graphs, graph "
        "breaks, recompiles, Inductor cache hits, the config as a diff from the defaults), "
        "latency per input shape, the finalists and the decision as `autotune finalize` would "
        "make it now, the Pareto front, failures by kind and knob importance. Nothing is "
        "measured or changed.",
    )
    options.add_study(p, "the study to report on", only=True)
    options.add_storage(p)
    p.add_argument(
        "--html", metavar="PATH",
        help="also write one self-contained HTML page with plots (opens offline: plotly.js "
        "is embedded)",
    )  # fmt: skip
    p.add_argument(
        "--width", type=options.argtype("positive_int"), metavar="COLUMNS",
        help="width of the printed table (default: the terminal's, at least 120)",
    )  # fmt: skip
    options.add_debug(p)
    return p


def run(args: argparse.Namespace) -> int:
    from autotune.reports import load_study_data, render_report

    if args.html:
        options.require_folder("--html", args.html)
    data = load_study_data(options.storage(args), options.study(args))
    width = args.width or max(120, shutil.get_terminal_size((160, 40)).columns)
    say(render_report(data, width), flush=True)
    if args.html:
        from autotune.reports import write_html

        size = write_html(data, args.html)
        say(f"\nWrote {args.html} ({size / 1024:,.0f} kB; opens offline in any browser).")
    return 0
