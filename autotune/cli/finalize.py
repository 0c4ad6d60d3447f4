"""``autotune finalize --study NAME``: choose a study's winner from its records and write the
best-config file, as the search that ran it would have."""

from __future__ import annotations

import argparse

from autotune._printable import say
from autotune.cli import _options as options

INTERRUPTED = "the finalists measured so far are recorded; nothing else changed."


def add_parser(sub: argparse._SubParsersAction) -> options.Parser:
    p = options.add_subcommand(
        sub,
        "finalize",
        help="choose a study's winner from its records and write the best-config file",
        description="Choose the winner of a study that has been searched (by `autotune search` "
        "here or by workers elsewhere) and write the best-config file. The study's stored "
        "settings decide everything (objective, --pick rule, how many finalists); finalists "
        "measured before are used as recorded unless --remeasure.",
    )
    options.add_study(p, "the study to finalize")
    options.add_storage(p)
    options.add_out(p)
    options.add(p, "--remeasure")
    options.add(
        p, "--timeout",
        help="wall clock for the finalists; with too little, they are skipped with a note",
    )  # fmt: skip
    options.add_for_device(p)
    options.add_device(p, "where the finalists run (default: the study's)")
    options.add_model(p, "the finalists run")
    options.add_joining(p)
    options.add_allow_unsafe(p, "the finalists' configs")
    options.add_debug(p)
    return p


def run(args: argparse.Namespace) -> int:
    from autotune._deadline import Deadline
    from autotune.decide import finalize
    from autotune.reports import terminal

    decision = finalize(
        options.storage(args),
        args.study,
        args.out,
        remeasure_finalists=args.remeasure,
        deadline=Deadline.after(args.timeout),
        runner=options.trial_runner(),
        on_note=lambda note: say(note, flush=True),
        device=args.device,
        model_path=args.model,
        for_device=args.for_device,
        trust_model_path=args.trust_model_path,
        allow_version_mismatch=args.allow_version_mismatch,
        allow_unsafe_knobs=args.allow_unsafe_knobs,
    )
    say(terminal.decision(decision, args.out))
    return 0
