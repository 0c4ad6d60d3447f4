"""``autotune cache export best_config.json``: pack the compile cache of a file's winning
config beside it, so that ``autotune.apply`` in a fresh process skips the cold compile."""

from __future__ import annotations

import argparse

from autotune._printable import say
from autotune.cli import _options as options

INTERRUPTED = "the best-config file was not changed."


def add_parser(sub: argparse._SubParsersAction) -> options.Parser:
    p = options.add_subcommand(
        sub,
        "cache",
        help="export the compile cache of a best-config file beside it (autotune.apply loads it)",
        description="export: compile the file's config in a fresh process with an empty "
        "Inductor cache, call it on the study's inputs (get_inputs of the model file), pack "
        "the cache it filled as NAME.DEVICE.cache.tar.gz beside the file, and record its SHA-256, "
        "size and the machine facts it is valid for (torch, triton, CUDA, Python, device, "
        "CPU threads) in the file. Where the config compiles the whole model as one graph, "
        "also package it with AOTInductor (NAME.DEVICE.pt2), checked against eager before it "
        "is written (a note says why not otherwise). A file with entries for several machines "
        "gets the artifacts of this machine's entry. `autotune search --save-cache` does the "
        "same after a search.",
    )
    p.add_argument("action", choices=("export",), help="what to do")
    p.add_argument("file", help="the best-config file (autotune search --out)")
    p.add_argument(
        "--model", metavar="PATH",
        help="the model file to compile (required: the best-config file records where the "
        "model was, model.source, but autotune never runs a file that a config file names)",
    )  # fmt: skip
    p.add_argument(
        "--no-aot", action="store_true",
        help="do not write the AOTInductor package (the Inductor cache only)",
    )  # fmt: skip
    p.add_argument(
        "--no-cache", action="store_true",
        help="do not export the Inductor cache (the AOTInductor package only)",
    )  # fmt: skip
    p.add_argument(
        "--bind-weights", action="store_true",
        help="record the SHA-256 of the weights the model file builds in the entry (signed "
        "with it where $AUTOTUNE_SIGNING_KEY is set): autotune.apply compares the applied "
        "model's weights, warns on a difference, and refuses it where a signature is required",
    )  # fmt: skip
    options.add_allow_unsafe(p, "the file's config")
    options.add_debug(p)
    return p


def run(args: argparse.Namespace) -> int:
    from autotune.runtime import ConfigError
    from autotune.ship import ship_cache

    if args.no_cache and args.no_aot:
        from autotune.errors import UsageError

        raise UsageError("--no-cache with --no-aot leaves nothing to export; drop one of them.")
    try:
        ship_cache(args.file, args.model, on_note=lambda note: say(note, flush=True),
                     cache=not args.no_cache, aot=not args.no_aot,
                     allow_unsafe_knobs=args.allow_unsafe_knobs,
                     bind_weights=args.bind_weights)  # fmt: skip
    except ConfigError as exc:
        from autotune.errors import UsageError

        raise UsageError(f"The cache of {args.file} is not exported: {exc}") from exc
    return 0
