"""``autotune merge A.json B.json -o fleet.json``: one best-config file for several machines."""

from __future__ import annotations

import argparse

from autotune._printable import say
from autotune.cli import _options as options

INTERRUPTED = "nothing was written."


def add_parser(sub: argparse._SubParsersAction) -> options.Parser:
    p = options.add_subcommand(
        sub,
        "merge",
        help="combine best-config files tuned on different machines into one",
        description="Combine the entries of best-config files into one file holding an entry "
        "per machine (device name and torch version); autotune.apply picks the entry for the "
        "machine it runs on. For a machine in several files, the later file's entry wins. "
        "Each entry's compile cache and AOTInductor package are checked against their SHA-256 "
        "and copied beside the output under the entry's own name. Every entry keeps its "
        "signature as it was: a merge vouches for nothing unless --resign says so.",
    )
    p.add_argument("files", nargs="+", metavar="FILE", help="best-config files to combine")
    options.add(p, "--out", "-o", required=True, default=None, help="the file to write")
    p.add_argument(
        "--resign", action="store_true",
        help="sign every merged entry with this machine's key ($AUTOTUNE_SIGNING_KEY): you "
        "vouch for entries other machines wrote (default: each keeps its own signature, or "
        "none)",
    )  # fmt: skip
    options.add_allow_unsafe(p, "an entry")
    options.add_debug(p)
    return p


def run(args: argparse.Namespace) -> int:
    from autotune.ship import merge_files

    merge_files(
        args.files, args.out, on_note=lambda note: say(note, flush=True),
        allow_unsafe_knobs=args.allow_unsafe_knobs, resign=args.resign,
    )  # fmt: skip
    return 0
