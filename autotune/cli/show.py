"""``autotune show best_config.json``: what the file will do, in words (``--json``: as data)."""

from __future__ import annotations

import argparse
import json

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
        "tuned, and whether this machine matches it. Nothing is compiled or measured.",
    )
    p.add_argument("file", help="the best-config file (autotune search --out)")
    p.add_argument("--json", action="store_true", help="print the same facts as JSON")
    options.add_debug(p)
    return p


def run(args: argparse.Namespace) -> int:
    from autotune.reports.show import explain, render
    from autotune.runtime import ConfigError, load
    from autotune.runtime.fingerprint import environment_fingerprint

    try:
        best = load(args.file)
    except FileNotFoundError:
        raise UsageError(
            f"The best-config file {args.file} does not exist; pass the path "
            "`autotune search --out` wrote (default best_config.json)."
        ) from None
    except ConfigError as exc:
        raise UsageError(f"{args.file} is not a valid best-config file: {exc}") from exc
    device = str(best.environment.get("device") or "cpu")
    here = environment_fingerprint("cpu" if not device.startswith("cuda") else _cuda(device))
    facts = explain(best, args.file, here)
    print(json.dumps(facts, indent=2, default=str) if args.json else render(facts))
    return 0


def _cuda(device: str) -> str:
    import torch

    return device if torch.cuda.is_available() else "cpu"
