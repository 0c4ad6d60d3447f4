"""``autotune show best_config.json``: what the file will do, in words (``--json``: as data)."""

from __future__ import annotations

import argparse
import json

from autotune._printable import say
from autotune.cli import _options as options
from autotune.errors import UsageError

INTERRUPTED = "nothing was changed."


def add_parser(sub: argparse._SubParsersAction) -> options.Parser:
    p = options.add_subcommand(
        sub,
        "show",
        help="explain a best-config file in words: decision, scope, knobs, claims, origin",
        description="Explain what a best-config file will do when autotune.apply loads it: "
        "the decision and why, the scope (what is compiled, what is kept eager), mode, "
        "dynamic and fullgraph, every knob it sets beyond the mode's preset with what the "
        "knob does, the workload and shapes it was tuned for, its claimed speedups with their "
        "spread, cold and warm compile time and break-even calls, where and when it was "
        "tuned, and whether this machine matches it; for a file with entries for several "
        "machines, each entry and which one autotune.apply uses here. Nothing is compiled or "
        "measured.",
    )
    p.add_argument("file", help="the best-config file (autotune search --out)")
    p.add_argument("--json", action="store_true", help="print the same facts as JSON")
    options.add_debug(p)
    return p


def run(args: argparse.Namespace) -> int:
    from autotune.reports.show import explain, explain_file, render, render_file
    from autotune.runtime import ConfigError, ConfigFile
    from autotune.runtime.fingerprint import environment_fingerprint

    try:
        file = ConfigFile.load(args.file)
    except FileNotFoundError:
        raise UsageError(
            f"The best-config file {args.file} does not exist; pass the path "
            "`autotune search --out` wrote (default best_config.json)."
        ) from None
    except ConfigError as exc:
        raise UsageError(f"{args.file} is not a valid best-config file: {exc}") from exc
    devices = [str(e.environment.get("device") or "cpu") for e in file.entries]
    cuda = next((d for d in devices if d.startswith("cuda")), None)
    # This machine as apply sees it: its GPU where the file has a GPU entry and CUDA is here.
    here = environment_fingerprint(_cuda(cuda) if cuda else "cpu")
    if len(file.entries) == 1:
        facts = explain(file.entries[0], args.file, here)
        text = render(facts)
    else:
        facts = explain_file(file.entries, args.file, here)
        text = render_file(facts)
    say(json.dumps(facts, indent=2, default=str) if args.json else text)
    return 0


def _cuda(device: str) -> str:
    import torch

    return device if torch.cuda.is_available() else "cpu"
